#include "nn/attention.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/embedding.hpp"
#include "autograd/ops/head_products.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/rope.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/softmax.hpp"
#include "nn/init.hpp"

namespace sg::nn {
namespace {

// d2l's transpose_qkv: (B, T, H) -> (B * heads, T, H / heads), head i of
// batch row b (columns i*d .. i*d+d-1) becoming batch row b * heads + i.
Tensor split_heads(const Tensor& x, int64_t heads) {
  // BEGIN ASSIGNMENT 5: split_heads: d2l's transpose_qkv, (B, T, heads * d) -> (B * heads, T, d) with reshape and permute
  const int64_t b = x.shape()[0], t = x.shape()[1], h = x.shape()[2];
  return reshape(permute(reshape(x, {b, t, heads, h / heads}), {0, 2, 1, 3}), {b * heads, t, h / heads});
  // END ASSIGNMENT 5
}

// d2l's transpose_output: (B * heads, T, d) -> (B, T, heads * d), the inverse of split_heads.
Tensor merge_heads(const Tensor& x, int64_t heads) {
  // BEGIN ASSIGNMENT 5: merge_heads: d2l's transpose_output, (B * heads, T, d) -> (B, T, heads * d), the inverse of split_heads
  const int64_t bh = x.shape()[0], t = x.shape()[1], d = x.shape()[2];
  return reshape(permute(reshape(x, {bh / heads, heads, t, d}), {0, 2, 1, 3}), {bh / heads, t, heads * d});
  // END ASSIGNMENT 5
}

// valid_lens (B) or (B, Q) -> (B * heads) or (B * heads, Q): each batch row's
// lengths repeated for each of its heads (torch.repeat_interleave).
Tensor repeat_for_heads(const Tensor& valid_lens, int64_t heads) {
  // BEGIN ASSIGNMENT 5: repeat_for_heads: (B) or (B, Q) int64 -> (B * heads) or (B * heads, Q), row b * heads + i a copy of row b
  Shape shape = valid_lens.shape();
  const int64_t rows = shape[0], per_row = valid_lens.numel() / std::max<int64_t>(rows, 1);
  shape[0] *= heads;
  Tensor out = empty(shape, int64);
  const int64_t* src = valid_lens.data<int64_t>();
  int64_t* dst = out.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = 0; j < per_row; ++j) dst[(r * heads + h) * per_row + j] = src[r * per_row + j];
  return out;
  // END ASSIGNMENT 5
}

// (Q, K) int64: clip(j - i, -k, k) + k, the row of the relative table that
// query i and key j use; the queries at positions offset + i (a decoder's
// step: its query comes after the cached keys).
Tensor clipped_offsets(int64_t queries, int64_t keys, int64_t k, int64_t offset = 0) {
  Tensor out = empty({queries, keys}, int64);
  int64_t* o = out.data<int64_t>();
  for (int64_t i = 0; i < queries; ++i)
    for (int64_t j = 0; j < keys; ++j) o[i * keys + j] = std::clamp(j - (offset + i), -k, k) + k;
  return out;
}

// x: (B*h, Q, d), table rows gathered per (i, j): rel (Q, K, d) -> (B*h, Q, K)
// with out[n, i, j] = x[n, i, :] . rel[i, j, :]. The query axis moves to the
// front to be the batch axis of one product: (Q, B*h, d) x (Q, K, d)^T.
Tensor dot_per_query(const Tensor& x, const Tensor& rel) {
  return permute(matmul(permute(x, {1, 0, 2}), rel, false, true), {1, 0, 2});
}

// w: (B*h, Q, K), rel (Q, K, d) -> (B*h, Q, d) with out[n, i, :] = sum_j w[n, i, j] rel[i, j, :].
Tensor weighted_per_query(const Tensor& w, const Tensor& rel) {
  return permute(matmul(permute(w, {1, 0, 2}), rel), {1, 0, 2});
}

// weights (B * heads, Q, K) -> *out = weights (B, heads, Q, K), off the
// graph, when the caller asked for them (out not null).
void give_weights(const Tensor& weights, int64_t heads, Tensor* out) {
  if (!out) return;
  const Shape& s = weights.shape();
  *out = reshape(weights.detach(), {s[0] / heads, heads, s[1], s[2]});
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t hiddens, int64_t heads, double dropout, bool bias,
                                       bool causal_, AttentionPositions positions_)
    : num_hiddens(hiddens), num_heads(heads), causal(causal_), positions(positions_) {
  if (hiddens <= 0 || heads <= 0 || hiddens % heads != 0)
    fail("MultiHeadAttention: num_heads ", heads, " must divide num_hiddens ", hiddens);
  const int64_t head_dim = hiddens / heads;
  if (positional_kind(positions.kind).acts == PositionsAct::embeddings) {
    std::vector<std::string> taken;  // the kinds of the table attention takes: "none, relative, rotary or alibi"
    for (const PositionalKind& k : positional_kinds())
      if (k.acts != PositionsAct::embeddings) taken.push_back(k.name);
    std::string list;
    for (size_t i = 0; i < taken.size(); ++i) list += (i == 0 ? "" : i + 1 < taken.size() ? ", " : " or ") + taken[i];
    fail("MultiHeadAttention: positions '", positional_name(positions.kind),
         "' are added to the embeddings, not carried by attention (", list, ")");
  }
  if (positions.kind == Positional::rotary && head_dim % 2 != 0)
    fail("MultiHeadAttention: rotary positions rotate pairs of features, so the head dimension "
         "must be even; num_hiddens ", hiddens, " / num_heads ", heads, " = ", head_dim);
  if (positions.kind == Positional::relative) {
    if (positions.max_distance < 1)
      fail("MultiHeadAttention: max_distance must be at least 1, got ", positions.max_distance);
    // Initialised like a learned absolute encoding; the table is shared by the heads.
    const Shape table{2 * positions.max_distance + 1, head_dim};
    relative_keys = register_parameter("relative_keys", init::normal(table, 0.0, 0.02));
    if (positions.relative_values)
      relative_values = register_parameter("relative_values", init::normal(table, 0.0, 0.02));
  }
  W_q = register_module("W_q", std::make_shared<Linear>(hiddens, hiddens, bias));
  W_k = register_module("W_k", std::make_shared<Linear>(hiddens, hiddens, bias));
  W_v = register_module("W_v", std::make_shared<Linear>(hiddens, hiddens, bias));
  W_o = register_module("W_o", std::make_shared<Linear>(hiddens, hiddens, bias));
  attention_dropout = register_module("dropout", std::make_shared<Dropout>(dropout));
}

Tensor MultiHeadAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                   const Tensor& valid_lens, DropoutKeys* dropout_keys,
                                   Tensor* weights_out) const {
  if (queries.dim() != 3 || keys.dim() != 3 || values.dim() != 3 || keys.shape() != values.shape() ||
      queries.shape()[0] != keys.shape()[0] || queries.shape()[2] != num_hiddens ||
      keys.shape()[2] != num_hiddens)
    fail("MultiHeadAttention: queries ", queries.shape(), ", keys ", keys.shape(), " and values ",
         values.shape(), " must be (B, Q, ", num_hiddens, "), (B, K, ", num_hiddens, ") and (B, K, ",
         num_hiddens, ")");
  const int64_t batch = queries.shape()[0], nq = queries.shape()[1], nk = keys.shape()[1];
  Tensor lens;
  if (valid_lens.defined()) {
    if (valid_lens.dtype() != int64 || (valid_lens.shape() != Shape{batch} &&
                                         valid_lens.shape() != Shape{batch, nq}))
      fail("MultiHeadAttention: valid_lens must be int64 (", batch, ") or (", batch, ", ", nq,
           "), got ", valid_lens.dtype(), " ", valid_lens.shape(), " for queries ", queries.shape());
    // Checked here, before the per-head repeat, so the message speaks of the user's batch.
    const int64_t* v = valid_lens.data<int64_t>();
    for (int64_t i = 0; i < valid_lens.numel(); ++i)
      if (v[i] < 0 || v[i] > nk)
        fail("MultiHeadAttention: valid length ", v[i], " at position ", i, " of valid_lens ",
             valid_lens.shape(), " is outside [0, ", nk, "] for keys ", keys.shape());
    lens = repeat_for_heads(valid_lens, num_heads);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(num_hiddens / num_heads));
  if (positions.kind == Positional::none) {
    // BEGIN ASSIGNMENT 5: MultiHeadAttention::forward: d2l's multi-head attention: project by W_q, W_k, W_v; per-head scores q k^T; masked_softmax with lens, causal and 1/sqrt(d); give_weights; dropout with dropout_keys; times the values; heads merged; W_o
    // The heads stay side by side in (B, T, h*d): head_scores and head_pool
    // read and write each head's columns in place, the same arithmetic as
    // split_heads, matmul and merge_heads without their four copies.
    const Tensor q = W_q->forward(queries), k = W_k->forward(keys), v = W_v->forward(values);
    const Tensor weights = masked_softmax(head_scores(q, k, num_heads), lens, causal, scale);  // (B*h, Q, K)
    give_weights(weights, num_heads, weights_out);
    return W_o->forward(head_pool(attention_dropout->forward(weights, dropout_keys), v, num_heads));
    // END ASSIGNMENT 5
  }
  // Positions inside attention work on each head's own (T, d) matrix.
  // weights (B*h, Q, K) from scores (B*h, Q, K): masked, scaled by `by`
  // (1/sqrt(d) unless the scores come scaled), softmaxed, given to the
  // caller if asked for, dropped out.
  auto attend = [&](const Tensor& scores, double by) {
    const Tensor weights = masked_softmax(scores, lens, causal, by);
    give_weights(weights, num_heads, weights_out);
    return attention_dropout->forward(weights, dropout_keys);
  };
  Tensor q = split_heads(W_q->forward(queries), num_heads);  // (B*h, Q, d)
  Tensor k = split_heads(W_k->forward(keys), num_heads);     // (B*h, K, d)
  const Tensor v = split_heads(W_v->forward(values), num_heads);  // (B*h, K, d)
  if (positions.kind == Positional::rotary) q = rope(q), k = rope(k);  // query i at position i, key j at j
  Tensor scores = matmul(q, k, false, true);  // (B*h, Q, K)
  Tensor offsets;                             // (Q, K) rows of the relative tables
  if (positions.kind == Positional::relative) {
    offsets = clipped_offsets(nq, nk, positions.max_distance);
    scores = scores + dot_per_query(q, embedding(relative_keys, offsets));  // + q_i . a_{j-i}
  }
  double by = scale;
  if (positions.kind == Positional::alibi) {
    // The bias is added after the 1/sqrt(d) scaling, as the paper does; the
    // heads' (Q, K) biases broadcast over the batch.
    const Tensor per_head = reshape(scores * scale, {batch, num_heads, nq, nk});
    scores = reshape(per_head + alibi_bias(num_heads, nq, nk, scores.dtype()), {batch * num_heads, nq, nk});
    by = 1.0;
  }
  const Tensor dropped = attend(scores, by);
  Tensor heads = matmul(dropped, v);  // (B*h, Q, d)
  if (relative_values.defined())  // + sum_j w_ij a'_{j-i}
    heads = heads + weighted_per_query(dropped, embedding(relative_values, offsets));
  return W_o->forward(merge_heads(heads, num_heads));
}

void MultiHeadAttention::append(KeyValueCache& cache, const Tensor& x) const {
  if (x.dim() != 3 || x.shape()[2] != num_hiddens || x.shape()[1] < 1)
    fail("MultiHeadAttention::append: inputs ", x.shape(), " must be (B, n >= 1, ", num_hiddens, ")");
  const int64_t start = cache.length();
  if (start > 0 && cache.keys.shape()[0] != x.shape()[0] * (positions.kind == Positional::none ? 1 : num_heads))
    fail("MultiHeadAttention::append: inputs ", x.shape(), " do not continue the cached keys ",
         cache.keys.shape(), " (another batch size)");
  // BEGIN ASSIGNMENT 8: MultiHeadAttention::append: x's keys and values (W_k, W_v; per head and keys rotated from position start for positions inside attention) concatenated after the cached ones
  Tensor k = W_k->forward(x), v = W_v->forward(x);  // (B, n, H)
  if (positions.kind != Positional::none) {
    k = split_heads(k, num_heads), v = split_heads(v, num_heads);  // (B*h, n, d)
    if (positions.kind == Positional::rotary) k = rope(k, start);  // keys at start .. start + n - 1
  }
  cache.keys = start == 0 ? k : concat({cache.keys, k}, 1);
  cache.values = start == 0 ? v : concat({cache.values, v}, 1);
  // END ASSIGNMENT 8
}

Tensor MultiHeadAttention::forward_cached(const Tensor& queries, const KeyValueCache& cache,
                                          int64_t query_offset, const Tensor& valid_lens,
                                          DropoutKeys* dropout_keys, Tensor* weights_out) const {
  const int64_t nk = cache.length();
  const int64_t rows = positions.kind == Positional::none ? 1 : num_heads;  // cache rows per example
  if (nk == 0) fail("MultiHeadAttention::forward_cached: the cache is empty (append the keys first)");
  if (queries.dim() != 3 || queries.shape()[2] != num_hiddens || cache.keys.shape()[0] != queries.shape()[0] * rows)
    fail("MultiHeadAttention::forward_cached: queries ", queries.shape(), " must be (B, Q, ", num_hiddens,
         ") with the batch of the cached keys ", cache.keys.shape());
  if (query_offset < 0) fail("MultiHeadAttention::forward_cached: query_offset ", query_offset, " is negative");
  const int64_t batch = queries.shape()[0], nq = queries.shape()[1];
  // The lengths: the caller's, each capped by causality (query i sees keys
  // 0 .. query_offset + i) when the layer is causal and that hides a key.
  Tensor lens = valid_lens;
  if (lens.defined()) {
    if (lens.dtype() != int64 || (lens.shape() != Shape{batch} && lens.shape() != Shape{batch, nq}))
      fail("MultiHeadAttention::forward_cached: valid_lens must be int64 (", batch, ") or (", batch, ", ", nq,
           "), got ", lens.dtype(), " ", lens.shape(), " for queries ", queries.shape());
    const int64_t* v = lens.data<int64_t>();
    for (int64_t i = 0; i < lens.numel(); ++i)
      if (v[i] < 0 || v[i] > nk)
        fail("MultiHeadAttention::forward_cached: valid length ", v[i], " at position ", i, " of valid_lens ",
             lens.shape(), " is outside [0, ", nk, "] for ", nk, " cached keys");
  }
  if (causal && query_offset + 1 < nk) {  // else no key comes after any query
    Tensor capped = empty({batch, nq}, int64);
    int64_t* c = capped.data<int64_t>();
    const int64_t* v = lens.defined() ? lens.data<int64_t>() : nullptr;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t given = !v ? nk : lens.dim() == 1 ? v[b] : v[b * nq + i];
        c[b * nq + i] = std::min(given, query_offset + i + 1);
      }
    lens = capped;
  }
  if (lens.defined()) lens = repeat_for_heads(lens, num_heads);
  const double scale = 1.0 / std::sqrt(static_cast<double>(num_hiddens / num_heads));
  auto attend = [&](const Tensor& scores, double by) {
    const Tensor weights = masked_softmax(scores, lens, false, by);
    give_weights(weights, num_heads, weights_out);
    return attention_dropout->forward(weights, dropout_keys);
  };
  if (positions.kind == Positional::none) {
    // BEGIN ASSIGNMENT 8: MultiHeadAttention::forward_cached: the projected queries attend over the cached keys and values (already projected): attend(scores, scale), heads merged, W_o
    const Tensor q = W_q->forward(queries);
    return W_o->forward(head_pool(attend(head_scores(q, cache.keys, num_heads), scale), cache.values, num_heads));
    // END ASSIGNMENT 8
  }
  // As forward's branch for positions inside attention, with the queries at
  // query_offset + i.
  Tensor q = split_heads(W_q->forward(queries), num_heads);  // (B*h, Q, d)
  if (positions.kind == Positional::rotary) q = rope(q, query_offset);
  Tensor scores = matmul(q, cache.keys, false, true);  // (B*h, Q, K)
  Tensor offsets;
  if (positions.kind == Positional::relative) {
    offsets = clipped_offsets(nq, nk, positions.max_distance, query_offset);
    scores = scores + dot_per_query(q, embedding(relative_keys, offsets));
  }
  double by = scale;
  if (positions.kind == Positional::alibi) {
    const Tensor per_head = reshape(scores * scale, {batch, num_heads, nq, nk});
    scores = reshape(per_head + alibi_bias(num_heads, nq, nk, scores.dtype(), query_offset),
                     {batch * num_heads, nq, nk});
    by = 1.0;
  }
  const Tensor dropped = attend(scores, by);
  Tensor heads = matmul(dropped, cache.values);  // (B*h, Q, d)
  if (relative_values.defined())
    heads = heads + weighted_per_query(dropped, embedding(relative_values, offsets));
  return W_o->forward(merge_heads(heads, num_heads));
}

}  // namespace sg::nn
