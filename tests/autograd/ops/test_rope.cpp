// autograd/ops/rope.cpp: rotary position embedding against the formula,
// gradchecks, errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/rope.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

// ---------------------------------------------------------------------------
// rope
// ---------------------------------------------------------------------------

TEST_CASE("rope rotates each feature pair by (offset + t) * 10000^(-2j/d)", "[nn][positions][rope]") {
  const Shape shape{2, 5, 6};
  const auto x = test_util::uniform_values<double>(shape, -1, 1, 7);
  for (int64_t offset : {0, 3}) {
    std::vector<double> want = x;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < 5; ++t) {
        std::vector<double> u(want.begin() + (b * 5 + t) * 6, want.begin() + (b * 5 + t + 1) * 6);
        rotate(u, offset + t);
        std::copy(u.begin(), u.end(), want.begin() + (b * 5 + t) * 6);
      }
    INFO("offset " << offset);
    test_util::check_values<double>(sg::rope(test_util::make(x, shape), offset), shape, want, 1e-12, 1e-12);
    const std::vector<float> xf(x.begin(), x.end());
    test_util::check_values<float>(sg::rope(test_util::make(xf, shape), offset), shape, want, 1e-5, 1e-6);
  }
}

TEST_CASE("rope gradchecks, with and without an offset", "[nn][positions][rope][gradcheck]") {
  for (int64_t offset : {0, 4}) {
    // Multiplying by a second input makes the gradient reaching rope differ per element.
    auto fn = [offset](const Inputs& in) { return sg::rope(in[0], offset) * in[1]; };
    sg::GradcheckOptions o;
    o.name = "rope, offset " + std::to_string(offset);
    const sg::GradcheckResult r = sg::gradcheck(fn, {normal({2, 3, 4, 6}, 1), normal({4, 6}, 2)}, o);
    INFO(r);
    REQUIRE(r);
    REQUIRE(r.checked == 2 * 3 * 4 * 6 + 4 * 6);
  }
}

TEST_CASE("rope: the score of q at position m and k at position n depends only on m - n",
          "[nn][positions][rope]") {
  const Tensor q = normal({1, 1, 8}, 3), k = normal({1, 1, 8}, 4);
  auto score = [&](int64_t m, int64_t n) {
    return sg::sum(sg::rope(q, m) * sg::rope(k, n)).item<double>();
  };
  for (int64_t m = 0; m < 8; ++m)
    for (int64_t n = 0; n < 8; ++n) {
      INFO("m " << m << " n " << n);
      REQUIRE(score(m, n) == Approx(score(m - std::min(m, n), n - std::min(m, n))).margin(1e-12));
      REQUIRE(score(m, n) == Approx(score(m + 5, n + 5)).margin(1e-12));
    }
  // ... and it does depend on the offset (an identity rope would pass the lines above).
  REQUIRE(std::fabs(score(1, 0) - score(0, 0)) > 1e-3);
  REQUIRE(std::fabs(score(0, 1) - score(1, 0)) > 1e-3);
}

TEST_CASE("rope rejects odd widths, scalars and negative offsets", "[nn][positions][rope]") {
  REQUIRE_THROWS_WITH(sg::rope(sg::zeros({2, 3, 5})),
                      "rope: the last axis of x (2, 3, 5) must be even (features rotate in pairs), got 5");
  REQUIRE_THROWS_WITH(sg::rope(sg::zeros({4})), Contains("rope: x must be (..., steps, dim), got (4)"));
  REQUIRE_THROWS_WITH(sg::rope(sg::zeros({3, 4}), -1), Contains("offset must be non-negative, got -1"));
  REQUIRE_THROWS_WITH(sg::rope(sg::zeros({3, 4}, sg::int64)),
                      "rope: needs a float32 or float64 tensor, got int64 (3, 4)");
}
