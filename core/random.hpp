#pragma once
// Reproducible random numbers. A Generator is an explicitly seeded
// xoshiro256** stream: the same seed gives the same numbers on every machine
// and thread count (values are drawn in order, on one thread). Its state can
// be saved and restored, so a resumed training run continues exactly.
//
// Threads: a Generator may be shared. Each call draws under the generator's
// own lock (as PyTorch's generators do), and rand/randn/randint fill a whole
// tensor under one lock, so no value is ever drawn twice and each tensor is
// a contiguous stretch of the stream; which thread gets which stretch
// depends on timing. For the same values on every run, give each thread (or
// module) its own Generator: every function and layer that draws takes one.
#include <array>
#include <cstdint>
#include <mutex>

#include "core/tensor.hpp"

namespace sg {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
  // Copies continue the same stream independently (the state is copied, not the lock).
  Generator(const Generator& other) : s_(other.state()) {}
  Generator& operator=(const Generator& other);
  void manual_seed(uint64_t seed);
  uint64_t next_u64();
  double uniform();          // [0, 1), 53 random bits
  double normal();           // standard normal (Box-Muller)
  int64_t randint(int64_t low, int64_t high);  // [low, high), unbiased
  std::array<uint64_t, 4> state() const;
  void set_state(const std::array<uint64_t, 4>& s);

  // Runs f(draw) under the lock, where draw is an unlocked view of this
  // generator with the same four functions: for many draws in one go (rand,
  // randn and randint use it to fill a tensor).
  template <class F>
  decltype(auto) locked(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    Draw draw{*this};
    return f(draw);
  }

  struct Draw {
    Generator& g;
    uint64_t next_u64() { return g.next_unlocked(); }
    double uniform() { return g.uniform_unlocked(); }
    double normal() { return g.normal_unlocked(); }
    int64_t randint(int64_t low, int64_t high) { return g.randint_unlocked(low, high); }
  };

 private:
  uint64_t next_unlocked();
  double uniform_unlocked();
  double normal_unlocked();
  int64_t randint_unlocked(int64_t low, int64_t high);

  std::array<uint64_t, 4> s_{};
  mutable std::mutex mu_;
};

// The process-wide generator that creation functions and layers use when no
// generator is passed. manual_seed(s) reseeds it. Safe to share between
// threads (see above).
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
