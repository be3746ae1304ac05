// autograd/ops/softplus.cpp: values against log(1 + exp(x)) in long double,
// the linear part past the threshold, float64 gradchecks and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/softplus.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using namespace test_util;

TEST_CASE("softplus is log(1 + exp(beta x)) / beta, and x past the threshold", "[autograd][softplus]") {
  const Tensor x = normal({50}, 60) * 8.0;
  for (double beta : {1.0, 0.5, 3.0}) {
    INFO("beta " << beta);
    std::vector<double> want;
    for (double v : x.to_vector<double>()) {
      const long double t = static_cast<long double>(beta) * v;
      want.push_back(t > 20 ? v : static_cast<double>(std::log1p(std::exp(t)) / beta));
    }
    check_values<double>(sg::softplus(x, beta), {50}, want, 1e-14, 1e-300);
    // float32: x itself is rounded by 2^-24, so exp(beta x) moves by |beta x| times that (|beta x| < 80 here).
    check_values<float>(sg::softplus(sg::kernel::to(x, sg::float32), beta), {50}, want, 1e-5, 1e-30);
  }
  // Far out on both sides: no overflow, no NaN; exactly x on the right.
  const Tensor far = sg::from_vector(std::vector<double>{-1000, -40, 0, 25, 1000}, {5}, sg::float64);
  check_values<double>(sg::softplus(far), {5}, {0, std::exp(-40.0), std::log(2.0), 25, 1000}, 1e-15, 1e-300);
  // A threshold of 5 makes x linear from beta x > 5 on, as PyTorch does.
  const Tensor six = sg::from_vector(std::vector<double>{6, 4}, {2}, sg::float64);
  check_values<double>(sg::softplus(six, 1.0, 5.0), {2}, {6, std::log1p(std::exp(4.0))}, 1e-15, 0);
}

TEST_CASE("softplus gradchecks, and its gradient is sigmoid(beta x)", "[autograd][softplus][gradcheck]") {
  for (double beta : {1.0, 2.5})
    for (const Shape& s : {Shape{7}, Shape{3, 4}})
      check_gradient("softplus beta " + std::to_string(beta) + " " + shape_str(s),
                     [beta](const Inputs& in) { return sg::softplus(in[0], beta) * in[1]; },
                     {normal(s, 61) * 3.0, normal(s, 62)});
  Tensor x = sg::from_vector(std::vector<double>{-2, 0, 3, 30}, {4}, sg::float64).set_requires_grad();
  sg::backward(sg::sum(sg::softplus(x)));
  check_values<double>(x.grad(), {4}, {1 / (1 + std::exp(2.0)), 0.5, 1 / (1 + std::exp(-3.0)), 1}, 1e-15, 0);
}

TEST_CASE("softplus names what is wrong", "[autograd][softplus]") {
  REQUIRE_THROWS_WITH(sg::softplus(normal({2}, 1), 0.0), "softplus: beta must be positive and finite, got 0 (x (2))");
  REQUIRE_THROWS_WITH(sg::softplus(normal({2}, 1), 1.0, std::nan("")), "softplus: threshold is NaN (x (2))");
  REQUIRE_THROWS_WITH(sg::softplus(sg::arange(3)), Contains("softplus") && Contains("int64") && Contains("(3)"));
}
