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
//   most products       our own register-blocked kernel, on num_threads()
//                       threads (one inside an OpenMP region or below
//                       ~5 us of work). On the encoders' shapes, where one
//                       of n and k is 64 to 256, it runs 1.1 to 1.8x faster
//                       than BLIS, which packs A as well as B; and BLIS
//                       spends ~4.7 us per call before any arithmetic, more
//                       than a 16x16x16 product takes.
//   big products        (n and k both over 1024) BLIS with num_threads()
//                       threads
//   a batch             OpenMP over the batch, each product on one thread,
//                       never threads inside threads
// The kernel's threads split the rows of C, BLIS's split the rows and
// columns, never the k sum, so results do not change with set_num_threads
// (tests/test_gemm.cpp checks).
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

// Products go through our kernel unless both n and k are over this: the
// kernel matches or beats BLIS up to 1024^3 on one and two threads, and at
// 2048^3 they are even (BLIS's blocking of A as well as B pays off there).
constexpr int64_t kKernelMaxNK = 1024;
// Our kernel runs one product on several threads from this m*n*k on (about
// 5 us of arithmetic on one thread; a two-thread region costs ~3 us).
constexpr int64_t kKernelParallelWork = 1 << 19;
// A batch goes parallel when its one-thread time would be over ~6 us, twice
// what starting a two-thread OpenMP region costs. The one-thread time is
// about (m*n*k + kProductOverhead) multiply-adds at ~40 per ns: the overhead
// term is each product's fixed cost (packing, loop set-up), which dominates
// for 8x8x8.
constexpr int64_t kBatchParallelWork = 1 << 18;
constexpr int64_t kProductOverhead = 2048;

// ---- our register-blocked kernel ----
//
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C
//
// op(B) is first copied into column panels: panel q holds columns
// q*P .. q*P+P-1 of op(B) (P = kPanelVecs vectors of W values; W = 16 floats
// or 8 doubles, one 64-byte AVX-512 register), one row of P values per p,
// zero-padded past n. Then each R x P tile of C is summed in R * kPanelVecs
// vector accumulators that stay in registers for the whole depth: for each
// p, the panel's row is loaded once (kPanelVecs loads) and a(i, p) of each
// of the R rows is broadcast and multiplied into it (R * kPanelVecs fused
// multiply-adds). 16 independent accumulators hide the FMA latency, and 16
// FMAs per 2 + 8 loads keep both FMA pipes busy. op(A) is read in place:
// a(i, p) is a[i*a_rs + p*a_cs] whether A is transposed or not (8
// consecutive values of one column when it is).
//
// The depth is cut into blocks of kDepthBlock so that one panel's block
// (256 x 32 floats = 32 KiB) stays in L1 while a block of rows streams past
// it; the rows are cut into blocks of kRowBlock so that their A values stay
// in L2 across the panels. Blocks after the first accumulate into C.
//
// Measured against BLIS's skx kernels on the encoder's shapes, one thread:
// 1024x64x64 200 against 141 GFLOP/s, 64x64x1024 (a weight gradient) 187
// against 109, 2048x256x256 209 against 196 (docs/results.md, "GEMM"):
// BLIS packs A as well as B, which costs as much as the arithmetic when one
// of n and k is 64.
//
// Vec<T> is GCC's vector extension (also in clang). Written as plain loops
// over W values, g++ 12 vectorises this kernel badly (it vectorises the p
// loop instead); with Vec<T> it runs several times faster. Without AVX-512
// the compiler splits each Vec<T> into narrower registers.
template <class T>
using Vec [[gnu::vector_size(64)]] = T;
template <class T>
constexpr int kVecWidth = sizeof(Vec<T>) / sizeof(T);  // W
constexpr int kPanelVecs = 2;  // vectors per panel row
constexpr int kTileVecs = 16;  // accumulators per tile: R = kTileVecs / vectors

template <class T>
constexpr int64_t kPanelWidth = kPanelVecs * kVecWidth<T>;  // P
constexpr int64_t kDepthBlock = 256;
constexpr int64_t kRowBlock = 128;

// One tile: R rows of C times NV vectors of a panel (row stride ps), over a
// depth of kc; writes the tile's first `width` columns (width <= NV * W).
template <class T, int R, int NV>
void tile(int64_t kc, const T* a, int64_t a_rs, int64_t a_cs, const T* panel, int64_t ps,
          T alpha, T beta, T* c, int64_t ldc, int64_t width) {
  constexpr int W = kVecWidth<T>;
  // Written so that g++ keeps acc and b in registers: an `= {}` initialiser
  // or one memcpy into the whole b array made it store all 16 accumulators to
  // the stack on every step (3x slower).
  Vec<T> acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = Vec<T>{};
  for (int64_t p = 0; p < kc; ++p) {
    Vec<T> b[NV];
    for (int v = 0; v < NV; ++v) std::memcpy(&b[v], panel + p * ps + v * W, sizeof b[v]);
    for (int r = 0; r < R; ++r) {
      const T x = a[r * a_rs + p * a_cs];
      for (int v = 0; v < NV; ++v) acc[r][v] += x * b[v];
    }
  }
  // beta == 0 overwrites whatever C held (even NaN), as BLAS specifies.
  for (int r = 0; r < R; ++r) {
    T* crow = c + r * ldc;
    for (int v = 0; v < NV; ++v) {
      const int64_t cols = std::min<int64_t>(W, width - v * W);
      if (cols <= 0) break;
      Vec<T> out = alpha * acc[r][v];
      if (cols == W) {  // whole vectors: one load and one store
        if (beta != T(0)) {
          Vec<T> old;
          std::memcpy(&old, crow + v * W, sizeof old);
          out += beta * old;
        }
        std::memcpy(crow + v * W, &out, sizeof out);
      } else {
        T sum[W];
        std::memcpy(sum, &out, sizeof sum);
        for (int64_t j = 0; j < cols; ++j)
          crow[v * W + j] = beta == T(0) ? sum[j] : sum[j] + beta * crow[v * W + j];
      }
    }
  }
}

// Tiles for rows i0 .. i1-1 against one panel: R rows at a time (16 with one
// vector per row, 8 with two: 16 accumulators either way), then 4, 2 and 1
// for the last rows.
template <class T, int NV>
void tile_rows(int64_t i0, int64_t i1, int64_t kc, const T* a, int64_t a_rs, int64_t a_cs,
               const T* panel, int64_t ps, T alpha, T beta, T* c, int64_t ldc, int64_t width) {
  constexpr int R = kTileVecs / NV;
  auto at = [&](int64_t i) { return a + i * a_rs; };
  int64_t i = i0;
  for (; i + R <= i1; i += R)
    tile<T, R, NV>(kc, at(i), a_rs, a_cs, panel, ps, alpha, beta, c + i * ldc, ldc, width);
  if constexpr (R > 8) {
    for (; i + 8 <= i1; i += 8)
      tile<T, 8, NV>(kc, at(i), a_rs, a_cs, panel, ps, alpha, beta, c + i * ldc, ldc, width);
  }
  for (; i + 4 <= i1; i += 4)
    tile<T, 4, NV>(kc, at(i), a_rs, a_cs, panel, ps, alpha, beta, c + i * ldc, ldc, width);
  for (; i + 2 <= i1; i += 2)
    tile<T, 2, NV>(kc, at(i), a_rs, a_cs, panel, ps, alpha, beta, c + i * ldc, ldc, width);
  for (; i < i1; ++i)
    tile<T, 1, NV>(kc, at(i), a_rs, a_cs, panel, ps, alpha, beta, c + i * ldc, ldc, width);
}

// How op(B) (k, n) is laid out in panels: `stride` values a row (P, or W
// when all of B fits in one vector's width, so a 16-column B is not padded
// to 32), panel q holding columns q*stride .. q*stride+stride-1 at
// packed + q*stride*k, zero-padded past n.
struct Panels {
  int64_t stride, count;
};
template <class T>
Panels panels_for(int64_t n) {
  const int64_t stride = n <= kVecWidth<T> ? kVecWidth<T> : kPanelWidth<T>;
  return {stride, (n + stride - 1) / stride};
}

// Copies panel q of op(B) into `packed`.
template <class T>
void pack_panel(bool trans_b, int64_t q, Panels pl, int64_t k, int64_t n, const T* b, int64_t ldb,
                T* packed) {
  const int64_t ps = pl.stride, j0 = q * ps, width = std::min(ps, n - j0);
  T* panel = packed + j0 * k;
  if (!trans_b) {
    for (int64_t p = 0; p < k; ++p) {
      std::memcpy(panel + p * ps, b + p * ldb + j0, width * sizeof(T));
      std::fill(panel + p * ps + width, panel + (p + 1) * ps, T(0));
    }
  } else {
    // op(B)(p, j) = b[j * ldb + p]: each panel row gathers one column of
    // the stored B (element by element: the slow part of a tiny product).
    const T* bj = b + j0 * ldb;
    for (int64_t p = 0; p < k; ++p) {
      T* dst = panel + p * ps;
      for (int64_t j = 0; j < width; ++j) dst[j] = bj[j * ldb + p];
      for (int64_t j = width; j < ps; ++j) dst[j] = T(0);
    }
  }
}

// Rows i0 .. i1-1 of C in the columns of panels q0 .. q1-1, from the packed
// op(B), block by block.
template <class T>
void kernel_rows(bool trans_a, int64_t i0, int64_t i1, int64_t q0, int64_t q1, int64_t n,
                 int64_t k, T alpha, const T* a, int64_t lda, const T* packed, Panels pl, T beta,
                 T* c, int64_t ldc) {
  const int64_t a_rs = trans_a ? 1 : lda, a_cs = trans_a ? lda : 1, ps = pl.stride;
  for (int64_t r0 = i0; r0 < i1; r0 += kRowBlock) {
    const int64_t r1 = std::min(i1, r0 + kRowBlock);
    for (int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
      const int64_t kc = std::min(kDepthBlock, k - p0);
      const T block_beta = p0 == 0 ? beta : T(1);  // later depth blocks add to C
      const T* a_block = a + p0 * a_cs;
      for (int64_t j0 = q0 * ps; j0 < std::min(n, q1 * ps); j0 += ps) {
        const int64_t width = std::min(ps, n - j0);
        const T* panel = packed + j0 * k + p0 * ps;
        if (width > kVecWidth<T>)
          tile_rows<T, kPanelVecs>(r0, r1, kc, a_block, a_rs, a_cs, panel, ps, alpha, block_beta,
                                   c + j0, ldc, width);
        else
          tile_rows<T, 1>(r0, r1, kc, a_block, a_rs, a_cs, panel, ps, alpha, block_beta, c + j0,
                          ldc, width);
      }
    }
  }
}

// A product whose op(B) fits in one vector per row and kTinyDepth rows
// (attention's 16 x 16 x 16 per head): op(B) goes into a panel on the stack
// and the rows of C go straight to the tiles, without the general path's
// buffer, blocking loops and bookkeeping, which cost as much as the
// arithmetic at this size.
constexpr int64_t kTinyDepth = 32;

template <class T>
bool is_tiny(int64_t n, int64_t k) {
  return n <= kVecWidth<T> && k <= kTinyDepth;
}

template <class T>
void tiny_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  constexpr int64_t W = kVecWidth<T>;
  alignas(64) T panel[kTinyDepth * W];
  pack_panel(trans_b, 0, Panels{W, 1}, k, n, b, ldb, panel);
  const int64_t a_rs = trans_a ? 1 : lda, a_cs = trans_a ? lda : 1;
  tile_rows<T, 1>(0, m, k, a, a_rs, a_cs, panel, W, alpha, beta, c, ldc, n);
}

// The whole product with our kernel, on `threads` threads. The panels of
// op(B) go into one buffer of the calling thread. Each thread then computes
// its own rows of C (whole tiles of R = 8 rows), after the panels are packed in
// parallel; or, when C has few rows or many panels (a weight gradient:
// 64 x 64 with k = 1024; a 1024 x 1024 square), its own panels, which it
// packs itself, so that no thread reads a panel from another core's cache
// (that made a weight gradient slower on 2 threads than on 1). Either
// way each element of C is summed by one thread in one order, so the result
// does not depend on the thread count.
template <class T>
void kernel_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                 int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int threads) {
  const Panels pl = panels_for<T>(n);
  // One buffer per calling thread, grown as needed and reused by every later call.
  thread_local std::vector<T> buffer;
  const size_t size = static_cast<size_t>(pl.count * pl.stride * k);
  if (buffer.size() < size) buffer.resize(size);
  T* packed = buffer.data();
  constexpr int64_t R = kTileVecs / kPanelVecs;  // rows of a full-width tile
  const int64_t tiles = (m + R - 1) / R;
  if (threads <= 1 || (tiles < 2 && pl.count < 2)) {
    for (int64_t q = 0; q < pl.count; ++q) pack_panel(trans_b, q, pl, k, n, b, ldb, packed);
    kernel_rows(trans_a, 0, m, 0, pl.count, n, k, alpha, a, lda, packed, pl, beta, c, ldc);
    return;
  }
  // By panels when C has few rows (up to 16 tiles a thread) or many panels
  // (4 a thread); with 2 panels and 1024 rows (x.W of the tiny encoder)
  // splitting rows is faster: by panels, both threads would stream all of A
  // for half the arithmetic each (measured in docs/results.md, "GEMM").
  const bool by_panels =
      pl.count >= threads && (tiles <= 16 * threads || pl.count >= 4 * threads);
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (by_panels) {
      const int64_t q0 = pl.count * t / nt, q1 = pl.count * (t + 1) / nt;
      for (int64_t q = q0; q < q1; ++q) pack_panel(trans_b, q, pl, k, n, b, ldb, packed);
      kernel_rows(trans_a, 0, m, q0, q1, n, k, alpha, a, lda, packed, pl, beta, c, ldc);
    } else {
#pragma omp for schedule(static)
      for (int64_t q = 0; q < pl.count; ++q) pack_panel(trans_b, q, pl, k, n, b, ldb, packed);
      // (the loop's implicit barrier: every panel is packed before any is read)
      const int64_t i0 = std::min(m, tiles * t / nt * R), i1 = std::min(m, tiles * (t + 1) / nt * R);
      if (i0 < i1)
        kernel_rows(trans_a, i0, i1, 0, pl.count, n, k, alpha, a, lda, packed, pl, beta, c, ldc);
    }
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

// Whether our kernel (rather than BLIS) computes a product of this shape.
bool use_kernel(int64_t n, int64_t k) { return n <= kKernelMaxNK || k <= kKernelMaxNK; }

// One product, already checked, with m and n > 0, on up to `threads`
// threads (1 in the batched path and inside an OpenMP region). Below
// kKernelParallelWork one thread; on one thread, tiny products take the
// stack panel.
template <class T>
void product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
             int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int threads) {
  if (k == 0 || alpha == T(0)) {
    scale_rows(m, n, beta, c, ldc);
  } else if (use_kernel(n, k)) {
    if (m * n * k < kKernelParallelWork) threads = 1;
    if (threads == 1 && is_tiny<T>(n, k))
      tiny_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else
      kernel_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
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
  if (!use_kernel(n, k)) detail::ensure_blis();  // BLIS set up before any thread starts
  // Fewer big products than threads: give each product all threads instead.
  if (batch < threads && m * n * k >= kKernelParallelWork) {
    for (int64_t i = 0; i < batch; ++i)
      gemm(trans_a, trans_b, m, n, k, alpha, a_at(i), lda, b_at(i), ldb, beta, c_at(i), ldc);
    return;
  }
  auto one = [&](int64_t i) {  // product i, on the calling thread
    product(trans_a, trans_b, m, n, k, alpha, a_at(i), lda, b_at(i), ldb, beta, c_at(i), ldc, 1);
  };
  // A plain loop, not `omp parallel if(false)`: even a one-thread region
  // costs ~1.3 us, ten 16x16x16 products' worth.
  if (threads == 1 || batch * (m * n * k + kProductOverhead) < kBatchParallelWork) {
    for (int64_t i = 0; i < batch; ++i) one(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < batch; ++i) one(i);
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  check_product("gemm", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  if (m == 0 || n == 0) return;
  // Never threads inside OpenMP threads: that oversubscribes the cores.
  product(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
          omp_in_parallel() ? 1 : num_threads());
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
template void gemm_grid<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                               GridStrides, const float*, int64_t, GridStrides, float, float*,
                               int64_t, GridStrides, int64_t, int64_t);
template void gemm_grid<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                int64_t, GridStrides, const double*, int64_t, GridStrides, double,
                                double*, int64_t, GridStrides, int64_t, int64_t);

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
