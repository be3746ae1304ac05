#pragma once
// Reproducible random numbers. A Generator is an explicitly seeded
// xoshiro256** stream: the same seed gives the same numbers on every machine
// and thread count (values are drawn in order, on one thread). Its state can
// be saved and restored, so a resumed training run continues exactly.
#include <array>
#include <cstdint>

#include "core/tensor.hpp"

namespace sg {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
  void manual_seed(uint64_t seed);
  uint64_t next_u64();
  double uniform();          // [0, 1), 53 random bits
  double normal();           // standard normal (Box-Muller)
  int64_t randint(int64_t low, int64_t high);  // [low, high), unbiased
  std::array<uint64_t, 4> state() const { return s_; }
  void set_state(const std::array<uint64_t, 4>& s) { s_ = s; }

 private:
  std::array<uint64_t, 4> s_{};
};

// The process-wide generator that creation functions and layers use when no
// generator is passed. manual_seed(s) reseeds it.
Generator& default_generator();
void manual_seed(uint64_t seed);

// Uniform in [low, high) and standard normal values (times std, plus mean).
Tensor rand(const Shape& shape, Generator& gen, DType dtype = float32, double low = 0,
            double high = 1);
Tensor randn(const Shape& shape, Generator& gen, DType dtype = float32, double mean = 0,
             double std = 1);
Tensor rand(const Shape& shape, DType dtype = float32);   // default generator
Tensor randn(const Shape& shape, DType dtype = float32);  // default generator
// Integers uniform in [low, high), int64.
Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen);

}  // namespace sg
