#pragma once
// The one GEMM wrapper over BLIS's typed API, for row-major matrices.
//
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C
//
// op(A) is A, stored (m, k) with row stride lda, or, with trans_a, A stored
// (k, m) and read transposed; likewise B. beta = 1 accumulates into C (how
// backward adds gradients without a temporary). Shapes and strides are
// checked before BLIS is called, because BLIS's own message names no sizes.
#include <cstdint>

namespace sg::core {

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// `batch` independent products, matrix i at a + i*stride_a etc. (a stride of
// 0 reuses one matrix for every product). Parallel over the batch with
// OpenMP; each product on one thread, through BLIS or, for small matrices
// where BLIS's per-call overhead dominates, a small kernel of our own.
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                  const T* a, int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                  int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c, int64_t batch);

}  // namespace sg::core
