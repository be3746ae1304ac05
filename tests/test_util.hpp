#pragma once
// The one place for helpers that more than one test file uses, each written
// once: tensors from plain vectors, seeded random values drawn with the
// standard library (independently of sg's own generator, so a bug there
// cannot hide in the expected values), value comparisons, gradchecks with the
// default tolerances, temporary folders and files, resident memory.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <random>
#include <type_traits>
#include <vector>

// No op and no layer: the tests' precompiled header holds this file, so
// adding or changing an op or a layer recompiles only the tests that include
// it (the layers' helpers are in nn_util.hpp).
#include "autograd/tools/gradcheck.hpp"
#include "core/random.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"

namespace test_util {

using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;

inline int64_t count(const sg::Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// A tensor of T's dtype (float32, float64 or int64) holding v.
template <class T>
sg::Tensor make(const std::vector<T>& v, const sg::Shape& s) {
  if constexpr (std::is_same_v<T, double>)
    return sg::from_vector(v, s, sg::float64);
  else
    return sg::from_vector(v, s);
}

// Uniform values in [lo, hi] (integers for int64), from a seeded std::mt19937_64.
template <class T>
std::vector<T> uniform_values(const sg::Shape& s, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(static_cast<size_t>(count(s)));
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (auto& x : v) x = d(rng);
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& x : v) x = static_cast<T>(d(rng));
  }
  return v;
}

// A float64 standard-normal tensor for gradchecks, from sg's generator.
inline sg::Tensor normal(const sg::Shape& shape, uint64_t seed) {
  sg::Generator gen(seed);
  return sg::randn(shape, gen, sg::float64);
}

// The multi-index of row-major element `flat` of `shape`, and back.
inline std::vector<int64_t> unravel(int64_t flat, const sg::Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = flat % shape[k];
    flat /= shape[k];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const sg::Shape& shape) {
  int64_t flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + idx[k];
  return flat;
}

// ---- NaN-proof comparisons ----
// A NaN compares false with everything, so a running maximum such as
// `worst = std::max(worst, d)` or `if (d > worst) worst = d` silently skips
// it (or, with `if (!(d <= worst))`, lets the next finite element overwrite
// it). These helpers count a NaN or an infinity in either operand as an
// infinite error, so a comparison built on them always fails on one.
// tests/test_compare.cpp proves it.
constexpr double kInf = std::numeric_limits<double>::infinity();

inline double abs_diff(double got, double want) {
  return std::isfinite(got) && std::isfinite(want) ? std::fabs(got - want) : kInf;
}
// |got - want| / |want|; infinite for a non-finite operand or want == 0 != got.
inline double rel_diff(double got, double want) {
  if (!std::isfinite(got) || !std::isfinite(want)) return kInf;
  if (got == want) return 0;
  return want == 0 ? kInf : std::fabs(got - want) / std::fabs(want);
}

// The element where got is furthest past its bound (bound(i) >= 0), and by
// how much (excess <= 0: within). Sizes that differ are an infinite excess.
struct Worst {
  double excess = -kInf;
  size_t index = 0;
  bool ok() const { return excess <= 0; }  // false for an infinite or NaN excess
};
inline Worst worst_excess(const std::vector<double>& got, const std::vector<double>& want,
                          const std::function<double(size_t)>& bound) {
  Worst w;
  if (got.size() != want.size()) return {kInf, 0};
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = abs_diff(got[i], want[i]) - bound(i);
    if (e > w.excess || std::isnan(e)) w = {std::isnan(e) ? kInf : e, i};
  }
  return w;
}

// The largest rel_diff over the elements (infinite if any is non-finite).
inline double max_rel_diff(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return kInf;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = rel_diff(got[i], want[i]);
    if (d > worst) worst = d;  // d is never NaN
  }
  return worst;
}

// got has shape and T's dtype, and every element is within abs + rel * |want|
// of want. A NaN or infinity in got fails unless want holds exactly that
// value there (tests of NaN and overflow propagation spell it out in want). One assertion per tensor, reporting how many
// elements differ and the first of them.
template <class T>
void check_values(const sg::Tensor& got, const sg::Shape& shape, const std::vector<double>& want,
                  double rel, double abs) {
  REQUIRE(got.shape() == shape);
  REQUIRE(got.dtype() == sg::dtype_of<T>);
  const std::vector<T> g = got.to_vector<T>();
  REQUIRE(g.size() == want.size());
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < g.size(); ++i) {
    const double gi = static_cast<double>(g[i]), wi = want[i];
    const bool ok = (std::isnan(gi) && std::isnan(wi)) || gi == wi ||
                    std::fabs(gi - wi) <= abs + rel * std::fabs(wi);
    if (!ok && bad++ == 0)
      first << std::setprecision(17) << "first mismatch at flat index " << i << ": got " << gi
            << ", want " << wi;
  }
  INFO(first.str());
  CHECK(bad == 0);
}

// Restores the thread count when the test ends.
struct ThreadCount {
  int saved = sg::num_threads();
  ~ThreadCount() { sg::set_num_threads(saved); }
};

// ---- values ----

// Values in [0.5, 2): safe for log, sqrt, fractional powers and division.
inline Tensor positive(const Shape& shape, uint64_t seed) {
  sg::Generator gen(seed);
  return sg::rand(shape, gen, sg::float64, 0.5, 2.0);
}

// An int64 tensor of ids, valid lengths or targets.
inline Tensor ids(std::vector<int64_t> v, const Shape& shape) { return sg::from_vector(v, shape); }

inline std::string shape_str(const Shape& s) { return sg::detail::cat(s); }

// Naive softmax of one row, in double.
inline std::vector<double> softmax_row(const std::vector<double>& z) {
  double m = z[0];
  for (double v : z) m = std::max(m, v);
  double total = 0;
  std::vector<double> e(z.size());
  for (size_t j = 0; j < z.size(); ++j) total += e[j] = std::exp(z[j] - m);
  for (double& v : e) v /= total;
  return e;
}

// Rotates u (d values, d even) in place for position t, by the formula of
// rotary embeddings: pair (2j, 2j+1) turns by t * 10000^(-2j/d).
inline void rotate(std::vector<double>& u, int64_t t) {
  const size_t d = u.size();
  for (size_t j = 0; j < d / 2; ++j) {
    const double a = static_cast<double>(t) * std::pow(10000.0, -2.0 * static_cast<double>(j) / static_cast<double>(d));
    const double x = u[2 * j], y = u[2 * j + 1];
    u[2 * j] = x * std::cos(a) - y * std::sin(a);
    u[2 * j + 1] = x * std::sin(a) + y * std::cos(a);
  }
}

// ---- comparisons ----

// got has shape and T's dtype and exactly the values want.
template <class T>
void check_exact(const Tensor& got, const Shape& shape, const std::vector<T>& want) {
  REQUIRE(got.shape() == shape);
  REQUIRE(got.dtype() == sg::dtype_of<T>);
  CHECK(got.to_vector<T>() == want);
}

// Tolerances of the kernel tests per element type: one or a few roundings.
template <class T>
struct Tol;
template <>
struct Tol<float> {
  static constexpr double rel = 1e-5, abs = 1e-6;
};
template <>
struct Tol<double> {
  static constexpr double rel = 1e-12, abs = 1e-14;
};
template <>
struct Tol<int64_t> {
  static constexpr double rel = 0, abs = 0;
};

// check_values with Tol<T>'s tolerances.
template <class T>
void check_values(const Tensor& got, const Shape& shape, const std::vector<double>& want) {
  check_values<T>(got, shape, want, Tol<T>::rel, Tol<T>::abs);
}

// Runs sg::gradcheck with the default (tight) tolerances and requires it to
// pass on every element of every floating input.
inline void check_gradient(const std::string& name, const sg::GradcheckFn& fn, const Inputs& inputs,
                           sg::GradcheckOptions options = {}) {
  options.name = name;
  const sg::GradcheckResult r = sg::gradcheck(fn, inputs, options);
  INFO(name);
  REQUIRE(r);
  int64_t expected = 0;
  for (const Tensor& t : inputs)
    if (sg::is_floating(t.dtype())) expected += std::min(t.numel(), options.max_elements);
  REQUIRE(r.checked == expected);
}

// ---- files and memory ----

// A fresh directory under the system's temporary directory, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("smallgrad_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Names in the directory (to see that no temporary file was left behind).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Resident set size in bytes, from /proc/self/statm (second field, in pages);
// -1 where it cannot be read.
inline long resident_bytes() {
  long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

// A naive loop for the attention tests: x (T, H) row-major times W^T for a
// Linear weight W (H, H) -> (T, H), in double.
inline std::vector<double> project(const std::vector<double>& x, int64_t rows, const sg::Tensor& weight) {
  const auto w = weight.to_vector<float>();
  const int64_t h = weight.shape()[0];
  std::vector<double> out(static_cast<size_t>(rows * h), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < h; ++o)
      for (int64_t i = 0; i < h; ++i)
        out[static_cast<size_t>(r * h + o)] += x[static_cast<size_t>(r * h + i)] * w[static_cast<size_t>(o * h + i)];
  return out;
}

}  // namespace test_util
