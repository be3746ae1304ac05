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
