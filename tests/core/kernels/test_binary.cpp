// Elementwise binary kernels (core/kernels/binary.cpp) and the in-place ones
// (add_, scale_, fill_, copy_), against a naive broadcasting loop that maps
// each output multi-index to each input (size-1 and missing axes -> index 0).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <limits>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"

#include "core/kernels/vecmath.hpp"  // not in the umbrella header: an internal kernel helper

#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using namespace test_util;

namespace {

// Values from {-2, -1.5, ..., 2} without 0 (integers -4..4 without 0 for
// int64): comparisons see many ties, and division never meets 0.
template <class T>
std::vector<T> tie_values(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> d(-4, 3);
  std::vector<T> v(static_cast<size_t>(count(s)));
  for (auto& x : v) {
    int k = d(rng);
    k = k >= 0 ? k + 1 : k;  // -4..-1, 1..4
    if constexpr (std::is_integral_v<T>)
      x = k;
    else
      x = static_cast<T>(k * 0.5);
  }
  return v;
}

// The flat index into `in` of the element that broadcasting sends to output
// element `flat` of shape `out`: shapes align at the right, an axis of size 1
// reads index 0, and missing leading axes are ignored.
int64_t broadcast_source(int64_t flat, const Shape& out, const Shape& in) {
  int64_t idx = 0, stride = 1, rem = flat;
  for (size_t k = 0; k < out.size(); ++k) {
    const int64_t size = out[out.size() - 1 - k];
    const int64_t i = rem % size;
    rem /= size;
    if (k < in.size()) {
      const int64_t d = in[in.size() - 1 - k];
      idx += (d == 1 ? 0 : i) * stride;
      stride *= d;
    }
  }
  return idx;
}

template <class T, class F>
std::vector<double> naive_binary(const std::vector<T>& a, const Shape& sa, const std::vector<T>& b,
                                 const Shape& sb, const Shape& out, F f) {
  std::vector<double> r(static_cast<size_t>(count(out)));
  for (int64_t i = 0; i < count(out); ++i)
    r[static_cast<size_t>(i)] = f(static_cast<double>(a[static_cast<size_t>(broadcast_source(i, out, sa))]),
                                  static_cast<double>(b[static_cast<size_t>(broadcast_source(i, out, sb))]));
  return r;
}

struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> kernel;
  std::function<double(double, double)> ref;
  bool ints_ok;
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", sg::kernel::add, [](double x, double y) { return x + y; }, true},
      {"sub", sg::kernel::sub, [](double x, double y) { return x - y; }, true},
      {"mul", sg::kernel::mul, [](double x, double y) { return x * y; }, true},
      {"div", sg::kernel::div, [](double x, double y) { return x / y; }, false},
      {"maximum", sg::kernel::maximum, [](double x, double y) { return x > y ? x : y; }, true},
      {"minimum", sg::kernel::minimum, [](double x, double y) { return x < y ? x : y; }, true},
      {"eq", sg::kernel::eq, [](double x, double y) { return x == y ? 1.0 : 0.0; }, true},
      {"ne", sg::kernel::ne, [](double x, double y) { return x != y ? 1.0 : 0.0; }, true},
      {"lt", sg::kernel::lt, [](double x, double y) { return x < y ? 1.0 : 0.0; }, true},
      {"le", sg::kernel::le, [](double x, double y) { return x <= y ? 1.0 : 0.0; }, true},
      {"gt", sg::kernel::gt, [](double x, double y) { return x > y ? 1.0 : 0.0; }, true},
      {"ge", sg::kernel::ge, [](double x, double y) { return x >= y ? 1.0 : 0.0; }, true},
  };
}

struct ShapeCase {
  Shape a, b, out;
};

// Broadcasting edge cases; the expected output shape is written out here.
const std::vector<ShapeCase>& small_shape_cases() {
  static const std::vector<ShapeCase> s = {
      {{2, 3}, {2, 3}, {2, 3}},                    // same shape
      {{4, 5}, {5}, {4, 5}},                       // (N, C) + (C)
      {{5}, {4, 5}, {4, 5}},                       // the same, swapped
      {{4, 1}, {1, 5}, {4, 5}},                    // (N, 1) + (1, C)
      {{1, 5}, {4, 1}, {4, 5}},
      {{4, 5}, {4, 1}, {4, 5}},                    // a column
      {{}, {3, 4}, {3, 4}},                        // scalar with tensor
      {{3, 4}, {}, {3, 4}},
      {{}, {}, {}},                                // two scalars
      {{1}, {}, {1}},
      {{1}, {3}, {3}},
      {{1, 1}, {3}, {1, 3}},                       // size-1 axes kept in the output
      {{2, 1, 3}, {4, 1}, {2, 4, 3}},              // rank difference
      {{4, 1}, {2, 1, 3}, {2, 4, 3}},
      {{3, 1, 4}, {3, 5, 4}, {3, 5, 4}},           // size-1 middle axis
      {{3, 5, 4}, {1, 5, 1}, {3, 5, 4}},
      {{2, 1, 1, 3}, {1, 4, 5, 1}, {2, 4, 5, 3}},  // every axis broadcasts one way or the other
      {{2, 3, 1, 2}, {3, 4, 1}, {2, 3, 4, 2}},
      {{1, 1, 6}, {6}, {1, 1, 6}},
      {{6, 1, 1}, {1, 1, 1}, {6, 1, 1}},
  };
  return s;
}

// Above kParallelElementwise (32768 elements), so the OpenMP path runs:
// many short rows, few long rows split into blocks, one flat row, a scalar.
const std::vector<ShapeCase>& large_shape_cases() {
  static const std::vector<ShapeCase> s = {
      {{300, 200}, {200}, {300, 200}},
      {{3, 20000}, {3, 1}, {3, 20000}},
      {{70001}, {70001}, {70001}},
      {{}, {40000}, {40000}},
      {{8, 1, 4100}, {3, 1}, {8, 3, 4100}},
      {{130, 1, 260}, {1, 2, 260}, {130, 2, 260}},
  };
  return s;
}

template <class T>
void check_binary_case(const BinaryCase& op, const ShapeCase& sc, const std::vector<T>& a,
                       const std::vector<T>& b) {
  INFO(op.name << ": " << sc.a << " with " << sc.b);
  const Tensor out = op.kernel(make(a, sc.a), make(b, sc.b));
  // One rounding of an exact result: float32 within 2^-24 relative.
  const double rel = std::is_same_v<T, float> ? 1e-7 : std::is_same_v<T, double> ? 1e-15 : 0;
  check_values<T>(out, sc.out, naive_binary(a, sc.a, b, sc.b, sc.out, op.ref), rel, 0);
}

}  // namespace

// ---------------------------------------------------------------- binary

TEST_CASE("broadcast_shapes follows NumPy", "[core]") {
  for (const ShapeCase& sc : small_shape_cases()) {
    INFO(sc.a << " with " << sc.b);
    CHECK(sg::kernel::broadcast_shapes(sc.a, sc.b, "test") == sc.out);
  }
  CHECK(sg::kernel::broadcast_shapes({0, 3}, {3}, "test") == Shape{0, 3});
  CHECK(sg::kernel::broadcast_shapes({0, 3}, {1, 1}, "test") == Shape{0, 3});
  REQUIRE_THROWS_WITH(sg::kernel::broadcast_shapes({2, 3}, {4}, "myop"), Contains("myop: cannot broadcast (2, 3) with (4)"));
  REQUIRE_THROWS_WITH(sg::kernel::broadcast_shapes({0}, {2}, "myop"), Contains("myop: cannot broadcast (0) with (2)"));
}

TEMPLATE_TEST_CASE("binary ops broadcast like a naive loop", "[core]", float, double, int64_t) {
  using T = TestType;
  uint64_t seed = 100;
  for (const BinaryCase& op : binary_cases()) {
    if (std::is_integral_v<T> && !op.ints_ok) continue;
    for (const ShapeCase& sc : small_shape_cases()) {
      // Values with ties (comparisons, maximum), then values without.
      check_binary_case<T>(op, sc, tie_values<T>(sc.a, seed), tie_values<T>(sc.b, seed + 1));
      std::vector<T> a = uniform_values<T>(sc.a, -3, 3, seed + 2), b = uniform_values<T>(sc.b, 0.5, 3, seed + 3);
      check_binary_case<T>(op, sc, a, b);
      seed += 4;
    }
  }
}

TEMPLATE_TEST_CASE("binary ops on large tensors (the parallel path)", "[core]", float, double, int64_t) {
  using T = TestType;
  uint64_t seed = 500;
  for (const ShapeCase& sc : large_shape_cases()) {
    REQUIRE(count(sc.out) >= sg::kParallelElementwise);
    const std::vector<T> a = tie_values<T>(sc.a, seed++), b = tie_values<T>(sc.b, seed++);
    for (const BinaryCase& op : binary_cases())
      if (!std::is_integral_v<T> || op.ints_ok) check_binary_case<T>(op, sc, a, b);
  }
}

TEMPLATE_TEST_CASE("binary ops give the same results on 1 and 2 threads", "[core]", float, double, int64_t) {
  using T = TestType;
  ThreadCount restore;
  uint64_t seed = 900;
  for (const ShapeCase& sc : large_shape_cases()) {
    const Tensor a = make(uniform_values<T>(sc.a, -3, 3, seed++), sc.a);
    const Tensor b = make(uniform_values<T>(sc.b, 1, 3, seed++), sc.b);
    for (const BinaryCase& op : binary_cases()) {
      if (std::is_integral_v<T> && !op.ints_ok) continue;
      INFO(op.name << ": " << sc.a << " with " << sc.b);
      sg::set_num_threads(1);
      const std::vector<T> one = op.kernel(a, b).template to_vector<T>();
      sg::set_num_threads(2);
      const std::vector<T> two = op.kernel(a, b).template to_vector<T>();
      CHECK(one == two);
    }
  }
}

TEMPLATE_TEST_CASE("binary ops on empty tensors", "[core]", float, double, int64_t) {
  using T = TestType;
  const std::vector<ShapeCase> cases = {
      {{0}, {0}, {0}}, {{0, 3}, {3}, {0, 3}}, {{2, 0}, {2, 0}, {2, 0}}, {{}, {4, 0}, {4, 0}}, {{2, 1, 0}, {3, 1}, {2, 3, 0}}};
  for (const ShapeCase& sc : cases)
    for (const BinaryCase& op : binary_cases()) {
      if (std::is_integral_v<T> && !op.ints_ok) continue;
      INFO(op.name << ": " << sc.a << " with " << sc.b);
      const Tensor out = op.kernel(make(std::vector<T>(static_cast<size_t>(count(sc.a)), T(1)), sc.a),
                                   make(std::vector<T>(static_cast<size_t>(count(sc.b)), T(1)), sc.b));
      CHECK(out.shape() == sc.out);
      CHECK(out.numel() == 0);
    }
}

TEMPLATE_TEST_CASE("maximum and minimum propagate NaN", "[core]", float, double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const Tensor a = make(std::vector<T>{nan, 1, nan, -1}, {4});
  const Tensor b = make(std::vector<T>{1, nan, nan, 2}, {4});
  check_values<T>(sg::kernel::maximum(a, b), {4}, {NAN, NAN, NAN, 2});
  check_values<T>(sg::kernel::minimum(a, b), {4}, {NAN, NAN, NAN, -1});
  check_values<T>(sg::kernel::eq(a, a), {4}, {0, 1, 0, 1});
  check_values<T>(sg::kernel::ne(a, a), {4}, {1, 0, 1, 0});
}

TEST_CASE("binary op errors name the op, the shapes and the dtypes", "[core]") {
  const Tensor f23 = sg::zeros({2, 3}), d3 = sg::zeros({3}, sg::float64), f4 = sg::zeros({4});
  const Tensor i23 = sg::zeros({2, 3}, sg::int64);
  for (const BinaryCase& op : binary_cases()) {
    INFO(op.name);
    REQUIRE_THROWS_WITH(op.kernel(f23, d3), Contains(op.name + ": dtypes differ") && Contains("float32") &&
                                                Contains("float64") && Contains("(2, 3)") && Contains("(3)"));
    REQUIRE_THROWS_WITH(op.kernel(i23, f23), Contains(op.name) && Contains("int64") && Contains("float32"));
    REQUIRE_THROWS_WITH(op.kernel(f23, f4), Contains(op.name + ": cannot broadcast (2, 3) with (4)"));
    REQUIRE_THROWS_WITH(op.kernel(sg::zeros({2, 3, 4}), sg::zeros({3, 5})),
                        Contains(op.name + ": cannot broadcast (2, 3, 4) with (3, 5)"));
    REQUIRE_THROWS_WITH(op.kernel(sg::zeros({3, 2}), f23), Contains(op.name + ": cannot broadcast (3, 2) with (2, 3)"));
  }
  REQUIRE_THROWS_WITH(sg::kernel::div(i23, i23), Contains("div") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::add(f23, Tensor{}), Contains("undefined tensor"));
}

// ---------------------------------------------------------------- in place

TEMPLATE_TEST_CASE("add_ broadcasts src into dst in place", "[core]", float, double, int64_t) {
  using T = TestType;
  const std::vector<ShapeCase> cases = {
      {{4, 5}, {5}, {4, 5}},     {{4, 5}, {4, 1}, {4, 5}},   {{4, 5}, {}, {4, 5}},
      {{4, 5}, {4, 5}, {4, 5}},  {{2, 3, 4}, {3, 1}, {2, 3, 4}}, {{2, 3, 4}, {2, 1, 4}, {2, 3, 4}},
      {{}, {}, {}},              {{300, 200}, {200}, {300, 200}}, {{3, 20000}, {3, 1}, {3, 20000}},
      {{0, 3}, {3}, {0, 3}}};
  uint64_t seed = 2000;
  for (const ShapeCase& sc : cases) {
    INFO(sc.a << " += " << sc.b);
    const std::vector<T> a = tie_values<T>(sc.a, seed++), b = tie_values<T>(sc.b, seed++);
    Tensor dst = make(a, sc.a);
    const void* before = dst.raw_data();
    sg::kernel::add_(dst, make(b, sc.b));
    CHECK(dst.raw_data() == before);
    check_values<T>(dst, sc.out, naive_binary(a, sc.a, b, sc.b, sc.out, [](double x, double y) { return x + y; }), 0, 0);
  }
}

TEST_CASE("add_ into a view changes only the viewed part", "[core]") {
  Tensor x = sg::zeros({3, 4}, sg::float64);
  Tensor row = sg::kernel::select(x, 1);
  sg::kernel::add_(row, sg::from_vector(std::vector<double>{1, 2, 3, 4}, {4}));
  CHECK(x.to_vector<double>() == std::vector<double>{0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0});
}

TEST_CASE("add_ errors name both shapes", "[core]") {
  Tensor d3 = sg::zeros({3});
  REQUIRE_THROWS_WITH(sg::kernel::add_(d3, sg::zeros({2, 3})),
                      Contains("add_: cannot add a tensor of shape (2, 3) into one of shape (3)"));
  Tensor d41 = sg::zeros({4, 1});
  REQUIRE_THROWS_WITH(sg::kernel::add_(d41, sg::zeros({5})), Contains("add_") && Contains("(5)") && Contains("(4, 1)"));
  Tensor d23 = sg::zeros({2, 3});
  REQUIRE_THROWS_WITH(sg::kernel::add_(d23, sg::zeros({4})), Contains("add_: cannot broadcast (2, 3) with (4)"));
  REQUIRE_THROWS_WITH(sg::kernel::add_(d23, sg::zeros({2, 3}, sg::float64)),
                      Contains("add_: dtypes differ: float32 (2, 3) and float64 (2, 3)"));
  CHECK(d23.to_vector<float>() == std::vector<float>(6, 0.0f));  // untouched by the failures
}

TEMPLATE_TEST_CASE("scale_ and fill_ in place", "[core]", float, double) {
  using T = TestType;
  for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 5}, Shape{sg::kParallelElementwise + 5}}) {
    INFO(shape);
    const std::vector<T> x = uniform_values<T>(shape, -4, 4, 77);
    Tensor t = make(x, shape);
    sg::kernel::scale_(t, -1.5);
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = static_cast<double>(x[i] * static_cast<T>(-1.5));
    check_values<T>(t, shape, want, 0, 0);
    sg::kernel::fill_(t, 0.25);
    check_values<T>(t, shape, std::vector<double>(x.size(), 0.25), 0, 0);
  }
  // On a view, only the view changes.
  Tensor m = make(std::vector<T>{1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor tail = sg::kernel::slice(m, 0, 1, 3);
  sg::kernel::scale_(tail, 10);
  check_values<T>(m, {3, 2}, {1, 2, 30, 40, 50, 60}, 0, 0);
  Tensor first = sg::kernel::select(m, 0);
  sg::kernel::fill_(first, -1);
  check_values<T>(m, {3, 2}, {-1, -1, 30, 40, 50, 60}, 0, 0);
}

TEST_CASE("fill_ on int64, scale_ refuses int64", "[core]") {
  Tensor t = sg::zeros({2, 2}, sg::int64);
  sg::kernel::fill_(t, 9);
  CHECK(t.to_vector<int64_t>() == std::vector<int64_t>(4, 9));
  sg::kernel::fill_(t, -3.0);
  CHECK(t.to_vector<int64_t>() == std::vector<int64_t>(4, -3));
  REQUIRE_THROWS_WITH(sg::kernel::scale_(t, 2), Contains("scale_") && Contains("int64"));
}

TEMPLATE_TEST_CASE("copy_ copies values and checks shape and dtype", "[core]", float, double, int64_t) {
  using T = TestType;
  const std::vector<T> src = tie_values<T>({2, 3}, 5);
  Tensor dst = sg::zeros({2, 3}, sg::dtype_of<T>);
  Tensor s = make(src, {2, 3});
  sg::kernel::copy_(dst, s);
  CHECK(dst.to_vector<T>() == src);
  CHECK(dst.raw_data() != s.raw_data());
  s.template data<T>()[0] = T(100);  // the copy is independent
  CHECK(dst.template data<T>()[0] == src[0]);

  // Into a view of a bigger tensor.
  Tensor big = sg::zeros({3, 2, 3}, sg::dtype_of<T>);
  Tensor mid = sg::kernel::select(big, 1);
  sg::kernel::copy_(mid, dst);
  const std::vector<T> all = big.to_vector<T>();
  CHECK(std::vector<T>(all.begin() + 6, all.begin() + 12) == src);
  CHECK(std::vector<T>(all.begin(), all.begin() + 6) == std::vector<T>(6, T(0)));
  CHECK(std::vector<T>(all.begin() + 12, all.end()) == std::vector<T>(6, T(0)));
  sg::kernel::copy_(dst, dst);  // self copy is a no-op
  CHECK(dst.to_vector<T>() == src);

  REQUIRE_THROWS_WITH(sg::kernel::copy_(dst, sg::zeros({3, 2}, sg::dtype_of<T>)),
                      Contains("copy_: shapes (2, 3) and (3, 2) differ"));
  const sg::DType other = sg::dtype_of<T> == sg::float32 ? sg::float64 : sg::float32;
  REQUIRE_THROWS_WITH(sg::kernel::copy_(dst, sg::zeros({2, 3}, other)),
                      Contains("copy_: dtypes differ") && Contains(sg::dtype_name(other)) && Contains("(2, 3)"));
}

// ---------------------------------------------------------------- broadcast_to, to

TEMPLATE_TEST_CASE("broadcast_to repeats along broadcast axes", "[core]", float, double, int64_t) {
  using T = TestType;
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3}, {2, 3}},          {{2, 1}, {2, 4}},   {{}, {2, 2}},          {{1, 3, 1}, {2, 3, 4}},
      {{3}, {3}},             {{1}, {5}},         {{4, 1, 2}, {3, 4, 5, 2}}, {{}, {}},
      {{2, 1, 3}, {2, 0, 3}}, {{200}, {300, 200}}, {{1, 20000}, {3, 20000}}};
  ThreadCount restore;
  uint64_t seed = 40;
  for (const auto& [from, to] : cases) {
    INFO(from << " -> " << to);
    const std::vector<T> x = tie_values<T>(from, seed++);
    std::vector<double> want(static_cast<size_t>(count(to)));
    for (int64_t i = 0; i < count(to); ++i) want[static_cast<size_t>(i)] = static_cast<double>(x[static_cast<size_t>(broadcast_source(i, to, from))]);
    sg::set_num_threads(1);
    const Tensor one = sg::kernel::broadcast_to(make(x, from), to);
    check_values<T>(one, to, want, 0, 0);
    sg::set_num_threads(2);
    check_values<T>(sg::kernel::broadcast_to(make(x, from), to), to, want, 0, 0);
  }
  const Tensor x23 = sg::zeros({2, 3}, sg::dtype_of<T>);
  REQUIRE_THROWS_WITH(sg::kernel::broadcast_to(x23, {3}), Contains("broadcast_to: cannot broadcast (2, 3) to (3)"));
  REQUIRE_THROWS_WITH(sg::kernel::broadcast_to(x23, {2, 1}), Contains("broadcast_to: cannot broadcast (2, 3) to (2, 1)"));
  REQUIRE_THROWS_WITH(sg::kernel::broadcast_to(x23, {4, 3, 3}), Contains("broadcast_to") && Contains("(2, 3)") && Contains("(4, 3, 3)"));
}
