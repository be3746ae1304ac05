#pragma once
// Packing for the GEMM kernel: a transposed A into slivers of a tile's rows,
// op(B) into panels (a transposed B by vector transposes in registers).
// Internal to core/kernels/gemm_tile.cpp; the tile that reads what is packed
// here is core/kernels/gemm_microkernel.hpp. Packing moves values only: no
// sum depends on whether or how an operand was packed.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/kernels/gemm_microkernel.hpp"

namespace sg::kernel::tile::detail {

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

}  // namespace sg::kernel::tile::detail
