#pragma once
// Helpers shared by the kernel tests: tensors from plain vectors, and seeded
// random values drawn with the standard library (independently of sg's own
// generator, so a bug there cannot hide in the expected values).
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include <smallgrad.hpp>

namespace test_util {

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

}  // namespace test_util
