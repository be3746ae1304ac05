#pragma once
// The differentiable ops (namespace sg). Each computes its value with the
// graph-free kernels in sg::kernel and, when an input requires grad, records a
// node whose backward is written right under the forward in the op's file:
//
//   autograd/ops/arithmetic.cpp  add, mul, div, affine (scalar), and compositions
//   autograd/ops/unary.cpp       exp, log, sqrt, tanh, sigmoid, relu, abs, pow
//   autograd/ops/gelu.cpp        gelu (exact and tanh forms)
//   autograd/ops/reduce.cpp      sum, mean, max
//   autograd/ops/shape.cpp       reshape, permute, transpose, slice, concat
//   autograd/ops/matmul.cpp      matmul (2-D and batched)
//   autograd/ops/linear.cpp      linear (x W^T + b)
//   autograd/ops/head_products.cpp head_scores, head_pool (attention's per-head
//                            products, heads read in place)
//   autograd/ops/softmax.cpp     softmax, log_softmax, masked_softmax
//   autograd/ops/embedding.cpp   embedding (row gather, scatter-add backward)
//   autograd/ops/rope.cpp        rope (rotary position embedding)
//   autograd/ops/layer_norm.cpp  layer_norm (fused)
//   autograd/ops/dropout.cpp     dropout (counter-based mask, never stored)
//   autograd/ops/cross_entropy.cpp cross_entropy (fused log-softmax)
//   autograd/ops/softplus.cpp    softplus
//   autograd/ops/compare.cpp     eq, ne, lt, le, gt, ge (masks, no gradient)
//
// Ops that are compositions of others (sub, neg, mean, scalar arithmetic)
// have no backward of their own.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "autograd/node.hpp"
#include "autograd/ops/compare.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"

namespace sg {

// ---- arithmetic, broadcasting like NumPy ----
// Both tensors of one dtype. int64 tensors (no gradient) add, subtract,
// multiply and negate to int64, also with a whole-number scalar (lens - 1);
// a fractional scalar with an int64 tensor, and `/` on int64, throw: the
// result would not be int64 (convert with kernel::to(x, float32) first).
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
// x * alpha + beta with plain numbers: how scalars enter the graph.
Tensor affine(const Tensor& x, double alpha, double beta = 0);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& x, double s);
Tensor operator+(double s, const Tensor& x);
Tensor operator-(const Tensor& x, double s);
Tensor operator-(double s, const Tensor& x);
Tensor operator*(const Tensor& x, double s);
Tensor operator*(double s, const Tensor& x);
Tensor operator/(const Tensor& x, double s);

// ---- elementwise ----
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor abs(const Tensor& x);  // gradient sign(x), 0 at 0
Tensor pow(const Tensor& x, double exponent);
// x * Phi(x), PyTorch's gelu: approximate "none" (default) is the exact form
// with erf, "tanh" the approximation GPT-2 uses (they differ by up to ~5e-4).
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold
// (PyTorch's softplus); the gradient is sigmoid(beta x).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);

// ---- reductions ----
Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int64_t axis, bool keepdim = false);
// The gradient goes to the first maximum only (as argmax picks it).
Tensor max(const Tensor& x);
Tensor max(const Tensor& x, int64_t axis, bool keepdim = false);

// ---- shape ----
Tensor reshape(const Tensor& x, const Shape& shape);  // a view; one -1 allowed
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1);
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);

// ---- products ----
// a: (..., M, K), b: (..., K, N) -> (..., M, N), batch axes broadcast;
// transpose_a/b use a's or b's last two axes swapped, without a copy.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false,
              bool transpose_b = false);

// x: (..., in), weight: (out, in), bias: (out) or undefined -> (..., out):
// x W^T + b (PyTorch's F.linear), the bias added inside the product.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// Attention's per-head products on (B, T, heads * d) tensors, head h being
// the feature columns h*d .. h*d+d-1; no copy splits or merges the heads.
// q: (B, Q, H), k: (B, K, H) -> (B * heads, Q, K): scores[b*heads + h] = q_h k_h^T.
Tensor head_scores(const Tensor& q, const Tensor& k, int64_t heads);
// weights: (B * heads, Q, K), v: (B, K, H) -> (B, Q, H): out_h = weights[b*heads + h] v_h,
// the heads side by side as d2l's transpose_output leaves them.
Tensor head_pool(const Tensor& weights, const Tensor& v, int64_t heads);

// ---- softmax family, along the last axis ----
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
// scores: (B, Q, K). valid_lens (int64): undefined (no mask), (B) (one length
// per batch row) or (B, Q) (one per query). As in Dive into Deep Learning,
// masked scores are *replaced* by -1e6 before the softmax: masked keys get
// zero weight and zero gradient, and a row whose valid length is 0 gets
// uniform weights (not NaN). causal additionally masks every key after the
// query's own position (key j > query i). scale multiplies the scores
// before masking (attention passes 1/sqrt(d) here: one pass, not two).
Tensor masked_softmax(const Tensor& scores, const Tensor& valid_lens, bool causal = false, double scale = 1.0);

// ---- layers' building blocks ----
// weight: (V, D), ids (int64): (...) -> (..., D). Backward scatter-adds into weight.
Tensor embedding(const Tensor& weight, const Tensor& ids);
// Rotary position embedding: x: (..., T, d), d even -> same shape. Features
// (2j, 2j+1) of row t are rotated by the angle (offset + t) * base^(-2j/d).
// The gradient is rotated back by the same angle.
Tensor rope(const Tensor& x, int64_t offset = 0, double base = 10000.0);
// Normalises over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta,
// gamma and beta of shape (D). One fused kernel; mean and 1/std are kept for backward.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);
// Zeroes each element with probability p and scales the rest by 1/(1-p);
// the identity when !training or p == 0. p must be in [0, 1). Draws one
// number from gen per call; the mask is the same on any thread count.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);
Tensor dropout(const Tensor& x, double p, bool training);  // default generator
// Dropout in a data-parallel step (nn/data_parallel.hpp), where one batch
// runs as micro-batches on several threads. While a DropoutShard lives on a
// thread, dropout there takes x's leading axis as examples [first, first +
// count) of the whole batch (count must divide it), and its keys from
// `keys`, shared by the step's micro-batches: each micro-batch's k-th
// dropout uses the key the whole batch's k-th dropout would draw (the first
// micro-batch to get there draws it from the generator, the others read it).
// So every element flips the coin it would flip in the whole batch: the mask
// depends on the example, not on the thread or the split, and the generator
// ends where the whole batch's forward leaves it.
class DropoutKeys {
 public:
  uint64_t key(size_t k, Generator& gen);  // the k-th call's key

 private:
  std::mutex mu_;
  std::vector<std::pair<const Generator*, uint64_t>> keys_;
};
class DropoutShard {
 public:
  DropoutShard(DropoutKeys& keys, int64_t first, int64_t count);
  ~DropoutShard();
  DropoutShard(const DropoutShard&) = delete;
  DropoutShard& operator=(const DropoutShard&) = delete;

  DropoutKeys& keys;
  const int64_t first, count;
  size_t calls = 0;  // dropout calls so far on this shard

 private:
  DropoutShard* previous_;
};
// logits: (..., C), targets (int64): (...) -> mean over targets != ignore_index
// of -log softmax(logits)[target]. 0 when every target is ignored.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100);

}  // namespace sg
