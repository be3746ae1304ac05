// Shape ops: reshape is a view, the others copy. Their backwards move the
// gradient back to where each element came from.
// Second order: every backward here is linear in g alone; under create_graph
// (recording on) it calls the recorded op (sg::reshape, ...) instead of the
// kernel, so the gradient stays differentiable in g.
#include <numeric>

#include "autograd/engine.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/reduce.hpp"
#include "core/kernels.hpp"

namespace sg {

Tensor reshape(const Tensor& x, const Shape& shape) {
  return record("reshape", kernel::reshape(x, shape), {x}, {}, [x](const Tensor& g) -> Grads {
    return {grad_enabled() ? reshape(g, x.shape()) : kernel::reshape(g, x.shape())};
  });
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  Tensor out = kernel::permute(x, dims);
  // The inverse permutation puts each gradient axis back where it came from.
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[static_cast<size_t>(normalize_axis(dims[i], x.shape(), "permute"))] = static_cast<int64_t>(i);
  return record("permute", out, {x}, {}, [inverse](const Tensor& g) -> Grads {
    return {grad_enabled() ? permute(g, inverse) : kernel::permute(g, inverse)};
  });
}

Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1) {
  std::vector<int64_t> dims(x.shape().size());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[static_cast<size_t>(normalize_axis(axis0, x.shape(), "transpose"))],
            dims[static_cast<size_t>(normalize_axis(axis1, x.shape(), "transpose"))]);
  return permute(x, dims);
}

// x: (..., n, ...) -> (..., end - start, ...); the gradient is g padded with
// zeros before and after along axis.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end) {
  Tensor out = kernel::slice(x, axis, start, end);
  axis = normalize_axis(axis, x.shape(), "slice");
  return record("slice", out, {x}, {}, [x, axis, start, end](const Tensor& g) -> Grads {
    const int64_t n = x.shape()[static_cast<size_t>(axis)];
    if (start == 0 && end == n) return {g};
    std::vector<Tensor> parts;
    Shape pad = x.shape();
    if (start > 0) pad[static_cast<size_t>(axis)] = start, parts.push_back(zeros(pad, g.dtype()));
    parts.push_back(g);
    if (end < n) pad[static_cast<size_t>(axis)] = n - end, parts.push_back(zeros(pad, g.dtype()));
    return {grad_enabled() ? concat(parts, axis) : kernel::concat(parts, axis)};
  });
}

// Each input's gradient is its own stretch of g along axis.
Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  Tensor out = kernel::concat(xs, axis);
  axis = normalize_axis(axis, xs[0].shape(), "concat");
  return record("concat", out, xs, {}, [xs, axis](const Tensor& g) -> Grads {
    Grads grads;
    int64_t at = 0;
    for (const Tensor& x : xs) {
      const int64_t n = x.shape()[static_cast<size_t>(axis)];
      grads.push_back(!x.requires_grad() ? Tensor()
                      : grad_enabled()   ? slice(g, axis, at, at + n)
                                         : kernel::slice(g, axis, at, at + n));
      at += n;
    }
    return grads;
  });
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return record("broadcast_to", kernel::broadcast_to(x, shape), {x}, {}, [x](const Tensor& g) -> Grads {
    return {grad_enabled() ? sum_to(g, x.shape()) : kernel::sum_to(g, x.shape())};
  });
}

}  // namespace sg
