#pragma once
// add, sub, mul, div and affine, and the operators built on them, broadcasting
// like NumPy (autograd/ops/arithmetic.cpp). sub, neg and the scalar forms are
// compositions: they have no backward of their own.
#include "core/tensor.hpp"

namespace sg {

// Both tensors of one dtype. int64 tensors (no gradient) add, subtract,
// multiply and negate to int64, also with a whole-number scalar (lens - 1);
// a fractional scalar with an int64 tensor, and `/` on int64, throw: the
// result would not be int64 (convert with kernel::to(x, float32) first).
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
// x * alpha + beta with plain numbers: how scalars enter the graph.
Tensor affine(const Tensor& x, double alpha, double beta = 0);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& x, double s);
Tensor operator+(double s, const Tensor& x);
Tensor operator-(const Tensor& x, double s);
Tensor operator-(double s, const Tensor& x);
Tensor operator*(const Tensor& x, double s);
Tensor operator*(double s, const Tensor& x);
Tensor operator/(const Tensor& x, double s);

}  // namespace sg
