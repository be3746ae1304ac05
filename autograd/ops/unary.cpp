// Elementwise functions. Where the derivative is cheapest from the output
// (exp, sqrt, tanh, sigmoid), the backward captures the output's data
// (out.detach(): the data without the node, so no reference cycle).
//
// Second order: each backward has two forms. Recording off (first order),
// the kernels, from the saved output where that is cheapest. Recording on
// (create_graph), the same derivative written with the recorded ops, from x
// (the saved output has no history, so exp, sqrt, tanh and sigmoid compute
// it again from x, once per create_graph pass); relu's and abs's
// derivatives are constant masks, so their composed form is g times a mask.
#include <algorithm>

#include "autograd/engine.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "core/kernels.hpp"
#include "core/parallel.hpp"

namespace sg {

// x: any shape -> same shape, for every op in this file.
Tensor exp(const Tensor& x) {
  Tensor out = kernel::exp(x);
  return record("exp", out, {x}, {out}, [x, v = x.version(), y = out.detach()](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      check_version("exp", "its input", x, v);  // the composed form reads x, which the op does not save
      return {mul(g, exp(x))};
    }
    return {kernel::mul(g, y)};  // d exp(x) = exp(x)
  });
}

Tensor log(const Tensor& x) {
  return record("log", kernel::log(x), {x}, [x](const Tensor& g) -> Grads {
    if (grad_enabled()) return {div(g, x)};
    return {kernel::div(g, x)};  // d log(x) = 1/x
  });
}

Tensor sqrt(const Tensor& x) {
  Tensor out = kernel::sqrt(x);
  return record("sqrt", out, {x}, {out}, [x, v = x.version(), y = out.detach()](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      check_version("sqrt", "its input", x, v);  // the composed form reads x, which the op does not save
      return {div(affine(g, 0.5, 0), sqrt(x))};
    }
    return {kernel::div(kernel::affine(g, 0.5, 0), y)};  // d sqrt(x) = 1 / (2 sqrt(x))
  });
}

Tensor tanh(const Tensor& x) {
  Tensor out = kernel::tanh(x);
  return record("tanh", out, {x}, {out}, [x, v = x.version(), y = out.detach()](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      // BEGIN ASSIGNMENT 9: tanh's create_graph backward: g (1 - tanh(x)^2) with recorded ops from x (checked unchanged since the forward), differentiable again in g and x
      check_version("tanh", "its input", x, v);  // the composed form reads x, which the op does not save
      const Tensor t = tanh(x);
      return {mul(g, affine(mul(t, t), -1.0, 1.0))};
      // END ASSIGNMENT 9
    }
    // d tanh(x) = 1 - tanh(x)^2
    return {kernel::mul(g, kernel::affine(kernel::mul(y, y), -1.0, 1.0))};
  });
}

Tensor sigmoid(const Tensor& x) {
  Tensor out = kernel::sigmoid(x);
  return record("sigmoid", out, {x}, {out}, [x, v = x.version(), y = out.detach()](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      check_version("sigmoid", "its input", x, v);  // the composed form reads x, which the op does not save
      const Tensor s = sigmoid(x);
      return {mul(g, mul(s, affine(s, -1.0, 1.0)))};
    }
    // d sigmoid(x) = s (1 - s)
    return {kernel::mul(g, kernel::mul(y, kernel::affine(y, -1.0, 1.0)))};
  });
}

namespace {

// dx = g where x > 0, else 0: one pass (a mask tensor and a mul would be two
// passes and a temporary as big as x). Restrict pointers so it vectorises,
// and g[i] read before the select: in `x[i] > 0 ? g[i] : 0` the load is
// conditional, which only targets with masked loads (AVX2, AVX-512)
// vectorise; SSE builds ran it as a branch per element.
template <class T>
void relu_grad_range(const T* __restrict x, const T* __restrict g, T* __restrict dx, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const T gi = g[i];
    dx[i] = x[i] > T(0) ? gi : T(0);
  }
}

}  // namespace

Tensor relu(const Tensor& x) {
  return record("relu", kernel::relu(x), {x}, [x](const Tensor& g) -> Grads {
    if (grad_enabled()) return {mul(g, kernel::gt(x, zeros({}, x.dtype())))};  // g times the constant mask x > 0
    Tensor dx = empty(x.shape(), x.dtype());
    visit_floating(x, "relu", [&](auto tag) {
      using T = decltype(tag);
      const int64_t n = x.numel(), block = 1 << 13;
      parallel_for((n + block - 1) / block, n >= kParallelElementwise, [&](int64_t b) {
        relu_grad_range(x.data<T>(), g.data<T>(), dx.data<T>(), b * block, std::min(n, (b + 1) * block));
      });
    });
    return {dx};
  });
}

Tensor abs(const Tensor& x) {
  return record("abs", kernel::abs(x), {x}, [x](const Tensor& g) -> Grads {
    const Tensor zero = zeros({}, x.dtype());
    if (grad_enabled()) return {mul(g, kernel::sub(kernel::gt(x, zero), kernel::lt(x, zero)))};  // constant sign
    return {kernel::mul(g, kernel::sub(kernel::gt(x, zero), kernel::lt(x, zero)))};  // sign(x)
  });
}

Tensor pow(const Tensor& x, double p) {
  return record("pow", kernel::pow(x, p), {x}, [x, p](const Tensor& g) -> Grads {
    // d x^p = p x^(p-1); for p = 0 exactly 0 (not 0 * x^-1, NaN at x = 0)
    if (p == 0) return {grad_enabled() ? mul(g, zeros_like(x)) : zeros_like(x)};  // mul: a composed form, for create_graph
    if (grad_enabled()) return {mul(g, p == 2 ? affine(x, 2.0, 0) : affine(pow(x, p - 1), p, 0))};
    Tensor d = p == 2 ? kernel::affine(x, 2.0, 0) : kernel::affine(kernel::pow(x, p - 1), p, 0);
    return {kernel::mul(g, d)};
  });
}

}  // namespace sg
