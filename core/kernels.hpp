#pragma once
// The graph-free kernels (namespace sg::kernel). They compute values only and
// never record autograd nodes; the differentiable ops in autograd/ call them
// for both their forward and their backward. All inputs and outputs are
// contiguous; outputs are new tensors unless the name ends in `_` (in place).
// Every in-place kernel adds 1 to the version of the storage it writes
// (Tensor::version), which lets backward() detect a tensor changed after an
// op saved it for its backward.
//
// Broadcasting follows NumPy: shapes align at the right, and an axis of size
// 1 (or a missing leading axis) stretches to the other operand's size.
// Binary ops need both operands of one dtype (no silent promotion).
#include <vector>

#include "core/tensor.hpp"

namespace sg::kernel {

// ---- shapes ----
// The broadcast shape of a and b, or throws "<op>: cannot broadcast (2, 3) with (4)".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// ---- elementwise unary (core/kernels/unary.cpp) ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor pow(const Tensor& x, double exponent);
// The tanh approximation of GELU, as GPT-2 and PyTorch's gelu(approximate='tanh').
Tensor gelu(const Tensor& x);
// y = x * alpha + beta, one pass. int64 x: alpha and beta must be whole
// numbers, and the result is int64.
Tensor affine(const Tensor& x, double alpha, double beta);

// ---- elementwise binary, broadcasting (core/kernels/binary.cpp) ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // float dtypes only
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Comparisons return 1 or 0 in the operands' dtype (there is no bool dtype),
// so a mask multiplies directly.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
// dst += src, in place; src broadcasts to dst's shape.
void add_(Tensor& dst, const Tensor& src);
// dst *= s, in place.
void scale_(Tensor& dst, double s);
// Fills every element with value, in place.
void fill_(Tensor& dst, double value);
// Copies src's values into dst (same shape and dtype), in place.
void copy_(Tensor& dst, const Tensor& src);

// ---- reductions (core/kernels/reduce.cpp) ----
// Along one axis (negative counts from the end); keepdim leaves it as size 1.
Tensor sum(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor mean(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor max(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);  // int64; first of ties
// Over every element: shape ().
Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x);
Tensor max(const Tensor& x);
// Sums x down to `shape`, which x's shape must broadcast from: the reverse
// of broadcasting, used by every broadcasting op's backward.
Tensor sum_to(const Tensor& x, const Shape& shape);

// ---- softmax along the last axis, numerically stable (core/kernels/softmax.cpp) ----
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);

// ---- layout (core/kernels/layout.cpp) ----
// A view: same storage, new shape; one axis may be -1 (inferred).
Tensor reshape(const Tensor& x, const Shape& shape);
// Copies into the axis order `dims` (a permutation of 0..rank-1).
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1);
// Elements [start, end) along axis. A view when every axis before `axis`
// has size 1 (the leading-dimension case), a copy otherwise.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end);
// The index-th entry along axis 0, a view with that axis removed.
Tensor select(const Tensor& x, int64_t index);
// Joins tensors along axis; every other axis must match.
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
// Converts to another dtype (a copy even when the dtype is the same).
Tensor to(const Tensor& x, DType dtype);

// ---- matrix products over BLIS (core/kernels/gemm.cpp) ----
// a: (..., M, K), b: (..., K, N) -> (..., M, N); leading (batch) axes
// broadcast. transpose_a / transpose_b multiply by a's or b's last two axes
// swapped without copying.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false,
              bool transpose_b = false);

}  // namespace sg::kernel

namespace sg::kernel {
// x repeated along broadcast axes to `shape` (the forward of broadcasting;
// the backward of sum_to).
Tensor broadcast_to(const Tensor& x, const Shape& shape);
}  // namespace sg::kernel
