// autograd/ops/gelu.cpp: both of PyTorch's forms against formulas written
// here, and float64 gradchecks.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/node.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/gelu.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

namespace {

// Phi(v), the standard normal CDF, by Simpson's rule on the density from 0
// (no erf: independent of the op's own formula).
double normal_cdf(double v) {
  const int n = 2000;  // even
  const double h = v / n;
  auto pdf = [](double t) { return std::exp(-0.5 * t * t) / std::sqrt(2 * M_PI); };
  double area = pdf(0) + pdf(v);
  for (int i = 1; i < n; ++i) area += (i % 2 ? 4 : 2) * pdf(i * h);
  return 0.5 + area * h / 3;
}

}  // namespace

TEST_CASE("gelu's default is PyTorch's exact form, x * Phi(x)", "[autograd][gelu]") {
  // Known values of x * Phi(x): Phi(1) = 0.8413447460685429, Phi(2) = 0.9772498680518208.
  const Tensor known = sg::from_vector(std::vector<double>{0, 1, -1, 2}, {4}, sg::float64);
  check_values<double>(sg::gelu(known), {4}, {0, 0.8413447460685429, -0.15865525393145707, 1.9544997361036416},
                       1e-15, 1e-16);
  const Tensor x = normal({40}, 33) * 3.0;
  const auto xv = x.to_vector<double>();
  std::vector<double> want;
  for (double v : xv) want.push_back(v * normal_cdf(v));
  check_values<double>(sg::gelu(x), {40}, want, 1e-12, 1e-13);
  check_values<double>(sg::gelu(x, "none"), {40}, want, 1e-12, 1e-13);
  // float32 the same to a float's rounding.
  check_values<float>(sg::gelu(sg::kernel::to(x, sg::float32)), {40}, want, 1e-6, 1e-6);
}

TEST_CASE("gelu(x, \"tanh\") is the tanh approximation", "[autograd][gelu]") {
  const Tensor x = normal({40}, 34) * 3.0;
  std::vector<double> want;
  for (double v : x.to_vector<double>())
    want.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  check_values<double>(sg::gelu(x, "tanh"), {40}, want, 1e-13, 1e-14);
}

TEST_CASE("the two gelu forms differ by a few 1e-4, as PyTorch's do", "[autograd][gelu]") {
  const Tensor x = sg::arange(-6, 6, 0.001, sg::float64);
  const auto exact = sg::gelu(x).to_vector<double>(), approx = sg::gelu(x, "tanh").to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < exact.size(); ++i) worst = std::max(worst, std::fabs(exact[i] - approx[i]));
  CHECK(worst > 4e-4);
  CHECK(worst < 5e-4);
}

TEST_CASE("gelu gradchecks in both forms", "[autograd][gelu][gradcheck]") {
  for (const char* form : {"none", "tanh"})
    for (const Shape& s : {Shape{7}, Shape{2, 3, 4}})
      check_gradient(std::string("gelu ") + form + " " + shape_str(s),
                     [form](const Inputs& in) { return sg::gelu(in[0], form) * in[1]; },
                     {normal(s, 35) * 2.0, normal(s, 36)});
}

TEST_CASE("gelu names what is wrong", "[autograd][gelu]") {
  REQUIRE_THROWS_WITH(sg::gelu(normal({2}, 1), "erf"),
                      "gelu: approximate must be \"none\" (exact, erf) or \"tanh\", got \"erf\"");
  REQUIRE_THROWS_WITH(sg::gelu(sg::arange(3)), Contains("gelu") && Contains("int64") && Contains("(3)"));
}
