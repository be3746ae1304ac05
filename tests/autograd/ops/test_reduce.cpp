// autograd/ops/reduce.cpp: sum, mean, max along an axis and over everything.
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
// reductions
// ---------------------------------------------------------------------------

TEST_CASE("sum, mean and max gradcheck along an axis and over everything", "[autograd][gradcheck]") {
  for (const Shape& s : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}}) {
    const std::string at = " " + shape_str(s);
    const Tensor x = normal(s, 40 + s.size());  // distinct values: no ties for max
    check_gradient("sum" + at, [](const Inputs& in) { return sg::sum(in[0]); }, {x});
    check_gradient("mean" + at, [](const Inputs& in) { return sg::mean(in[0]); }, {x});
    check_gradient("max" + at, [](const Inputs& in) { return sg::max(in[0]); }, {x});
    for (int64_t axis = -1; axis < static_cast<int64_t>(s.size()); ++axis)
      for (bool keepdim : {false, true}) {
        const std::string how = at + " axis " + std::to_string(axis) + (keepdim ? " keepdim" : "");
        check_gradient("sum" + how, [axis, keepdim](const Inputs& in) { return sg::sum(in[0], axis, keepdim); }, {x});
        check_gradient("mean" + how, [axis, keepdim](const Inputs& in) { return sg::mean(in[0], axis, keepdim); }, {x});
        check_gradient("max" + how, [axis, keepdim](const Inputs& in) { return sg::max(in[0], axis, keepdim); }, {x});
      }
  }
}

TEST_CASE("max sends the gradient to the first maximum only", "[autograd]") {
  Tensor x = sg::from_vector(std::vector<double>{1, 3, 3, 5, 5, 0}, {2, 3}).set_requires_grad();
  sg::backward(sg::sum(sg::max(x, 1)) + sg::max(x));
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 2, 0, 0});
}
