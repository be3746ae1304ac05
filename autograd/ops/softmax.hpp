#pragma once
// The softmax family along the last axis (autograd/ops/softmax.cpp).
#include "core/tensor.hpp"

namespace sg {

Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
// scores: (B, Q, K). valid_lens (int64): undefined (no mask), (B) (one length
// per batch row) or (B, Q) (one per query). As in Dive into Deep Learning,
// masked scores are *replaced* by -1e6 before the softmax: masked keys get
// zero weight and zero gradient, and a row whose valid length is 0 gets
// uniform weights (not NaN). causal additionally masks every key after the
// query's own position (key j > query i). scale multiplies the scores
// before masking (attention passes 1/sqrt(d) here: one pass, not two).
Tensor masked_softmax(const Tensor& scores, const Tensor& valid_lens, bool causal = false, double scale = 1.0);

}  // namespace sg
