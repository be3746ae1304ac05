// The Tensor-level matrix product, sg::kernel::matmul (core/kernels.hpp):
// shapes checked, batch axes broadcast, then one product or a batch of them
// through the GEMM dispatch (core/kernels/gemm.cpp).
//
//   a (..., M, K) x b (..., K, N) -> (..., M, N)
//
// With transpose_a, a is stored (..., K, M); with transpose_b, b is stored
// (..., N, K). The batch axes (all but the last two) broadcast as in NumPy.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/kernels.hpp"
#include "core/kernels/gemm.hpp"

namespace sg::kernel {

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
    gemm_offsets<T>(transpose_a, transpose_b, M, N, K, T(1), pa, lda, offset_a.data(), pb, ldb,
                    offset_b.data(), T(0), pc, N, M * N, batches);
  });
  return out;
}

}  // namespace sg::kernel
