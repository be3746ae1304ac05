// Softmax kernels (core/kernels/softmax.cpp) against a naive loop that never
// subtracts a row maximum: softmax_i = 1 / sum_j exp(x_j - x_i) in long
// double, exact enough and free of overflow for the logits used here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"

#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using namespace test_util;

namespace {

// Row-wise over the last axis of a tensor with `n` columns.
template <class T>
std::vector<double> naive_softmax(const std::vector<T>& x, int64_t n, bool log) {
  std::vector<double> out(x.size());
  for (size_t r = 0; n > 0 && r < x.size() / static_cast<size_t>(n); ++r) {
    const T* row = x.data() + r * static_cast<size_t>(n);
    for (int64_t i = 0; i < n; ++i) {
      if (std::isinf(row[i]) && row[i] < 0) {  // exp(-inf) = 0
        out[r * static_cast<size_t>(n) + static_cast<size_t>(i)] = log ? -INFINITY : 0;
        continue;
      }
      long double denom = 0;  // sum_j exp(x_j - x_i)
      for (int64_t j = 0; j < n; ++j)
        denom += std::exp(static_cast<long double>(row[j]) - static_cast<long double>(row[i]));
      out[r * static_cast<size_t>(n) + static_cast<size_t>(i)] =
          static_cast<double>(log ? -std::log(denom) : 1 / denom);
    }
  }
  return out;
}

template <class T>
double max_abs(const std::vector<T>& x) {
  double m = 0;
  for (T v : x)
    if (std::isfinite(static_cast<double>(v))) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

template <class T>
void check_softmax(const std::vector<T>& x, const Shape& shape) {
  INFO("shape " << shape);
  const Tensor t = make(x, shape);
  const int64_t n = shape.back();
  const double eps = std::numeric_limits<T>::epsilon();
  const double rel = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  // Probabilities: relative, plus a floor for values that underflow.
  // Log-probabilities: a logit of size |x| is itself known only to eps * |x|,
  // so the absolute bound scales with the largest logit.
  check_values<T>(sg::kernel::softmax(t), shape, naive_softmax(x, n, false), rel,
                  std::is_same_v<T, float> ? 1e-30 : 1e-300);
  check_values<T>(sg::kernel::log_softmax(t), shape, naive_softmax(x, n, true), rel, 4 * eps * (1 + max_abs(x)));
}

}  // namespace

// ---------------------------------------------------------------- softmax

TEMPLATE_TEST_CASE("softmax and log_softmax match a naive loop", "[core]", float, double) {
  using T = TestType;
  uint64_t seed = 1;
  for (const Shape& shape : {Shape{5}, Shape{1}, Shape{1, 1}, Shape{3, 4}, Shape{4, 1}, Shape{2, 3, 7}, Shape{2, 1, 9},
                             Shape{128, 100}, Shape{70, 3}}) {
    const std::vector<T> x = uniform_values<T>(shape, -8, 8, seed++);
    check_softmax(x, shape);
    // Every row sums to 1.
    const std::vector<T> p = sg::kernel::softmax(make(x, shape)).template to_vector<T>();
    const int64_t n = shape.back();
    double worst = 0;
    for (size_t r = 0; r < p.size() / static_cast<size_t>(n); ++r) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += p[r * static_cast<size_t>(n) + static_cast<size_t>(i)];
      worst = std::max(worst, test_util::abs_diff(s, 1));  // NaN-proof: a NaN sum is an infinite error
    }
    CHECK(worst < 1e-5);
  }
}

TEMPLATE_TEST_CASE("softmax with huge logits does not overflow", "[core]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<T> x = {1000, 1001, 999, 1000,   //
                            -1000, 0, 1000, 500,    //
                            -1000, -1001, -999, -1000,  //
                            3000, 3000, 3000, 3000,  //
                            -inf, 0, 1, -inf};
  const Shape shape = {5, 4};
  check_softmax(x, shape);
  const std::vector<T> p = sg::kernel::softmax(make(x, shape)).template to_vector<T>();
  const std::vector<T> lp = sg::kernel::log_softmax(make(x, shape)).template to_vector<T>();
  for (size_t i = 0; i < p.size(); ++i) {
    INFO("element " << i);
    CHECK(std::isfinite(p[i]));
    CHECK((std::isfinite(lp[i]) || std::isinf(x[i])));
  }
  CHECK(p[4 * 4] == 0);  // exp(-inf) is 0
  CHECK(lp[4 * 4] == -inf);
  CHECK(p[12] == Approx(0.25));
  CHECK(lp[4] == Approx(-2000).epsilon(1e-6));
}

TEMPLATE_TEST_CASE("softmax over rows of length 1 is 1, log_softmax 0", "[core]", float, double) {
  using T = TestType;
  const std::vector<T> x = {1000, -1000, 5, 0, -3.5};
  const Tensor t = make(x, {5, 1});
  check_exact<T>(sg::kernel::softmax(t), {5, 1}, std::vector<T>(5, T(1)));
  check_exact<T>(sg::kernel::log_softmax(t), {5, 1}, std::vector<T>(5, T(0)));
  check_exact<T>(sg::kernel::softmax(make(std::vector<T>{42}, {1})), {1}, {T(1)});
}

TEST_CASE("softmax on empty tensors, scalars and int64", "[core]") {
  CHECK(sg::kernel::softmax(sg::zeros({0, 5})).shape() == Shape{0, 5});
  CHECK(sg::kernel::log_softmax(sg::zeros({3, 0}, sg::float64)).shape() == Shape{3, 0});
  REQUIRE_THROWS_WITH(sg::kernel::softmax(sg::scalar(1)), Contains("softmax") && Contains("scalar"));
  REQUIRE_THROWS_WITH(sg::kernel::log_softmax(sg::scalar(1)), Contains("log_softmax") && Contains("scalar"));
  REQUIRE_THROWS_WITH(sg::kernel::softmax(sg::zeros({2, 3}, sg::int64)), Contains("softmax") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::log_softmax(sg::zeros({2, 3}, sg::int64)), Contains("log_softmax") && Contains("int64"));
}

TEMPLATE_TEST_CASE("softmax gives the same results on 1 and 2 threads", "[core]", float, double) {
  using T = TestType;
  ThreadCount restore;
  const Shape shape = {512, 70};
  const Tensor t = make(uniform_values<T>(shape, -20, 20, 5), shape);
  sg::set_num_threads(1);
  const std::vector<T> p1 = sg::kernel::softmax(t).template to_vector<T>();
  const std::vector<T> l1 = sg::kernel::log_softmax(t).template to_vector<T>();
  sg::set_num_threads(2);
  CHECK(sg::kernel::softmax(t).template to_vector<T>() == p1);
  CHECK(sg::kernel::log_softmax(t).template to_vector<T>() == l1);
}
