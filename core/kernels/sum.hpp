#pragma once
// Accurate sums, shared by every kernel that adds many numbers: reductions,
// softmax, layer norm. A single float32 running total loses up to about
// n * 2^-24 relative over n terms (a million copies of 0.1 summed 1% high);
// these sums lose about (8 + 5 + log2(n / 256)) rounding steps at worst, as
// NumPy's pairwise sum, at the speed of a vectorised loop. Private to the
// library's sources, like vecmath.hpp.
//
// Along a row (n values one after another): sum_values. 32 running totals
// ("lanes"), value i going to lane i % 32, over leaves of 256 values (8 per
// lane); the lanes are combined by a fixed tree (32 -> 16 -> ... -> 1) and
// the leaves pairwise (two halves of the range, recursively). The lanes are
// an array written out here, not left to the vectoriser (as `omp simd
// reduction` would be, whose order is the vector width's): the order of
// every addition is fixed by this code, so AVX-512 (2 vectors of 16), AVX2
// (4 of 8) and SSE (8 of 4) builds give the same bits, and the loop still
// runs in vector registers, 32 independent chains. (A value that is a
// product, as in sum of x * y, may be fused into its addition on FMA
// targets: the same on AVX2 and AVX-512, a last-bit difference from SSE.)
//
// Along a column (one sum per column of a (rows, width) block): sum_rows.
// Leaves of 16 rows are added row by row into a partial row (the inner loop
// runs along the row, vectorised), and the leaves' partial rows are combined
// pairwise as a binary counter carries: a stack with one partial row per
// level, about log2(rows / 16) rows of `width` alive at once.
//
// Neither depends on the thread count: a caller gives each sum to one thread.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

namespace sg::kernel {

inline constexpr int kSumLanes = 32;

inline constexpr int64_t kSumLeaf = 256;     // values per leaf of sum_values
inline constexpr int64_t kSumLeafRows = 16;  // rows per leaf of sum_rows

namespace detail {

// value(i) summed over [begin, end), end - begin <= kSumLeaf, in 32 lanes.
// The lanes are GCC vectors of 32 bytes (8 floats, 4 doubles), each a value
// the compiler keeps in registers (an array of 32 scalars it kept on the
// stack, a load and a store per addition); nothing wider than 32 bytes, so
// an SSE build splits each vector in two and an AVX-512 one uses half a
// register, the same additions either way.
template <class T, class F>
T sum_leaf(int64_t begin, int64_t end, const F& value) {
  constexpr int kWidth = static_cast<int>(32 / sizeof(T)), kVectors = kSumLanes / kWidth;
  typedef T V __attribute__((vector_size(32)));
  V acc[kVectors] = {};
  int64_t i = begin;
  for (; i + kSumLanes <= end; i += kSumLanes)
    for (int j = 0; j < kVectors; ++j) {
      V v;
      for (int l = 0; l < kWidth; ++l) v[l] = value(i + j * kWidth + l);
      acc[j] += v;
    }
  // The last values (fewer than 32) through a zeroed buffer, lane for lane.
  if (i < end) {
    T tail[kSumLanes] = {};
    for (int l = 0; i + l < end; ++l) tail[l] = value(i + l);
    for (int j = 0; j < kVectors; ++j) {
      V v;
      std::memcpy(&v, tail + j * kWidth, sizeof v);
      acc[j] += v;
    }
  }
  // The tree: lane l += lane l + w for w = 16, 8, ..., 1; whole vectors while w >= kWidth.
  for (int w = kVectors / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  T lanes[kWidth];
  std::memcpy(lanes, &acc[0], sizeof lanes);
  for (int w = kWidth / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  return lanes[0];
}

template <class T, class F>
T sum_pairwise(int64_t begin, int64_t end, const F& value) {
  if (end - begin <= kSumLeaf) return sum_leaf<T>(begin, end, value);
  const int64_t leaves = (end - begin + kSumLeaf - 1) / kSumLeaf;
  const int64_t mid = begin + (leaves + 1) / 2 * kSumLeaf;  // leaves stay whole
  return sum_pairwise<T>(begin, mid, value) + sum_pairwise<T>(mid, end, value);
}

}  // namespace detail

// value(0) + ... + value(n - 1), summed pairwise in 32 lanes (above).
// value(i) is called once per i, in vector-friendly order.
template <class T, class F>
T sum_values(int64_t n, const F& value) {
  if (n <= kSumLeaf) return detail::sum_leaf<T>(0, n, value);  // short rows: no call
  return detail::sum_pairwise<T>(0, n, value);
}

// x[0] + ... + x[n - 1].
template <class T>
T sum_values(const T* x, int64_t n) {
  return sum_values<T>(n, [x](int64_t i) { return x[i]; });
}

// out[i] = the sum over rows r in [0, rows) of row r's value i, for i in
// [0, width): add_row(r, acc) must do acc[i] += row r's value i for every i.
// Rows are added in order within leaves of 16, and the leaves pairwise.
template <class T, class AddRow>
void sum_rows(int64_t rows, int64_t width, T* out, const AddRow& add_row) {
  std::fill(out, out + width, T(0));
  if (rows <= kSumLeafRows) {  // one leaf: no partial rows
    for (int64_t r = 0; r < rows; ++r) add_row(r, out);
    return;
  }
  const int64_t leaves = (rows + kSumLeafRows - 1) / kSumLeafRows;
  const int slots = std::bit_width(static_cast<uint64_t>(leaves)) + 1;
  // Each partial row starts on a 64-byte boundary: AVX-512 stores that
  // straddle two cache lines made the column sums slower than the plain
  // loop they replaced (docs/results.md, "Accurate sums").
  constexpr int64_t kLine = 64 / sizeof(T);
  const int64_t stride = (width + kLine - 1) / kLine * kLine;
  std::vector<T> buffer(static_cast<size_t>(slots * stride + kLine));
  T* const stack = buffer.data() + (kLine - reinterpret_cast<uintptr_t>(buffer.data()) / sizeof(T) % kLine) % kLine;
  int level[64];
  int top = 0;  // partial rows on the stack
  for (int64_t leaf = 0; leaf < leaves; ++leaf) {
    T* p = stack + top * stride;
    std::fill(p, p + width, T(0));
    for (int64_t r = leaf * kSumLeafRows; r < std::min(rows, (leaf + 1) * kSumLeafRows); ++r) add_row(r, p);
    level[top++] = 0;
    // Carry: two partials of the same level (the same number of leaves) become one of the next.
    while (top >= 2 && level[top - 2] == level[top - 1]) {
      T* __restrict a = stack + (top - 2) * stride;
      const T* __restrict b = stack + (top - 1) * stride;
      for (int64_t i = 0; i < width; ++i) a[i] += b[i];
      --top;
      ++level[top - 1];
    }
  }
  // What is left (rows not a power of two leaves): smallest into the next, down to the bottom.
  for (; top >= 2; --top) {
    T* __restrict a = stack + (top - 2) * stride;
    const T* __restrict b = stack + (top - 1) * stride;
    for (int64_t i = 0; i < width; ++i) a[i] += b[i];
  }
  std::copy(stack, stack + width, out);
}

}  // namespace sg::kernel
