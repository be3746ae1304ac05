// The training step of bench/torch_train_step.py in libtorch (PyTorch's C++
// API, Debian's libtorch-dev): the same model (Dive into Deep Learning's
// TransformerEncoder plus a linear head over the vocabulary), the same
// shapes, loss, optimizer (Adam, lr 1e-3) and dropout, step for step, with
// no Python interpreter between the ops.
//
//   build/libtorch/train_step [--config tiny|medium|large|all] [--threads N]
//                             [--steps N] [--warmup N] [--dropout P]
//
// Build it on its own (it is not part of smallgrad's build, which never needs
// libtorch):
//
//   cmake -S bench/libtorch -B build/libtorch -DCMAKE_BUILD_TYPE=Release
//   cmake --build build/libtorch -j2
//
// The layers are tests/fixtures/make_fixtures.py's, written out in the same
// order and with the same ops, so that with the same seeds the parameters
// and token ids are drawn as the Python script draws them. Prints one line
// per configuration in bench/train_step's format (no MFU: there is no peak
// to measure it against here). Which BLAS libtorch uses is up to the
// environment (LD_LIBRARY_PATH); bench/compare_train_step.py sets it.
//
// The configurations and the FLOPs per step are bench/encoder_configs.hpp's,
// shared with bench/train_step.cpp.
#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../encoder_configs.hpp"

namespace {

using torch::indexing::None;
using torch::indexing::Slice;

using bench::Config;
using bench::flops_per_step;
using bench::kConfigs;

// statistics.median: the mean of the two middle values of an even count.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

// X: (B, Q, K); valid_lens: (B). As d2l, masked scores become -1e6.
torch::Tensor masked_softmax(const torch::Tensor& X, const torch::Tensor& valid_lens) {
  const int64_t B = X.size(0), Q = X.size(1), K = X.size(2);
  const torch::Tensor lens = valid_lens.index({Slice(), None}).expand({B, Q});
  const torch::Tensor keep = torch::arange(K).index({None, None, Slice()}) < lens.index({Slice(), Slice(), None});
  return torch::softmax(X.masked_fill(~keep, -1e6), -1);
}

// d2l 11.5: four bias-free projections, scaled dot products per head.
struct MultiHeadAttention : torch::nn::Module {
  MultiHeadAttention(int64_t hidden, int64_t heads, double dropout)
      : heads(heads),
        dropout(register_module("dropout", torch::nn::Dropout(dropout))),
        W_q(register_module("W_q", linear(hidden, hidden, false))),
        W_k(register_module("W_k", linear(hidden, hidden, false))),
        W_v(register_module("W_v", linear(hidden, hidden, false))),
        W_o(register_module("W_o", linear(hidden, hidden, false))) {}

  torch::Tensor transpose_qkv(const torch::Tensor& X) {  // (B, T, H) -> (B * heads, T, H / heads)
    const torch::Tensor Y = X.reshape({X.size(0), X.size(1), heads, -1}).permute({0, 2, 1, 3});
    return Y.reshape({-1, Y.size(2), Y.size(3)});
  }
  torch::Tensor transpose_output(const torch::Tensor& X) {  // the inverse of transpose_qkv
    const torch::Tensor Y = X.reshape({-1, heads, X.size(1), X.size(2)}).permute({0, 2, 1, 3});
    return Y.reshape({Y.size(0), Y.size(1), -1});
  }

  torch::Tensor forward(const torch::Tensor& X, const torch::Tensor& valid_lens) {
    const torch::Tensor q = transpose_qkv(W_q(X)), k = transpose_qkv(W_k(X)), v = transpose_qkv(W_v(X));
    const torch::Tensor lens = torch::repeat_interleave(valid_lens, heads, 0);
    const torch::Tensor scores = torch::bmm(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(q.size(-1)));
    const torch::Tensor weights = masked_softmax(scores, lens);
    return W_o(transpose_output(torch::bmm(dropout(weights), v)));
  }

  int64_t heads;
  torch::nn::Dropout dropout;
  torch::nn::Linear W_q, W_k, W_v, W_o;
};

struct AddNorm : torch::nn::Module {
  AddNorm(int64_t hidden, double dropout)
      : dropout(register_module("dropout", torch::nn::Dropout(dropout))),
        ln(register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))) {}
  torch::Tensor forward(const torch::Tensor& X, const torch::Tensor& Y) { return ln(dropout(Y) + X); }
  torch::nn::Dropout dropout;
  torch::nn::LayerNorm ln;
};

struct EncoderBlock : torch::nn::Module {
  EncoderBlock(int64_t hidden, int64_t ffn, int64_t heads, double dropout)
      : attention(register_module("attention", std::make_shared<MultiHeadAttention>(hidden, heads, dropout))),
        addnorm1(register_module("addnorm1", std::make_shared<AddNorm>(hidden, dropout))),
        dense1(register_module("dense1", linear(hidden, ffn, true))),
        dense2(register_module("dense2", linear(ffn, hidden, true))),
        addnorm2(register_module("addnorm2", std::make_shared<AddNorm>(hidden, dropout))) {}
  torch::Tensor forward(const torch::Tensor& X, const torch::Tensor& valid_lens) {
    const torch::Tensor Y = addnorm1->forward(X, attention->forward(X, valid_lens));
    return addnorm2->forward(Y, dense2(torch::relu(dense1(Y))));  // PositionWiseFFN
  }
  std::shared_ptr<MultiHeadAttention> attention;
  std::shared_ptr<AddNorm> addnorm1;
  torch::nn::Linear dense1, dense2;
  std::shared_ptr<AddNorm> addnorm2;
};

// d2l's sinusoidal table P: (1, max_len, H), computed as d2l computes it.
torch::Tensor sinusoid_table(int64_t hidden, int64_t max_len) {
  const torch::Tensor X = torch::arange(max_len, torch::kFloat).reshape({-1, 1}) /
                          torch::pow(10000, torch::arange(0, hidden, 2, torch::kFloat) / hidden);
  torch::Tensor P = torch::zeros({1, max_len, hidden});
  P.index_put_({Slice(), Slice(), Slice(0, None, 2)}, torch::sin(X));
  P.index_put_({Slice(), Slice(), Slice(1, None, 2)}, torch::cos(X));
  return P;
}

struct TransformerEncoder : torch::nn::Module {
  TransformerEncoder(int64_t vocab, int64_t hidden, int64_t ffn, int64_t heads, int64_t blocks, double dropout)
      : hidden(hidden),
        embedding(register_module("embedding", torch::nn::Embedding(vocab, hidden))),
        pos_dropout(register_module("pos_dropout", torch::nn::Dropout(dropout))),
        P(sinusoid_table(hidden, 1000)) {
    for (int64_t i = 0; i < blocks; ++i)
      this->blocks.push_back(register_module("block" + std::to_string(i),
                                             std::make_shared<EncoderBlock>(hidden, ffn, heads, dropout)));
  }
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& valid_lens) {
    torch::Tensor X = embedding(ids) * std::sqrt(static_cast<double>(hidden));
    X = pos_dropout(X + P.index({Slice(), Slice(0, X.size(1)), Slice()}));
    for (const auto& block : blocks) X = block->forward(X, valid_lens);
    return X;
  }
  int64_t hidden;
  torch::nn::Embedding embedding;
  torch::nn::Dropout pos_dropout;
  torch::Tensor P;  // not a parameter, as in d2l
  std::vector<std::shared_ptr<EncoderBlock>> blocks;
};

void run(const Config& c, int steps, int warmup, double dropout) {
  torch::manual_seed(0);
  auto encoder = std::make_shared<TransformerEncoder>(c.vocab, c.hidden, c.ffn, c.heads, c.blocks, dropout);
  torch::nn::Linear head = linear(c.hidden, c.vocab, true);
  std::vector<torch::Tensor> params = encoder->parameters();
  for (const auto& p : head->parameters()) params.push_back(p);
  torch::optim::Adam opt(params, torch::optim::AdamOptions(1e-3));
  torch::Generator gen = at::detail::createCPUGenerator(1);
  const torch::Tensor ids = torch::randint(0, c.vocab, {c.batch, c.seq}, gen, torch::kLong);
  const torch::Tensor labels = torch::randint(0, c.vocab, {c.batch, c.seq}, gen, torch::kLong);
  const torch::Tensor valid_lens = torch::full({c.batch}, c.seq, torch::kLong);
  encoder->train();
  head->train();
  std::vector<double> times;
  torch::Tensor loss;
  for (int s = 0; s < warmup + steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    const torch::Tensor logits = head(encoder->forward(ids, valid_lens));
    loss = torch::nn::functional::cross_entropy(logits.reshape({-1, c.vocab}), labels.reshape(-1));
    for (auto& p : params) p.mutable_grad().reset();  // zero_grad(set_to_none=True): libtorch 1.13 zeroes in place
    loss.backward();
    opt.step();
    if (s >= warmup) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double ms = median(times) * 1e3;
  const double gflops = flops_per_step(c) / (ms * 1e-3) / 1e9;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%-7s threads %d  %9.3f ms/step  %10.0f tokens/s  %7.1f GFLOP/s  peak RSS %ld MiB  loss %.4f\n", c.name,
              at::get_num_threads(), ms, c.batch * c.seq / (ms * 1e-3), gflops, usage.ru_maxrss / 1024,
              loss.item<double>());
  std::fflush(stdout);
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--config tiny|medium|large|all] [--threads N] [--steps N] [--warmup N] [--dropout P]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "all";
  int threads = 1, steps = 50, warmup = 5;
  double dropout = 0.1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(argv[0]);
      return 0;
    }
    if (i + 1 >= argc) return usage(argv[0]);
    const char* v = argv[++i];
    char* end = nullptr;
    if (arg == "--config") {
      which = v;
      if (which != "all" && which != "tiny" && which != "medium" && which != "large") return usage(argv[0]);
    } else if (arg == "--threads" || arg == "--steps" || arg == "--warmup") {
      const long n = std::strtol(v, &end, 10);
      if (*end != '\0' || n < (arg == "--warmup" ? 0 : 1)) return usage(argv[0]);
      (arg == "--threads" ? threads : arg == "--steps" ? steps : warmup) = static_cast<int>(n);
    } else if (arg == "--dropout") {
      dropout = std::strtod(v, &end);
      if (*end != '\0' || !(dropout >= 0 && dropout < 1)) return usage(argv[0]);
    } else {
      return usage(argv[0]);
    }
  }
  at::set_num_threads(threads);
  try {
    for (const Config& c : kConfigs)
      if (which == "all" || which == c.name) run(c, steps, warmup, dropout);
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what_without_backtrace());
    return 1;
  }
  return 0;
}
