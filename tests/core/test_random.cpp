// Generators (core/random.cpp): the reference xoshiro256** stream, seeding,
// state save and restore, and the distributions of rand, randn, randint.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/random.hpp"
#include "core/tensor.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;

namespace {

// A reference xoshiro256** seeded through splitmix64, written from the
// published algorithm (Blackman and Vigna), independently of core/random.cpp.
struct RefXoshiro {
  uint64_t s[4];
  explicit RefXoshiro(uint64_t seed) {
    for (auto& v : s) {
      seed += 0x9E3779B97F4A7C15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      v = z ^ (z >> 31);
    }
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

// The inverse of an odd number modulo 2^64 (Newton's iteration).
uint64_t inverse_mod_2_64(uint64_t a) {
  uint64_t x = a;  // correct to 3 bits for odd a
  for (int i = 0; i < 6; ++i) x *= 2 - a * x;
  return x;
}

}  // namespace

// ---------------------------------------------------------------- random

TEST_CASE("Generator reproduces a reference xoshiro256 (starstar) stream", "[core]") {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{123456789}, ~uint64_t{0}}) {
    sg::Generator g(seed);
    RefXoshiro ref(seed);
    bool same = true;
    for (int i = 0; i < 100; ++i) same = same && g.next_u64() == ref.next();
    CHECK(same);
    // uniform takes the top 53 bits.
    CHECK(g.uniform() == static_cast<double>(ref.next() >> 11) * 0x1.0p-53);
  }
}

TEST_CASE("Generator: same seed same values, different seeds differ", "[core]") {
  sg::Generator a(42), b(42), c(43);
  Tensor ra = sg::rand({1000}, a), rb = sg::rand({1000}, b), rc = sg::rand({1000}, c);
  CHECK(ra.to_vector<float>() == rb.to_vector<float>());
  CHECK(ra.to_vector<float>() != rc.to_vector<float>());
  Tensor na = sg::randn({500}, a, sg::float64), nb = sg::randn({500}, b, sg::float64);
  CHECK(na.to_vector<double>() == nb.to_vector<double>());
  Tensor ia = sg::randint(0, 1000, {300}, a), ib = sg::randint(0, 1000, {300}, b);
  CHECK(ia.to_vector<int64_t>() == ib.to_vector<int64_t>());

  // The next draws differ from the first ones (the stream advances).
  CHECK(sg::rand({1000}, a).to_vector<float>() != ra.to_vector<float>());

  // Reseeding restarts the stream.
  a.manual_seed(42);
  CHECK(sg::rand({1000}, a).to_vector<float>() == ra.to_vector<float>());

  // The default generator, through sg::manual_seed.
  sg::manual_seed(7);
  Tensor d1 = sg::randn({64});
  sg::manual_seed(7);
  Tensor d2 = sg::randn({64});
  CHECK(d1.to_vector<float>() == d2.to_vector<float>());
  sg::manual_seed(8);
  CHECK(sg::randn({64}).to_vector<float>() != d1.to_vector<float>());
}

TEST_CASE("Generator state save and restore reproduces the stream", "[core]") {
  sg::Generator g(2024);
  (void)sg::rand({37}, g);
  const std::array<uint64_t, 4> saved = g.state();
  Tensor first = sg::randn({100}, g, sg::float64);
  Tensor ints = sg::randint(-5, 5, {50}, g);
  g.set_state(saved);
  CHECK(sg::randn({100}, g, sg::float64).to_vector<double>() == first.to_vector<double>());
  CHECK(sg::randint(-5, 5, {50}, g).to_vector<int64_t>() == ints.to_vector<int64_t>());

  // Another generator given the state continues identically.
  sg::Generator h(1);
  h.set_state(saved);
  g.set_state(saved);
  for (int i = 0; i < 10; ++i) CHECK(h.next_u64() == g.next_u64());
}

TEST_CASE("rand: values from low up to but excluding high, with the right mean", "[core]") {
  sg::Generator g(11);
  for (sg::DType dt : {sg::float32, sg::float64}) {
    INFO("dtype " << dt);
    const std::vector<double> v = sg::rand({100000}, g, dt, -2, 3).to_vector<double>();
    double lo = 1e9, hi = -1e9, sum = 0;
    for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
    CHECK(lo >= -2);
    CHECK(hi < 3);
    CHECK(lo < -1.99);
    CHECK(hi > 2.99);
    CHECK(sum / 1e5 == Approx(0.5).margin(0.03));  // std error 5/sqrt(12e5) ~ 0.005
  }
  const std::vector<float> u = sg::rand({20000}, g).to_vector<float>();
  CHECK(*std::min_element(u.begin(), u.end()) >= 0.0f);
  CHECK(*std::max_element(u.begin(), u.end()) < 1.0f);
  REQUIRE_THROWS_WITH(sg::rand({2}, g, sg::int64), Contains("rand") && Contains("int64"));
}

TEST_CASE("rand float32 never returns high, even for the largest uniform draw", "[core]") {
  // Craft a state whose next output is 2^64 - 1, so uniform() is 1 - 2^-53:
  // result = rotl(s1 * 5, 7) * 9, solved for s1.
  const uint64_t want = ~uint64_t{0};
  const uint64_t r = want * inverse_mod_2_64(9);
  const uint64_t rot = (r >> 7) | (r << 57);  // rotr(r, 7)
  const uint64_t s1 = rot * inverse_mod_2_64(5);
  sg::Generator g;
  g.set_state({0, s1, 0, 0});
  CHECK(g.next_u64() == want);
  g.set_state({0, s1, 0, 0});
  CHECK(g.uniform() == 1.0 - 0x1.0p-53);

  g.set_state({0, s1, 0, 0});
  CHECK(sg::rand({1}, g, sg::float32).item<float>() < 1.0f);
  g.set_state({0, s1, 0, 0});
  CHECK(sg::rand({1}, g, sg::float32, 0, 8).item<float>() < 8.0f);
  g.set_state({0, s1, 0, 0});
  CHECK(sg::rand({1}, g, sg::float64).item<double>() < 1.0);
}

TEST_CASE("randn: mean and standard deviation over 100k samples", "[core]") {
  sg::Generator g(3);
  for (sg::DType dt : {sg::float32, sg::float64}) {
    INFO("dtype " << dt);
    const std::vector<double> v = sg::randn({100000}, g, dt, 3, 2).to_vector<double>();
    double sum = 0, sq = 0;
    for (double x : v) sum += x;
    const double m = sum / 1e5;
    for (double x : v) sq += (x - m) * (x - m);
    const double sd = std::sqrt(sq / 1e5);
    CHECK(m == Approx(3).margin(0.03));   // std error 2/sqrt(1e5) ~ 0.006
    CHECK(sd == Approx(2).margin(0.03));  // std error ~ 0.0045
    int64_t within1 = 0;
    for (double x : v) within1 += std::fabs(x - 3) < 2;
    CHECK(static_cast<double>(within1) / 1e5 == Approx(0.6827).margin(0.01));
  }
  const std::vector<float> s = sg::randn({100000}, g).to_vector<float>();
  double sum = 0;
  int64_t not_finite = 0;
  for (float x : s) not_finite += !std::isfinite(x), sum += x;
  CHECK(not_finite == 0);
  CHECK(sum / 1e5 == Approx(0).margin(0.02));
}

TEST_CASE("randint: range and rough uniformity", "[core]") {
  sg::Generator g(5);
  Tensor t = sg::randint(-3, 4, {70000}, g);
  CHECK(t.dtype() == sg::int64);
  CHECK(t.shape() == Shape{70000});
  std::vector<int64_t> counts(7, 0);
  bool in_range = true;
  for (int64_t v : t.to_vector<int64_t>()) {
    in_range = in_range && v >= -3 && v < 4;
    if (v >= -3 && v < 4) ++counts[static_cast<size_t>(v + 3)];
  }
  CHECK(in_range);
  for (int64_t c : counts) CHECK(c == Approx(10000).margin(500));  // std dev ~ 93

  // A range that does not divide 2^64 (rejection sampling) stays in range.
  Tensor odd = sg::randint(0, 3, {3000}, g);
  std::vector<int64_t> oc(3, 0);
  in_range = true;
  for (int64_t v : odd.to_vector<int64_t>()) {
    in_range = in_range && v >= 0 && v < 3;
    if (v >= 0 && v < 3) ++oc[static_cast<size_t>(v)];
  }
  CHECK(in_range);
  for (int64_t c : oc) CHECK(c == Approx(1000).margin(120));
  CHECK(sg::randint(7, 8, {5}, g).to_vector<int64_t>() == std::vector<int64_t>(5, 7));

  REQUIRE_THROWS_WITH(sg::randint(3, 3, {2}, g), Contains("randint: empty range [3, 3)"));
  REQUIRE_THROWS_WITH(g.randint(5, 1), Contains("randint") && Contains("[5, 1)"));
}
