// autograd/ops/layer_norm.cpp: the fused layer norm, values and gradchecks.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/node.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/layer_norm.hpp"
#include "autograd/ops/unary.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

// ---------------------------------------------------------------------------
// layer_norm
// ---------------------------------------------------------------------------

TEST_CASE("layer_norm gradchecks for x, gamma and beta", "[autograd][gradcheck]") {
  for (const Shape& s : {Shape{4, 6}, Shape{2, 3, 5}, Shape{7}}) {
    const int64_t d = s.back();
    check_gradient("layer_norm " + shape_str(s), [](const Inputs& in) { return sg::layer_norm(in[0], in[1], in[2]); },
          {normal(s, 130) * 2.0 + 0.5, normal({d}, 131), normal({d}, 132)});
  }
  check_gradient("layer_norm composed", [](const Inputs& in) {
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
