// autograd/ops/matmul.cpp: 2-D and batched products, every transpose flag,
// against naive loops and float64 gradchecks.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/node.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/matmul.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

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
        check_gradient(name, [ta, tb](const Inputs& in) { return sg::matmul(in[0], in[1], ta, tb); }, {a, b});
      }
}

TEST_CASE("matmul with a shared weight: only the weight requires grad, and a Linear-like layer",
          "[autograd][gradcheck]") {
  const Tensor x = normal({2, 3, 4}, 90);
  check_gradient("x W with a constant x", [x](const Inputs& in) { return sg::matmul(x, in[0]); }, {normal({4, 5}, 91)});
  check_gradient("x W^T with a constant x", [x](const Inputs& in) { return sg::matmul(x, in[0], false, true); },
        {normal({5, 4}, 92)});
  check_gradient("linear", [](const Inputs& in) { return sg::matmul(in[0], in[1], false, true) + in[2]; },
        {x, normal({6, 4}, 93), normal({6}, 94)});
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
