#pragma once
// The reductions (autograd/ops/reduce.cpp): over every element -> a scalar,
// or over one axis (-1 is the last), kept as 1 with keepdim. mean is a
// composition (sum, then a scale).
#include <cstdint>

#include "core/tensor.hpp"

namespace sg {

Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int64_t axis, bool keepdim = false);
// The gradient goes to the first maximum only (as argmax picks it).
Tensor max(const Tensor& x);
Tensor max(const Tensor& x, int64_t axis, bool keepdim = false);
// x summed over the axes along which `shape` broadcasts to x's shape (the
// backward of broadcasting); x itself when the shapes are equal.
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace sg
