#include "nn/transformer.hpp"

#include <cmath>

#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/unary.hpp"

namespace sg::nn {

PositionWiseFFN::PositionWiseFFN(int64_t in, int64_t hiddens, int64_t out) {
  dense1 = register_module("dense1", std::make_shared<Linear>(in, hiddens));
  dense2 = register_module("dense2", std::make_shared<Linear>(hiddens, out));
}
Tensor PositionWiseFFN::forward(const Tensor& X) const { return dense2->forward(relu(dense1->forward(X))); }

AddNorm::AddNorm(int64_t dim, double p) {
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  ln = register_module("ln", std::make_shared<LayerNorm>(dim));
}
Tensor AddNorm::forward(const Tensor& X, const Tensor& Y, DropoutKeys* dropout_keys) const {
  if (X.shape() != Y.shape()) fail("AddNorm: X ", X.shape(), " and Y ", Y.shape(), " differ");
  return ln->forward(dropout->forward(Y, dropout_keys) + X);
}

TransformerEncoderBlock::TransformerEncoderBlock(int64_t h, int64_t ffn_h, int64_t heads, double p,
                                                 bool use_bias, bool causal, AttentionPositions positions,
                                                 bool pre_norm_)
    : pre_norm(pre_norm_) {
  attention = register_module("attention",
                              std::make_shared<MultiHeadAttention>(h, heads, p, use_bias, causal, positions));
  addnorm1 = register_module("addnorm1", std::make_shared<AddNorm>(h, p));
  ffn = register_module("ffn", std::make_shared<PositionWiseFFN>(h, ffn_h, h));
  addnorm2 = register_module("addnorm2", std::make_shared<AddNorm>(h, p));
}

Tensor TransformerEncoderBlock::forward(const Tensor& X, const Tensor& valid_lens, DropoutKeys* dropout_keys,
                                        Tensor* attention_weights) const {
  if (pre_norm) {
    const Tensor N1 = addnorm1->ln->forward(X);
    const Tensor A = attention->forward(N1, N1, N1, valid_lens, dropout_keys, attention_weights);
    const Tensor Y = X + addnorm1->dropout->forward(A, dropout_keys);
    return Y + addnorm2->dropout->forward(ffn->forward(addnorm2->ln->forward(Y)), dropout_keys);
  }
  const Tensor Y = addnorm1->forward(X, attention->forward(X, X, X, valid_lens, dropout_keys, attention_weights),
                                     dropout_keys);
  return addnorm2->forward(Y, ffn->forward(Y), dropout_keys);
}

TransformerEncoder::TransformerEncoder(const TransformerEncoderOptions& o) : options(o) {
  embedding = register_module("embedding", std::make_shared<Embedding>(o.vocab_size, o.num_hiddens));
  // The kinds' table says what the embeddings get: an encoding added to
  // them, or (positions inside attention, or none) only dropout.
  if (const PositionalKind& kind = positional_kind(o.positional); kind.make)
    pos_encoding = register_module("pos_encoding", kind.make(o.num_hiddens, o.dropout, o.max_len));
  else
    embedding_dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  const AttentionPositions positions{.kind = in_attention(o.positional) ? o.positional : Positional::none,
                                     .max_distance = o.max_distance,
                                     .relative_values = o.relative_values};
  for (int64_t i = 0; i < o.num_blocks; ++i)
    blocks.push_back(register_module(
        (o.d2l_names ? "blks.block" : "blocks.") + std::to_string(i),
        std::make_shared<TransformerEncoderBlock>(o.num_hiddens, o.ffn_num_hiddens, o.num_heads, o.dropout,
                                                  o.use_bias, o.causal, positions, o.pre_norm)));
  if (o.pre_norm) final_ln = register_module("final_ln", std::make_shared<LayerNorm>(o.num_hiddens));
}

Tensor TransformerEncoder::forward(const Tensor& ids, const Tensor& valid_lens, DropoutKeys* dropout_keys,
                                   std::vector<Tensor>* attention_weights) const {
  if (ids.dim() != 2) fail("TransformerEncoder: ids must be (batch, steps), got ", ids.shape());
  Tensor X = embedding->forward(ids) * std::sqrt(static_cast<double>(options.num_hiddens));
  X = pos_encoding ? pos_encoding->forward(X, 0, dropout_keys) : embedding_dropout->forward(X, dropout_keys);
  if (attention_weights) attention_weights->assign(blocks.size(), Tensor());
  for (size_t i = 0; i < blocks.size(); ++i)
    X = blocks[i]->forward(X, valid_lens, dropout_keys, attention_weights ? &(*attention_weights)[i] : nullptr);
  return final_ln ? final_ln->forward(X) : X;
}

}  // namespace sg::nn
