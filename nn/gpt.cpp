#include "nn/gpt.hpp"

#include <cmath>
#include <string>

#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/embedding.hpp"
#include "autograd/ops/gelu.hpp"
#include "autograd/ops/head_products.hpp"
#include "autograd/ops/linear.hpp"
#include "autograd/ops/rope.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/softmax.hpp"
#include "core/kernels.hpp"
#include "nn/init.hpp"

namespace sg::nn {
namespace {

// GPT-2's initialisation of a Linear: weight N(0, std^2), bias zero.
std::shared_ptr<Linear> gpt_linear(int64_t in, int64_t out, bool bias, double std) {
  auto layer = std::make_shared<Linear>(in, out, bias);
  kernel::copy_(layer->weight, init::normal(layer->weight.shape(), 0.0, std));
  if (bias) kernel::copy_(layer->bias, zeros(layer->bias.shape()));
  return layer;
}

// The residual projections' std: 0.02 / sqrt(2 n_layer), so the residual
// stream's variance does not grow with depth (GPT-2).
double residual_std(const GPTOptions& o) { return 0.02 / std::sqrt(2.0 * static_cast<double>(o.n_layer)); }

// x: (B, T, heads * d) at positions [offset, offset + T) -> the same with
// each head's (T, d) rows rotated by rope: the heads go to their own axis
// for the rotation and back.
Tensor rotate_heads(const Tensor& x, int64_t heads, int64_t offset) {
  const int64_t b = x.shape()[0], t = x.shape()[1], c = x.shape()[2];
  const Tensor per_head = permute(reshape(x, {b, t, heads, c / heads}), {0, 2, 1, 3});  // (B, h, T, d)
  return reshape(permute(rope(per_head, offset), {0, 2, 1, 3}), {b, t, c});
}

void check_ids(const char* who, const Tensor& ids, const GPTOptions& o, int64_t offset) {
  if (ids.dtype() != int64 || ids.dim() != 2 || ids.shape()[1] < 1)
    fail(who, ": ids must be int64 (B, T) with T >= 1, got ", ids.dtype(), " ", ids.shape());
  if (offset + ids.shape()[1] > o.block_size)
    fail(who, ": positions ", offset, " .. ", offset + ids.shape()[1] - 1, " of ids ", ids.shape(),
         " go past the context, block_size ", o.block_size);
}

}  // namespace

// ---- attention ----

CausalSelfAttention::CausalSelfAttention(const GPTOptions& o)
    : n_head(o.n_head), n_embd(o.n_embd), positional(o.positional) {
  c_attn = register_module("c_attn", gpt_linear(o.n_embd, 3 * o.n_embd, o.bias, 0.02));
  c_proj = register_module("c_proj", gpt_linear(o.n_embd, o.n_embd, o.bias, residual_std(o)));
  attn_dropout = register_module("attn_dropout", std::make_shared<Dropout>(o.dropout));
  resid_dropout = register_module("resid_dropout", std::make_shared<Dropout>(o.dropout));
}

void CausalSelfAttention::project(const Tensor& x, Tensor& q, Tensor& k, Tensor& v) const {
  // BEGIN ASSIGNMENT 10: CausalSelfAttention::project: q, k, v = the three thirds of c_attn (x): rows [0, C), [C, 2C), [2C, 3C) of its weight and bias, as views
  const Tensor& w = c_attn->weight;  // (3C, C): rows [0, C) make q, [C, 2C) k, [2C, 3C) v
  const Tensor& b = c_attn->bias;
  auto third = [&](int64_t i) {
    return linear(x, slice(w, 0, i * n_embd, (i + 1) * n_embd),
                  b.defined() ? slice(b, 0, i * n_embd, (i + 1) * n_embd) : Tensor());
  };
  q = third(0), k = third(1), v = third(2);
  // END ASSIGNMENT 10
}

// q: (B, Q, C) at positions [offset, offset + Q); k, v: (B, K, C) at
// positions [0, K), K >= offset + Q -> (B, Q, C), query i seeing keys 0 .. offset + i.
Tensor CausalSelfAttention::attend(const Tensor& q, const Tensor& k, const Tensor& v, int64_t offset,
                                   DropoutKeys* dropout_keys, Tensor* weights_out) const {
  // BEGIN ASSIGNMENT 10: CausalSelfAttention::attend: per-head scores scaled by 1/sqrt(head dim), query i seeing keys 0 .. offset + i (ALiBi's bias added after scaling), softmax, attention dropout, heads pooled over v, c_proj, residual dropout
  const int64_t batch = q.shape()[0], nq = q.shape()[1], nk = k.shape()[1];
  Tensor scores = head_scores(q, k, n_head);  // (B*h, Q, K)
  double scale = 1.0 / std::sqrt(static_cast<double>(n_embd / n_head));
  // The mask: the softmax's own causal flag when queries and keys start
  // together; none for the last queries of the keys; else each query's length.
  bool causal = false;
  Tensor lens;
  if (offset == 0 && nq == nk) {
    causal = true;
  } else if (offset + nq != nk || nq > 1) {
    lens = empty({batch * n_head, nq}, int64);
    int64_t* l = lens.data<int64_t>();
    for (int64_t r = 0; r < batch * n_head; ++r)
      for (int64_t i = 0; i < nq; ++i) l[r * nq + i] = offset + i + 1;
  }
  if (positional == Positional::alibi) {  // the bias after the 1/sqrt(d) scaling, as the paper does
    const Tensor per_head = reshape(scores * scale, {batch, n_head, nq, nk});
    scores = reshape(per_head + alibi_bias(n_head, nq, nk, scores.dtype(), offset), {batch * n_head, nq, nk});
    scale = 1.0;
  }
  const Tensor weights = masked_softmax(scores, lens, causal, scale);
  if (weights_out) *weights_out = reshape(weights.detach(), {batch, n_head, nq, nk});
  const Tensor heads = head_pool(attn_dropout->forward(weights, dropout_keys), v, n_head);  // (B, Q, C)
  return resid_dropout->forward(c_proj->forward(heads), dropout_keys);
  // END ASSIGNMENT 10
}

Tensor CausalSelfAttention::forward(const Tensor& x, DropoutKeys* dropout_keys, Tensor* weights_out) const {
  if (x.dim() != 3 || x.shape()[2] != n_embd)
    fail("CausalSelfAttention: x ", x.shape(), " must be (B, T, ", n_embd, ")");
  Tensor q, k, v;
  project(x, q, k, v);
  if (positional == Positional::rotary) q = rotate_heads(q, n_head, 0), k = rotate_heads(k, n_head, 0);
  return attend(q, k, v, 0, dropout_keys, weights_out);
}

Tensor CausalSelfAttention::forward_cached(const Tensor& x, KeyValueCache& cache, Tensor* weights_out) const {
  const int64_t offset = cache.length();
  if (x.dim() != 3 || x.shape()[2] != n_embd || x.shape()[1] < 1)
    fail("CausalSelfAttention::forward_cached: x ", x.shape(), " must be (B, n >= 1, ", n_embd, ")");
  if (offset > 0 && cache.keys.shape()[0] != x.shape()[0])
    fail("CausalSelfAttention::forward_cached: x ", x.shape(), " does not continue the cached keys ",
         cache.keys.shape(), " (another batch size)");
  Tensor q, k, v;
  project(x, q, k, v);
  if (positional == Positional::rotary) q = rotate_heads(q, n_head, offset), k = rotate_heads(k, n_head, offset);
  // BEGIN ASSIGNMENT 10: forward_cached's cache: this step's k and v appended to cache.keys and cache.values along time (axis 1), the first step's as they are
  cache.keys = offset == 0 ? k : concat({cache.keys, k}, 1);
  cache.values = offset == 0 ? v : concat({cache.values, v}, 1);
  // END ASSIGNMENT 10
  return attend(q, cache.keys, cache.values, offset, nullptr, weights_out);
}

// ---- MLP and block ----

GPTMLP::GPTMLP(const GPTOptions& o) {
  c_fc = register_module("c_fc", gpt_linear(o.n_embd, 4 * o.n_embd, o.bias, 0.02));
  c_proj = register_module("c_proj", gpt_linear(4 * o.n_embd, o.n_embd, o.bias, residual_std(o)));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
}

Tensor GPTMLP::forward(const Tensor& x, DropoutKeys* dropout_keys) const {
  return dropout->forward(c_proj->forward(gelu(c_fc->forward(x))), dropout_keys);
}

GPTBlock::GPTBlock(const GPTOptions& o) {
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(o.n_embd, 1e-5, o.bias));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(o));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(o.n_embd, 1e-5, o.bias));
  mlp = register_module("mlp", std::make_shared<GPTMLP>(o));
}

Tensor GPTBlock::forward(const Tensor& x, DropoutKeys* dropout_keys, Tensor* weights_out) const {
  const Tensor y = x + attn->forward(ln_1->forward(x), dropout_keys, weights_out);
  return y + mlp->forward(ln_2->forward(y), dropout_keys);
}

Tensor GPTBlock::forward_cached(const Tensor& x, KeyValueCache& cache, Tensor* weights_out) const {
  const Tensor y = x + attn->forward_cached(ln_1->forward(x), cache, weights_out);
  return y + mlp->forward(ln_2->forward(y));
}

void GPTBlocks::add(std::shared_ptr<GPTBlock> block) {
  blocks.push_back(register_module(std::to_string(blocks.size()), std::move(block)));
}

// ---- the model ----

GPTTransformer::GPTTransformer(const GPTOptions& o) {
  wte = register_module("wte", std::make_shared<Embedding>(o.vocab_size, o.n_embd));
  kernel::copy_(wte->weight, init::normal(wte->weight.shape(), 0.0, 0.02));
  if (o.positional == Positional::learned) {
    wpe = register_module("wpe", std::make_shared<Embedding>(o.block_size, o.n_embd));
    kernel::copy_(wpe->weight, init::normal(wpe->weight.shape(), 0.0, 0.02));
  }
  if (o.positional == Positional::sinusoidal)
    sinusoids = register_buffer("sinusoids",
                                reshape(PositionalEncoding(o.n_embd, 0.0, o.block_size).P, {o.block_size, o.n_embd}));
  drop = register_module("drop", std::make_shared<Dropout>(o.dropout));
  h = register_module("h", std::make_shared<GPTBlocks>());
  for (int64_t i = 0; i < o.n_layer; ++i) h->add(std::make_shared<GPTBlock>(o));
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(o.n_embd, 1e-5, o.bias));
}

LMHead::LMHead(int64_t vocab_size, int64_t n_embd, const Tensor& tied) {
  weight = register_parameter("weight", tied.defined() ? tied : init::normal({vocab_size, n_embd}, 0.0, 0.02));
}

GPT::GPT(const GPTOptions& o) : options(o) {
  if (o.vocab_size < 1 || o.block_size < 1 || o.n_layer < 1 || o.n_head < 1 || o.n_embd < 1)
    fail("GPT: vocab_size ", o.vocab_size, ", block_size ", o.block_size, ", n_layer ", o.n_layer, ", n_head ",
         o.n_head, " and n_embd ", o.n_embd, " must all be positive");
  if (o.n_embd % o.n_head != 0) fail("GPT: n_head ", o.n_head, " must divide n_embd ", o.n_embd);
  if (o.positional == Positional::relative)
    fail("GPT: positions 'relative' are not available in the GPT (learned, sinusoidal, none, rotary or alibi)");
  if (o.positional == Positional::rotary && (o.n_embd / o.n_head) % 2 != 0)
    fail("GPT: rotary positions rotate pairs of features, so the head dimension must be even; n_embd ", o.n_embd,
         " / n_head ", o.n_head, " = ", o.n_embd / o.n_head);
  if (o.positional == Positional::sinusoidal && o.n_embd % 2 != 0)
    fail("GPT: sinusoidal positions come in sin and cos pairs, so n_embd must be even, got ", o.n_embd);
  if (!(o.dropout >= 0 && o.dropout < 1)) fail("GPT: dropout must be in [0, 1), got ", o.dropout);
  transformer = register_module("transformer", std::make_shared<GPTTransformer>(o));
  lm_head = register_module("lm_head", std::make_shared<LMHead>(o.vocab_size, o.n_embd,
                                                                o.tie_weights ? transformer->wte->weight : Tensor()));
}

Tensor GPT::embed(const Tensor& ids, int64_t offset, DropoutKeys* dropout_keys) const {
  const int64_t n = ids.shape()[1];
  Tensor x = transformer->wte->forward(ids);  // (B, n, C)
  if (transformer->wpe) x = x + embedding(transformer->wpe->weight, arange(offset, offset + n, 1));  // + (n, C)
  if (transformer->sinusoids.defined()) x = x + slice(transformer->sinusoids, 0, offset, offset + n);
  return transformer->drop->forward(x, dropout_keys);
}

Tensor GPT::head(const Tensor& x) const {
  // BEGIN ASSIGNMENT 10: GPT::head: ln_f, then the logits x W^T with lm_head's weight (the token embedding's table when tied)
  return linear(transformer->ln_f->forward(x), lm_head->weight);
  // END ASSIGNMENT 10
}

Tensor GPT::forward(const Tensor& ids, DropoutKeys* dropout_keys, std::vector<Tensor>* attention_weights) const {
  check_ids("GPT::forward", ids, options, 0);
  // BEGIN ASSIGNMENT 10: GPT::forward: embed the ids at positions from 0, every block in order (block i's weights into (*attention_weights)[i] when given), then head
  if (attention_weights) attention_weights->assign(transformer->h->blocks.size(), Tensor());
  Tensor x = embed(ids, 0, dropout_keys);
  for (size_t i = 0; i < transformer->h->blocks.size(); ++i)
    x = transformer->h->blocks[i]->forward(x, dropout_keys, attention_weights ? &(*attention_weights)[i] : nullptr);
  return head(x);
  // END ASSIGNMENT 10
}

Tensor GPT::forward_cached(const Tensor& ids, GPTCache& cache, std::vector<Tensor>* attention_weights) const {
  const auto& blocks = transformer->h->blocks;
  if (cache.blocks.empty()) cache.blocks.resize(blocks.size());
  if (cache.blocks.size() != blocks.size())
    fail("GPT::forward_cached: the cache has ", cache.blocks.size(), " blocks, the model ", blocks.size());
  const int64_t offset = cache.length();
  check_ids("GPT::forward_cached", ids, options, offset);
  if (attention_weights) attention_weights->assign(blocks.size(), Tensor());
  Tensor x = embed(ids, offset, nullptr);
  for (size_t i = 0; i < blocks.size(); ++i)
    x = blocks[i]->forward_cached(x, cache.blocks[i], attention_weights ? &(*attention_weights)[i] : nullptr);
  return head(x);
}

}  // namespace sg::nn
