#include "nn/decoder.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/shape.hpp"

namespace sg::nn {
namespace {

// (B, T) int64: row b is 1, 2, .., T, d2l's dec_valid_lens: target
// position t attends to positions 0..t. [[maybe_unused]]: its callers are
// course regions too, which a student tree holds as stubs until written.
[[maybe_unused]] Tensor causal_lens(int64_t batch, int64_t steps, int64_t offset = 0) {
  // BEGIN ASSIGNMENT 8: causal_lens: d2l's dec_valid_lens, (B, n) int64 with row b = offset + 1, .., offset + n
  Tensor lens = empty({batch, steps}, int64);
  int64_t* l = lens.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t) l[b * steps + t] = offset + t + 1;
  return lens;
  // END ASSIGNMENT 8
}

// t: (B * group, ...) -> (rows.size() * group, ...), block i a copy of
// block rows[i] (a block: `group` consecutive leading rows). Off the graph.
Tensor gather_blocks(const Tensor& t, const std::vector<int64_t>& rows, int64_t group) {
  if (!t.defined()) return t;
  const int64_t blocks = t.shape()[0] / group;
  Shape shape = t.shape();
  shape[0] = static_cast<int64_t>(rows.size()) * group;
  Tensor out = empty(shape, t.dtype());
  const size_t bytes = t.nbytes() / static_cast<size_t>(std::max<int64_t>(blocks, 1));
  const char* src = static_cast<const char*>(t.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= blocks)
      fail("DecoderState::select: row ", rows[i], " is outside [0, ", blocks, ")");
    std::memcpy(dst + i * bytes, src + static_cast<size_t>(rows[i]) * bytes, bytes);
  }
  return out;
}

// One block's layers around its two attentions, each given as a function
// of the (B, T, num_hiddens) states it reads: self_attention (the target on
// itself, masked) and cross (the target on the source). Post-norm (d2l):
//   Y = AddNorm1(X, self_attention(X)); Z = AddNorm2(Y, cross(Y)); out = AddNorm3(Z, ffn(Z)).
// Pre-norm: each LayerNorm moves onto its branch: Y = X + dropout(self_attention(LN1(X))), ...
// forward (teacher forcing) and step (the cache) differ only in the attentions.
template <class SelfAttention, class Cross>
Tensor block_layers(const TransformerDecoderBlock& b, const Tensor& X, const SelfAttention& self_attention,
                    const Cross& cross, DropoutKeys* keys) {
  // BEGIN ASSIGNMENT 8: block_layers: the three sublayers (self_attention, cross, ffn), each with its AddNorm (post-norm) or its LayerNorm first and the residual after dropout (pre-norm); dropout with keys
  if (b.pre_norm) {
    const Tensor Y = X + b.addnorm1->dropout->forward(self_attention(b.addnorm1->ln->forward(X)), keys);
    const Tensor Z = Y + b.addnorm2->dropout->forward(cross(b.addnorm2->ln->forward(Y)), keys);
    return Z + b.addnorm3->dropout->forward(b.ffn->forward(b.addnorm3->ln->forward(Z)), keys);
  }
  const Tensor Y = b.addnorm1->forward(X, self_attention(X), keys);
  const Tensor Z = b.addnorm2->forward(Y, cross(Y), keys);
  return b.addnorm3->forward(Z, b.ffn->forward(Z), keys);
  // END ASSIGNMENT 8
}

}  // namespace

void DecoderState::select(const std::vector<int64_t>& rows) {
  const int64_t b = batch;
  for (int64_t r : rows)
    if (r < 0 || r >= b) fail("DecoderState::select: row ", r, " is outside the batch [0, ", b, ")");
  enc_valid_lens = gather_blocks(enc_valid_lens, rows, 1);
  for (DecoderBlockCache& c : blocks) {
    for (KeyValueCache* kv : {&c.self, &c.cross}) {
      if (!kv->keys.defined()) continue;
      const int64_t group = kv->keys.shape()[0] / b;  // 1, or the heads for positions inside attention
      kv->keys = gather_blocks(kv->keys, rows, group), kv->values = gather_blocks(kv->values, rows, group);
    }
    c.inputs = gather_blocks(c.inputs, rows, 1);
  }
  batch = static_cast<int64_t>(rows.size());
}

TransformerDecoderBlock::TransformerDecoderBlock(int64_t h, int64_t ffn_h, int64_t heads, double p, bool use_bias,
                                                 AttentionPositions positions, bool pre_norm_)
    : pre_norm(pre_norm_) {
  // Not the attention's causal flag: the mask is d2l's dec_valid_lens, so
  // that d2l's prediction mode can call the same layer with no mask.
  attention1 = register_module("attention1",
                               std::make_shared<MultiHeadAttention>(h, heads, p, use_bias, false, positions));
  addnorm1 = register_module("addnorm1", std::make_shared<AddNorm>(h, p));
  attention2 = register_module("attention2", std::make_shared<MultiHeadAttention>(h, heads, p, use_bias));
  addnorm2 = register_module("addnorm2", std::make_shared<AddNorm>(h, p));
  ffn = register_module("ffn", std::make_shared<PositionWiseFFN>(h, ffn_h, h));
  addnorm3 = register_module("addnorm3", std::make_shared<AddNorm>(h, p));
}

Tensor TransformerDecoderBlock::forward(const Tensor& X, const Tensor& enc, const Tensor& enc_valid_lens,
                                        DropoutKeys* keys, Tensor* self_weights, Tensor* cross_weights) const {
  if (X.dim() != 3) fail("TransformerDecoderBlock: X must be (batch, steps, hiddens), got ", X.shape());
  // BEGIN ASSIGNMENT 8: TransformerDecoderBlock::forward: block_layers with the masked self-attention (causal_lens) and the attention to enc with enc_valid_lens, dropout with keys
  const Tensor lens = causal_lens(X.shape()[0], X.shape()[1]);
  const auto self_attention = [&](const Tensor& A) { return attention1->forward(A, A, A, lens, keys, self_weights); };
  const auto cross = [&](const Tensor& A) {
    return attention2->forward(A, enc, enc, enc_valid_lens, keys, cross_weights);
  };
  return block_layers(*this, X, self_attention, cross, keys);
  // END ASSIGNMENT 8
}

DecoderBlockCache TransformerDecoderBlock::init_cache(const Tensor& enc) const {
  if (enc.dim() != 3 || enc.shape()[1] < 1)
    fail("TransformerDecoderBlock::init_cache: encoder outputs must be (batch, S >= 1, hiddens), got ", enc.shape());
  DecoderBlockCache cache;
  attention2->append(cache.cross, enc);
  return cache;
}

Tensor TransformerDecoderBlock::step(const Tensor& X, DecoderBlockCache& cache, const Tensor& enc_valid_lens,
                                     int64_t offset, DecodingMode mode, Tensor* self_weights,
                                     Tensor* cross_weights) const {
  if (X.dim() != 3) fail("TransformerDecoderBlock::step: X must be (batch, steps, hiddens), got ", X.shape());
  if (!cache.cross.keys.defined())
    fail("TransformerDecoderBlock::step: the cache holds no cross-attention keys (make it with init_cache)");
  const int64_t cached_batch = cache.cross.keys.shape()[0];  // the cross-attention carries no positions: (B, S, h)
  if (cached_batch != X.shape()[0])
    fail("TransformerDecoderBlock::step: X ", X.shape(), " has batch ", X.shape()[0], ", the cache's ",
         "cross-attention keys ", cache.cross.keys.shape(), " batch ", cached_batch);
  // The self-attention of the n new states A (B, n, num_hiddens) over the prefix.
  auto self_attention = [&](const Tensor& A) -> Tensor {
    if (mode == DecodingMode::d2l) {  // d2l: all the inputs so far as keys and values, no mask
      cache.inputs = cache.inputs.defined() ? concat({cache.inputs, A}, 1) : A;
      return attention1->forward(A, cache.inputs, cache.inputs, Tensor(), nullptr, self_weights);
    }
    // BEGIN ASSIGNMENT 8: TransformerDecoderBlock::step's self-attention: A's keys and values into cache.self, then A at positions offset .. offset + n - 1 attends over the cache, causally
    const int64_t batch = A.shape()[0], n = A.shape()[1];
    attention1->append(cache.self, A);
    const Tensor lens = n > 1 ? causal_lens(batch, n, offset) : Tensor();  // one token sees every cached key
    return attention1->forward_cached(A, cache.self, offset, lens, nullptr, self_weights);
    // END ASSIGNMENT 8
  };
  // The encoder-decoder attention of A over the source, whose keys and values are in cache.cross.
  auto cross = [&](const Tensor& A) -> Tensor {
    // BEGIN ASSIGNMENT 8: TransformerDecoderBlock::step's cross-attention: A attends over cache.cross with enc_valid_lens
    return attention2->forward_cached(A, cache.cross, 0, enc_valid_lens, nullptr, cross_weights);
    // END ASSIGNMENT 8
  };
  return block_layers(*this, X, self_attention, cross, nullptr);
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderOptions& o) : options(o) {
  embedding = register_module("embedding", std::make_shared<Embedding>(o.vocab_size, o.num_hiddens));
  if (const PositionalKind& kind = positional_kind(o.positional); kind.make)
    pos_encoding = register_module("pos_encoding", kind.make(o.num_hiddens, o.dropout, o.max_len));
  else
    embedding_dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  const AttentionPositions positions{.kind = in_attention(o.positional) ? o.positional : Positional::none,
                                     .max_distance = o.max_distance,
                                     .relative_values = o.relative_values};
  for (int64_t i = 0; i < o.num_blocks; ++i)
    blocks.push_back(register_module(
        "blks.block" + std::to_string(i),
        std::make_shared<TransformerDecoderBlock>(o.num_hiddens, o.ffn_num_hiddens, o.num_heads, o.dropout,
                                                  o.use_bias, positions, o.pre_norm)));
  if (o.pre_norm) final_ln = register_module("final_ln", std::make_shared<LayerNorm>(o.num_hiddens));
  dense = register_module("dense", std::make_shared<Linear>(o.num_hiddens, o.vocab_size));
}

Tensor TransformerDecoder::forward(const Tensor& ids, const Tensor& enc, const Tensor& enc_valid_lens,
                                   DropoutKeys* keys, DecoderAttentionWeights* weights) const {
  if (ids.dim() != 2) fail("TransformerDecoder: ids must be (batch, steps), got ", ids.shape());
  if (enc.dim() != 3 || enc.shape()[0] != ids.shape()[0] || enc.shape()[2] != options.num_hiddens)
    fail("TransformerDecoder: encoder outputs ", enc.shape(), " must be (", ids.shape()[0], ", S, ",
         options.num_hiddens, ") for target ids ", ids.shape());
  Tensor X = embedding->forward(ids) * std::sqrt(static_cast<double>(options.num_hiddens));
  X = pos_encoding ? pos_encoding->forward(X, 0, keys) : embedding_dropout->forward(X, keys);
  if (weights) weights->self.assign(blocks.size(), Tensor()), weights->cross.assign(blocks.size(), Tensor());
  for (size_t i = 0; i < blocks.size(); ++i)
    X = blocks[i]->forward(X, enc, enc_valid_lens, keys, weights ? &weights->self[i] : nullptr,
                           weights ? &weights->cross[i] : nullptr);
  return dense->forward(final_ln ? final_ln->forward(X) : X);
}

DecoderState TransformerDecoder::init_state(const Tensor& enc, const Tensor& enc_valid_lens,
                                            DecodingMode mode) const {
  if (enc.dim() != 3 || enc.shape()[1] < 1 || enc.shape()[2] != options.num_hiddens)
    fail("TransformerDecoder::init_state: encoder outputs ", enc.shape(), " must be (B, S >= 1, ",
         options.num_hiddens, ")");
  if (enc_valid_lens.defined() && (enc_valid_lens.dtype() != int64 || enc_valid_lens.shape() != Shape{enc.shape()[0]}))
    fail("TransformerDecoder::init_state: enc_valid_lens must be int64 (", enc.shape()[0], "), got ",
         enc_valid_lens.dtype(), " ", enc_valid_lens.shape());
  DecoderState state;
  state.enc_valid_lens = enc_valid_lens;
  state.source_len = enc.shape()[1];
  state.mode = mode;
  state.blocks.resize(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) state.blocks[i] = blocks[i]->init_cache(enc);
  state.batch = enc.shape()[0];
  return state;
}

Tensor TransformerDecoder::step(const Tensor& ids, DecoderState& state, DecoderAttentionWeights* weights) const {
  if (ids.dim() != 2 || ids.shape()[1] < 1 || ids.shape()[0] != state.batch)
    fail("TransformerDecoder::step: ids must be (", state.batch, ", n >= 1), got ", ids.shape());
  if (state.blocks.size() != blocks.size())
    fail("TransformerDecoder::step: the state has ", state.blocks.size(), " blocks' caches, the decoder ",
         blocks.size(), " blocks (init_state makes it)");
  // BEGIN ASSIGNMENT 8: TransformerDecoder::step: forward's layers on the new ids at positions state.steps .. (0 in d2l mode), each block's step with its cache, then state.steps advanced
  const int64_t offset = state.mode == DecodingMode::d2l ? 0 : state.steps;
  Tensor X = embedding->forward(ids) * std::sqrt(static_cast<double>(options.num_hiddens));
  X = pos_encoding ? pos_encoding->forward(X, offset) : embedding_dropout->forward(X);
  if (weights) weights->self.assign(blocks.size(), Tensor()), weights->cross.assign(blocks.size(), Tensor());
  for (size_t i = 0; i < blocks.size(); ++i)
    X = blocks[i]->step(X, state.blocks[i], state.enc_valid_lens, state.steps, state.mode,
                        weights ? &weights->self[i] : nullptr, weights ? &weights->cross[i] : nullptr);
  state.steps += ids.shape()[1];
  return dense->forward(final_ln ? final_ln->forward(X) : X);
  // END ASSIGNMENT 8
}

}  // namespace sg::nn
