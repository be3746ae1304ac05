#pragma once
// add, sub, mul, div and affine, and the operators built on them, broadcasting
// like NumPy (autograd/ops/arithmetic.cpp). sub, neg and the scalar forms are
// compositions: they have no backward of their own.
#include "core/tensor.hpp"

namespace sg {

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
