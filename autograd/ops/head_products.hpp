#pragma once
// head_scores and head_pool (autograd/ops/head_products.cpp): attention's
// per-head products, heads read in place.
#include <cstdint>

#include "core/tensor.hpp"

namespace sg {

// Attention's per-head products on (B, T, heads * d) tensors, head h being
// the feature columns h*d .. h*d+d-1; no copy splits or merges the heads.
// q: (B, Q, H), k: (B, K, H) -> (B * heads, Q, K): scores[b*heads + h] = q_h k_h^T.
Tensor head_scores(const Tensor& q, const Tensor& k, int64_t heads);
// weights: (B * heads, Q, K), v: (B, K, H) -> (B, Q, H): out_h = weights[b*heads + h] v_h,
// the heads side by side as d2l's transpose_output leaves them.
Tensor head_pool(const Tensor& weights, const Tensor& v, int64_t heads);

}  // namespace sg
