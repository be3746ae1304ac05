// Arithmetic: add, mul, div and affine are primitives; sub, neg and the
// scalar operators are compositions of them. int64 tensors (ids, lengths)
// never require grad: their arithmetic records nothing and stays int64, as
// in PyTorch (valid_lens - 1), through the kernels directly.
//
// Second order: each backward has two forms. Recording off (a first-order
// backward()), the kernels as before; recording on (create_graph), the same
// formulas with the recorded ops (sg::mul, sg::sum_to), so the gradient can
// be differentiated again in g and in the inputs. Two forms rather than
// sg:: ops alone: with recording off sg::mul would compute the same, but
// each call would also pass record()'s anomaly check and profiler mark,
// which would then name a backward's arithmetic as forward ops.
#include <cmath>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "core/kernels.hpp"

namespace sg {
namespace {

// x * alpha + beta for the operator `op` with the scalar s. An int64 x
// needs a whole s: a fraction would make a float result, which smallgrad
// never makes silently (PyTorch would promote lens + 0.5 to float).
Tensor scalar_op(const Tensor& x, double alpha, double beta, double s, const char* op) {
  if (!x.defined() || x.dtype() != int64) return affine(x, alpha, beta);
  if (!(std::trunc(s) == s && std::fabs(s) < 0x1p63))
    fail(op, ": an int64 tensor of shape ", x.shape(), " and the scalar ", s,
         ", which is not a whole number: the result would not be int64 (convert with to(float32) first)");
  return kernel::affine(x, alpha, beta);
}

[[noreturn]] void refuse_int_division(const Tensor& x, const char* what) {
  fail("div: an int64 tensor of shape ", x.shape(), " divided by ", what,
       ": true division makes fractions, which int64 cannot hold (convert with to(float32) first)");
}

}  // namespace

// a: (...), b: (...) broadcast -> out: broadcast shape.
// Each gradient is summed back over the axes its input was broadcast along.
Tensor add(const Tensor& a, const Tensor& b) {
  return record("add", kernel::add(a, b), {a, b}, {}, [a, b](const Tensor& g) -> Grads {
    // BEGIN ASSIGNMENT 1: add's backward: dL/da and dL/db, each summed back to its input's shape
    if (grad_enabled())  // create_graph: the same, recorded
      return {a.requires_grad() ? sum_to(g, a.shape()) : Tensor(), b.requires_grad() ? sum_to(g, b.shape()) : Tensor()};
    return {a.requires_grad() ? kernel::sum_to(g, a.shape()) : Tensor(),
            b.requires_grad() ? kernel::sum_to(g, b.shape()) : Tensor()};
    // END ASSIGNMENT 1
  });
}

// Saved for backward: b if a needs a gradient (da = g b), a if b does, as
// PyTorch: an in-place change of a tensor no gradient reads is fine.
Tensor mul(const Tensor& a, const Tensor& b) {
  return record("mul", kernel::mul(a, b), {a, b}, {a.requires_grad() ? b : Tensor(), b.requires_grad() ? a : Tensor()},
                [a, b](const Tensor& g) -> Grads {
    // BEGIN ASSIGNMENT 1: mul's backward: dL/da = g b and dL/db = g a, each summed back to its input's shape
    if (grad_enabled())  // create_graph: the same, recorded (differentiable in g, a and b)
      return {a.requires_grad() ? sum_to(mul(g, b), a.shape()) : Tensor(),
              b.requires_grad() ? sum_to(mul(g, a), b.shape()) : Tensor()};
    return {a.requires_grad() ? kernel::sum_to(kernel::mul(g, b), a.shape()) : Tensor(),
            b.requires_grad() ? kernel::sum_to(kernel::mul(g, a), b.shape()) : Tensor()};
    // END ASSIGNMENT 1
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  if (a.defined() && b.defined() && a.dtype() == int64 && b.dtype() == int64)
    refuse_int_division(a, detail::cat("an int64 tensor of shape ", b.shape()).c_str());
  Tensor out = kernel::div(a, b);
  // d(a/b)/da = 1/b; d(a/b)/db = -a/b^2 = -out/b
  return record("div", out, {a, b}, {b, out}, [a, b, va = a.version(), q = out.detach()](const Tensor& g) -> Grads {
    // BEGIN ASSIGNMENT 1: div's backward: dL/da = g / b and dL/db = -g a / b^2, each summed back to its input's shape
    if (grad_enabled()) {  // create_graph: -g a / b^2 from a and b (q, the saved output, has no history)
      if (b.requires_grad()) check_version("div", "its numerator", a, va);  // read for dL/db; the op does not save it
      const Tensor g_over_b = div(g, b);
      return {a.requires_grad() ? sum_to(g_over_b, a.shape()) : Tensor(),
              b.requires_grad() ? sum_to(neg(mul(g_over_b, div(a, b))), b.shape()) : Tensor()};
    }
    Tensor g_over_b = kernel::div(g, b);
    return {a.requires_grad() ? kernel::sum_to(g_over_b, a.shape()) : Tensor(),
            b.requires_grad() ? kernel::sum_to(kernel::neg(kernel::mul(g_over_b, q)), b.shape())
                              : Tensor()};
    // END ASSIGNMENT 1
  });
}

Tensor affine(const Tensor& x, double alpha, double beta) {
  return record("affine", kernel::affine(x, alpha, beta), {x}, {}, [alpha](const Tensor& g) -> Grads {
    return {grad_enabled() ? affine(g, alpha, 0) : kernel::affine(g, alpha, 0)};
  });
}

Tensor neg(const Tensor& x) { return x.defined() && x.dtype() == int64 ? kernel::neg(x) : affine(x, -1.0); }
Tensor sub(const Tensor& a, const Tensor& b) {
  // Checked here so that a mistake names sub, not the add it becomes.
  kernel::broadcast_shapes(a.shape(), b.shape(), "sub");
  check_same_dtype(a, b, "sub");
  if (a.dtype() == int64) return kernel::sub(a, b);
  return add(a, neg(b));
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& x, double s) { return scalar_op(x, 1.0, s, s, "add"); }
Tensor operator+(double s, const Tensor& x) { return scalar_op(x, 1.0, s, s, "add"); }
Tensor operator-(const Tensor& x, double s) { return scalar_op(x, 1.0, -s, s, "sub"); }
Tensor operator-(double s, const Tensor& x) { return scalar_op(x, -1.0, s, s, "sub"); }
Tensor operator*(const Tensor& x, double s) { return scalar_op(x, s, 0.0, s, "mul"); }
Tensor operator*(double s, const Tensor& x) { return scalar_op(x, s, 0.0, s, "mul"); }
Tensor operator/(const Tensor& x, double s) {
  if (x.defined() && x.dtype() == int64) refuse_int_division(x, detail::cat("the scalar ", s).c_str());
  if (s == 0) fail("div: division of a tensor of shape ", x.shape(), " by the scalar 0");
  return affine(x, 1.0 / s);
}

}  // namespace sg
