#include "autograd/tools/functional.hpp"

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "core/kernels.hpp"

namespace sg {
namespace {

// Fresh leaves holding x's values, so that grad() can differentiate in them.
std::vector<Tensor> leaves_of(const std::vector<Tensor>& x, const char* who) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!x[i].defined() || !is_floating(x[i].dtype()))
      fail(who, ": input ", i, " must be a float32 or float64 tensor");
    out.push_back(clone(x[i].detach()).set_requires_grad(true));
  }
  return out;
}

void check_like(const std::vector<Tensor>& x, const std::vector<Tensor>& v, const char* who,
                const char* what = "input") {
  if (v.size() != x.size()) fail(who, ": ", v.size(), " directions for ", x.size(), " ", what, "s");
  for (size_t i = 0; i < x.size(); ++i)
    if (!v[i].defined() || v[i].shape() != x[i].shape() || v[i].dtype() != x[i].dtype())
      fail(who, ": direction ", i, " must be of ", what, " ", i, "'s shape ", x[i].shape(), " and dtype ", x[i].dtype());
}

// Undefined gradients (no path) as zeros.
std::vector<Tensor> filled(Grads g, const std::vector<Tensor>& like) {
  for (size_t i = 0; i < g.size(); ++i)
    if (!g[i].defined()) g[i] = zeros(like[i].shape(), like[i].dtype());
  return g;
}

// sum_i sum(a_i * b_i), recorded.
Tensor dot(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  Tensor total;
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor t = sum(mul(a[i], b[i]));
    total = total.defined() ? add(total, t) : t;
  }
  return total;
}

// Checks that params are leaves requiring grad, of one float dtype.
void check_params(const std::vector<Tensor>& params, const char* who) {
  if (params.empty()) fail(who, ": no parameters");
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.defined() || !is_floating(p.dtype()))
      fail(who, ": parameter ", i, " must be a float32 or float64 tensor");
    if (!p.is_leaf() || !p.requires_grad())
      fail(who, ": parameter ", i, " of shape ", p.shape(), " is not a leaf that requires grad (pass "
           "model.parameters(), or tensors made with set_requires_grad())");
    if (p.dtype() != params[0].dtype())
      fail(who, ": parameter ", i, " is ", p.dtype(), " and parameter 0 is ", params[0].dtype(),
           "; all must be of one dtype");
  }
}

// loss() with recording on; refuses a non-scalar, naming `who`.
Tensor scalar_loss(const LossFn& loss, const char* who) {
  const Tensor y = loss();
  if (!y.defined() || y.numel() != 1)
    fail(who, ": the loss must return a scalar, got shape ", y.defined() ? y.shape() : Shape{});
  return y;
}

}  // namespace

std::vector<Tensor> vjp(const VectorFn& f, const std::vector<Tensor>& x, const Tensor& u) {
  EnableGradGuard on;
  const std::vector<Tensor> xs = leaves_of(x, "vjp");
  const Tensor y = f(xs);
  if (!y.requires_grad()) return filled(Grads(xs.size()), xs);
  return filled(grad(y, xs, u), xs);
}

namespace {

// J v for y = f(xs), J = dy/dxs, by the double-backward trick: J^T u is
// linear in a dummy u, recorded, and its gradient in u after a dot with v
// is J v. Zeros where y does not depend on xs.
Tensor jacobian_times(const Tensor& y, const std::vector<Tensor>& xs, const std::vector<Tensor>& v) {
  if (!y.requires_grad()) return zeros(y.shape(), y.dtype());
  const Tensor u = zeros(y.shape(), y.dtype()).set_requires_grad(true);  // any value: J^T u is linear in u
  const Grads g = grad(y, xs, u, {.create_graph = true});                    // J^T u, recorded
  std::vector<Tensor> gs, vs;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i].defined() && g[i].requires_grad()) gs.push_back(g[i]), vs.push_back(v[i]);
  if (gs.empty()) return zeros(y.shape(), y.dtype());
  const Grads jv = grad(dot(gs, vs), {u});
  return jv[0].defined() ? jv[0] : zeros(y.shape(), y.dtype());
}

}  // namespace

Tensor jvp(const VectorFn& f, const std::vector<Tensor>& x, const std::vector<Tensor>& v) {
  check_like(x, v, "jvp");
  EnableGradGuard on;
  const std::vector<Tensor> xs = leaves_of(x, "jvp");
  const Tensor y = f(xs);
  return jacobian_times(y, xs, v);
}

std::vector<Tensor> hvp(const VectorFn& f, const std::vector<Tensor>& x, const std::vector<Tensor>& v) {
  check_like(x, v, "hvp");
  // BEGIN ASSIGNMENT 9: hvp: H v = the gradient of (grad f . v) for a scalar f at fresh leaves of x, the first gradient recorded (create_graph); zeros where there is no path
  EnableGradGuard on;
  const std::vector<Tensor> xs = leaves_of(x, "hvp");
  const Tensor y = f(xs);
  if (y.numel() != 1) fail("hvp: f must return a scalar, got shape ", y.shape());
  if (!y.requires_grad()) return filled(Grads(xs.size()), xs);
  const Grads g = filled(grad(y, xs, Tensor(), BackwardOptions{false, true}), xs);
  const Tensor gv = dot(g, v);
  if (!gv.requires_grad()) return filled(Grads(xs.size()), xs);  // f linear: H = 0
  return filled(grad(gv, xs), xs);
  // END ASSIGNMENT 9
}

Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  {  // refused here, naming hessian, rather than by the first hvp
    NoGradGuard off;
    const Tensor y = f(x.detach());
    if (!y.defined() || y.numel() != 1)
      fail("hessian: f must return a scalar, got shape ", y.defined() ? y.shape() : Shape{},
           " (for a vector function, take the hessian of each element)");
  }
  const int64_t n = x.numel();
  Tensor h = zeros({n, n}, x.dtype());
  const VectorFn fv = [&](const std::vector<Tensor>& in) { return f(in[0]); };
  for (int64_t j = 0; j < n; ++j) {  // column j: H e_j
    Tensor e = zeros(x.shape(), x.dtype());
    visit_floating(x.dtype(), "hessian", [&](auto tag) { e.data<decltype(tag)>()[j] = 1; });
    const Tensor col = hvp(fv, {x}, {e})[0];
    visit_floating(x.dtype(), "hessian", [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < n; ++i) h.data<T>()[i * n + j] = col.data<T>()[i];
    });
  }
  return h;
}

std::vector<Tensor> hvp(const LossFn& loss, const std::vector<Tensor>& params, const std::vector<Tensor>& v) {
  check_params(params, "hvp");
  check_like(params, v, "hvp", "parameter");
  EnableGradGuard on;
  const Tensor y = scalar_loss(loss, "hvp");
  if (!y.requires_grad()) return filled(Grads(params.size()), params);
  const Grads g = filled(grad(y, params, {.create_graph = true}), params);  // recorded: dg/dparams = H
  const Tensor g_dot_v = dot(g, v);
  if (!g_dot_v.requires_grad()) return filled(Grads(params.size()), params);  // loss linear: H = 0
  return filled(grad(g_dot_v, params), params);
}

Tensor jvp(const LossFn& f, const std::vector<Tensor>& params, const std::vector<Tensor>& v) {
  check_params(params, "jvp");
  check_like(params, v, "jvp", "parameter");
  EnableGradGuard on;
  const Tensor y = f();
  if (!y.defined()) fail("jvp: f returned an undefined tensor");
  return jacobian_times(y, params, v);
}

Tensor hessian(const LossFn& loss, const std::vector<Tensor>& params) {
  check_params(params, "hessian");
  EnableGradGuard on;
  const Tensor y = scalar_loss(loss, "hessian");
  int64_t n = 0;
  for (const Tensor& p : params) n += p.numel();
  const DType dtype = params[0].dtype();
  Tensor h = zeros({n, n}, dtype);
  if (!y.requires_grad()) return h;
  const Grads g = filled(grad(y, params, {.create_graph = true}), params);  // once, recorded
  // Column j: the gradient of g_j, element j of the flattened gradient, its
  // graph kept (retain_graph) for the next column.
  int64_t j = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor flat = reshape(g[k], {params[k].numel()});
    for (int64_t e = 0; e < params[k].numel(); ++e, ++j) {
      const Tensor gj = slice(flat, 0, e, e + 1);  // (1)
      if (!gj.requires_grad()) continue;  // that gradient is constant: its column is zero
      const Grads col = grad(gj, params, ones({1}, dtype), true);
      visit_floating(dtype, "hessian", [&](auto tag) {
        using T = decltype(tag);
        int64_t i = 0;
        for (size_t q = 0; q < params.size(); ++q) {
          const int64_t m = params[q].numel();
          if (col[q].defined()) {
            for (int64_t r = 0; r < m; ++r) h.data<T>()[(i + r) * n + j] = col[q].data<T>()[r];
          }
          i += m;
        }
      });
    }
  }
  return h;
}

}  // namespace sg
