// autograd/ops/head_products.cpp: head_scores and head_pool, attention's
// per-head products read in place.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/node.hpp"
#include "autograd/ops/head_products.hpp"
#include "autograd/ops/softmax.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

TEST_CASE("head_scores and head_pool: per-head products against naive loops and gradcheck",
          "[autograd][gradcheck]") {
  // B = 2, Q = 3, K = 4, heads = 2, d = 3: queries (2, 3, 6), keys and values (2, 4, 6).
  const int64_t B = 2, Q = 3, K = 4, heads = 2, d = 3, H = heads * d;
  const Tensor q = normal({B, Q, H}, 110), k = normal({B, K, H}, 111), v = normal({B, K, H}, 112);
  const Tensor w = normal({B * heads, Q, K}, 113);
  SECTION("forward: scores[b*heads + h, i, j] = q[b, i, h-block] . k[b, j, h-block]") {
    const auto qv = q.to_vector<double>(), kv = k.to_vector<double>();
    const Tensor scores = sg::head_scores(q, k, heads);
    REQUIRE(scores.shape() == Shape{B * heads, Q, K});
    const auto sv = scores.to_vector<double>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < Q; ++i)
          for (int64_t j = 0; j < K; ++j) {
            double s = 0;
            for (int64_t e = 0; e < d; ++e) s += qv[(b * Q + i) * H + h * d + e] * kv[(b * K + j) * H + h * d + e];
            REQUIRE(sv[((b * heads + h) * Q + i) * K + j] == Approx(s).margin(1e-12));
          }
  }
  SECTION("forward: out[b, i, h-block] = sum_j w[b*heads + h, i, j] v[b, j, h-block]") {
    const auto wv = w.to_vector<double>(), vv = v.to_vector<double>();
    const Tensor out = sg::head_pool(w, v, heads);
    REQUIRE(out.shape() == Shape{B, Q, H});
    const auto ov = out.to_vector<double>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < Q; ++i)
          for (int64_t e = 0; e < d; ++e) {
            double s = 0;
            for (int64_t j = 0; j < K; ++j) s += wv[((b * heads + h) * Q + i) * K + j] * vv[(b * K + j) * H + h * d + e];
            REQUIRE(ov[(b * Q + i) * H + h * d + e] == Approx(s).margin(1e-12));
          }
  }
  SECTION("gradients") {
    check_gradient("head_scores", [](const Inputs& in) { return sg::head_scores(in[0], in[1], 2); }, {q, k});
    check_gradient("head_scores, keys only", [q](const Inputs& in) { return sg::head_scores(q, in[0], 2); }, {k});
    check_gradient("head_scores, one head", [](const Inputs& in) { return sg::head_scores(in[0], in[1], 1); }, {q, k});
    check_gradient("head_pool", [](const Inputs& in) { return sg::head_pool(in[0], in[1], 2); }, {w, v});
    check_gradient("head_pool, values only", [w](const Inputs& in) { return sg::head_pool(w, in[0], 2); }, {v});
    check_gradient("scores, softmax, pool", [](const Inputs& in) {
      return sg::head_pool(sg::softmax(sg::head_scores(in[0], in[1], 3)), in[2], 3);
    }, {q, k, v});
  }
  SECTION("float32 agrees with float64") {
    const auto q32 = sg::kernel::to(q, sg::float32), k32 = sg::kernel::to(k, sg::float32);
    const auto s64 = sg::head_scores(q, k, heads).to_vector<double>();
    const auto s32 = sg::head_scores(q32, k32, heads).to_vector<double>();
    for (size_t i = 0; i < s64.size(); ++i) REQUIRE(s32[i] == Approx(s64[i]).margin(1e-5));
  }
  SECTION("bad shapes name the op and the shapes") {
    REQUIRE_THROWS_WITH(sg::head_scores(q, k, 4),
                        Contains("head_scores: queries (2, 3, 6) and keys (2, 4, 6)") &&
                            Contains("multiple of heads 4"));
    REQUIRE_THROWS_WITH(sg::head_scores(q, normal({3, 4, 6}, 1), 2), Contains("head_scores") && Contains("(3, 4, 6)"));
    REQUIRE_THROWS_WITH(sg::head_scores(q, k, 0), Contains("head_scores: heads must be positive, got 0"));
    REQUIRE_THROWS_WITH(sg::head_scores(normal({6}, 1), k, 2),
                        Contains("head_scores: queries (6) and keys (2, 4, 6) must be 3-D"));
    REQUIRE_THROWS_WITH(sg::head_pool(w, normal({2, 5, 6}, 1), 2),
                        Contains("head_pool: weights (4, 3, 4) and values (2, 5, 6)"));
    REQUIRE_THROWS_WITH(sg::head_pool(w, v, 3), Contains("head_pool") && Contains("heads 3"));
    REQUIRE_THROWS_WITH(sg::head_pool(sg::kernel::to(w, sg::float32), v, 2), Contains("head_pool"));
    REQUIRE_THROWS_WITH(sg::head_scores(sg::zeros({2, 3, 6}, sg::int64), k, 2),
                        Contains("head_scores: needs float32 or float64, got int64 queries (2, 3, 6)"));
  }
}
