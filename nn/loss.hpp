#pragma once
// Losses. cross_entropy (fused log-softmax, ignore index) is an autograd op:
// sg::cross_entropy in autograd/ops.hpp. Here: the compositions.
#include "core/tensor.hpp"

namespace sg::nn {

// mean((prediction - target)^2); both of one shape.
Tensor mse_loss(const Tensor& prediction, const Tensor& target);

// d2l's Seq2Seq.loss: per-token cross-entropy, masked where the label is
// `pad`, summed, divided by the count of real labels (0 when every label is
// padding; d2l would give 0/0). logits (B, T, V), labels (B, T) int64 -> scalar.
Tensor sequence_loss(const Tensor& logits, const Tensor& labels, int64_t pad);

}  // namespace sg::nn
