// autograd/ops/arithmetic.cpp: add, sub, mul, div with broadcasting, neg,
// affine and the scalar operators, gradchecked in float64.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

// ---------------------------------------------------------------------------
// arithmetic
// ---------------------------------------------------------------------------

TEST_CASE("add, sub, mul, div gradcheck with broadcasting", "[autograd][gradcheck]") {
  const std::vector<std::pair<Shape, Shape>> pairs = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}},    {{4}, {3, 4}},      {{2, 1, 4}, {3, 1}},
      {{}, {2, 3}},     {{2, 3}, {1, 1}}, {{4, 1}, {1, 5}},   {{2, 3, 1}, {2, 1, 4}}};
  uint64_t seed = 10;
  for (const auto& [sa, sb] : pairs) {
    const std::string shapes = shape_str(sa) + " with " + shape_str(sb);
    const Tensor a = normal(sa, ++seed), b = normal(sb, ++seed);
    Tensor den = positive(sb, ++seed);
    double* d = den.data<double>();
    for (int64_t i = 0; i < den.numel(); i += 2) d[i] = -d[i];  // both signs, away from 0
    check_gradient("add " + shapes, [](const Inputs& in) { return sg::add(in[0], in[1]); }, {a, b});
    check_gradient("sub " + shapes, [](const Inputs& in) { return in[0] - in[1]; }, {a, b});
    check_gradient("mul " + shapes, [](const Inputs& in) { return in[0] * in[1]; }, {a, b});
    check_gradient("div " + shapes, [](const Inputs& in) { return in[0] / in[1]; }, {a, den});
  }
}

TEST_CASE("a broadcast operand's gradient is summed over the broadcast axes", "[autograd][gradcheck]") {
  Tensor a = sg::ones({2, 3}, sg::float64).set_requires_grad();
  Tensor bias = sg::from_vector(std::vector<double>{1, 2, 3}, {3}).set_requires_grad();
  sg::backward(sg::sum((a + bias) * 2.0));
  REQUIRE(bias.grad().to_vector<double>() == std::vector<double>{4, 4, 4});
  REQUIRE(a.grad().to_vector<double>() == std::vector<double>(6, 2.0));
}

TEST_CASE("neg, affine and the scalar operators gradcheck", "[autograd][gradcheck]") {
  for (const Shape& s : {Shape{5}, Shape{2, 3, 4}, Shape{}}) {
    const Tensor x = normal(s, 20 + s.size());
    const std::string at = " " + shape_str(s);
    check_gradient("neg" + at, [](const Inputs& in) { return sg::neg(in[0]); }, {x});
    check_gradient("unary minus" + at, [](const Inputs& in) { return -in[0]; }, {x});
    check_gradient("affine" + at, [](const Inputs& in) { return sg::affine(in[0], 2.5, -1.0); }, {x});
    check_gradient("x + s" + at, [](const Inputs& in) { return in[0] + 2.0; }, {x});
    check_gradient("s + x" + at, [](const Inputs& in) { return 2.0 + in[0]; }, {x});
    check_gradient("x - s" + at, [](const Inputs& in) { return in[0] - 2.0; }, {x});
    check_gradient("s - x" + at, [](const Inputs& in) { return 2.0 - in[0]; }, {x});
    check_gradient("x * s" + at, [](const Inputs& in) { return in[0] * 3.0; }, {x});
    check_gradient("s * x" + at, [](const Inputs& in) { return -3.0 * in[0]; }, {x});
    check_gradient("x / s" + at, [](const Inputs& in) { return in[0] / 4.0; }, {x});
  }
  REQUIRE_THROWS_WITH(normal({2}, 1) / 0.0, Contains("div: division of a tensor of shape (2) by the scalar 0"));
}
