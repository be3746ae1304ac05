#pragma once
// The Transformer encoder of Dive into Deep Learning (section 11.7):
// post-norm blocks of self-attention and a position-wise feed-forward net
// (pre-norm as an option).
#include <optional>
#include <string>

#include "nn/attention.hpp"
#include "nn/positional.hpp"

namespace sg::nn {

// dense2(relu(dense1(X))).  X: (..., in) -> (..., out)
class PositionWiseFFN : public Module {
 public:
  PositionWiseFFN(int64_t in, int64_t hiddens, int64_t out);
  Tensor forward(const Tensor& X) const;
  std::shared_ptr<Linear> dense1, dense2;
};

// Residual connection then layer norm (post-norm): LayerNorm(dropout(Y) + X).
// dropout_keys, here and below: for the dropouts (nn/basic.hpp; nullptr:
// keys drawn from their generators).
class AddNorm : public Module {
 public:
  AddNorm(int64_t dim, double dropout);
  Tensor forward(const Tensor& X, const Tensor& Y, DropoutKeys* dropout_keys = nullptr) const;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<LayerNorm> ln;
};

// Post-norm (d2l, the original Transformer):
//   Y = AddNorm(X, attention(X, X, X)); out = AddNorm(Y, ffn(Y)).
// Pre-norm (pre_norm = true; Xiong et al., 2020): the layer norm moves onto
// the branch and the residual path stays an identity:
//   Y = X + dropout(attention(LN1(X))); out = Y + dropout(ffn(LN2(Y))),
// with LN1, LN2 and the dropouts those of addnorm1 and addnorm2 (same names).
// X: (B, T, num_hiddens) -> same shape; attention_weights: when given, set
// to the attention's weights (B, heads, T, T) (MultiHeadAttention::forward).
class TransformerEncoderBlock : public Module {
 public:
  TransformerEncoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads,
                          double dropout, bool use_bias = false, bool causal = false,
                          AttentionPositions positions = {}, bool pre_norm = false);
  Tensor forward(const Tensor& X, const Tensor& valid_lens = Tensor(), DropoutKeys* dropout_keys = nullptr,
                 Tensor* attention_weights = nullptr) const;
  std::shared_ptr<MultiHeadAttention> attention;
  std::shared_ptr<AddNorm> addnorm1, addnorm2;
  std::shared_ptr<PositionWiseFFN> ffn;
  bool pre_norm;
};

struct TransformerEncoderOptions {
  int64_t vocab_size = 16;
  int64_t num_hiddens = 64;
  int64_t ffn_num_hiddens = 128;
  int64_t num_heads = 4;
  int64_t num_blocks = 2;
  double dropout = 0.1;
  Positional positional = Positional::sinusoidal;  // a row of positional_kinds() (nn/positional.hpp)
  int64_t max_len = 1000;      // sinusoidal and learned: the longest sequence
  int64_t max_distance = 8;    // relative: offsets clipped to [-max_distance, max_distance]
  bool relative_values = true;  // relative: also the values' table (false: keys only)
  bool pre_norm = false;       // pre-norm blocks and a final LayerNorm (d2l: post-norm)
  bool use_bias = false;  // in the attention projections (the FFN always has biases)
  bool causal = false;
  // The blocks' names: "blocks.<i>" (the positions study's checkpoints), or
  // d2l's "blks.block<i>" (EncoderDecoder sets it, so that a whole
  // encoder-decoder carries d2l's Seq2Seq names).
  bool d2l_names = false;
};

// Token ids -> embeddings scaled by sqrt(num_hiddens) (as d2l does, so they
// are on the scale of the positional encoding) -> positions -> blocks
// (-> final LayerNorm when pre_norm). Relative, rotary and ALiBi positions live in
// every block's attention; the embeddings then only get dropout, as with none.
// ids: (B, T) int64, valid_lens: none, (B) or (B, T) -> (B, T, num_hiddens)
class TransformerEncoder : public Module {
 public:
  explicit TransformerEncoder(const TransformerEncoderOptions& options);
  // attention_weights: when given, set to each block's attention weights
  // in this forward, (B, heads, T, T) each, in block order.
  Tensor forward(const Tensor& ids, const Tensor& valid_lens = Tensor(), DropoutKeys* dropout_keys = nullptr,
                 std::vector<Tensor>* attention_weights = nullptr) const;

  TransformerEncoderOptions options;
  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<AddedPositions> pos_encoding;  // set when the kind acts on the embeddings
  std::shared_ptr<Dropout> embedding_dropout;    // set otherwise (none, or positions in attention)
  std::vector<std::shared_ptr<TransformerEncoderBlock>> blocks;
  std::shared_ptr<LayerNorm> final_ln;                 // set when pre_norm
};

}  // namespace sg::nn
