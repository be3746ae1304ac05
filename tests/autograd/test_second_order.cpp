// Derivatives of derivatives (autograd/engine.hpp: create_graph): repeated
// grad() against closed forms up to the fourth derivative, backward() with
// create_graph leaving a differentiable .grad, jvp/hvp/hessian
// (autograd/tools/functional.hpp) against central differences, and the
// engine's safety on the graphs backward builds: an in-place change between
// the first and second backward is caught, a 100,000-op second-order graph
// is freed without recursion, anomaly mode names the op in a second backward.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/softmax.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/tools/functional.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "autograd/tools/gradgradcheck.hpp"
#include "core/kernels.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

namespace {
// The n-th derivatives of f at the points x (float64, elementwise f), by
// repeated grad() with create_graph; d[0] is f(x).
std::vector<std::vector<double>> derivatives(const std::function<Tensor(const Tensor&)>& f,
                                             const std::vector<double>& x, int n) {
  const Tensor xs = make(x, {static_cast<int64_t>(x.size())}).set_requires_grad();
  std::vector<std::vector<double>> out;
  Tensor d = f(xs);
  out.push_back(d.to_vector<double>());
  for (int k = 1; k <= n; ++k) {
    d = sg::grad(sg::sum(d), {xs}, Tensor(), {.create_graph = true})[0];
    out.push_back(d.to_vector<double>());
  }
  return out;
}

void near(double got, double want) {
  INFO("got " << got << ", want " << want);
  REQUIRE(std::fabs(got - want) <= 1e-12 * (1 + std::fabs(want)));
}
}  // namespace

TEST_CASE("tanh's first four derivatives by repeated grad match their closed forms", "[autograd][second_order][a9]") {
  const std::vector<double> x = {-2.0, -0.7, 0.0, 0.3, 1.5};
  const auto d = derivatives([](const Tensor& t) { return sg::tanh(t); }, x, 4);
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = std::tanh(x[i]), s = 1 - t * t;
    near(d[1][i], s);
    near(d[2][i], -2 * t * s);
    near(d[3][i], -2 * s * (1 - 3 * t * t));
    near(d[4][i], 8 * t * s * (2 - 3 * t * t));
  }
}

TEST_CASE("x exp(x) and x^3 to the fourth derivative", "[autograd][second_order]") {
  const std::vector<double> x = {-1.5, 0.2, 1.1};
  const auto d = derivatives([](const Tensor& t) { return t * sg::exp(t); }, x, 4);
  for (size_t i = 0; i < x.size(); ++i)
    for (int k = 1; k <= 4; ++k) near(d[static_cast<size_t>(k)][i], std::exp(x[i]) * (x[i] + k));  // e^x (x + k)
  const Tensor xs = make(x, {3}).set_requires_grad();
  const Tensor d1 = sg::grad(sg::sum(sg::pow(xs, 3)), {xs}, Tensor(), {.create_graph = true})[0];
  const Tensor d2 = sg::grad(sg::sum(d1), {xs}, Tensor(), {.create_graph = true})[0];
  const Tensor d3 = sg::grad(sg::sum(d2), {xs}, Tensor(), {.create_graph = true})[0];
  for (size_t i = 0; i < x.size(); ++i) {
    near(d1.to_vector<double>()[i], 3 * x[i] * x[i]);
    near(d2.to_vector<double>()[i], 6 * x[i]);
    near(d3.to_vector<double>()[i], 6);
  }
  REQUIRE_FALSE(d3.requires_grad());  // a constant: the fourth derivative is 0, nothing to differentiate
}

TEST_CASE("backward with create_graph leaves a .grad with history; a gradient penalty differentiates it",
          "[autograd][second_order]") {
  Tensor x = make(std::vector<double>{0.5, -1.0, 2.0}, {3}).set_requires_grad();
  sg::backward(sg::sum(sg::pow(x, 3)), {.create_graph = true});
  const Tensor g = x.grad();  // 3 x^2
  REQUIRE(g.requires_grad());
  x.set_grad(Tensor());  // breaks the cycle leaf -> .grad -> graph -> leaf
  const Tensor penalty = sg::sum(g * g);  // 9 x^4
  sg::backward(penalty);
  const auto got = x.grad().to_vector<double>();
  for (size_t i = 0; i < 3; ++i) {
    const double xi = x.to_vector<double>()[i];
    near(got[i], 36 * xi * xi * xi);
  }
  // A first-order backward is unchanged: no history on .grad.
  const Tensor y = make(std::vector<double>{1.0, 2.0}, {2}).set_requires_grad();
  sg::backward(sg::sum(y * y));
  REQUIRE_FALSE(y.grad().requires_grad());
}

TEST_CASE("jvp, hvp and hessian match central differences", "[autograd][second_order][functional][a9]") {
  const Tensor a = normal({3}, 50), b = normal({2, 3}, 51);
  const sg::VectorFn f = [](const Inputs& in) { return sg::tanh(sg::sum(in[0] * in[1], 1, false)) * sg::sum(in[0] * in[0]); };
  const std::vector<Tensor> x = {sg::kernel::to(a, sg::float64), sg::kernel::to(b, sg::float64)};
  const std::vector<Tensor> v = {sg::kernel::to(normal({3}, 52), sg::float64), sg::kernel::to(normal({2, 3}, 53), sg::float64)};
  const double eps = 1e-6;
  auto shifted = [&](double s) {
    std::vector<Tensor> out;
    for (size_t i = 0; i < x.size(); ++i) out.push_back(sg::kernel::add(x[i], sg::kernel::affine(v[i], s, 0)));
    return out;
  };
  {
    sg::NoGradGuard no_grad;
    const Tensor numeric = sg::kernel::affine(sg::kernel::sub(f(shifted(eps)), f(shifted(-eps))), 1 / (2 * eps), 0);
    const auto want = numeric.to_vector<double>(), got = sg::jvp(f, x, v).to_vector<double>();
    REQUIRE(got.size() == 2);
    for (size_t k = 0; k < got.size(); ++k) REQUIRE(std::fabs(got[k] - want[k]) < 1e-7);
  }
  // hvp of the scalar sum(f): the central difference of its gradient along v.
  const sg::VectorFn s = [&](const Inputs& in) { return sg::sum(f(in)); };
  const auto hv = sg::hvp(s, x, v);
  const auto gp = sg::vjp(s, shifted(eps), sg::ones({}, sg::float64)), gm = sg::vjp(s, shifted(-eps), sg::ones({}, sg::float64));
  for (size_t i = 0; i < x.size(); ++i) {
    const auto got = hv[i].to_vector<double>(), p = gp[i].to_vector<double>(), m = gm[i].to_vector<double>();
    for (size_t k = 0; k < got.size(); ++k) REQUIRE(std::fabs(got[k] - (p[k] - m[k]) / (2 * eps)) < 1e-7);
  }
  // hessian of sum(t^3) + sum(t)^2: 6 t on the diagonal, plus 2 everywhere.
  const std::vector<double> t = {1.0, -2.0, 0.5};
  const auto h = sg::hessian([](const Tensor& u) { return sg::sum(sg::pow(u, 3)) + sg::sum(u) * sg::sum(u); },
                             make(t, {3})).to_vector<double>();
  REQUIRE(h.size() == 9);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) near(h[i * 3 + j], 2 + (i == j ? 6 * t[i] : 0.0));
}

TEST_CASE("an in-place change between the first and the second backward is caught", "[autograd][second_order][versions]") {
  const Tensor x = make(std::vector<double>{0.5, 1.5}, {2}).set_requires_grad();
  Tensor z = x * 2.0;
  const Tensor g = sg::grad(sg::sum(z * z * z), {x}, Tensor(), {.create_graph = true})[0];  // 6 z^2, read from z
  sg::kernel::add_(z, sg::ones({2}, sg::float64));  // the second backward reads z
  REQUIRE_THROWS_WITH(sg::grad(sg::sum(g), {x}), Contains("'mul' saved") && Contains("modified by an in-place operation"));
}

TEST_CASE("ops that save only their output still refuse an input changed in place before a create_graph backward",
          "[autograd][second_order][versions][a9]") {
  // exp, sqrt, tanh, sigmoid and the softmaxes save their output (their
  // first-order backward reads nothing else, so changing the input after
  // them is fine there, as in PyTorch); their composed form reads the input.
  const Tensor targets = sg::from_vector(std::vector<int64_t>{2, 0}, {2});
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
      {"exp", [](const Tensor& x) { return sg::exp(x); }},
      {"sqrt", [](const Tensor& x) { return sg::sqrt(x); }},
      {"tanh", [](const Tensor& x) { return sg::tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sg::sigmoid(x); }},
      {"softmax", [](const Tensor& x) { return sg::softmax(x); }},
      {"log_softmax", [](const Tensor& x) { return sg::log_softmax(x); }},
      {"masked_softmax", [](const Tensor& x) { return sg::masked_softmax(sg::reshape(x, {1, 2, 3}), Tensor()); }},
      {"cross_entropy", [&](const Tensor& x) { return sg::cross_entropy(x, targets); }},
  };
  for (const auto& [name, op] : ops) {
    INFO(name);
    const Tensor leaf = make(std::vector<double>{0.5, 1.5, 2.0, 0.25, 1.0, 3.0}, {2, 3}).set_requires_grad();
    const auto weights = make(std::vector<double>{1, -2, 3, 0.5, -1, 2}, {2, 3});
    {
      Tensor x = leaf * 1.0;  // a non-leaf, so that it may change in place
      const Tensor y = op(x);
      const Tensor loss = y.dim() ? sg::sum(y * weights) : y;
      sg::kernel::add_(x, sg::ones({2, 3}, sg::float64));
      REQUIRE_THROWS_WITH(sg::grad(loss, {leaf}, Tensor(), {.create_graph = true}),
                          Contains("'" + std::string(name) + "' reads") && Contains("modified by an in-place operation") &&
                              Contains("version 1") && Contains("version 0"));
    }
    {  // first order reads only the output: the same change is fine there
      Tensor x = leaf * 1.0;
      const Tensor y = op(x);
      const Tensor loss = y.dim() ? sg::sum(y * weights) : y;
      sg::kernel::add_(x, sg::ones({2, 3}, sg::float64));
      REQUIRE_NOTHROW(sg::grad(loss, {leaf}));
    }
  }
}

TEST_CASE("div refuses a numerator changed in place before a create_graph backward that reads it",
          "[autograd][second_order][versions]") {
  // div saves b and its output: its first-order dL/db = -g q / b needs no a,
  // but the composed form -g a / b^2 (q has no history) reads a again.
  const Tensor a_leaf = make(std::vector<double>{0.5, 1.5, -2.0, 0.25, 1.0, 3.0}, {2, 3}).set_requires_grad();
  const Tensor b = make(std::vector<double>{2.0, -4.0, 0.5}, {3}).set_requires_grad();
  const auto weights = make(std::vector<double>{1, -2, 3, 0.5, -1, 2}, {2, 3});
  {
    Tensor a = a_leaf * 1.0;
    const Tensor loss = sg::sum(sg::div(a, b) * weights);
    sg::kernel::add_(a, sg::ones({2, 3}, sg::float64));
    REQUIRE_THROWS_WITH(sg::grad(loss, {a_leaf, b}, Tensor(), {.create_graph = true}),
                        Contains("'div' reads its numerator") && Contains("modified by an in-place operation"));
  }
  {  // first order: dL/db from the saved output, so the same change is fine and the gradient is the unchanged one
    Tensor a = a_leaf * 1.0;
    const Tensor loss = sg::sum(sg::div(a, b) * weights);
    sg::kernel::add_(a, sg::ones({2, 3}, sg::float64));
    const Tensor db = sg::grad(loss, {b})[0];
    const std::vector<double> av{0.5, 1.5, -2.0, 0.25, 1.0, 3.0}, bv{2.0, -4.0, 0.5}, wv{1, -2, 3, 0.5, -1, 2};
    std::vector<double> want(3, 0.0);
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) want[j] -= wv[i * 3 + j] * av[i * 3 + j] / (bv[j] * bv[j]);
    check_values<double>(db, {3}, want, 1e-14, 0);
  }
}

TEST_CASE("a 100,000-op second-order graph computes and is freed without recursion", "[autograd][second_order][teardown]") {
  const int64_t live = sg::Node::live_count();
  constexpr int kChain = 100'000;
  {
    const Tensor x = sg::ones({1}, sg::float64).set_requires_grad();
    Tensor y = x;
    for (int i = 0; i < kChain; ++i) y = y * x;  // x^(n+1)
    const Tensor d1 = sg::grad(y, {x}, Tensor(), {.create_graph = true})[0];  // (n+1) x^n
    REQUIRE(d1.item<double>() == kChain + 1);
    REQUIRE(sg::Node::live_count() > live + 2 * kChain);  // both graphs are alive here
    const Tensor d2 = sg::grad(d1, {x})[0];  // (n+1) n x^(n-1), exact in float64
    REQUIRE(d2.item<double>() == static_cast<double>(kChain + 1) * kChain);
  }
  REQUIRE(sg::Node::live_count() == live);
}

TEST_CASE("anomaly mode finds a NaN or an infinity born in the second backward", "[autograd][second_order][anomaly]") {
  // x^1.5 at 0: the first derivative 1.5 x^0.5 is finite, the second, 0.75 x^-0.5, is not.
  const Tensor x = make(std::vector<double>{0.0, 1.0}, {2}).set_requires_grad();
  const Tensor d1 = sg::grad(sg::sum(sg::pow(x, 1.5)), {x}, Tensor(), {.create_graph = true})[0];
  REQUIRE(d1.to_vector<double>() == std::vector<double>{0.0, 1.5});
  sg::AnomalyModeGuard anomaly;
  REQUIRE_THROWS_WITH(sg::grad(sg::sum(d1), {x}), Contains("anomaly mode") && Contains("'pow'") && Contains("inf"));
  REQUIRE_FALSE(x.grad().defined());
}

namespace {
// y = x^2 as the record() documentation's graph-free form: kernels only.
Tensor graph_free_square(const Tensor& x) {
  return sg::record("graph_free_square", sg::kernel::mul(x, x), {x}, [x](const Tensor& g) -> sg::Grads {
    return {sg::kernel::mul(g, sg::kernel::affine(x, 2, 0))};
  });
}
// The same op composed from sg:: ops: twice differentiable.
Tensor composed_square(const Tensor& x) {
  return sg::record("composed_square", sg::kernel::mul(x, x), {x}, [x](const Tensor& g) -> sg::Grads {
    return {sg::mul(g, sg::affine(x, 2, 0))};
  });
}
}  // namespace

TEST_CASE("a graph-free custom op works to first order and refuses create_graph, naming itself",
          "[autograd][second_order]") {
  const std::vector<double> xv = {1, -2, 4};
  const Tensor x = make(xv, {3}).set_requires_grad();
  // f = sum(x * x^2): f' = 3x^2, H = diag(6x).
  const auto f_free = [](const Inputs& in) { return sg::sum(in[0] * graph_free_square(in[0])); };
  const auto f_composed = [](const Inputs& in) { return sg::sum(in[0] * composed_square(in[0])); };
  const auto first = sg::grad(f_free({x}), {x})[0].to_vector<double>();
  for (size_t i = 0; i < 3; ++i) near(first[i], 3 * xv[i] * xv[i]);
  REQUIRE(sg::gradcheck(f_free, {x.detach()}));
  // The refusal: one line naming the op and the fix; the message of what fn throws.
  const auto refusal = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const sg::Error& e) {
      return std::string(e.what());
    }
    return std::string("nothing thrown");
  };
  const auto require_refused = [](const std::string& message, const std::string& start) {
    INFO(message);
    REQUIRE(message.rfind(start, 0) == 0);
    REQUIRE(message.find("(create_graph): the backward of 'graph_free_square' is graph-free") != std::string::npos);
    REQUIRE(message.find("twice differentiable") != std::string::npos);
    REQUIRE(message.find("docs/adding-a-layer.md") != std::string::npos);
    REQUIRE(message.find('\n') == std::string::npos);
  };
  require_refused(refusal([&] { sg::grad(f_free({x}), {x}, {.create_graph = true}); }), "grad (create_graph)");
  require_refused(refusal([&] { sg::backward(f_free({x}), {.create_graph = true}); }), "backward (create_graph)");
  REQUIRE_FALSE(x.grad().defined());  // the refused pass changed no .grad
  const Inputs v = {make(std::vector<double>{1, 1, 1}, {3})};
  require_refused(refusal([&] { sg::hvp(f_free, {x.detach()}, v); }), "grad (create_graph)");
  require_refused(refusal([&] { sg::gradgradcheck(f_free, {x.detach()}); }), "grad (create_graph)");
  // Composed, the same op is right to second order.
  REQUIRE(sg::gradgradcheck([](const Inputs& in) { return composed_square(in[0]); }, {normal({3, 4}, 60)},
                            {.name = "composed_square"}));
  const auto hv = sg::hvp(f_composed, {x.detach()}, v)[0].to_vector<double>();
  for (size_t i = 0; i < 3; ++i) near(hv[i], 6 * xv[i]);
}

TEST_CASE("backwards that return g itself or call sg:: ops that record nothing are not refused",
          "[autograd][second_order]") {
  // An identity op whose backward hands g on, and relu, whose composed form
  // is a product with a constant mask (recording nothing when g has no history).
  const auto pass = [](const Tensor& x) {
    return sg::record("pass", sg::kernel::affine(x, 1, 0), {x}, {}, [](const Tensor& g) -> sg::Grads { return {g}; });
  };
  const std::vector<double> xv = {0.5, -1.5, 2.0};
  const Tensor x = make(xv, {3});
  const Inputs v = {make(std::vector<double>{1, 2, 3}, {3})};
  const auto hv = sg::hvp([&](const Inputs& in) { return sg::sum(sg::pow(pass(in[0]), 3)); }, {x}, v)[0].to_vector<double>();
  for (size_t i = 0; i < 3; ++i) near(hv[i], 6 * xv[i] * (i + 1.0));
  const auto hr = sg::hvp([](const Inputs& in) { return sg::sum(sg::relu(in[0])); }, {x}, v)[0].to_vector<double>();
  for (double h : hr) REQUIRE(h == 0.0);
}

TEST_CASE("grad of an intermediate to second order", "[autograd][second_order]") {
  const std::vector<double> xv = {0.3, -1.2, 2.0}, wv = {0.5, 4, -1};
  const Tensor x = make(xv, {3}).set_requires_grad();
  const Tensor w = make(wv, {3});
  const Tensor h = sg::tanh(x);
  const Tensor y = sg::sum(h * h * h) + sg::sum(h * w);
  // dy/dh = 3h^2 + w, with a history in h (and through h in x).
  const Tensor gh = sg::grad(y, {h}, {.create_graph = true})[0];
  REQUIRE(gh.requires_grad());
  const auto d_h = sg::grad(sg::sum(gh), {h}, Tensor(), true)[0].to_vector<double>();  // 6h
  const auto d_x = sg::grad(sg::sum(gh), {x})[0].to_vector<double>();                  // 6h (1 - h^2)
  const auto ghv = gh.to_vector<double>();
  for (size_t i = 0; i < 3; ++i) {
    const double t = std::tanh(xv[i]);
    near(ghv[i], 3 * t * t + wv[i]);
    near(d_h[i], 6 * t);
    near(d_x[i], 6 * t * (1 - t * t));
  }
  // Below h sits a graph-free op: a create_graph pass that stops at h never runs it.
  const Tensor x2 = make(xv, {3}).set_requires_grad();
  const Tensor h2 = graph_free_square(x2) * 1.0;
  const Tensor g2 = sg::grad(sg::sum(h2 * h2), {h2}, {.create_graph = true})[0];  // 2 h2
  const auto d2 = sg::grad(sg::sum(g2 * g2), {h2})[0].to_vector<double>();          // 8 h2
  for (size_t i = 0; i < 3; ++i) near(d2[i], 8 * xv[i] * xv[i]);
}
