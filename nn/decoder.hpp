#pragma once
// The Transformer decoder of Dive into Deep Learning (section 11.7), with a
// key/value cache for decoding one token at a time.
//
// Parameter names are d2l's state_dict names (TransformerDecoder,
// TransformerDecoderBlock), so a checkpoint of the decoder loads into d2l's
// PyTorch classes with strict=True, and the other way:
//   embedding.weight                               nn.Embedding
//   blks.block<i>.attention1.W_{q,k,v,o}.weight    masked self-attention
//   blks.block<i>.addnorm1.ln.{weight,bias}
//   blks.block<i>.attention2.W_{q,k,v,o}.weight    encoder-decoder attention
//   blks.block<i>.addnorm2.ln.{weight,bias}
//   blks.block<i>.ffn.dense{1,2}.{weight,bias}
//   blks.block<i>.addnorm3.ln.{weight,bias}
//   dense.{weight,bias}                            to the target vocabulary
// The sinusoidal table is a buffer, not a parameter, so it is in neither
// state_dict. What d2l lacks adds names of its own: pos_encoding.P (learned
// positions), attention1.relative_{keys,values} (relative), final_ln (pre-norm).
#include <vector>

#include "nn/attention.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"

namespace sg::nn {

// How TransformerDecoder::step decodes.
enum class DecodingMode {
  // Every step's token at its own position (offset into the absolute table,
  // the rotary angle, the relative and ALiBi distances of query t against
  // keys 0..t); each block caches the self-attention's projected keys and
  // values, so step t projects one token. Equals the teacher-forced forward
  // on the same prefix, to rounding.
  cached,
  // d2l's predict_step, reproduced: each step's token gets position 0 (d2l's
  // PositionalEncoding adds P[:, :1] to a one-token input), each block keeps
  // its inputs (d2l's state[2][i]) and attends from the new token over all
  // of them, projected again at every step, with no mask (d2l passes none in
  // prediction mode). Inside attention the new token is query 0 and the
  // cached inputs keys 0..t, as d2l's code would place them. d2l's
  // behaviour, kept so its cost can be measured; training used positions
  // 0..T-1.
  d2l,
};

// One block's state between decoding steps.
struct DecoderBlockCache {
  KeyValueCache self;   // cached: the self-attention's keys and values, positions 0..t
  KeyValueCache cross;  // the encoder outputs' keys and values, projected once
  Tensor inputs;        // d2l: the self-attention's inputs so far (B, t, num_hiddens)
};

// What TransformerDecoder::step carries from one step to the next.
struct DecoderState {
  Tensor enc_valid_lens;  // (B) int64, or undefined: every source position counts
  int64_t source_len = 0;
  DecodingMode mode = DecodingMode::cached;
  int64_t steps = 0;  // target tokens fed so far: the next one's position
  int64_t batch = 0;  // examples (sources, or beams)
  std::vector<DecoderBlockCache> blocks;
  // Keeps example rows[i] as example i, for every cache (beam search
  // reorders its beams, and repeats each source for its beams, this way).
  void select(const std::vector<int64_t>& rows);
};

// Attention weights of a decoder forward, one (B, heads, Q, K) tensor per block.
struct DecoderAttentionWeights {
  std::vector<Tensor> self, cross;  // self: the target on itself; cross: target on source
};

// Post-norm (d2l):
//   Y = AddNorm1(X, attention1(X, X, X, causal));
//   Z = AddNorm2(Y, attention2(Y, enc, enc, enc_valid_lens));
//   out = AddNorm3(Z, ffn(Z)).
// Pre-norm (pre_norm = true): each layer norm moves onto its branch, as the
// encoder's option does: Y = X + dropout(attention1(LN1(X))), and so on.
// Positions inside attention (relative, rotary, ALiBi) go to the
// self-attention only: target and source positions are not one axis, so the
// encoder-decoder attention carries none (as T5 and RoPE models do).
class TransformerDecoderBlock : public Module {
 public:
  TransformerDecoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads, double dropout,
                          bool use_bias = false, AttentionPositions positions = {}, bool pre_norm = false);
  // Teacher forcing. X: (B, T, num_hiddens), target position t attending to
  // positions 0..t (d2l's dec_valid_lens 1..T); enc_outputs (B, S,
  // num_hiddens); enc_valid_lens undefined or (B) -> (B, T, num_hiddens).
  Tensor forward(const Tensor& X, const Tensor& enc_outputs, const Tensor& enc_valid_lens = Tensor(),
                 DropoutKeys* dropout_keys = nullptr, Tensor* self_weights = nullptr,
                 Tensor* cross_weights = nullptr) const;
  // A cache for step(): the encoder outputs' (B, S, num_hiddens) keys and
  // values projected once for the cross-attention; self and inputs empty.
  DecoderBlockCache init_cache(const Tensor& enc_outputs) const;
  // The next n tokens' states X (B, n, num_hiddens) at positions
  // [offset, offset + n), given the block's cache from init_cache (self
  // grown here by n in cached mode, inputs in d2l mode). Throws for a cache
  // whose cross-attention keys are missing or of another batch.
  Tensor step(const Tensor& X, DecoderBlockCache& cache, const Tensor& enc_valid_lens, int64_t offset,
              DecodingMode mode, Tensor* self_weights = nullptr, Tensor* cross_weights = nullptr) const;

  std::shared_ptr<MultiHeadAttention> attention1, attention2;
  std::shared_ptr<AddNorm> addnorm1, addnorm2, addnorm3;
  std::shared_ptr<PositionWiseFFN> ffn;
  bool pre_norm;
};

struct TransformerDecoderOptions {
  int64_t vocab_size = 16;  // the target vocabulary
  int64_t num_hiddens = 64;
  int64_t ffn_num_hiddens = 128;
  int64_t num_heads = 4;
  int64_t num_blocks = 2;
  double dropout = 0.1;
  Positional positional = Positional::sinusoidal;  // a row of positional_kinds()
  int64_t max_len = 1000;       // sinusoidal and learned: the longest target
  int64_t max_distance = 8;     // relative: offsets clipped to [-max_distance, max_distance]
  bool relative_values = true;  // relative: also the values' table
  bool pre_norm = false;        // pre-norm blocks and a final LayerNorm before dense
  bool use_bias = false;        // in the attention projections
};

// Target ids -> embeddings * sqrt(num_hiddens) -> positions -> blocks (->
// final LayerNorm when pre_norm) -> dense: logits over the target vocabulary.
class TransformerDecoder : public Module {
 public:
  explicit TransformerDecoder(const TransformerDecoderOptions& options);
  // Teacher forcing: ids (B, T) int64 (<bos> then the labels but the last),
  // enc_outputs (B, S, num_hiddens), enc_valid_lens undefined or (B) ->
  // logits (B, T, vocab_size). Causal in training and in eval mode alike.
  Tensor forward(const Tensor& ids, const Tensor& enc_outputs, const Tensor& enc_valid_lens = Tensor(),
                 DropoutKeys* dropout_keys = nullptr, DecoderAttentionWeights* weights = nullptr) const;
  // A state for step(): projects the encoder outputs' keys and values once per block.
  DecoderState init_state(const Tensor& enc_outputs, const Tensor& enc_valid_lens = Tensor(),
                          DecodingMode mode = DecodingMode::cached) const;
  // The next tokens: ids (B, n) int64 at positions [state.steps, state.steps
  // + n) -> logits (B, n, vocab_size); advances state.steps by n.
  Tensor step(const Tensor& ids, DecoderState& state, DecoderAttentionWeights* weights = nullptr) const;

  TransformerDecoderOptions options;
  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<AddedPositions> pos_encoding;  // set when the kind acts on the embeddings
  std::shared_ptr<Dropout> embedding_dropout;    // set otherwise
  std::vector<std::shared_ptr<TransformerDecoderBlock>> blocks;
  std::shared_ptr<LayerNorm> final_ln;  // set when pre_norm
  std::shared_ptr<Linear> dense;
};

}  // namespace sg::nn
