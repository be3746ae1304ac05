#include "nn/attention.hpp"

#include <cmath>

#include "autograd/ops.hpp"

namespace sg::nn {
namespace {

// (B, T, H) -> (B * heads, T, H / heads): every head becomes its own batch row.
Tensor split_heads(const Tensor& x, int64_t heads) {
  const int64_t b = x.shape()[0], t = x.shape()[1], h = x.shape()[2];
  return reshape(permute(reshape(x, {b, t, heads, h / heads}), {0, 2, 1, 3}), {b * heads, t, h / heads});
}

// (B * heads, T, d) -> (B, T, heads * d): the inverse of split_heads.
Tensor merge_heads(const Tensor& x, int64_t heads) {
  const int64_t bh = x.shape()[0], t = x.shape()[1], d = x.shape()[2];
  return reshape(permute(reshape(x, {bh / heads, heads, t, d}), {0, 2, 1, 3}), {bh / heads, t, heads * d});
}

// valid_lens (B) or (B, Q) -> (B * heads) or (B * heads, Q): each batch row's
// lengths repeated for each of its heads (torch.repeat_interleave).
Tensor repeat_for_heads(const Tensor& valid_lens, int64_t heads) {
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
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t hiddens, int64_t heads, double dropout, bool bias,
                                       bool causal_)
    : num_hiddens(hiddens), num_heads(heads), causal(causal_) {
  if (hiddens <= 0 || heads <= 0 || hiddens % heads != 0)
    fail("MultiHeadAttention: num_heads ", heads, " must divide num_hiddens ", hiddens);
  W_q = register_module("W_q", std::make_shared<Linear>(hiddens, hiddens, bias));
  W_k = register_module("W_k", std::make_shared<Linear>(hiddens, hiddens, bias));
  W_v = register_module("W_v", std::make_shared<Linear>(hiddens, hiddens, bias));
  W_o = register_module("W_o", std::make_shared<Linear>(hiddens, hiddens, bias));
  attention_dropout = register_module("dropout", std::make_shared<Dropout>(dropout));
}

Tensor MultiHeadAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                   const Tensor& valid_lens) const {
  if (queries.dim() != 3 || keys.dim() != 3 || values.dim() != 3 || keys.shape() != values.shape() ||
      queries.shape()[0] != keys.shape()[0] || queries.shape()[2] != num_hiddens ||
      keys.shape()[2] != num_hiddens)
    fail("MultiHeadAttention: queries ", queries.shape(), ", keys ", keys.shape(), " and values ",
         values.shape(), " must be (B, Q, ", num_hiddens, "), (B, K, ", num_hiddens, ") and (B, K, ",
         num_hiddens, ")");
  const int64_t batch = queries.shape()[0], nq = queries.shape()[1], nk = keys.shape()[1];
  const Tensor q = split_heads(W_q->forward(queries), num_heads);  // (B*h, Q, d)
  const Tensor k = split_heads(W_k->forward(keys), num_heads);     // (B*h, K, d)
  const Tensor v = split_heads(W_v->forward(values), num_heads);   // (B*h, K, d)
  const double scale = 1.0 / std::sqrt(static_cast<double>(num_hiddens / num_heads));
  const Tensor scores = matmul(q, k, false, true) * scale;  // (B*h, Q, K)
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
  const Tensor weights = masked_softmax(scores, lens, causal);  // (B*h, Q, K)
  attention_weights_ = reshape(weights.detach(), {batch, num_heads, nq, nk});
  const Tensor heads = matmul(attention_dropout->forward(weights), v);  // (B*h, Q, d)
  return W_o->forward(merge_heads(heads, num_heads));
}

}  // namespace sg::nn
