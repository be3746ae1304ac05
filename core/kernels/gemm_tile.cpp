// The register-blocked GEMM kernel (core/kernels/gemm_tile.hpp): op(B)
// packed into panels, tiles of C summed in vector registers. The dispatch
// that chooses between it and BLIS is core/kernels/gemm.cpp. This file holds
// the loops over blocks of C, the tiny path and the threads; the tile is
// core/kernels/gemm_microkernel.hpp, the packing core/kernels/gemm_pack.hpp.
// How fast each is on which shapes: docs/results.md, "GEMM"; why it is
// built so: docs/architecture.md, "The GEMM kernel's choices, measured".
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

#include "core/kernels/gemm_microkernel.hpp"
#include "core/kernels/gemm_pack.hpp"

namespace sg::kernel::tile {

using namespace detail;  // the tile and the packing, in the two headers above

namespace {

// A transposed A is packed (pack_a_block) when its rows are read for at
// least this many panels: the copy costs as much as the arithmetic against
// one or two panels, and with few panels reading A in place was as fast
// (docs/architecture.md).
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
// Measured: docs/architecture.md.
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
// the arithmetic (docs/architecture.md).
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
  // for half the arithmetic each (measured: docs/architecture.md).
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
