// The first cell of Dive into Deep Learning's "Self-Attention and Positional
// Encoding", retold in C++: multi-head self-attention over a batch of two
// sequences of four tokens, the second half of which are padding, then a
// check that self-attention without positions cannot tell token order apart.
// Run: build/release/examples/self_attention
#include <smallgrad.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "cli.hpp"

namespace {

int show() {
  sg::manual_seed(0);
  const int64_t num_hiddens = 100, num_heads = 5, batch_size = 2, num_queries = 4;
  sg::nn::MultiHeadAttention attention(num_hiddens, num_heads, 0.5);
  const sg::Tensor valid_lens = sg::from_vector(std::vector<int64_t>{3, 2}, {2});
  const sg::Tensor X = sg::ones({batch_size, num_queries, num_hiddens});

  attention.eval();  // dropout 0.5 is for training; as in d2l, the shape is the point here
  const sg::Tensor Y = attention.forward(X, X, X, valid_lens);
  sg::nn::check_shape(Y, {batch_size, num_queries, num_hiddens}, "self-attention output");
  std::cout << "output shape " << Y.shape() << ": check_shape passed\n\n";

  // Sequence 0 has 3 valid tokens, sequence 1 has 2: keys past them get weight 0.
  const sg::Tensor w = attention.attention_weights();  // (batch, heads, queries, keys)
  const std::vector<float> wv = w.to_vector<float>();
  for (int64_t b = 0; b < batch_size; ++b) {
    std::cout << "attention weights, sequence " << b << " (valid length "
              << valid_lens.to_vector<int64_t>()[static_cast<size_t>(b)] << "), head 0:\n";
    for (int64_t q = 0; q < num_queries; ++q) {
      std::cout << "  query " << q << ":";
      for (int64_t k = 0; k < num_queries; ++k)
        std::printf(" %.4f", wv[static_cast<size_t>(((b * num_heads + 0) * num_queries + q) * num_queries + k)]);
      std::cout << "\n";
    }
  }

  // Permutation equivariance: attention sees a set, not a sequence. Shuffle
  // the tokens of random inputs and the outputs come back shuffled the same way.
  const sg::Tensor Z = sg::randn({1, num_queries, num_hiddens});
  const std::vector<int64_t> perm = {2, 0, 3, 1};
  std::vector<sg::Tensor> rows;
  for (int64_t i : perm) rows.push_back(sg::slice(Z, 1, i, i + 1));
  const sg::Tensor Zp = sg::concat(rows, 1);
  const sg::Tensor out = attention.forward(Z, Z, Z), out_p = attention.forward(Zp, Zp, Zp);
  double worst = 0;
  for (int64_t t = 0; t < num_queries; ++t) {
    const sg::Tensor a = sg::slice(out_p, 1, t, t + 1), b = sg::slice(out, 1, perm[static_cast<size_t>(t)], perm[static_cast<size_t>(t)] + 1);
    worst = std::max(worst, sg::max(sg::abs(a - b)).item<double>());
  }
  std::cout << "\npermuting the input tokens by (2, 0, 3, 1) permutes the outputs the same way:\n"
            << "  max |attention(permuted X) - permuted attention(X)| = " << worst << "\n"
            << "so without positional encodings, self-attention cannot see token order.\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Dive into Deep Learning's multi-head self-attention cell: shapes, masking of padded keys,\n"
               "and why attention without positions cannot see token order. Takes no flags."};
  examples::describe_defaults(app);
  return examples::run(app, argc, argv, show);
}
