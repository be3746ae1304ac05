#pragma once
// The elementwise ops (autograd/ops/unary.cpp): any shape -> the same shape.
#include "core/tensor.hpp"

namespace sg {

Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor abs(const Tensor& x);  // gradient sign(x), 0 at 0
Tensor pow(const Tensor& x, double exponent);

}  // namespace sg
