#pragma once
// linear (autograd/ops/linear.cpp): a layer's affine map in one product.
#include "core/tensor.hpp"

namespace sg {

// x: (..., in), weight: (out, in), bias: (out) or undefined -> (..., out):
// x W^T + b (PyTorch's F.linear), the bias added inside the product.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace sg
