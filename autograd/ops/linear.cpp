// The affine map of a Linear layer, y = x W^T + b, as one op: the product adds
// the bias as it stores y, instead of a tensor of its own plus a broadcast add.
// Second order: first order keeps the kernels; under create_graph (recording
// on) the backward is the same three products written with the recorded
// matmul, reshape and sum, so it is differentiable in g, x and W.
#include "autograd/engine.hpp"
#include "autograd/ops/linear.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "core/kernels/gemm.hpp"
#include "core/kernels.hpp"

#include <algorithm>

namespace sg {

// x: (..., in), weight: (out, in), bias: (out) or undefined -> (..., out).
// The GEMM adds b to each row of x W^T as it stores y (kernel::gemm's bias).
// Backward, with x and g seen as (rows, in) and (rows, out):
//   dx = g W,  dW = g^T x,  db = sum over rows of g
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.dim() != 2) fail("linear: weight must be (out, in), got ", weight.shape());
  const int64_t out_features = weight.shape()[0], in_features = weight.shape()[1];
  if (x.dim() == 0 || x.shape().back() != in_features)
    fail("linear: input of shape ", x.shape(), " does not end in in_features ", in_features,
         " (weight ", weight.shape(), ")");
  if (bias.defined() && bias.shape() != Shape{out_features})
    fail("linear: bias ", bias.shape(), " must be (", out_features, ") for weight ", weight.shape());
  if (!is_floating(x.dtype())) fail("linear: needs float32 or float64, got ", x.dtype(), " input ", x.shape());
  check_same_dtype(x, weight, "linear");
  if (bias.defined()) check_same_dtype(x, bias, "linear");

  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  Tensor out = empty(out_shape, x.dtype());
  int64_t rows = 1;  // every axis of x but the last
  for (size_t d = 0; d + 1 < out_shape.size(); ++d) rows *= out_shape[d];
  visit_floating(x, "linear", [&](auto tag) {
    using T = decltype(tag);
    kernel::gemm<T>(false, true, rows, out_features, in_features, T(1), x.data<T>(),
                  std::max<int64_t>(1, in_features), weight.data<T>(),
                  std::max<int64_t>(1, in_features), T(0), out.data<T>(),
                  std::max<int64_t>(1, out_features), bias.defined() ? bias.data<T>() : nullptr);
  });
  std::vector<Tensor> inputs = {x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return record("linear", out, inputs,
                {x.requires_grad() ? weight : Tensor(), weight.requires_grad() ? x : Tensor()}, [x, weight, rows, has_bias = bias.defined()](const Tensor& g) -> Grads {
    // BEGIN ASSIGNMENT 2: linear's backward: dx = g W, dW = g^T x, db = g summed over rows
    if (grad_enabled()) {  // create_graph: the same, recorded
      const int64_t in_features = weight.shape()[1], out_features = weight.shape()[0];
      const Tensor g2 = reshape(g, {rows, out_features});
      Grads grads(has_bias ? 3 : 2);
      if (x.requires_grad()) grads[0] = reshape(matmul(g2, weight), x.shape());
      if (weight.requires_grad()) grads[1] = matmul(g2, reshape(x, {rows, in_features}), true, false);
      if (has_bias) grads[2] = sum(g2, 0);
      return grads;
    }
    const int64_t in_features = weight.shape()[1], out_features = weight.shape()[0];
    const Tensor g2 = kernel::reshape(g, {rows, out_features});
    Grads grads(has_bias ? 3 : 2);
    if (x.requires_grad()) grads[0] = kernel::reshape(kernel::matmul(g2, weight), x.shape());
    if (weight.requires_grad())
      grads[1] = kernel::matmul(g2, kernel::reshape(x, {rows, in_features}), true, false);
    if (has_bias) grads[2] = kernel::sum(g2, 0);
    return grads;
    // END ASSIGNMENT 2
  });
}

}  // namespace sg
