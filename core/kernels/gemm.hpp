#pragma once
// The one GEMM wrapper over BLIS's typed API, for row-major matrices.
//
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C [+ bias]
//
// op(A) is A, stored (m, k) with row stride lda, or, with trans_a, A stored
// (k, m) and read transposed; likewise B. beta = 1 accumulates into C (how
// backward adds gradients without a temporary). bias, when given, is n
// values added to every row of C (a Linear layer's bias): our kernel adds it
// as it stores C, which saves writing C once before the product and reading
// it back. Shapes and strides are checked before BLIS is called, because
// BLIS's own message names no sizes.
#include <cstdint>

namespace sg::kernel {

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, const T* bias = nullptr);

// `batch` independent products, matrix i at a + i*stride_a etc. (a stride of
// 0 reuses one matrix for every product). Parallel over the batch with
// OpenMP; each product on one thread, through BLIS or, for small matrices
// where BLIS's per-call overhead dominates, a small kernel of our own.
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                  const T* a, int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                  int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c, int64_t batch);

// A batch laid out on an (outer, inner) grid: product (o, i) finds its
// matrix at p + o * outer + i * inner. Attention's heads are such a grid,
// read in place: in a (B, T, heads * d) tensor the (T, d) matrix of batch row
// b, head h starts at b * T * heads * d + h * d (row stride heads * d); in a
// (B * heads, T, d) one at b * heads * T * d + h * T * d (row stride d).
struct GridStrides {
  int64_t outer = 0, inner = 0;
};

// outer * inner independent products on that grid, run like gemm_batched's.
// Within an outer block the inner outputs must lie one below the other or
// side by side (column blocks of C's rows), and the outer blocks must not
// overlap, so that no two products write the same element.
template <class T>
void gemm_grid(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, GridStrides stride_a, const T* b, int64_t ldb, GridStrides stride_b,
               T beta, T* c, int64_t ldc, GridStrides stride_c, int64_t outer, int64_t inner);

// `batch` products whose matrices lie at given offsets: product i reads
// a + offset_a[i] and b + offset_b[i] and writes c + i * stride_c, run like
// gemm_batched's (matmul's broadcast batches, where an operand's size-1
// batch axis repeats one matrix).
template <class T>
void gemm_offsets(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t lda, const int64_t* offset_a, const T* b, int64_t ldb,
                  const int64_t* offset_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                  int64_t batch);

}  // namespace sg::kernel
