// Hidden tests of assignment 5: d2l's multi-head attention written from ops
// (nn/attention.cpp: split_heads, merge_heads, repeat_for_heads and the
// forward). Outputs and returned weights are compared with attention written out
// here with long double loops from the layer's own parameters: valid_lens
// (B) and (B, Q) with 0 and K among them, causal masks, 1 to 4 heads,
// batches of 2 and 3 with lengths that differ per batch element (so lengths
// repeated per batch element differ from lengths tiled across heads),
// queries and keys of different lengths, separate keys and values, float64
// and float32, rotary and ALiBi positions (whose path splits and merges the
// heads with split_heads and merge_heads), and dropout on the weights with a
// seeded generator. Gradients of the inputs and of every parameter are
// gradchecked in float64 (random output weights, never all ones).
#include <catch2/catch.hpp>

#include "autograd/engine.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/basic.hpp"
#include "nn/linear.hpp"
#include "nn/positional.hpp"
#include "hidden_util.hpp"
#include "nn_util.hpp"

using namespace hidden;
using sg::nn::MultiHeadAttention;
using sg::nn::Positional;

namespace {

using LD = long double;

struct Case {
  int64_t batch, nq, nk, hidden, heads;
  std::vector<int64_t> lens;  // empty: no valid_lens
  bool per_query = false;     // lens are (B, Q), else (B)
  bool causal = false, bias = false;
  Positional positions = Positional::none;
};

Shape lens_shape(const Case& c) { return c.per_query ? Shape{c.batch, c.nq} : Shape{c.batch}; }

Tensor lens_tensor(const Case& c) { return c.lens.empty() ? Tensor() : sg::from_vector(c.lens, lens_shape(c)); }

std::string describe(const Case& c) {
  std::string s = "B " + std::to_string(c.batch) + " Q " + std::to_string(c.nq) + " K " + std::to_string(c.nk) +
                  " hidden " + std::to_string(c.hidden) + " heads " + std::to_string(c.heads) + " lens";
  if (c.lens.empty()) s += " none";
  for (auto v : c.lens) s += " " + std::to_string(v);
  return s + (c.per_query ? " per query" : "") + (c.causal ? " causal" : "") + (c.bias ? " biases" : "") +
         (c.positions == Positional::rotary  ? " rotary"
          : c.positions == Positional::alibi ? " alibi"
                                             : "");
}

std::vector<LD> long_double(const Tensor& t) {
  const auto v = t.to_vector<double>();
  return std::vector<LD>(v.begin(), v.end());
}

// x (rows, H) W^T + b for a Linear's weight W (H, H) and bias b (H, or none).
std::vector<LD> project(const std::vector<LD>& x, int64_t rows, const sg::nn::Linear& layer) {
  const auto w = long_double(layer.weight);
  const auto b = layer.bias.defined() ? long_double(layer.bias) : std::vector<LD>();
  const int64_t h = layer.weight.shape()[0];
  std::vector<LD> out(static_cast<size_t>(rows * h), 0.0L);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < h; ++o) {
      LD s = b.empty() ? 0.0L : b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < h; ++i) s += x[static_cast<size_t>(r * h + i)] * w[static_cast<size_t>(o * h + i)];
      out[static_cast<size_t>(r * h + o)] = s;
    }
  return out;
}

// Rotary positions: pair (2j, 2j+1) of u turns by t * 10000^(-2j/d).
void rotate(std::vector<LD>& u, int64_t t) {
  const size_t d = u.size();
  for (size_t j = 0; j < d / 2; ++j) {
    const LD a = static_cast<LD>(t) * std::pow(10000.0L, -2.0L * static_cast<LD>(j) / static_cast<LD>(d));
    const LD x = u[2 * j], y = u[2 * j + 1];
    u[2 * j] = x * std::cos(a) - y * std::sin(a);
    u[2 * j + 1] = x * std::sin(a) + y * std::cos(a);
  }
}

struct Expected {
  std::vector<double> out;      // (B, Q, hidden)
  std::vector<double> weights;  // (B, heads, Q, K), before dropout
};

// d2l's MultiHeadAttention, one (batch, head, query) at a time:
//   q_i, k_j, v_j: the head's columns of the projected rows;
//   s_ij = q_i . k_j / sqrt(d) (rotary: q_i, k_j rotated for positions i, j;
//          ALiBi: minus m_h |i - j|), replaced by -1e6 for keys j >= the
//          row's valid length (and j > i when causal);
//   w_i = softmax(s_i); head output sum_j w_ij drop_ij v_j, where drop is
//   the dropout multiplier of element (b * heads + h, i, j) (all 1 without);
//   the heads' outputs side by side, projected by W_o.
Expected naive(const MultiHeadAttention& mha, const Case& c, const std::vector<double>& queries,
               const std::vector<double>& keys, const std::vector<double>& values,
               const std::vector<double>& drop = {}) {
  const int64_t B = c.batch, Q = c.nq, K = c.nk, H = c.hidden, heads = c.heads, d = H / heads;
  const std::vector<double> slopes = sg::nn::alibi_slopes(heads);
  Expected e;
  e.out.resize(static_cast<size_t>(B * Q * H));
  e.weights.resize(static_cast<size_t>(B * heads * Q * K));
  auto rows_of = [](const std::vector<double>& x, int64_t b, int64_t rows, int64_t H) {
    return std::vector<LD>(x.begin() + b * rows * H, x.begin() + (b + 1) * rows * H);
  };
  for (int64_t b = 0; b < B; ++b) {
    const auto q = project(rows_of(queries, b, Q, H), Q, *mha.W_q);
    const auto k = project(rows_of(keys, b, K, H), K, *mha.W_k);
    const auto v = project(rows_of(values, b, K, H), K, *mha.W_v);
    std::vector<LD> concat(static_cast<size_t>(Q * H), 0.0L);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < Q; ++i) {
        int64_t len = c.lens.empty() ? K : c.lens[static_cast<size_t>(c.per_query ? b * Q + i : b)];
        if (c.causal) len = std::min(len, i + 1);
        std::vector<LD> qi(q.begin() + i * H + h * d, q.begin() + i * H + (h + 1) * d);
        if (c.positions == Positional::rotary) rotate(qi, i);
        std::vector<LD> s(static_cast<size_t>(K));
        for (int64_t j = 0; j < K; ++j) {
          std::vector<LD> kj(k.begin() + j * H + h * d, k.begin() + j * H + (h + 1) * d);
          if (c.positions == Positional::rotary) rotate(kj, j);
          LD dot = 0;
          for (int64_t x = 0; x < d; ++x) dot += qi[static_cast<size_t>(x)] * kj[static_cast<size_t>(x)];
          LD score = dot / std::sqrt(static_cast<LD>(d));
          if (c.positions == Positional::alibi)
            score -= static_cast<LD>(slopes[static_cast<size_t>(h)]) * static_cast<LD>(std::abs(i - j));
          s[static_cast<size_t>(j)] = j < len ? score : -1e6L;
        }
        LD m = s[0], total = 0;
        for (LD x : s) m = std::max(m, x);
        for (LD& x : s) total += (x = std::exp(x - m));
        for (int64_t j = 0; j < K; ++j) {
          const LD w = s[static_cast<size_t>(j)] / total;
          e.weights[static_cast<size_t>(((b * heads + h) * Q + i) * K + j)] = static_cast<double>(w);
          const LD kept = drop.empty() ? w : w * drop[static_cast<size_t>(((b * heads + h) * Q + i) * K + j)];
          for (int64_t x = 0; x < d; ++x)
            concat[static_cast<size_t>(i * H + h * d + x)] += kept * v[static_cast<size_t>(j * H + h * d + x)];
        }
      }
    const auto out = project(concat, Q, *mha.W_o);
    for (size_t n = 0; n < out.size(); ++n) e.out[static_cast<size_t>(b * Q * H) + n] = static_cast<double>(out[n]);
  }
  return e;
}

// A layer for c with random parameters (biases too, when it has them) in dtype.
std::unique_ptr<MultiHeadAttention> layer(const Case& c, uint64_t seed, sg::DType dtype = sg::float64,
                                          double dropout = 0.0) {
  sg::nn::AttentionPositions positions;
  positions.kind = c.positions;
  auto mha = std::make_unique<MultiHeadAttention>(c.hidden, c.heads, dropout, c.bias, c.causal, positions);
  test_util::randomize(*mha, seed);
  mha->to(dtype);
  return mha;
}

struct Inputs3 {
  std::vector<double> q, k, v;
};

Inputs3 inputs(const Case& c, uint64_t seed) {
  return {randoms({c.batch, c.nq, c.hidden}, seed), randoms({c.batch, c.nk, c.hidden}, seed + 1),
          randoms({c.batch, c.nk, c.hidden}, seed + 2)};
}

// Runs the layer on c in dtype T (inputs rounded to T first) and compares its
// output and returned weights with the naive loops.
template <class T>
void check_case(const Case& c, uint64_t seed, double rel, double abs) {
  INFO("MultiHeadAttention " << describe(c) << " " << (std::is_same_v<T, float> ? "float32" : "float64"));
  auto mha = layer(c, seed, sg::dtype_of<T>);
  Inputs3 in = inputs(c, seed * 7);
  for (auto* x : {&in.q, &in.k, &in.v})
    for (auto& e : *x) e = static_cast<double>(static_cast<T>(e));
  const Expected want = naive(*mha, c, in.q, in.k, in.v);
  Tensor weights;
  const Tensor out = mha->forward(tensor(in.q, {c.batch, c.nq, c.hidden}, sg::dtype_of<T>),
                                  tensor(in.k, {c.batch, c.nk, c.hidden}, sg::dtype_of<T>),
                                  tensor(in.v, {c.batch, c.nk, c.hidden}, sg::dtype_of<T>), lens_tensor(c), nullptr,
                                  &weights);
  test_util::check_values<T>(out, {c.batch, c.nq, c.hidden}, want.out, rel, abs);
  test_util::check_values<T>(weights, {c.batch, c.heads, c.nq, c.nk}, want.weights, rel, abs);
}

// Every mask kind, 1, 2, 3 and 4 heads, Q != K, batches of 2 and 3.
std::vector<Case> d2l_cases() {
  return {{2, 3, 5, 8, 2, {}},
          {3, 4, 4, 8, 1, {}, false, false, true},
          {3, 3, 5, 8, 4, {2, 5, 1}},
          {2, 3, 4, 12, 3, {1, 0, 4, 3, 2, 1}, true},
          {2, 4, 4, 8, 2, {}, false, true},
          {3, 4, 6, 8, 2, {6, 2, 4}, false, true, true},
          {2, 2, 3, 16, 4, {3, 1, 0, 2}, true, false, true},
          {1, 5, 2, 4, 2, {}}};
}

}  // namespace

TEST_CASE("5.1 the forward matches d2l's multi-head attention written in naive loops in float64",
          "[a5][a5.1]") {
  uint64_t seed = 501;
  for (const Case& c : d2l_cases()) check_case<double>(c, ++seed, 1e-10, 1e-12);
}

TEST_CASE("5.2 valid lengths are repeated for each head of their own batch element and not tiled across heads",
          "[a5][a5.2]") {
  // Batches of 3 with lengths that all differ: with the lengths tiled
  // across heads (b * heads + h read as batch element (b * heads + h) mod B)
  // some head sees another element's length.
  const std::vector<Case> cases = {{3, 2, 5, 8, 2, {1, 5, 3}},
                                   {3, 2, 5, 12, 3, {4, 1, 2}},
                                   {3, 2, 4, 8, 4, {1, 2, 3, 4, 2, 1}, true},
                                   {2, 3, 6, 8, 2, {6, 5, 4, 1, 2, 3}, true}};
  uint64_t seed = 520;
  for (const Case& c : cases) {
    INFO("MultiHeadAttention " << describe(c));
    auto mha = layer(c, ++seed);
    const Inputs3 in = inputs(c, seed * 5);
    Tensor w;
    mha->forward(tensor(in.q, {c.batch, c.nq, c.hidden}, sg::float64), tensor(in.k, {c.batch, c.nk, c.hidden}, sg::float64),
                 tensor(in.v, {c.batch, c.nk, c.hidden}, sg::float64), lens_tensor(c), nullptr, &w);
    REQUIRE(w.defined());
    REQUIRE(w.shape() == Shape{c.batch, c.heads, c.nq, c.nk});
    const auto p = w.to_vector<double>();
    int64_t wrong = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t i = 0; i < c.nq; ++i) {
          const int64_t len = c.lens[static_cast<size_t>(c.per_query ? b * c.nq + i : b)];
          for (int64_t j = 0; j < c.nk; ++j) {
            const double pij = p[static_cast<size_t>(((b * c.heads + h) * c.nq + i) * c.nk + j)];
            if (j < len ? !(pij > 0) : pij != 0.0) {
              if (wrong++ == 0) UNSCOPED_INFO("first wrong weight: batch " << b << " head " << h << " query " << i << " key " << j << " valid length " << len << " weight " << pij);
            }
          }
        }
    CHECK(wrong == 0);
    check_case<double>(c, seed, 1e-10, 1e-12);
  }
}

TEST_CASE("5.3 a valid length of 0 gives uniform weights over all keys as d2l's -1e6 does and no gradient to its scores",
          "[a5][a5.3]") {
  // Batch element 1 has no valid key: its weights are 1/K everywhere, its
  // output is W_o applied to the mean of the projected values, and its
  // queries get no gradient (every score of theirs was replaced).
  const Case c{2, 3, 4, 8, 2, {3, 0}, false, false, true};
  auto mha = layer(c, 530);
  const Inputs3 in = inputs(c, 531);
  const Tensor q = tensor(in.q, {2, 3, 8}, sg::float64).set_requires_grad();
  Tensor weights;
  const Tensor out = mha->forward(q, tensor(in.k, {2, 4, 8}, sg::float64), tensor(in.v, {2, 4, 8}, sg::float64),
                                  lens_tensor(c), nullptr, &weights);
  const Expected want = naive(*mha, c, in.q, in.k, in.v);
  test_util::check_values<double>(out, {2, 3, 8}, want.out, 1e-10, 1e-12);
  const auto w = weights.to_vector<double>();
  REQUIRE(w.size() == 2 * 2 * 3 * 4);
  for (size_t n = w.size() / 2; n < w.size(); ++n) {
    INFO("weight " << n << " of batch element 1");
    REQUIRE(std::fabs(w[n] - 0.25) <= 1e-15);
  }
  sg::backward(out, tensor(randoms({2, 3, 8}, 532), {2, 3, 8}, sg::float64));
  const auto dq = q.grad().to_vector<double>();
  bool some = false;
  for (size_t n = 0; n < dq.size(); ++n) {
    INFO("dL/dqueries element " << n);
    if (n >= dq.size() / 2) REQUIRE(dq[n] == 0.0);
    else some |= dq[n] != 0.0;
  }
  REQUIRE(some);  // batch element 0's queries do get a gradient
}

TEST_CASE("5.4 float32 layers give d2l's values", "[a5][a5.4]") {
  uint64_t seed = 540;
  for (const Case& c : d2l_cases()) check_case<float>(c, ++seed, 2e-4, 2e-5);
}

TEST_CASE("5.5 the heads are split and merged in d2l's order on the rotary and ALiBi paths", "[a5][a5.5]") {
  // Rotary and ALiBi positions work on each head's own (T, d) matrix: they
  // split the projections into heads with split_heads and merge the heads'
  // outputs with merge_heads, and ALiBi's slope differs per head.
  uint64_t seed = 560;
  for (Positional kind : {Positional::rotary, Positional::alibi})
    for (Case c : {Case{2, 4, 4, 8, 2, {3, 1}}, Case{3, 3, 5, 16, 4, {}, false, true, true},
                   Case{2, 3, 4, 8, 4, {1, 0, 4, 2, 3, 4}, true}}) {
      c.positions = kind;
      check_case<double>(c, ++seed, 1e-10, 1e-12);
    }
}

TEST_CASE("5.6 dropout drops the attention weights of shape B times heads by Q by K after they are kept and only in training",
          "[a5][a5.6]") {
  const Case c{2, 3, 5, 8, 2, {4, 2, 5, 1, 3, 5}, true, false, true};
  const double p = 0.3;
  auto mha = layer(c, 570, sg::float64, p);
  const Inputs3 in = inputs(c, 571);
  const Shape qs{2, 3, 8}, ks{2, 5, 8};
  Tensor weights;
  auto run = [&] {
    return mha->forward(tensor(in.q, qs, sg::float64), tensor(in.k, ks, sg::float64), tensor(in.v, ks, sg::float64),
                        lens_tensor(c), nullptr, &weights);
  };
  // The same seed drawn by a Dropout of the same p over ones of the
  // weights' shape gives the multipliers (0 or 1 / (1 - p)) of every weight.
  mha->attention_dropout->generator = std::make_shared<sg::Generator>(572);
  const Tensor out = run();
  sg::nn::Dropout same(p);
  same.generator = std::make_shared<sg::Generator>(572);
  const auto drop = same.forward(sg::ones({c.batch * c.heads, c.nq, c.nk}, sg::float64)).to_vector<double>();
  int64_t dropped = 0;
  for (double m : drop) dropped += m == 0.0;
  REQUIRE(dropped > 0);
  const Expected want = naive(*mha, c, in.q, in.k, in.v, drop);
  {
    INFO("training: weights times the dropout mask");
    test_util::check_values<double>(out, qs, want.out, 1e-10, 1e-12);
    test_util::check_values<double>(weights, {2, 2, 3, 5}, want.weights, 1e-10, 1e-12);
  }
  mha->eval();
  INFO("eval: no dropout");
  test_util::check_values<double>(run(), qs, naive(*mha, c, in.q, in.k, in.v).out, 1e-10, 1e-12);
}

TEST_CASE("5.7 gradients of queries keys values and every parameter gradcheck in float64", "[a5][a5.7]") {
  std::vector<Case> cases = {{2, 3, 4, 8, 2, {}, false, false, true},
                             {3, 2, 4, 8, 4, {1, 4, 2}},
                             {2, 3, 4, 6, 3, {1, 0, 4, 3, 2, 1}, true, false, true},
                             {2, 4, 4, 4, 1, {3, 2}, false, true},
                             {2, 3, 3, 8, 2, {2, 3}, false, false, false, Positional::rotary}};
  uint64_t seed = 580;
  for (const Case& c : cases) {
    auto mha = layer(c, ++seed);
    const Tensor lens = lens_tensor(c);
    auto fn = [&](const std::vector<Tensor>& x) { return mha->forward(x[0], x[1], x[2], lens); };
    const Inputs x = {tensor(randoms({c.batch, c.nq, c.hidden}, seed * 3), {c.batch, c.nq, c.hidden}, sg::float64),
                      tensor(randoms({c.batch, c.nk, c.hidden}, seed * 3 + 1), {c.batch, c.nk, c.hidden}, sg::float64),
                      tensor(randoms({c.batch, c.nk, c.hidden}, seed * 3 + 2), {c.batch, c.nk, c.hidden}, sg::float64)};
    test_util::check_module("MultiHeadAttention " + describe(c), *mha, fn, x);
  }
}

TEST_CASE("5.8 in eval mode dropout is off on every call for every mask and train() turns it back on", "[a5][a5.8]") {
  const std::vector<Case> cases = {{2, 3, 5, 8, 2, {4, 2}, false, false, true},
                                   {2, 3, 5, 8, 2, {4, 2, 5, 1, 3, 5}, true, false, true},
                                   {2, 4, 4, 8, 4, {3, 2}, false, true},
                                   {2, 3, 3, 8, 2, {}, false, false, false, Positional::rotary}};
  uint64_t seed = 590;
  for (const Case& c : cases) {
    INFO(describe(c) << " with dropout 0.5");
    auto mha = layer(c, ++seed, sg::float64, 0.5);
    const Inputs3 in = inputs(c, ++seed);
    const Shape qs{c.batch, c.nq, c.hidden}, ks{c.batch, c.nk, c.hidden};
    Tensor weights;
    auto run = [&] {
      return mha->forward(tensor(in.q, qs, sg::float64), tensor(in.k, ks, sg::float64), tensor(in.v, ks, sg::float64),
                          lens_tensor(c), nullptr, &weights);
    };
    mha->eval();
    const Expected want = naive(*mha, c, in.q, in.k, in.v);
    for (int call = 0; call < 2; ++call) {
      INFO("eval, call " << call + 1);
      test_util::check_values<double>(run(), qs, want.out, 1e-10, 1e-12);
      test_util::check_values<double>(weights, {c.batch, c.heads, c.nq, c.nk}, want.weights, 1e-10, 1e-12);
    }
    mha->train();
    const auto trained = run().to_vector<double>();
    double largest = 0;
    for (size_t k = 0; k < trained.size(); ++k) largest = std::max(largest, std::fabs(trained[k] - want.out[k]));
    INFO("training again: dropout 0.5 must change the output");
    CHECK(largest > 1e-6);
  }
}

TEST_CASE("5.9 an input changed in place between forward and backward gives the version error or the forward's gradient",
          "[a5][a5.9]") {
  const std::vector<Case> cases = {{2, 3, 4, 8, 2, {3, 1}}, {2, 3, 3, 8, 2, {2, 3}, false, true, true}};
  uint64_t seed = 595;
  for (const Case& c : cases) {
    auto mha = layer(c, ++seed);
    const Tensor lens = lens_tensor(c);
    const Inputs3 in = inputs(c, ++seed);
    const Shape qs{c.batch, c.nq, c.hidden}, ks{c.batch, c.nk, c.hidden};
    check_inplace_change("MultiHeadAttention " + describe(c),
                         [&](const Inputs& x) { return mha->forward(x[0], x[1], x[2], lens); }, {in.q, in.k, in.v},
                         {qs, ks, ks}, ++seed);
  }
}
