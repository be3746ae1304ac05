#pragma once
// softplus (autograd/ops/softplus.cpp): any shape -> the same shape.
#include "core/tensor.hpp"

namespace sg {

// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold
// (PyTorch's softplus); the gradient is sigmoid(beta x).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);

}  // namespace sg
