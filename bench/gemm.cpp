// GEMM benchmark: smallgrad's wrapper against BLIS called directly.
//
//   build/release/bench/gemm [--threads N] [--reps R] [--only TEXT]
//
// For each shape it times sg::kernel::gemm (or gemm_batched) and the same work
// done by calling BLIS's typed API directly with the same thread count, and
// prints the median GFLOP/s of each and their ratio. The wrapper should be
// within a few percent of BLIS on large products (its checks cost
// nanoseconds) and far ahead on attention's batches of small products, where
// the direct loop pays BLIS's per-call overhead for every head. The first
// line names the CPU: every figure belongs to the machine that made it.
#include <blis.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/cpu.hpp"
#include "core/kernels/gemm.hpp"
#include "core/kernels/gemm_tile.hpp"
#include "core/runtime.hpp"

#include "flags.hpp"

namespace {

int usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--threads N] [--reps R] [--only TEXT]\n"
               "  --threads N  threads for smallgrad and for the direct BLIS calls (default: "
               "smallgrad's default)\n"
               "  --reps R     timed repetitions per measurement; the median is reported "
               "(default 11)\n"
               "  --only TEXT  only the products whose name contains TEXT\n",
               prog);
  return 2;
}

using Clock = std::chrono::steady_clock;

// Median seconds per call of f and of g, timed in alternation, and in
// alternating order (so that a change in machine load or clock speed affects
// both alike). Each repetition runs enough calls to last at least ~20 ms.
std::pair<double, double> median_seconds(const std::function<void()>& f,
                                         const std::function<void()>& g, int reps) {
  f();  // warm up: caches, BLIS's memory pools, thread start-up
  g();
  auto once = [](const std::function<void()>& h) {
    const auto t0 = Clock::now();
    h();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const double single = std::min(once(f), once(g));
  const int calls = std::max(1, static_cast<int>(0.02 / std::max(single, 1e-9)));
  std::vector<double> tf, tg;
  for (int r = 0; r < reps; ++r) {
    const auto first = std::pair{&f, &tf}, second = std::pair{&g, &tg};
    for (auto [h, out] : r % 2 ? std::array{second, first} : std::array{first, second}) {
      const auto t0 = Clock::now();
      for (int c = 0; c < calls; ++c) (*h)();
      out->push_back(std::chrono::duration<double>(Clock::now() - t0).count() / calls);
    }
  }
  std::sort(tf.begin(), tf.end());
  std::sort(tg.begin(), tg.end());
  return {tf[tf.size() / 2], tg[tg.size() / 2]};
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Direct BLIS: one row-major product with `threads` threads.
// A is stored (m, k), or (k, m) when ta; B is stored (k, n), or (n, k) when tb.
void blis_direct(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float* c, int64_t ldc, int threads) {
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(threads, &rntm);
  float alpha = 1.f, beta = 0.f;
  bli_sgemm_ex(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m,
               n, k, &alpha, const_cast<float*>(a), lda, 1, const_cast<float*>(b), ldb, 1, &beta, c,
               ldc, 1, nullptr, &rntm);
}

void print_row(const char* name, int64_t m, int64_t n, int64_t k, int64_t batch, double flops,
               std::pair<double, double> t) {
  const double wrapper = flops / t.first * 1e-9, direct = flops / t.second * 1e-9;
  std::printf("| %-28s | %5lld | %5lld | %5lld | %5lld | %10.2f | %8.1f | %8.1f | %5.2f |\n", name,
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
              static_cast<long long>(batch), t.first * 1e6, wrapper, direct, wrapper / direct);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, reps = 11;
  // --only TEXT: the rows whose name contains TEXT (taken out before the
  // whole-number flags are read).
  std::string only;
  std::vector<char*> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i)
    if (!std::strcmp(args[i], "--only")) {
      if (i + 1 >= args.size() || !*args[i + 1]) return usage(argv[0]);
      only = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      break;
    }
  auto wanted = [&](const std::string& name) { return name.find(only) != std::string::npos; };
  if (!bench::whole_flags(static_cast<int>(args.size()), args.data(),
                          {{"--threads", &threads}, {"--reps", &reps}}, 4096))
    return usage(argv[0]);
  if (threads) sg::set_num_threads(threads);
  threads = sg::num_threads();

  // blis_kernels() also picks the kernels and initialises BLIS, so the direct
  // calls below run the same kernels as the wrapper.
  const std::string kernels = sg::blis_kernels();
  std::printf("CPU: %s\n", sg::kernel::tile::cpu().c_str());
  std::printf("BLIS kernels: %s (expected by smallgrad's rule: %s; the generic fallback runs "
              "~36 GFLOP/s on one thread)\n",
              kernels.c_str(), sg::expected_blis_kernels().c_str());
  std::string features;
  for (const std::string& f : sg::build_cpu_features()) features += (features.empty() ? "" : " ") + f;
  std::printf("smallgrad's GEMM kernel: %s (built for: %s)\n", sg::kernel::tile::target().c_str(),
              features.empty() ? "baseline" : features.c_str());
  std::printf("threads: %d, repetitions: %d, float32, median GFLOP/s\n\n", threads, reps);
  std::printf("| %-28s | %5s | %5s | %5s | %5s | %10s | %8s | %8s | %5s |\n", "product", "m", "n",
              "k", "batch", "wrapper us", "wrapper", "direct", "ratio");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(30, '-').c_str(),
              std::string(7, '-').c_str(), std::string(7, '-').c_str(),
              std::string(7, '-').c_str(), std::string(7, '-').c_str(),
              std::string(12, '-').c_str(), std::string(10, '-').c_str(),
              std::string(10, '-').c_str(), std::string(7, '-').c_str());

  // The encoders' shapes: forward x.W (NN), the input gradient g.W^T (NT)
  // and the weight gradient x^T.g (TN), for the tiny (1024 tokens, hidden
  // 64, ffn 128), medium (2048, 128, 256) and large (2048, 256, 1024) runs.
  struct Single {
    const char* name;
    int64_t m, n, k;
    bool ta = false, tb = false;
  };
  const Single singles[] = {
      {"square", 256, 256, 256},
      {"square", 512, 512, 512},
      {"square", 1024, 1024, 1024},
      {"square", 2048, 2048, 2048},
      {"tiny x.W", 1024, 64, 64},
      {"tiny g.W^T", 1024, 64, 64, false, true},
      {"tiny x^T.g", 64, 64, 1024, true, false},
      {"tiny ffn x.W1", 1024, 128, 64},
      {"tiny ffn h.W2", 1024, 64, 128},
      {"tiny ffn h^T.g", 128, 64, 1024, true, false},
      {"medium x.W", 2048, 128, 128},
      {"medium x^T.g", 128, 128, 2048, true, false},
      {"medium ffn x.W1", 2048, 256, 128},
      {"medium ffn g.W1^T", 2048, 128, 256, false, true},
      {"large x.W", 2048, 256, 256},
      {"large ffn x.W1", 2048, 1024, 256},
      {"large ffn h.W2", 2048, 256, 1024},
      {"large ffn g.W1^T", 2048, 256, 1024, false, true},
      {"large ffn x^T.g", 256, 1024, 2048, true, false},
      // The steps' other weight gradients, dW = g^T x: m = out, n = in, k = tokens
      // (the rows above hold the attention projections' of tiny and medium, the
      // first FFN layer's of tiny and the second's of large).
      {"tiny ffn2 x^T.g", 64, 128, 1024, true, false},
      {"tiny head x^T.g", 16, 64, 1024, true, false},
      {"medium ffn1 x^T.g", 256, 128, 2048, true, false},
      {"medium ffn2 x^T.g", 128, 256, 2048, true, false},
      {"medium head x^T.g", 64, 128, 2048, true, false},
      {"large x^T.g", 256, 256, 2048, true, false},
      {"large ffn1 x^T.g", 1024, 256, 2048, true, false},
  };
  for (const Single& s : singles) {
    if (!wanted(s.name)) continue;
    const auto a = random_floats(s.m * s.k, 1), b = random_floats(s.k * s.n, 2);
    std::vector<float> c(s.m * s.n, 0.f);
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    const auto t = median_seconds(
        [&] {
          sg::kernel::gemm<float>(s.ta, s.tb, s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, 0.f,
                                c.data(), s.n);
        },
        [&] {
          blis_direct(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), s.n, threads);
        },
        reps);
    print_row(s.name, s.m, s.n, s.k, 1, 2.0 * s.m * s.n * s.k, t);
  }

  // Attention's per-head products at the encoders' shapes, as
  // autograd/ops/head_products.cpp runs them: gemm_grid over (batch, heads),
  // q, k, v and the pooled output read in place from (B, T, heads * d)
  // (row stride heads * d), the scores and weights (B * heads, T, T). Three
  // kinds, each run twice a step: scores q.k^T and backward dw = g.v^T (NT),
  // pooling w.v and backward dq = g.k (NN), backward dk = g^T.q and dv =
  // w^T.g (TN). The direct side is an
  // OpenMP loop (same thread count) of one-thread BLIS calls with the same
  // strides: what the grid would cost without a path of its own for small
  // matrices.
  struct Heads {
    const char* config;
    int64_t batch, seq, heads, d;
  };
  const Heads encoders[] = {{"tiny", 64, 16, 4, 16}, {"medium", 32, 64, 4, 32}, {"large", 16, 128, 8, 32}};
  for (const Heads& e : encoders) {
    const int64_t T = e.seq, d = e.d, hd = e.heads * d, count = e.batch * e.heads;
    const auto x1 = random_floats(e.batch * T * hd, 3), x2 = random_floats(e.batch * T * hd, 4);
    const auto w = random_floats(count * T * T, 5);
    std::vector<float> out_cols(e.batch * T * hd), out_square(count * T * T);
    const sg::kernel::GridStrides cols{T * hd, d}, square{e.heads * T * T, T * T};
    struct Product {
      const char* name;
      bool ta, tb;
      int64_t m, n, k;
      const float *a, *b;
      int64_t lda, ldb;
      sg::kernel::GridStrides sa, sb;
      float* c;
      int64_t ldc;
      sg::kernel::GridStrides sc;
    };
    const Product products[] = {
        {"q.k^T, g.v^T", false, true, T, T, d, x1.data(), x2.data(), hd, hd, cols, cols, out_square.data(), T, square},
        {"w.v, g.k", false, false, T, d, T, w.data(), x1.data(), T, hd, square, cols, out_cols.data(), hd, cols},
        {"g^T.q, w^T.g", true, false, T, d, T, w.data(), x1.data(), T, hd, square, cols, out_cols.data(), hd, cols},
    };
    for (const Product& p : products) {
      const std::string name = std::string(e.config) + " " + p.name;
      if (!wanted(name)) continue;
      const auto t = median_seconds(
          [&] {
            sg::kernel::gemm_grid<float>(p.ta, p.tb, p.m, p.n, p.k, 1.f, p.a, p.lda, p.sa, p.b, p.ldb,
                                         p.sb, 0.f, p.c, p.ldc, p.sc, e.batch, e.heads);
          },
          [&] {
#pragma omp parallel for schedule(static) num_threads(threads)
            for (int64_t i = 0; i < count; ++i) {
              const int64_t o = i / e.heads, h = i % e.heads;
              blis_direct(p.ta, p.tb, p.m, p.n, p.k, p.a + o * p.sa.outer + h * p.sa.inner, p.lda,
                          p.b + o * p.sb.outer + h * p.sb.inner, p.ldb,
                          p.c + o * p.sc.outer + h * p.sc.inner, p.ldc, 1);
            }
          },
          reps);
      print_row(name.c_str(), p.m, p.n, p.k, count, 2.0 * p.m * p.n * p.k * count, t);
    }
  }
  return 0;
}
