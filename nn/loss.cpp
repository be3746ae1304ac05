#include "nn/loss.hpp"

#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"

namespace sg::nn {

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  check_same_shape(prediction, target, "mse_loss");
  const Tensor diff = prediction - target;
  return mean(diff * diff);
}

Tensor sequence_loss(const Tensor& logits, const Tensor& labels, int64_t pad) {
  if (logits.dim() != 3 || labels.dim() != 2 || labels.shape()[0] != logits.shape()[0] ||
      labels.shape()[1] != logits.shape()[1])
    fail("sequence_loss: logits ", logits.shape(), " and labels ", labels.shape(), " must be (B, T, V) and (B, T)");
  // cross_entropy's mean over the targets that are not ignore_index is
  // exactly the masked sum divided by the count of real labels.
  return cross_entropy(reshape(logits, {-1, logits.shape()[2]}), reshape(labels, {-1}), pad);
}

}  // namespace sg::nn
