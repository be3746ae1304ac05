// autograd/ops/arithmetic.cpp: add, sub, mul, div with broadcasting, neg,
// affine and the scalar operators, gradchecked in float64.
#include <catch2/catch.hpp>

#include <limits>

#include <bit>
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

// ---------------------------------------------------------------------------
// int64 arithmetic (lengths, ids): stays int64, as in PyTorch
// ---------------------------------------------------------------------------

TEST_CASE("int64 tensors add, subtract, multiply and negate to int64", "[autograd][int64]") {
  const Tensor lens = sg::from_vector(std::vector<double>{3, 0, 7}, {3}, sg::int64);
  const Tensor one = sg::from_vector(std::vector<double>{1}, {1}, sg::int64);
  auto check = [](const Tensor& t, const std::vector<int64_t>& want) {
    REQUIRE(t.dtype() == sg::int64);
    REQUIRE_FALSE(t.requires_grad());
    CHECK(t.to_vector<int64_t>() == want);
  };
  check(lens + lens, {6, 0, 14});
  check(lens * lens, {9, 0, 49});
  check(lens - one, {2, -1, 6});  // broadcast
  check(sg::sub(lens, lens), {0, 0, 0});
  check(-lens, {-3, 0, -7});
  check(sg::neg(lens), {-3, 0, -7});
  check(lens - 1, {2, -1, 6});  // valid_lens - 1
  check(lens + 1.0, {4, 1, 8});
  check(2 + lens, {5, 2, 9});
  check(10 - lens, {7, 10, 3});
  check(lens * 3, {9, 0, 21});
  check(-2 * lens, {-6, 0, -14});
  check(sg::affine(lens, 2, 1), {7, 1, 15});
  // Beyond 2^53, where a trip through double would round.
  Tensor big = sg::full({1}, 0, sg::int64);
  big.data<int64_t>()[0] = (int64_t{1} << 60) + 1;
  check(big + 2, {(int64_t{1} << 60) + 3});
  check(big - big, {0});
}

TEST_CASE("int64 arithmetic that cannot stay int64 throws naming the op", "[autograd][int64]") {
  const Tensor lens = sg::from_vector(std::vector<double>{3, 0, 7}, {3}, sg::int64);
  REQUIRE_THROWS_WITH(lens + 0.5, Contains("add: an int64 tensor of shape (3) and the scalar 0.5") &&
                                      Contains("not a whole number") && Contains("to(float32)") &&
                                      !Contains("affine"));
  REQUIRE_THROWS_WITH(lens - 1.5, Contains("sub: an int64 tensor of shape (3) and the scalar 1.5"));
  REQUIRE_THROWS_WITH(2.5 - lens, Contains("sub: an int64 tensor of shape (3) and the scalar 2.5"));
  REQUIRE_THROWS_WITH(lens * 0.5, Contains("mul: an int64 tensor of shape (3) and the scalar 0.5"));
  REQUIRE_THROWS_WITH(lens / 2, Contains("div: an int64 tensor of shape (3) divided by the scalar 2") &&
                                    Contains("true division"));
  REQUIRE_THROWS_WITH(lens / lens, Contains("div: an int64 tensor of shape (3) divided by an int64 tensor of shape (3)"));
  REQUIRE_THROWS_WITH(sg::affine(lens, 0.5, 0), Contains("affine: an int64 tensor of shape (3) takes whole alpha and beta"));
  REQUIRE_THROWS_WITH(lens + std::numeric_limits<double>::infinity(), Contains("add: an int64 tensor"));
  REQUIRE_THROWS_WITH(lens - std::nan(""), Contains("sub: an int64 tensor"));
  // Mixed dtypes are still refused, naming the op the user called.
  REQUIRE_THROWS_WITH(lens - sg::ones({3}), Contains("sub"));
}

TEST_CASE("a float32 bias gradient over 2^20 rows is within a few ulps", "[autograd][accuracy]") {
  // y = x + b with b broadcast over the rows and dL/dy = 0.1: db is a sum of
  // 2^20 copies of 0.1f (one float32 running total was 1e-3 off).
  const int64_t rows = int64_t{1} << 20;
  const Tensor x = sg::zeros({rows, 8});
  Tensor b = sg::zeros({8}).set_requires_grad(true);
  sg::backward(sg::add(x, b), sg::full({rows, 8}, 0.1f));
  const float want = static_cast<float>(static_cast<double>(rows) * static_cast<double>(0.1f));
  for (float v : b.grad().to_vector<float>()) {
    INFO("got " << v << ", want " << want);
    CHECK(std::abs(std::bit_cast<int32_t>(v) - std::bit_cast<int32_t>(want)) <= 4);
  }
}
