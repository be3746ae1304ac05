// Second order over a model's weights: the curvature of a small network's
// loss, from Hessian-vector products (sg::hvp over model.parameters()).
//
//   1. the Hessian's largest eigenvalue (in absolute value) by power
//      iteration on hvp, which never forms the Hessian, against the dense
//      Hessian's (sg::hessian over the parameters, then Jacobi's method);
//   2. one Newton-CG step on the weights: H p = -g solved by conjugate
//      gradient on hvp, damped where the curvature is negative, against one
//      gradient step, from the same weights.
//
// The network, Linear(2, 8) -> tanh -> Linear(8, 1) in float64, is first
// trained a little with Adam on y = sin(2 x0) x1, so that the weights sit
// in a valley rather than at random. Exits 1 if the two eigenvalues differ
// by more than 1e-6 (relative) or the Newton step does not lower the loss.
//
//   curvature [--steps N] [--iters N] [--threads N]
#include <smallgrad.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <vector>

#include "autograd/tools/functional.hpp"  // hvp, hessian (not in smallgrad.hpp)
#include "cli.hpp"

namespace {

using Vec = std::vector<sg::Tensor>;  // one tensor per parameter

struct Net : sg::nn::Module {
  std::shared_ptr<sg::nn::Linear> fc1, fc2;
  Net() {
    fc1 = register_module("fc1", std::make_shared<sg::nn::Linear>(2, 8));
    fc2 = register_module("fc2", std::make_shared<sg::nn::Linear>(8, 1));
  }
  sg::Tensor forward(const sg::Tensor& x) const { return fc2->forward(sg::tanh(fc1->forward(x))); }
};

// Plain vector arithmetic over lists of parameter-shaped tensors (no graph).
double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += sg::kernel::sum(sg::kernel::mul(a[i], b[i])).item<double>();
  return s;
}
Vec axpy(double alpha, const Vec& x, const Vec& y) {  // alpha x + y
  Vec out;
  for (size_t i = 0; i < x.size(); ++i) out.push_back(sg::kernel::add(sg::kernel::affine(x[i], alpha, 0), y[i]));
  return out;
}
Vec scaled(const Vec& x, double alpha) {
  Vec out;
  for (const sg::Tensor& t : x) out.push_back(sg::kernel::affine(t, alpha, 0));
  return out;
}

// The eigenvalues of a symmetric (n, n) matrix, by cyclic Jacobi rotations:
// each rotation zeroes one off-diagonal pair; sweeps until what is left off
// the diagonal is rounding. Enough for the few dozen weights here.
std::vector<double> symmetric_eigenvalues(std::vector<double> a, int64_t n) {
  auto at = [&](int64_t i, int64_t j) -> double& { return a[static_cast<size_t>(i * n + j)]; };
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, total = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) (i == j ? total : off) += at(i, j) * at(i, j);
    if (off <= 1e-30 * (total + off)) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        if (at(p, q) == 0) continue;
        const double theta = (at(q, q) - at(p, p)) / (2 * at(p, q));
        const double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q
          const double kp = at(k, p), kq = at(k, q);
          at(k, p) = c * kp - s * kq, at(k, q) = s * kp + c * kq;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q
          const double pk = at(p, k), qk = at(q, k);
          at(p, k) = c * pk - s * qk, at(q, k) = s * pk + c * qk;
        }
      }
  }
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(at(i, i));
  return out;
}

int body(int64_t steps, int64_t iters) {
  sg::manual_seed(0);
  sg::Generator gen(5);
  const sg::Tensor x = sg::rand({64, 2}, gen, sg::float64, -1, 1);
  std::vector<double> target;
  const std::vector<double> xv = x.to_vector<double>();
  for (size_t i = 0; i < 64; ++i) target.push_back(std::sin(2 * xv[2 * i]) * xv[2 * i + 1]);
  const sg::Tensor y = sg::from_vector(target, {64, 1}, sg::float64);

  Net net;
  net.to(sg::float64);
  const Vec params = net.parameters();
  const auto loss = [&] { return sg::nn::mse_loss(net.forward(x), y); };  // reads the weights where they are
  sg::optim::Adam opt(params, {.lr = 1e-2});
  for (int64_t s = 0; s < steps; ++s) {
    opt.zero_grad();
    sg::backward(loss());
    opt.step();
  }
  net.zero_grad();
  const int64_t n = net.parameter_count();
  std::printf("network: Linear(2, 8) -> tanh -> Linear(8, 1), %lld weights, %lld Adam steps, loss %.6g\n",
              static_cast<long long>(n), static_cast<long long>(steps), loss().item<double>());

  // 1. The dense Hessian and its eigenvalues.
  const sg::Tensor h = sg::hessian(loss, params);
  const std::vector<double> eig = symmetric_eigenvalues(h.to_vector<double>(), n);
  double top = 0, lo = eig[0], hi = eig[0];
  for (double e : eig) {
    if (std::fabs(e) > std::fabs(top)) top = e;
    lo = std::min(lo, e), hi = std::max(hi, e);
  }
  std::printf("dense Hessian (%lld x %lld): eigenvalues from %.6g to %.6g; largest in absolute value %.12g\n",
              static_cast<long long>(n), static_cast<long long>(n), lo, hi, top);

  // Power iteration on hvp: v <- H v / |H v|; the Rayleigh quotient v . H v
  // tends to the eigenvalue of largest absolute value.
  Vec v;
  for (const sg::Tensor& p : params) v.push_back(sg::randn(p.shape(), gen, sg::float64));
  v = scaled(v, 1 / std::sqrt(dot(v, v)));
  double lambda = 0;
  int64_t used = 0;
  for (; used < iters; ++used) {
    const Vec hv = sg::hvp(loss, params, v);
    const double next = dot(v, hv);
    v = scaled(hv, 1 / std::sqrt(dot(hv, hv)));
    const bool settled = std::fabs(next - lambda) <= 1e-13 * std::fabs(next);
    lambda = next;
    if (settled) break;
  }
  const double rel = std::fabs(lambda - top) / std::fabs(top);
  std::printf("power iteration on hvp: %.12g after %lld Hessian-vector products; relative difference %.2e\n",
              lambda, static_cast<long long>(used + 1), rel);

  // 2. One Newton-CG step: solve (H + damping I) p = -g by conjugate
  // gradient on hvp; the damping is raised until no direction of negative
  // curvature is met (the loss is not convex in the weights).
  const Vec g = sg::grad(loss(), params);
  const double before = loss().item<double>(), gnorm = std::sqrt(dot(g, g));
  Vec p;
  double damping = 0;
  int cg_iters = 0;
  for (int attempt = 0; attempt < 30; ++attempt, damping = damping == 0 ? 1e-3 : 10 * damping) {
    p = scaled(g, 0);
    Vec r = scaled(g, -1), d = r;
    double rr = dot(r, r);
    bool negative = false;
    for (cg_iters = 0; cg_iters < 2 * n && std::sqrt(rr) > 1e-10 * gnorm; ++cg_iters) {
      const Vec hd = axpy(damping, d, sg::hvp(loss, params, d));
      const double curvature = dot(d, hd);
      if (curvature <= 0) {
        negative = true;
        break;
      }
      const double alpha = rr / curvature;
      p = axpy(alpha, d, p);
      r = axpy(-alpha, hd, r);
      const double next = dot(r, r);
      d = axpy(next / rr, d, r);
      rr = next;
    }
    if (!negative) break;
  }
  const auto loss_after = [&](const Vec& step) {  // the loss at params + step, the weights put back
    sg::NoGradGuard off;
    for (size_t i = 0; i < params.size(); ++i) {
      sg::Tensor w = params[i];  // a handle: add_ changes the model's weight
      sg::kernel::add_(w, step[i]);
    }
    const double l = loss().item<double>();
    for (size_t i = 0; i < params.size(); ++i) {
      sg::Tensor w = params[i];
      sg::kernel::add_(w, sg::kernel::affine(step[i], -1, 0));
    }
    return l;
  };
  const double newton = loss_after(p);
  const double lr = 0.1, gradient = loss_after(scaled(g, -lr));
  std::printf("Newton-CG step (%d CG iterations, damping %.3g): loss %.6g -> %.6g\n", cg_iters, damping, before, newton);
  std::printf("gradient step (lr %.3g):                      loss %.6g -> %.6g\n", lr, before, gradient);

  bool ok = true;
  if (!(rel <= 1e-6)) std::printf("FAILED: power iteration and the dense Hessian disagree\n"), ok = false;
  if (!(newton < before)) std::printf("FAILED: the Newton-CG step did not lower the loss\n"), ok = false;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{
      "The curvature of a small network's loss over its weights: the Hessian's largest eigenvalue by power\n"
      "iteration on hvp against the dense Hessian's, and a Newton-CG step against a gradient step."};
  int64_t steps = 300, iters = 2000;
  int threads = 0;
  flags.whole("--steps", steps, "Adam steps before the curvature is measured", 0, 1000000);
  flags.whole("--iters", iters, "most power iterations (Hessian-vector products)", 1, 1000000);
  flags.threads(threads);
  return examples::run(flags, argc, argv, [&] {
    examples::apply_threads(threads);
    return body(steps, iters);
  });
}
