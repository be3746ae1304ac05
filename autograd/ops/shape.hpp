#pragma once
// The shape ops (autograd/ops/shape.cpp): reshape is a view, the others copy.
#include <cstdint>
#include <vector>

#include "core/tensor.hpp"

namespace sg {

Tensor reshape(const Tensor& x, const Shape& shape);  // a view; one -1 allowed
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1);
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
// x repeated along the axes where it has size 1 (or lacks) to `shape`, a
// copy; x itself when the shapes are equal. Its backward is sum_to.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace sg
