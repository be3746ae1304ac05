#pragma once
// layer_norm (autograd/ops/layer_norm.cpp), fused.
#include "core/tensor.hpp"

namespace sg {

// Normalises over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta,
// gamma and beta of shape (D). One fused kernel; mean and 1/std are kept for backward.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);

}  // namespace sg
