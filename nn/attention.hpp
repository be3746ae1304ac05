#pragma once
// Multi-head scaled dot-product attention, with Dive into Deep Learning's
// semantics (d2l.MultiHeadAttention):
//   * queries, keys, values are projected by W_q, W_k, W_v (no bias by
//     default), split into num_heads heads of num_hiddens / num_heads;
//   * scores = Q K^T / sqrt(head dim); masked scores are replaced by -1e6
//     (valid_lens: none, (B) or (B, Q), repeated for every head; `causal`
//     also hides every key after the query's position) and softmaxed;
//   * dropout on the weights, weighted sum of values, heads concatenated,
//     projected by W_o.
// The weights (before dropout) go to the caller who asks for them, for
// plots: forward's `weights_out` argument; the layer keeps no state.
//
// Optionally, attention itself carries positions (AttentionPositions), the
// alternatives to adding an absolute encoding to the embeddings:
//   * relative (Shaw et al., 2018): a learned vector a_r per clipped offset
//     r = clip(j - i, -k, k), k = max_distance, shared by the heads; the score
//     of query i and key j becomes q_i . (k_j + a_{j-i}) / sqrt(d), and a
//     second table adds sum_j w_ij a'_{j-i} to each head's output (as the
//     paper does; relative_values = false keeps the keys' table only).
//   * rotary (RoPE, Su et al., 2021): q and k are rotated for their positions
//     (sg::rope) before the dot product, so each score depends on j - i
//     through the rotation; no parameters; the head dimension must be even.
//   * alibi (Press et al., 2022): head h adds the fixed bias -m_h * |i - j|
//     (m_h from alibi_slopes, nn/positional.hpp) to the scaled score of
//     query i and key j before the mask and softmax, so far keys are
//     penalised linearly, more steeply in the first heads; no parameters.
#include "nn/basic.hpp"
#include "nn/linear.hpp"
#include "nn/positional.hpp"

namespace sg::nn {

// The keys and values one attention layer keeps between decoding steps
// (MultiHeadAttention::append and forward_cached, for a decoder's key/value
// cache), already projected by W_k and W_v:
//   positions none:                   (B, T, num_hiddens), the heads side by side;
//   relative, rotary or alibi:        (B * heads, T, head dim), one row per head,
//                                     keys rotated to their positions for rotary.
// Row t holds position t. Off the graph while decoding (NoGradGuard), but the
// ops record as any other when gradients are on.
struct KeyValueCache {
  Tensor keys, values;
  int64_t length() const { return keys.defined() ? keys.shape()[1] : 0; }
};

// Filled with designated initializers:
//   MultiHeadAttention mha(64, 4, 0.0, false, false, {.kind = Positional::relative, .max_distance = 4});
struct AttentionPositions {
  Positional kind = Positional::none;  // none, relative, rotary or alibi (in_attention kinds)
  int64_t max_distance = 8;     // relative: offsets beyond +-max_distance share a vector
  bool relative_values = true;  // relative: also Shaw et al.'s table for the values
};

class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t num_hiddens, int64_t num_heads, double dropout, bool bias = false,
                     bool causal = false, AttentionPositions positions = {});
  // queries: (B, Q, num_hiddens), keys and values: (B, K, num_hiddens),
  // valid_lens: undefined, (B) or (B, Q) int64 -> (B, Q, num_hiddens).
  // dropout_keys: for the weights' dropout (nn/basic.hpp; nullptr: a key
  // drawn from its generator). weights_out: when given, set to this forward's
  // attention weights (B, num_heads, Q, K), before dropout, off the graph.
  // forward() writes nothing else: it may run on several threads at once
  // (inference, see docs/architecture.md), each asking for its own weights.
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const Tensor& valid_lens = Tensor(), DropoutKeys* dropout_keys = nullptr,
                 Tensor* weights_out = nullptr) const;

  // Incremental attention (a decoder's key/value cache).
  // append: projects x (B, n, num_hiddens), the inputs at positions
  // [cache.length(), cache.length() + n), by W_k and W_v (and rotates the
  // keys for rotary) and appends them to the cache: n projections, not
  // length + n.
  void append(KeyValueCache& cache, const Tensor& x) const;
  // queries (B, Q, num_hiddens) at positions [query_offset, query_offset + Q)
  // attend over the cached keys and values (positions 0 .. K-1) -> (B, Q,
  // num_hiddens): the relative distances, ALiBi's |i - j| and the rotary
  // angle are those of the absolute positions query_offset + i and j. With
  // x = the inputs at positions 0..K-1 and Q = K, query_offset = 0, this is
  // forward(queries, x, x, valid_lens) to rounding. valid_lens: undefined,
  // (B) or (B, Q), each in [0, K]; `causal` (the layer's flag) also hides
  // keys j > query_offset + i. weights_out as in forward.
  Tensor forward_cached(const Tensor& queries, const KeyValueCache& cache, int64_t query_offset,
                        const Tensor& valid_lens = Tensor(), DropoutKeys* dropout_keys = nullptr,
                        Tensor* weights_out = nullptr) const;

  int64_t num_hiddens, num_heads;
  bool causal;
  AttentionPositions positions;
  // relative only: (2 * max_distance + 1, head dim), row r for offset r - max_distance.
  Tensor relative_keys, relative_values;  // the second unless positions.relative_values is off
  std::shared_ptr<Linear> W_q, W_k, W_v, W_o;
  std::shared_ptr<Dropout> attention_dropout;
};

}  // namespace sg::nn
