// autograd/ops/cross_entropy.cpp: fused log-softmax loss with ignored targets.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/cross_entropy.hpp"
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
  check_gradient("cross_entropy (6, 5)", ce(-100), {logits, ids(t, {6})});
  check_gradient("cross_entropy no ignored", ce(-100), {logits, ids({0, 4, 2, 2, 1, 3}, {6})});
  check_gradient("cross_entropy (2, 3, 4) ignore 2", ce(2), {normal({2, 3, 4}, 151), ids({2, 0, 3, 2, 1, 1}, {2, 3})});
  check_gradient("cross_entropy composed", [](const Inputs& in) {
    return sg::cross_entropy(sg::matmul(in[0], in[1]), ids({1, 0, 2}, {3})) * 3.0;
  }, {normal({3, 4}, 152), normal({4, 3}, 153)});

  REQUIRE(sg::cross_entropy(logits, ids(t, {6})).item<double>() ==
          Approx(naive_cross_entropy(logits, t, -100)).margin(1e-13));
  const Tensor l3 = normal({2, 3, 4}, 151);
  const std::vector<int64_t> t3 = {2, 0, 3, 2, 1, 1};
  REQUIRE(sg::cross_entropy(l3, ids(t3, {2, 3}), 2).item<double>() ==
          Approx(naive_cross_entropy(l3, t3, 2)).margin(1e-13));
}

TEST_CASE("cross_entropy with every target ignored is 0 with a zero gradient", "[autograd]") {
  Tensor logits = normal({3, 4}, 160).set_requires_grad();
  const Tensor loss = sg::cross_entropy(logits, ids({-100, -100, -100}, {3}));
  REQUIRE(loss.item<double>() == 0.0);
  sg::backward(loss);
  for (double g : logits.grad().to_vector<double>()) REQUIRE(g == 0.0);
  check_gradient("cross_entropy all ignored", [](const Inputs& in) {
    return sg::cross_entropy(in[0], ids({-1, -1}, {2}), -1);
  }, {normal({2, 3}, 161)});
}

TEST_CASE("cross_entropy rejects out-of-range targets and mismatched shapes", "[autograd]") {
  const Tensor logits = normal({2, 5}, 170);
  REQUIRE_THROWS_WITH(sg::cross_entropy(logits, ids({0, 5}, {2})),
                      Contains("cross_entropy: target 5 at position 1 is outside [0, 5)") &&
                          Contains("logits of shape (2, 5)"));
  REQUIRE_THROWS_WITH(sg::cross_entropy(logits, ids({-1, 0}, {2})),
                      Contains("target -1 at position 0") && Contains("ignore_index is -100"));
  REQUIRE_THROWS_WITH(sg::cross_entropy(logits, ids({0, 1, 2}, {3})),
                      Contains("targets of shape (3) for logits of shape (2, 5): expected (2)"));
  REQUIRE_THROWS_WITH(sg::cross_entropy(logits, normal({2}, 1)), Contains("targets must be int64"));
}
