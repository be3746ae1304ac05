#pragma once
// The register-blocked GEMM kernel, row-major, for the products the dispatch
// (core/kernels/gemm.cpp) does not send to BLIS. Internal: user code calls
// sg::kernel::gemm, which checks shapes and strides first.
//
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C [+ bias]
//
// bias, when not null, is n values added to every row of C as each tile is
// stored (a Linear layer's bias), after alpha * op(A) op(B) + beta * C.
//
// m, n, k > 0 and the strides already checked. Runs on `threads` threads
// (1: the calling thread only); each element of C is summed by one thread
// in one order, so the result does not depend on the thread count.
#include <cstdint>
#include <string>

namespace sg::kernel::tile {

// Whether this build's target has a tuned tile (AVX-512, AVX2 + FMA, SSE,
// NEON: gemm_tile.cpp). Without one, the dispatch sends every product to BLIS.
bool tuned();
// Its vector width in bits: 512 (AVX-512), 256 (AVX2), 128 (SSE, NEON).
int vector_bits();
// The tile this build uses, for benchmarks' headers: "AVX2+FMA: 256-bit
// vectors, float tiles of 6 x 16".
std::string target();
// The CPU this runs on and the vectors this build uses, for benchmarks' first
// lines, so that every figure says which machine made it: "AMD EPYC (family
// 26, model 2), AVX-512 build: 512-bit vectors". x86 reads cpuid; other
// architectures print the build's vectors only.
std::string cpu();

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int threads,
          const T* bias = nullptr);

// Whether a product with these n and k is small enough for gemm_tiny
// (one panel of op(B), a short depth: attention's per-head products).
template <class T>
bool fits_tiny(int64_t n, int64_t k);

// `count` products of one shape that fits_tiny, each
//   C_i (m, n) = alpha * op(A_i) op(B_i) + beta * C_i [+ bias]
// with A_i = a[i], B_i = b[i], C_i = c[i], in turn on the calling thread:
// a batch of tiny products without a call and a dispatch per product. It is
// gemm's own path for a tiny product on one thread (a count of 1), so each
// C_i has the bits gemm gives it alone.
template <class T>
void gemm_tiny(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
               const T* const* a, int64_t lda, const T* const* b, int64_t ldb, T beta, T* const* c,
               int64_t ldc, int64_t count, const T* bias = nullptr);

}  // namespace sg::kernel::tile
