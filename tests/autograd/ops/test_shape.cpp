// autograd/ops/shape.cpp: reshape, permute, transpose, slice, concat.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

// ---------------------------------------------------------------------------
// shape ops
// ---------------------------------------------------------------------------

TEST_CASE("reshape, permute, transpose, slice and concat gradcheck", "[autograd][gradcheck]") {
  const Tensor x = normal({2, 3, 4}, 50);
  check_gradient("reshape (6, 4)", [](const Inputs& in) { return sg::reshape(in[0], {6, 4}); }, {x});
  check_gradient("reshape (4, -1)", [](const Inputs& in) { return sg::reshape(in[0], {4, -1}) * 2.0; }, {x});
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {-1, 0, 1}})
    check_gradient("permute " + shape_str(dims), [dims](const Inputs& in) { return sg::permute(in[0], dims); }, {x});
  check_gradient("transpose 0 2", [](const Inputs& in) { return sg::transpose(in[0], 0, 2); }, {x});
  check_gradient("transpose -1 -2", [](const Inputs& in) { return sg::transpose(in[0], -1, -2); }, {x});
  check_gradient("transpose 2-D", [](const Inputs& in) { return sg::transpose(in[0], 0, 1); }, {normal({3, 5}, 51)});

  const Tensor rows = normal({4, 3}, 52);
  check_gradient("slice axis 0 (a view)", [](const Inputs& in) { return sg::slice(in[0], 0, 1, 3); }, {rows});
  check_gradient("slice axis 1 (a copy)", [](const Inputs& in) { return sg::slice(in[0], 1, 1, 3); }, {x});
  check_gradient("slice axis -1 from 0", [](const Inputs& in) { return sg::slice(in[0], -1, 0, 2); }, {x});
  check_gradient("slice to the end", [](const Inputs& in) { return sg::slice(in[0], 2, 1, 4); }, {x});
  check_gradient("slice everything", [](const Inputs& in) { return sg::slice(in[0], 1, 0, 3); }, {x});
  // Two slices of one tensor: each element's gradient from the slice(s) holding it.
  check_gradient("overlapping slices", [](const Inputs& in) {
    return sg::slice(in[0], 0, 0, 3) * sg::slice(in[0], 0, 1, 4);
  }, {rows});

  const Tensor a = normal({2, 3, 4}, 53), b = normal({2, 1, 4}, 54), c = normal({2, 2, 4}, 55);
  check_gradient("concat axis 1", [](const Inputs& in) { return sg::concat({in[0], in[1], in[2]}, 1); }, {a, b, c});
  check_gradient("concat axis 0", [](const Inputs& in) { return sg::concat({in[0], in[1]}, 0); },
        {normal({1, 3}, 56), normal({3, 3}, 57)});
  check_gradient("concat axis -1", [](const Inputs& in) { return sg::concat({in[0], in[1]}, -1); },
        {normal({2, 3, 2}, 58), normal({2, 3, 5}, 59)});
  check_gradient("concat with itself", [](const Inputs& in) { return sg::concat({in[0], in[0] * 2.0}, 0); },
        {normal({2, 3}, 60)});
}

TEST_CASE("concat gives no gradient to a constant input", "[autograd]") {
  Tensor a = sg::ones({2}, sg::float64).set_requires_grad();
  Tensor k = sg::ones({3}, sg::float64);
  sg::backward(sg::sum(sg::concat({k, a, k}, 0) * 2.0));
  REQUIRE(a.grad().to_vector<double>() == std::vector<double>{2, 2});
  REQUIRE_FALSE(k.grad().defined());
}
