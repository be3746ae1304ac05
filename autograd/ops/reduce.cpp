// Reductions: sum and max are primitives, mean is sum times 1/n; sum_to
// (the backward of broadcasting) is here too.
// Second order: sum's and sum_to's backwards broadcast g, with the kernel
// when recording is off, with the recorded sg::broadcast_to under
// create_graph. max's first-order backward scatters g with one loop; under
// create_graph it is g broadcast times a constant one-hot mask of the
// argmax (recorded ops), differentiable in g (the mask has no derivative).
#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "core/kernels.hpp"

namespace sg {
namespace {
// The shape x reduces to along axis with keepdim: the gradient's shape
// before it broadcasts back over the reduced axis.
Shape keepdim_shape(const Shape& s, int64_t axis) {
  Shape k = s;
  k[static_cast<size_t>(axis)] = 1;
  return k;
}
}  // namespace

// x: (...) -> (); every element's gradient is g.
Tensor sum(const Tensor& x) {
  return record("sum", kernel::sum(x), {x}, {}, [x](const Tensor& g) -> Grads {
    return {grad_enabled() ? broadcast_to(g, x.shape()) : kernel::broadcast_to(g, x.shape())};
  });
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return record("sum_to", kernel::sum_to(x, shape), {x}, {}, [x](const Tensor& g) -> Grads {
    return {grad_enabled() ? broadcast_to(g, x.shape()) : kernel::broadcast_to(g, x.shape())};
  });
}

// x: (..., n, ...) -> the same without axis (or with it as 1 when keepdim).
Tensor sum(const Tensor& x, int64_t axis, bool keepdim) {
  axis = normalize_axis(axis, x.shape(), "sum");
  return record("sum", kernel::sum(x, axis, keepdim), {x}, {}, [x, axis](const Tensor& g) -> Grads {
    if (grad_enabled()) return {broadcast_to(reshape(g, keepdim_shape(x.shape(), axis)), x.shape())};
    return {kernel::broadcast_to(kernel::reshape(g, keepdim_shape(x.shape(), axis)), x.shape())};
  });
}

namespace {
// An int64 mean would fail in the affine below, naming neither mean nor x's shape.
void check_mean_floating(const Tensor& x) {
  if (!is_floating(x.dtype())) fail("mean: needs a float32 or float64 tensor, got ", x.dtype(), " ", x.shape());
}
}  // namespace

Tensor mean(const Tensor& x) {
  check_mean_floating(x);
  if (x.numel() == 0) fail("mean: tensor of shape ", x.shape(), " is empty");
  return sum(x) * (1.0 / static_cast<double>(x.numel()));
}

Tensor mean(const Tensor& x, int64_t axis, bool keepdim) {
  check_mean_floating(x);
  axis = normalize_axis(axis, x.shape(), "mean");
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  if (n == 0) fail("mean: axis ", axis, " of shape ", x.shape(), " is empty");
  return sum(x, axis, keepdim) * (1.0 / static_cast<double>(n));
}

// x: (..., n, ...) -> max along axis; the gradient goes to the first maximum.
// The backward recomputes the argmax from x, so x is saved (record's
// default): changing x in place after max() makes backward() throw instead
// of sending the gradient to another element.
Tensor max(const Tensor& x, int64_t axis, bool keepdim) {
  axis = normalize_axis(axis, x.shape(), "max");
  return record("max", kernel::max(x, axis, keepdim), {x}, [x, axis](const Tensor& g) -> Grads {
    // x viewed as (outer, n, inner); g and the argmax as (outer, inner).
    const Tensor arg = kernel::argmax(x, axis, false);
    const bool composed = grad_enabled();
    const Tensor gk = composed ? reshape(g, keepdim_shape(x.shape(), axis)) : g;
    // dx (first order), or the one-hot mask of the argmax (create_graph)
    Tensor dx = zeros_like(x);
    const int64_t n = x.shape()[static_cast<size_t>(axis)];
    int64_t in = 1;  // the inner extent: product of the axes after `axis`
    for (size_t i = static_cast<size_t>(axis) + 1; i < x.shape().size(); ++i) in *= x.shape()[i];
    const int64_t* idx = arg.data<int64_t>();
    visit_floating(x.dtype(), "max", [&](auto tag) {
      using T = decltype(tag);
      const T* gp = composed ? nullptr : g.data<T>();
      T* d = dx.data<T>();
      for (int64_t k = 0; k < arg.numel(); ++k) {
        const int64_t o = k / in, i = k % in;
        d[(o * n + idx[k]) * in + i] += composed ? T(1) : gp[k];
      }
    });
    if (composed) return {mul(broadcast_to(gk, x.shape()), dx)};
    return {dx};
  });
}

Tensor max(const Tensor& x) {
  if (x.numel() == 0) fail("max: tensor of shape ", x.shape(), " is empty");
  return reshape(max(reshape(x, {x.numel()}), 0, false), {});
}

}  // namespace sg
