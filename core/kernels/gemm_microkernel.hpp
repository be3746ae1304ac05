#pragma once
// The tile of the GEMM kernel: which vectors and how many rows each target
// uses, and the R x NV-vector tile of C summed in registers over a depth
// block. Internal to core/kernels/gemm_tile.cpp (the packing of the operands
// is core/kernels/gemm_pack.hpp; the loops over blocks, the tiny path and the
// threads are gemm_tile.cpp): user code calls sg::kernel::gemm.
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace sg::kernel::tile::detail {

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
  // multiply-adds (the tiny heads ran slower for it: docs/architecture.md).
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
  // (docs/architecture.md).
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
}  // namespace sg::kernel::tile::detail
