// decoding::generate and its distribution (decoding/sampling.cpp):
// temperature, top-k and top-p against hand-computed values; seeded draws;
// cached sampling against recomputing the whole context, for every kind of
// positions and past the context.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "decoding/sampling.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::decoding::next_token_distribution;
using sg::decoding::SamplingOptions;
using sg::nn::Positional;

namespace {

std::vector<double> softmax(const std::vector<double>& z, double t) {
  std::vector<double> p;
  double s = 0;
  for (double x : z) p.push_back(std::exp(x / t)), s += p.back();
  for (double& x : p) x /= s;
  return p;
}

void require_probs(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("token " << i);
    REQUIRE(std::fabs(got[i] - want[i]) <= 1e-12);  // false for NaN
  }
}

}  // namespace

TEST_CASE("next_token_distribution: temperature, top-k (ties kept), top-p, in that order", "[sampling]") {
  const std::vector<double> z{1.0, 3.0, 2.0, 3.0, -1.0};
  require_probs(next_token_distribution(z, {}), softmax(z, 1.0));
  require_probs(next_token_distribution(z, {.temperature = 0.5}), softmax(z, 0.5));
  require_probs(next_token_distribution(z, {.temperature = 0}), {0, 1, 0, 0, 0});  // the first maximum
  // top-k 1 keeps both tokens tied at the largest logit (nanoGPT's v[-1] rule).
  require_probs(next_token_distribution(z, {.top_k = 1}), {0, 0.5, 0, 0.5, 0});
  {
    const double a = std::exp(3.0), b = std::exp(2.0);
    require_probs(next_token_distribution(z, {.top_k = 3}), {0, a / (2 * a + b), b / (2 * a + b), a / (2 * a + b), 0});
  }
  {
    // top-p 0.5: the first token by probability (id 1, 0.39...) is short of
    // it, the second (id 3, tied, later id) crosses it and is kept.
    const std::vector<double> p = softmax(z, 1.0);
    require_probs(next_token_distribution(z, {.top_p = 0.5}), {0, 0.5, 0, 0.5, 0});
    const double kept = p[1] + p[3] + p[2];
    require_probs(next_token_distribution(z, {.top_p = p[1] + p[3] + 1e-9}), {0, p[1] / kept, p[2] / kept, p[3] / kept, 0});
  }
  REQUIRE_THROWS_WITH(next_token_distribution(z, {.temperature = -1}), Contains("temperature"));
  REQUIRE_THROWS_WITH(next_token_distribution(z, {.top_k = -2}), Contains("top_k"));
  REQUIRE_THROWS_WITH(next_token_distribution(z, {.top_p = 0}), Contains("top_p must be in (0, 1], got 0"));
  REQUIRE_THROWS_WITH(next_token_distribution({1.0, NAN}, {}), Contains("logit 1 is NaN"));
}

TEST_CASE("draw follows its probabilities and its seed", "[sampling]") {
  const std::vector<double> p{0.1, 0.0, 0.6, 0.3};
  sg::Generator gen(7);
  std::vector<int64_t> counts(4, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(sg::decoding::draw(p, gen))];
  REQUIRE(counts[1] == 0);
  for (size_t i : {0, 2, 3}) REQUIRE(std::fabs(counts[i] / double(n) - p[i]) < 0.015);
  sg::Generator a(11), b(11);
  for (int i = 0; i < 50; ++i) REQUIRE(sg::decoding::draw(p, a) == sg::decoding::draw(p, b));
}

TEST_CASE("generate: cached sampling gives the tokens recomputing gives, for every kind of positions", "[sampling][cache]") {
  for (Positional kind : {Positional::learned, Positional::sinusoidal, Positional::none, Positional::rotary,
                          Positional::alibi}) {
    INFO(sg::nn::positional_name(kind));
    sg::manual_seed(21);
    sg::nn::GPT model({.vocab_size = 9, .block_size = 5, .n_layer = 2, .n_head = 2, .n_embd = 8, .dropout = 0,
                       .bias = true, .positional = kind});
    model.eval();
    for (const SamplingOptions& o : {SamplingOptions{.max_new_tokens = 14}, SamplingOptions{.max_new_tokens = 14, .temperature = 1.5, .top_k = 4},
                                     SamplingOptions{.max_new_tokens = 14, .top_p = 0.8}}) {
      SamplingOptions cached = o, uncached = o;
      uncached.use_cache = false;
      sg::Generator g1(99), g2(99);
      // 2 prompt tokens and 14 new ones: the text outgrows the context of 5 after 3 steps.
      const std::vector<int64_t> a = sg::decoding::generate(model, {3, 1}, cached, g1);
      const std::vector<int64_t> b = sg::decoding::generate(model, {3, 1}, uncached, g2);
      REQUIRE(a.size() == 16);
      REQUIRE(a == b);
      REQUIRE(a[0] == 3);
      REQUIRE(a[1] == 1);
    }
  }
}

TEST_CASE("generate: greedy repeats itself, a seed repeats a sample, errors name the input", "[sampling]") {
  sg::manual_seed(22);
  sg::nn::GPT model({.vocab_size = 6, .block_size = 8, .n_layer = 1, .n_head = 2, .n_embd = 8, .dropout = 0.1});
  REQUIRE_THROWS_WITH(sg::decoding::generate(model, {1}, {}, sg::default_generator()), Contains("training mode"));
  model.eval();
  sg::Generator a(5), b(5), c(6);
  const auto x = sg::decoding::generate(model, {1, 2}, {.max_new_tokens = 10, .temperature = 0}, a);
  const auto y = sg::decoding::generate(model, {1, 2}, {.max_new_tokens = 10, .temperature = 0}, c);
  REQUIRE(x == y);  // temperature 0 draws nothing
  sg::Generator a2(5);
  REQUIRE(sg::decoding::generate(model, {1, 2}, {.max_new_tokens = 10}, a2) ==
          sg::decoding::generate(model, {1, 2}, {.max_new_tokens = 10}, b));
  REQUIRE_THROWS_WITH(sg::decoding::generate(model, {}, {}, a), Contains("prompt is empty"));
  REQUIRE_THROWS_WITH(sg::decoding::generate(model, {1, 6}, {}, a),
                      Contains("prompt token 1 is 6, outside the vocabulary [0, 6)"));
}
