#pragma once
// cross_entropy (autograd/ops/cross_entropy.cpp), with a fused log-softmax.
#include <cstdint>

#include "core/tensor.hpp"

namespace sg {

// logits: (..., C), targets (int64): (...) -> mean over targets != ignore_index
// of -log softmax(logits)[target]. 0 when every target is ignored.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100);

}  // namespace sg
