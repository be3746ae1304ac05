#pragma once
// Comparisons, elementwise and broadcasting like NumPy (autograd/ops/compare.cpp).
// Each returns a mask: 1 where the comparison holds and 0 elsewhere, in the
// operands' dtype (there is no bool dtype), so it multiplies directly:
//   Tensor keys = sg::reshape(sg::arange(K), {1, K});          // int64 (1, K)
//   Tensor keep = sg::lt(keys, sg::reshape(valid_lens, {B, 1}));  // int64 (B, K) of 1 and 0
//   Tensor pad = sg::eq(ids, 0.0);                              // int64, 1 at padding
// A mask is piecewise constant: it has no gradient and never requires grad.
// Both tensors must have one dtype. With a scalar, s is converted to x's
// dtype; an int64 x needs a whole s.
#include "core/tensor.hpp"

namespace sg {

Tensor eq(const Tensor& a, const Tensor& b);  // a == b
Tensor ne(const Tensor& a, const Tensor& b);  // a != b
Tensor lt(const Tensor& a, const Tensor& b);  // a < b
Tensor le(const Tensor& a, const Tensor& b);  // a <= b
Tensor gt(const Tensor& a, const Tensor& b);  // a > b
Tensor ge(const Tensor& a, const Tensor& b);  // a >= b

Tensor eq(const Tensor& x, double s);
Tensor ne(const Tensor& x, double s);
Tensor lt(const Tensor& x, double s);
Tensor le(const Tensor& x, double s);
Tensor gt(const Tensor& x, double s);
Tensor ge(const Tensor& x, double s);

}  // namespace sg
