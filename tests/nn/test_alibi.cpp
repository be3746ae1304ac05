// ALiBi positions (nn::alibi_slopes in nn/positional.cpp, the bias in
// nn/attention.cpp): the slopes, attention against a loop written here under
// every mask, gradchecks in float64, and the encoder built with them.
#include <catch2/catch.hpp>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/module.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "nn_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Tensor;
using sg::nn::Positional;
using test_util::check_module;
using test_util::project;
using test_util::ids;
using test_util::normal;
using test_util::randomize;

namespace {

struct Naive {
  std::vector<double> weights, output;  // (heads, Q, K), (Q, H)
};

// ALiBi attention for one batch row, as Press et al. write it: score
// q_i . k_j / sqrt(d) - m_h |i - j| with m_h = 2^(-8 h / heads), h = 1..heads;
// key j is visible to query i when j < valid[i] (and j <= i if causal).
Naive naive_alibi(const sg::nn::MultiHeadAttention& mha, const std::vector<double>& queries, int64_t nq,
                  const std::vector<double>& kv, int64_t nk, const std::vector<int64_t>& valid, bool causal) {
  const int64_t H = mha.num_hiddens, heads = mha.num_heads, d = H / heads;
  const auto q = project(queries, nq, mha.W_q->weight), k = project(kv, nk, mha.W_k->weight),
             v = project(kv, nk, mha.W_v->weight);
  Naive r;
  r.weights.assign(static_cast<size_t>(heads * nq * nk), 0.0);
  std::vector<double> concat(static_cast<size_t>(nq * H), 0.0);
  for (int64_t h = 0; h < heads; ++h) {
    const double m = std::pow(2.0, -8.0 * static_cast<double>(h + 1) / static_cast<double>(heads));
    for (int64_t i = 0; i < nq; ++i) {
      std::vector<double> s(static_cast<size_t>(nk));
      for (int64_t j = 0; j < nk; ++j) {
        double e = 0;
        for (int64_t c = 0; c < d; ++c) e += q[static_cast<size_t>(i * H + h * d + c)] * k[static_cast<size_t>(j * H + h * d + c)];
        const bool visible = j < valid[static_cast<size_t>(i)] && (!causal || j <= i);
        s[static_cast<size_t>(j)] = visible ? e / std::sqrt(static_cast<double>(d)) - m * std::abs(static_cast<double>(i - j)) : -1e6;
      }
      double top = s[0], total = 0;
      for (double e : s) top = std::max(top, e);
      for (double& e : s) total += (e = std::exp(e - top));
      for (int64_t j = 0; j < nk; ++j) {
        const double w = s[static_cast<size_t>(j)] / total;
        r.weights[static_cast<size_t>((h * nq + i) * nk + j)] = w;
        for (int64_t c = 0; c < d; ++c)
          concat[static_cast<size_t>(i * H + h * d + c)] += w * v[static_cast<size_t>(j * H + h * d + c)];
      }
    }
  }
  r.output = project(concat, nq, mha.W_o->weight);
  return r;
}

}  // namespace

TEST_CASE("ALiBi slopes are the paper's geometric sequence 2^(-8h/H)", "[nn][positions][alibi]") {
  const std::vector<double> eight = sg::nn::alibi_slopes(8);
  REQUIRE(eight.size() == 8);
  for (int h = 0; h < 8; ++h) CHECK(eight[static_cast<size_t>(h)] == 1.0 / static_cast<double>(2 << h));
  const std::vector<double> four = sg::nn::alibi_slopes(4);
  CHECK(four == std::vector<double>{1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256});
  CHECK(sg::nn::alibi_slopes(1) == std::vector<double>{1.0 / 256});
  const std::vector<double> three = sg::nn::alibi_slopes(3);  // not a power of two: the same formula
  CHECK(std::fabs(three[0] - std::pow(2.0, -8.0 / 3)) < 1e-15);
  CHECK(three[2] == 1.0 / 256);
  REQUIRE_THROWS_WITH(sg::nn::alibi_slopes(0), Contains("alibi_slopes") && Contains("0"));
}

TEST_CASE("ALiBi is a kind of positions carried by attention", "[nn][positions][alibi]") {
  CHECK(sg::nn::parse_positional("alibi") == Positional::alibi);
  CHECK(std::string(sg::nn::positional_name(Positional::alibi)) == "alibi");
  CHECK(sg::nn::in_attention(Positional::alibi));
  REQUIRE_THROWS_WITH(sg::nn::parse_positional("alibis"), Contains("alibi") && Contains("rotary"));
  // No parameters beyond the four projections.
  sg::nn::MultiHeadAttention plain(8, 2, 0.0), alibi(8, 2, 0.0, false, false, {.kind = Positional::alibi});
  CHECK(alibi.parameter_count() == plain.parameter_count());
  // The encoder adds nothing to its embeddings and passes the kind to every block.
  sg::nn::TransformerEncoder encoder(test_util::tiny_encoder(Positional::alibi));
  CHECK_FALSE(encoder.pos_encoding);
  for (const auto& block : encoder.blocks) CHECK(block->attention->positions.kind == Positional::alibi);
}

TEST_CASE("ALiBi attention matches a naive loop under every mask (weights and output)",
          "[nn][positions][alibi][attention]") {
  struct Case {
    const char* name;
    bool causal;
    bool per_query;  // valid_lens (B, Q) rather than (B)
  };
  const std::vector<Case> cases = {{"no mask but valid_lens (B)", false, false},
                                   {"causal and valid_lens (B)", true, false},
                                   {"valid_lens (B, Q) with a 0", false, true},
                                   {"causal and valid_lens (B, Q)", true, true}};
  // 5 queries against 6 keys, 4 heads of 2: slopes 1/4 .. 1/256.
  const int64_t batch = 2, nq = 5, nk = 6, H = 8, heads = 4;
  for (const Case& c : cases) {
    SECTION(c.name) {
      sg::manual_seed(90);
      sg::nn::MultiHeadAttention mha(H, heads, 0.0, false, c.causal, {.kind = Positional::alibi});
      randomize(mha, 91);
      const auto qv = test_util::uniform_values<float>({batch, nq, H}, -1, 1, 92);
      const auto kvv = test_util::uniform_values<float>({batch, nk, H}, -1, 1, 93);
      const std::vector<int64_t> row_lens = {6, 3};
      const std::vector<int64_t> query_lens = {1, 0, 6, 4, 2, 5, 5, 3, 6, 1};
      const Tensor lens = c.per_query ? ids(query_lens, {batch, nq}) : ids(row_lens, {batch});
      Tensor weights;
      const Tensor out = mha.forward(sg::from_vector(qv, {batch, nq, H}), sg::from_vector(kvv, {batch, nk, H}),
                                     sg::from_vector(kvv, {batch, nk, H}), lens, nullptr, &weights);
      std::vector<double> want_w, want_out;
      for (int64_t b = 0; b < batch; ++b) {
        const std::vector<double> qb(qv.begin() + b * nq * H, qv.begin() + (b + 1) * nq * H);
        const std::vector<double> kvb(kvv.begin() + b * nk * H, kvv.begin() + (b + 1) * nk * H);
        std::vector<int64_t> valid(static_cast<size_t>(nq), row_lens[static_cast<size_t>(b)]);
        if (c.per_query)
          valid.assign(query_lens.begin() + b * nq, query_lens.begin() + (b + 1) * nq);
        const Naive n = naive_alibi(mha, qb, nq, kvb, nk, valid, c.causal);
        want_w.insert(want_w.end(), n.weights.begin(), n.weights.end());
        want_out.insert(want_out.end(), n.output.begin(), n.output.end());
      }
      test_util::check_values<float>(weights, {batch, heads, nq, nk}, want_w, 1e-4, 1e-6);
      test_util::check_values<float>(out, {batch, nq, H}, want_out, 1e-4, 1e-5);
    }
  }
}

TEST_CASE("ALiBi's bias changes the weights by distance, and favours near keys", "[nn][positions][alibi][attention]") {
  // Equal scores everywhere (all-zero query projection): the weights are the
  // softmax of the bias alone, so query i's weight on key j is proportional
  // to exp(-m_h |i - j|).
  sg::nn::MultiHeadAttention mha(4, 2, 0.0, false, false, {.kind = Positional::alibi});
  sg::nn::StateDict state;
  for (const auto& [name, p] : mha.named_parameters()) state[name] = name == "W_q.weight" ? sg::zeros(p.shape()) : p.detach();
  mha.load_state_dict(state);
  const Tensor x = sg::from_vector(test_util::uniform_values<float>({1, 4, 4}, -1, 1, 95), {1, 4, 4});
  Tensor weights;
  mha.forward(x, x, x, Tensor(), nullptr, &weights);
  const std::vector<float> w = weights.to_vector<float>();  // (1, 2, 4, 4)
  for (int64_t h = 0; h < 2; ++h) {
    const double m = h == 0 ? 1.0 / 16 : 1.0 / 256;
    for (int64_t i = 0; i < 4; ++i) {
      double total = 0;
      for (int64_t j = 0; j < 4; ++j) total += std::exp(-m * std::abs(static_cast<double>(i - j)));
      for (int64_t j = 0; j < 4; ++j) {
        const double want = std::exp(-m * std::abs(static_cast<double>(i - j))) / total;
        CHECK(std::fabs(w[static_cast<size_t>((h * 4 + i) * 4 + j)] - want) < 1e-6);
      }
    }
  }
}

TEST_CASE("ALiBi attention gradchecks in float64 under every mask", "[nn][positions][alibi][attention][gradcheck]") {
  const Tensor q = normal({2, 3, 8}, 96), k = normal({2, 4, 8}, 97), v = normal({2, 4, 8}, 98);
  struct Case {
    const char* name;
    Tensor lens;
    bool causal;
  };
  const std::vector<Case> cases = {{"no mask", Tensor(), false},
                                   {"causal", Tensor(), true},
                                   {"(B) valid_lens", ids({2, 4}, {2}), false},
                                   {"(B, Q) valid_lens with a 0", ids({1, 0, 4, 3, 2, 1}, {2, 3}), false},
                                   {"causal and (B) valid_lens", ids({4, 1}, {2}), true}};
  for (const Case& c : cases) {
    SECTION(c.name) {
      sg::manual_seed(99);
      sg::nn::MultiHeadAttention mha(8, 2, 0.0, false, c.causal, {.kind = Positional::alibi});
      randomize(mha, 100);
      auto fn = [&](const test_util::Inputs& in) { return mha.forward(in[0], in[1], in[2], c.lens); };
      check_module(std::string("MultiHeadAttention, alibi, ") + c.name, mha, fn, {q, k, v});
    }
  }
}

TEST_CASE("A causal encoder with ALiBi gradchecks in float64", "[nn][positions][alibi][gradcheck]") {
  sg::manual_seed(101);
  sg::nn::TransformerEncoderOptions o = test_util::tiny_encoder(Positional::alibi);
  o.causal = true;
  sg::nn::TransformerEncoder encoder(o);
  randomize(encoder, 102);
  const Tensor tokens = ids({1, 3, 5, 2, 6, 4, 0, 0}, {2, 4}), lens = ids({4, 2}, {2});
  auto fn = [&](const test_util::Inputs&) { return encoder.forward(tokens, lens); };
  check_module("causal TransformerEncoder, alibi", encoder, fn, {});
}
