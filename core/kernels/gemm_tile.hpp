#pragma once
// The register-blocked GEMM kernel, row-major, for the products the dispatch
// (core/kernels/gemm.cpp) does not send to BLIS. Internal: user code calls
// sg::kernel::gemm, which checks shapes and strides first.
//
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C
//
// m, n, k > 0 and the strides already checked. Runs on `threads` threads
// (1: the calling thread only); each element of C is summed by one thread
// in one order, so the result does not depend on the thread count.
#include <cstdint>

namespace sg::kernel::tile {

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int threads);

}  // namespace sg::kernel::tile
