// Positions inside attention: the rope op (rotary position embedding), and
// MultiHeadAttention / TransformerEncoder with relative (Shaw et al.) and
// rotary positions, plus the pre-norm encoder block. Values against naive
// loops written here, gradients with float64 gradchecks under every mask.
#include <catch2/catch.hpp>

#include <smallgrad.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using Kind = sg::nn::AttentionPositions::Kind;
using test_util::check_module;
using test_util::normal;
using test_util::randomize;

namespace {

Tensor ids(std::vector<int64_t> v, const Shape& shape) { return sg::from_vector(v, shape); }

sg::nn::AttentionPositions positions(Kind kind, int64_t max_distance = 8, bool values = false) {
  sg::nn::AttentionPositions p;
  p.kind = kind;
  p.max_distance = max_distance;
  p.relative_values = values;
  return p;
}

// Rotates u (d values, d even) in place for position t, by the formula:
// pair (2j, 2j+1) turns by t * 10000^(-2j/d).
void rotate(std::vector<double>& u, int64_t t) {
  const size_t d = u.size();
  for (size_t j = 0; j < d / 2; ++j) {
    const double a = static_cast<double>(t) * std::pow(10000.0, -2.0 * static_cast<double>(j) / static_cast<double>(d));
    const double x = u[2 * j], y = u[2 * j + 1];
    u[2 * j] = x * std::cos(a) - y * std::sin(a);
    u[2 * j + 1] = x * std::sin(a) + y * std::cos(a);
  }
}

// x (T, H) row-major times W^T for a Linear weight W (H, H): (T, H).
std::vector<double> project(const std::vector<double>& x, int64_t rows, const Tensor& weight) {
  const auto w = weight.to_vector<float>();
  const int64_t h = weight.shape()[0];
  std::vector<double> out(static_cast<size_t>(rows * h), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < h; ++o)
      for (int64_t i = 0; i < h; ++i)
        out[static_cast<size_t>(r * h + o)] += x[static_cast<size_t>(r * h + i)] * w[static_cast<size_t>(o * h + i)];
  return out;
}

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
  if (mha.positions.kind == Kind::relative) ak = mha.relative_keys.to_vector<float>();
  if (mha.positions.relative_values) av = mha.relative_values.to_vector<float>();
  Naive r;
  r.weights.assign(static_cast<size_t>(heads * nq * nk), 0.0);
  std::vector<double> concat(static_cast<size_t>(nq * H), 0.0);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < nq; ++i) {
      std::vector<double> qi(q.begin() + i * H + h * d, q.begin() + i * H + (h + 1) * d);
      if (mha.positions.kind == Kind::rotary) rotate(qi, i);
      std::vector<double> s(static_cast<size_t>(nk));
      for (int64_t j = 0; j < nk; ++j) {
        std::vector<double> kj(k.begin() + j * H + h * d, k.begin() + j * H + (h + 1) * d);
        if (mha.positions.kind == Kind::rotary) rotate(kj, j);
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

sg::nn::TransformerEncoderOptions tiny_encoder(sg::nn::Positional positional, bool pre_norm = false) {
  sg::nn::TransformerEncoderOptions o;
  o.vocab_size = 7;
  o.num_hiddens = 8;
  o.ffn_num_hiddens = 12;
  o.num_heads = 2;
  o.num_blocks = 2;
  o.dropout = 0;
  o.positional = positional;
  o.max_len = 6;
  o.max_distance = 2;  // sequences of 4: offsets up to 3 are clipped
  o.pre_norm = pre_norm;
  return o;
}

}  // namespace

// ---------------------------------------------------------------------------
// rope
// ---------------------------------------------------------------------------

TEST_CASE("rope rotates each feature pair by (offset + t) * 10000^(-2j/d)", "[nn][positions][rope]") {
  const Shape shape{2, 5, 6};
  const auto x = test_util::uniform_values<double>(shape, -1, 1, 7);
  for (int64_t offset : {0, 3}) {
    std::vector<double> want = x;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < 5; ++t) {
        std::vector<double> u(want.begin() + (b * 5 + t) * 6, want.begin() + (b * 5 + t + 1) * 6);
        rotate(u, offset + t);
        std::copy(u.begin(), u.end(), want.begin() + (b * 5 + t) * 6);
      }
    INFO("offset " << offset);
    test_util::check_values<double>(sg::rope(test_util::make(x, shape), offset), shape, want, 1e-12, 1e-12);
    const std::vector<float> xf(x.begin(), x.end());
    test_util::check_values<float>(sg::rope(test_util::make(xf, shape), offset), shape, want, 1e-5, 1e-6);
  }
}

TEST_CASE("rope gradchecks, with and without an offset", "[nn][positions][rope][gradcheck]") {
  for (int64_t offset : {0, 4}) {
    // Multiplying by a second input makes the gradient reaching rope differ per element.
    auto fn = [offset](const Inputs& in) { return sg::rope(in[0], offset) * in[1]; };
    sg::GradcheckOptions o;
    o.name = "rope, offset " + std::to_string(offset);
    const sg::GradcheckResult r = sg::gradcheck(fn, {normal({2, 3, 4, 6}, 1), normal({4, 6}, 2)}, o);
    INFO(r);
    REQUIRE(r);
    REQUIRE(r.checked == 2 * 3 * 4 * 6 + 4 * 6);
  }
}

TEST_CASE("rope: the score of q at position m and k at position n depends only on m - n",
          "[nn][positions][rope]") {
  const Tensor q = normal({1, 1, 8}, 3), k = normal({1, 1, 8}, 4);
  auto score = [&](int64_t m, int64_t n) {
    return sg::sum(sg::rope(q, m) * sg::rope(k, n)).item<double>();
  };
  for (int64_t m = 0; m < 8; ++m)
    for (int64_t n = 0; n < 8; ++n) {
      INFO("m " << m << " n " << n);
      REQUIRE(score(m, n) == Approx(score(m - std::min(m, n), n - std::min(m, n))).margin(1e-12));
      REQUIRE(score(m, n) == Approx(score(m + 5, n + 5)).margin(1e-12));
    }
  // ... and it does depend on the offset (an identity rope would pass the lines above).
  REQUIRE(std::fabs(score(1, 0) - score(0, 0)) > 1e-3);
  REQUIRE(std::fabs(score(0, 1) - score(1, 0)) > 1e-3);
}

TEST_CASE("rope rejects odd widths, scalars and negative offsets", "[nn][positions][rope]") {
  REQUIRE_THROWS_WITH(sg::rope(sg::zeros({2, 3, 5})),
                      "rope: the last axis of x (2, 3, 5) must be even (features rotate in pairs), got 5");
  REQUIRE_THROWS_WITH(sg::rope(sg::zeros({4})), Contains("rope: x must be (..., steps, dim), got (4)"));
  REQUIRE_THROWS_WITH(sg::rope(sg::zeros({3, 4}), -1), Contains("offset must be non-negative, got -1"));
  REQUIRE_THROWS_WITH(sg::rope(sg::zeros({3, 4}, sg::int64)),
                      "rope: needs a float32 or float64 tensor, got int64 (3, 4)");
}

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
      {"relative keys", positions(Kind::relative, 2)},
      {"relative keys and values", positions(Kind::relative, 2, true)},
      {"rotary", positions(Kind::rotary)},
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
      const Tensor out = mha.forward(sg::from_vector(qv, {batch, nq, H}), sg::from_vector(kvv, {batch, nk, H}),
                                     sg::from_vector(kvv, {batch, nk, H}), ids(lens, {batch}));
      std::vector<double> want_w, want_out;
      for (int64_t b = 0; b < batch; ++b) {
        const std::vector<double> qb(qv.begin() + b * nq * H, qv.begin() + (b + 1) * nq * H);
        const std::vector<double> kvb(kvv.begin() + b * nk * H, kvv.begin() + (b + 1) * nk * H);
        const Naive n = naive_attention(mha, qb, nq, kvb, nk, lens[static_cast<size_t>(b)]);
        want_w.insert(want_w.end(), n.weights.begin(), n.weights.end());
        want_out.insert(want_out.end(), n.output.begin(), n.output.end());
      }
      test_util::check_values<float>(mha.attention_weights(), {batch, 2, nq, nk}, want_w, 1e-4, 1e-6);
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
      {"relative keys only, (B) valid_lens", positions(Kind::relative, 1), ids({2, 4}, {2}), false},
      {"relative with values, (B, Q) valid_lens with a 0", positions(Kind::relative, 1, true),
       ids({1, 0, 4, 3, 2, 1}, {2, 3}), false},
      {"relative with values, causal and (B) valid_lens", positions(Kind::relative, 1, true), ids({4, 1}, {2}), true},
      {"rotary, (B, Q) valid_lens with a 0", positions(Kind::rotary), ids({1, 0, 4, 3, 2, 1}, {2, 3}), false},
      {"rotary, causal and (B) valid_lens", positions(Kind::rotary), ids({4, 1}, {2}), true},
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
  sg::nn::MultiHeadAttention relative(8, 2, 0.0, false, false, positions(Kind::relative, 3, true));
  sg::nn::MultiHeadAttention keys_only(8, 2, 0.0, false, false, positions(Kind::relative, 3, false));
  sg::nn::MultiHeadAttention rotary(8, 2, 0.0, false, false, positions(Kind::rotary, 8, true));  // values: ignored
  REQUIRE(relative.parameter_count() == plain.parameter_count() + 2 * 7 * 4);  // 2 tables of (2*3+1, 8/2)
  REQUIRE(relative.named_parameters()[0].first == "relative_keys");
  REQUIRE(relative.named_parameters()[1].first == "relative_values");
  sg::nn::check_shape(relative.relative_keys, {7, 4}, "relative_keys");
  REQUIRE(keys_only.parameter_count() == plain.parameter_count() + 7 * 4);
  REQUIRE_FALSE(keys_only.relative_values.defined());
  REQUIRE(rotary.parameter_count() == plain.parameter_count());
}

TEST_CASE("MultiHeadAttention rejects odd rotary heads and bad relative options", "[nn][positions][attention]") {
  REQUIRE_THROWS_WITH(sg::nn::MultiHeadAttention(6, 2, 0.0, false, false, positions(Kind::rotary)),
                      "MultiHeadAttention: rotary positions rotate pairs of features, so the head dimension "
                      "must be even; num_hiddens 6 / num_heads 2 = 3");
  REQUIRE_NOTHROW(sg::nn::MultiHeadAttention(6, 3, 0.0, false, false, positions(Kind::rotary)));
  REQUIRE_THROWS_WITH(sg::nn::MultiHeadAttention(8, 2, 0.0, false, false, positions(Kind::relative, 0)),
                      "MultiHeadAttention: max_distance must be at least 1, got 0");
  sg::nn::TransformerEncoderOptions o = tiny_encoder(sg::nn::Positional::rotary);
  o.num_hiddens = 6;
  o.num_heads = 2;
  REQUIRE_THROWS_WITH(sg::nn::TransformerEncoder(o), Contains("head dimension must be even"));
}

// ---------------------------------------------------------------------------
// TransformerEncoder with positions in attention, and pre-norm
// ---------------------------------------------------------------------------

TEST_CASE("TransformerEncoder gradchecks with relative and rotary positions, post- and pre-norm",
          "[nn][positions][transformer][gradcheck]") {
  using sg::nn::Positional;
  for (Positional kind : {Positional::relative, Positional::rotary, Positional::sinusoidal}) {
    for (bool pre_norm : {false, true}) {
      if (kind == Positional::sinusoidal && !pre_norm) continue;  // test_nn_layers.cpp has it
      const std::string name = std::string(sg::nn::positional_name(kind)) + (pre_norm ? ", pre-norm" : "");
      SECTION(name) {
        sg::manual_seed(90);
        sg::nn::TransformerEncoder encoder(tiny_encoder(kind, pre_norm));
        randomize(encoder, 91);
        auto fn = [&](const Inputs& in) { return encoder.forward(in[0], in[1]); };
        check_module("TransformerEncoder, " + name, encoder, fn,
                     {ids({1, 3, 3, 6, 0, 2, 5, 1}, {2, 4}), ids({4, 2}, {2})});
      }
    }
  }
}

TEST_CASE("Encoders with relative or rotary positions add nothing to the embeddings", "[nn][positions][transformer]") {
  using sg::nn::Positional;
  for (Positional kind : {Positional::relative, Positional::rotary}) {
    sg::nn::TransformerEncoder encoder(tiny_encoder(kind));
    INFO(sg::nn::positional_name(kind));
    REQUIRE(encoder.sinusoidal == nullptr);
    REQUIRE(encoder.learned == nullptr);
    REQUIRE(encoder.embedding_dropout != nullptr);
    REQUIRE(encoder.final_ln == nullptr);
    // Sequences longer than max_len are fine: nothing is indexed by absolute position.
    REQUIRE(encoder.forward(sg::zeros({1, 9}, sg::int64)).shape() == Shape{1, 9, 8});
  }
  sg::nn::TransformerEncoder relative(tiny_encoder(Positional::relative));
  REQUIRE(relative.state_dict().count("blocks.1.attention.relative_keys") == 1);
  REQUIRE(relative.state_dict().count("blocks.1.attention.relative_values") == 1);  // Shaw et al.: both
  sg::nn::TransformerEncoderOptions o = tiny_encoder(Positional::relative);
  o.relative_values = false;
  REQUIRE(sg::nn::TransformerEncoder(o).state_dict().count("blocks.1.attention.relative_values") == 0);
  sg::nn::TransformerEncoder pre(tiny_encoder(Positional::none, true));
  REQUIRE(pre.state_dict().count("final_ln.weight") == 1);
}

TEST_CASE("The pre-norm block keeps the residual path an identity", "[nn][positions][transformer]") {
  // With both branches' outputs zeroed (W_o and dense2 all zero), a pre-norm
  // block returns X itself; a post-norm block returns LayerNorm(LayerNorm(X)).
  const Tensor X = normal({2, 3, 8}, 95);
  for (bool pre_norm : {true, false}) {
    sg::nn::TransformerEncoderBlock block(8, 12, 2, 0.0, false, false, {}, pre_norm);
    block.to(sg::float64);
    sg::kernel::fill_(block.attention->W_o->weight, 0);
    sg::kernel::fill_(block.ffn->dense2->weight, 0);
    sg::kernel::fill_(block.ffn->dense2->bias, 0);
    const double change = sg::kernel::max(sg::kernel::abs(sg::kernel::sub(block.forward(X), X))).item<double>();
    INFO("pre_norm " << pre_norm << ", largest change " << change);
    if (pre_norm) REQUIRE(change == 0.0);
    else REQUIRE(change > 0.1);
  }
}

TEST_CASE("parse_positional knows all five kinds", "[nn][positions]") {
  using sg::nn::Positional;
  for (Positional kind : {Positional::none, Positional::sinusoidal, Positional::learned, Positional::relative,
                          Positional::rotary})
    REQUIRE(sg::nn::parse_positional(sg::nn::positional_name(kind)) == kind);
  REQUIRE_THROWS_WITH(sg::nn::parse_positional("alibi"),
                      "positional encoding 'alibi' is not one of none, sinusoidal, learned, relative, rotary");
}
