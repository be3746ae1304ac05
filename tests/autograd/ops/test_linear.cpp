// autograd/ops/linear.cpp: x W^T + b in one op.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/node.hpp"
#include "autograd/ops/linear.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

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
    check_gradient("linear with bias", [](const Inputs& in) { return sg::linear(in[0], in[1], in[2]); }, {x, w, b});
    check_gradient("linear without bias", [](const Inputs& in) { return sg::linear(in[0], in[1]); }, {x, w});
    check_gradient("linear of a 1-D input", [](const Inputs& in) { return sg::linear(in[0], in[1], in[2]); },
          {normal({4}, 100), w, b});
    check_gradient("linear, weight only", [x](const Inputs& in) { return sg::linear(x, in[0], in[1]); }, {w, b});
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
