// Hidden tests of assignment 10: the GPT (nanoGPT's model) and its sampling.
// The attention layer and the whole model are compared with the model
// written out here in long double loops from its own parameters (set to
// random values of a useful size first); the cache with the uncached
// forward and generate; the next-token distribution with a long double
// softmax; and a short training run must bring the loss down.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/node.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/shape.hpp"
#include "core/random.hpp"
#include "decoding/sampling.hpp"
#include "hidden_util.hpp"
#include "nn/gpt.hpp"
#include "nn/positional.hpp"
#include "optim/optim.hpp"

using namespace hidden;
using Catch::Contains;

namespace {

using LD = long double;
using Vec = std::vector<LD>;

Vec vals(const Tensor& t) {
  const auto v = t.to_vector<double>();
  return Vec(v.begin(), v.end());
}

// Every parameter of m set to normal values of standard deviation `scale`
// (the model's own init is too small to tell its parts apart).
void randomize(sg::nn::Module& m, uint64_t seed, double scale) {
  for (Tensor p : m.parameters()) {
    const auto v = randoms(p.shape(), ++seed, scale);
    if (p.dtype() == sg::float64) {
      std::copy(v.begin(), v.end(), p.data<double>());
    } else {
      float* d = p.data<float>();
      for (size_t i = 0; i < v.size(); ++i) d[i] = static_cast<float>(v[i]);
    }
  }
}

// y (n, out) = x (n, in) W^T + b, W (out, in) given as rows [row0, row0 + out) of `W`.
Vec lin(const Vec& x, int64_t n, int64_t in, const Vec& W, const Vec* b, int64_t out, int64_t row0 = 0) {
  Vec y(static_cast<size_t>(n * out));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      LD s = b ? (*b)[static_cast<size_t>(row0 + o)] : 0;
      for (int64_t i = 0; i < in; ++i)
        s += x[static_cast<size_t>(r * in + i)] * W[static_cast<size_t>((row0 + o) * in + i)];
      y[static_cast<size_t>(r * out + o)] = s;
    }
  return y;
}

Vec layer_norm(const Vec& x, int64_t n, int64_t C, const sg::nn::LayerNorm& l) {
  const Vec w = vals(l.weight), b = l.bias.defined() ? vals(l.bias) : Vec(static_cast<size_t>(C), 0);
  Vec y(x.size());
  for (int64_t r = 0; r < n; ++r) {
    LD mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += x[static_cast<size_t>(r * C + c)];
    mean /= C;
    for (int64_t c = 0; c < C; ++c) var += (x[static_cast<size_t>(r * C + c)] - mean) * (x[static_cast<size_t>(r * C + c)] - mean);
    var /= C;
    for (int64_t c = 0; c < C; ++c)
      y[static_cast<size_t>(r * C + c)] =
          (x[static_cast<size_t>(r * C + c)] - mean) / std::sqrt(var + 1e-5L) * w[static_cast<size_t>(c)] + b[static_cast<size_t>(c)];
  }
  return y;
}

// One sequence x (T, C) through causal self-attention -> (T, C); weights (H, T, T) when asked.
// In training mode, attn_mask (H, T, T) multiplies the weights and
// resid_mask (T, C) the output: a Dropout's masks (0 or 1 / (1 - p)).
Vec attention(const Vec& x, int64_t T, const sg::nn::CausalSelfAttention& a, Vec* weights = nullptr,
              const double* attn_mask = nullptr, const double* resid_mask = nullptr) {
  const int64_t C = a.n_embd, H = a.n_head, d = C / H;
  const Vec W = vals(a.c_attn->weight);
  const Vec bv = a.c_attn->bias.defined() ? vals(a.c_attn->bias) : Vec();
  const Vec* b = a.c_attn->bias.defined() ? &bv : nullptr;
  const Vec q = lin(x, T, C, W, b, C, 0), k = lin(x, T, C, W, b, C, C), v = lin(x, T, C, W, b, C, 2 * C);
  Vec alibi;
  if (a.positional == sg::nn::Positional::alibi) alibi = vals(sg::nn::alibi_bias(H, T, T, sg::float64, 0));
  Vec heads(static_cast<size_t>(T * C), 0);
  if (weights) weights->assign(static_cast<size_t>(H * T * T), 0);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < T; ++i) {
      Vec s(static_cast<size_t>(i + 1));
      LD m = -INFINITY;
      for (int64_t j = 0; j <= i; ++j) {
        LD dot = 0;
        for (int64_t e = 0; e < d; ++e) dot += q[static_cast<size_t>(i * C + h * d + e)] * k[static_cast<size_t>(j * C + h * d + e)];
        s[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<LD>(d)) +
                                    (alibi.empty() ? 0 : alibi[static_cast<size_t>((h * T + i) * T + j)]);
        m = std::max(m, s[static_cast<size_t>(j)]);
      }
      LD total = 0;
      for (auto& e : s) total += (e = std::exp(e - m));
      for (int64_t j = 0; j <= i; ++j) {
        const LD p = s[static_cast<size_t>(j)] / total;
        if (weights) (*weights)[static_cast<size_t>((h * T + i) * T + j)] = p;
        const LD kept = attn_mask ? p * attn_mask[(h * T + i) * T + j] : p;
        for (int64_t e = 0; e < d; ++e) heads[static_cast<size_t>(i * C + h * d + e)] += kept * v[static_cast<size_t>(j * C + h * d + e)];
      }
    }
  const Vec P = vals(a.c_proj->weight);
  const Vec pb = a.c_proj->bias.defined() ? vals(a.c_proj->bias) : Vec();
  Vec y = lin(heads, T, C, P, a.c_proj->bias.defined() ? &pb : nullptr, C);
  if (resid_mask)
    for (size_t i = 0; i < y.size(); ++i) y[i] *= resid_mask[i];
  return y;
}

Vec add(Vec a, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

Vec block(const Vec& x, int64_t T, const sg::nn::GPTBlock& blk, Vec* weights) {
  const int64_t C = blk.attn->n_embd;
  const Vec y = add(x, attention(layer_norm(x, T, C, *blk.ln_1), T, *blk.attn, weights));
  const auto& mlp = *blk.mlp;
  const Vec fb = mlp.c_fc->bias.defined() ? vals(mlp.c_fc->bias) : Vec(), pb = mlp.c_proj->bias.defined() ? vals(mlp.c_proj->bias) : Vec();
  Vec hidden = lin(layer_norm(y, T, C, *blk.ln_2), T, C, vals(mlp.c_fc->weight), mlp.c_fc->bias.defined() ? &fb : nullptr, 4 * C);
  for (auto& e : hidden) e = 0.5L * e * (1 + std::erf(e / std::sqrt(2.0L)));  // exact GELU
  return add(y, lin(hidden, T, 4 * C, vals(mlp.c_proj->weight), mlp.c_proj->bias.defined() ? &pb : nullptr, C));
}

// logits (B, T, V) of ids (B, T), learned positions from 0; weights[l]: (B, H, T, T).
Vec gpt(const sg::nn::GPT& model, const std::vector<int64_t>& ids, int64_t B, int64_t T, std::vector<Vec>* weights) {
  const auto& o = model.options;
  const int64_t C = o.n_embd, V = o.vocab_size, H = o.n_head;
  const Vec wte = vals(model.transformer->wte->weight), wpe = vals(model.transformer->wpe->weight);
  const Vec head = vals(model.lm_head->weight);
  Vec out;
  if (weights) weights->assign(model.transformer->h->blocks.size(), Vec());
  for (int64_t b = 0; b < B; ++b) {
    Vec x(static_cast<size_t>(T * C));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c)
        x[static_cast<size_t>(t * C + c)] =
            wte[static_cast<size_t>(ids[static_cast<size_t>(b * T + t)] * C + c)] + wpe[static_cast<size_t>(t * C + c)];
    for (size_t l = 0; l < model.transformer->h->blocks.size(); ++l) {
      Vec w;
      x = block(x, T, *model.transformer->h->blocks[l], &w);
      if (weights) (*weights)[l].insert((*weights)[l].end(), w.begin(), w.end());
    }
    const Vec logits = lin(layer_norm(x, T, C, *model.transformer->ln_f), T, C, head, nullptr, V);
    out.insert(out.end(), logits.begin(), logits.end());
  }
  (void)H;
  return out;
}

std::vector<double> as_double(const Vec& v) { return std::vector<double>(v.begin(), v.end()); }

sg::nn::GPTOptions small(bool bias, bool tie) {
  sg::nn::GPTOptions o;
  o.vocab_size = 11;
  o.block_size = 8;
  o.n_layer = 2;
  o.n_head = 2;
  o.n_embd = 8;
  o.bias = bias;
  o.tie_weights = tie;
  return o;
}

std::vector<int64_t> random_ids(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& e : v) e = static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab));
  return v;
}

template <class T>
void check(const Tensor& got, const Shape& s, const Vec& want, double widen = 1.0) {
  const double rel = std::is_same_v<T, float> ? 2e-4 : 1e-10, abs = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  test_util::check_values<T>(got, s, as_double(want), rel * widen, abs * widen);
}

}  // namespace

TEST_CASE("10.1 causal self-attention with fused q k v equals long double loops with and without bias and ALiBi",
          "[a10][a10.1]") {
  uint64_t seed = 10100;
  for (const sg::DType dt : {sg::float64, sg::float32}) {
    for (const bool bias : {false, true}) {
      for (const sg::nn::Positional pos : {sg::nn::Positional::learned, sg::nn::Positional::alibi}) {
        INFO((dt == sg::float32 ? "float32" : "float64") << (bias ? " with bias" : " without bias")
                                                         << (pos == sg::nn::Positional::alibi ? " ALiBi" : ""));
        sg::nn::GPTOptions o = small(bias, true);
        o.positional = pos;
        sg::nn::CausalSelfAttention a(o);
        a.to(dt);
        randomize(a, seed += 50, 0.5);
        a.eval();
        const int64_t B = 2, T = 5, C = o.n_embd;
        const auto xv = randoms({B, T, C}, ++seed);
        Tensor weights;
        const Tensor y = a.forward(tensor(xv, {B, T, C}, dt), nullptr, &weights);
        {
          INFO("the weights given to the caller are detached (recording on, the parameters require grad)");
          REQUIRE(y.requires_grad());
          REQUIRE_FALSE(weights.requires_grad());
        }
        Vec want, want_w;
        for (int64_t b = 0; b < B; ++b) {
          Vec w;
          const Vec x(xv.begin() + b * T * C, xv.begin() + (b + 1) * T * C);
          const Vec yb = attention(dt == sg::float32 ? vals(tensor(std::vector<double>(x.begin(), x.end()), {T, C}, dt)) : x,
                                   T, a, &w);
          want.insert(want.end(), yb.begin(), yb.end());
          want_w.insert(want_w.end(), w.begin(), w.end());
        }
        if (dt == sg::float32) {
          check<float>(y, {B, T, C}, want, 5);
          check<float>(weights, {B, o.n_head, T, T}, want_w, 5);
        } else {
          check<double>(y, {B, T, C}, want);
          check<double>(weights, {B, o.n_head, T, T}, want_w);
        }
      }
    }
  }
}

TEST_CASE("10.2 the GPT's logits equal long double loops with tied and untied embeddings in float64 and float32",
          "[a10][a10.2]") {
  uint64_t seed = 10200;
  for (const sg::DType dt : {sg::float64, sg::float32}) {
    for (const bool tie : {true, false}) {
      INFO((dt == sg::float32 ? "float32" : "float64") << (tie ? " tied" : " untied"));
      sg::nn::GPT model(small(true, tie));
      model.to(dt);
      randomize(model, seed += 100, 0.4);
      model.eval();
      REQUIRE((model.lm_head->weight.impl_ptr() == model.transformer->wte->weight.impl_ptr()) == tie);
      const int64_t B = 2, T = 6, V = model.options.vocab_size;
      const auto ids = random_ids(B * T, V, ++seed);
      std::vector<Tensor> weights;
      const Tensor logits = model.forward(sg::from_vector(ids, {B, T}), nullptr, &weights);
      std::vector<Vec> want_w;
      const Vec want = gpt(model, ids, B, T, &want_w);
      REQUIRE(weights.size() == 2);
      if (dt == sg::float32) {
        check<float>(logits, {B, T, V}, want, 20);
        for (size_t l = 0; l < 2; ++l) check<float>(weights[l], {B, 2, T, T}, want_w[l], 20);
      } else {
        check<double>(logits, {B, T, V}, want);
        for (size_t l = 0; l < 2; ++l) check<double>(weights[l], {B, 2, T, T}, want_w[l]);
      }
    }
  }
}

TEST_CASE("10.3 the cache: forward_cached in steps of one and several tokens equals forward and cached sampling equals uncached",
          "[a10][a10.3]") {
  sg::nn::GPT model(small(true, true));
  model.to(sg::float64);
  randomize(model, 10300, 0.4);
  model.eval();
  const int64_t B = 2, T = 8, V = model.options.vocab_size;
  const auto ids = random_ids(B * T, V, 10301);
  const Tensor all = sg::from_vector(ids, {B, T});
  const Vec want = vals(model.forward(all));
  for (const std::vector<int64_t>& steps : {std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1}, std::vector<int64_t>{3, 1, 2, 2},
                                            std::vector<int64_t>{8}}) {
    sg::nn::GPTCache cache;
    std::vector<Tensor> parts;
    int64_t at = 0;
    for (const int64_t n : steps) {
      std::vector<int64_t> chunk;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = at; t < at + n; ++t) chunk.push_back(ids[static_cast<size_t>(b * T + t)]);
      parts.push_back(model.forward_cached(sg::from_vector(chunk, {B, n}), cache));
      at += n;
      REQUIRE(cache.length() == at);
    }
    INFO("steps of " << steps.size() << " calls");
    test_util::check_values<double>(sg::concat(parts, 1), {B, T, V}, as_double(want), 1e-10, 1e-12);
  }
  // generate: the same tokens with and without the cache, for a sampled
  // continuation past the context (the window moves) and a greedy one.
  for (const double temperature : {0.9, 0.0}) {
    INFO("temperature " << temperature);
    sg::decoding::SamplingOptions o;
    o.max_new_tokens = 14;
    o.temperature = temperature;
    o.top_k = 5;
    sg::Generator g1(77), g2(77);
    o.use_cache = true;
    const auto cached = sg::decoding::generate(model, {1, 4, 2}, o, g1);
    o.use_cache = false;
    const auto uncached = sg::decoding::generate(model, {1, 4, 2}, o, g2);
    REQUIRE(cached.size() == 17);
    REQUIRE(cached == uncached);
  }
}

TEST_CASE("10.4 next_token_distribution equals a long double softmax with temperature and top-k at any logits",
          "[a10][a10.4]") {
  const std::vector<double> base = {0.3, -1.2, 2.5, 0.3, 1.7, -0.4, 2.5, 0.9};
  for (const double shift : {0.0, 1e4, -1e4}) {
    for (const double temperature : {1.0, 0.5, 1.7, 0.01}) {
      for (const int64_t top_k : {0, 1, 2, 3, 5, 8, 20}) {
        INFO("logits shifted by " << shift << ", temperature " << temperature << ", top_k " << top_k);
        std::vector<double> logits = base;
        for (auto& l : logits) l += shift;
        sg::decoding::SamplingOptions o;
        o.temperature = temperature;
        o.top_k = top_k;
        const auto p = sg::decoding::next_token_distribution(logits, o);
        // The k-th largest logit (ties with it kept), then the softmax.
        std::vector<double> sorted = logits;
        std::sort(sorted.begin(), sorted.end(), std::greater<double>());
        const LD threshold = top_k > 0 && top_k < 8 ? sorted[static_cast<size_t>(top_k - 1)] : -INFINITY;
        const LD m = sorted[0];
        Vec want(8, 0);
        LD total = 0;
        for (size_t i = 0; i < 8; ++i)
          if (logits[i] >= threshold) total += want[i] = std::exp((static_cast<LD>(logits[i]) - m) / temperature);
        for (auto& w : want) w /= total;
        REQUIRE(p.size() == 8);
        for (size_t i = 0; i < 8; ++i) {
          INFO("token " << i << ": got " << p[i] << ", want " << static_cast<double>(want[i]));
          REQUIRE(std::fabs(p[i] - static_cast<double>(want[i])) <= 1e-12 + 1e-10 * static_cast<double>(want[i]));
        }
      }
    }
  }
  // Temperature 0: the first of the largest logits, with probability 1.
  sg::decoding::SamplingOptions greedy;
  greedy.temperature = 0;
  const auto p = sg::decoding::next_token_distribution(base, greedy);
  for (size_t i = 0; i < 8; ++i) REQUIRE(p[i] == (i == 2 ? 1.0 : 0.0));
}

TEST_CASE("10.5 generate records no graph with recording on or off and leaves recording as it was", "[a10][a10.5]") {
  sg::nn::GPT model(small(false, true));
  randomize(model, 10500, 0.4);
  model.eval();
  sg::decoding::SamplingOptions o;
  o.max_new_tokens = 10;
  o.top_k = 4;
  std::vector<int64_t> first;
  for (const bool recording : {true, false}) {
    INFO((recording ? "recording on" : "under a NoGradGuard"));
    const int64_t live = sg::Node::live_count();
    sg::Generator gen(5);
    std::vector<int64_t> out;
    if (recording) {
      out = sg::decoding::generate(model, {3, 1}, o, gen);
      REQUIRE(sg::grad_enabled());
    } else {
      sg::NoGradGuard off;
      out = sg::decoding::generate(model, {3, 1}, o, gen);
      REQUIRE_FALSE(sg::grad_enabled());
    }
    REQUIRE(sg::Node::live_count() == live);
    REQUIRE(out.size() == 12);
    if (first.empty()) first = out;
    REQUIRE(out == first);
  }
  model.train();
  sg::Generator gen(5);
  REQUIRE_THROWS_WITH(sg::decoding::generate(model, {3, 1}, o, gen), Contains("training mode"));
}

TEST_CASE("10.6 a short training run on a repeating text brings the loss down as the reference's does", "[a10][a10.6]") {
  // Tokens 0 1 2 3 4 0 1 2 ...: every next token follows from the last one.
  // The reference's loss goes from about ln 5 to under 0.2 in these 100
  // AdamW steps; a model whose gradients or attention are wrong stays far above.
  sg::nn::GPTOptions opt = small(false, true);
  opt.vocab_size = 5;
  sg::manual_seed(4);
  sg::nn::GPT model(opt);
  model.train();
  sg::optim::AdamW adamw(model.parameters(), {.lr = 3e-2, .weight_decay = 0.0});
  const int64_t B = 4, T = 8;
  std::vector<int64_t> x, y;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) x.push_back((b + t) % 5), y.push_back((b + t + 1) % 5);
  const Tensor ids = sg::from_vector(x, {B, T}), targets = sg::from_vector(y, {B * T});
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    const Tensor loss = sg::cross_entropy(sg::reshape(model.forward(ids), {B * T, 5}), targets);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    adamw.zero_grad();
    sg::backward(loss);
    adamw.step();
  }
  INFO("loss " << first << " at the first step, " << last << " at the last");
  REQUIRE(std::isfinite(last));
  REQUIRE(first > 1.3);
  REQUIRE(last < 0.2);
}

TEST_CASE("10.7 in training mode the attention and residual dropouts drop where their seeded masks say and none in eval mode",
          "[a10][a10.7]") {
  // Each Dropout gets a generator of its own seed; one forward calls each
  // once, so a fresh Dropout of the same p and seed over ones of the same
  // shape replays its mask.
  uint64_t seed = 10700;
  for (const sg::nn::Positional pos : {sg::nn::Positional::learned, sg::nn::Positional::alibi}) {
    INFO((pos == sg::nn::Positional::alibi ? "ALiBi" : "learned positions"));
    sg::nn::GPTOptions o = small(true, true);
    o.positional = pos;
    o.dropout = 0.3;
    sg::nn::CausalSelfAttention a(o);
    a.to(sg::float64);
    randomize(a, seed += 50, 0.5);
    const int64_t B = 2, T = 5, C = o.n_embd, H = o.n_head;
    auto seeded = [&](sg::nn::Dropout& d, const Shape& shape) {
      d.generator = std::make_shared<sg::Generator>(++seed);
      sg::nn::Dropout same(d.p);
      same.generator = std::make_shared<sg::Generator>(seed);
      const std::vector<double> m = same.forward(sg::ones(shape, sg::float64)).to_vector<double>();
      REQUIRE(std::count(m.begin(), m.end(), 0.0) > 0);
      return m;
    };
    const std::vector<double> attn_mask = seeded(*a.attn_dropout, {B * H, T, T});
    const std::vector<double> resid_mask = seeded(*a.resid_dropout, {B, T, C});
    const auto xv = randoms({B, T, C}, ++seed);
    for (const bool training : {true, false}) {
      INFO((training ? "training mode" : "eval mode"));
      if (training) a.train(); else a.eval();
      const Tensor y = a.forward(tensor(xv, {B, T, C}, sg::float64));
      Vec want;
      for (int64_t b = 0; b < B; ++b) {
        const Vec x(xv.begin() + b * T * C, xv.begin() + (b + 1) * T * C);
        const Vec yb = attention(x, T, a, nullptr, training ? attn_mask.data() + b * H * T * T : nullptr,
                                 training ? resid_mask.data() + b * T * C : nullptr);
        want.insert(want.end(), yb.begin(), yb.end());
      }
      check<double>(y, {B, T, C}, want);
    }
  }
}

TEST_CASE("10.8 the attention layer is differentiable: gradcheck of its input and every parameter in float64", "[a10][a10.8]") {
  // c_attn's one weight gets the gradients of q, k and v together (its
  // thirds are views); with and without bias, with ALiBi.
  uint64_t seed = 10800;
  for (const bool bias : {false, true}) {
    for (const sg::nn::Positional pos : {sg::nn::Positional::learned, sg::nn::Positional::alibi}) {
      sg::nn::GPTOptions o = small(bias, true);
      o.positional = pos;
      sg::nn::CausalSelfAttention a(o);
      a.to(sg::float64);
      randomize(a, seed += 50, 0.5);
      a.eval();
      const Tensor x = tensor(randoms({2, 4, o.n_embd}, ++seed), {2, 4, o.n_embd}, sg::float64).set_requires_grad();
      std::vector<Tensor> leaves = {x};
      std::vector<std::string> labels = {"x"};
      for (const auto& [name, p] : a.named_parameters()) leaves.push_back(p), labels.push_back(name);
      sg::GradcheckOptions opt;
      opt.name = std::string("CausalSelfAttention") + (bias ? " with bias" : " without bias") +
                 (pos == sg::nn::Positional::alibi ? " ALiBi" : "");
      const sg::GradcheckResult r = sg::gradcheck_leaves([&] { return a.forward(x); }, leaves, labels, opt);
      INFO(r.report());
      REQUIRE(r);
      REQUIRE(r.checked > 0);
    }
  }
}
