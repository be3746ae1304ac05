#pragma once
// rope (autograd/ops/rope.cpp): rotary position embedding.
#include <cstdint>

#include "core/tensor.hpp"

namespace sg {

// Rotary position embedding: x: (..., T, d), d even -> same shape. Features
// (2j, 2j+1) of row t are rotated by the angle (offset + t) * base^(-2j/d).
// The gradient is rotated back by the same angle.
Tensor rope(const Tensor& x, int64_t offset = 0, double base = 10000.0);

}  // namespace sg
