// autograd/ops/unary.cpp: exp, log, sqrt, tanh, sigmoid, relu, abs, pow,
// gradchecked in float64 on several shapes, and their kinks.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/unary.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

namespace {

// Normal values pushed at least 0.2 away from 0, where relu and abs have kinks.
Tensor away_from_zero(const Shape& shape, uint64_t seed) {
  Tensor t = normal(shape, seed);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] += p[i] < 0 ? -0.2 : 0.2;
  return t;
}

}  // namespace

// ---------------------------------------------------------------------------
// elementwise
// ---------------------------------------------------------------------------

TEST_CASE("elementwise functions gradcheck", "[autograd][gradcheck]") {
  for (const Shape& s : {Shape{7}, Shape{2, 3, 4}}) {
    const std::string at = " " + shape_str(s);
    const Tensor x = normal(s, 30), pos = positive(s, 31), kinked = away_from_zero(s, 32);
    check_gradient("exp" + at, [](const Inputs& in) { return sg::exp(in[0]); }, {x});
    check_gradient("log" + at, [](const Inputs& in) { return sg::log(in[0]); }, {pos});
    check_gradient("sqrt" + at, [](const Inputs& in) { return sg::sqrt(in[0]); }, {pos});
    check_gradient("tanh" + at, [](const Inputs& in) { return sg::tanh(in[0]); }, {x});
    check_gradient("sigmoid" + at, [](const Inputs& in) { return sg::sigmoid(in[0]); }, {x});
    check_gradient("relu" + at, [](const Inputs& in) { return sg::relu(in[0]); }, {kinked});
    check_gradient("abs" + at, [](const Inputs& in) { return sg::abs(in[0]); }, {kinked});
    for (double p : {2.0, 3.0, 1.0}) check_gradient("pow " + std::to_string(p) + at,
                                           [p](const Inputs& in) { return sg::pow(in[0], p); }, {x});
    for (double p : {0.5, -1.5, 2.5}) check_gradient("pow " + std::to_string(p) + at,
                                            [p](const Inputs& in) { return sg::pow(in[0], p); }, {pos});
  }
}

TEST_CASE("relu and abs have the documented gradient at their kinks", "[autograd][gradcheck]") {
  Tensor x = sg::from_vector(std::vector<double>{-1, 0, 2}, {3}).set_requires_grad();
  sg::backward(sg::sum(sg::relu(x) + sg::abs(x)));
  // relu: 1 where x > 0; abs: sign(x), 0 at 0
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{-1, 0, 2});
}

TEST_CASE("pow with exponent 0 has gradient 0 everywhere, also at x = 0", "[autograd]") {
  Tensor x = sg::from_vector(std::vector<double>{-1, 0, 2}, {3}).set_requires_grad();
  sg::backward(sg::sum(sg::pow(x, 0.0)));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 0});
}
