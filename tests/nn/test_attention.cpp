// nn::MultiHeadAttention (nn/attention.cpp): gradchecks under every kind of
// mask, the kept weights, errors, and relative and rotary positions against
// attention written out with loops here.
#include <catch2/catch.hpp>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/transformer.hpp"

#include <cmath>
#include <functional>
#include <string>

#include "nn/module.hpp"
#include "nn/positional.hpp"
#include "nn_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;
#include <vector>
using sg::nn::Positional;

TEST_CASE("MultiHeadAttention gradchecks with every kind of mask", "[nn][gradcheck][attention]") {
  // Q = 3 queries against K = 4 keys, 2 heads of 4.
  const Tensor q = normal({2, 3, 8}, 10), k = normal({2, 4, 8}, 11), v = normal({2, 4, 8}, 12);
  struct Case {
    const char* name;
    Tensor lens;
    bool causal, bias;
  };
  const std::vector<Case> cases = {
      {"no mask", Tensor(), false, false},
      {"no mask, with biases", Tensor(), false, true},
      {"(B) valid_lens", ids({2, 4}, {2}), false, false},
      {"(B, Q) valid_lens with a 0", ids({1, 0, 4, 3, 2, 1}, {2, 3}), false, false},
      {"causal", Tensor(), true, false},
      {"causal and (B) valid_lens", ids({4, 1}, {2}), true, false},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      sg::manual_seed(13);
      sg::nn::MultiHeadAttention mha(8, 2, 0.0, c.bias, c.causal);
      auto fn = [&](const Inputs& in) { return mha.forward(in[0], in[1], in[2], c.lens); };
      check_module(std::string("MultiHeadAttention, ") + c.name, mha, fn, {q, k, v});
    }
  }
}

// ---------------------------------------------------------------------------
// attention weights and layer errors
// ---------------------------------------------------------------------------

TEST_CASE("attention_weights are (B, heads, Q, K) with masked keys exactly zero", "[nn][attention]") {
  sg::manual_seed(90);
  const int64_t batch = 2, heads = 2, nq = 3, nk = 4;
  sg::nn::MultiHeadAttention mha(8, heads, 0.0);
  const Tensor q = sg::randn({batch, nq, 8}).set_requires_grad(), kv = sg::randn({batch, nk, 8});

  // (B, Q) lengths, one of them 0; then the same run with causal on top.
  const std::vector<int64_t> lens = {1, 0, 4, 3, 2, 4};
  for (bool causal : {false, true}) {
    mha.causal = causal;
    Tensor w;
    const Tensor out = mha.forward(q, kv, kv, ids(lens, {batch, nq}), nullptr, &w);
    sg::nn::check_shape(w, {batch, heads, nq, nk}, "attention weights");
    REQUIRE(out.requires_grad());
    REQUIRE_FALSE(w.requires_grad());  // off the graph
    // Not asked for: the same output, nothing else written.
    REQUIRE(mha.forward(q, kv, kv, ids(lens, {batch, nq})).to_vector<float>() == out.to_vector<float>());
    const auto p = w.to_vector<float>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < nq; ++i) {
          int64_t len = lens[static_cast<size_t>(b * nq + i)];
          if (causal) len = std::min(len, i + 1);
          double total = 0;
          for (int64_t j = 0; j < nk; ++j) {
            const float pij = p[static_cast<size_t>(((b * heads + h) * nq + i) * nk + j)];
            INFO("b " << b << " h " << h << " query " << i << " key " << j << " causal " << causal);
            if (len == 0) REQUIRE(pij == Approx(1.0 / nk));  // d2l's -1e6: uniform, not NaN
            else if (j >= len) REQUIRE(pij == 0.0f);
            else REQUIRE(pij > 0.0f);
            total += pij;
          }
          REQUIRE(total == Approx(1.0));
        }
  }
}

TEST_CASE("MultiHeadAttention rejects bad sizes and valid_lens", "[nn][attention]") {
  REQUIRE_THROWS_WITH(sg::nn::MultiHeadAttention(10, 3, 0.0),
                      "MultiHeadAttention: num_heads 3 must divide num_hiddens 10");
  sg::nn::MultiHeadAttention mha(8, 2, 0.0);
  const Tensor q = sg::zeros({2, 3, 8}), kv = sg::zeros({2, 4, 8});
  REQUIRE_THROWS_WITH(mha.forward(q, kv, kv, ids({1, 2, 3}, {3})),
                      Contains("valid_lens must be int64 (2) or (2, 3), got int64 (3)"));
  REQUIRE_THROWS_WITH(mha.forward(q, kv, kv, ids({1, 5}, {2})), Contains("valid length 5") && Contains("[0, 4]"));
  REQUIRE_THROWS_WITH(mha.forward(q, sg::zeros({2, 4, 6}), kv), Contains("keys (2, 4, 6)"));
}

namespace {

// Multi-head attention written out with loops, for one batch row: queries
// (Q, H), keys = values (K, H), keys [0, valid) visible, no biases, no
// dropout. Relative and rotary positions as the paper define them. Returns
// the weights (heads, Q, K) and the output (Q, H).
struct Naive {
  std::vector<double> weights, output;
};

Naive naive_attention(const sg::nn::MultiHeadAttention& mha, const std::vector<double>& queries, int64_t nq,
                      const std::vector<double>& kv, int64_t nk, int64_t valid) {
  const int64_t H = mha.num_hiddens, heads = mha.num_heads, d = H / heads;
  const auto q = project(queries, nq, mha.W_q->weight), k = project(kv, nk, mha.W_k->weight),
             v = project(kv, nk, mha.W_v->weight);
  const int64_t kmax = mha.positions.max_distance;
  std::vector<float> ak, av;
  if (mha.positions.kind == Positional::relative) ak = mha.relative_keys.to_vector<float>();
  if (mha.positions.relative_values) av = mha.relative_values.to_vector<float>();
  Naive r;
  r.weights.assign(static_cast<size_t>(heads * nq * nk), 0.0);
  std::vector<double> concat(static_cast<size_t>(nq * H), 0.0);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < nq; ++i) {
      std::vector<double> qi(q.begin() + i * H + h * d, q.begin() + i * H + (h + 1) * d);
      if (mha.positions.kind == Positional::rotary) rotate(qi, i);
      std::vector<double> s(static_cast<size_t>(nk));
      for (int64_t j = 0; j < nk; ++j) {
        std::vector<double> kj(k.begin() + j * H + h * d, k.begin() + j * H + (h + 1) * d);
        if (mha.positions.kind == Positional::rotary) rotate(kj, j);
        const int64_t row = std::clamp(j - i, -kmax, kmax) + kmax;
        double e = 0;
        for (int64_t c = 0; c < d; ++c) {
          e += qi[static_cast<size_t>(c)] * kj[static_cast<size_t>(c)];
          if (!ak.empty()) e += qi[static_cast<size_t>(c)] * ak[static_cast<size_t>(row * d + c)];
        }
        s[static_cast<size_t>(j)] = j < valid ? e / std::sqrt(static_cast<double>(d)) : -1e6;
      }
      double m = s[0], total = 0;
      for (double e : s) m = std::max(m, e);
      for (double& e : s) total += (e = std::exp(e - m));
      for (int64_t j = 0; j < nk; ++j) {
        const double w = s[static_cast<size_t>(j)] / total;
        r.weights[static_cast<size_t>((h * nq + i) * nk + j)] = w;
        const int64_t row = std::clamp(j - i, -kmax, kmax) + kmax;
        for (int64_t c = 0; c < d; ++c) {
          const double a = av.empty() ? 0.0 : av[static_cast<size_t>(row * d + c)];
          concat[static_cast<size_t>(i * H + h * d + c)] += w * (v[static_cast<size_t>(j * H + h * d + c)] + a);
        }
      }
    }
  r.output = project(concat, nq, mha.W_o->weight);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------
// MultiHeadAttention with positions
// ---------------------------------------------------------------------------

TEST_CASE("relative and rotary attention match naive loops (weights and output)", "[nn][positions][attention]") {
  struct Case {
    const char* name;
    sg::nn::AttentionPositions positions;
  };
  // 5 queries against 6 keys with max_distance 2: offsets -4..5, most clipped.
  const std::vector<Case> cases = {
      {"relative keys", {.kind = Positional::relative, .max_distance = 2, .relative_values = false}},
      {"relative keys and values", {.kind = Positional::relative, .max_distance = 2, .relative_values = true}},
      {"rotary", {.kind = Positional::rotary, .relative_values = false}},
  };
  const int64_t batch = 2, nq = 5, nk = 6, H = 8;
  const std::vector<int64_t> lens = {6, 3};
  for (const Case& c : cases) {
    SECTION(c.name) {
      sg::manual_seed(70);
      sg::nn::MultiHeadAttention mha(H, 2, 0.0, false, false, c.positions);
      randomize(mha, 71);  // relative tables start at N(0, 0.02^2): too small to show a wrong index
      const auto qv = test_util::uniform_values<float>({batch, nq, H}, -1, 1, 72);
      const auto kvv = test_util::uniform_values<float>({batch, nk, H}, -1, 1, 73);
      Tensor weights;
      const Tensor out = mha.forward(sg::from_vector(qv, {batch, nq, H}), sg::from_vector(kvv, {batch, nk, H}),
                                     sg::from_vector(kvv, {batch, nk, H}), ids(lens, {batch}), nullptr, &weights);
      std::vector<double> want_w, want_out;
      for (int64_t b = 0; b < batch; ++b) {
        const std::vector<double> qb(qv.begin() + b * nq * H, qv.begin() + (b + 1) * nq * H);
        const std::vector<double> kvb(kvv.begin() + b * nk * H, kvv.begin() + (b + 1) * nk * H);
        const Naive n = naive_attention(mha, qb, nq, kvb, nk, lens[static_cast<size_t>(b)]);
        want_w.insert(want_w.end(), n.weights.begin(), n.weights.end());
        want_out.insert(want_out.end(), n.output.begin(), n.output.end());
      }
      test_util::check_values<float>(weights, {batch, 2, nq, nk}, want_w, 1e-4, 1e-6);
      test_util::check_values<float>(out, {batch, nq, H}, want_out, 1e-4, 1e-5);
    }
  }
}

TEST_CASE("MultiHeadAttention with relative or rotary positions gradchecks under every mask",
          "[nn][positions][attention][gradcheck]") {
  // Q = 3 queries against K = 4 keys, 2 heads of 4; max_distance 1 clips offsets -2, 2 and 3.
  const Tensor q = normal({2, 3, 8}, 80), k = normal({2, 4, 8}, 81), v = normal({2, 4, 8}, 82);
  struct Case {
    const char* name;
    sg::nn::AttentionPositions positions;
    Tensor lens;
    bool causal;
  };
  const std::vector<Case> cases = {
      {"relative keys only, (B) valid_lens", {.kind = Positional::relative, .max_distance = 1, .relative_values = false}, ids({2, 4}, {2}), false},
      {"relative with values, (B, Q) valid_lens with a 0", {.kind = Positional::relative, .max_distance = 1, .relative_values = true},
       ids({1, 0, 4, 3, 2, 1}, {2, 3}), false},
      {"relative with values, causal and (B) valid_lens", {.kind = Positional::relative, .max_distance = 1, .relative_values = true}, ids({4, 1}, {2}), true},
      {"rotary, (B, Q) valid_lens with a 0", {.kind = Positional::rotary, .relative_values = false}, ids({1, 0, 4, 3, 2, 1}, {2, 3}), false},
      {"rotary, causal and (B) valid_lens", {.kind = Positional::rotary, .relative_values = false}, ids({4, 1}, {2}), true},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      sg::manual_seed(83);
      sg::nn::MultiHeadAttention mha(8, 2, 0.0, false, c.causal, c.positions);
      randomize(mha, 84);
      auto fn = [&](const Inputs& in) { return mha.forward(in[0], in[1], in[2], c.lens); };
      check_module(std::string("MultiHeadAttention, ") + c.name, mha, fn, {q, k, v});
    }
  }
}

TEST_CASE("Relative attention has tables for keys and values shared by the heads, and rotary has no parameters",
          "[nn][positions][attention]") {
  sg::nn::MultiHeadAttention plain(8, 2, 0.0);
  sg::nn::MultiHeadAttention relative(8, 2, 0.0, false, false, {.kind = Positional::relative, .max_distance = 3, .relative_values = true});
  sg::nn::MultiHeadAttention keys_only(8, 2, 0.0, false, false, {.kind = Positional::relative, .max_distance = 3, .relative_values = false});
  sg::nn::MultiHeadAttention rotary(8, 2, 0.0, false, false, {.kind = Positional::rotary, .max_distance = 8, .relative_values = true});  // values: ignored
  REQUIRE(relative.parameter_count() == plain.parameter_count() + 2 * 7 * 4);  // 2 tables of (2*3+1, 8/2)
  REQUIRE(relative.named_parameters()[0].first == "relative_keys");
  REQUIRE(relative.named_parameters()[1].first == "relative_values");
  sg::nn::check_shape(relative.relative_keys, {7, 4}, "relative_keys");
  REQUIRE(keys_only.parameter_count() == plain.parameter_count() + 7 * 4);
  REQUIRE_FALSE(keys_only.relative_values.defined());
  REQUIRE(rotary.parameter_count() == plain.parameter_count());
}

TEST_CASE("MultiHeadAttention rejects odd rotary heads and bad relative options", "[nn][positions][attention]") {
  REQUIRE_THROWS_WITH(sg::nn::MultiHeadAttention(6, 2, 0.0, false, false, {.kind = Positional::rotary, .relative_values = false}),
                      "MultiHeadAttention: rotary positions rotate pairs of features, so the head dimension "
                      "must be even; num_hiddens 6 / num_heads 2 = 3");
  REQUIRE_NOTHROW(sg::nn::MultiHeadAttention(6, 3, 0.0, false, false, {.kind = Positional::rotary, .relative_values = false}));
  REQUIRE_THROWS_WITH(sg::nn::MultiHeadAttention(8, 2, 0.0, false, false, {.kind = Positional::relative, .max_distance = 0, .relative_values = false}),
                      "MultiHeadAttention: max_distance must be at least 1, got 0");
  // The absolute kinds belong to the embeddings, not to attention.
  REQUIRE_THROWS_WITH(sg::nn::MultiHeadAttention(8, 2, 0.0, false, false, {.kind = Positional::learned}),
                      "MultiHeadAttention: positions 'learned' are added to the embeddings, not carried by "
                      "attention (none, relative, rotary or alibi)");
  sg::nn::TransformerEncoderOptions o = tiny_encoder(sg::nn::Positional::rotary);
  o.num_hiddens = 6;
  o.num_heads = 2;
  REQUIRE_THROWS_WITH(sg::nn::TransformerEncoder(o), Contains("head dimension must be even"));
}
