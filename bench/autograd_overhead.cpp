// Autograd overhead: forward + backward of a long chain of tiny ops.
//
//   build/release/bench/autograd_overhead [--threads N] [--ops N] [--size N] [--reps R]
//
// The chain starts from x and repeats  h = h * w;  h = h + b;  h = tanh(h);
// h = h * 0.9  (four different ops, each a graph node) until --ops ops are
// recorded, then loss = sum(h) and backward(). x, w and b (float32, --size
// elements, 64 by default) require grad, so w and b gather a gradient from
// every fourth op. On 64 elements the arithmetic costs nanoseconds: what is
// measured is the framework's per-op cost (node creation, allocation, the
// backward engine's bookkeeping).
//
// Each repetition clears the gradients, runs the forward chain and the
// backward pass, and is timed as a whole and in its two halves; the medians
// are printed, then one machine-readable RESULT line, the same as
// bench/torch_autograd_overhead.py prints (bench/compare_autograd_overhead.sh
// runs both side by side). `loss` and `grad_w` are checksums: they agree
// with PyTorch's to float32 rounding.
#include <smallgrad.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--threads N] [--ops N] [--size N] [--reps R]\n"
               "  --threads N  threads for smallgrad (default: smallgrad's default, all cores)\n"
               "  --ops N      ops in the chain (default 1000)\n"
               "  --size N     elements per tensor (default 64)\n"
               "  --reps R     timed repetitions; medians are reported (default 200)\n",
               prog);
  return 2;
}

// Reads a positive integer up to `max`, or returns 0.
long positive(const char* s, long max) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  return (end != s && *end == '\0' && v >= 1 && v <= max) ? v : 0;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// x_i = sin(i), w_i = 1 + 0.1 cos(i), b_i = 0.01 (i mod 7): the same values
// in the PyTorch script, so the checksums can be compared.
sg::Tensor make(int64_t n, int which) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(i);
    v[static_cast<size_t>(i)] = static_cast<float>(
        which == 0 ? std::sin(d) : which == 1 ? 1.0 + 0.1 * std::cos(d) : 0.01 * static_cast<double>(i % 7));
  }
  return sg::from_vector(v, {n}).set_requires_grad();
}

// The chain: --ops ops cycling through mul, add, tanh, scalar mul.
sg::Tensor chain(const sg::Tensor& x, const sg::Tensor& w, const sg::Tensor& b, int ops) {
  sg::Tensor h = x;
  for (int i = 0; i < ops; ++i) {
    switch (i % 4) {
      case 0: h = h * w; break;
      case 1: h = h + b; break;
      case 2: h = sg::tanh(h); break;
      default: h = h * 0.9; break;
    }
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  long ops = 1000, size = 64, reps = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(argv[0]);
      return 0;
    }
    long* target = arg == "--ops" ? &ops : arg == "--size" ? &size : arg == "--reps" ? &reps : nullptr;
    if (arg == "--threads" && i + 1 < argc) {
      threads = static_cast<int>(positive(argv[++i], 4096));
      if (!threads) return usage(argv[0]);
    } else if (target && i + 1 < argc) {
      *target = positive(argv[++i], 100000000);
      if (!*target) return usage(argv[0]);
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete argument '%s'\n", argv[0], argv[i]);
      return usage(argv[0]);
    }
  }
  if (threads) sg::set_num_threads(threads);

  sg::Tensor x = make(size, 0), w = make(size, 1), b = make(size, 2);
  double loss_value = 0, grad_w = 0;
  auto run = [&](double* forward_s, double* backward_s) {
    for (sg::Tensor* t : {&x, &w, &b}) t->set_grad(sg::Tensor());
    const auto t0 = Clock::now();
    sg::Tensor loss = sg::sum(chain(x, w, b, static_cast<int>(ops)));
    const auto t1 = Clock::now();
    sg::backward(loss);
    if (forward_s) *forward_s = std::chrono::duration<double>(t1 - t0).count();
    if (backward_s) *backward_s = seconds_since(t1);
    loss_value = loss.item<double>();
  };

  for (int i = 0; i < std::min<long>(10, reps); ++i) run(nullptr, nullptr);  // warm up caches
  std::vector<double> fwd, bwd, total;
  for (long r = 0; r < reps; ++r) {
    double f = 0, bk = 0;
    run(&f, &bk);
    fwd.push_back(f);
    bwd.push_back(bk);
    total.push_back(f + bk);
  }
  for (float g : w.grad().to_vector<float>()) grad_w += g;

  const double t = median(total), us_per_op = t * 1e6 / static_cast<double>(ops);
  std::printf("smallgrad autograd overhead: %ld-op chain on %ld-element float32 tensors, %d thread(s), "
              "%ld reps\n",
              ops, size, sg::num_threads(), reps);
  std::printf("  forward   %10.1f us (median)\n", median(fwd) * 1e6);
  std::printf("  backward  %10.1f us (median)\n", median(bwd) * 1e6);
  std::printf("  total     %10.1f us = %.1f chains/s, %.3f us per op (forward + backward)\n", t * 1e6,
              1.0 / t, us_per_op);
  std::printf("RESULT impl=smallgrad threads=%d ops=%ld size=%ld reps=%ld fwd_us=%.2f bwd_us=%.2f "
              "total_us=%.2f chains_per_s=%.2f us_per_op=%.4f loss=%.6g grad_w=%.6g\n",
              sg::num_threads(), ops, size, reps, median(fwd) * 1e6, median(bwd) * 1e6, t * 1e6, 1.0 / t,
              us_per_op, loss_value, grad_w);
  return 0;
}
