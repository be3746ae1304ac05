// autograd/ops/softmax.cpp: softmax, log_softmax and d2l's masked_softmax
// (valid_lens 1-D and 2-D, causal, scale), values and float64 gradchecks.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/softmax.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

// ---------------------------------------------------------------------------
// softmax family
// ---------------------------------------------------------------------------

TEST_CASE("softmax and log_softmax gradcheck", "[autograd][gradcheck]") {
  for (const Shape& s : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}}) {
    const Tensor x = normal(s, 100 + s.size()) * 2.0;
    check_gradient("softmax " + shape_str(s), [](const Inputs& in) { return sg::softmax(in[0]); }, {x});
    check_gradient("log_softmax " + shape_str(s), [](const Inputs& in) { return sg::log_softmax(in[0]); }, {x});
  }
}

namespace {
// d2l's masked softmax: scale * scores, those past a row's valid length replaced by -1e6.
std::vector<double> naive_masked_softmax(const Tensor& scores, const std::vector<int64_t>& lens_per_row,
                                         bool causal, double scale = 1) {
  const int64_t q = scores.shape()[1], k = scores.shape()[2];
  const auto x = scores.to_vector<double>();
  std::vector<double> out;
  for (size_t r = 0; r < lens_per_row.size(); ++r) {
    int64_t len = lens_per_row[r];
    if (causal) len = std::min<int64_t>(len, static_cast<int64_t>(r) % q + 1);
    std::vector<double> z(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) z[static_cast<size_t>(j)] = j < len ? scale * x[r * k + j] : -1e6;
    for (double v : softmax_row(z)) out.push_back(v);
  }
  return out;
}
}  // namespace

TEST_CASE("masked_softmax gradchecks with every kind of mask", "[autograd][gradcheck]") {
  const Tensor scores = normal({2, 3, 4}, 110);
  const auto fn = [](Tensor lens, bool causal) {
    return [lens, causal](const Inputs& in) { return sg::masked_softmax(in[0], lens, causal); };
  };
  check_gradient("masked_softmax no mask", fn(Tensor(), false), {scores});
  check_gradient("masked_softmax lens (B)", fn(ids({2, 4}, {2}), false), {scores});
  check_gradient("masked_softmax lens (B, Q) with zeros", fn(ids({1, 0, 3, 4, 2, 0}, {2, 3}), false), {scores});
  check_gradient("masked_softmax causal", fn(Tensor(), true), {normal({2, 4, 4}, 111)});
  check_gradient("masked_softmax causal Q < K", fn(Tensor(), true), {normal({2, 3, 5}, 112)});
  check_gradient("masked_softmax causal with lens (B)", fn(ids({2, 0}, {2}), true), {scores});
  check_gradient("masked_softmax causal with lens (B, Q)", fn(ids({1, 3, 2, 4, 0, 4}, {2, 3}), true), {scores});
  check_gradient("masked_softmax scaled, causal with lens (B)",
        [](const Inputs& in) { return sg::masked_softmax(in[0], ids({3, 1}, {2}), true, 0.35); }, {scores});
  check_gradient("masked_softmax composed",
        [](const Inputs& in) { return sg::matmul(sg::masked_softmax(in[0], ids({3, 1}, {2}), false), in[1]); },
        {scores, normal({2, 4, 2}, 113)});
}

TEST_CASE("masked_softmax follows d2l: -1e6 replacement, uniform rows, zero gradients",
          "[autograd]") {
  const Tensor scores = normal({2, 3, 4}, 120) * 3.0;
  SECTION("forward matches a naive loop") {
    struct Mask {
      Tensor lens;
      std::vector<int64_t> per_row;
      bool causal;
    };
    const std::vector<Mask> masks = {
        {Tensor(), std::vector<int64_t>(6, 4), false},
        {ids({2, 3}, {2}), {2, 2, 2, 3, 3, 3}, false},
        {ids({1, 0, 4, 2, 3, 0}, {2, 3}), {1, 0, 4, 2, 3, 0}, false},
        {Tensor(), std::vector<int64_t>(6, 4), true},
        {ids({2, 0}, {2}), {2, 2, 2, 0, 0, 0}, true},
    };
    for (const Mask& mk : masks) {
      const auto got = sg::masked_softmax(scores, mk.lens, mk.causal).to_vector<double>();
      const auto want = naive_masked_softmax(scores, mk.per_row, mk.causal);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-14));
    }
  }
  SECTION("float32 (the vectorised exp) and a scale match the naive loop too") {
    sg::Generator gen(5);
    const Tensor s32 = sg::rand({3, 5, 37}, gen, sg::float32, -8, 8);  // 37 keys: a vector tail
    std::vector<int64_t> per_row(15);
    for (size_t r = 0; r < 15; ++r) per_row[r] = r < 5 ? 37 : r < 10 ? 20 : 0;
    const auto got = sg::masked_softmax(s32, ids({37, 20, 0}, {3}), true, 0.7).to_vector<double>();
    const auto want = naive_masked_softmax(s32, per_row, true, 0.7);
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).epsilon(1e-6).margin(1e-7));
  }
  SECTION("float32 rows of 16 keys (the one-vector path) match the naive loop and float64") {
    sg::Generator gen(6);
    const Tensor s32 = sg::rand({4, 16, 16}, gen, sg::float32, -8, 8);
    const Tensor lens = ids({16, 9, 1, 0}, {4});
    std::vector<int64_t> per_row(64);
    for (size_t r = 0; r < 64; ++r) per_row[r] = std::vector<int64_t>{16, 9, 1, 0}[r / 16];
    for (bool causal : {false, true}) {
      INFO("causal " << causal);
      Tensor x32 = sg::clone(s32).set_requires_grad();
      Tensor x64 = sg::kernel::to(s32, sg::float64).set_requires_grad();
      const Tensor y32 = sg::masked_softmax(x32, lens, causal, 0.3);
      const Tensor y64 = sg::masked_softmax(x64, lens, causal, 0.3);  // the general path
      const auto got = y32.to_vector<double>();
      const auto want = naive_masked_softmax(s32, per_row, causal, 0.3);
      for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).epsilon(1e-6).margin(1e-7));
      const Tensor weights = normal({4, 16, 16}, 122);
      sg::backward(sg::sum(y32 * sg::kernel::to(weights, sg::float32)));
      sg::backward(sg::sum(y64 * weights));
      const auto g32 = x32.grad().to_vector<double>(), g64 = x64.grad().to_vector<double>();
      for (size_t i = 0; i < g32.size(); ++i) REQUIRE(g32[i] == Approx(g64[i]).margin(2e-6));
    }
  }
  SECTION("kept scores near -1e6: the replaced keys' -1e6 still takes part, as in d2l") {
    // Row maxima of -1e6 + 3.5 and -1e6 - 28: each replaced key then weighs
    // exp(-3.5) or exp(28) times the top kept key, not 0.
    std::vector<double> values(32);
    for (size_t j = 0; j < 32; ++j) values[j] = (j < 16 ? -1e6 : -1e6 - 30) + 0.5 * static_cast<double>(j % 16);
    const Tensor s64 = sg::from_vector(values, {1, 2, 16});
    const Tensor s32 = sg::kernel::to(s64, sg::float32);
    const Tensor lens = ids({8, 5}, {1, 2});
    const auto want = naive_masked_softmax(s32, {8, 5}, false);
    REQUIRE(want[15] > 1e-3);  // the replaced keys are far from 0 here
    const auto got32 = sg::masked_softmax(s32, lens, false).to_vector<double>();  // the one-vector path
    const auto got64 = sg::masked_softmax(s64, lens, false).to_vector<double>();  // the general path
    for (size_t i = 0; i < 32; ++i) {
      REQUIRE(got32[i] == Approx(want[i]).epsilon(1e-6).margin(1e-7));
      REQUIRE(got64[i] == Approx(want[i]).epsilon(1e-6).margin(1e-7));
    }
  }
  SECTION("masked keys get exactly zero weight and zero gradient; a 0-length row is uniform") {
    Tensor x = sg::clone(scores).set_requires_grad();
    const Tensor lens = ids({2, 0, 4, 1, 3, 0}, {2, 3});
    const Tensor y = sg::masked_softmax(x, lens, false);
    sg::backward(sg::sum(y * normal({2, 3, 4}, 121)));
    const auto w = y.to_vector<double>(), g = x.grad().to_vector<double>();
    const std::vector<int64_t> len = {2, 0, 4, 1, 3, 0};
    for (size_t r = 0; r < 6; ++r) {
      double row_sum = 0, row_grad_sum = 0;
      for (size_t j = 0; j < 4; ++j) {
        const double wj = w[r * 4 + j], gj = g[r * 4 + j];
        REQUIRE(std::isfinite(wj));
        REQUIRE(std::isfinite(gj));
        row_sum += wj;
        row_grad_sum += gj;
        if (len[r] == 0) {
          REQUIRE(wj == Approx(0.25).margin(1e-15));  // uniform 1/K, not NaN
          REQUIRE(gj == 0.0);
        } else if (static_cast<int64_t>(j) >= len[r]) {
          REQUIRE(wj == 0.0);  // exp(-1e6 - max) underflows to exactly 0
          REQUIRE(gj == 0.0);  // exactly zero, not merely small
        }
      }
      REQUIRE(row_sum == Approx(1.0).margin(1e-14));
      REQUIRE(row_grad_sum == Approx(0.0).margin(1e-12));  // softmax gradients sum to 0 per row
    }
  }
  SECTION("bad masks are clear errors") {
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, ids({1, 2, 3}, {3}), false),
                        Contains("valid_lens of shape (3) for scores of shape (2, 3, 4)") &&
                            Contains("expected (2) or (2, 3)"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, ids({1, 5}, {2}), false),
                        Contains("valid length 5 at batch 1 is outside [0, 4]"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, ids({1, 2, 3, 4, -1, 0}, {2, 3}), false),
                        Contains("valid length -1 at batch 1, query 1"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, normal({2}, 1), false), Contains("valid_lens must be int64"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(scores, Tensor(), false, std::numeric_limits<double>::infinity()),
                        Contains("masked_softmax: scale must be finite, got inf"));
    REQUIRE_THROWS_WITH(sg::masked_softmax(normal({3, 4}, 1), Tensor(), false),
                        Contains("scores must be (batch, queries, keys), got (3, 4)"));
  }
}
