// Hidden tests of assignment 8: d2l's Transformer decoder (nn/decoder.cpp:
// causal_lens, block_layers, TransformerDecoderBlock::forward and step,
// TransformerDecoder::step), the key/value cache (nn/attention.cpp:
// MultiHeadAttention::append and forward_cached) and greedy decoding
// (decoding/search.cpp: greedy).
//
// Every value is compared with the decoder written out here in long double
// loops from the model's own parameters (embeddings times sqrt(d), the
// sinusoidal table or rotary positions computed here, masked multi-head
// self-attention with d2l's dec_valid_lens, attention to the source with its
// valid lengths, AddNorm or pre-norm, the FFN, the dense layer): the logits
// and the attention weights of the teacher-forced forward, in float64 and
// float32, post-norm and pre-norm, eval and training mode (dropout masks
// drawn from each Dropout's seeded generator and replayed here); decoding
// with the cache, one token and several tokens per step, against the same
// loops; greedy search against a search written here on the loops, with
// sources of different valid lengths, an <eos> reached at different steps,
// exact ties and max_len. The students write no backward in this
// assignment; a float64 gradcheck of the block checks that their forward
// is differentiable (no detached step).
#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "decoding/search.hpp"
#include "nn/basic.hpp"
#include "nn/decoder.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/linear.hpp"
#include "nn/transformer.hpp"
#include "hidden_util.hpp"
#include "nn_util.hpp"

using namespace hidden;
using sg::nn::Positional;
using sg::nn::TransformerDecoder;
using sg::nn::TransformerDecoderOptions;

namespace {

using LD = long double;
using Mat = std::vector<LD>;  // rows x cols, row-major

std::vector<LD> values_of(const Tensor& t) {
  const auto v = t.to_vector<double>();
  return std::vector<LD>(v.begin(), v.end());
}

// x (rows, in) W^T + b, W (out, in).
Mat linear(const Mat& x, int64_t rows, const sg::nn::Linear& layer) {
  const auto w = values_of(layer.weight);
  const auto b = layer.bias.defined() ? values_of(layer.bias) : std::vector<LD>();
  const int64_t out = layer.weight.shape()[0], in = layer.weight.shape()[1];
  Mat y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      LD s = b.empty() ? 0 : b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < in; ++i) s += x[static_cast<size_t>(r * in + i)] * w[static_cast<size_t>(o * in + i)];
      y[static_cast<size_t>(r * out + o)] = s;
    }
  return y;
}

Mat layer_norm(const Mat& x, int64_t rows, const sg::nn::LayerNorm& ln) {
  const auto g = values_of(ln.weight), b = values_of(ln.bias);
  const int64_t d = ln.weight.shape()[0];
  Mat y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    LD mean = 0, var = 0;
    for (int64_t c = 0; c < d; ++c) mean += x[static_cast<size_t>(r * d + c)];
    mean /= static_cast<LD>(d);
    for (int64_t c = 0; c < d; ++c) var += (x[static_cast<size_t>(r * d + c)] - mean) * (x[static_cast<size_t>(r * d + c)] - mean);
    const LD inv = 1 / std::sqrt(var / static_cast<LD>(d) + static_cast<LD>(ln.eps));
    for (int64_t c = 0; c < d; ++c)
      y[static_cast<size_t>(r * d + c)] = (x[static_cast<size_t>(r * d + c)] - mean) * inv * g[static_cast<size_t>(c)] + b[static_cast<size_t>(c)];
  }
  return y;
}

// Rotary positions: pair (2j, 2j+1) of u turns by t * 10000^(-2j/d).
void rotate(LD* u, int64_t d, int64_t t) {
  for (int64_t j = 0; j < d / 2; ++j) {
    const LD a = static_cast<LD>(t) * std::pow(10000.0L, -2.0L * static_cast<LD>(j) / static_cast<LD>(d));
    const LD x = u[2 * j], y = u[2 * j + 1];
    u[2 * j] = x * std::cos(a) - y * std::sin(a);
    u[2 * j + 1] = x * std::sin(a) + y * std::cos(a);
  }
}

// Dropout multipliers of the training-mode tests: per Dropout module, the
// mask its one call of a forward draws (0 or 1 / (1 - p)), over the whole
// batch's tensor. Absent: no dropout (eval mode).
using Masks = std::map<const sg::nn::Dropout*, std::vector<double>>;
LD multiplier(const Masks& masks, const sg::nn::Dropout& d, int64_t flat) {
  const auto it = masks.find(&d);
  return it == masks.end() ? 1.0L : static_cast<LD>(it->second[static_cast<size_t>(flat)]);
}

// Multi-head attention of batch element b: nq query rows xq over nk rows
// xkv; query i sees keys j < lens[i]; rotary: query i at position qpos + i,
// key j at position j. Weights go to *weights (B, heads, Q, K) when given.
Mat attention(const sg::nn::MultiHeadAttention& m, const Mat& xq, int64_t nq, const Mat& xkv, int64_t nk,
              const std::vector<int64_t>& lens, int64_t qpos, int64_t b, int64_t batch, const Masks& masks,
              std::vector<double>* weights) {
  const int64_t H = m.num_hiddens, heads = m.num_heads, d = H / heads;
  const bool rotary = m.positions.kind == Positional::rotary;
  Mat q = linear(xq, nq, *m.W_q), k = linear(xkv, nk, *m.W_k), v = linear(xkv, nk, *m.W_v);
  Mat concat(static_cast<size_t>(nq * H), 0.0L);
  for (int64_t h = 0; h < heads; ++h) {
    if (rotary) {
      for (int64_t i = 0; i < nq; ++i) rotate(&q[static_cast<size_t>(i * H + h * d)], d, qpos + i);
      for (int64_t j = 0; j < nk; ++j) rotate(&k[static_cast<size_t>(j * H + h * d)], d, j);
    }
    for (int64_t i = 0; i < nq; ++i) {
      std::vector<LD> s(static_cast<size_t>(nk));
      for (int64_t j = 0; j < nk; ++j) {
        LD dot = 0;
        for (int64_t x = 0; x < d; ++x) dot += q[static_cast<size_t>(i * H + h * d + x)] * k[static_cast<size_t>(j * H + h * d + x)];
        s[static_cast<size_t>(j)] = j < lens[static_cast<size_t>(i)] ? dot / std::sqrt(static_cast<LD>(d)) : -1e6L;
      }
      LD mx = s[0], total = 0;
      for (LD e : s) mx = std::max(mx, e);
      for (LD& e : s) total += (e = std::exp(e - mx));
      for (int64_t j = 0; j < nk; ++j) {
        const int64_t flat = (((b * heads + h) * nq + i) * nk + j);
        const LD w = s[static_cast<size_t>(j)] / total;
        if (weights) {
          weights->resize(static_cast<size_t>(batch * heads * nq * nk));
          (*weights)[static_cast<size_t>(flat)] = static_cast<double>(w);
        }
        const LD kept = w * multiplier(masks, *m.attention_dropout, flat);
        for (int64_t x = 0; x < d; ++x)
          concat[static_cast<size_t>(i * H + h * d + x)] += kept * v[static_cast<size_t>(j * H + h * d + x)];
      }
    }
  }
  return linear(concat, nq, *m.W_o);
}

struct Naive {
  std::vector<double> logits;                    // (B, T, V)
  std::vector<std::vector<double>> self, cross;  // per block, (B, heads, T, T) and (B, heads, T, S)
};

// The teacher-forced decoder: ids (B, T), enc (B, S, H), enc_lens (B) or
// empty; query t of the target sees target positions 0..t, and source
// positions below its element's valid length.
Naive naive_decoder(const TransformerDecoder& dec, const std::vector<int64_t>& ids, int64_t B, int64_t T,
                    const std::vector<double>& enc, int64_t S, const std::vector<int64_t>& enc_lens,
                    const Masks& masks = {}) {
  const auto& o = dec.options;
  const int64_t H = o.num_hiddens, V = o.vocab_size;
  const auto emb = values_of(dec.embedding->weight);
  Naive out;
  out.logits.resize(static_cast<size_t>(B * T * V));
  out.self.resize(dec.blocks.size()), out.cross.resize(dec.blocks.size());
  auto drop = [&](Mat y, const sg::nn::Dropout& d, int64_t b) {  // y: batch element b's (T, H) rows
    for (size_t i = 0; i < y.size(); ++i) y[i] *= multiplier(masks, d, b * T * H + static_cast<int64_t>(i));
    return y;
  };
  auto plus = [](Mat a, const Mat& c) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += c[i];
    return a;
  };
  for (int64_t b = 0; b < B; ++b) {
    Mat X(static_cast<size_t>(T * H));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < H; ++c) {
        LD e = emb[static_cast<size_t>(ids[static_cast<size_t>(b * T + t)] * H + c)] * std::sqrt(static_cast<LD>(H));
        if (o.positional == Positional::sinusoidal) {
          const LD angle = static_cast<LD>(t) / std::pow(10000.0L, static_cast<LD>(c - c % 2) / static_cast<LD>(H));
          // The table is float32 (d2l's), rounded once from double.
          e += static_cast<float>(c % 2 == 0 ? std::sin(static_cast<double>(angle)) : std::cos(static_cast<double>(angle)));
        }
        X[static_cast<size_t>(t * H + c)] = e;
      }
    X = drop(X, dec.pos_encoding ? *dec.pos_encoding->dropout : *dec.embedding_dropout, b);
    const Mat E(enc.begin() + b * S * H, enc.begin() + (b + 1) * S * H);
    std::vector<int64_t> self_lens, cross_lens;
    for (int64_t t = 0; t < T; ++t) {
      self_lens.push_back(t + 1);
      cross_lens.push_back(enc_lens.empty() ? S : enc_lens[static_cast<size_t>(b)]);
    }
    for (size_t i = 0; i < dec.blocks.size(); ++i) {
      const auto& blk = *dec.blocks[i];
      auto self = [&](const Mat& A) {
        return attention(*blk.attention1, A, T, A, T, self_lens, 0, b, B, masks, &out.self[i]);
      };
      auto cross = [&](const Mat& A) {
        return attention(*blk.attention2, A, T, E, S, cross_lens, 0, b, B, masks, &out.cross[i]);
      };
      auto ffn = [&](const Mat& A) {
        Mat h = linear(A, T, *blk.ffn->dense1);
        for (LD& e : h) e = std::max(e, 0.0L);
        return linear(h, T, *blk.ffn->dense2);
      };
      if (blk.pre_norm) {
        const Mat Y = plus(X, drop(self(layer_norm(X, T, *blk.addnorm1->ln)), *blk.addnorm1->dropout, b));
        const Mat Z = plus(Y, drop(cross(layer_norm(Y, T, *blk.addnorm2->ln)), *blk.addnorm2->dropout, b));
        X = plus(Z, drop(ffn(layer_norm(Z, T, *blk.addnorm3->ln)), *blk.addnorm3->dropout, b));
      } else {
        const Mat Y = layer_norm(plus(drop(self(X), *blk.addnorm1->dropout, b), X), T, *blk.addnorm1->ln);
        const Mat Z = layer_norm(plus(drop(cross(Y), *blk.addnorm2->dropout, b), Y), T, *blk.addnorm2->ln);
        X = layer_norm(plus(drop(ffn(Z), *blk.addnorm3->dropout, b), Z), T, *blk.addnorm3->ln);
      }
    }
    if (dec.final_ln) X = layer_norm(X, T, *dec.final_ln);
    const Mat logits = linear(X, T, *dec.dense);
    for (size_t n = 0; n < logits.size(); ++n) out.logits[static_cast<size_t>(b * T * V) + n] = static_cast<double>(logits[n]);
  }
  return out;
}

struct Config {
  int64_t batch, steps, source, hidden, heads, ffn, vocab, blocks;
  std::vector<int64_t> enc_lens;  // empty: none
  bool pre_norm = false, bias = false;
  Positional positional = Positional::sinusoidal;
  double dropout = 0.0;
};

std::string describe(const Config& c) {
  std::string s = "B " + std::to_string(c.batch) + " T " + std::to_string(c.steps) + " S " + std::to_string(c.source) +
                  " hidden " + std::to_string(c.hidden) + " heads " + std::to_string(c.heads) + " blocks " +
                  std::to_string(c.blocks) + " source lens";
  if (c.enc_lens.empty()) s += " none";
  for (auto l : c.enc_lens) s += " " + std::to_string(l);
  return s + (c.pre_norm ? " pre-norm" : " post-norm") + (c.bias ? " biases" : "") +
         (c.positional == Positional::rotary ? " rotary" : " sinusoidal");
}

std::unique_ptr<TransformerDecoder> decoder(const Config& c, uint64_t seed, sg::DType dtype = sg::float64) {
  TransformerDecoderOptions o;
  o.vocab_size = c.vocab, o.num_hiddens = c.hidden, o.ffn_num_hiddens = c.ffn, o.num_heads = c.heads;
  o.num_blocks = c.blocks, o.dropout = c.dropout, o.positional = c.positional, o.max_len = 64;
  o.pre_norm = c.pre_norm, o.use_bias = c.bias;
  auto dec = std::make_unique<TransformerDecoder>(o);
  test_util::randomize(*dec, seed);
  dec->to(dtype);
  return dec;
}

std::vector<int64_t> random_ids(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& e : v) e = static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab));
  return v;
}

Tensor lens_tensor(const Config& c) { return c.enc_lens.empty() ? Tensor() : sg::from_vector(c.enc_lens, {c.batch}); }

template <class T>
std::vector<double> rounded(std::vector<double> v) {
  for (auto& e : v) e = static_cast<double>(static_cast<T>(e));
  return v;
}

// The teacher-forced forward of dtype T against the loops: logits and every
// block's self- and cross-attention weights.
template <class T>
void check_forward(const Config& c, uint64_t seed, const Masks& masks = {},
                   const std::function<void(TransformerDecoder&)>& prepare = {}) {
  INFO("TransformerDecoder " << describe(c) << (std::is_same_v<T, float> ? " float32" : " float64"));
  auto dec = decoder(c, seed, sg::dtype_of<T>);
  if (prepare) prepare(*dec);
  const auto ids = random_ids(c.batch * c.steps, c.vocab, seed + 1);
  const auto enc = rounded<T>(randoms({c.batch, c.source, c.hidden}, seed + 2));
  sg::nn::DecoderAttentionWeights w;
  const Tensor logits = dec->forward(sg::from_vector(ids, {c.batch, c.steps}),
                                     tensor(enc, {c.batch, c.source, c.hidden}, sg::dtype_of<T>), lens_tensor(c),
                                     nullptr, &w);
  const Naive want = naive_decoder(*dec, ids, c.batch, c.steps, enc, c.source, c.enc_lens, masks);
  const double rel = std::is_same_v<T, float> ? 2e-4 : 1e-10, abs = std::is_same_v<T, float> ? 2e-5 : 1e-11;
  test_util::check_values<T>(logits, {c.batch, c.steps, c.vocab}, want.logits, rel, abs);
  REQUIRE(w.self.size() == static_cast<size_t>(c.blocks));
  for (int64_t i = 0; i < c.blocks; ++i) {
    INFO("block " << i << ": self-attention weights (causal), then cross-attention weights (source lengths)");
    test_util::check_values<T>(w.self[static_cast<size_t>(i)], {c.batch, c.heads, c.steps, c.steps},
                               want.self[static_cast<size_t>(i)], rel, abs);
    test_util::check_values<T>(w.cross[static_cast<size_t>(i)], {c.batch, c.heads, c.steps, c.source},
                               want.cross[static_cast<size_t>(i)], rel, abs);
  }
}

std::vector<Config> forward_configs() {
  return {{3, 4, 5, 8, 2, 12, 11, 2, {5, 2, 3}},
          {2, 5, 3, 12, 3, 10, 7, 1, {}, false, true},
          {3, 3, 6, 8, 4, 6, 9, 2, {1, 6, 4}}};
}

// Decodes ids (B, T) with the cache in chunks of the given sizes and
// compares each chunk's logits and attention weights with the rows of the
// teacher-forced loops.
template <class T>
void check_cached(const Config& c, uint64_t seed, const std::vector<int64_t>& chunks) {
  INFO("cached decoding " << describe(c) << (std::is_same_v<T, float> ? " float32" : " float64") << " chunks of " << chunks[0]
                          << (chunks.size() > 1 ? ", " + std::to_string(chunks[1]) + ", ..." : ""));
  auto dec = decoder(c, seed, sg::dtype_of<T>);
  dec->eval();
  const auto ids = random_ids(c.batch * c.steps, c.vocab, seed + 1);
  const auto enc = rounded<T>(randoms({c.batch, c.source, c.hidden}, seed + 2));
  const Naive want = naive_decoder(*dec, ids, c.batch, c.steps, enc, c.source, c.enc_lens);
  sg::NoGradGuard no_grad;
  sg::nn::DecoderState state =
      dec->init_state(tensor(enc, {c.batch, c.source, c.hidden}, sg::dtype_of<T>), lens_tensor(c));
  const double rel = std::is_same_v<T, float> ? 2e-4 : 1e-10, abs = std::is_same_v<T, float> ? 2e-5 : 1e-11;
  int64_t at = 0;
  for (int64_t n : chunks) {
    INFO("tokens " << at << " to " << at + n - 1);
    std::vector<int64_t> chunk;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t t = at; t < at + n; ++t) chunk.push_back(ids[static_cast<size_t>(b * c.steps + t)]);
    sg::nn::DecoderAttentionWeights w;
    const Tensor logits = dec->step(sg::from_vector(chunk, {c.batch, n}), state, &w);
    REQUIRE(state.steps == at + n);
    std::vector<double> rows;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t t = at; t < at + n; ++t)
        for (int64_t v = 0; v < c.vocab; ++v) rows.push_back(want.logits[static_cast<size_t>((b * c.steps + t) * c.vocab + v)]);
    test_util::check_values<T>(logits, {c.batch, n, c.vocab}, rows, rel, abs);
    for (int64_t i = 0; i < c.blocks; ++i) {
      // The cache's self weights (B, heads, n, at + n): rows at.. of the
      // teacher-forced (T, T) ones over keys 0..at+n-1; cross (B, heads, n, S).
      std::vector<double> self, cross;
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t h = 0; h < c.heads; ++h)
          for (int64_t t = at; t < at + n; ++t) {
            for (int64_t j = 0; j < at + n; ++j)
              self.push_back(want.self[static_cast<size_t>(i)][static_cast<size_t>(((b * c.heads + h) * c.steps + t) * c.steps + j)]);
            for (int64_t j = 0; j < c.source; ++j)
              cross.push_back(want.cross[static_cast<size_t>(i)][static_cast<size_t>(((b * c.heads + h) * c.steps + t) * c.source + j)]);
          }
      INFO("block " << i << ": the step's self-attention weights over the cache, then its cross-attention weights");
      test_util::check_values<T>(w.self[static_cast<size_t>(i)], {c.batch, c.heads, n, at + n}, self, rel, abs);
      test_util::check_values<T>(w.cross[static_cast<size_t>(i)], {c.batch, c.heads, n, c.source}, cross, rel, abs);
    }
    at += n;
  }
}

// ---- greedy

// An encoder-decoder with random parameters, in eval mode.
std::unique_ptr<sg::nn::EncoderDecoder> seq2seq(uint64_t seed, int64_t vocab) {
  sg::nn::TransformerEncoderOptions e;
  e.vocab_size = 9, e.num_hiddens = 8, e.ffn_num_hiddens = 12, e.num_heads = 2, e.num_blocks = 1, e.dropout = 0.2;
  TransformerDecoderOptions d;
  d.vocab_size = vocab, d.num_hiddens = 8, d.ffn_num_hiddens = 12, d.num_heads = 2, d.num_blocks = 2, d.dropout = 0.2;
  d.max_len = 64;
  d.pre_norm = true;  // the embeddings reach the dense layer through the residual: outputs vary with the prefix
  auto m = std::make_unique<sg::nn::EncoderDecoder>(e, d);
  test_util::randomize(*m, seed);
  m->to(sg::float64);
  m->eval();
  // The dense layer's bias removed, so that the next token depends on the
  // states (source, prefix) rather than on the bias.
  auto& dense = *m->decoder->dense;
  double* bias = dense.bias.data<double>();
  for (int64_t i = 0; i < dense.bias.numel(); ++i) bias[i] = 0;
  return m;
}

struct Expected {
  std::vector<int64_t> tokens;
  bool ended = false;
  double log_prob = 0;
  std::vector<double> token_log_probs;             // each step's chosen token's
  std::vector<std::vector<double>> step_log_probs;  // each step's whole row
};

// Greedy search on the loops, one source at a time: the whole prefix run
// again at every step, the first of the largest log-probabilities taken.
Expected naive_greedy(const sg::nn::EncoderDecoder& model, const Tensor& src, const Tensor& lens, int64_t b,
                      int64_t bos, int64_t eos, int64_t max_len, bool stop_at_eos = true) {
  const TransformerDecoder& dec = *model.decoder;
  const int64_t S = src.shape()[1], H = dec.options.num_hiddens, V = dec.options.vocab_size;
  std::vector<double> enc;
  {
    sg::NoGradGuard no_grad;
    const Tensor all = model.encoder->forward(src, lens);
    const auto v = all.to_vector<double>();
    enc.assign(v.begin() + b * S * H, v.begin() + (b + 1) * S * H);
  }
  const std::vector<int64_t> enc_lens = lens.defined() ? std::vector<int64_t>{lens.to_vector<int64_t>()[static_cast<size_t>(b)]}
                                                       : std::vector<int64_t>{};
  Expected e;
  std::vector<int64_t> prefix = {bos};
  for (int64_t step = 0; step < max_len; ++step) {
    const int64_t T = static_cast<int64_t>(prefix.size());
    const Naive n = naive_decoder(dec, prefix, 1, T, enc, S, enc_lens);
    const double* row = n.logits.data() + (T - 1) * V;
    LD mx = row[0], total = 0;
    int64_t best = 0;
    for (int64_t v = 1; v < V; ++v)
      if (row[v] > row[best]) best = v;
    for (int64_t v = 0; v < V; ++v) mx = std::max(mx, static_cast<LD>(row[v]));
    for (int64_t v = 0; v < V; ++v) total += std::exp(static_cast<LD>(row[v]) - mx);
    e.log_prob += static_cast<double>(static_cast<LD>(row[best]) - mx - std::log(total));
    e.token_log_probs.push_back(static_cast<double>(static_cast<LD>(row[best]) - mx - std::log(total)));
    e.step_log_probs.emplace_back();
    for (int64_t v = 0; v < V; ++v)
      e.step_log_probs.back().push_back(static_cast<double>(static_cast<LD>(row[v]) - mx - std::log(total)));
    if (best == eos && stop_at_eos) {
      e.ended = true;
      break;
    }
    e.tokens.push_back(best);
    prefix.push_back(best);
  }
  return e;
}

void check_greedy(const std::vector<sg::decoding::Hypothesis>& got, const std::vector<Expected>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t b = 0; b < want.size(); ++b) {
    INFO("source " << b);
    CHECK(got[b].tokens == want[b].tokens);
    CHECK(got[b].ended == want[b].ended);
    CHECK(std::fabs(got[b].log_prob - want[b].log_prob) <= 1e-9 * (1 + std::fabs(want[b].log_prob)));
    CHECK(got[b].score == got[b].log_prob);
  }
}

const Tensor kSource = sg::from_vector(std::vector<int64_t>{1, 3, 6, 2, 4, 5, 2, 3, 8, 0, 4, 7, 0, 0, 0, 2, 2, 5, 1, 0},
                                       {4, 5});
const Tensor kSourceLens = sg::from_vector(std::vector<int64_t>{5, 4, 2, 3}, {4});

}  // namespace

TEST_CASE("8.1 the teacher-forced decoder gives the logits and attention weights of d2l's decoder in naive loops in float64",
          "[a8][a8.1]") {
  uint64_t seed = 810;
  for (const Config& c : forward_configs()) check_forward<double>(c, ++seed * 11);
}

TEST_CASE("8.2 float32 decoders give the same values", "[a8][a8.2]") {
  uint64_t seed = 820;
  for (const Config& c : forward_configs()) check_forward<float>(c, ++seed * 11);
}

TEST_CASE("8.3 pre-norm blocks and rotary self-attention match the loops", "[a8][a8.3]") {
  uint64_t seed = 830;
  for (Config c : forward_configs()) {
    c.pre_norm = true;
    check_forward<double>(c, ++seed * 11);
    c.positional = Positional::rotary;
    check_forward<double>(c, ++seed * 11);
    c.pre_norm = false;
    check_forward<double>(c, ++seed * 11);
  }
}

TEST_CASE("8.4 in training mode every dropout of the decoder drops where its seeded mask says and none in eval mode",
          "[a8][a8.4]") {
  uint64_t seed = 840;
  for (bool pre_norm : {false, true}) {
    Config c{3, 4, 5, 8, 2, 12, 11, 2, {5, 2, 3}, pre_norm, false, Positional::sinusoidal, 0.3};
    Masks masks;
    // Each Dropout gets a generator of its own seed; one forward calls each
    // once, so a fresh Dropout of the same p and seed over ones of the same
    // shape replays its mask.
    auto prepare = [&](TransformerDecoder& dec) {
      uint64_t s = 8400;
      auto seeded = [&](sg::nn::Dropout& d, const Shape& shape) {
        d.generator = std::make_shared<sg::Generator>(++s);
        sg::nn::Dropout same(d.p);
        same.generator = std::make_shared<sg::Generator>(s);
        masks[&d] = same.forward(sg::ones(shape, sg::float64)).to_vector<double>();
      };
      const Shape states{c.batch, c.steps, c.hidden};
      seeded(*dec.pos_encoding->dropout, states);
      for (auto& blk : dec.blocks) {
        seeded(*blk->attention1->attention_dropout, {c.batch * c.heads, c.steps, c.steps});
        seeded(*blk->attention2->attention_dropout, {c.batch * c.heads, c.steps, c.source});
        for (auto* an : {blk->addnorm1.get(), blk->addnorm2.get(), blk->addnorm3.get()}) seeded(*an->dropout, states);
      }
    };
    check_forward<double>(c, ++seed * 11, masks, prepare);
    int64_t zeros = 0;
    for (const auto& [d, m] : masks)
      for (double x : m) zeros += x == 0.0;
    REQUIRE(zeros > 0);
    INFO("eval mode: no dropout");
    check_forward<double>(c, ++seed * 11, {}, [](TransformerDecoder& dec) { dec.eval(); });
  }
}

TEST_CASE("8.5 decoding one token per step with the key/value cache gives the teacher-forced values of the loops",
          "[a8][a8.5]") {
  uint64_t seed = 850;
  for (Config c : forward_configs()) {
    c.steps = 5;
    check_cached<double>(c, ++seed * 11, std::vector<int64_t>(5, 1));
    c.pre_norm = true, c.positional = Positional::rotary;
    check_cached<double>(c, ++seed * 11, std::vector<int64_t>(5, 1));
    check_cached<float>(c, ++seed * 11, std::vector<int64_t>(5, 1));
  }
}

TEST_CASE("8.6 decoding several tokens per step continues the positions and the causal mask", "[a8][a8.6]") {
  uint64_t seed = 860;
  for (Config c : forward_configs()) {
    c.steps = 6;
    check_cached<double>(c, ++seed * 11, {2, 1, 3});
    check_cached<double>(c, ++seed * 11, {1, 3, 2});
    c.positional = Positional::rotary;
    check_cached<double>(c, ++seed * 11, {3, 3});
  }
}

TEST_CASE("8.7 the decoder block is differentiable: gradcheck of its inputs and parameters in float64", "[a8][a8.7]") {
  uint64_t seed = 870;
  for (bool pre_norm : {false, true}) {
    sg::nn::TransformerDecoderBlock block(8, 12, 2, 0.0, false, {}, pre_norm);
    test_util::randomize(block, ++seed);
    block.to(sg::float64);
    const Tensor lens = sg::from_vector(std::vector<int64_t>{4, 2}, {2});
    auto fn = [&](const Inputs& x) { return block.forward(x[0], x[1], lens); };
    const Inputs x = {tensor(randoms({2, 3, 8}, seed * 3), {2, 3, 8}, sg::float64),
                      tensor(randoms({2, 4, 8}, seed * 3 + 1), {2, 4, 8}, sg::float64)};
    test_util::check_module(pre_norm ? "TransformerDecoderBlock pre-norm" : "TransformerDecoderBlock post-norm", block,
                            fn, x);
  }
}

TEST_CASE("8.8 greedy stops every source at its own eos and leaves finished sources unchanged", "[a8][a8.8]") {
  const int64_t vocab = 10, bos = 1, pad = 0, max_len = 8;
  bool some_ended = false, some_ran_on = false, ended_at_different_steps = false;
  // Models whose greedy outputs vary with the source and the step.
  for (uint64_t seed : {883, 886, 888}) {
    INFO("model seed " << seed);
    auto model = seq2seq(seed, vocab);
    // The loops without an eos first; then the eos is the token whose first
    // occurrences end the sources at the most different steps, some never.
    std::vector<Expected> free;
    for (int64_t b = 0; b < 4; ++b) free.push_back(naive_greedy(*model, kSource, kSourceLens, b, bos, -1, max_len));
    int64_t eos = -1, best = -1;
    for (int64_t v = 0; v < vocab; ++v) {
      std::set<size_t> steps;
      bool never = false;
      for (const Expected& f : free) {
        const auto at = std::find(f.tokens.begin(), f.tokens.end(), v);
        if (at == f.tokens.end()) never = true;
        else steps.insert(static_cast<size_t>(at - f.tokens.begin()));
      }
      const int64_t score = steps.empty() ? -1 : static_cast<int64_t>(steps.size()) + (never ? 2 : 0);
      if (score > best) best = score, eos = v;
    }
    REQUIRE(eos >= 0);
    std::vector<Expected> want;
    std::set<size_t> end_steps;
    for (int64_t b = 0; b < 4; ++b) {
      want.push_back(naive_greedy(*model, kSource, kSourceLens, b, bos, eos, max_len));
      some_ended |= want.back().ended;
      some_ran_on |= !want.back().ended;
      if (want.back().ended) end_steps.insert(want.back().tokens.size());
    }
    ended_at_different_steps |= end_steps.size() >= 2;
    const sg::decoding::SearchOptions o{.bos = bos, .eos = eos, .pad = pad, .max_len = max_len};
    check_greedy(sg::decoding::greedy(*model, kSource, kSourceLens, o), want);
    // Each source alone gives the same: the batch's other rows change nothing.
    for (int64_t b = 0; b < 4; ++b) {
      INFO("source " << b << " alone");
      check_greedy(sg::decoding::greedy(*model, sg::kernel::slice(kSource, 0, b, b + 1),
                                        sg::kernel::slice(kSourceLens, 0, b, b + 1), o),
                   {want[static_cast<size_t>(b)]});
    }
  }
  REQUIRE(some_ended);
  REQUIRE(some_ran_on);
  REQUIRE(ended_at_different_steps);
}

TEST_CASE("8.9 greedy takes the first of tied tokens and stops at max_len", "[a8][a8.9]") {
  const int64_t vocab = 10, bos = 1, pad = 0;
  auto model = seq2seq(891, vocab);
  // The token source 0 emits first gets a twin with a smaller id: the same
  // row of the dense layer, so their logits are equal to the last bit.
  const Expected free = naive_greedy(*model, kSource, kSourceLens, 0, bos, -1, 4);
  const int64_t top = free.tokens[0];
  const int64_t twin = top == 0 ? -1 : top - 1;
  if (twin >= 0) {
    sg::NoGradGuard no_grad;
    auto& dense = *model->decoder->dense;
    const int64_t H = dense.weight.shape()[1];
    double* w = dense.weight.data<double>();
    for (int64_t c = 0; c < H; ++c) w[twin * H + c] = w[top * H + c];
    dense.bias.data<double>()[twin] = dense.bias.data<double>()[top];
  }
  REQUIRE(twin >= 0);
  for (int64_t max_len : {1, 3, 6}) {
    INFO("max_len " << max_len);
    std::vector<Expected> want;
    for (int64_t b = 0; b < 4; ++b) want.push_back(naive_greedy(*model, kSource, kSourceLens, b, bos, vocab - 1, max_len));
    REQUIRE(want[0].tokens.size() >= 1);
    REQUIRE(want[0].tokens[0] == twin);  // the first of the tie
    const sg::decoding::SearchOptions o{.bos = bos, .eos = vocab - 1, .pad = pad, .max_len = max_len};
    check_greedy(sg::decoding::greedy(*model, kSource, kSourceLens, o), want);
  }
}

TEST_CASE("8.10 greedy keeps each token's log-probability and on request each step's distribution and with stop_at_eos off eos is a token",
          "[a8][a8.10]") {
  const int64_t vocab = 10, bos = 1, pad = 0, max_len = 6;
  auto model = seq2seq(886, vocab);
  // The eos: the first token source 0 emits, so that it ends that source at
  // once with stop_at_eos and is a token of its output without.
  const int64_t eos = naive_greedy(*model, kSource, kSourceLens, 0, bos, -1, max_len).tokens.at(0);
  auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * (1 + std::fabs(b)); };
  for (const bool stop : {true, false}) {
    for (const bool keep : {true, false}) {
      INFO((stop ? "stop_at_eos" : "stop_at_eos off") << (keep ? ", keep_step_log_probs" : ""));
      std::vector<Expected> want;
      for (int64_t b = 0; b < 4; ++b) want.push_back(naive_greedy(*model, kSource, kSourceLens, b, bos, eos, max_len, stop));
      REQUIRE(want[0].ended == stop);
      const sg::decoding::SearchOptions o{.bos = bos, .eos = eos, .pad = pad, .max_len = max_len, .stop_at_eos = stop,
                                          .keep_step_log_probs = keep};
      const auto got = sg::decoding::greedy(*model, kSource, kSourceLens, o);
      check_greedy(got, want);
      for (size_t b = 0; b < want.size(); ++b) {
        INFO("source " << b);
        const Expected& w = want[b];
        REQUIRE(got[b].token_log_probs.size() == w.token_log_probs.size());
        for (size_t t = 0; t < w.token_log_probs.size(); ++t) CHECK(close(got[b].token_log_probs[t], w.token_log_probs[t]));
        if (!keep) {
          CHECK(got[b].step_log_probs.empty());
          continue;
        }
        REQUIRE(got[b].step_log_probs.size() == w.step_log_probs.size());
        for (size_t t = 0; t < w.step_log_probs.size(); ++t) {
          INFO("step " << t);
          REQUIRE(got[b].step_log_probs[t].size() == static_cast<size_t>(vocab));
          for (int64_t v = 0; v < vocab; ++v)
            CHECK(close(got[b].step_log_probs[t][static_cast<size_t>(v)], w.step_log_probs[t][static_cast<size_t>(v)]));
        }
      }
    }
  }
}
