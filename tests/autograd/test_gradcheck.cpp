// sg::gradcheck itself (autograd/tools/gradcheck.cpp): it must fail deliberately
// wrong backwards (a factor of 2, a transposed gradient), say which input and
// element is wrong, and refuse outputs it cannot check.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

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
  check_gradient("times_three", right, {normal({2, 3}, 1)});
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
// gradcheck is as strict as documented: planted errors of 1%, 0.1% and 0.01%
// fail on scalar and non-scalar outputs, and its numbers are the user's
// ---------------------------------------------------------------------------

namespace {

// y = x^2 elementwise, with a backward of 2 x g (1 + rel): rel = 0 is right.
Tensor square_off_by(const Tensor& x, double rel) {
  return sg::record("square_planted", sg::kernel::mul(x, x), {x}, [x, rel](const Tensor& g) -> Grads {
    return {sg::kernel::affine(sg::kernel::mul(g, x), 2 * (1 + rel), 0.0)};
  });
}

// Values in [0.5, 1.5] with random signs: gradients 2x of size 1 to 3.
Tensor moderate(const Shape& s, uint64_t seed) {
  Tensor x = normal(s, seed);
  double* p = x.data<double>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = (p[i] < 0 ? -1 : 1) * (0.5 + std::fmod(std::fabs(p[i]), 1.0));
  return x;
}

}  // namespace

TEST_CASE("gradcheck fails planted backward errors of 1%, 0.1% and 0.01%", "[autograd][gradcheck]") {
  for (double rel : {1e-2, 1e-3, 1e-4}) {
    INFO("relative error " << rel);
    // A scalar output (a loss): the derivative itself is compared, no weight scales it.
    const sg::GradcheckResult scalar = sg::gradcheck(
        [rel](const Inputs& in) { return sg::sum(square_off_by(in[0], rel)); }, {moderate({3, 4}, 11)});
    CHECK_FALSE(scalar);
    CHECK(scalar.failed == 12);
    CHECK_FALSE(scalar.projected);
    for (const auto& m : scalar.mismatches) CHECK(m.analytic == Approx(m.numeric * (1 + rel)).epsilon(1e-7));
    // A non-scalar output, compared element by element.
    const sg::GradcheckResult vec =
        sg::gradcheck([rel](const Inputs& in) { return square_off_by(in[0], rel); }, {moderate({3, 4}, 12)});
    CHECK_FALSE(vec);
    CHECK(vec.failed == 12);
    // A big output, projected on random weights: a uniform error still shows.
    sg::GradcheckOptions few;
    few.max_outputs = 4;
    const sg::GradcheckResult projected =
        sg::gradcheck([rel](const Inputs& in) { return square_off_by(in[0], rel); }, {moderate({3, 4}, 13)}, few);
    // (Each element's error counts with its weight, the tolerance's atol in full.)
    CHECK(projected.projected);
    CHECK_FALSE(projected);
    if (rel >= 1e-3) CHECK(projected.failed == 12);
  }
  // The right backward passes all three ways.
  auto right = [](const Inputs& in) { return square_off_by(in[0], 0.0); };
  check_gradient("square", right, {moderate({3, 4}, 14)});
  check_gradient("sum of square", [](const Inputs& in) { return sg::sum(square_off_by(in[0], 0.0)); },
                 {moderate({3, 4}, 15)});
  sg::GradcheckOptions few;
  few.max_outputs = 4;
  REQUIRE(sg::gradcheck(right, {moderate({3, 4}, 16)}, few));
}

TEST_CASE("gradcheck reports a scalar's derivatives in its own units", "[autograd][gradcheck]") {
  // sum(relu(x)) at the kink 0: the central difference is 0.5, the backward
  // gives 0 (as documented); the report says exactly that.
  const Tensor x = sg::from_vector(std::vector<double>{0.0, 1.0}, {2});
  const sg::GradcheckResult r = sg::gradcheck([](const Inputs& in) { return sg::sum(sg::relu(in[0])); }, {x});
  REQUIRE_FALSE(r);
  REQUIRE(r.failed == 1);
  const sg::GradcheckMismatch& m = r.mismatches[0];
  CHECK(m.index == 0);
  CHECK(m.analytic == 0);
  CHECK(m.numeric == Approx(0.5).epsilon(1e-6));
  CHECK(m.output == 0);
  CHECK_THAT(r.report(), Contains("element 0 (0): analytic 0, numeric 0.5"));
  CHECK_THAT(r.report(), !Contains("output element"));
}

TEST_CASE("gradcheck names the output element of a non-scalar mismatch", "[autograd][gradcheck]") {
  // y = (x0 * x1, x0 + x1) with the second output's gradient for x1 wrong by 1%.
  auto fn = [](const Inputs& in) {
    const Tensor& x = in[0];
    const Tensor out = sg::from_vector(std::vector<double>{x.data<double>()[0] * x.data<double>()[1],
                                                           x.data<double>()[0] + x.data<double>()[1]},
                                       {2});
    return sg::record("pair", out, {x}, [x](const Tensor& g) -> Grads {
      const double *gp = g.data<double>(), *xp = x.data<double>();
      return {sg::from_vector(std::vector<double>{gp[0] * xp[1] + gp[1], gp[0] * xp[0] + gp[1] * 1.01}, {2})};
    });
  };
  const sg::GradcheckResult r = sg::gradcheck(fn, {sg::from_vector(std::vector<double>{2.0, 3.0}, {2})});
  REQUIRE_FALSE(r);
  REQUIRE(r.failed == 1);
  const sg::GradcheckMismatch& m = r.mismatches[0];
  CHECK(m.index == 1);
  CHECK(m.output == 1);
  CHECK(m.analytic == Approx(1.01).epsilon(1e-9));
  CHECK(m.numeric == Approx(1.0).epsilon(1e-6));
  CHECK_THAT(r.report(), Contains("element 1 (1): analytic 1.01, numeric 1") && Contains("(output element 1 (1))"));
}
