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
// The weights of the last forward (before dropout) are kept for plots.
#include "nn/basic.hpp"
#include "nn/linear.hpp"

namespace sg::nn {

class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t num_hiddens, int64_t num_heads, double dropout, bool bias = false,
                     bool causal = false);
  // queries: (B, Q, num_hiddens), keys and values: (B, K, num_hiddens),
  // valid_lens: undefined, (B) or (B, Q) int64 -> (B, Q, num_hiddens)
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const Tensor& valid_lens = Tensor()) const;
  // (B, num_heads, Q, K) from the last forward; undefined before the first.
  Tensor attention_weights() const { return attention_weights_; }

  int64_t num_hiddens, num_heads;
  bool causal;
  std::shared_ptr<Linear> W_q, W_k, W_v, W_o;
  std::shared_ptr<Dropout> attention_dropout;

 private:
  mutable Tensor attention_weights_;
};

}  // namespace sg::nn
