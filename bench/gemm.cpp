// GEMM benchmark: smallgrad's wrapper against BLIS called directly.
//
//   build/release/bench/gemm [--threads N] [--reps R]
//
// For each shape it times sg::kernel::gemm (or gemm_batched) and the same work
// done by calling BLIS's typed API directly with the same thread count, and
// prints the median GFLOP/s of each and their ratio. The wrapper should be
// within a few percent of BLIS on large products (its checks cost
// nanoseconds) and far ahead on the batch of tiny products, where the direct
// loop pays BLIS's per-call overhead 256 times.
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
               "usage: %s [--threads N] [--reps R]\n"
               "  --threads N  threads for smallgrad and for the direct BLIS calls (default: "
               "smallgrad's default)\n"
               "  --reps R     timed repetitions per measurement; the median is reported "
               "(default 11)\n",
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
void blis_direct(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                 const float* b, float* c, int threads) {
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(threads, &rntm);
  float alpha = 1.f, beta = 0.f;
  bli_sgemm_ex(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m,
               n, k, &alpha, const_cast<float*>(a), ta ? m : k, 1, const_cast<float*>(b),
               tb ? k : n, 1, &beta, c, n, 1, nullptr, &rntm);
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
  if (!bench::whole_flags(argc, argv, {{"--threads", &threads}, {"--reps", &reps}}, 4096)) return usage(argv[0]);
  if (threads) sg::set_num_threads(threads);
  threads = sg::num_threads();

  // blis_kernels() also picks the kernels and initialises BLIS, so the direct
  // calls below run the same kernels as the wrapper.
  const std::string kernels = sg::blis_kernels();
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
  };
  for (const Single& s : singles) {
    const auto a = random_floats(s.m * s.k, 1), b = random_floats(s.k * s.n, 2);
    std::vector<float> c(s.m * s.n, 0.f);
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    const auto t = median_seconds(
        [&] {
          sg::kernel::gemm<float>(s.ta, s.tb, s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, 0.f,
                                c.data(), s.n);
        },
        [&] { blis_direct(s.ta, s.tb, s.m, s.n, s.k, a.data(), b.data(), c.data(), threads); },
        reps);
    print_row(s.name, s.m, s.n, s.k, 1, 2.0 * s.m * s.n * s.k, t);
  }

  // Attention-sized batches: scores Q.K^T (B transposed) and P.V. The direct
  // side is an OpenMP loop (same thread count) of one-thread BLIS calls: what
  // a batched product would cost without a path of its own for tiny matrices.
  struct Batched {
    const char* name;
    int64_t m, n, k;
    bool tb;
  };
  const Batched batches[] = {
      {"batched Q.K^T 16x16x16", 16, 16, 16, true},
      {"batched P.V 16x64x16", 16, 64, 16, false},
      {"batched Q.K^T 64x64x64", 64, 64, 64, true},
  };
  const int64_t batch = 256;
  for (const Batched& s : batches) {
    const int64_t sa = s.m * s.k, sb = s.k * s.n, sc = s.m * s.n;
    const auto a = random_floats(sa * batch, 3), b = random_floats(sb * batch, 4);
    std::vector<float> c(sc * batch, 0.f);
    const int64_t ldb = s.tb ? s.k : s.n;
    const auto t = median_seconds(
        [&] {
          sg::kernel::gemm_batched<float>(false, s.tb, s.m, s.n, s.k, 1.f, a.data(), s.k, sa,
                                        b.data(), ldb, sb, 0.f, c.data(), s.n, sc, batch);
        },
        [&] {
#pragma omp parallel for schedule(static) num_threads(threads)
          for (int64_t i = 0; i < batch; ++i)
            blis_direct(false, s.tb, s.m, s.n, s.k, a.data() + i * sa, b.data() + i * sb,
                        c.data() + i * sc, 1);
        },
        reps);
    print_row(s.name, s.m, s.n, s.k, batch, 2.0 * s.m * s.n * s.k * batch, t);
  }
  return 0;
}
