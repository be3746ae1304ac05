#pragma once
// Losses. cross_entropy (fused log-softmax, ignore index) is an autograd op:
// sg::cross_entropy in autograd/ops.hpp. Here: the compositions.
#include "core/tensor.hpp"

namespace sg::nn {

// mean((prediction - target)^2); both of one shape.
Tensor mse_loss(const Tensor& prediction, const Tensor& target);

}  // namespace sg::nn
