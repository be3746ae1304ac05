// Every differentiable op gradchecked in float64 on several shapes, including
// broadcasting and masking cases, plus forward values of the composite ops
// against naive loops. The default gradcheck tolerances (atol 1e-6, rtol
// 1e-5) catch a gradient off by a factor of 2 or transposed: the tests at the
// top feed gradcheck such deliberately wrong backwards and expect failure.
#include <catch2/catch.hpp>

#include <limits>

#include <smallgrad.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using test_util::normal;

namespace {


// Values in [0.5, 2): safe for log, sqrt, fractional powers and division.
Tensor positive(const Shape& shape, uint64_t seed) {
  sg::Generator gen(seed);
  return sg::rand(shape, gen, sg::float64, 0.5, 2.0);
}

// Normal values pushed at least 0.2 away from 0, where relu and abs have kinks.
Tensor away_from_zero(const Shape& shape, uint64_t seed) {
  Tensor t = normal(shape, seed);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] += p[i] < 0 ? -0.2 : 0.2;
  return t;
}

Tensor ids_tensor(std::vector<int64_t> v, const Shape& shape) { return sg::from_vector(v, shape); }

std::string shape_str(const Shape& s) { return sg::detail::cat(s); }

// Runs gradcheck with the default (tight) tolerances and requires it to pass
// on every element of every floating input.
void check(const std::string& name, const sg::GradcheckFn& fn, const Inputs& inputs,
           sg::GradcheckOptions options = {}) {
  options.name = name;
  const sg::GradcheckResult r = sg::gradcheck(fn, inputs, options);
  INFO(name);
  REQUIRE(r);
  int64_t expected = 0;
  for (const Tensor& t : inputs)
    if (sg::is_floating(t.dtype())) expected += std::min(t.numel(), options.max_elements);
  REQUIRE(r.checked == expected);
}

// Naive softmax of one row, in double.
std::vector<double> softmax_row(const std::vector<double>& z) {
  double m = z[0];
  for (double v : z) m = std::max(m, v);
  double total = 0;
  std::vector<double> e(z.size());
  for (size_t j = 0; j < z.size(); ++j) total += e[j] = std::exp(z[j] - m);
  for (double& v : e) v /= total;
  return e;
}

}  // namespace

// ---------------------------------------------------------------------------
// gradcheck itself catches wrong backwards
// ---------------------------------------------------------------------------

TEST_CASE("gradcheck fails a backward that is off by a factor of 2", "[autograd][gradcheck]") {
  // y = 3x, with a backward that returns 6g.
  auto times_three = [](const Inputs& in) {
    const Tensor& x = in[0];
    return sg::record("times_three_wrong", sg::kernel::affine(x, 3.0, 0.0), {x},
                      [](const Tensor& g) -> Grads { return {sg::kernel::affine(g, 6.0, 0.0)}; });
  };
  sg::GradcheckOptions opt;
  opt.name = "times_three_wrong";
  const sg::GradcheckResult r = sg::gradcheck(times_three, {normal({2, 3}, 1)}, opt);
  REQUIRE_FALSE(r);
  REQUIRE(r.failed == 6);
  REQUIRE(r.mismatches.size() == 5);  // max_reported
  const sg::GradcheckMismatch& m = r.mismatches[0];
  REQUIRE(m.input == 0);
  REQUIRE(m.index == 0);
  REQUIRE(m.coords == Shape{0, 0});
  REQUIRE(m.analytic == Approx(2 * m.numeric).epsilon(1e-6));
  const std::string report = r.report();
  CHECK_THAT(report, Contains("gradcheck failed for 'times_three_wrong'") &&
                         Contains("6 of 6 elements differ"));
  CHECK_THAT(report, Contains("input 0 (2, 3), element 0 (0, 0): analytic ") &&
                         Contains("numeric ") && Contains("error "));
  CHECK_THAT(report, Contains("... and 1 more"));
  // The same op with the right backward passes.
  auto right = [](const Inputs& in) {
    const Tensor& x = in[0];
    return sg::record("times_three", sg::kernel::affine(x, 3.0, 0.0), {x},
                      [](const Tensor& g) -> Grads { return {sg::kernel::affine(g, 3.0, 0.0)}; });
  };
  check("times_three", right, {normal({2, 3}, 1)});
}

TEST_CASE("gradcheck fails a transposed gradient on a square input", "[autograd][gradcheck]") {
  // y = x * c elementwise with a fixed, non-symmetric c. The right gradient
  // is g * c; this backward returns its transpose, which has the right shape
  // (the input is square), so only the values can tell.
  const Tensor c = normal({3, 3}, 2);
  auto fn = [c](const Inputs& in) {
    const Tensor& x = in[0];
    return sg::record("transposed_grad", sg::kernel::mul(x, c), {x}, [c](const Tensor& g) -> Grads {
      return {sg::kernel::transpose(sg::kernel::mul(g, c), 0, 1)};
    });
  };
  sg::GradcheckOptions opt;
  opt.name = "transposed_grad";
  const sg::GradcheckResult r = sg::gradcheck(fn, {normal({3, 3}, 3)}, opt);
  REQUIRE_FALSE(r);
  REQUIRE(r.failed == 6);  // every off-diagonal element; the diagonal is right
  for (const auto& m : r.mismatches) REQUIRE(m.coords[0] != m.coords[1]);
  const auto& first = r.mismatches[0];
  REQUIRE(first.index == 1);
  REQUIRE(first.coords == Shape{0, 1});
  CHECK_THAT(r.report(), Contains("gradcheck failed for 'transposed_grad'") &&
                             Contains("input 0 (3, 3), element 1 (0, 1): analytic "));
  // And a transposed product: y = x c with dX = g c^T, returned as (g c^T)^T.
  auto mm = [c](const Inputs& in) {
    const Tensor& x = in[0];
    return sg::record("matmul_transposed_grad", sg::kernel::matmul(x, c), {x},
                      [c](const Tensor& g) -> Grads {
                        return {sg::kernel::transpose(sg::kernel::matmul(g, c, false, true), 0, 1)};
                      });
  };
  REQUIRE_FALSE(sg::gradcheck(mm, {normal({3, 3}, 4)}));
}

TEST_CASE("gradcheck reports which input is wrong and samples big inputs", "[autograd][gradcheck]") {
  // Right gradient for a, half of it for b.
  auto fn = [](const Inputs& in) {
    const Tensor &a = in[0], &b = in[1];
    return sg::record("half_b", sg::kernel::mul(a, b), {a, b}, [a, b](const Tensor& g) -> Grads {
      return {sg::kernel::mul(g, b), sg::kernel::affine(sg::kernel::mul(g, a), 0.5, 0.0)};
    });
  };
  const sg::GradcheckResult r = sg::gradcheck(fn, {normal({4}, 5), normal({4}, 6)});
  REQUIRE_FALSE(r);
  REQUIRE(r.failed == 4);
  for (const auto& m : r.mismatches) REQUIRE(m.input == 1);
  CHECK_THAT(r.report(), Contains("input 1 (4), element 0 (0)"));

  sg::GradcheckOptions opt;
  opt.max_elements = 150;
  const sg::GradcheckResult big = sg::gradcheck(
      [](const Inputs& in) { return sg::matmul(in[0], in[1]); }, {normal({20, 30}, 7), normal({30, 10}, 8)},
      opt);
  REQUIRE(big);
  REQUIRE(big.checked == 300);
}

TEST_CASE("gradcheck refuses outputs it cannot check", "[autograd][gradcheck]") {
  REQUIRE_THROWS_WITH(sg::gradcheck([](const Inputs& in) { return sg::kernel::to(in[0], sg::float32); },
                                    {normal({2}, 1)}),
                      Contains("must compute in float64"));
  REQUIRE_THROWS_WITH(sg::gradcheck([](const Inputs&) { return sg::ones({2}, sg::float64); }, {normal({2}, 1)}),
                      Contains("does not depend on any input"));
}

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
    check("add " + shapes, [](const Inputs& in) { return sg::add(in[0], in[1]); }, {a, b});
    check("sub " + shapes, [](const Inputs& in) { return in[0] - in[1]; }, {a, b});
    check("mul " + shapes, [](const Inputs& in) { return in[0] * in[1]; }, {a, b});
    check("div " + shapes, [](const Inputs& in) { return in[0] / in[1]; }, {a, den});
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
    check("neg" + at, [](const Inputs& in) { return sg::neg(in[0]); }, {x});
    check("unary minus" + at, [](const Inputs& in) { return -in[0]; }, {x});
    check("affine" + at, [](const Inputs& in) { return sg::affine(in[0], 2.5, -1.0); }, {x});
    check("x + s" + at, [](const Inputs& in) { return in[0] + 2.0; }, {x});
    check("s + x" + at, [](const Inputs& in) { return 2.0 + in[0]; }, {x});
    check("x - s" + at, [](const Inputs& in) { return in[0] - 2.0; }, {x});
    check("s - x" + at, [](const Inputs& in) { return 2.0 - in[0]; }, {x});
    check("x * s" + at, [](const Inputs& in) { return in[0] * 3.0; }, {x});
    check("s * x" + at, [](const Inputs& in) { return -3.0 * in[0]; }, {x});
    check("x / s" + at, [](const Inputs& in) { return in[0] / 4.0; }, {x});
  }
  REQUIRE_THROWS_WITH(normal({2}, 1) / 0.0, Contains("div: division of a tensor of shape (2) by the scalar 0"));
}

// ---------------------------------------------------------------------------
// elementwise
// ---------------------------------------------------------------------------

TEST_CASE("elementwise functions gradcheck", "[autograd][gradcheck]") {
  for (const Shape& s : {Shape{7}, Shape{2, 3, 4}}) {
    const std::string at = " " + shape_str(s);
    const Tensor x = normal(s, 30), pos = positive(s, 31), kinked = away_from_zero(s, 32);
    check("exp" + at, [](const Inputs& in) { return sg::exp(in[0]); }, {x});
    check("log" + at, [](const Inputs& in) { return sg::log(in[0]); }, {pos});
    check("sqrt" + at, [](const Inputs& in) { return sg::sqrt(in[0]); }, {pos});
    check("tanh" + at, [](const Inputs& in) { return sg::tanh(in[0]); }, {x});
    check("sigmoid" + at, [](const Inputs& in) { return sg::sigmoid(in[0]); }, {x});
    check("relu" + at, [](const Inputs& in) { return sg::relu(in[0]); }, {kinked});
    check("abs" + at, [](const Inputs& in) { return sg::abs(in[0]); }, {kinked});
    check("gelu" + at, [](const Inputs& in) { return sg::gelu(in[0]); }, {x * 2.0});
    for (double p : {2.0, 3.0, 1.0}) check("pow " + std::to_string(p) + at,
                                           [p](const Inputs& in) { return sg::pow(in[0], p); }, {x});
    for (double p : {0.5, -1.5, 2.5}) check("pow " + std::to_string(p) + at,
                                            [p](const Inputs& in) { return sg::pow(in[0], p); }, {pos});
  }
}

TEST_CASE("relu and abs have the documented gradient at their kinks", "[autograd][gradcheck]") {
  Tensor x = sg::from_vector(std::vector<double>{-1, 0, 2}, {3}).set_requires_grad();
  sg::backward(sg::sum(sg::relu(x) + sg::abs(x)));
  // relu: 1 where x > 0; abs: sign(x), 0 at 0
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{-1, 0, 2});
}

TEST_CASE("gelu is the tanh approximation", "[autograd]") {
  const Tensor x = normal({9}, 33) * 3.0;
  const auto y = sg::gelu(x).to_vector<double>();
  const auto xv = x.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    const double v = xv[i];
    const double expected = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    REQUIRE(y[i] == Approx(expected).margin(1e-12));
  }
}

// ---------------------------------------------------------------------------
// reductions
// ---------------------------------------------------------------------------

TEST_CASE("sum, mean and max gradcheck along an axis and over everything", "[autograd][gradcheck]") {
  for (const Shape& s : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}}) {
    const std::string at = " " + shape_str(s);
    const Tensor x = normal(s, 40 + s.size());  // distinct values: no ties for max
    check("sum" + at, [](const Inputs& in) { return sg::sum(in[0]); }, {x});
    check("mean" + at, [](const Inputs& in) { return sg::mean(in[0]); }, {x});
    check("max" + at, [](const Inputs& in) { return sg::max(in[0]); }, {x});
    for (int64_t axis = -1; axis < static_cast<int64_t>(s.size()); ++axis)
      for (bool keepdim : {false, true}) {
        const std::string how = at + " axis " + std::to_string(axis) + (keepdim ? " keepdim" : "");
        check("sum" + how, [axis, keepdim](const Inputs& in) { return sg::sum(in[0], axis, keepdim); }, {x});
        check("mean" + how, [axis, keepdim](const Inputs& in) { return sg::mean(in[0], axis, keepdim); }, {x});
        check("max" + how, [axis, keepdim](const Inputs& in) { return sg::max(in[0], axis, keepdim); }, {x});
      }
  }
}

TEST_CASE("max sends the gradient to the first maximum only", "[autograd]") {
  Tensor x = sg::from_vector(std::vector<double>{1, 3, 3, 5, 5, 0}, {2, 3}).set_requires_grad();
  sg::backward(sg::sum(sg::max(x, 1)) + sg::max(x));
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 2, 0, 0});
}

// ---------------------------------------------------------------------------
// shape ops
// ---------------------------------------------------------------------------

TEST_CASE("reshape, permute, transpose, slice and concat gradcheck", "[autograd][gradcheck]") {
  const Tensor x = normal({2, 3, 4}, 50);
  check("reshape (6, 4)", [](const Inputs& in) { return sg::reshape(in[0], {6, 4}); }, {x});
  check("reshape (4, -1)", [](const Inputs& in) { return sg::reshape(in[0], {4, -1}) * 2.0; }, {x});
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {-1, 0, 1}})
    check("permute " + shape_str(dims), [dims](const Inputs& in) { return sg::permute(in[0], dims); }, {x});
  check("transpose 0 2", [](const Inputs& in) { return sg::transpose(in[0], 0, 2); }, {x});
  check("transpose -1 -2", [](const Inputs& in) { return sg::transpose(in[0], -1, -2); }, {x});
  check("transpose 2-D", [](const Inputs& in) { return sg::transpose(in[0], 0, 1); }, {normal({3, 5}, 51)});

  const Tensor rows = normal({4, 3}, 52);
  check("slice axis 0 (a view)", [](const Inputs& in) { return sg::slice(in[0], 0, 1, 3); }, {rows});
  check("slice axis 1 (a copy)", [](const Inputs& in) { return sg::slice(in[0], 1, 1, 3); }, {x});
  check("slice axis -1 from 0", [](const Inputs& in) { return sg::slice(in[0], -1, 0, 2); }, {x});
  check("slice to the end", [](const Inputs& in) { return sg::slice(in[0], 2, 1, 4); }, {x});
  check("slice everything", [](const Inputs& in) { return sg::slice(in[0], 1, 0, 3); }, {x});
  // Two slices of one tensor: each element's gradient from the slice(s) holding it.
  check("overlapping slices", [](const Inputs& in) {
    return sg::slice(in[0], 0, 0, 3) * sg::slice(in[0], 0, 1, 4);
  }, {rows});

  const Tensor a = normal({2, 3, 4}, 53), b = normal({2, 1, 4}, 54), c = normal({2, 2, 4}, 55);
  check("concat axis 1", [](const Inputs& in) { return sg::concat({in[0], in[1], in[2]}, 1); }, {a, b, c});
  check("concat axis 0", [](const Inputs& in) { return sg::concat({in[0], in[1]}, 0); },
        {normal({1, 3}, 56), normal({3, 3}, 57)});
  check("concat axis -1", [](const Inputs& in) { return sg::concat({in[0], in[1]}, -1); },
        {normal({2, 3, 2}, 58), normal({2, 3, 5}, 59)});
  check("concat with itself", [](const Inputs& in) { return sg::concat({in[0], in[0] * 2.0}, 0); },
        {normal({2, 3}, 60)});
}

TEST_CASE("concat gives no gradient to a constant input", "[autograd]") {
  Tensor a = sg::ones({2}, sg::float64).set_requires_grad();
  Tensor k = sg::ones({3}, sg::float64);
  sg::backward(sg::sum(sg::concat({k, a, k}, 0) * 2.0));
  REQUIRE(a.grad().to_vector<double>() == std::vector<double>{2, 2});
  REQUIRE_FALSE(k.grad().defined());
}

// ---------------------------------------------------------------------------
// embedding
// ---------------------------------------------------------------------------

TEST_CASE("embedding gradchecks and scatter-adds repeated ids", "[autograd][gradcheck]") {
  const Tensor ids = ids_tensor({0, 2, 2, 4, 1, 2, 0, 0}, {2, 4});
  check("embedding (2, 4) ids", [](const Inputs& in) { return sg::embedding(in[0], in[1]); },
        {normal({5, 3}, 70), ids});
  check("embedding (8) ids", [](const Inputs& in) { return sg::embedding(in[0], in[1]); },
        {normal({6, 2}, 71), sg::reshape(ids, {8})});
  check("embedding then a nonlinearity", [](const Inputs& in) { return sg::tanh(sg::embedding(in[0], in[1])) * in[2]; },
        {normal({5, 3}, 72), ids, normal({3}, 73)});

  Tensor w = normal({5, 3}, 74).set_requires_grad();
  sg::backward(sg::sum(sg::embedding(w, ids)));
  // Row r's gradient is (number of times r appears) in every column.
  const std::vector<double> count = {3, 1, 3, 0, 1};
  const auto g = w.grad().to_vector<double>();
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 3; ++c) REQUIRE(g[static_cast<size_t>(r * 3 + c)] == count[static_cast<size_t>(r)]);

  REQUIRE_THROWS_WITH(sg::embedding(w, ids_tensor({0, 5}, {2})),
                      Contains("embedding: id 5 at position 1") && Contains("[0, 5)"));
}

// ---------------------------------------------------------------------------
// matmul
// ---------------------------------------------------------------------------

namespace {
// The stored shape of an operand of logical (batch..., rows, cols), transposed or not.
Shape stored(Shape batch, int64_t rows, int64_t cols, bool transposed) {
  batch.push_back(transposed ? cols : rows);
  batch.push_back(transposed ? rows : cols);
  return batch;
}
}  // namespace

TEST_CASE("matmul gradchecks: 2-D, batched, broadcast batches, all transpose flags",
          "[autograd][gradcheck]") {
  struct Case {
    Shape batch_a, batch_b;
  };
  const std::vector<Case> cases = {
      {{}, {}},          // 2-D
      {{2}, {2}},        // batched
      {{2, 1}, {3}},     // broadcast batch axes: (2, 1) with (3) -> (2, 3)
      {{}, {2}},         // a 2-D, b batched
      {{2}, {}},         // a batched, b 2-D (the folded path when a is not transposed)
      {{2, 2}, {}},      // the folded path with two batch axes
      {{1}, {3}},        // a size-1 batch axis broadcast
  };
  const int64_t m = 3, k = 4, n = 5;
  uint64_t seed = 80;
  for (const Case& c : cases)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const Tensor a = normal(stored(c.batch_a, m, k, ta), ++seed);
        const Tensor b = normal(stored(c.batch_b, k, n, tb), ++seed);
        const std::string name = "matmul " + shape_str(a.shape()) + (ta ? "^T" : "") + " by " +
                                 shape_str(b.shape()) + (tb ? "^T" : "");
        check(name, [ta, tb](const Inputs& in) { return sg::matmul(in[0], in[1], ta, tb); }, {a, b});
      }
}

TEST_CASE("matmul with a shared weight: only the weight requires grad, and a Linear-like layer",
          "[autograd][gradcheck]") {
  const Tensor x = normal({2, 3, 4}, 90);
  check("x W with a constant x", [x](const Inputs& in) { return sg::matmul(x, in[0]); }, {normal({4, 5}, 91)});
  check("x W^T with a constant x", [x](const Inputs& in) { return sg::matmul(x, in[0], false, true); },
        {normal({5, 4}, 92)});
  check("linear", [](const Inputs& in) { return sg::matmul(in[0], in[1], false, true) + in[2]; },
        {x, normal({6, 4}, 93), normal({6}, 94)});
}

TEST_CASE("linear: x W^T + b in one op, against a naive loop and gradcheck", "[autograd][gradcheck]") {
  const Tensor x = normal({2, 3, 4}, 97), w = normal({5, 4}, 98), b = normal({5}, 99);
  SECTION("forward matches a naive loop, with and without a bias") {
    const auto xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
    const auto with = sg::linear(x, w, b), without = sg::linear(x, w);
    REQUIRE(with.shape() == Shape{2, 3, 5});
    const auto yb = with.to_vector<double>(), y0 = without.to_vector<double>();
    for (size_t r = 0; r < 6; ++r)
      for (size_t o = 0; o < 5; ++o) {
        double s = 0;
        for (size_t i = 0; i < 4; ++i) s += xv[r * 4 + i] * wv[o * 4 + i];
        REQUIRE(y0[r * 5 + o] == Approx(s).margin(1e-12));
        REQUIRE(yb[r * 5 + o] == Approx(s + bv[o]).margin(1e-12));
      }
  }
  SECTION("gradients") {
    check("linear with bias", [](const Inputs& in) { return sg::linear(in[0], in[1], in[2]); }, {x, w, b});
    check("linear without bias", [](const Inputs& in) { return sg::linear(in[0], in[1]); }, {x, w});
    check("linear of a 1-D input", [](const Inputs& in) { return sg::linear(in[0], in[1], in[2]); },
          {normal({4}, 100), w, b});
    check("linear, weight only", [x](const Inputs& in) { return sg::linear(x, in[0], in[1]); }, {w, b});
  }
  SECTION("bad shapes name the op and the shapes") {
    using Catch::Contains;
    REQUIRE_THROWS_WITH(sg::linear(x, normal({5, 3}, 1)),
                        Contains("linear: input of shape (2, 3, 4) does not end in in_features 3") &&
                            Contains("(5, 3)"));
    REQUIRE_THROWS_WITH(sg::linear(x, w, normal({4}, 1)),
                        Contains("linear: bias (4) must be (5) for weight (5, 4)"));
    REQUIRE_THROWS_WITH(sg::linear(x, normal({5}, 1)), Contains("linear: weight must be (out, in), got (5)"));
    REQUIRE_THROWS_WITH(sg::linear(sg::zeros({2, 4}, sg::int64), w),
                        Contains("linear: needs float32 or float64, got int64 input (2, 4)"));
    REQUIRE_THROWS_WITH(sg::linear(sg::kernel::to(x, sg::float32), w), Contains("linear"));
  }
}

TEST_CASE("head_scores and head_pool: per-head products against naive loops and gradcheck",
          "[autograd][gradcheck]") {
  // B = 2, Q = 3, K = 4, heads = 2, d = 3: queries (2, 3, 6), keys and values (2, 4, 6).
  const int64_t B = 2, Q = 3, K = 4, heads = 2, d = 3, H = heads * d;
  const Tensor q = normal({B, Q, H}, 110), k = normal({B, K, H}, 111), v = normal({B, K, H}, 112);
  const Tensor w = normal({B * heads, Q, K}, 113);
  SECTION("forward: scores[b*heads + h, i, j] = q[b, i, h-block] . k[b, j, h-block]") {
    const auto qv = q.to_vector<double>(), kv = k.to_vector<double>();
    const Tensor scores = sg::head_scores(q, k, heads);
    REQUIRE(scores.shape() == Shape{B * heads, Q, K});
    const auto sv = scores.to_vector<double>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < Q; ++i)
          for (int64_t j = 0; j < K; ++j) {
            double s = 0;
            for (int64_t e = 0; e < d; ++e) s += qv[(b * Q + i) * H + h * d + e] * kv[(b * K + j) * H + h * d + e];
            REQUIRE(sv[((b * heads + h) * Q + i) * K + j] == Approx(s).margin(1e-12));
          }
  }
  SECTION("forward: out[b, i, h-block] = sum_j w[b*heads + h, i, j] v[b, j, h-block]") {
    const auto wv = w.to_vector<double>(), vv = v.to_vector<double>();
    const Tensor out = sg::head_pool(w, v, heads);
    REQUIRE(out.shape() == Shape{B, Q, H});
    const auto ov = out.to_vector<double>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < Q; ++i)
          for (int64_t e = 0; e < d; ++e) {
            double s = 0;
            for (int64_t j = 0; j < K; ++j) s += wv[((b * heads + h) * Q + i) * K + j] * vv[(b * K + j) * H + h * d + e];
            REQUIRE(ov[(b * Q + i) * H + h * d + e] == Approx(s).margin(1e-12));
          }
  }
  SECTION("gradients") {
    check("head_scores", [](const Inputs& in) { return sg::head_scores(in[0], in[1], 2); }, {q, k});
    check("head_scores, keys only", [q](const Inputs& in) { return sg::head_scores(q, in[0], 2); }, {k});
    check("head_scores, one head", [](const Inputs& in) { return sg::head_scores(in[0], in[1], 1); }, {q, k});
    check("head_pool", [](const Inputs& in) { return sg::head_pool(in[0], in[1], 2); }, {w, v});
    check("head_pool, values only", [w](const Inputs& in) { return sg::head_pool(w, in[0], 2); }, {v});
    check("scores, softmax, pool", [](const Inputs& in) {
      return sg::head_pool(sg::softmax(sg::head_scores(in[0], in[1], 3)), in[2], 3);
    }, {q, k, v});
  }
  SECTION("float32 agrees with float64") {
    const auto q32 = sg::kernel::to(q, sg::float32), k32 = sg::kernel::to(k, sg::float32);
    const auto s64 = sg::head_scores(q, k, heads).to_vector<double>();
    const auto s32 = sg::head_scores(q32, k32, heads).to_vector<double>();
    for (size_t i = 0; i < s64.size(); ++i) REQUIRE(s32[i] == Approx(s64[i]).margin(1e-5));
  }
  SECTION("bad shapes name the op and the shapes") {
    REQUIRE_THROWS_WITH(sg::head_scores(q, k, 4),
                        Contains("head_scores: queries (2, 3, 6) and keys (2, 4, 6)") &&
                            Contains("multiple of heads 4"));
    REQUIRE_THROWS_WITH(sg::head_scores(q, normal({3, 4, 6}, 1), 2), Contains("head_scores") && Contains("(3, 4, 6)"));
    REQUIRE_THROWS_WITH(sg::head_scores(q, k, 0), Contains("head_scores: heads must be positive, got 0"));
    REQUIRE_THROWS_WITH(sg::head_scores(normal({6}, 1), k, 2),
                        Contains("head_scores: queries (6) and keys (2, 4, 6) must be 3-D"));
    REQUIRE_THROWS_WITH(sg::head_pool(w, normal({2, 5, 6}, 1), 2),
                        Contains("head_pool: weights (4, 3, 4) and values (2, 5, 6)"));
    REQUIRE_THROWS_WITH(sg::head_pool(w, v, 3), Contains("head_pool") && Contains("heads 3"));
    REQUIRE_THROWS_WITH(sg::head_pool(sg::kernel::to(w, sg::float32), v, 2), Contains("head_pool"));
    REQUIRE_THROWS_WITH(sg::head_scores(sg::zeros({2, 3, 6}, sg::int64), k, 2),
                        Contains("head_scores: needs float32 or float64, got int64 queries (2, 3, 6)"));
  }
}

TEST_CASE("matmul forward matches a naive loop for every transpose flag", "[autograd]") {
  const int64_t m = 2, k = 3, n = 4;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const Tensor a = normal(stored({}, m, k, ta), 95), b = normal(stored({}, k, n, tb), 96);
      const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
      const auto y = sg::matmul(a, b, ta, tb).to_vector<double>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t p = 0; p < k; ++p)
            s += av[static_cast<size_t>(ta ? p * m + i : i * k + p)] * bv[static_cast<size_t>(tb ? j * k + p : p * n + j)];
          REQUIRE(y[static_cast<size_t>(i * n + j)] == Approx(s).margin(1e-12));
        }
    }
}

// ---------------------------------------------------------------------------
// softmax family
// ---------------------------------------------------------------------------

TEST_CASE("softmax and log_softmax gradcheck", "[autograd][gradcheck]") {
  for (const Shape& s : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}}) {
    const Tensor x = normal(s, 100 + s.size()) * 2.0;
    check("softmax " + shape_str(s), [](const Inputs& in) { return sg::softmax(in[0]); }, {x});
    check("log_softmax " + shape_str(s), [](const Inputs& in) { return sg::log_softmax(in[0]); }, {x});
  }
}

namespace {
// d2l's masked softmax: scale * scores, those past a row's valid length replaced by -1e6.
std::vector<double> naive_masked_softmax(const Tensor& scores, const std::vector<int64_t>& lens_per_row,
                                         bool causal, double scale = 1) {
  const int64_t q = scores.shape()[1], k = scores.shape()[2];
  const auto x = scores.to_vector<double>();
  std::vector<double> out;
  for (size_t r = 0; r < lens_per_row.size(); ++r) {
    int64_t len = lens_per_row[r];
    if (causal) len = std::min<int64_t>(len, static_cast<int64_t>(r) % q + 1);
    std::vector<double> z(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) z[static_cast<size_t>(j)] = j < len ? scale * x[r * k + j] : -1e6;
    for (double v : softmax_row(z)) out.push_back(v);
  }
  return out;
}
}  // namespace

TEST_CASE("masked_softmax gradchecks with every kind of mask", "[autograd][gradcheck]") {
  const Tensor scores = normal({2, 3, 4}, 110);
  const auto fn = [](Tensor lens, bool causal) {
    return [lens, causal](const Inputs& in) { return sg::masked_softmax(in[0], lens, causal); };
  };
  check("masked_softmax no mask", fn(Tensor(), false), {scores});
  check("masked_softmax lens (B)", fn(ids_tensor({2, 4}, {2}), false), {scores});
  check("masked_softmax lens (B, Q) with zeros", fn(ids_tensor({1, 0, 3, 4, 2, 0}, {2, 3}), false), {scores});
  check("masked_softmax causal", fn(Tensor(), true), {normal({2, 4, 4}, 111)});
  check("masked_softmax causal Q < K", fn(Tensor(), true), {normal({2, 3, 5}, 112)});
  check("masked_softmax causal with lens (B)", fn(ids_tensor({2, 0}, {2}), true), {scores});
  check("masked_softmax causal with lens (B, Q)", fn(ids_tensor({1, 3, 2, 4, 0, 4}, {2, 3}), true), {scores});
  check("masked_softmax scaled, causal with lens (B)",
        [](const Inputs& in) { return sg::masked_softmax(in[0], ids_tensor({3, 1}, {2}), true, 0.35); }, {scores});
  check("masked_softmax composed",
        [](const Inputs& in) { return sg::matmul(sg::masked_softmax(in[0], ids_tensor({3, 1}, {2}), false), in[1]); },
        {scores, normal({2, 4, 2}, 113)});
}

TEST_CASE("masked_softmax follows d2l: -1e6 replacement, uniform rows, zero gradients",
          "[autograd]") {
  const Tensor scores = normal({2, 3, 4}, 120) * 3.0;
  SECTION("forward matches a naive loop") {
    struct Mask {
      Tensor lens;
      std::vector<int64_t> per_row;
      bool causal;
    };
    const std::vector<Mask> masks = {
        {Tensor(), std::vector<int64_t>(6, 4), false},
        {ids_tensor({2, 3}, {2}), {2, 2, 2, 3, 3, 3}, false},
        {ids_tensor({1, 0, 4, 2, 3, 0}, {2, 3}), {1, 0, 4, 2, 3, 0}, false},
        {Tensor(), std::vector<int64_t>(6, 4), true},
        {ids_tensor({2, 0}, {2}), {2, 2, 2, 0, 0, 0}, true},
    };
    for (const Mask& mk : masks) {
      const auto got = sg::masked_softmax(scores, mk.lens, mk.causal).to_vector<double>();
      const auto want = naive_masked_softmax(scores, mk.per_row, mk.causal);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-14));
    }
  }
  SECTION("float32 (the vectorised exp) and a scale match the naive loop too") {
    sg::Generator gen(5);
    const Tensor s32 = sg::rand({3, 5, 37}, gen, sg::float32, -8, 8);  // 37 keys: a vector tail
    std::vector<int64_t> per_row(15);
    for (size_t r = 0; r < 15; ++r) per_row[r] = r < 5 ? 37 : r < 10 ? 20 : 0;
    const auto got = sg::masked_softmax(s32, ids_tensor({37, 20, 0}, {3}), true, 0.7).to_vector<double>();
    const auto want = naive_masked_softmax(s32, per_row, true, 0.7);
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).epsilon(1e-6).margin(1e-7));
  }
  SECTION("float32 rows of 16 keys (the one-vector path) match the naive loop and float64") {
    sg::Generator gen(6);
    const Tensor s32 = sg::rand({4, 16, 16}, gen, sg::float32, -8, 8);
    const Tensor lens = ids_tensor({16, 9, 1, 0}, {4});
    std::vector<int64_t> per_row(64);
    for (size_t r = 0; r < 64; ++r) per_row[r] = std::vector<int64_t>{16, 9, 1, 0}[r / 16];
    for (bool causal : {false, true}) {
      INFO("causal " << causal);
      Tensor x32 = sg::clone(s32).set_requires_grad();
      Tensor x64 = sg::kernel::to(s32, sg::float64).set_requires_grad();
      const Tensor y32 = sg::masked_softmax(x32, lens, causal, 0.3);
      const Tensor y64 = sg::masked_softmax(x64, lens, causal, 0.3);  // the general path
      const auto got = y32.to_vector<double>();
      const auto want = naive_masked_softmax(s32, per_row, causal, 0.3);
      for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).epsilon(1e-6).margin(1e-7));
      const Tensor weights = normal({4, 16, 16}, 122);
      sg::backward(sg::sum(y32 * sg::kernel::to(weights, sg::float32)));
      sg::backward(sg::sum(y64 * weights));
      const auto g32 = x32.grad().to_vector<double>(), g64 = x64.grad().to_vector<double>();
      for (size_t i = 0; i < g32.size(); ++i) REQUIRE(g32[i] == Approx(g64[i]).margin(2e-6));
    }
  }
  SECTION("kept scores near -1e6: the replaced keys' -1e6 still takes part, as in d2l") {
    // Row maxima of -1e6 + 3.5 and -1e6 - 28: each replaced key then weighs
    // exp(-3.5) or exp(28) times the top kept key, not 0.
    std::vector<double> values(32);
    for (size_t j = 0; j < 32; ++j) values[j] = (j < 16 ? -1e6 : -1e6 - 30) + 0.5 * static_cast<double>(j % 16);
    const Tensor s64 = sg::from_vector(values, {1, 2, 16});
    const Tensor s32 = sg::kernel::to(s64, sg::float32);
    const Tensor lens = ids_tensor({8, 5}, {1, 2});
    const auto want = naive_masked_softmax(s32, {8, 5}, false);
    REQUIRE(want[15] > 1e-3);  // the replaced keys are far from 0 here
    const auto got32 = sg::masked_softmax(s32, lens, false).to_vector<double>();  // the one-vector path
    const auto got64 = sg::masked_softmax(s64, lens, false).to_vector<double>();  // the general path
    for (size_t i = 0; i < 32; ++i) {
      REQUIRE(got32[i] == Approx(want[i]).epsilon(1e-6).margin(1e-7));
      REQUIRE(got64[i] == Approx(want[i]).epsilon(1e-6).margin(1e-7));
    }
  }
  SECTION("masked keys get exactly zero weight and zero gradient; a 0-length row is uniform") {
    Tensor x = sg::clone(scores).set_requires_grad();
    const Tensor lens = ids_tensor({2, 0, 4, 1, 3, 0}, {2, 3});
    const Tensor y = sg::masked_softmax(x, lens, false);
    sg::backward(sg::sum(y * normal({2, 3, 4}, 121)));
    const auto w = y.to_vector<double>(), g = x.grad().to_vector<double>();
    const std::vector<int64_t> len = {2, 0, 4, 1, 3, 0};
    for (size_t r = 0; r < 6; ++r) {
      double row_sum = 0, row_grad_sum = 0;
      for (size_t j = 0; j < 4; ++j) {
        const double wj = w[r * 4 + j], gj = g[r * 4 + j];
        REQUIRE(std::isfinite(wj));
        REQUIRE(std::isfinite(gj));
        row_sum += wj;
        row_grad_sum += gj;
        if (len[r] == 0) {
          REQUIRE(wj == Approx(0.25).margin(1e-15));  // uniform 1/K, not NaN
          REQUIRE(gj == 0.0);
        } else if (static_cast<int64_t>(j) >= len[r]) {
          REQUIRE(wj == 0.0);  // exp(-1e6 - max) underflows to exactly 0
          REQUIRE(gj == 0.0);  // exactly zero, not merely small
        }
      }
      REQUIRE(row_sum == Approx(1.0).margin(1e-14));
      REQUIRE(row_grad_sum == Approx(0.0).margin(1e-12));  // softmax gradients sum to 0 per row
    }
  }
  SECTION("bad masks are clear errors") {
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, ids_tensor({1, 2, 3}, {3}), false),
                        Contains("valid_lens of shape (3) for scores of shape (2, 3, 4)") &&
                            Contains("expected (2) or (2, 3)"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, ids_tensor({1, 5}, {2}), false),
                        Contains("valid length 5 at batch 1 is outside [0, 4]"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, ids_tensor({1, 2, 3, 4, -1, 0}, {2, 3}), false),
                        Contains("valid length -1 at batch 1, query 1"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, normal({2}, 1), false), Contains("valid_lens must be int64"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, Tensor(), false, std::numeric_limits<double>::infinity()),
                        Contains("masked_softmax: scale must be finite, got inf"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(normal({3, 4}, 1), Tensor(), false),
                        Contains("scores must be (batch, queries, keys), got (3, 4)"));
  }
}

// ---------------------------------------------------------------------------
// layer_norm
// ---------------------------------------------------------------------------

TEST_CASE("layer_norm gradchecks for x, gamma and beta", "[autograd][gradcheck]") {
  for (const Shape& s : {Shape{4, 6}, Shape{2, 3, 5}, Shape{7}}) {
    const int64_t d = s.back();
    check("layer_norm " + shape_str(s), [](const Inputs& in) { return sg::layer_norm(in[0], in[1], in[2]); },
          {normal(s, 130) * 2.0 + 0.5, normal({d}, 131), normal({d}, 132)});
  }
  check("layer_norm composed", [](const Inputs& in) {
    return sg::tanh(sg::layer_norm(in[0] * in[0], in[1], in[2], 1e-3));
  }, {normal({3, 4}, 133), positive({4}, 134), normal({4}, 135)});
}

TEST_CASE("layer_norm forward matches a naive loop", "[autograd]") {
  const Tensor x = normal({3, 5}, 136) * 4.0 + 1.0, gamma = normal({5}, 137), beta = normal({5}, 138);
  const auto y = sg::layer_norm(x, gamma, beta, 1e-5).to_vector<double>();
  const auto xv = x.to_vector<double>(), gv = gamma.to_vector<double>(), bv = beta.to_vector<double>();
  for (size_t r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (size_t j = 0; j < 5; ++j) mean += xv[r * 5 + j] / 5;
    for (size_t j = 0; j < 5; ++j) var += (xv[r * 5 + j] - mean) * (xv[r * 5 + j] - mean) / 5;
    for (size_t j = 0; j < 5; ++j)
      REQUIRE(y[r * 5 + j] == Approx((xv[r * 5 + j] - mean) / std::sqrt(var + 1e-5) * gv[j] + bv[j]).margin(1e-12));
  }
  REQUIRE_THROWS_WITH(sg::layer_norm(x, normal({4}, 1), beta),
                      Contains("layer_norm: gamma (4) and beta (5) must be (5) for input (3, 5)"));
}

// ---------------------------------------------------------------------------
// dropout
// ---------------------------------------------------------------------------

TEST_CASE("dropout is the identity at p = 0 and in eval mode", "[autograd][gradcheck]") {
  const Tensor x = normal({3, 4}, 140);
  sg::Generator gen(1);
  REQUIRE(sg::dropout(x, 0.0, true, gen).is_same(x));
  REQUIRE(sg::dropout(x, 0.5, false, gen).is_same(x));
  check("dropout p=0", [](const Inputs& in) { sg::Generator g(1); return sg::dropout(in[0], 0.0, true, g); }, {x});
  check("dropout eval", [](const Inputs& in) { sg::Generator g(1); return sg::dropout(in[0], 0.5, false, g); }, {x});
  REQUIRE_THROWS_WITH(sg::dropout(x, 1.0, true, gen), Contains("dropout: p must be in [0, 1), got 1"));
  REQUIRE_THROWS_WITH(sg::dropout(x, -0.1, true, gen), Contains("got -0.1"));
}

TEST_CASE("dropout with a fixed mask gradchecks but a fresh mask per call does not", "[autograd][gradcheck]") {
  const Tensor x = normal({4, 5}, 141);
  const sg::Generator base(42);
  // A copy of the generator inside fn: every evaluation draws the same mask.
  check("dropout p=0.3 same mask", [base](const Inputs& in) {
    sg::Generator g = base;
    return sg::dropout(in[0], 0.3, true, g);
  }, {x});
  check("dropout p=0.5 composed", [base](const Inputs& in) {
    sg::Generator g = base;
    return sg::dropout(sg::tanh(in[0]), 0.5, true, g) * in[0];
  }, {x});
  sg::Generator shared(42);
  auto fresh = [&shared](const Inputs& in) { return sg::dropout(in[0], 0.3, true, shared); };
  REQUIRE_FALSE(sg::gradcheck(fresh, {x}));
}

TEST_CASE("dropout scales kept values by 1/(1-p) and drops about p of them", "[autograd]") {
  const Tensor x = sg::ones({200000}, sg::float64);
  for (double p : {0.1, 0.3, 0.9}) {
    sg::Generator gen(7);
    const auto y = sg::dropout(x, p, true, gen).to_vector<double>();
    const double keep = 1.0 / (1.0 - p);
    int64_t dropped = 0, wrong = 0;
    for (double v : y) {
      if (v == 0)
        ++dropped;
      else if (std::fabs(v - keep) > 1e-15 * keep)
        ++wrong;
    }
    REQUIRE(wrong == 0);  // every kept value is exactly x / (1 - p)
    const double fraction = static_cast<double>(dropped) / static_cast<double>(y.size());
    INFO("p " << p << " dropped " << fraction);
    REQUIRE(std::fabs(fraction - p) < 0.01);  // about 10 standard deviations
  }
  // The same seed gives the same mask.
  sg::Generator g1(3), g2(3);
  REQUIRE(sg::dropout(x, 0.5, true, g1).to_vector<double>() == sg::dropout(x, 0.5, true, g2).to_vector<double>());
}

TEST_CASE("dropout's mask is the same on any thread count, and neighbours are independent", "[autograd]") {
  const Tensor x = sg::ones({300000}, sg::float32);  // above the parallel threshold
  const int saved = sg::num_threads();
  std::vector<std::vector<float>> masks;
  for (int threads : {1, 2}) {
    sg::set_num_threads(threads);
    sg::Generator gen(11);
    masks.push_back(sg::dropout(x, 0.5, true, gen).to_vector<float>());
  }
  sg::set_num_threads(saved);
  REQUIRE(masks[0] == masks[1]);
  // Pairs (i, i+1): each of the four outcomes about a quarter of the time.
  int64_t counts[4] = {};
  for (size_t i = 0; i + 1 < masks[0].size(); i += 2) ++counts[(masks[0][i] > 0) * 2 + (masks[0][i + 1] > 0)];
  for (int64_t c : counts) REQUIRE(std::fabs(static_cast<double>(c) / 150000 - 0.25) < 0.01);
  // Two calls draw different masks; backward applies the forward's mask.
  sg::Generator gen(11);
  Tensor leaf = sg::ones({1000}, sg::float64).set_requires_grad();
  const Tensor y1 = sg::dropout(leaf, 0.5, true, gen), y2 = sg::dropout(leaf, 0.5, true, gen);
  REQUIRE(y1.to_vector<double>() != y2.to_vector<double>());
  sg::backward(sg::sum(y1));
  REQUIRE(leaf.grad().to_vector<double>() == y1.to_vector<double>());  // dy/dx = mask / (1 - p) = y for x = 1
}

// ---------------------------------------------------------------------------
// cross_entropy
// ---------------------------------------------------------------------------

namespace {
double naive_cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets, int64_t ignore) {
  const int64_t c = logits.shape().back();
  const auto x = logits.to_vector<double>();
  double total = 0;
  int64_t counted = 0;
  for (size_t n = 0; n < targets.size(); ++n) {
    if (targets[n] == ignore) continue;
    const std::vector<double> row(x.begin() + static_cast<int64_t>(n) * c, x.begin() + static_cast<int64_t>(n + 1) * c);
    total -= std::log(softmax_row(row)[static_cast<size_t>(targets[n])]);
    ++counted;
  }
  return counted ? total / static_cast<double>(counted) : 0.0;
}
}  // namespace

TEST_CASE("cross_entropy gradchecks, with ignored targets", "[autograd][gradcheck]") {
  const auto ce = [](int64_t ignore) {
    return [ignore](const Inputs& in) { return sg::cross_entropy(in[0], in[1], ignore); };
  };
  const Tensor logits = normal({6, 5}, 150) * 2.0;
  const std::vector<int64_t> t = {0, 4, 2, -100, 1, 3};
  check("cross_entropy (6, 5)", ce(-100), {logits, ids_tensor(t, {6})});
  check("cross_entropy no ignored", ce(-100), {logits, ids_tensor({0, 4, 2, 2, 1, 3}, {6})});
  check("cross_entropy (2, 3, 4) ignore 2", ce(2), {normal({2, 3, 4}, 151), ids_tensor({2, 0, 3, 2, 1, 1}, {2, 3})});
  check("cross_entropy composed", [](const Inputs& in) {
    return sg::cross_entropy(sg::matmul(in[0], in[1]), ids_tensor({1, 0, 2}, {3})) * 3.0;
  }, {normal({3, 4}, 152), normal({4, 3}, 153)});

  REQUIRE(sg::cross_entropy(logits, ids_tensor(t, {6})).item<double>() ==
          Approx(naive_cross_entropy(logits, t, -100)).margin(1e-13));
  const Tensor l3 = normal({2, 3, 4}, 151);
  const std::vector<int64_t> t3 = {2, 0, 3, 2, 1, 1};
  REQUIRE(sg::cross_entropy(l3, ids_tensor(t3, {2, 3}), 2).item<double>() ==
          Approx(naive_cross_entropy(l3, t3, 2)).margin(1e-13));
}

TEST_CASE("cross_entropy with every target ignored is 0 with a zero gradient", "[autograd]") {
  Tensor logits = normal({3, 4}, 160).set_requires_grad();
  const Tensor loss = sg::cross_entropy(logits, ids_tensor({-100, -100, -100}, {3}));
  REQUIRE(loss.item<double>() == 0.0);
  sg::backward(loss);
  for (double g : logits.grad().to_vector<double>()) REQUIRE(g == 0.0);
  check("cross_entropy all ignored", [](const Inputs& in) {
    return sg::cross_entropy(in[0], ids_tensor({-1, -1}, {2}), -1);
  }, {normal({2, 3}, 161)});
}

TEST_CASE("cross_entropy rejects out-of-range targets and mismatched shapes", "[autograd]") {
  const Tensor logits = normal({2, 5}, 170);
  REQUIRE_THROWS_WITH(sg::cross_entropy(logits, ids_tensor({0, 5}, {2})),
                      Contains("cross_entropy: target 5 at position 1 is outside [0, 5)") &&
                          Contains("logits of shape (2, 5)"));
  REQUIRE_THROWS_WITH(sg::cross_entropy(logits, ids_tensor({-1, 0}, {2})),
                      Contains("target -1 at position 0") && Contains("ignore_index is -100"));
  REQUIRE_THROWS_WITH(sg::cross_entropy(logits, ids_tensor({0, 1, 2}, {3})),
                      Contains("targets of shape (3) for logits of shape (2, 5): expected (2)"));
  REQUIRE_THROWS_WITH(sg::cross_entropy(logits, normal({2}, 1)), Contains("targets must be int64"));
}

TEST_CASE("pow with exponent 0 has gradient 0 everywhere, also at x = 0", "[autograd]") {
  Tensor x = sg::from_vector(std::vector<double>{-1, 0, 2}, {3}).set_requires_grad();
  sg::backward(sg::sum(sg::pow(x, 0.0)));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 0});
}
