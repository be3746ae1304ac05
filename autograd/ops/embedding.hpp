#pragma once
// embedding (autograd/ops/embedding.cpp): a row gather, a scatter-add backward.
#include "core/tensor.hpp"

namespace sg {

// weight: (V, D), ids (int64): (...) -> (..., D). Backward scatter-adds into weight.
Tensor embedding(const Tensor& weight, const Tensor& ids);

}  // namespace sg
