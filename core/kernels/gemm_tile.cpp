// The register-blocked GEMM kernel (core/kernels/gemm_tile.hpp): op(B)
// packed into panels, tiles of C summed in vector registers. The dispatch
// that chooses between it and BLIS is core/kernels/gemm.cpp; how fast each
// is on which shapes: docs/results.md, "GEMM".
#include "core/kernels/gemm_tile.hpp"

#include <omp.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sg::kernel::tile {

namespace {

// ---- our register-blocked kernel ----
//
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C
//
// op(B) is first copied into column panels: panel q holds columns
// q*P .. q*P+P-1 of op(B) (P = kPanelVecs vectors of W values, W = the
// target's vector register width: below), one row of P values per p,
// zero-padded past n. Then each R x P tile of C is summed in R * kPanelVecs
// vector accumulators that stay in registers for the whole depth: for each
// p, the panel's row is loaded once (kPanelVecs loads) and a(i, p) of each
// of the R rows is broadcast and multiplied into it (R * kPanelVecs
// multiply-adds). Many independent accumulators hide the FMA latency, and
// 2R multiply-adds per 2 + R loads keep both FMA pipes busy. op(A) is read
// in place: a(i, p) is a[i*a_rs + p*a_cs] whether A is transposed or not.
//
// The depth is cut into blocks of kDepthBlock so that one panel's block
// (256 x P values, 32 KiB of floats with AVX-512) stays in L1 while a block
// of rows streams past it; the rows are cut into blocks of kRowBlock so
// that their A values stay in L2 across the panels. Blocks after the first
// accumulate into C.
//
// BLIS packs A as well as B, which costs as much as the arithmetic when one
// of n and k is 64 (the encoders' shapes); this kernel reads A in place.
// Measured against BLIS on those shapes: docs/results.md, "GEMM".
//
// Vec<T> is GCC's vector extension (also in clang). Written as plain loops
// over W values, g++ 12 vectorises this kernel badly (it vectorises the p
// loop instead); with Vec<T> it runs several times faster.
//
// ---- the tile of each target (docs/architecture.md, "CPU targets") ----
//
// Chosen at compile time from the target the library is built for (-march):
// W is one vector register, and R (rows of a tile with a two-vector panel)
// is as many as the register file holds, since R * 2 accumulators, the 2
// panel vectors and a broadcast of a(i, p) must all stay in registers: one
// more and the compiler spills accumulators to the stack on every p, which
// made the 64-byte tile of 16 accumulators run at 1/50 of BLIS's speed on
// AVX2. R1 is the same for panels of one vector (n <= W).
//
//   target             registers      W (floats)  R x 2 vectors: registers used
//   AVX-512            32 zmm, FMA    16          8:  16 acc + 2 panel + 1 broadcast = 19
//                                                 (R1 = 16: 16 + 1 + 1)
//   AVX2 + FMA         16 ymm, FMA    8           6:  12 acc + 2 panel + 1 broadcast = 15
//                                                 (BLIS's and OpenBLAS's haswell
//                                                 sgemm tiles are 6 x 16 too; R1 = 12)
//   SSE2..SSE4.2, AVX  16 xmm, no FMA 4           4:  8 acc + 2 panel + 1 broadcast
//     without AVX2                                + 1 product (mul, then add) = 12
//                                                 (6 rows spilled; R1 = 8)
//   ARM NEON (AArch64) 32 v, FMA      4           8:  16 acc + 2 panel + 1 broadcast = 19
//                                                 (R1 = 16)
//
// Any other target has no tuned tile: kTuned is false and the dispatch
// (gemm.cpp) sends every product to BLIS, whose kernels are tuned for it.
#if defined(__AVX512F__)
constexpr bool kTuned = true;
constexpr int kVecBytes = 64, kTileRows = 8, kTileRows1 = 16;
constexpr const char* kTargetName = "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
constexpr bool kTuned = true;
constexpr int kVecBytes = 32, kTileRows = 6, kTileRows1 = 12;
constexpr const char* kTargetName = "AVX2+FMA";
#elif defined(__SSE2__) || defined(_M_X64)
constexpr bool kTuned = true;
constexpr int kVecBytes = 16, kTileRows = 4, kTileRows1 = 8;
constexpr const char* kTargetName = "SSE";
#elif defined(__ARM_NEON) && defined(__aarch64__)
constexpr bool kTuned = true;
constexpr int kVecBytes = 16, kTileRows = 8, kTileRows1 = 16;
constexpr const char* kTargetName = "NEON";
#else
constexpr bool kTuned = false;  // the code below still compiles, but never runs
constexpr int kVecBytes = 16, kTileRows = 4, kTileRows1 = 8;
constexpr const char* kTargetName = "none (every product goes to BLIS)";
#endif

template <class T>
using Vec [[gnu::vector_size(kVecBytes)]] = T;
template <class T>
constexpr int kVecWidth = sizeof(Vec<T>) / sizeof(T);  // W
constexpr int kPanelVecs = 2;  // vectors per panel row

// Rows of a tile whose panel rows are NV vectors (1 or kPanelVecs).
template <int NV>
constexpr int kRowsFor = NV == kPanelVecs ? kTileRows : kTileRows1;

template <class T>
constexpr int64_t kPanelWidth = kPanelVecs * kVecWidth<T>;  // P
constexpr int64_t kDepthBlock = 256;
constexpr int64_t kRowBlock = 128;

// One tile: R rows of C times NV vectors of a panel (row stride ps), over a
// depth of kc; writes the tile's first `width` columns (width <= NV * W).
// With kColumns, a(r, p) = a[r + p * s] (A read transposed, or packed:
// one pointer that steps by s, the R values at fixed offsets); without,
// a(r, p) = a[r * s + p]. Two instantiations rather than a run-time pair of
// strides, so that the compiler knows which of the two is 1.
template <class T, int R, int NV, bool kColumns>
void tile(int64_t kc, const T* a, int64_t s, const T* panel, int64_t ps, T alpha, T beta, T* c,
          int64_t ldc, int64_t width, const T* bias) {
  constexpr int W = kVecWidth<T>;
  // Written so that g++ keeps acc and b in registers: an `= {}` initialiser
  // or one memcpy into the whole b array made it store all the accumulators
  // to the stack on every step, several times slower.
  Vec<T> acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[r][v] = Vec<T>{};
  // Rows of A in place (not kColumns) are read at a + r * s: past 8 rows
  // from a second pointer, a8, at row 8. From one pointer, a 16-row tile
  // (AVX-512's tile for one-vector panels, as attention's 16 x 16 heads)
  // needs 15 multiples of s in registers; g++ kept some in vector registers
  // and moved one back to a general register before every few
  // multiply-adds (the tiny heads ran slower for it: docs/results.md,
  // "Attention's tiny heads").
  const T* a8 = kColumns || R <= 8 ? a : a + 8 * s;
  for (int64_t p = 0; p < kc; ++p) {
    Vec<T> b[NV];
    for (int v = 0; v < NV; ++v) std::memcpy(&b[v], panel + p * ps + v * W, sizeof b[v]);
    for (int r = 0; r < R; ++r) {
      const T x = kColumns ? a[r + p * s] : r < 8 ? a[r * s + p] : a8[(r - 8) * s + p];
      for (int v = 0; v < NV; ++v) acc[r][v] += x * b[v];
    }
  }
  // beta == 0 overwrites whatever C held (even NaN), as BLAS specifies.
  // Unrolled, so that the accumulators go from registers to C: as a loop,
  // g++ zeroed them in memory first and stored them there after the depth
  // loop, a fixed cost that small products (attention's heads) felt most
  // (docs/results.md, "The tile's registers").
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    T* crow = c + r * ldc;
#pragma GCC unroll 2
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
        if (bias) {
          Vec<T> add;
          std::memcpy(&add, bias + v * W, sizeof add);
          out += add;
        }
        std::memcpy(crow + v * W, &out, sizeof out);
      } else {
        T sum[W];
        std::memcpy(sum, &out, sizeof sum);
        for (int64_t j = 0; j < cols; ++j) {
          const T y = beta == T(0) ? sum[j] : sum[j] + beta * crow[v * W + j];
          crow[v * W + j] = bias ? y + bias[v * W + j] : y;  // (not y + 0: that turns -0 into +0)
        }
      }
    }
  }
}

// Where a tile finds its rows of op(A): in place, a(i, p) at
// base[i * stride + p] or, A read transposed (`columns`), base[i + p *
// stride]; or `packed` by pack_a_block for one row block and depth block of
// kc from row `first`: the group of g rows (g = the tile's R) from row i
// starts at base + (i - first) * kc, with a(i + r, p) at [p * g + r].
template <class T>
struct RowsOfA {
  const T* base;
  int64_t stride;
  bool columns, packed;
  int64_t first, kc;
};

template <class T, int G, int NV>
void tile_of(int64_t i, int64_t kc, const RowsOfA<T>& a, const T* panel, int64_t ps, T alpha,
             T beta, T* c, int64_t ldc, int64_t width, const T* bias) {
  if (a.packed)
    tile<T, G, NV, true>(kc, a.base + (i - a.first) * kc, G, panel, ps, alpha, beta, c + i * ldc,
                         ldc, width, bias);
  else if (a.columns)
    tile<T, G, NV, true>(kc, a.base + i, a.stride, panel, ps, alpha, beta, c + i * ldc, ldc, width,
                         bias);
  else
    tile<T, G, NV, false>(kc, a.base + i * a.stride, a.stride, panel, ps, alpha, beta, c + i * ldc,
                          ldc, width, bias);
}

// Tiles for rows i0 .. i1-1 against one panel: R rows at a time (the
// target's tile, above), then 8 (when R is larger), 4, 2 and 1 for the last
// rows.
template <class T, int R, int NV>
void tile_rows_of(int64_t i0, int64_t i1, int64_t kc, const RowsOfA<T>& a, const T* panel,
                  int64_t ps, T alpha, T beta, T* c, int64_t ldc, int64_t width, const T* bias) {
  int64_t i = i0;
  for (; i + R <= i1; i += R) tile_of<T, R, NV>(i, kc, a, panel, ps, alpha, beta, c, ldc, width, bias);
  if constexpr (R > 8) {
    for (; i + 8 <= i1; i += 8) tile_of<T, 8, NV>(i, kc, a, panel, ps, alpha, beta, c, ldc, width, bias);
  }
  if constexpr (R > 4) {
    for (; i + 4 <= i1; i += 4) tile_of<T, 4, NV>(i, kc, a, panel, ps, alpha, beta, c, ldc, width, bias);
  }
  for (; i + 2 <= i1; i += 2) tile_of<T, 2, NV>(i, kc, a, panel, ps, alpha, beta, c, ldc, width, bias);
  for (; i < i1; ++i) tile_of<T, 1, NV>(i, kc, a, panel, ps, alpha, beta, c, ldc, width, bias);
}

// Packed A is always cut into groups of kTileRows (pack_a_block), so its
// tiles are of kTileRows rows whatever the panel's width.
template <class T, int NV>
void tile_rows(int64_t i0, int64_t i1, int64_t kc, const RowsOfA<T>& a, const T* panel,
               int64_t ps, T alpha, T beta, T* c, int64_t ldc, int64_t width, const T* bias) {
  if (a.packed)
    tile_rows_of<T, kTileRows, NV>(i0, i1, kc, a, panel, ps, alpha, beta, c, ldc, width, bias);
  else
    tile_rows_of<T, kRowsFor<NV>, NV>(i0, i1, kc, a, panel, ps, alpha, beta, c, ldc, width, bias);
}

// The sizes of the row groups tile_rows_of cuts rows i0 .. i1-1 into, for
// tiles of R rows: calls f(first row, rows) for each, in order.
template <int R, class F>
void for_each_group(int64_t i0, int64_t i1, F f) {
  int64_t i = i0;
  for (; i + R <= i1; i += R) f(i, R);
  if (R > 8)
    for (; i + 8 <= i1; i += 8) f(i, 8);
  if (R > 4)
    for (; i + 4 <= i1; i += 4) f(i, 4);
  for (; i + 2 <= i1; i += 2) f(i, 2);
  for (; i < i1; ++i) f(i, 1);
}

// Packs rows i0 .. i1-1 and depth p0 .. p0+kc-1 of op(A) = A^T (A stored
// (k, m): a(i, p) = a[p * lda + i]) into slivers of kTileRows rows (and the
// remainder groups), for RowsOfA. Read in place, each tile would take one
// value from each of kc rows of the stored A, lda apart: with lda a multiple
// of 1 KiB those rows share a few L1 sets and every step missed L1 (the
// weight gradient x^T g ran at half the speed of x W on AVX2). Packed, a
// tile reads its sliver front to back, and the copy reads A's rows in order.
template <class T>
void pack_a_block(int64_t i0, int64_t i1, int64_t kc, const T* a, int64_t lda, T* out) {
  constexpr int64_t R = kTileRows;
  const int64_t whole = i0 + (i1 - i0) / R * R;  // the groups of R rows end here
  for (int64_t p = 0; p < kc; ++p) {
    const T* src = a + p * lda;
    for (int64_t i = i0; i < whole; i += R)  // fixed-size copies: vector moves
      std::memcpy(out + (i - i0) * kc + p * R, src + i, R * sizeof(T));
    for_each_group<R>(whole, i1, [&](int64_t i, int64_t g) {
      for (int64_t r = 0; r < g; ++r) out[(i - i0) * kc + p * g + r] = src[i + r];
    });
  }
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

// Transposes the W x W block of `src` (row stride ss) into `dst` (row
// stride ds): dst[p * ds + j] = src[j * ss + p], W = one vector. log2(W)
// rounds of two-vector shuffles, each swapping the off-diagonal h x h
// blocks (h = 1, 2, .. W/2) of every 2h x 2h block; in place of W * W
// scalar loads and stores, the cost of a tiny product's transposed B.
template <class T, size_t... J>
void transpose_block(const T* src, int64_t ss, T* dst, int64_t ds, std::index_sequence<J...>) {
  constexpr int W = kVecWidth<T>;
  // Every loop unrolled, so that x stays in registers: with AVX2, g++ kept
  // it on the stack, half a vector per store, and each reload stalled.
  Vec<T> x[W];
#pragma GCC unroll 16
  for (int j = 0; j < W; ++j) std::memcpy(&x[j], src + j * ss, sizeof x[j]);
  auto round = [&](auto half) {
    constexpr int h = decltype(half)::value;
#pragma GCC unroll 16
    for (int i = 0; i < W; i += 2 * h)
#pragma GCC unroll 16
      for (int r = i; r < i + h; ++r) {
        // Row r keeps its columns without bit h and takes row r + h's
        // columns without bit h into its columns with it; row r + h the rest.
        const Vec<T> lo = __builtin_shufflevector(x[r], x[r + h], ((J & h) ? W + J - h : J)...);
        const Vec<T> hi = __builtin_shufflevector(x[r], x[r + h], ((J & h) ? W + J : J + h)...);
        x[r] = lo;
        x[r + h] = hi;
      }
  };
  [&]<size_t... L>(std::index_sequence<L...>) {
    (round(std::integral_constant<int, (1 << L)>{}), ...);
  }(std::make_index_sequence<std::bit_width(unsigned(W)) - 1>{});
#pragma GCC unroll 16
  for (int p = 0; p < W; ++p) std::memcpy(dst + p * ds, &x[p], sizeof x[p]);
}

// pack_panel for one panel of op(B) = B^T (B stored (n, k)), kc <= k rows:
// whole W x W blocks by transpose_block, the rest value by value.
template <class T>
void pack_transposed(int64_t n, int64_t k, const T* b, int64_t ldb, T* panel, int64_t ps) {
  constexpr int64_t W = kVecWidth<T>;
  const int64_t n_whole = n / W * W, k_whole = k / W * W;
  for (int64_t j = 0; j < n_whole; j += W)
    for (int64_t p = 0; p < k_whole; p += W)
      transpose_block<T>(b + j * ldb + p, ldb, panel + p * ps + j, ps,
                         std::make_index_sequence<W>{});
  // (three separate loops, each empty at attention's sizes: one loop with
  // the tests inside cost a third of the transpose)
  if (n_whole < n)
    for (int64_t p = 0; p < k_whole; ++p)
      for (int64_t j = n_whole; j < n; ++j) panel[p * ps + j] = b[j * ldb + p];
  for (int64_t p = k_whole; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) panel[p * ps + j] = b[j * ldb + p];
  if (n < ps)
    for (int64_t p = 0; p < k; ++p) std::fill(panel + p * ps + n, panel + (p + 1) * ps, T(0));
}

// Copies rows 0 .. k-1 of panel q of op(B) into `panel` (k rows of pl.stride
// values); b points at op(B)'s row 0 (a depth block's first row).
template <class T>
void pack_panel(bool trans_b, int64_t q, Panels pl, int64_t k, int64_t n, const T* b, int64_t ldb,
                T* panel) {
  const int64_t ps = pl.stride, j0 = q * ps, width = std::min(ps, n - j0);
  if (!trans_b && width == kPanelWidth<T>) {
    // A whole panel: copies of a size known at compile time, which g++
    // turns into a few vector moves. With the size a variable, each row was
    // a call of memmove, whose set-up is as long as its 128 bytes' copy
    // (a weight gradient packs 2,048 such rows a panel).
    for (int64_t p = 0; p < k; ++p)
      std::memcpy(panel + p * ps, b + p * ldb + j0, kPanelWidth<T> * sizeof(T));
  } else if (!trans_b) {
    for (int64_t p = 0; p < k; ++p) {
      std::memcpy(panel + p * ps, b + p * ldb + j0, width * sizeof(T));
      std::fill(panel + p * ps + width, panel + (p + 1) * ps, T(0));
    }
  } else {
    // op(B)(p, j) = b[j * ldb + p]: the panel is columns j0 .. j0+width-1
    // of B^T, W x W blocks at a time in registers, in place of one scalar
    // load and store per value (attention's scores q.k^T at 64 x 64 x 32 a
    // head move 2,048 values for 8,192 vector multiply-adds with AVX-512).
    pack_transposed(width, k, b + j0 * ldb, ldb, panel, ps);
  }
}

// A transposed A is packed (pack_a_block) when its rows are read for at
// least this many panels: the copy costs as much as the arithmetic against
// one or two panels, and with few panels reading A in place was as fast
// (docs/results.md, "GEMM").
constexpr int64_t kPackAFromPanels = 16;

// C with at most this many rows reads an untransposed op(B) in place when
// its rows are whole panels (kernel_gemm).
constexpr int64_t kInPlaceRows = 16;

// op(B) is packed one depth block at a time (PanelSource's "by block") when
// all of it packed would take more than this. Packed whole before the
// arithmetic, a weight gradient's op(B) (the activations x: 8 MiB for the
// large encoder's second FFN layer) went out to memory and came back once
// per block of rows; a depth block of its panels (256 rows) stays in L2
// while every block of rows reads it. Below this size the packed op(B)
// stays in L2 either way (512 KiB on Zen 3, 1 MiB on Zen 5), and the
// attention heads' many small products keep their shorter path.
// Measured: docs/results.md, "Packing B a depth block at a time".
constexpr size_t kByBlockBytes = size_t{256} << 10;

// Where kernel_rows finds the panels of op(B):
//   packed    all of op(B) packed before (pack_panel), panel q at base +
//             q * stride * k, rows of stride values;
//   in place  an untransposed B read where it lies, panel q at base + q *
//             stride, rows ldb apart;
//   by block  B itself (base, ldb, trans_b), packed by kernel_rows one depth
//             block of its panels at a time into a buffer of its thread.
template <class T>
struct PanelSource {
  const T* base;
  Panels pl;
  bool in_place, by_block, trans_b;
  int64_t ldb;
};

// Rows i0 .. i1-1 of C in the columns of panels q0 .. q1-1 of op(B), block
// by block. A transposed A read for many panels is packed a block at a time
// into a buffer of the calling thread.
template <class T>
void kernel_rows(bool trans_a, int64_t i0, int64_t i1, int64_t q0, int64_t q1, int64_t n,
                 int64_t k, T alpha, const T* a, int64_t lda, PanelSource<T> src, T beta,
                 T* c, int64_t ldc, const T* bias) {
  const int64_t ps = src.pl.stride, j_first = q0 * ps, j_end = std::min(n, q1 * ps);
  const bool pack_a = trans_a && q1 - q0 >= kPackAFromPanels;
  thread_local std::vector<T> a_buffer, b_buffer;
  if (pack_a && a_buffer.size() < static_cast<size_t>(kRowBlock * kDepthBlock))
    a_buffer.resize(kRowBlock * kDepthBlock);
  // Rows r0 .. r1-1 against depth p0 .. p0+kc-1 of every panel; the panel
  // of column j_first at that depth is `panels`, the next ones column_step
  // values apart per column, their rows row_stride apart.
  auto block = [&](int64_t r0, int64_t r1, int64_t p0, int64_t kc, const T* panels,
                   int64_t column_step, int64_t row_stride) {
    const T block_beta = p0 == 0 ? beta : T(1);  // later depth blocks add to C
    RowsOfA<T> rows{a + (trans_a ? p0 * lda : p0), lda, trans_a, false, r0, kc};
    if (pack_a) {
      pack_a_block(r0, r1, kc, a + p0 * lda, lda, a_buffer.data());
      rows.base = a_buffer.data();
      rows.packed = true;
    }
    for (int64_t j0 = j_first; j0 < j_end; j0 += ps) {
      const int64_t width = std::min(ps, n - j0);
      const T* panel = panels + (j0 - j_first) * column_step;
      const T* block_bias = p0 == 0 && bias ? bias + j0 : nullptr;  // added once, with the first block
      if (width > kVecWidth<T>)
        tile_rows<T, kPanelVecs>(r0, r1, kc, rows, panel, row_stride, alpha, block_beta, c + j0,
                                 ldc, width, block_bias);
      else
        tile_rows<T, 1>(r0, r1, kc, rows, panel, row_stride, alpha, block_beta, c + j0, ldc,
                        width, block_bias);
    }
  };
  if (src.by_block) {
    // Depth blocks outermost: each block of the panels is packed once, into
    // a buffer that stays in cache while every row block reads it.
    const size_t size = static_cast<size_t>((q1 - q0) * ps * kDepthBlock);
    if (b_buffer.size() < size) b_buffer.resize(size);
    for (int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
      const int64_t kc = std::min(kDepthBlock, k - p0);
      const T* b_block = src.base + (src.trans_b ? p0 : p0 * src.ldb);
      for (int64_t q = q0; q < q1; ++q)
        pack_panel(src.trans_b, q, src.pl, kc, n, b_block, src.ldb, b_buffer.data() + (q - q0) * ps * kc);
      for (int64_t r0 = i0; r0 < i1; r0 += kRowBlock)
        block(r0, std::min(i1, r0 + kRowBlock), p0, kc, b_buffer.data(), kc, ps);
    }
    return;
  }
  const int64_t row_stride = src.in_place ? src.ldb : ps, column_step = src.in_place ? 1 : k;
  for (int64_t r0 = i0; r0 < i1; r0 += kRowBlock)
    for (int64_t p0 = 0; p0 < k; p0 += kDepthBlock)
      block(r0, std::min(i1, r0 + kRowBlock), p0, std::min(kDepthBlock, k - p0),
            src.base + j_first * column_step + p0 * row_stride, column_step, row_stride);
}

constexpr int64_t kTinyDepth = 32;  // the depth a tiny product may have

}  // namespace

// A product whose op(B) fits in one panel (n <= P) and kTinyDepth rows
// (attention's 16 x 16 x 16 per head): op(B) goes into a panel on the stack
// and the rows of C go straight to the tiles, without the general path's
// buffer, blocking loops and bookkeeping, which cost as much as the
// arithmetic at this size. (fits_tiny and gemm_tiny stand outside this
// file's unnamed namespace: gemm.cpp calls them for a batch.)
template <class T>
bool fits_tiny(int64_t n, int64_t k) {
  return n <= kPanelWidth<T> && k <= kTinyDepth;
}

// `count` products of one tiny shape, product i from a[i], b[i] into c[i],
// one after another on the calling thread (a single product is a count of
// 1). A batch of them (attention's heads: 256 products of 16 x 16 x 16 a
// call on the tiny encoder) decides once how op(B) is read and which tile
// runs: at this size a call and a dispatch per product cost a good part of
// the arithmetic (docs/results.md, "Attention's tiny heads").
template <class T>
void gemm_tiny(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
               const T* const* a, int64_t lda, const T* const* b, int64_t ldb, T beta, T* const* c,
               int64_t ldc, int64_t count, const T* bias) {
  const Panels pl = panels_for<T>(n);  // one panel, of stride W or P
  alignas(64) T stack_panel[kTinyDepth * kPanelWidth<T>];
  // op(B)'s rows that are whole panel rows already are read in place, no copy.
  const bool in_place = !trans_b && n == pl.stride;
  const int64_t ps = in_place ? ldb : pl.stride;
  auto each = [&]<int NV>(std::integral_constant<int, NV>) {
    for (int64_t i = 0; i < count; ++i) {
      const T* panel = b[i];
      if (!in_place) {
        pack_panel(trans_b, 0, pl, k, n, b[i], ldb, stack_panel);
        panel = stack_panel;
      }
      const RowsOfA<T> rows{a[i], lda, trans_a, false, 0, k};
      tile_rows<T, NV>(0, m, k, rows, panel, ps, alpha, beta, c[i], ldc, n, bias);
    }
  };
  if (pl.stride == kVecWidth<T>)
    each(std::integral_constant<int, 1>{});
  else
    each(std::integral_constant<int, kPanelVecs>{});
}

namespace {

// The whole product with our kernel, on `threads` threads. The panels of
// op(B) go into one buffer of the calling thread. Each thread then computes
// its own rows of C (whole tiles of R rows), after the panels are packed in
// parallel; or, when C has few rows or many panels (a weight gradient:
// 64 x 64 with k = 1024; a 1024 x 1024 square), its own panels, which it
// packs itself, so that no thread reads a panel from another core's cache
// (that made a weight gradient slower on 2 threads than on 1); past
// kByBlockBytes, one thread or each thread of its own panels packs them a
// depth block at a time instead (kernel_rows). Every way, each element of
// C is summed by one thread in one order (depth blocks in turn, each summed
// in a tile), so the result depends neither on the thread count nor on the
// path.
template <class T>
void kernel_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                 int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, const T* bias,
                 int threads) {
  const Panels pl = panels_for<T>(n);
  // With few rows of C (a weight gradient of a short output, as a head over a
  // small vocabulary: m = 16, k = 1024) each panel is read by a tile or two:
  // packing op(B) then costs as much as the arithmetic, and an untransposed
  // B whose rows are whole panels is read where it lies instead.
  const bool in_place = !trans_b && m <= kInPlaceRows && pl.stride == kPanelWidth<T> &&
                        n % kPanelWidth<T> == 0;
  constexpr int64_t R = kTileRows;  // rows of a full-width tile
  const int64_t tiles = (m + R - 1) / R;
  const bool one_thread = threads <= 1 || (tiles < 2 && pl.count < 2);
  // By panels when C has few rows (up to 16 tiles a thread) or many panels
  // (4 a thread); with 2 panels and 1024 rows (x.W of the tiny encoder)
  // splitting rows is faster: by panels, both threads would stream all of A
  // for half the arithmetic each (measured in docs/results.md, "GEMM").
  const bool by_panels =
      pl.count >= threads && (tiles <= 16 * threads || pl.count >= 4 * threads);
  const size_t size = static_cast<size_t>(pl.count * pl.stride * k);
  // The rows split between threads share one packed op(B), packed whole.
  const bool by_block = !in_place && (one_thread || by_panels) && size * sizeof(T) > kByBlockBytes;
  // One buffer per calling thread, grown as needed and reused by every later call.
  thread_local std::vector<T> buffer;
  if (!in_place && !by_block && buffer.size() < size) buffer.resize(size);
  T* packed = buffer.data();
  const PanelSource<T> src{in_place || by_block ? b : packed, pl, in_place, by_block, trans_b, ldb};
  auto pack = [&](int64_t q) {
    if (!in_place && !by_block) pack_panel(trans_b, q, pl, k, n, b, ldb, packed + q * pl.stride * k);
  };
  if (one_thread) {
    for (int64_t q = 0; q < pl.count; ++q) pack(q);
    kernel_rows(trans_a, 0, m, 0, pl.count, n, k, alpha, a, lda, src, beta, c, ldc, bias);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (by_panels) {
      const int64_t q0 = pl.count * t / nt, q1 = pl.count * (t + 1) / nt;
      for (int64_t q = q0; q < q1; ++q) pack(q);
      kernel_rows(trans_a, 0, m, q0, q1, n, k, alpha, a, lda, src, beta, c, ldc, bias);
    } else {
#pragma omp for schedule(static)
      for (int64_t q = 0; q < pl.count; ++q) pack(q);
      // (the loop's implicit barrier: every panel is packed before any is read)
      const int64_t i0 = std::min(m, tiles * t / nt * R), i1 = std::min(m, tiles * (t + 1) / nt * R);
      if (i0 < i1)
        kernel_rows(trans_a, i0, i1, 0, pl.count, n, k, alpha, a, lda, src, beta, c, ldc, bias);
    }
  }
}

}  // namespace

bool tuned() { return kTuned; }

int vector_bits() { return kVecBytes * 8; }

std::string target() {
  return std::string(kTargetName) + ": " + std::to_string(kVecBytes * 8) +
         "-bit vectors, float tiles of " + std::to_string(kTileRows) + " x " +
         std::to_string(kPanelWidth<float>);
}

std::string cpu() {
  std::string name = "unknown CPU";
#if defined(__x86_64__) || defined(__i386__)
  unsigned r[12] = {};
  if (__get_cpuid(0x80000000, &r[0], &r[1], &r[2], &r[3]) && r[0] >= 0x80000004) {
    for (unsigned leaf = 0; leaf < 3; ++leaf)
      __get_cpuid(0x80000002 + leaf, &r[4 * leaf], &r[4 * leaf + 1], &r[4 * leaf + 2], &r[4 * leaf + 3]);
    name.assign(reinterpret_cast<const char*>(r), sizeof r);
    name = name.substr(0, name.find('\0'));
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
  }
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    // Family and model as Linux's /proc/cpuinfo prints them: the extended
    // fields count from family 15 (and, for the model, from family 6).
    unsigned family = (eax >> 8) & 0xf, model = (eax >> 4) & 0xf;
    if (family == 0xf) family += (eax >> 20) & 0xff;
    if (family >= 6) model += ((eax >> 16) & 0xf) << 4;
    name += " (family " + std::to_string(family) + ", model " + std::to_string(model) + ")";
  }
#endif
  return name + ", " + kTargetName + " build: " + std::to_string(kVecBytes * 8) + "-bit vectors";
}

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int threads,
          const T* bias) {
  if (threads <= 1 && fits_tiny<T>(n, k))
    gemm_tiny(trans_a, trans_b, m, n, k, alpha, &a, lda, &b, ldb, beta, &c, ldc, 1, bias);
  else
    kernel_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, threads);
}

template bool fits_tiny<float>(int64_t, int64_t);
template bool fits_tiny<double>(int64_t, int64_t);
template void gemm_tiny<float>(bool, bool, int64_t, int64_t, int64_t, float, const float* const*,
                               int64_t, const float* const*, int64_t, float, float* const*, int64_t,
                               int64_t, const float*);
template void gemm_tiny<double>(bool, bool, int64_t, int64_t, int64_t, double, const double* const*,
                                int64_t, const double* const*, int64_t, double, double* const*,
                                int64_t, int64_t, const double*);
template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t, int, const float*);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t, int, const double*);

}  // namespace sg::kernel::tile
