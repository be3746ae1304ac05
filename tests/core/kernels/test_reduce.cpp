// Reductions (core/kernels/reduce.cpp) against naive loops written here: every input
// element is visited in row-major order, its multi-index is mapped to the
// output element it belongs to, and sums, maxima and first argmaxes are
// accumulated there.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
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
using test_util::count;
using test_util::make;
using test_util::uniform_values;
using test_util::unravel;
using test_util::ravel;
using test_util::check_values;
using test_util::ThreadCount;

namespace {

// Small integers (as T): many ties for max/argmax, exact sums.
template <class T>
std::vector<T> tie_values(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> d(-3, 3);
  std::vector<T> v(static_cast<size_t>(count(s)));
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

struct Reduced {
  Shape shape;  // without the axis
  std::vector<double> sum, max;
  std::vector<int64_t> argmax;
};

// Reduces x along `axis` (already non-negative) by visiting every element.
template <class T>
Reduced naive_reduce(const std::vector<T>& x, const Shape& shape, int64_t axis) {
  Reduced r;
  r.shape = shape;
  r.shape.erase(r.shape.begin() + axis);
  const auto m = static_cast<size_t>(count(r.shape));
  r.sum.assign(m, 0);
  r.max.assign(m, 0);
  r.argmax.assign(m, -1);
  for (int64_t flat = 0; flat < count(shape); ++flat) {
    std::vector<int64_t> idx = unravel(flat, shape);
    const int64_t j = idx[static_cast<size_t>(axis)];
    idx.erase(idx.begin() + axis);
    const auto o = static_cast<size_t>(ravel(idx, r.shape));
    const double v = static_cast<double>(x[static_cast<size_t>(flat)]);
    r.sum[o] += v;
    if (r.argmax[o] < 0 || v > r.max[o]) r.max[o] = v, r.argmax[o] = j;  // first maximum wins
  }
  return r;
}

// sum_to's reference: each element of x goes to the target element that
// broadcasting would have read it from (right-aligned, size-1 axes -> 0).
template <class T>
std::vector<double> naive_sum_to(const std::vector<T>& x, const Shape& from, const Shape& to) {
  std::vector<double> out(static_cast<size_t>(count(to)), 0.0);
  for (int64_t flat = 0; flat < count(from); ++flat) {
    const std::vector<int64_t> idx = unravel(flat, from);
    int64_t o = 0;
    for (size_t k = 0; k < to.size(); ++k) {
      const int64_t i = idx[idx.size() - to.size() + k];
      o = o * to[k] + (to[k] == 1 ? 0 : i);
    }
    out[static_cast<size_t>(o)] += static_cast<double>(x[static_cast<size_t>(flat)]);
  }
  return out;
}

// Tolerance for a sum of n terms of magnitude at most `mag`: a few roundings
// per term in T's precision (exact for int64).
template <class T>
double sum_tol(int64_t n, double mag) {
  if constexpr (std::is_integral_v<T>) return 0;
  const double eps = std::numeric_limits<T>::epsilon();
  return 4 * eps * static_cast<double>(n + 1) * mag;
}

std::vector<double> as_double(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

Shape keep_shape(Shape s, int64_t axis) {
  s[static_cast<size_t>(axis)] = 1;
  return s;
}


const std::vector<Shape>& axis_shapes() {
  static const std::vector<Shape> s = {{5}, {1}, {3, 4}, {4, 1}, {1, 6}, {2, 3, 4}, {2, 1, 3, 5}, {3, 2, 1, 2, 3}};
  return s;
}

}  // namespace

// ---------------------------------------------------------------- along an axis

TEMPLATE_TEST_CASE("sum, mean, max and argmax along every axis match naive loops", "[core]", float, double) {
  using T = TestType;
  uint64_t seed = 1;
  for (const Shape& shape : axis_shapes()) {
    const auto rank = static_cast<int64_t>(shape.size());
    for (bool ties : {true, false}) {
      const std::vector<T> x = ties ? tie_values<T>(shape, seed++) : uniform_values<T>(shape, -3, 3, seed++);
      const Tensor t = make(x, shape);
      for (int64_t axis = -rank; axis < rank; ++axis) {
        const int64_t a = axis < 0 ? axis + rank : axis;
        const int64_t n = shape[static_cast<size_t>(a)];
        INFO("shape " << shape << ", axis " << axis << (ties ? ", with ties" : ""));
        const Reduced r = naive_reduce(x, shape, a);
        std::vector<double> mean = r.sum;
        for (double& v : mean) v /= static_cast<double>(n);
        const double tol = sum_tol<T>(n, 3);
        for (bool keepdim : {false, true}) {
          INFO("keepdim " << keepdim);
          const Shape out = keepdim ? keep_shape(shape, a) : r.shape;
          check_values<T>(sg::kernel::sum(t, axis, keepdim), out, r.sum, 0, tol);
          check_values<T>(sg::kernel::mean(t, axis, keepdim), out, mean, 0, tol);
          check_values<T>(sg::kernel::max(t, axis, keepdim), out, r.max, 0, 0);
          check_values<int64_t>(sg::kernel::argmax(t, axis, keepdim), out, as_double(r.argmax), 0, 0);
        }
      }
      CHECK(t.to_vector<T>() == x);  // inputs untouched
    }
  }
}

TEST_CASE("int64 sum, max and argmax along every axis, and int64 mean throws", "[core]") {
  uint64_t seed = 50;
  for (const Shape& shape : axis_shapes()) {
    // Large values: an int64 sum must not go through float.
    std::vector<int64_t> x = uniform_values<int64_t>(shape, -1000, 1000, seed++);
    for (auto& v : x) v = v * (int64_t{1} << 42) + 1;
    const Tensor t = sg::from_vector(x, shape);
    const auto rank = static_cast<int64_t>(shape.size());
    for (int64_t axis = -rank; axis < rank; ++axis) {
      INFO("shape " << shape << ", axis " << axis);
      const int64_t a = axis < 0 ? axis + rank : axis;
      // The sum again in int64: doubles cannot hold these sums exactly.
      Shape out = shape;
      out.erase(out.begin() + a);
      std::vector<int64_t> sum(static_cast<size_t>(count(out)), 0);
      for (int64_t flat = 0; flat < count(shape); ++flat) {
        std::vector<int64_t> idx = unravel(flat, shape);
        idx.erase(idx.begin() + a);
        sum[static_cast<size_t>(ravel(idx, out))] += x[static_cast<size_t>(flat)];
      }
      CHECK(sg::kernel::sum(t, axis).to_vector<int64_t>() == sum);
      CHECK(sg::kernel::sum(t, axis).dtype() == sg::int64);
      CHECK(sg::kernel::sum(t, axis, true).shape() == keep_shape(shape, a));
      const Reduced r = naive_reduce(x, shape, a);
      check_values<int64_t>(sg::kernel::argmax(t, axis), out, as_double(r.argmax), 0, 0);
      std::vector<int64_t> mx = sg::kernel::max(t, axis).to_vector<int64_t>();
      bool same = mx.size() == r.argmax.size();
      for (size_t o = 0; same && o < mx.size(); ++o) {
        // The maximum is the element at the naive argmax.
        std::vector<int64_t> idx = unravel(static_cast<int64_t>(o), out);
        idx.insert(idx.begin() + a, r.argmax[o]);
        same = mx[o] == x[static_cast<size_t>(ravel(idx, shape))];
      }
      CHECK(same);
    }
  }
  const Tensor i = sg::zeros({2, 3}, sg::int64);
  REQUIRE_THROWS_WITH(sg::kernel::mean(i, 0), Contains("mean") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::mean(i), Contains("mean") && Contains("int64"));
}

TEMPLATE_TEST_CASE("max and argmax break ties toward the first maximum", "[core]", float, double, int64_t) {
  using T = TestType;
  const Tensor x = make(std::vector<T>{1, 3, 3, 2, 5, 5, 5, 5, 0, -1, 0, -1}, {3, 4});
  CHECK(sg::kernel::argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
  CHECK(sg::kernel::argmax(x, -1, true).shape() == Shape{3, 1});
  CHECK(sg::kernel::max(x, 1).to_vector<T>() == std::vector<T>{3, 5, 0});
  // Along axis 0: columns (1,5,0), (3,5,-1), (3,5,0), (2,5,-1).
  CHECK(sg::kernel::argmax(x, 0).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1, 1});
  const Tensor y = make(std::vector<T>{2, 7, 2, 7, 1, 7}, {3, 2});
  CHECK(sg::kernel::argmax(y, 0).to_vector<int64_t>() == std::vector<int64_t>{0, 0});
  const Tensor all_same = make(std::vector<T>(9, T(4)), {9});
  CHECK(sg::kernel::argmax(all_same, 0).item<int64_t>() == 0);
  CHECK(sg::kernel::argmax(x, 0).dtype() == sg::int64);
}

TEMPLATE_TEST_CASE("max and argmax treat NaN as the maximum", "[core]", float, double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const Tensor x = make(std::vector<T>{1, nan, 3, 4, 5, nan}, {2, 3});
  const std::vector<T> m = sg::kernel::max(x, 1).template to_vector<T>();
  CHECK(std::isnan(m[0]));
  CHECK(std::isnan(m[1]));
  CHECK(sg::kernel::argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(std::isnan(sg::kernel::max(x).template item<T>()));
}

// ---------------------------------------------------------------- over everything

TEMPLATE_TEST_CASE("sum, mean and max over every element", "[core]", float, double) {
  using T = TestType;
  uint64_t seed = 200;
  for (const Shape& shape : {Shape{}, Shape{1}, Shape{7}, Shape{3, 4}, Shape{2, 3, 4}, Shape{100003}}) {
    INFO("shape " << shape);
    const std::vector<T> x = uniform_values<T>(shape, -2, 3, seed++);
    double sum = 0, mx = -INFINITY;
    for (T v : x) sum += v, mx = std::max(mx, static_cast<double>(v));
    const Tensor t = make(x, shape);
    const int64_t n = count(shape);
    check_values<T>(sg::kernel::sum(t), {}, {sum}, 0, sum_tol<T>(n, 3));
    check_values<T>(sg::kernel::mean(t), {}, {sum / static_cast<double>(n)}, 0, sum_tol<T>(n, 3) / static_cast<double>(n));
    check_values<T>(sg::kernel::max(t), {}, {mx}, 0, 0);
  }
  // float32 sums in blocks, so 100k positive values keep ~1e-6 relative accuracy.
  const std::vector<T> pos = uniform_values<T>({100000}, 0.5, 1.5, 9);
  double want = 0;
  for (T v : pos) want += v;
  CHECK(sg::kernel::sum(make(pos, {100000})).template item<double>() == Approx(want).epsilon(1e-6));

  const Tensor empty = make(std::vector<T>{}, {2, 0});
  check_values<T>(sg::kernel::sum(empty), {}, {0}, 0, 0);
  REQUIRE_THROWS_WITH(sg::kernel::mean(empty), Contains("mean: tensor of shape (2, 0) is empty"));
  REQUIRE_THROWS_WITH(sg::kernel::max(empty), Contains("max: tensor of shape (2, 0) is empty"));
}

TEST_CASE("int64 sum and max over every element are exact", "[core]") {
  std::vector<int64_t> x(50001);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int64_t>(i) * ((int64_t{1} << 30) + 7) - (int64_t{1} << 44);
  int64_t sum = 0, mx = x[0];
  for (int64_t v : x) sum += v, mx = std::max(mx, v);
  const Tensor t = sg::from_vector(x, {50001});
  CHECK(sg::kernel::sum(t).item<int64_t>() == sum);
  CHECK(sg::kernel::sum(t).dtype() == sg::int64);
  CHECK(sg::kernel::max(t).item<int64_t>() == mx);
  CHECK(sg::kernel::sum(sg::zeros({0}, sg::int64)).item<int64_t>() == 0);
}

// ---------------------------------------------------------------- errors and empty axes

TEST_CASE("reductions along an out-of-range axis name the op, axis and shape", "[core]") {
  const Tensor x = sg::zeros({2, 3});
  REQUIRE_THROWS_WITH(sg::kernel::sum(x, 2), Contains("sum: axis 2 out of range for a tensor of shape (2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::sum(x, -3), Contains("sum: axis -3 out of range for a tensor of shape (2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::mean(x, 5, true), Contains("mean: axis 5 out of range") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::max(x, -4), Contains("max: axis -4 out of range") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::argmax(x, 2), Contains("argmax: axis 2 out of range") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::sum(sg::scalar(1), 0), Contains("sum: axis 0 out of range for a tensor of shape ()"));
}

TEST_CASE("reductions along an empty axis: sum gives zeros, the rest throw", "[core]") {
  const Tensor x = sg::zeros({2, 0});
  CHECK(sg::kernel::sum(x, 1).to_vector<float>() == std::vector<float>{0, 0});
  CHECK(sg::kernel::sum(x, 1, true).shape() == Shape{2, 1});
  CHECK(sg::kernel::sum(x, 0).shape() == Shape{0});
  REQUIRE_THROWS_WITH(sg::kernel::max(x, 1), Contains("max: axis 1 of shape (2, 0) is empty"));
  REQUIRE_THROWS_WITH(sg::kernel::argmax(x, -1), Contains("argmax: axis 1 of shape (2, 0) is empty"));
  REQUIRE_THROWS_WITH(sg::kernel::mean(x, 1), Contains("mean: axis 1 of shape (2, 0) is empty"));
  // Reducing a non-empty axis of a tensor that is empty elsewhere.
  CHECK(sg::kernel::max(x, 0).shape() == Shape{0});
  CHECK(sg::kernel::argmax(sg::zeros({0, 3}), 1).shape() == Shape{0});
  CHECK(sg::kernel::sum(sg::zeros({0, 3}, sg::float64), 0).to_vector<double>() == std::vector<double>{0, 0, 0});
  CHECK(sg::kernel::sum(sg::zeros({2, 3, 0}), 1).shape() == Shape{2, 0});
  CHECK(sg::kernel::mean(sg::zeros({2, 3, 0}), 1, true).shape() == Shape{2, 1, 0});
}

// ---------------------------------------------------------------- sum_to

TEMPLATE_TEST_CASE("sum_to reverses broadcasting", "[core]", float, double, int64_t) {
  using T = TestType;
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3}, {3}},           {{2, 3}, {1, 3}},         {{2, 3}, {2, 1}},       {{2, 3}, {}},
      {{2, 3}, {1, 1}},        {{2, 3}, {1}},            {{4, 2, 3}, {2, 3}},    {{4, 2, 3}, {2, 1}},
      {{4, 2, 3}, {3}},        {{4, 2, 3}, {1, 2, 1}},   {{2, 5, 3}, {2, 1, 3}}, {{2, 5, 3, 4}, {5, 1, 1}},
      {{3, 1, 4}, {1, 1, 4}},  {{3, 1, 4}, {4}},         {{3, 1, 4}, {1, 4}},    {{6, 1, 5, 1, 4}, {1, 1, 5, 1, 1}},
      {{2, 3, 4, 5}, {3, 1, 5}}, {{2, 3, 4, 5}, {2, 1, 4, 1}}, {{5, 1}, {1, 1}},  {{5, 1}, {1}},
      {{7}, {1}},              {{7}, {}},                {{}, {}},               {{2, 3}, {2, 3}},
      {{0, 3}, {3}},           {{2, 0}, {2, 1}},
  };
  uint64_t seed = 300;
  for (const auto& [from, to] : cases) {
    INFO(from << " -> " << to);
    const std::vector<T> x = tie_values<T>(from, seed++);
    const Tensor t = make(x, from);
    check_values<T>(sg::kernel::sum_to(t, to), to, naive_sum_to(x, from, to), 0, 0);
  }
}

TEMPLATE_TEST_CASE("sum_to on large inputs (the parallel path)", "[core]", float, double) {
  using T = TestType;
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{512, 130}, {130}}, {{300, 200}, {300, 1}}, {{70, 8, 64}, {8, 1}}, {{40, 30, 50}, {30, 1}}, {{3, 40000}, {1, 1}}};
  ThreadCount restore;
  uint64_t seed = 400;
  for (const auto& [from, to] : cases) {
    INFO(from << " -> " << to);
    const std::vector<T> x = uniform_values<T>(from, -1, 1, seed++);
    const Tensor t = make(x, from);
    sg::set_num_threads(1);
    const Tensor one = sg::kernel::sum_to(t, to);
    check_values<T>(one, to, naive_sum_to(x, from, to), 0, sum_tol<T>(count(from) / count(to), 1));
    sg::set_num_threads(2);
    CHECK(sg::kernel::sum_to(t, to).template to_vector<T>() == one.template to_vector<T>());
  }
}

TEST_CASE("sum_to errors name both shapes", "[core]") {
  const Tensor x = sg::zeros({2, 3});
  REQUIRE_THROWS_WITH(sg::kernel::sum_to(x, {4}), Contains("sum_to") && Contains("(2, 3)") && Contains("(4)"));
  REQUIRE_THROWS_WITH(sg::kernel::sum_to(x, {2}), Contains("sum_to") && Contains("(2, 3)") && Contains("(2)"));
  REQUIRE_THROWS_WITH(sg::kernel::sum_to(x, {2, 3, 1}),
                      Contains("sum_to: cannot sum a tensor of shape (2, 3) down to (2, 3, 1)"));
  REQUIRE_THROWS_WITH(sg::kernel::sum_to(sg::zeros({1, 3}), {2, 3}),
                      Contains("sum_to: cannot sum a tensor of shape (1, 3) down to (2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::sum_to(x, {3, 2}), Contains("sum_to") && Contains("(2, 3)") && Contains("(3, 2)"));
}

// ---------------------------------------------------------------- threads

TEMPLATE_TEST_CASE("reductions on large inputs match naive loops and give the same results on 1 and 2 threads",
                   "[core]", float, double, int64_t) {
  using T = TestType;
  ThreadCount restore;
  // (200, 300) along 1: one thread per row; along 0: blocks of columns;
  // (40, 30, 50) along 1: a middle axis; (3, 20000) along 0: few long rows.
  const std::vector<Shape> shapes = {{200, 300}, {40, 30, 50}, {3, 20000}, {20000, 3}};
  uint64_t seed = 600;
  for (const Shape& shape : shapes) {
    const std::vector<T> x = uniform_values<T>(shape, -3, 3, seed++);
    const Tensor t = make(x, shape);
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis) {
      INFO("shape " << shape << ", axis " << axis);
      const int64_t n = shape[static_cast<size_t>(axis)];
      const Reduced r = naive_reduce(x, shape, axis);
      sg::set_num_threads(1);
      const Tensor s1 = sg::kernel::sum(t, axis), m1 = sg::kernel::max(t, axis), a1 = sg::kernel::argmax(t, axis);
      check_values<T>(s1, r.shape, r.sum, 0, sum_tol<T>(n, 3));
      check_values<T>(m1, r.shape, r.max, 0, 0);
      check_values<int64_t>(a1, r.shape, as_double(r.argmax), 0, 0);
      sg::set_num_threads(2);
      CHECK(sg::kernel::sum(t, axis).template to_vector<T>() == s1.template to_vector<T>());
      CHECK(sg::kernel::max(t, axis).template to_vector<T>() == m1.template to_vector<T>());
      CHECK(sg::kernel::argmax(t, axis).to_vector<int64_t>() == a1.to_vector<int64_t>());
      if constexpr (!std::is_integral_v<T>) {
        sg::set_num_threads(1);
        const std::vector<T> mean1 = sg::kernel::mean(t, axis, true).template to_vector<T>();
        sg::set_num_threads(2);
        CHECK(sg::kernel::mean(t, axis, true).template to_vector<T>() == mean1);
      }
    }
    sg::set_num_threads(1);
    const std::vector<T> total1 = sg::kernel::sum(t).template to_vector<T>();
    sg::set_num_threads(2);
    CHECK(sg::kernel::sum(t).template to_vector<T>() == total1);
  }
}

// ---------------------------------------------------------------------------
// float32 sums are accurate (core/kernels/sum.hpp): within a few ulps of the
// exact sum of the float inputs, computed here in double, also over millions
// of values (one float32 running total drifted 1% on a million 0.1s).
// ---------------------------------------------------------------------------

namespace {

// How many float32 steps apart a and b are (both finite, same sign).
int64_t ulps_apart(float a, float b) {
  return std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(a)) - std::bit_cast<int32_t>(b));
}

// Every element of got is within `ulps` float32 steps of want.
void check_ulps(const Tensor& got, double want, int64_t ulps) {
  REQUIRE(got.dtype() == sg::float32);
  const std::vector<float> v = got.to_vector<float>();
  const auto w = static_cast<float>(want);
  int64_t worst = 0;
  for (float x : v) {
    REQUIRE(std::isfinite(x));
    worst = std::max(worst, ulps_apart(x, w));
  }
  INFO(std::setprecision(10) << "got " << v[0] << ", want " << want << ", worst " << worst << " ulps");
  CHECK(worst <= ulps);
}

}  // namespace

TEST_CASE("float32 sums of long constant rows and columns are within a few ulps", "[core][accuracy]") {
  const double tenth = static_cast<double>(0.1f);  // the exact value every element holds
  // The row: 4 rows of a million 0.1s (was 100958.344 each).
  check_ulps(sg::kernel::sum(sg::full({4, 1000000}, 0.1f), 1), 1e6 * tenth, 4);
  check_ulps(sg::kernel::sum(sg::full({10000000}, 0.1f), 0), 1e7 * tenth, 4);
  check_ulps(sg::kernel::sum(sg::full({10000000}, 0.1f)), 1e7 * tenth, 4);
  // Columns: a million rows of 3 and ten million rows of 2 (a middle axis too).
  check_ulps(sg::kernel::sum(sg::full({1000000, 3}, 0.1f), 0), 1e6 * tenth, 4);
  check_ulps(sg::kernel::sum(sg::full({5000000, 2}, 0.1f), 0), 5e6 * tenth, 4);
  check_ulps(sg::kernel::sum(sg::full({2, 1000000, 3}, 0.1f), 1), 1e6 * tenth, 4);
}

TEST_CASE("float32 means: the MNIST-sized per-pixel mean and a whole-tensor mean", "[core][accuracy]") {
  // (60000, 784) along 0 was 0.129915; (4096) whole was 0.100003853.
  check_ulps(sg::kernel::mean(sg::full({60000, 784}, 0.13f), 0), static_cast<double>(0.13f), 2);
  check_ulps(sg::kernel::mean(sg::full({4096}, 0.1f)), static_cast<double>(0.1f), 2);
  check_ulps(sg::kernel::mean(sg::full({4096}, 0.1f), 0), static_cast<double>(0.1f), 2);
}

TEST_CASE("float32 sums of varied values: rows, columns and whole, on 1 and 2 threads", "[core][accuracy]") {
  ThreadCount restore;
  // Positive values, so the exact sum bounds the error's scale.
  const Shape shape{3000, 700};
  const std::vector<float> x = uniform_values<float>(shape, 0.01, 1.0, 77);
  const Tensor t = make(x, shape);
  std::vector<double> rows(3000, 0.0), cols(700, 0.0);
  double total = 0;
  for (int64_t r = 0; r < 3000; ++r)
    for (int64_t c = 0; c < 700; ++c) {
      const double v = x[static_cast<size_t>(r * 700 + c)];
      rows[static_cast<size_t>(r)] += v, cols[static_cast<size_t>(c)] += v, total += v;
    }
  for (int threads : {1, 2}) {
    sg::set_num_threads(threads);
    INFO(threads << " threads");
    const std::vector<float> got_rows = sg::kernel::sum(t, 1).to_vector<float>();
    const std::vector<float> got_cols = sg::kernel::sum(t, 0).to_vector<float>();
    int64_t worst = 0;
    for (size_t i = 0; i < rows.size(); ++i) worst = std::max(worst, ulps_apart(got_rows[i], static_cast<float>(rows[i])));
    for (size_t i = 0; i < cols.size(); ++i) worst = std::max(worst, ulps_apart(got_cols[i], static_cast<float>(cols[i])));
    CHECK(worst <= 4);
    CHECK(ulps_apart(sg::kernel::sum(t).item<float>(), static_cast<float>(total)) <= 2);
  }
}

TEST_CASE("float32 bias gradient over 2^20 rows is within a few ulps", "[core][accuracy]") {
  // sum_to, every broadcast's backward: (2^20, 8) -> (8) and -> (1, 8).
  const int64_t rows = int64_t{1} << 20;
  const double want = static_cast<double>(rows) * static_cast<double>(0.1f);
  const Tensor g = sg::full({rows, 8}, 0.1f);
  check_ulps(sg::kernel::sum_to(g, {8}), want, 4);
  check_ulps(sg::kernel::sum_to(g, {1, 8}), want, 4);
  // The same sum along axis 0 (linear's bias gradient) and through a middle axis.
  check_ulps(sg::kernel::sum(g, 0), want, 4);
  check_ulps(sg::kernel::sum_to(sg::full({2, rows / 2, 8}, 0.1f), {8}), want, 4);
}
