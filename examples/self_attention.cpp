// The first cell of Dive into Deep Learning's "Self-Attention and Positional
// Encoding", retold in C++: multi-head self-attention over a batch of two
// sequences of four tokens, the second half of which are padding, then a
// check that self-attention without positions cannot tell token order apart,
// then masking the future (the causal mask of a decoder): the weights with
// and without it side by side, and a check that with it no output sees the
// tokens after its own position.
// Run: build/release/examples/self_attention [--out DIR]
#include <smallgrad.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli.hpp"
#include "study/plot.hpp"

namespace {

// Head 0 of (1, heads, T, T) weights as rows.
std::vector<std::vector<double>> head0(const sg::Tensor& w) {
  const int64_t T = w.shape()[2];
  const std::vector<float> v = w.to_vector<float>();
  std::vector<std::vector<double>> rows(static_cast<size_t>(T));
  for (int64_t q = 0; q < T; ++q)
    for (int64_t k = 0; k < T; ++k) rows[static_cast<size_t>(q)].push_back(v[static_cast<size_t>(q * T + k)]);
  return rows;
}

// Masking the future. The same projections with and without the causal
// mask, over one sequence of `steps` random tokens: the weights side by side
// (written to <out>/causal_attention.svg), then for every t, the tokens after
// t replaced by others: with the mask, the outputs at positions 0..t must
// keep every bit; without it, they change. Throws if either fails.
void masking_the_future(const sg::nn::MultiHeadAttention& open, int64_t num_hiddens, int64_t num_heads,
                        const std::string& out_dir) {
  examples::Outputs out(out_dir, "--out");
  out.expect("causal_attention.svg");
  sg::nn::MultiHeadAttention causal(num_hiddens, num_heads, 0.5, false, /*causal=*/true);
  causal.load_state_dict(open.state_dict());
  causal.eval();
  const int64_t steps = 8;
  const sg::Tensor X = sg::randn({1, steps, num_hiddens}), other = sg::randn({1, steps, num_hiddens});
  sg::Tensor open_weights, causal_weights;  // (1, heads, steps, steps)
  const sg::Tensor open_out = open.forward(X, X, X, sg::Tensor(), nullptr, &open_weights);
  const auto open_w = head0(open_weights);
  const sg::Tensor causal_out = causal.forward(X, X, X, sg::Tensor(), nullptr, &causal_weights);
  const auto causal_w = head0(causal_weights);

  std::cout << "\nmasking the future: with causal = true, query t attends to keys 0..t only.\n"
            << "causal attention weights over " << steps << " random tokens, head 0 (0 above the diagonal):\n";
  for (int64_t q = 0; q < steps; ++q) {
    std::printf("  query %lld:", static_cast<long long>(q));
    for (int64_t k = 0; k < steps; ++k) std::printf(" %.3f", causal_w[static_cast<size_t>(q)][static_cast<size_t>(k)]);
    std::printf("\n");
  }
  sg::study::plot::HeatmapOptions ho;
  ho.xlabel = "Key position";
  ho.ylabel = "Query position";
  ho.has_range = true;
  ho.colorbar_label = "attention weight";
  ho.title = "no mask (head 0)";
  const std::string left = sg::study::plot::heatmap_svg(open_w, ho);
  ho.title = "causal mask (head 0)";
  out.write("causal_attention.svg", sg::study::plot::grid_svg({left, sg::study::plot::heatmap_svg(causal_w, ho)}, 2,
                                                       "masking the future: one sequence of " +
                                                           std::to_string(steps) + " tokens"));

  std::cout << "\nchanging the tokens after position t (outputs at positions 0..t compared):\n"
            << "   t   causal: bits kept   no mask: max |change|\n";
  bool masked_ok = true, open_changes = true;
  for (int64_t t = 0; t + 1 < steps; ++t) {
    const sg::Tensor changed =
        sg::concat({sg::slice(X, 1, 0, t + 1), sg::slice(other, 1, t + 1, steps)}, 1);
    const std::vector<float> a = sg::slice(causal_out, 1, 0, t + 1).to_vector<float>();
    const std::vector<float> b = sg::slice(causal.forward(changed, changed, changed), 1, 0, t + 1).to_vector<float>();
    const bool same = std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    const double moved = sg::max(sg::abs(sg::slice(open.forward(changed, changed, changed), 1, 0, t + 1) -
                                         sg::slice(open_out, 1, 0, t + 1)))
                             .item<double>();
    std::printf("  %2lld   %-17s   %.3g\n", static_cast<long long>(t), same ? "all" : "NO", moved);
    masked_ok = masked_ok && same;
    open_changes = open_changes && moved > 0;
  }
  if (!masked_ok) throw std::runtime_error("check failed: a causal output changed with a later token");
  if (!open_changes) throw std::runtime_error("check failed: an unmasked output ignored the later tokens");
  out.commit();
  std::cout << "check passed: with the mask, outputs up to t keep every bit whatever follows t; without it, "
               "every output sees every token.\nwrote "
            << out_dir << "/causal_attention.svg (no mask beside causal)\n";
}

int show(const std::string& out_dir) {
  sg::manual_seed(0);
  const int64_t num_hiddens = 100, num_heads = 5, batch_size = 2, num_queries = 4;
  sg::nn::MultiHeadAttention attention(num_hiddens, num_heads, 0.5);
  const sg::Tensor valid_lens = sg::from_vector(std::vector<int64_t>{3, 2}, {2});
  const sg::Tensor X = sg::ones({batch_size, num_queries, num_hiddens});

  attention.eval();  // dropout 0.5 is for training; as in d2l, the shape is the point here
  sg::Tensor w;  // (batch, heads, queries, keys)
  const sg::Tensor Y = attention.forward(X, X, X, valid_lens, nullptr, &w);
  sg::nn::check_shape(Y, {batch_size, num_queries, num_hiddens}, "self-attention output");
  std::cout << "output shape " << Y.shape() << ": check_shape passed\n\n";

  // Sequence 0 has 3 valid tokens, sequence 1 has 2: keys past them get weight 0.
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

  masking_the_future(attention, num_hiddens, num_heads, out_dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{"Dive into Deep Learning's multi-head self-attention cell: shapes, masking of padded keys,\n"
                        "why attention without positions cannot see token order, and masking the future (the causal mask)."};
  std::string out = "out/self_attention";
  flags.folder("--out", out, "output folder for causal_attention.svg");
  return examples::run(flags, argc, argv, [&] { return show(out); });
}
