// softplus(x) = log(1 + exp(beta x)) / beta, a smooth relu, with PyTorch's
// parameters (torch.nn.functional.softplus): where beta x > threshold the
// result is x itself (log(1 + e^t) and t agree to float64 rounding there,
// and exp would overflow further on). The gradient is sigmoid(beta x), 1 in
// the linear part.
// Second order: first order keeps the one-pass kernel; under create_graph
// (recording on) the slope is the recorded sigmoid(beta x) where beta x <=
// threshold and the constant 1 above (constant masks), so every order works.
#include <cmath>

#include "autograd/engine.hpp"
#include "autograd/ops/softplus.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/unary.hpp"
#include "core/kernels.hpp"
#include "core/parallel.hpp"

namespace sg {

// x: any shape -> same shape.
Tensor softplus(const Tensor& x, double beta, double threshold) {
  if (!(beta > 0) || !std::isfinite(beta))
    fail("softplus: beta must be positive and finite, got ", beta, " (x ", x.shape(), ")");
  if (std::isnan(threshold)) fail("softplus: threshold is NaN (x ", x.shape(), ")");
  Tensor out = empty(x.shape(), x.dtype());
  visit_floating(x, "softplus", [&](auto tag) {
    using T = decltype(tag);
    const T* a = x.data<T>();
    T* o = out.data<T>();
    const int64_t n = x.numel();
    parallel_for(n, n >= kParallelElementwise, [&](int64_t i) {
      const double t = beta * static_cast<double>(a[i]);
      // log1p(exp(t)) = max(t, 0) + log1p(exp(-|t|)): never overflows
      o[i] = t > threshold ? a[i] : static_cast<T>((std::max(t, 0.0) + std::log1p(std::exp(-std::fabs(t)))) / beta);
    });
  });
  return record("softplus", out, {x}, [x, beta, threshold](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      const Tensor above = kernel::gt(kernel::affine(x, beta, 0), full({}, threshold, x.dtype()));
      const Tensor below = kernel::affine(above, -1.0, 1.0);
      return {mul(g, add(mul(sigmoid(affine(x, beta, 0)), below), above))};
    }
    Tensor dx = empty(x.shape(), x.dtype());
    visit_floating(x, "softplus", [&](auto tag) {
      using T = decltype(tag);
      const T* a = x.data<T>();
      const T* gv = g.data<T>();
      T* d = dx.data<T>();
      const int64_t n = x.numel();
      parallel_for(n, n >= kParallelElementwise, [&](int64_t i) {
        const double t = beta * static_cast<double>(a[i]);
        // d softplus / dx = sigmoid(t), written so that exp never overflows
        const double s = t > threshold ? 1.0 : t >= 0 ? 1 / (1 + std::exp(-t)) : std::exp(t) / (1 + std::exp(t));
        d[i] = static_cast<T>(static_cast<double>(gv[i]) * s);
      });
    });
    return {dx};
  });
}

}  // namespace sg
