#pragma once
// The Transformer encoder of Dive into Deep Learning (section 11.7):
// post-norm blocks of self-attention and a position-wise feed-forward net.
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
class AddNorm : public Module {
 public:
  AddNorm(int64_t dim, double dropout);
  Tensor forward(const Tensor& X, const Tensor& Y) const;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<LayerNorm> ln;
};

// Y = AddNorm(X, attention(X, X, X)); out = AddNorm(Y, ffn(Y)).
// X: (B, T, num_hiddens) -> same shape
class TransformerEncoderBlock : public Module {
 public:
  TransformerEncoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads,
                          double dropout, bool use_bias = false, bool causal = false);
  Tensor forward(const Tensor& X, const Tensor& valid_lens = Tensor()) const;
  std::shared_ptr<MultiHeadAttention> attention;
  std::shared_ptr<AddNorm> addnorm1, addnorm2;
  std::shared_ptr<PositionWiseFFN> ffn;
};

enum class Positional { none, sinusoidal, learned };
const char* positional_name(Positional p);
Positional parse_positional(const std::string& name);  // "none", "sinusoidal", "learned"

struct TransformerEncoderOptions {
  int64_t vocab_size = 16;
  int64_t num_hiddens = 64;
  int64_t ffn_num_hiddens = 128;
  int64_t num_heads = 4;
  int64_t num_blocks = 2;
  double dropout = 0.1;
  Positional positional = Positional::sinusoidal;
  int64_t max_len = 1000;
  bool use_bias = false;  // in the attention projections (the FFN always has biases)
  bool causal = false;
};

// Token ids -> embeddings scaled by sqrt(num_hiddens) (as d2l does, so they
// are on the scale of the positional encoding) -> positions -> blocks.
// ids: (B, T) int64, valid_lens: none, (B) or (B, T) -> (B, T, num_hiddens)
class TransformerEncoder : public Module {
 public:
  explicit TransformerEncoder(const TransformerEncoderOptions& options);
  Tensor forward(const Tensor& ids, const Tensor& valid_lens = Tensor()) const;
  // Each block's attention weights from the last forward: (B, heads, T, T).
  std::vector<Tensor> attention_weights() const;

  TransformerEncoderOptions options;
  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<PositionalEncoding> sinusoidal;     // set when positional == sinusoidal
  std::shared_ptr<LearnedPositionalEncoding> learned;  // set when positional == learned
  std::shared_ptr<Dropout> embedding_dropout;          // used when positional == none
  std::vector<std::shared_ptr<TransformerEncoderBlock>> blocks;
};

}  // namespace sg::nn
