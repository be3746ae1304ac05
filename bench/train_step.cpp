// The encoder's training step, timed: forward, cross-entropy, backward and
// an Adam update of a TransformerEncoder plus a linear head over the
// vocabulary, with d2l semantics, on random token ids.
//
//   build/release/bench/train_step [--config tiny|medium|large|all] [--threads N]
//                                  [--steps N] [--warmup N] [--dropout P] [--profile]
//                                  [--parallel data|ops]
//
// On more than one thread the step is data-parallel by default (--parallel
// data: the batch split into one micro-batch per thread, each forward and
// backward on its own thread, parallel/data_parallel.hpp), which is faster for
// every configuration here (docs/results.md, "Data-parallel steps");
// --parallel ops runs the whole batch as one graph with each op's loops
// spread over the threads. On one thread both are the same step.
// Prints one line per configuration: median milliseconds per step (and the
// median process CPU time per step, every thread's, at the end), tokens
// per second, achieved GFLOP/s and its fraction of this machine's sgemm peak
// measured in the same run (model FLOPs utilisation; the peak is the better
// of smallgrad's GEMM and BLIS, printed first), and peak resident
// memory. --profile adds, per configuration, where a step's time goes: each
// op's forward and backward (autograd/profiler.hpp), the optimizer, and what
// is left. bench/torch_train_step.py is the same model in PyTorch, and
// bench/compare_train_step.py runs both (and the libtorch peer) side by side.
//
// The configurations and the FLOPs per step are bench/encoder_configs.hpp's.
#include <blis.h>
#include <smallgrad.hpp>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/kernels/gemm_tile.hpp"
#include "encoder_configs.hpp"

namespace {

using bench::Config;
using bench::flops_per_step;
using bench::kConfigs;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of the whole process (every thread), in seconds.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// This machine's sgemm peak on the current thread count: the better of
// smallgrad's GEMM and BLIS called directly, each the best of a few 1024^3
// products. Both, so that MFU is never a fraction of a slow reference: on a
// target where our kernel were slow, its own speed would make any step look
// efficient.
struct Peak {
  double gflops, ours, blis;
};
Peak sgemm_peak_gflops() {
  const int64_t n = 1024;
  const sg::Tensor a = sg::rand({n, n}), b = sg::rand({n, n});
  sg::Tensor c = sg::empty({n, n});
  float* pa = const_cast<float*>(a.data<float>());
  float* pb = const_cast<float*>(b.data<float>());
  float* pc = c.data<float>();
  sg::blis_kernels();  // picks BLIS's kernels and initialises it, as the library would
  auto best_of = [&](auto product) {
    double best = 0;
    for (int r = 0; r < 15; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      product();
      best = std::max(best, 2.0 * n * n * n / seconds_since(t0) / 1e9);
    }
    return best;
  };
  const double ours = best_of([&] {
    sg::kernel::gemm<float>(false, false, n, n, n, 1.0f, pa, n, pb, n, 0.0f, pc, n);
  });
  const double blis = best_of([&] {
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(sg::num_threads(), &rntm);
    float alpha = 1.0f, beta = 0.0f;
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, n, n, n, &alpha, pa, n, 1, pb, n, 1, &beta,
                 pc, n, 1, nullptr, &rntm);
  });
  return {std::max(ours, blis), ours, blis};
}

struct Encoder : sg::nn::Module {
  explicit Encoder(const Config& c, double dropout) {
    const sg::nn::TransformerEncoderOptions o{.vocab_size = c.vocab,
                                              .num_hiddens = c.hidden,
                                              .ffn_num_hiddens = c.ffn,
                                              .num_heads = c.heads,
                                              .num_blocks = c.blocks,
                                              .dropout = dropout,
                                              .max_len = c.seq};
    encoder = register_module("encoder", std::make_shared<sg::nn::TransformerEncoder>(o));
    head = register_module("head", std::make_shared<sg::nn::Linear>(c.hidden, c.vocab));
  }
  std::shared_ptr<sg::nn::TransformerEncoder> encoder;
  std::shared_ptr<sg::nn::Linear> head;
};

// The profiled steps' time per op, largest first, in ms per step.
void print_profile(int steps) {
  double total = 0;
  const std::vector<sg::OpProfile> report = sg::profile_report();
  for (const sg::OpProfile& p : report) total += p.seconds;
  std::printf("  %-28s %8s %9s %6s\n", "op", "calls", "ms/step", "share");
  for (const sg::OpProfile& p : report) {
    if (p.seconds < 0.002 * total) break;
    std::printf("  %-28s %8.1f %9.3f %5.1f%%\n", p.name.c_str(), double(p.calls) / steps, p.seconds * 1e3 / steps,
                100 * p.seconds / total);
  }
}

void run(const Config& c, int steps, int warmup, double dropout, double peak, bool profile, bool data_parallel) {
  sg::manual_seed(0);
  Encoder model(c, dropout);
  sg::optim::Adam opt(model.parameters(), {.lr = 1e-3});
  sg::Generator gen(1);
  // Every sequence full length; valid_lens still go through the mask.
  const sg::Tensor ids = sg::randint(0, c.vocab, {c.batch, c.seq}, gen);
  const sg::Tensor labels = sg::randint(0, c.vocab, {c.batch, c.seq}, gen);
  const sg::Tensor valid_lens = sg::full({c.batch}, static_cast<double>(c.seq), sg::int64);
  std::vector<double> times, cpu_times;  // wall and process CPU seconds per step
  double loss_value = 0;
  std::optional<sg::ProfileGuard> profiler;
  // Data-parallel: each micro-batch's share of the mean loss is its own mean
  // times its fraction of the batch (every position has a label).
  // The profiler times one thread's ops: --profile profiles the whole-batch step.
  const int threads = sg::num_threads();
  const bool dp_step = data_parallel && !profile && threads > 1;
  std::optional<sg::parallel::DataParallel> dp;
  std::optional<sg::ThreadCountGuard> one_thread;  // the rest of the step on this thread (parallel/data_parallel.hpp)
  if (dp_step) dp.emplace(model.parameters()), one_thread.emplace(1);
  const auto micro_batch_loss = [&](const sg::parallel::MicroBatch& m) {
    const int64_t end = m.first + m.count;
    const sg::Tensor logits =
        model.head->forward(model.encoder->forward(sg::slice(ids, 0, m.first, end), sg::slice(valid_lens, 0, m.first, end),
                                                   m.dropout_keys));
    return sg::cross_entropy(logits, sg::slice(labels, 0, m.first, end)) *
           (static_cast<double>(m.count) / static_cast<double>(c.batch));
  };
  for (int s = 0; s < warmup + steps; ++s) {
    if (profile && s == warmup) profiler.emplace();
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = process_cpu_seconds();
    sg::profile_mark("between steps");
    if (dp_step) {
      opt.zero_grad();
      loss_value = dp->backward(c.batch, micro_batch_loss);
      sg::profile_mark("data-parallel forward and backward");
    } else {
      const sg::Tensor logits = model.head->forward(model.encoder->forward(ids, valid_lens));
      const sg::Tensor loss = sg::cross_entropy(logits, labels);
      opt.zero_grad();
      sg::profile_mark("zero_grad");
      sg::backward(loss);
      sg::profile_mark("backward: freeing the graph");
      loss_value = loss.item<double>();
    }
    opt.step();
    sg::profile_mark("adam step");
    if (s >= warmup) times.push_back(seconds_since(t0)), cpu_times.push_back(process_cpu_seconds() - cpu0);
  }
  const double ms = median(times) * 1e3;
  const double gflops = flops_per_step(c) / (ms * 1e-3) / 1e9;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%-7s threads %d  %9.3f ms/step  %10.0f tokens/s  %7.1f GFLOP/s  MFU %5.1f%% of %.0f  "
              "peak RSS %ld MiB  loss %.4f  step %s  CPU %.3f ms/step\n",
              c.name, threads, ms, c.batch * c.seq / (ms * 1e-3), gflops, 100 * gflops / peak,
              peak, usage.ru_maxrss / 1024, loss_value, dp_step ? "data-parallel" : "whole-batch", median(cpu_times) * 1e3);
  if (profile) print_profile(steps);
  std::fflush(stdout);
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--config tiny|medium|large|all] [--threads N] [--steps N] [--warmup N] "
               "[--dropout P] [--profile] [--parallel data|ops]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "all";
  int threads = 0, steps = 50, warmup = 5;
  double dropout = 0.1;
  bool profile = false, data_parallel = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(argv[0]);
      return 0;
    }
    if (arg == "--profile") {
      profile = true;
      continue;
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
    } else if (arg == "--parallel") {
      if (std::strcmp(v, "data") != 0 && std::strcmp(v, "ops") != 0) return usage(argv[0]);
      data_parallel = std::strcmp(v, "data") == 0;
    } else if (arg == "--dropout") {
      dropout = std::strtod(v, &end);
      if (*end != '\0' || !(dropout >= 0 && dropout < 1)) return usage(argv[0]);
    } else {
      return usage(argv[0]);
    }
  }
  if (threads) sg::set_num_threads(threads);
  const Peak peak = sgemm_peak_gflops();
  std::printf("CPU: %s\n", sg::kernel::tile::cpu().c_str());
  std::printf("sgemm peak %.0f GFLOP/s on %d thread(s): the better of smallgrad's GEMM (%.0f) and "
              "BLIS %s (%.0f) on 1024^3\n",
              peak.gflops, sg::num_threads(), peak.ours, sg::blis_kernels().c_str(), peak.blis);
  for (const Config& c : kConfigs)
    if (which == "all" || which == c.name) run(c, steps, warmup, dropout, peak.gflops, profile, data_parallel);
  return 0;
}
