// xoshiro256** (Blackman and Vigna), seeded through splitmix64 so that any
// 64-bit seed, 0 included, gives a well-mixed state.
#include "core/random.hpp"

#include <cmath>
#include <numbers>

namespace sg {
namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Generator& Generator::operator=(const Generator& other) {
  if (this != &other) set_state(other.state());
  return *this;
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : s_) s = splitmix64(seed);
}

std::array<uint64_t, 4> Generator::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return s_;
}

void Generator::set_state(const std::array<uint64_t, 4>& s) {
  std::lock_guard<std::mutex> lock(mu_);
  s_ = s;
}

uint64_t Generator::next_u64() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_unlocked();
}
double Generator::uniform() {
  std::lock_guard<std::mutex> lock(mu_);
  return uniform_unlocked();
}
double Generator::normal() {
  std::lock_guard<std::mutex> lock(mu_);
  return normal_unlocked();
}
int64_t Generator::randint(int64_t low, int64_t high) {
  std::lock_guard<std::mutex> lock(mu_);
  return randint_unlocked(low, high);
}

uint64_t Generator::next_unlocked() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Generator::uniform_unlocked() { return static_cast<double>(next_unlocked() >> 11) * 0x1.0p-53; }

double Generator::normal_unlocked() {
  // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
  const double u1 = 1.0 - uniform_unlocked();
  const double u2 = uniform_unlocked();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

int64_t Generator::randint_unlocked(int64_t low, int64_t high) {
  if (high <= low) fail("randint: empty range [", low, ", ", high, ")");
  const uint64_t range = static_cast<uint64_t>(high - low);
  // Rejection sampling: drop the top partial block so every value is equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t x;
  do x = next_unlocked();
  while (x >= limit);
  return low + static_cast<int64_t>(x % range);
}

Generator& default_generator() {
  static Generator g(0);
  return g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

Tensor rand(const Shape& shape, Generator& gen, DType dtype, double low, double high) {
  Tensor t = empty(shape, dtype);
  visit_floating(dtype, "rand", [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    gen.locked([&](Generator::Draw draw) {
      for (int64_t i = 0; i < t.numel(); ++i) {
        T v = static_cast<T>(low + (high - low) * draw.uniform());
        // Rounding (to float32 above all) can carry a value just below high up
        // to high itself; step back to the largest value below it.
        if (high > low && v >= high) v = std::nextafter(v, static_cast<T>(low));
        p[i] = v;
      }
    });
  });
  return t;
}

Tensor randn(const Shape& shape, Generator& gen, DType dtype, double mean, double std) {
  Tensor t = empty(shape, dtype);
  visit_floating(dtype, "randn", [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    gen.locked([&](Generator::Draw draw) {
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(mean + std * draw.normal());
    });
  });
  return t;
}

Tensor rand(const Shape& shape, DType dtype) { return rand(shape, default_generator(), dtype); }
Tensor randn(const Shape& shape, DType dtype) { return randn(shape, default_generator(), dtype); }

Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen) {
  Tensor t = empty(shape, int64);
  int64_t* p = t.data<int64_t>();
  gen.locked([&](Generator::Draw draw) {
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = draw.randint(low, high);
  });
  return t;
}

}  // namespace sg
