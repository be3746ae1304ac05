// Elementwise unary kernels (core/kernels/unary.cpp, exp_fast and exp_flush
// of core/kernels/vecmath.hpp, to() of core/kernels/layout.cpp) against std::
// functions element by element, in float32, float64 and int64.
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

std::string type_name(sg::DType d) { return sg::dtype_name(d); }

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> kernel;
  std::function<double(double)> ref;
  double lo, hi;  // input range
};

std::vector<UnaryCase> unary_cases() {
  const double c = std::sqrt(2 / std::numbers::pi);
  return {
      {"neg", sg::kernel::neg, [](double x) { return -x; }, -5, 5},
      {"abs", sg::kernel::abs, [](double x) { return std::fabs(x); }, -5, 5},
      {"exp", sg::kernel::exp, [](double x) { return std::exp(x); }, -6, 6},
      {"log", sg::kernel::log, [](double x) { return std::log(x); }, 0.01, 20},
      {"sqrt", sg::kernel::sqrt, [](double x) { return std::sqrt(x); }, 0, 20},
      {"tanh", sg::kernel::tanh, [](double x) { return std::tanh(x); }, -6, 6},
      {"sigmoid", sg::kernel::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -15, 15},
      {"relu", sg::kernel::relu, [](double x) { return x > 0 ? x : 0; }, -5, 5},
      {"pow 2", [](const Tensor& x) { return sg::kernel::pow(x, 2); }, [](double x) { return x * x; }, -5, 5},
      {"pow 3", [](const Tensor& x) { return sg::kernel::pow(x, 3); }, [](double x) { return x * x * x; }, -4, 4},
      {"pow 0.5", [](const Tensor& x) { return sg::kernel::pow(x, 0.5); }, [](double x) { return std::sqrt(x); }, 0, 10},
      {"pow 1.5", [](const Tensor& x) { return sg::kernel::pow(x, 1.5); }, [](double x) { return x * std::sqrt(x); }, 0, 10},
      {"pow -1", [](const Tensor& x) { return sg::kernel::pow(x, -1); }, [](double x) { return 1 / x; }, 0.1, 10},
      {"pow 0", [](const Tensor& x) { return sg::kernel::pow(x, 0); }, [](double) { return 1.0; }, -3, 3},
      {"gelu", sg::kernel::gelu,
       [c](double x) { return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x))); }, -6, 6},
      {"affine", [](const Tensor& x) { return sg::kernel::affine(x, 2.5, -1.25); },
       [](double x) { return 2.5 * x - 1.25; }, -5, 5},
      {"affine 0", [](const Tensor& x) { return sg::kernel::affine(x, 0, 3); }, [](double) { return 3.0; }, -5, 5},
  };
}

const std::vector<Shape>& unary_shapes() {
  static const std::vector<Shape> s = {{}, {1}, {7}, {3, 4}, {2, 3, 5}, {0, 3}, {sg::kParallelElementwise + 123}};
  return s;
}

}  // namespace

// ---------------------------------------------------------------- unary

TEMPLATE_TEST_CASE("unary ops match std:: loops", "[core]", float, double) {
  using T = TestType;
  uint64_t seed = 1;
  for (const UnaryCase& op : unary_cases()) {
    for (const Shape& shape : unary_shapes()) {
      INFO(op.name << " on " << shape << " " << type_name(sg::dtype_of<T>));
      const std::vector<T> x = uniform_values<T>(shape, op.lo, op.hi, seed++);
      std::vector<double> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) want[i] = op.ref(static_cast<double>(x[i]));
      const Tensor in = make(x, shape);
      check_values<T>(op.kernel(in), shape, want);
      CHECK(in.to_vector<T>() == x);  // the input is untouched
    }
  }
}

TEMPLATE_TEST_CASE("unary ops on special points", "[core]", float, double) {
  using T = TestType;
  const Tensor x = make(std::vector<T>{-2, -0.5, 0, 0.5, 2}, {5});
  check_values<T>(sg::kernel::relu(x), {5}, {0, 0, 0, 0.5, 2});
  check_values<T>(sg::kernel::abs(x), {5}, {2, 0.5, 0, 0.5, 2});
  check_values<T>(sg::kernel::neg(x), {5}, {2, 0.5, 0, -0.5, -2});
  check_values<T>(sg::kernel::sigmoid(x), {5},
                  {0.11920292202211755, 0.3775406687981454, 0.5, 0.6224593312018546, 0.8807970779778823});
  check_values<T>(sg::kernel::exp(make(std::vector<T>{0, 1}, {2})), {2}, {1, std::numbers::e});
  check_values<T>(sg::kernel::log(make(std::vector<T>{1, 0}, {2})), {2}, {0, -INFINITY});
  check_values<T>(sg::kernel::sqrt(make(std::vector<T>{0, 4, 2.25}, {3})), {3}, {0, 2, 1.5});
  // The tanh approximation of GELU, values from the formula in Python.
  check_values<T>(sg::kernel::gelu(make(std::vector<T>{1, -1, 2, 0.5, 0}, {5})), {5},
                  {0.8411919906082768, -0.15880800939172324, 1.954597694087775, 0.34571400982514394, 0});
  check_values<T>(sg::kernel::pow(make(std::vector<T>{-3, 4}, {2}), 2), {2}, {9, 16});
  check_values<T>(sg::kernel::pow(make(std::vector<T>{-2, 0.25}, {2}), 0.5), {2}, {NAN, 0.5});
}

TEMPLATE_TEST_CASE("sigmoid at large |x| neither overflows nor makes NaN", "[core]", float, double) {
  using T = TestType;
  const std::vector<T> x = {-1000, -750, -100, -89, -30, 30, 89, 100, 750, 1000};
  const Tensor y = sg::kernel::sigmoid(make(x, {static_cast<int64_t>(x.size())}));
  const std::vector<T> v = y.to_vector<T>();
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i] << ", sigmoid = " << v[i]);
    CHECK(std::isfinite(v[i]));
    CHECK(v[i] >= 0);
    CHECK(v[i] <= 1);
  }
  CHECK(v.front() == Approx(0).margin(1e-30));
  CHECK(v.back() == 1);
  CHECK(v[4] == Approx(9.357622968840175e-14).epsilon(1e-5));  // e^-30 / (1 + e^-30)
  CHECK(v[5] == Approx(1));
  // gelu and tanh saturate too.
  const std::vector<T> g = sg::kernel::gelu(make(std::vector<T>{-1000, 1000}, {2})).template to_vector<T>();
  CHECK(g[0] == Approx(0).margin(1e-6));
  CHECK(g[1] == 1000);
  const std::vector<T> t = sg::kernel::tanh(make(std::vector<T>{-1000, 1000}, {2})).template to_vector<T>();
  CHECK(t == std::vector<T>{-1, 1});
}

TEST_CASE("unary ops on int64: neg, abs, relu and whole-number affine work, the rest throw", "[core]") {
  const std::vector<int64_t> x = {-5, -1, 0, 1, 7, int64_t{1} << 40};
  const Tensor t = sg::from_vector(x, {2, 3});
  std::vector<double> neg, abs, relu;
  for (int64_t v : x) {
    neg.push_back(static_cast<double>(-v));
    abs.push_back(static_cast<double>(v < 0 ? -v : v));
    relu.push_back(static_cast<double>(v > 0 ? v : 0));
  }
  check_values<int64_t>(sg::kernel::neg(t), {2, 3}, neg);
  check_values<int64_t>(sg::kernel::abs(t), {2, 3}, abs);
  check_values<int64_t>(sg::kernel::relu(t), {2, 3}, relu);

  REQUIRE_THROWS_WITH(sg::kernel::exp(t), Contains("exp") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::log(t), Contains("log") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::sqrt(t), Contains("sqrt") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::tanh(t), Contains("tanh") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::sigmoid(t), Contains("sigmoid") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::pow(t, 2), Contains("pow") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::pow(t, 0.5), Contains("pow") && Contains("int64"));
  REQUIRE_THROWS_WITH(sg::kernel::gelu(t), Contains("gelu") && Contains("int64"));
  std::vector<double> affine;
  for (int64_t v : x) affine.push_back(static_cast<double>(v * 2 + 1));
  check_values<int64_t>(sg::kernel::affine(t, 2, 1), {2, 3}, affine);
  REQUIRE_THROWS_WITH(sg::kernel::affine(t, 0.5, 1), Contains("affine: an int64 tensor of shape (2, 3) takes whole alpha and beta, got 0.5 and 1"));
  REQUIRE_THROWS_WITH(sg::kernel::affine(t, 2, 0.25), Contains("affine") && Contains("int64"));
}

TEST_CASE("to() converts between every pair of dtypes", "[core]") {
  const std::vector<double> v = {2.7, -2.7, 0.5, -0.5, 3, 1e10, 0.1};
  const Tensor d = sg::from_vector(v, {7});
  const Tensor f = sg::kernel::to(d, sg::float32);
  CHECK(f.dtype() == sg::float32);
  CHECK(f.shape() == Shape{7});
  std::vector<float> want_f;
  for (double x : v) want_f.push_back(static_cast<float>(x));
  CHECK(f.to_vector<float>() == want_f);
  // float -> int64 truncates toward zero, as a C++ cast.
  CHECK(sg::kernel::to(d, sg::int64).to_vector<int64_t>() == std::vector<int64_t>{2, -2, 0, 0, 3, 10000000000, 0});
  CHECK(sg::kernel::to(f, sg::int64).to_vector<int64_t>() == std::vector<int64_t>{2, -2, 0, 0, 3, 10000000000, 0});
  // float32 -> float64 is exact.
  const Tensor back = sg::kernel::to(f, sg::float64);
  std::vector<double> want_d(want_f.begin(), want_f.end());
  CHECK(back.to_vector<double>() == want_d);
  const Tensor i = sg::from_vector(std::vector<int64_t>{-3, 0, 5, int64_t{1} << 40}, {2, 2});
  CHECK(sg::kernel::to(i, sg::float64).to_vector<double>() == std::vector<double>{-3, 0, 5, 1099511627776.0});
  CHECK(sg::kernel::to(i, sg::float32).shape() == Shape{2, 2});
  CHECK(sg::kernel::to(i, sg::float32).to_vector<float>() == std::vector<float>{-3, 0, 5, 1099511627776.0f});
  CHECK(sg::kernel::to(sg::zeros({0, 2}), sg::int64).shape() == Shape{0, 2});

  // Same dtype still copies.
  Tensor same = sg::kernel::to(d, sg::float64);
  CHECK(same.raw_data() != d.raw_data());
  same.data<double>()[0] = 99;
  CHECK(d.data<double>()[0] == 2.7);

  // A view converts only its own elements.
  CHECK(sg::kernel::to(sg::kernel::select(i, 1), sg::float64).to_vector<double>() == std::vector<double>{5, 1099511627776.0});

  // Large, on 1 and 2 threads.
  ThreadCount restore;
  const std::vector<double> big = uniform_values<double>({50000}, -100, 100, 8);
  const Tensor bt = sg::from_vector(big, {50000});
  std::vector<int64_t> want_i;
  for (double x : big) want_i.push_back(static_cast<int64_t>(x));
  sg::set_num_threads(1);
  CHECK(sg::kernel::to(bt, sg::int64).to_vector<int64_t>() == want_i);
  sg::set_num_threads(2);
  CHECK(sg::kernel::to(bt, sg::int64).to_vector<int64_t>() == want_i);
}

TEMPLATE_TEST_CASE("unary ops give the same results on 1 and 2 threads", "[core]", float, double) {
  using T = TestType;
  ThreadCount restore;
  const Shape shape = {3 * sg::kParallelElementwise + 11};
  for (const UnaryCase& op : unary_cases()) {
    INFO(op.name);
    const Tensor x = make(uniform_values<T>(shape, op.lo, op.hi, 31), shape);
    sg::set_num_threads(1);
    const std::vector<T> one = op.kernel(x).template to_vector<T>();
    sg::set_num_threads(2);
    const std::vector<T> two = op.kernel(x).template to_vector<T>();
    CHECK(one == two);
  }
}

// core/kernels/vecmath.hpp: the vectorisable float exp behind softmax and kernel::exp.
TEST_CASE("exp_fast is within 2e-7 of std::exp over float32's whole range", "[elementwise]") {
  double worst = 0;
  float worst_x = 0;
  // Every 1/1024 from -104 to 89: results from subnormal to the largest float.
  for (int64_t i = -104 * 1024; i <= 89 * 1024; ++i) {
    const float x = static_cast<float>(i) / 1024.0f;
    const double want = std::exp(static_cast<double>(x));
    const double got = sg::kernel::exp_fast(x);
    if (want > std::numeric_limits<float>::max()) {
      REQUIRE(std::isinf(got));
    } else if (want < std::numeric_limits<float>::min()) {
      REQUIRE(std::fabs(got - want) <= std::numeric_limits<float>::denorm_min());  // gradual underflow
    } else if (const double rel = test_util::rel_diff(got, want); rel > worst) {  // NaN-proof
      worst = rel;
      worst_x = x;
    }
  }
  INFO("worst relative error " << worst << " at x = " << worst_x);
  REQUIRE(worst < 2e-7);
  const float inf = std::numeric_limits<float>::infinity();
  REQUIRE(sg::kernel::exp_fast(0.0f) == 1.0f);
  REQUIRE(sg::kernel::exp_fast(-inf) == 0.0f);
  REQUIRE(sg::kernel::exp_fast(-1e6f) == 0.0f);  // masked attention scores
  REQUIRE(std::isinf(sg::kernel::exp_fast(inf)));
  REQUIRE(std::isinf(sg::kernel::exp_fast(1e6f)));
  REQUIRE(std::isnan(sg::kernel::exp_fast(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("exp_flush is exp_fast down to e^-87 and 0 below it, never subnormal", "[elementwise]") {
  for (int64_t i = -110 * 1024; i <= 89 * 1024; ++i) {
    const float x = static_cast<float>(i) / 1024.0f;
    const float got = sg::kernel::exp_flush(x);
    INFO("x = " << x);
    if (x >= -87.0f) {
      REQUIRE(got == sg::kernel::exp_fast(x));
      REQUIRE((std::isinf(got) || got >= std::numeric_limits<float>::min()));
    } else {
      REQUIRE(got == 0.0f);
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  REQUIRE(sg::kernel::exp_flush(-inf) == 0.0f);
  REQUIRE(sg::kernel::exp_flush(-1e6f) == 0.0f);
  REQUIRE(std::isinf(sg::kernel::exp_flush(inf)));
  REQUIRE(std::isnan(sg::kernel::exp_flush(std::numeric_limits<float>::quiet_NaN())));
  REQUIRE(sg::kernel::exp_flush(-87.5) == std::exp(-87.5));  // float64 is std::exp, nothing flushed
}
