// The GPT's training step (nn/gpt.hpp), as train_gpt runs it: forward,
// cross-entropy, backward, gradient clipping, AdamW; data parallel on
// --threads > 1. Two sizes of nanoGPT's:
//   baby         4 layers, 4 heads, width 128, context 64, batch 12 (train_gpt's defaults)
//   shakespeare  6 layers, 6 heads, width 384, context 256, batch 12 (config/train_shakespeare_char.py)
// vocabulary 73 (the KJV's characters), dropout 0, no biases, tied head.
//
//   bench/gpt_step [--config baby|shakespeare] [--threads N] [--steps N] [--warmup N] [--profile]
// (--profile, on 1 thread: where the step's time goes, op by op)
// Prints the median, lowest and highest step time in ms; bench/torch_gpt_step.py
// is the same step in PyTorch (docs/results.md, "A GPT on a real book").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/profiler.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/shape.hpp"
#include "core/runtime.hpp"
#include "nn/gpt.hpp"
#include "optim/optim.hpp"
#include "parallel/data_parallel.hpp"

int main(int argc, char** argv) {
  std::string config = "baby";
  int threads = 1, steps = 30, warmup = 5;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    const bool has = i + 1 < argc;
    if (!std::strcmp(argv[i], "--config") && has) config = argv[++i];
    else if (!std::strcmp(argv[i], "--threads") && has) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--steps") && has) steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--warmup") && has) warmup = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--profile")) profile = true;
    else {
      std::fprintf(stderr, "usage: gpt_step [--config baby|shakespeare] [--threads N] [--steps N] [--warmup N] [--profile]\n");
      return 2;
    }
  }
  if ((config != "baby" && config != "shakespeare") || threads < 1 || threads > 256 || steps < 1 || warmup < 0) {
    std::fprintf(stderr, "gpt_step: --config is baby or shakespeare; --threads 1..256, --steps >= 1, --warmup >= 0\n");
    return 2;
  }
  sg::nn::GPTOptions o{.vocab_size = 73};
  int64_t batch = 12;
  if (config == "shakespeare") o.n_layer = 6, o.n_head = 6, o.n_embd = 384, o.block_size = 256;
  sg::set_num_threads(threads);
  sg::manual_seed(0);
  sg::nn::GPT model(o);
  sg::optim::AdamW opt(model.parameters(), {.lr = 1e-3, .beta2 = 0.99, .weight_decay = 0.1, .decay_vectors = false});
  std::unique_ptr<sg::parallel::DataParallel> dp;
  if (threads > 1) dp = std::make_unique<sg::parallel::DataParallel>(model.parameters(), threads);
  std::optional<sg::ThreadCountGuard> one_thread;
  if (dp) one_thread.emplace(1);
  sg::Generator gen(1);
  std::vector<double> ms;
  std::optional<sg::ProfileGuard> profiling;  // one thread's ops, from the first timed step
  for (int step = 0; step < warmup + steps; ++step) {
    if (profile && step == warmup && threads == 1) profiling.emplace();
    std::vector<int64_t> x(static_cast<size_t>(batch * o.block_size)), y(x.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = gen.randint(0, o.vocab_size), y[i] = gen.randint(0, o.vocab_size);
    const sg::Tensor ids = sg::from_vector(x, {batch, o.block_size}), targets = sg::from_vector(y, {batch, o.block_size});
    const auto t0 = std::chrono::steady_clock::now();
    opt.zero_grad();
    if (dp) {
      dp->backward(batch, [&](const sg::parallel::MicroBatch& m) {
        const int64_t a = m.first, b = m.first + m.count;
        return sg::cross_entropy(model.forward(sg::slice(ids, 0, a, b)), sg::slice(targets, 0, a, b)) *
               (static_cast<double>(m.count) / static_cast<double>(batch));
      });
    } else {
      sg::backward(sg::cross_entropy(model.forward(ids), targets));
    }
    sg::optim::clip_grad_norm(opt.params(), 1.0);
    opt.step();
    sg::profile_mark("clip and AdamW");
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (step >= warmup) ms.push_back(t);
  }
  if (profiling) {
    double total = 0;
    for (const sg::OpProfile& p : sg::profile_report()) total += p.seconds;
    for (const sg::OpProfile& p : sg::profile_report())
      std::printf("  %-32s %6lld calls %8.3f ms/step %5.1f%%\n", p.name.c_str(), static_cast<long long>(p.calls),
                  1e3 * p.seconds / steps, 100 * p.seconds / total);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("smallgrad gpt %s threads %d: median %.2f ms/step (min %.2f, max %.2f, %d steps)\n", config.c_str(),
              threads, ms[ms.size() / 2], ms.front(), ms.back(), steps);
  return 0;
}
