// Derivatives of derivatives: what backward with create_graph makes possible.
//
//   1. tanh and its first four derivatives by repeated grad() (the autodiff
//      cookbook's figure), against their closed forms;
//   2. Newton's method with exact Hessian-vector products (conjugate
//      gradient, double backward) against gradient descent and Adam on an
//      ill-conditioned logistic regression: iterations and time to one loss;
//   3. a WGAN-GP critic: a tiny MLP trained with the gradient penalty
//      (||d f / d x|| - 1)^2, whose loss is itself a gradient, against the
//      same critic trained without it.
//
// It writes settings.md, the tables (*.md), the figures (*.svg) and
// report.html into --out, and prints the key numbers.
//
//   higher_order [--out DIR] [--steps N] [--iters N] [--threads N] [--seed N]
#include <smallgrad.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "autograd/tools/functional.hpp"  // hvp (not in smallgrad.hpp)
#include "cli.hpp"
#include "study/plot.hpp"
#include "study/report.hpp"

namespace {

namespace plot = sg::study::plot;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string fmt(double v, const char* f = "%.3g") {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// ---- 1. tanh and its derivatives ----
// With t = tanh x and s = 1 - t^2 = tanh' (so s' = -2 t s):
//   tanh'    = s
//   tanh''   = -2 t s
//   tanh'''  = -2 (s s + t (-2 t s)) = -2 s (s - 2 t^2)       = -2 (1 - t^2)(1 - 3 t^2)
//   tanh'''' = -2 d/dx (1 - 4 t^2 + 3 t^4) = -2 (-8 t + 12 t^3) s = 8 t (1 - t^2)(2 - 3 t^2)
// (checked against central differences of the order below: they agree to 1e-9).
double closed_form(int order, double x) {
  const double t = std::tanh(x), s = 1 - t * t;
  switch (order) {
    case 0: return t;
    case 1: return s;
    case 2: return -2 * t * s;
    case 3: return -2 * s * (1 - 3 * t * t);
    default: return 8 * t * s * (2 - 3 * t * t);
  }
}

// Returns the largest difference over the orders; writes the table and the figure.
double tanh_derivatives(examples::Outputs& out) {
  const int64_t n = 241;  // x = -3, -2.975, ..., 3
  sg::Tensor x = sg::arange(0, static_cast<double>(n), 1, sg::float64) * (6.0 / (n - 1)) - 3.0;
  x = x.detach().set_requires_grad();
  // Each order is grad() of the sum of the previous one: tanh acts elementwise,
  // so d/dx_i sum_j f(x_j) = f'(x_i). create_graph keeps each result
  // differentiable, so the next grad() can go through it.
  std::vector<sg::Tensor> d = {sg::tanh(x)};
  for (int k = 1; k <= 4; ++k) d.push_back(sg::grad(sg::sum(d.back()), {x}, {.create_graph = true})[0]);

  const std::vector<double> xs = x.to_vector<double>();
  const char* names[] = {"tanh", "tanh'", "tanh''", "tanh'''", "tanh''''"};
  const char* forms[] = {"t", "1 - t^2", "-2 t (1 - t^2)", "-2 (1 - t^2)(1 - 3 t^2)", "8 t (1 - t^2)(2 - 3 t^2)"};
  std::ostringstream md;
  md << "tanh and its derivatives by repeated grad() with create_graph, on " << n
     << " points of [-3, 3] (float64), against the closed forms (t = tanh x)\n\n"
     << "| order | function | closed form | max abs difference |\n|---|---|---|---|\n";
  std::vector<plot::Series> curves;
  double worst = 0;
  std::cout << "1. tanh and its derivatives by repeated grad(), " << n << " points of [-3, 3]:\n";
  for (int k = 0; k <= 4; ++k) {
    const std::vector<double> ys = d[static_cast<size_t>(k)].to_vector<double>();
    double diff = 0;
    for (size_t i = 0; i < ys.size(); ++i) {
      const double e = std::fabs(ys[i] - closed_form(k, xs[i]));
      diff = std::isnan(e) ? INFINITY : std::max(diff, e);  // a NaN is a failure, not a 0
    }
    worst = std::max(worst, diff);
    std::cout << "   order " << k << " (" << names[k] << "): max |grad - closed form| = " << fmt(diff, "%.2e")
              << "\n";
    md << "| " << k << " | " << names[k] << " | " << forms[k] << " | " << fmt(diff, "%.2e") << " |\n";
    curves.push_back({names[k], xs, ys, {}, {}});
  }
  out.write("derivatives.md", md.str());
  plot::LineOptions lo;
  lo.title = "tanh and its first four derivatives, by repeated grad()";
  lo.xlabel = "x";
  lo.ylabel = "value";
  lo.width = 720, lo.height = 340;
  out.write("tanh_derivatives.svg", plot::line_svg(curves, lo));
  std::cout << "   largest derivative error: " << fmt(worst, "%.2e") << "\n";
  return worst;
}

// ---- 2. Newton-CG against gradient descent and Adam ----
// L2-regularised logistic regression, labels y in {-1, +1}:
//   loss(w) = mean_i softplus(-y_i x_i . w) + lambda / 2 |w|^2.   X: (n, d), w: (d, 1)
// Its features have scales from 0.03 to 3, so the Hessian is ill-conditioned:
// gradient descent's step is bounded by the largest curvature and crawls
// along the smallest.
struct Problem {
  sg::Tensor X, y;  // (n, d), (n, 1) of +-1
  double lambda = 1e-3;
  sg::Tensor loss(const sg::Tensor& w) const {
    return sg::mean(sg::softplus(-(y * sg::matmul(X, w)))) + sg::sum(w * w) * (lambda / 2);
  }
};

Problem make_problem(uint64_t seed, int64_t n, int64_t dim) {
  sg::Generator gen(seed);
  std::vector<double> scale(static_cast<size_t>(dim));
  for (int64_t j = 0; j < dim; ++j) scale[static_cast<size_t>(j)] = std::pow(10.0, -1.5 + 2.0 * j / (dim - 1));
  const sg::Tensor X = sg::randn({n, dim}, gen, sg::float64) * sg::from_vector(scale, {1, dim});
  const sg::Tensor w_true = sg::randn({dim, 1}, gen, sg::float64);
  const sg::Tensor noise = sg::randn({n, 1}, gen, sg::float64, 0, 0.5);
  std::vector<double> labels = (sg::matmul(X, w_true) + noise).to_vector<double>();
  for (double& v : labels) v = v > 0 ? 1.0 : -1.0;
  return {X, sg::from_vector(labels, {n, 1}), 1e-3};
}

struct Trace {
  std::string name;
  std::vector<double> loss, ms;  // after 0, 1, 2, ... iterations
  int64_t reached = -1;          // first iteration at the target loss
  double reached_ms = 0;
  int64_t grads = 0, hvps = 0;   // up to `reached` (or the end)
};

double dot(const sg::Tensor& a, const sg::Tensor& b) { return sg::kernel::sum(sg::kernel::mul(a, b)).item<double>(); }
sg::Tensor leaf(const sg::Tensor& w) { return sg::clone(w).set_requires_grad(); }

// Records one iteration's loss and time; true when the target is reached.
bool note(Trace& t, double loss, Clock::time_point t0, double target) {
  t.loss.push_back(loss);
  t.ms.push_back(1000 * seconds_since(t0));
  if (t.reached < 0 && loss <= target) t.reached = static_cast<int64_t>(t.loss.size()) - 1, t.reached_ms = t.ms.back();
  return t.reached >= 0;
}

// Newton's method, the step p solving H p = -g by `cg_iters` of conjugate
// gradient. Each H v is a double backward: g = grad(loss, w) recorded once
// per step (create_graph), then H v = grad(g . v, w) for every v, one
// backward pass through the recorded gradient. Backtracking keeps every step
// a descent (Armijo).
Trace newton_cg(const Problem& P, int64_t steps, int cg_iters, double target) {
  Trace t{"Newton-CG (" + std::to_string(cg_iters) + " CG iterations)", {}, {}};
  const auto t0 = Clock::now();
  sg::Tensor w = sg::zeros({P.X.size(1), 1}, sg::float64);
  for (int64_t it = 0; it <= steps; ++it) {
    sg::Tensor wl = leaf(w);
    sg::Tensor loss = P.loss(wl);
    if (note(t, loss.item<double>(), t0, target) || it == steps) break;
    const sg::Tensor g = sg::grad(loss, {wl}, {.create_graph = true})[0];  // has a history: dg/dw = H
    ++t.grads;
    const sg::Tensor gd = g.detach();
    auto hv = [&](const sg::Tensor& v) {
      ++t.hvps;
      return sg::grad(sg::sum(g * v), {wl}, {}, {.retain_graph = true})[0];
    };
    // Conjugate gradient on H p = -g from p = 0.
    sg::Tensor p = sg::zeros_like(gd), r = sg::kernel::affine(gd, -1, 0), q = r;
    double rr = dot(r, r);
    for (int k = 0; k < cg_iters && rr > 1e-30; ++k) {
      const sg::Tensor Hq = hv(q);
      const double alpha = rr / dot(q, Hq);
      p = sg::kernel::add(p, sg::kernel::affine(q, alpha, 0));
      r = sg::kernel::add(r, sg::kernel::affine(Hq, -alpha, 0));
      const double rr_new = dot(r, r);
      q = sg::kernel::add(r, sg::kernel::affine(q, rr_new / rr, 0));
      rr = rr_new;
    }
    sg::NoGradGuard no_grad;
    const double f0 = t.loss.back(), slope = dot(gd, p);
    auto moved = [&](double step) { return sg::kernel::add(w, sg::kernel::affine(p, step, 0)); };
    double step = 1;
    while (step > 1e-8 && P.loss(moved(step)).item<double>() > f0 + 1e-4 * step * slope) step /= 2;
    w = moved(step);
  }
  return t;
}

// Gradient descent with step 1/L, L the largest curvature (smooth and safe),
// or Adam through the library's optimizer.
Trace first_order(const Problem& P, int64_t iters, double target, double L, bool adam, double adam_lr) {
  Trace t{adam ? "Adam (lr " + fmt(adam_lr) + ")" : "gradient descent (step 1/L)", {}, {}};
  const auto t0 = Clock::now();
  sg::Tensor w = sg::zeros({P.X.size(1), 1}, sg::float64).set_requires_grad();
  std::unique_ptr<sg::optim::Adam> opt;
  if (adam) opt = std::make_unique<sg::optim::Adam>(std::vector<sg::Tensor>{w}, sg::optim::AdamOptions{.lr = adam_lr});
  for (int64_t it = 0; it <= iters; ++it) {
    examples::check_stop();
    w.set_grad(sg::Tensor());
    sg::Tensor loss = P.loss(w);
    if (note(t, loss.item<double>(), t0, target) || it == iters) break;
    sg::backward(loss);
    ++t.grads;
    if (adam) {
      opt->step();
    } else {
      sg::kernel::add_(w, sg::kernel::affine(w.grad(), -1 / L, 0));
    }
  }
  return t;
}

std::string reached(const Trace& t) {
  return t.reached >= 0 ? std::to_string(t.reached) : "> " + std::to_string(t.loss.size() - 1);
}

// Returns true when Newton-CG reached the target in fewer iterations than gradient descent.
bool newton_vs_gd(examples::Outputs& out, uint64_t seed, int64_t iters) {
  const int64_t n = 1000, dim = 50;
  const Problem P = make_problem(seed, n, dim);
  sg::VectorFn f = [&P](const std::vector<sg::Tensor>& in) { return P.loss(in[0]); };

  // L = the largest eigenvalue of the Hessian at w = 0 (the largest anywhere:
  // sigmoid' <= 1/4 is largest there), by power iteration on sg::hvp.
  const sg::Tensor w0 = sg::zeros({dim, 1}, sg::float64);
  sg::Generator gen(seed + 1);
  sg::Tensor v = sg::randn({dim, 1}, gen, sg::float64);
  double L = 0;
  for (int k = 0; k < 100; ++k) {
    v = sg::kernel::affine(v, 1 / std::sqrt(dot(v, v)), 0);
    const sg::Tensor Hv = sg::hvp(f, {w0}, {v})[0];
    L = dot(v, Hv);
    v = Hv;
  }
  // The target: the best loss (a long Newton run) plus 1e-6.
  const double best = newton_cg(P, 40, 50, -INFINITY).loss.back();
  const double target = best + 1e-6;
  std::cout << "\n2. logistic regression, " << n << " points x " << dim << " features (scales 0.03..3), lambda "
            << P.lambda << ": largest curvature L = " << fmt(L, "%.4g") << " (power iteration on hvp), best loss "
            << fmt(best, "%.10f") << ", target " << fmt(target, "%.10f") << "\n";

  std::vector<Trace> runs = {newton_cg(P, 100, 10, target), first_order(P, iters, target, L, false, 0),
                             first_order(P, iters, target, L, true, 0.05)};
  std::ostringstream md;
  md << "Time to the same loss (best + 1e-6) on logistic regression, " << n << " x " << dim
     << ", float64, from w = 0\n\n"
     << "| method | iterations | gradients | Hessian-vector products | time (ms) | loss at the end |\n"
     << "|---|---|---|---|---|---|\n";
  for (const Trace& t : runs) {
    const std::string ms = t.reached >= 0 ? fmt(t.reached_ms, "%.1f") : "> " + fmt(t.ms.back(), "%.1f");
    md << "| " << t.name << " | " << reached(t) << " | " << t.grads << " | " << t.hvps << " | " << ms << " | "
       << fmt(t.loss.back(), "%.10f") << " |\n";
    std::cout << "   " << t.name << ": " << reached(t) << " iterations, " << ms << " ms, " << t.grads << " gradients, "
              << t.hvps << " Hessian-vector products\n";
  }
  out.write("newton.md", md.str());

  // loss - best on a log axis, against iterations and against time; points at
  // or below best (nothing left to plot on a log axis) end the line.
  std::vector<plot::Series> by_iter, by_time;
  for (const Trace& t : runs) {
    plot::Series a{t.name, {}, {}, {}, {}}, b = a;
    for (size_t i = 0; i < t.loss.size() && t.loss[i] - best > 1e-13; ++i) {
      a.x.push_back(static_cast<double>(i + 1)), a.y.push_back(t.loss[i] - best);
      b.x.push_back(std::max(t.ms[i], 1e-3)), b.y.push_back(t.loss[i] - best);
    }
    by_iter.push_back(a), by_time.push_back(b);
  }
  plot::LineOptions lo;
  lo.title = "Logistic regression: loss - best loss against iterations";
  lo.xlabel = "iteration + 1";
  lo.ylabel = "loss - best";
  lo.log_x = lo.log_y = true;
  lo.width = 720, lo.height = 320;
  out.write("curve_newton_iterations.svg", plot::line_svg(by_iter, lo));
  lo.title = "Logistic regression: loss - best loss against wall time";
  lo.xlabel = "time (ms)";
  out.write("curve_newton_time.svg", plot::line_svg(by_time, lo));

  const Trace &nt = runs[0], &gd = runs[1];
  // Fewer than gradient descent's count, or than its cap when it did not get there.
  const int64_t gd_iters = gd.reached >= 0 ? gd.reached : static_cast<int64_t>(gd.loss.size()) - 1;
  const bool ok = nt.reached >= 0 && nt.reached < gd_iters;
  if (nt.reached < 0)
    std::cout << "   Newton-CG did not reach the target loss in " << nt.loss.size() - 1 << " iterations\n";
  else
    std::cout << "   Newton-CG reached the target loss in " << nt.reached << " iterations ("
              << fmt(nt.reached_ms, "%.1f") << " ms), gradient descent in " << reached(gd) << " ("
              << (gd.reached >= 0 ? fmt(gd.reached_ms, "%.1f") : "> " + fmt(gd.ms.back(), "%.1f")) << " ms)\n";
  return ok;
}

// ---- 3. a gradient penalty ----
// A WGAN critic f: R^2 -> R separates real points (a ring of 8 Gaussians)
// from fake ones (one Gaussian at the origin) by maximising
// E f(real) - E f(fake). Unconstrained, it grows without bound; WGAN-GP
// (Gulrajani et al., 2017) keeps it 1-Lipschitz by penalising
//   lambda (||d f / d x (x_hat)|| - 1)^2 at points x_hat between real and fake,
// a loss that is itself a gradient: its backward goes through a backward.
struct Critic : sg::nn::Module {
  Critic() {
    l1 = register_module("l1", std::make_shared<sg::nn::Linear>(2, 64));
    l2 = register_module("l2", std::make_shared<sg::nn::Linear>(64, 64));
    l3 = register_module("l3", std::make_shared<sg::nn::Linear>(64, 1));
  }
  sg::Tensor forward(const sg::Tensor& x) const {  // (B, 2) -> (B, 1)
    return l3->forward(sg::tanh(l2->forward(sg::tanh(l1->forward(x)))));
  }
  std::shared_ptr<sg::nn::Linear> l1, l2, l3;
};

struct Batch {
  sg::Tensor real, fake, x_hat;  // (B, 2) each; x_hat requires grad
};

Batch sample(sg::Generator& gen, int64_t B) {
  std::vector<double> real(static_cast<size_t>(2 * B));
  const std::vector<double> k = sg::rand({B}, gen, sg::float64, 0, 8).to_vector<double>();
  const std::vector<double> z = sg::randn({B, 2}, gen, sg::float64, 0, 0.1).to_vector<double>();
  for (size_t i = 0; i < static_cast<size_t>(B); ++i) {
    const double a = std::floor(k[i]) * 2 * M_PI / 8;
    real[2 * i] = 2 * std::cos(a) + z[2 * i], real[2 * i + 1] = 2 * std::sin(a) + z[2 * i + 1];
  }
  Batch b;
  b.real = sg::from_vector(real, {B, 2});
  b.fake = sg::randn({B, 2}, gen, sg::float64, 0, 0.5);
  const sg::Tensor e = sg::rand({B, 1}, gen, sg::float64);
  b.x_hat = (b.real * e + b.fake * (1.0 - e)).detach().set_requires_grad();
  return b;
}

// ||d f / d x|| at each row of x_hat, (B); with create_graph, differentiable in the critic's weights.
sg::Tensor grad_norm(const Critic& f, const sg::Tensor& x_hat, bool create_graph) {
  const sg::Tensor g = sg::grad(sg::sum(f.forward(x_hat)), {x_hat}, {.create_graph = create_graph})[0];
  return sg::sqrt(sg::sum(g * g, 1) + 1e-12);
}

struct CriticRun {
  std::vector<double> loss, norm;  // per step: the critic's loss, mean ||df/dx|| at x_hat
  double final_norm = 0, final_distance = 0, wasserstein = 0;
};

CriticRun train_critic(uint64_t seed, int64_t steps, double lambda) {
  sg::manual_seed(seed);
  Critic f;
  f.to(sg::float64);
  sg::optim::Adam opt(f.parameters(), {.lr = 1e-3, .beta1 = 0.5, .beta2 = 0.9});  // WGAN-GP's
  sg::Generator gen(seed + 2);
  CriticRun r;
  const int64_t B = 256;
  for (int64_t step = 0; step < steps; ++step) {
    examples::check_stop();
    const Batch b = sample(gen, B);
    opt.zero_grad();
    const sg::Tensor norm = grad_norm(f, b.x_hat, lambda > 0);
    sg::Tensor loss = sg::mean(f.forward(b.fake)) - sg::mean(f.forward(b.real));
    if (lambda > 0) loss = loss + sg::mean(sg::pow(norm - 1.0, 2)) * lambda;
    sg::backward(loss);
    opt.step();
    r.loss.push_back(loss.item<double>());
    r.norm.push_back(sg::mean(norm).item<double>());
  }
  // On fresh samples: the gradient norms and the critic's estimate of the distance.
  const Batch b = sample(gen, 4096);
  const std::vector<double> norms = grad_norm(f, b.x_hat, false).to_vector<double>();
  for (double v : norms) r.final_norm += v / norms.size(), r.final_distance += std::fabs(v - 1) / norms.size();
  sg::NoGradGuard no_grad;
  r.wasserstein = (sg::mean(f.forward(b.real)) - sg::mean(f.forward(b.fake))).item<double>();
  return r;
}

// Returns the critics' mean | ||df/dx|| - 1 | at the end: with the penalty, without it.
std::pair<double, double> gradient_penalty(examples::Outputs& out, uint64_t seed, int64_t steps) {
  const auto t0 = Clock::now();
  const CriticRun gp = train_critic(seed, steps, 10), plain = train_critic(seed, steps, 0);
  std::ostringstream md;
  md << "A WGAN critic (MLP 2-64-64-1, tanh, float64) trained " << steps
     << " steps (Adam, batch 256), on 4096 fresh points x_hat between real and fake at the end\n\n"
     << "| critic | mean norm of df/dx | mean abs(norm - 1) | E f(real) - E f(fake) |\n|---|---|---|---|\n";
  for (const auto& [name, r] : {std::pair{"gradient penalty (lambda 10)", &gp}, std::pair{"no penalty", &plain}})
    md << "| " << name << " | " << fmt(r->final_norm, "%.3f") << " | " << fmt(r->final_distance, "%.3f") << " | "
       << fmt(r->wasserstein, "%.3f") << " |\n";
  out.write("gradient_penalty.md", md.str());
  std::vector<double> xs(static_cast<size_t>(steps));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i);
  plot::LineOptions lo;
  lo.title = "WGAN critic: mean norm of df/dx at x_hat while training";
  lo.xlabel = "step";
  lo.ylabel = "mean ||df/dx||";
  lo.width = 720, lo.height = 300;
  out.write("curve_gradient_norm.svg",
            plot::line_svg({{"gradient penalty (lambda 10)", xs, gp.norm, {}, {}},
                            {"no penalty", xs, plain.norm, {}, {}}},
                           lo));
  lo.title = "WGAN-GP critic: loss (E f(fake) - E f(real) + penalty)";
  lo.ylabel = "critic loss";
  lo.legend = false;
  out.write("curve_gradient_penalty.svg", plot::line_svg({{"critic loss", xs, gp.loss, {}, {}}}, lo));
  std::cout << "\n3. WGAN critic, " << steps << " steps (" << fmt(seconds_since(t0), "%.2f") << " s for both):\n"
            << "   with the gradient penalty: mean ||df/dx|| = " << fmt(gp.final_norm, "%.3f")
            << ", distance to 1 = " << fmt(gp.final_distance, "%.3f") << ", E f(real) - E f(fake) = "
            << fmt(gp.wasserstein, "%.3f") << "\n"
            << "   without it:                mean ||df/dx|| = " << fmt(plain.final_norm, "%.3f")
            << ", distance to 1 = " << fmt(plain.final_distance, "%.3f") << ", E f(real) - E f(fake) = "
            << fmt(plain.wasserstein, "%.3f") << "\n";
  return {gp.final_distance, plain.final_distance};
}

int study(const std::string& out_dir, int64_t steps, int64_t iters, uint64_t seed) {
  examples::Outputs out(out_dir, "--out");  // checked before any work
  for (const char* f : {"settings.md", "derivatives.md", "tanh_derivatives.svg", "newton.md",
                        "curve_newton_iterations.svg", "curve_newton_time.svg", "gradient_penalty.md",
                        "curve_gradient_norm.svg", "curve_gradient_penalty.svg"})
    out.expect(f);
  // settings.md first: the report leaves out files older than it.
  out.write("settings.md", "| setting | value |\n|---|---|\n| --steps (critic) | " + std::to_string(steps) +
                               " |\n| --iters (first-order cap) | " + std::to_string(iters) + " |\n| --seed | " +
                               std::to_string(seed) + " |\n| threads | " + std::to_string(sg::num_threads()) + " |\n");
  const double worst = tanh_derivatives(out);
  const bool newton_ok = newton_vs_gd(out, seed, iters);
  const auto [distance, distance_plain] = gradient_penalty(out, seed, steps);
  out.commit();
  const std::string report = sg::study::report::write_report(out.dir(), "higher_order: gradients of gradients");
  std::cout << "\nreport: " << report << "\n";
  bool ok = true;
  if (!(worst < 1e-10))
    std::cout << "FAILED: a derivative differs from its closed form by " << worst << "\n", ok = false;
  if (!newton_ok)
    std::cout << "FAILED: Newton-CG did not reach the target in fewer iterations than gradient descent\n", ok = false;
  if (!(distance < 0.25 && distance < distance_plain))
    std::cout << "FAILED: the penalised critic's gradient norm is " << distance << " from 1 (without the penalty "
              << distance_plain << ")\n", ok = false;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{"Gradients of gradients: tanh's derivatives by repeated grad(), Newton-CG with exact\n"
                        "Hessian-vector products against gradient descent, and a WGAN-GP gradient penalty."};
  std::string out = "out/higher_order";
  int64_t steps = 300, iters = 20000, seed = 0;
  int threads = 0;
  flags.folder("--out", out, "output folder for the tables, figures and report.html");
  flags.whole("--steps", steps, "training steps of each WGAN critic", 1, 1000000);
  flags.whole("--iters", iters, "most iterations of gradient descent and Adam", 1, 10000000);
  flags.whole("--seed", seed, "seed of the data and the critics' weights", 0, 1000000000);
  flags.threads(threads);
  return examples::run(flags, argc, argv, [&] {
    examples::apply_threads(threads);
    return study(out, steps, iters, static_cast<uint64_t>(seed));
  });
}
