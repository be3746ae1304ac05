// Second order over a model's parameters (autograd/tools/functional.hpp):
// hessian, hvp and jvp of a small network's loss with respect to its
// weights, against central differences of the gradient (and of the output)
// in float64; the parameters' values and .grad left as they were; bad
// calls refused naming the function.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/tools/functional.hpp"
#include "core/kernels.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/module.hpp"
#include "test_util.hpp"

using Catch::Contains;
using Catch::StartsWith;
using sg::Tensor;
using namespace test_util;

namespace {

// Linear(3, 4) -> tanh -> Linear(4, 2): 26 parameters.
struct Net : sg::nn::Module {
  std::shared_ptr<sg::nn::Linear> fc1, fc2;
  Net() {
    fc1 = register_module("fc1", std::make_shared<sg::nn::Linear>(3, 4));
    fc2 = register_module("fc2", std::make_shared<sg::nn::Linear>(4, 2));
  }
  Tensor forward(const Tensor& x) const { return fc2->forward(sg::tanh(fc1->forward(x))); }
};

// The parameters flattened, one value after another.
std::vector<double> flat(const std::vector<Tensor>& ts) {
  std::vector<double> out;
  for (const Tensor& t : ts)
    for (double v : t.to_vector<double>()) out.push_back(v);
  return out;
}

// Adds s * v to the parameters, in place.
void shift(const std::vector<Tensor>& params, const std::vector<Tensor>& v, double s) {
  sg::NoGradGuard off;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];  // a handle to the model's parameter
    sg::kernel::add_(p, sg::kernel::affine(v[i], s, 0));
  }
}

void close(double got, double want, double tol) {
  INFO("got " << got << ", want " << want);
  REQUIRE(std::fabs(got - want) <= tol * (1 + std::fabs(want)));
}

}  // namespace

TEST_CASE("hessian, hvp and jvp over a model's parameters match central differences", "[nn][second_order][functional]") {
  sg::manual_seed(3);
  Net net;
  net.to(sg::float64);
  const Tensor x = sg::kernel::to(normal({5, 3}, 70), sg::float64);
  const Tensor y = sg::kernel::to(normal({5, 2}, 71), sg::float64);
  const std::vector<Tensor> params = net.parameters();
  const auto loss = [&] { return sg::nn::mse_loss(net.forward(x), y); };
  const auto gradient = [&] { return flat(sg::grad(loss(), params)); };
  const std::vector<double> before = flat(params);
  const int64_t n = net.parameter_count();
  REQUIRE(n == 26);

  const Tensor h = sg::hessian(loss, params);
  REQUIRE(h.shape() == sg::Shape{n, n});
  const std::vector<double> hv = h.to_vector<double>();
  // Column j against the central difference of the gradient along e_j.
  const double eps = 1e-6;
  int64_t j = 0;
  for (size_t k = 0; k < params.size(); ++k)
    for (int64_t e = 0; e < params[k].numel(); ++e, ++j) {
      std::vector<Tensor> dir;
      for (size_t q = 0; q < params.size(); ++q) dir.push_back(sg::zeros(params[q].shape(), sg::float64));
      dir[k].data<double>()[e] = 1;
      shift(params, dir, eps);
      const auto gp = gradient();
      shift(params, dir, -2 * eps);
      const auto gm = gradient();
      shift(params, dir, eps);
      for (int64_t i = 0; i < n; ++i) {
        INFO("H[" << i << ", " << j << "]");
        close(hv[static_cast<size_t>(i * n + j)], (gp[static_cast<size_t>(i)] - gm[static_cast<size_t>(i)]) / (2 * eps), 1e-6);
        close(hv[static_cast<size_t>(i * n + j)], hv[static_cast<size_t>(j * n + i)], 1e-12);  // symmetric
      }
    }

  // hvp along a random direction, against the gradient's central difference.
  std::vector<Tensor> v;
  for (size_t q = 0; q < params.size(); ++q) v.push_back(sg::kernel::to(normal(params[q].shape(), 80 + q), sg::float64));
  const auto got = flat(sg::hvp(loss, params, v));
  shift(params, v, eps);
  const auto gp = gradient();
  shift(params, v, -2 * eps);
  const auto gm = gradient();
  shift(params, v, eps);
  for (int64_t i = 0; i < n; ++i)
    close(got[static_cast<size_t>(i)], (gp[static_cast<size_t>(i)] - gm[static_cast<size_t>(i)]) / (2 * eps), 1e-6);

  // jvp of the network's output (5, 2) along v.
  const auto out = [&] { return net.forward(x); };
  const Tensor jv = sg::jvp(out, params, v);
  REQUIRE(jv.shape() == sg::Shape{5, 2});
  std::vector<double> op, om;
  {
    sg::NoGradGuard off;
    shift(params, v, eps);
    op = net.forward(x).to_vector<double>();
    shift(params, v, -2 * eps);
    om = net.forward(x).to_vector<double>();
    shift(params, v, eps);
  }
  const auto jvv = jv.to_vector<double>();
  for (size_t i = 0; i < jvv.size(); ++i) close(jvv[i], (op[i] - om[i]) / (2 * eps), 1e-6);

  // The parameters are as they were (to the shifts' rounding), their .grad untouched.
  const auto after = flat(params);
  for (size_t i = 0; i < after.size(); ++i) close(after[i], before[i], 1e-12);
  for (const Tensor& p : params) REQUIRE_FALSE(p.grad().defined());
}

TEST_CASE("second order over parameters refuses bad calls, naming the function", "[nn][second_order][functional]") {
  Net net;
  net.to(sg::float64);
  const Tensor x = sg::kernel::to(normal({5, 3}, 72), sg::float64);
  const std::vector<Tensor> params = net.parameters();
  std::vector<Tensor> v;
  for (const Tensor& p : params) v.push_back(sg::zeros(p.shape(), sg::float64));
  // hessian of a function that does not return a scalar, both forms.
  REQUIRE_THROWS_WITH(sg::hessian([&] { return net.forward(x); }, params),
                      StartsWith("hessian: the loss must return a scalar, got shape (5, 2)"));
  REQUIRE_THROWS_WITH(sg::hessian([](const Tensor& t) { return sg::tanh(t); }, sg::kernel::to(normal({3}, 73), sg::float64)),
                      StartsWith("hessian: f must return a scalar, got shape (3)"));
  REQUIRE_THROWS_WITH(sg::hvp([&] { return net.forward(x); }, params, v),
                      StartsWith("hvp: the loss must return a scalar, got shape (5, 2)"));
  // A direction of the wrong shape, a parameter that is not a leaf.
  std::vector<Tensor> short_v(v.begin(), v.end() - 1);
  REQUIRE_THROWS_WITH(sg::hvp([&] { return sg::sum(net.forward(x)); }, params, short_v),
                      StartsWith("hvp: 3 directions for 4 parameters"));
  REQUIRE_THROWS_WITH(sg::jvp([&] { return net.forward(x); }, {params[0] * 2.0}, {v[0]}),
                      StartsWith("jvp: parameter 0 of shape (4, 3) is not a leaf that requires grad"));
}
