// Matrix products: the GEMM wrapper over BLIS (core/gemm.hpp), its batched
// form, and sg::core::matmul (core/ops.hpp) on top of them.
//
// Every matrix here is row-major: element (i, j) of a matrix with leading
// dimension ld is at p[i * ld + j]. In BLIS's terms that is row stride ld,
// column stride 1, so no transpose is ever copied: BLIS reads op(A) and op(B)
// through the strides and its transpose flags.
//
// Three paths, chosen by size (the thresholds are measured; see
// docs/results.md, "GEMM"):
//   tiny products       our own small kernel: BLIS spends ~4.7 us per call
//                       before doing any arithmetic, more than a 16x16x16
//                       product takes
//   one larger product  BLIS with num_threads() threads (one inside an
//                       OpenMP region, and one for mid-sized products, where
//                       a second thread costs more than it brings)
//   a batch             OpenMP over the batch, each product on one thread
//                       (small kernel or one-thread BLIS), never BLIS threads
//                       inside OpenMP threads
// The small kernel and the one-thread products depend on the shape only,
// and BLIS's threads split the rows and columns of C, never the k sum, so
// results do not change with set_num_threads (tests/test_gemm.cpp checks).
#include "core/gemm.hpp"

#include <blis.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/runtime.hpp"

namespace sg::core {

namespace {

// ---- thresholds (measured on AMD Zen 5 with the skx kernels; the numbers
// are in docs/results.md, "GEMM") ----

// Products up to this many multiply-adds (m*n*k) go through the small
// kernel, which beats one-thread BLIS up to about 128x128x128: BLIS pays
// ~4.7 us per call before any arithmetic (16x16x16: 0.15 us here, 4.7 us in
// BLIS). n and k are capped so that the packed copy of B stays small.
constexpr int64_t kSmallWork = 1 << 20;
constexpr int64_t kSmallMaxNK = 256;
// One product below this m*n*k runs BLIS on one thread even when more are
// available: at 128^3 two threads take 36 us and one 29 us; from about
// 1024x64x64 on, two threads win.
constexpr int64_t kBlisParallelWork = 1 << 22;
// A batch goes parallel when its one-thread time would be over ~6 us, twice
// what starting a two-thread OpenMP region costs. The one-thread time is
// about (m*n*k + kProductOverhead) multiply-adds at ~40 per ns: the overhead
// term is each product's fixed cost (packing, loop set-up), which dominates
// for 8x8x8.
constexpr int64_t kBatchParallelWork = 1 << 18;
constexpr int64_t kProductOverhead = 2048;

// ---- the small kernel ----
//
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C
//
// For products small enough that op(B) fits in L1 or L2. op(B) is first
// copied into column panels Bp (n/W, k, W): panel q holds columns
// q*W .. q*W+W-1 of op(B), one row of W values per p, zero-padded past n.
// A row of W values is one 64-byte vector, Vec<T> (16 floats or 8 doubles:
// one AVX-512 register). Then each R x W tile of C is summed in R vector
// accumulators: for each p, one panel row times a(i, p) is added to each of
// the R rows. The R sums are independent, which hides the latency of the
// fused multiply-add. op(A) is read in place: a(i, p) is a[i*a_rs + p*a_cs]
// whether A is transposed or not.
//
// Vec<T> is GCC's vector extension (also in clang). Written as plain loops
// over W values, g++ 12 vectorises this kernel badly (it vectorises the p
// loop instead, ~10 GFLOP/s at 16x16x16); with Vec<T> it runs ~5x faster.
// Without AVX-512, the compiler splits each Vec<T> into narrower registers.
template <class T>
using Vec [[gnu::vector_size(64)]] = T;
template <class T>
constexpr int kPanelWidth = sizeof(Vec<T>) / sizeof(T);  // W
constexpr int kTileRows = 8;                               // R (4: 15% slower)

template <class T, int R>
void small_tile(int64_t i0, int64_t j0, int64_t width, int64_t k, T alpha, const T* a,
                int64_t a_rs, int64_t a_cs, const T* panel, T beta, T* c, int64_t ldc) {
  constexpr int W = kPanelWidth<T>;
  Vec<T> acc[R] = {};
  for (int64_t p = 0; p < k; ++p) {
    Vec<T> brow;
    std::memcpy(&brow, panel + p * W, sizeof brow);
    for (int r = 0; r < R; ++r) acc[r] += a[(i0 + r) * a_rs + p * a_cs] * brow;
  }
  // Write back columns j0 .. j0+width-1 (width <= W); beta == 0 overwrites
  // whatever C held (even NaN), as BLAS specifies.
  for (int r = 0; r < R; ++r) {
    T sum[W];
    const Vec<T> scaled = alpha * acc[r];
    std::memcpy(sum, &scaled, sizeof sum);
    T* crow = c + (i0 + r) * ldc + j0;
    if (beta == T(0)) {
      for (int64_t jj = 0; jj < width; ++jj) crow[jj] = sum[jj];
    } else {
      for (int64_t jj = 0; jj < width; ++jj) crow[jj] = sum[jj] + beta * crow[jj];
    }
  }
}

template <class T>
void small_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  constexpr int W = kPanelWidth<T>;
  const int64_t panels = (n + W - 1) / W;
  // One buffer per thread, grown as needed and reused by every later call.
  thread_local std::vector<T> packed;
  if (packed.size() < static_cast<size_t>(panels * k * W)) packed.resize(panels * k * W);
  T* bp = packed.data();
  // op(B)(p, j) is b[p * ldb + j], or b[j * ldb + p] when B is transposed.
  const int64_t b_rs = trans_b ? 1 : ldb, b_cs = trans_b ? ldb : 1;
  for (int64_t q = 0; q < panels; ++q) {
    const int64_t j0 = q * W, width = std::min<int64_t>(W, n - j0);
    for (int64_t p = 0; p < k; ++p) {
      T* dst = bp + (q * k + p) * W;
      for (int64_t jj = 0; jj < width; ++jj) dst[jj] = b[p * b_rs + (j0 + jj) * b_cs];
      for (int64_t jj = width; jj < W; ++jj) dst[jj] = T(0);
    }
  }
  const int64_t a_rs = trans_a ? 1 : lda, a_cs = trans_a ? lda : 1;
  for (int64_t q = 0; q < panels; ++q) {
    const int64_t j0 = q * W, width = std::min<int64_t>(W, n - j0);
    const T* panel = bp + q * k * W;
    int64_t i = 0;
    for (; i + kTileRows <= m; i += kTileRows)
      small_tile<T, kTileRows>(i, j0, width, k, alpha, a, a_rs, a_cs, panel, beta, c, ldc);
    // The last rows, fewer than R: tiles of 4, 2 and 1 rows.
    for (; i + 4 <= m; i += 4)
      small_tile<T, 4>(i, j0, width, k, alpha, a, a_rs, a_cs, panel, beta, c, ldc);
    for (; i + 2 <= m; i += 2)
      small_tile<T, 2>(i, j0, width, k, alpha, a, a_rs, a_cs, panel, beta, c, ldc);
    for (; i < m; ++i) small_tile<T, 1>(i, j0, width, k, alpha, a, a_rs, a_cs, panel, beta, c, ldc);
  }
}

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

bool is_small(int64_t m, int64_t n, int64_t k) {
  return m * n * k <= kSmallWork && n <= kSmallMaxNK && k <= kSmallMaxNK;
}

// One product, already checked, on this thread only (the batched path).
template <class T>
void product_on_one_thread(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                           const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                           int64_t ldc) {
  if (k == 0 || alpha == T(0)) {
    scale_rows(m, n, beta, c, ldc);
  } else if (is_small(m, n, k)) {
    small_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    blis_product(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, 1);
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

// The batched loop, with the i-th operands found by functions: gemm_batched
// passes fixed strides; matmul passes offsets of broadcast batches.
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
  const bool small = is_small(m, n, k);
  if (!small) detail::ensure_blis();
  // Fewer big products than threads: give each product all threads instead.
  if (!small && batch < threads) {
    for (int64_t i = 0; i < batch; ++i)
      gemm(trans_a, trans_b, m, n, k, alpha, a_at(i), lda, b_at(i), ldb, beta, c_at(i), ldc);
    return;
  }
  auto product = [&](int64_t i) {
    product_on_one_thread(trans_a, trans_b, m, n, k, alpha, a_at(i), lda, b_at(i), ldb, beta,
                          c_at(i), ldc);
  };
  // A plain loop, not `omp parallel if(false)`: even a one-thread region
  // costs ~1.3 us, ten 16x16x16 products' worth.
  if (threads == 1 || batch * (m * n * k + kProductOverhead) < kBatchParallelWork) {
    for (int64_t i = 0; i < batch; ++i) product(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < batch; ++i) product(i);
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  check_product("gemm", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == T(0)) {
    scale_rows(m, n, beta, c, ldc);
  } else if (is_small(m, n, k)) {
    small_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    detail::ensure_blis();
    // Never BLIS threads inside OpenMP threads: that oversubscribes the cores.
    int threads = omp_in_parallel() ? 1 : num_threads();
    if (m * n * k < kBlisParallelWork) threads = 1;
    blis_product(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
  }
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

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);
template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*,
                                  int64_t, int64_t, const float*, int64_t, int64_t, float, float*,
                                  int64_t, int64_t, int64_t);
template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                   int64_t, int64_t, const double*, int64_t, int64_t, double,
                                   double*, int64_t, int64_t, int64_t);

// ---- matmul ----
//
//   a (..., M, K) x b (..., K, N) -> (..., M, N)
//
// With transpose_a, a is stored (..., K, M); with transpose_b, b is stored
// (..., N, K). The batch axes (all but the last two) broadcast as in NumPy.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  // A transposed operand prints with a ᵀ: "(2, 3) by (5, 3)ᵀ".
  const std::string show_a = detail::cat(sa, transpose_a ? "ᵀ" : "");
  const std::string show_b = detail::cat(sb, transpose_b ? "ᵀ" : "");
  if (sa.size() < 2 || sb.size() < 2)
    fail("matmul: needs tensors of at least 2 dimensions, got ", show_a, " and ", show_b,
         " (reshape a vector of n values to (1, n) or (n, 1))");
  if (!is_floating(a.dtype()) || !is_floating(b.dtype()))
    fail("matmul: needs float32 or float64 tensors, got ", sa, " ", a.dtype(), " and ", sb, " ",
         b.dtype());
  if (a.dtype() != b.dtype())
    fail("matmul: dtypes differ: ", sa, " is ", a.dtype(), " and ", sb, " is ", b.dtype());

  const size_t ra = sa.size(), rb = sb.size();
  const int64_t M = transpose_a ? sa[ra - 1] : sa[ra - 2];
  const int64_t K = transpose_a ? sa[ra - 2] : sa[ra - 1];
  const int64_t Kb = transpose_b ? sb[rb - 1] : sb[rb - 2];
  const int64_t N = transpose_b ? sb[rb - 2] : sb[rb - 1];
  if (K != Kb)
    fail("matmul: cannot multiply ", show_a, " by ", show_b, ": inner dimensions ", K, " and ", Kb,
         " differ");

  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(batch_a, batch_b, "matmul");
  } catch (const Error&) {
    fail("matmul: batch dimensions ", batch_a, " and ", batch_b,
         " do not broadcast: cannot multiply ", show_a, " by ", show_b);
  }
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  Tensor out = empty(out_shape, a.dtype());
  if (out.numel() == 0) return out;

  // Row lengths of the stored matrices (at least 1, as BLIS requires, when
  // a side is empty).
  const int64_t lda = std::max<int64_t>(1, sa[ra - 1]);
  const int64_t ldb = std::max<int64_t>(1, sb[rb - 1]);
  const int64_t batches = numel(batch);

  visit_floating(a, "matmul", [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = out.data<T>();

    // Every Linear layer: b is one matrix and a's rows are contiguous, so
    // a's batch folds into its rows and the whole thing is ONE product,
    // (batches * M, K) x (K, N), big enough for BLIS to run at full speed.
    if (!transpose_a && numel(batch_b) == 1) {
      gemm<T>(false, transpose_b, batches * M, N, K, T(1), pa, lda, pb, ldb, T(0), pc, N);
      return;
    }

    // General case: for each output batch index, where its a and b matrices
    // start. An operand's size-1 (or missing) batch axis repeats its matrix.
    const int64_t nb = static_cast<int64_t>(batch.size());
    std::vector<int64_t> offset_a(batches), offset_b(batches);
    // Element strides of each output batch axis in a and b (0 = broadcast).
    std::vector<int64_t> step_a(nb, 0), step_b(nb, 0);
    int64_t sa_step = sa[ra - 2] * sa[ra - 1], sb_step = sb[rb - 2] * sb[rb - 1];
    for (int64_t d = nb - 1; d >= 0; --d) {
      const int64_t da = d - (nb - static_cast<int64_t>(batch_a.size()));
      const int64_t db = d - (nb - static_cast<int64_t>(batch_b.size()));
      if (da >= 0) {
        if (batch_a[da] != 1) step_a[d] = sa_step;
        sa_step *= batch_a[da];
      }
      if (db >= 0) {
        if (batch_b[db] != 1) step_b[d] = sb_step;
        sb_step *= batch_b[db];
      }
    }
    std::vector<int64_t> index(nb, 0);  // the batch index, counted like an odometer
    int64_t off_a = 0, off_b = 0;
    for (int64_t i = 0; i < batches; ++i) {
      offset_a[i] = off_a;
      offset_b[i] = off_b;
      for (int64_t d = nb - 1; d >= 0; --d) {
        if (++index[d] < batch[d]) {
          off_a += step_a[d];
          off_b += step_b[d];
          break;
        }
        off_a -= step_a[d] * (batch[d] - 1);
        off_b -= step_b[d] * (batch[d] - 1);
        index[d] = 0;
      }
    }
    const int64_t c_step = M * N;
    batched_products<T>(
        transpose_a, transpose_b, M, N, K, T(1), lda, ldb, T(0), N, batches,
        [&](int64_t i) { return pa + offset_a[i]; }, [&](int64_t i) { return pb + offset_b[i]; },
        [&](int64_t i) { return pc + i * c_step; });
  });
  return out;
}

}  // namespace sg::core
