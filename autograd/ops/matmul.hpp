#pragma once
// matmul (autograd/ops/matmul.cpp), 2-D and batched.
#include "core/tensor.hpp"

namespace sg {

// a: (..., M, K), b: (..., K, N) -> (..., M, N), batch axes broadcast;
// transpose_a/b use a's or b's last two axes swapped, without a copy.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false,
              bool transpose_b = false);

}  // namespace sg
