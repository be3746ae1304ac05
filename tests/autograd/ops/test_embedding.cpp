// autograd/ops/embedding.cpp: row gather, scatter-add backward.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/embedding.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
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
// embedding
// ---------------------------------------------------------------------------

TEST_CASE("embedding gradchecks and scatter-adds repeated ids", "[autograd][gradcheck]") {
  const Tensor id_list = ids({0, 2, 2, 4, 1, 2, 0, 0}, {2, 4});
  check_gradient("embedding (2, 4) ids", [](const Inputs& in) { return sg::embedding(in[0], in[1]); },
        {normal({5, 3}, 70), id_list});
  check_gradient("embedding (8) ids", [](const Inputs& in) { return sg::embedding(in[0], in[1]); },
        {normal({6, 2}, 71), sg::reshape(id_list, {8})});
  check_gradient("embedding then a nonlinearity", [](const Inputs& in) { return sg::tanh(sg::embedding(in[0], in[1])) * in[2]; },
        {normal({5, 3}, 72), id_list, normal({3}, 73)});

  Tensor w = normal({5, 3}, 74).set_requires_grad();
  sg::backward(sg::sum(sg::embedding(w, id_list)));
  // Row r's gradient is (number of times r appears) in every column.
  const std::vector<double> count = {3, 1, 3, 0, 1};
  const auto g = w.grad().to_vector<double>();
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 3; ++c) REQUIRE(g[static_cast<size_t>(r * 3 + c)] == count[static_cast<size_t>(r)]);

  REQUIRE_THROWS_WITH(sg::embedding(w, ids({0, 5}, {2})),
                      Contains("embedding: id 5 at position 1") && Contains("[0, 5)"));
}
