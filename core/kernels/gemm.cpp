// The GEMM dispatch: sg::kernel::gemm (core/kernels/gemm.hpp) and its
// batched, grid and offset forms (the Tensor-level sg::kernel::matmul over
// them is core/kernels/matmul.cpp).
// Each product is checked once here, then goes one of three ways:
//
//   k == 0 or alpha == 0  C = beta * C, no arithmetic
//   n <= 1024 or k <= 1024  our register-blocked kernel (gemm_tile.cpp), on
//   (AVX2: 256, SSE/NEON: 64)  num_threads() threads from kKernelParallelWork on
//                       (one below it, and inside an OpenMP region), when
//                       the build's target has a tuned tile (AVX-512, AVX2 +
//                       FMA, SSE, NEON)
//   otherwise           BLIS, on num_threads() threads: large products, and
//                       every product on a target with no tuned tile (BLIS
//                       has kernels for it; a generic loop would be slow)
//   a batch             OpenMP over the batch, each product on one thread,
//                       never threads inside threads; tiny products (our
//                       kernel's, attention's heads) a run at a time
//
// Every matrix is row-major: element (i, j) of a matrix with leading
// dimension ld is at p[i * ld + j] (for BLIS: row stride ld, column stride
// 1), so no transpose is ever copied. No path splits the k sum over threads,
// so results do not change with set_num_threads (tests/core/kernels/test_gemm.cpp checks).
// Why the thresholds are where they are, with the measurements:
// docs/architecture.md, "The GEMM kernel's choices, measured".
#include "core/kernels/gemm.hpp"
#include "core/kernels/gemm_tile.hpp"

#include <blis.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/kernels.hpp"
#include "core/runtime.hpp"

namespace sg::kernel {

namespace {

// ---- thresholds (measured: docs/architecture.md) ----

// Products go through our kernel unless both n and k are over this; past it
// BLIS's blocking of A as well as B pays off. The narrower the vectors, the
// less arithmetic the tile does per load of A, and the sooner BLIS (which
// packs A) wins: with AVX-512 (8 x 32) the kernel keeps up with BLIS up to
// 1024; with AVX2 (6 x 16) it fell 10-20% behind BLIS's haswell kernels at
// 512^3, 1024^3 and 256 x 1024 x 2048; with SSE (4 x 8) 10-15% behind
// BLIS's penryn kernels on 2048 x 256 x 256 and 2048 x 1024 x 256, and at
// 128 still about 10% behind on 128 x 128 x 2048 (docs/architecture.md). Each halving of the vector divides the limit by four. 128-bit
// NEON gets SSE's limit.
const int64_t kKernelMaxNK = tile::vector_bits() >= 512   ? 1024
                             : tile::vector_bits() >= 256 ? 256
                                                          : 64;
// Our kernel runs one product on several threads from this m*n*k on: below
// it, starting an OpenMP region costs about as much as the arithmetic.
constexpr int64_t kKernelParallelWork = 1 << 19;
// A batch goes parallel when its one-thread time would be about twice what
// starting an OpenMP region costs. The one-thread time is counted as
// batch * (m*n*k + kProductOverhead) multiply-adds: the overhead term is
// each product's fixed cost (packing, loop set-up), which dominates for 8x8x8.
constexpr int64_t kBatchParallelWork = 1 << 18;
constexpr int64_t kProductOverhead = 2048;

// ---- BLIS ----

// BLIS 0.9's typed API takes non-const pointers for every operand, inputs
// included; it does not write to them.
void blis_gemm(trans_t ta, trans_t tb, dim_t m, dim_t n, dim_t k, float alpha, const float* a,
               inc_t lda, const float* b, inc_t ldb, float beta, float* c, inc_t ldc,
               rntm_t* rntm) {
  bli_sgemm_ex(ta, tb, m, n, k, &alpha, const_cast<float*>(a), lda, 1, const_cast<float*>(b), ldb,
               1, &beta, c, ldc, 1, nullptr, rntm);
}
void blis_gemm(trans_t ta, trans_t tb, dim_t m, dim_t n, dim_t k, double alpha, const double* a,
               inc_t lda, const double* b, inc_t ldb, double beta, double* c, inc_t ldc,
               rntm_t* rntm) {
  bli_dgemm_ex(ta, tb, m, n, k, &alpha, const_cast<double*>(a), lda, 1, const_cast<double*>(b),
               ldb, 1, &beta, c, ldc, 1, nullptr, rntm);
}

// One product through BLIS on `threads` threads (BLIS must be initialised).
template <class T>
void blis_product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int threads) {
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(threads, &rntm);
  blis_gemm(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
            trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, alpha, a, lda, b, ldb, beta, c,
            ldc, &rntm);
}

// C = beta * C: what a product with k == 0 or alpha == 0 leaves. beta == 0
// overwrites, so uninitialised C (NaN included) becomes zeros.
template <class T>
void scale_rows(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      std::fill(row, row + n, T(0));
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

// A weight gradient x^T g (A transposed, few rows of C, a long reduction)
// goes to our kernel whatever n and k: it packs a transposed A block by
// block as BLIS does, and with m this short it reads each panel of op(B)
// from memory at most twice. BLIS's zen3 kernels ran 256 x 1024 x 2048 at
// half their square speed (docs/architecture.md).
constexpr int64_t kKernelMaxRowsTransA = 256;

// Whether our kernel (rather than BLIS) computes a product of this shape.
bool use_kernel(bool trans_a, int64_t m, int64_t n, int64_t k) {
  return tile::tuned() &&
         (n <= kKernelMaxNK || k <= kKernelMaxNK || (trans_a && m <= kKernelMaxRowsTransA));
}

// Whether our kernel does the arithmetic of this product: there is some
// (k > 0, alpha != 0; otherwise C is only scaled) and BLIS does not take it.
template <class T>
bool kernel_computes(bool trans_a, int64_t m, int64_t n, int64_t k, T alpha) {
  return k > 0 && alpha != T(0) && use_kernel(trans_a, m, n, k);
}

// One product, already checked, with m and n > 0, on up to `threads`
// threads (1 in the batched path and inside an OpenMP region). Below
// kKernelParallelWork one thread; on one thread, tiny products take the
// stack panel.
//
// A bias (n values, or null) is added to every row: by our kernel as it
// stores each tile; otherwise (BLIS, or no product at all) C first becomes
// beta * C + bias, row by row, and the product adds into it.
template <class T>
void product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
             int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int threads,
             const T* bias = nullptr) {
  const bool kernel = kernel_computes(trans_a, m, n, k, alpha);
  if (bias && !kernel) {
    for (int64_t i = 0; i < m; ++i) {
      T* row = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) row[j] = beta == T(0) ? bias[j] : beta * row[j] + bias[j];
    }
    beta = T(1);
  }
  if (k == 0 || alpha == T(0)) {
    scale_rows(m, n, beta, c, ldc);
  } else if (kernel) {
    if (m * n * k < kKernelParallelWork) threads = 1;
    tile::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads, bias);
  } else {
    detail::ensure_blis();
    blis_product(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
  }
}

// Shape and stride checks shared by gemm and gemm_batched; `op` names the
// caller. Pointers are checked only when some product will run (`batch` > 0).
template <class T>
void check_product(const char* op, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                   const T* a, int64_t lda, const T* b, int64_t ldb, const T* c, int64_t ldc,
                   int64_t batch = 1) {
  auto sizes = [&] {
    return detail::cat("m=", m, ", n=", n, ", k=", k, ", lda=", lda, ", ldb=", ldb, ", ldc=", ldc,
                       trans_a ? ", A transposed" : "", trans_b ? ", B transposed" : "");
  };
  if (m < 0 || n < 0 || k < 0) fail(op, ": sizes must not be negative (", sizes(), ")");
  // A is stored (m, k), or (k, m) when transposed: a row holds k or m values.
  const int64_t a_row = trans_a ? m : k, b_row = trans_b ? k : n;
  if (lda < std::max<int64_t>(1, a_row))
    fail(op, ": lda must be at least ", std::max<int64_t>(1, a_row),
         ", the row length of the stored A (", sizes(), ")");
  if (ldb < std::max<int64_t>(1, b_row))
    fail(op, ": ldb must be at least ", std::max<int64_t>(1, b_row),
         ", the row length of the stored B (", sizes(), ")");
  if (ldc < std::max<int64_t>(1, n))
    fail(op, ": ldc must be at least ", std::max<int64_t>(1, n), ", the row length of C (",
         sizes(), ")");
  if (batch > 0 && m > 0 && n > 0) {
    if (!c) fail(op, ": C is null (", sizes(), ")");
    if (k > 0 && (!a || !b)) fail(op, ": ", !a ? "A" : "B", " is null (", sizes(), ")");
  }
}

// A batch prefetches the next product's transposed A when it is at most
// this big: a quarter of Zen 3's L2, so that it never pushes out the
// product running.
constexpr int64_t kPrefetchBytes = int64_t{128} << 10;

// Asks for each cache line of a (rows, cols) block with row stride ld to be
// brought into L2 (a hint: no fault, no change to any value).
// p: (rows, cols), ld >= cols > 0. Always inlined: as a call, g++ finds a
// function of prefetches alone free of side effects and drops the call.
template <class T>
[[gnu::always_inline]] inline void prefetch_rows(const T* p, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    const auto first = reinterpret_cast<uintptr_t>(p + r * ld) & ~uintptr_t{63};
    const auto last = reinterpret_cast<uintptr_t>(p + r * ld + cols - 1);
    for (uintptr_t line = first; line <= last; line += 64)
      __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 2);
  }
}

// The batched loop, with the i-th operands found by functions: gemm_batched
// passes fixed strides; gemm_offsets (matmul's) offsets of broadcast batches.
template <class T, class AAt, class BAt, class CAt>
void batched_products(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                      int64_t lda, int64_t ldb, T beta, int64_t ldc, int64_t batch, AAt a_at,
                      BAt b_at, CAt c_at) {
  if (batch == 0 || m == 0 || n == 0) return;
  if (batch == 1) {
    gemm(trans_a, trans_b, m, n, k, alpha, a_at(0), lda, b_at(0), ldb, beta, c_at(0), ldc);
    return;
  }
  const int threads = omp_in_parallel() ? 1 : num_threads();
  if (!use_kernel(trans_a, m, n, k)) detail::ensure_blis();  // BLIS set up before any thread starts
  // Fewer big products than threads: give each product all threads instead.
  if (batch < threads && m * n * k >= kKernelParallelWork) {
    for (int64_t i = 0; i < batch; ++i)
      gemm(trans_a, trans_b, m, n, k, alpha, a_at(i), lda, b_at(i), ldb, beta, c_at(i), ldc);
    return;
  }
  // Tiny products (attention's heads) go to the kernel as whole runs of
  // products, [i0, i1) a call, with their operands listed first: at 16 x 16
  // x 16 the call chain per product (product, tile::gemm, its dispatch)
  // cost a good part of the arithmetic (docs/architecture.md). Each
  // product's bits are those it gets alone.
  const bool tiny = kernel_computes(trans_a, m, n, k, alpha) && tile::fits_tiny<T>(n, k);
  std::vector<const T*> as, bs;
  std::vector<T*> cs;
  if (tiny) {
    as.resize(batch), bs.resize(batch), cs.resize(batch);
    for (int64_t i = 0; i < batch; ++i) as[i] = a_at(i), bs[i] = b_at(i), cs[i] = c_at(i);
  }
  // While a product runs, the next one's transposed A is fetched into L2.
  // In a training step's backward, attention's weights come back from
  // memory (written in the forward pass), and the kernel reads a transposed
  // A in place, a few values of each stored row: each row was a miss the
  // hardware prefetcher did not see coming. Prefetching the other operands
  // as well gained nothing in the step (most of them were written just
  // before) and cost hot products time (docs/architecture.md).
  const bool prefetch = trans_a && !tiny && k * m * int64_t{sizeof(T)} <= kPrefetchBytes;
  auto run = [&](int64_t i0, int64_t i1) {  // products i0 .. i1-1, on the calling thread
    if (tiny) {
      tile::gemm_tiny(trans_a, trans_b, m, n, k, alpha, as.data() + i0, lda, bs.data() + i0, ldb,
                      beta, cs.data() + i0, ldc, i1 - i0);
      return;
    }
    for (int64_t i = i0; i < i1; ++i) {
      if (prefetch && i + 1 < i1) prefetch_rows(a_at(i + 1), k, m, lda);  // A stored (k, m)
      product(trans_a, trans_b, m, n, k, alpha, a_at(i), lda, b_at(i), ldb, beta, c_at(i), ldc, 1);
    }
  };
  // A plain loop, not `omp parallel if(false)`: even a one-thread region
  // costs ~1.3 us, ten 16x16x16 products' worth.
  if (threads == 1 || batch * (m * n * k + kProductOverhead) < kBatchParallelWork) {
    run(0, batch);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    // Contiguous shares, as schedule(static) would give.
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    run(batch * t / nt, batch * (t + 1) / nt);
  }
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, const T* bias) {
  check_product("gemm", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  if (m == 0 || n == 0) return;
  // Never threads inside OpenMP threads: that oversubscribes the cores.
  product(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
          omp_in_parallel() ? 1 : num_threads(), bias);
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                  const T* a, int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                  int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  check_product("gemm_batched", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, batch);
  if (batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0)
    fail("gemm_batched: batch and strides must not be negative (batch=", batch,
         ", stride_a=", stride_a, ", stride_b=", stride_b, ", stride_c=", stride_c, ")");
  // The products run in parallel, so no two may write the same element of C.
  if (batch > 1 && m > 0 && n > 0 && stride_c < (m - 1) * ldc + n)
    fail("gemm_batched: stride_c=", stride_c, " makes the ", batch, " outputs of (", m, ", ", n,
         ") with ldc=", ldc, " overlap; it must be at least ", (m - 1) * ldc + n);
  batched_products(
      trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc, batch,
      [&](int64_t i) { return a + i * stride_a; }, [&](int64_t i) { return b + i * stride_b; },
      [&](int64_t i) { return c + i * stride_c; });
}

template <class T>
void gemm_grid(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, GridStrides stride_a, const T* b, int64_t ldb, GridStrides stride_b,
               T beta, T* c, int64_t ldc, GridStrides stride_c, int64_t outer, int64_t inner) {
  check_product("gemm_grid", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, outer * inner);
  auto grid = [&] {
    return detail::cat("grid ", outer, " x ", inner, ", strides a {", stride_a.outer, ", ",
                       stride_a.inner, "}, b {", stride_b.outer, ", ", stride_b.inner, "}, c {",
                       stride_c.outer, ", ", stride_c.inner, "}");
  };
  if (outer < 0 || inner < 0 || stride_a.outer < 0 || stride_a.inner < 0 || stride_b.outer < 0 ||
      stride_b.inner < 0 || stride_c.outer < 0 || stride_c.inner < 0)
    fail("gemm_grid: grid sizes and strides must not be negative (", grid(), ")");
  if (outer == 0 || inner == 0 || m == 0 || n == 0) return;
  // The products run in parallel, so no two may write the same element of C.
  const int64_t one = (m - 1) * ldc + n;  // elements spanned by one output
  const bool stacked = stride_c.inner >= one;
  const bool side_by_side = stride_c.inner >= n && (inner - 1) * stride_c.inner + n <= ldc;
  if (inner > 1 && !stacked && !side_by_side)
    fail("gemm_grid: the ", inner, " inner outputs of (", m, ", ", n, ") with ldc=", ldc,
         " overlap: stride ", stride_c.inner, " puts them neither one below the other (at least ",
         one, ") nor side by side within a row (", grid(), ")");
  if (outer > 1 && stride_c.outer < (inner - 1) * stride_c.inner + one)
    fail("gemm_grid: outer stride ", stride_c.outer, " makes the outer blocks of C overlap; it must be at least ",
         (inner - 1) * stride_c.inner + one, " (", grid(), ")");
  batched_products(
      trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc, outer * inner,
      [&](int64_t i) { return a + i / inner * stride_a.outer + i % inner * stride_a.inner; },
      [&](int64_t i) { return b + i / inner * stride_b.outer + i % inner * stride_b.inner; },
      [&](int64_t i) { return c + i / inner * stride_c.outer + i % inner * stride_c.inner; });
}

template <class T>
void gemm_offsets(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t lda, const int64_t* offset_a, const T* b, int64_t ldb,
                  const int64_t* offset_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                  int64_t batch) {
  check_product("gemm_offsets", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, batch);
  if (batch < 0 || stride_c < 0)
    fail("gemm_offsets: batch and stride_c must not be negative (batch=", batch,
         ", stride_c=", stride_c, ")");
  if (batch > 1 && m > 0 && n > 0 && stride_c < (m - 1) * ldc + n)
    fail("gemm_offsets: stride_c=", stride_c, " makes the ", batch, " outputs of (", m, ", ", n,
         ") with ldc=", ldc, " overlap; it must be at least ", (m - 1) * ldc + n);
  batched_products(
      trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc, batch,
      [&](int64_t i) { return a + offset_a[i]; }, [&](int64_t i) { return b + offset_b[i]; },
      [&](int64_t i) { return c + i * stride_c; });
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t, const float*);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t, const double*);
template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*,
                                  int64_t, int64_t, const float*, int64_t, int64_t, float, float*,
                                  int64_t, int64_t, int64_t);
template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                   int64_t, int64_t, const double*, int64_t, int64_t, double,
                                   double*, int64_t, int64_t, int64_t);
template void gemm_grid<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                               GridStrides, const float*, int64_t, GridStrides, float, float*,
                               int64_t, GridStrides, int64_t, int64_t);
template void gemm_grid<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                int64_t, GridStrides, const double*, int64_t, GridStrides, double,
                                double*, int64_t, GridStrides, int64_t, int64_t);

template void gemm_offsets<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*,
                                  int64_t, const int64_t*, const float*, int64_t, const int64_t*,
                                  float, float*, int64_t, int64_t, int64_t);
template void gemm_offsets<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                   int64_t, const int64_t*, const double*, int64_t,
                                   const int64_t*, double, double*, int64_t, int64_t, int64_t);

}  // namespace sg::kernel
