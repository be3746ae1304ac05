// The tests' comparison helpers fail on a NaN or an infinity in either
// operand, wherever it is (a running maximum built on `>` or std::max skips
// a NaN, and the fixture check used to let the next finite element
// overwrite one). Each helper is run on the cases that used to slip through.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/node.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("abs_diff and rel_diff are infinite for a NaN or infinity on either side", "[compare]") {
  for (double bad : {kNaN, kInf, -kInf}) {
    CHECK(test_util::abs_diff(bad, 1.0) == kInf);
    CHECK(test_util::abs_diff(1.0, bad) == kInf);
    CHECK(test_util::rel_diff(bad, 1.0) == kInf);
    CHECK(test_util::rel_diff(1.0, bad) == kInf);
    // A running maximum over them keeps the failure.
    CHECK_FALSE(std::max(0.0, test_util::abs_diff(bad, 1.0)) < 1e-3);
  }
  CHECK(test_util::abs_diff(1.0, 1.5) == 0.5);
  CHECK(test_util::rel_diff(1.5, 1.0) == 0.5);
  CHECK(test_util::rel_diff(0.0, 0.0) == 0);
  CHECK(test_util::rel_diff(1e-30, 0.0) == kInf);
}

TEST_CASE("worst_excess fails on a NaN or infinity anywhere, not only at the last element", "[compare]") {
  const auto bound = [](size_t) { return 1e-6; };
  const std::vector<double> want{1, 2, 3, 4};
  CHECK(test_util::worst_excess(want, want, bound).ok());
  for (size_t at = 0; at < want.size(); ++at)
    for (double bad : {kNaN, kInf, -kInf}) {
      INFO("element " << at << " = " << bad);
      std::vector<double> got = want;
      got[at] = bad;
      const test_util::Worst in_got = test_util::worst_excess(got, want, bound);
      CHECK_FALSE(in_got.ok());
      CHECK(in_got.index == at);
      const test_util::Worst in_want = test_util::worst_excess(want, got, bound);  // in the expected values too
      CHECK_FALSE(in_want.ok());
      CHECK(in_want.index == at);
    }
  // A finite miss after a NaN does not hide it.
  const test_util::Worst w = test_util::worst_excess({kNaN, 2.5, 3, 4}, want, bound);
  CHECK(w.index == 0);
  CHECK_FALSE(w.ok());
  CHECK_FALSE(test_util::worst_excess({1, 2, 3}, want, bound).ok());  // sizes differ
}

TEST_CASE("max_rel_diff fails on a NaN or infinity anywhere", "[compare]") {
  const std::vector<double> want{1, 2, 3};
  CHECK(test_util::max_rel_diff(want, want) == 0);
  for (size_t at = 0; at < want.size(); ++at) {
    std::vector<double> got = want;
    got[at] = kNaN;
    CHECK(test_util::max_rel_diff(got, want) == kInf);
    CHECK(test_util::max_rel_diff(want, got) == kInf);
    got[at] = -kInf;
    CHECK(test_util::max_rel_diff(got, want) == kInf);
  }
}

TEST_CASE("check_values fails on an unexpected NaN or infinity (as a failing assertion)", "[compare][!shouldfail]") {
  // [!shouldfail]: Catch2 passes this case only if an assertion in it fails.
  test_util::check_values<float>(sg::from_vector(std::vector<float>{1, NAN, 3}, {3}), {3}, {1, 2, 3}, 1e-6, 0);
}

TEST_CASE("check_values fails on an infinity where a finite value is wanted", "[compare][!shouldfail]") {
  test_util::check_values<double>(sg::from_vector(std::vector<double>{1, 2, INFINITY}, {3}), {3}, {1, 2, 3}, 1e-6, 0);
}

TEST_CASE("gradcheck fails when the analytic gradient is NaN", "[compare]") {
  // A custom op whose backward returns NaN: gradcheck must report it.
  auto fn = [](const std::vector<sg::Tensor>& in) {
    return sg::record("nan_grad", sg::kernel::affine(in[0], 2, 0), {in[0]}, {}, [](const sg::Tensor& g) -> sg::Grads {
      return {sg::kernel::affine(g, NAN, 0)};
    });
  };
  const sg::GradcheckResult r = sg::gradcheck(fn, {sg::ones({3}, sg::float64)});
  CHECK_FALSE(static_cast<bool>(r));
}
