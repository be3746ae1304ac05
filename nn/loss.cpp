#include "nn/loss.hpp"

#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"

namespace sg::nn {

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  check_same_shape(prediction, target, "mse_loss");
  const Tensor diff = prediction - target;
  return mean(diff * diff);
}

}  // namespace sg::nn
