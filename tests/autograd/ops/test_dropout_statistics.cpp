// autograd/ops/dropout.cpp: the statistics of the coins. Dropout's mask is a
// hash of (key, element index); these tests check it behaves as independent
// coins with P(drop) = p: the keep rate, how it varies between blocks of
// elements, and that coins at nearby positions, at the same position of
// neighbouring examples, of consecutive calls and of adjacent seeds are
// uncorrelated. Each check is a chi-square statistic held within 5 standard
// deviations of its expected value on both sides: too regular a mask (a
// poor hash over a counter) fails as surely as a biased one. The seeds are
// fixed, so every run computes the same statistics.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/ops/dropout.hpp"
#include "autograd/ops/shape.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"

using sg::Tensor;

namespace {

// The kept (true) and dropped elements of dropout(ones(n)): one call, one key.
std::vector<uint8_t> mask(int64_t n, double p, sg::Generator& gen) {
  const std::vector<float> y = sg::dropout(sg::ones({n}), p, true, gen).to_vector<float>();
  std::vector<uint8_t> kept(y.size());
  for (size_t i = 0; i < y.size(); ++i) kept[i] = y[i] != 0.0f;
  return kept;
}

// Chi-square of the 2x2 table of (a[i], b[i]) against independent coins that
// each keep with probability 1 - p: about 3 degrees of freedom.
double pair_chi2(const uint8_t* a, const uint8_t* b, int64_t n, double p) {
  std::array<int64_t, 4> counts{};
  for (int64_t i = 0; i < n; ++i) ++counts[static_cast<size_t>(a[i] * 2 + b[i])];
  const double q = 1 - p, expected[4] = {p * p, p * q, q * p, q * q};
  double chi2 = 0;
  for (size_t c = 0; c < 4; ++c) {
    const double e = static_cast<double>(n) * expected[c], d = static_cast<double>(counts[c]) - e;
    chi2 += d * d / e;
  }
  return chi2;
}

// A chi-square statistic with `df` degrees of freedom: mean df, standard
// deviation sqrt(2 df). Fails on NaN.
void require_chi2(double chi2, double df) {
  const double sd = std::sqrt(2 * df);
  INFO("chi-square " << chi2 << " with " << df << " degrees of freedom (expected " << df << " +- " << sd << ")");
  REQUIRE(chi2 > df - 5 * sd);
  REQUIRE(chi2 < df + 5 * sd);
}

}  // namespace

TEST_CASE("dropout keeps 1 - p of the elements, and blocks of them vary as independent coins do",
          "[autograd][dropout]") {
  const int64_t n = 1 << 20, block = 1024, blocks = n / block;
  for (double p : {0.1, 0.5, 0.9}) {
    INFO("p " << p);
    sg::Generator gen(2024);
    for (int call = 0; call < 4; ++call) {
      INFO("call " << call);
      const std::vector<uint8_t> kept = mask(n, p, gen);
      // The whole count: within 5 standard deviations of n (1 - p).
      int64_t total = 0;
      for (uint8_t k : kept) total += k;
      const double sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
      INFO("kept " << total << " of " << n);
      REQUIRE(std::fabs(static_cast<double>(total) - static_cast<double>(n) * (1 - p)) < 5 * sd);
      // Blocks of 1024 consecutive elements: their counts spread as binomial
      // counts do, neither more (clusters) nor less (a stratified pattern).
      double chi2 = 0;
      const double e = static_cast<double>(block) * (1 - p);
      for (int64_t b = 0; b < blocks; ++b) {
        int64_t c = 0;
        for (int64_t i = b * block; i < (b + 1) * block; ++i) c += kept[static_cast<size_t>(i)];
        chi2 += (static_cast<double>(c) - e) * (static_cast<double>(c) - e) / (e * p);
      }
      require_chi2(chi2, static_cast<double>(blocks));
    }
  }
}

TEST_CASE("dropout's coins at nearby positions and at one position of neighbouring examples are independent",
          "[autograd][dropout]") {
  // A lag d pairs element i with element i + d: small d are neighbouring
  // positions; 64 x 16, 64 x 32, 128 x 64, ... are the same position of the
  // next example in a (B, T, C) activation (examples are consecutive runs
  // of indices, data-parallel or not). Each lag's chi-square is summed over
  // 16 calls (16 keys).
  const int64_t n = 1 << 20;
  const int calls = 16;
  const std::vector<int64_t> lags = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 64, 127, 128, 255, 256,
                                     512, 1024, 2048, 4096, 8192, 16384, 65536};
  for (double p : {0.1, 0.5}) {
    INFO("p " << p);
    sg::Generator gen(7);
    std::vector<double> chi2(lags.size(), 0.0);
    double patterns = 0;  // p = 0.5: the 256 patterns of 8 consecutive coins
    for (int call = 0; call < calls; ++call) {
      const std::vector<uint8_t> kept = mask(n, p, gen);
      for (size_t l = 0; l < lags.size(); ++l)
        chi2[l] += pair_chi2(kept.data(), kept.data() + lags[l], n - lags[l], p);
      if (p == 0.5) {
        std::vector<int64_t> counts(256, 0);
        for (int64_t i = 0; i + 8 <= n; i += 8) {
          int v = 0;
          for (int64_t j = i; j < i + 8; ++j) v = v * 2 + kept[static_cast<size_t>(j)];
          ++counts[static_cast<size_t>(v)];
        }
        const double e = static_cast<double>(n / 8) / 256;
        for (int64_t c : counts) patterns += (static_cast<double>(c) - e) * (static_cast<double>(c) - e) / e;
      }
    }
    for (size_t l = 0; l < lags.size(); ++l) {
      INFO("lag " << lags[l]);
      require_chi2(chi2[l], 3.0 * calls);
    }
    if (p == 0.5) {
      INFO("patterns of 8 consecutive coins");
      require_chi2(patterns, 255.0 * calls);
    }
  }
}

TEST_CASE("dropout's masks of consecutive calls and of adjacent seeds are independent", "[autograd][dropout]") {
  const int64_t n = 1 << 18;
  const double p = 0.3;
  // Consecutive calls on one generator: different keys, unrelated masks.
  sg::Generator gen(5);
  std::vector<uint8_t> previous = mask(n, p, gen);
  double chi2 = 0;
  for (int call = 0; call < 16; ++call) {
    const std::vector<uint8_t> next = mask(n, p, gen);
    chi2 += pair_chi2(previous.data(), next.data(), n, p);
    previous = next;
  }
  {
    INFO("consecutive calls");
    require_chi2(chi2, 3.0 * 16);
  }
  // Generators seeded 1, 2, 3, ...: the first call of each against the next seed's.
  chi2 = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    sg::Generator a(seed), b(seed + 1);
    const std::vector<uint8_t> ma = mask(n, p, a), mb = mask(n, p, b);
    chi2 += pair_chi2(ma.data(), mb.data(), n, p);
  }
  INFO("adjacent seeds");
  require_chi2(chi2, 3.0 * 16);
}

TEST_CASE("dropout's coins past element 2^32 (a micro-batch far into a batch) are their own", "[autograd][dropout]") {
  // Given a DropoutKey, examples [first, first + count) count their
  // elements from first x the elements per example: with 2^16 elements per
  // example, example 2^16 starts at index 2^32, where the hash's counter
  // (32 bits) wraps and the index's high half selects other round keys.
  const int64_t per = 1 << 16;
  const double p = 0.5;
  const Tensor x = sg::ones({2, per});
  sg::Generator gen(3);
  const uint64_t key = gen.next_u64();  // all micro-batches below: the same call's key
  auto shard_mask = [&](int64_t first, int64_t count) {
    const std::vector<float> y =
        sg::dropout(sg::slice(x, 0, 0, count), p, true, sg::DropoutKey{key, first, count}).to_vector<float>();
    std::vector<uint8_t> kept(y.size());
    for (size_t i = 0; i < y.size(); ++i) kept[i] = y[i] != 0.0f;
    return kept;
  };
  const std::vector<uint8_t> low = shard_mask(0, 1), high = shard_mask(per, 1);  // indices [0, 2^16), [2^32, 2^32 + 2^16)
  require_chi2(pair_chi2(low.data(), high.data(), per, p), 3.0);
  // Two examples across the 2^32 boundary: the same coins as each alone.
  const std::vector<uint8_t> across = shard_mask(per - 1, 2), before = shard_mask(per - 1, 1);
  REQUIRE(std::vector<uint8_t>(across.begin(), across.begin() + per) == before);
  REQUIRE(std::vector<uint8_t>(across.begin() + per, across.end()) == high);
  int64_t kept = 0;
  for (uint8_t k : high) kept += k;
  REQUIRE(std::fabs(static_cast<double>(kept) - per * (1 - p)) < 5 * std::sqrt(per * p * (1 - p)));
}
