// Attention's two per-head products, with every head read and written in
// place. Multi-head attention works on (B, T, heads * d) tensors whose head h
// is the column block h*d .. h*d+d-1 of every row. Splitting the heads into
// a (B * heads, T, d) tensor and merging them back is one copy each way, and
// each copy's backward is another: on the tiny encoder those four permutes
// took as long as the products themselves. Here each (b, h) product instead
// reads its head through a row stride of heads * d (kernel::gemm_grid).
//
//   head_scores(q, k, heads) == matmul(split(q), split(k), false, true)
//   head_pool(w, v, heads)   == merge(matmul(w, split(v)))
//
// with split: (B, T, heads * d) -> (B * heads, T, d) and merge its inverse.
//
// Second order: each product's backward is two products of the same kinds,
//   head_scores: dq = head_pool(g, k),   dk = head_pool(g^T, q)
//   head_pool:   dw = head_scores(g, v), dv = head_pool(w^T, g)
// (^T swaps the last two axes). First order runs them with the strided
// GEMMs directly; under create_graph (recording on) it calls the recorded
// ops as written above, so every order works.
#include "autograd/engine.hpp"
#include "autograd/ops/head_products.hpp"
#include "autograd/ops/shape.hpp"
#include "core/kernels/gemm.hpp"

#include <algorithm>

namespace sg {
namespace {

// Where the (rows, cols) matrix of batch row b, head h lives.
struct HeadLayout {
  kernel::GridStrides strides;
  int64_t ld;
};
// (B, rows, heads * cols): head h is a column block of every row.
HeadLayout by_columns(int64_t rows, int64_t cols, int64_t heads) {
  return {{rows * heads * cols, cols}, heads * cols};
}
// (B * heads, rows, cols): one whole matrix per head.
HeadLayout stacked(int64_t rows, int64_t cols, int64_t heads) {
  return {{heads * rows * cols, rows * cols}, std::max<int64_t>(1, cols)};  // ld >= 1, as gemm asks
}

// c[b, h] = op(a[b, h]) op(b[b, h]) for every batch row and head.
// c: (m, n), op(a): (m, k), op(b): (k, n) for each (b, h).
void head_products(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const Tensor& a,
                   HeadLayout la, const Tensor& b, HeadLayout lb, Tensor& c, HeadLayout lc,
                   int64_t batch, int64_t heads) {
  visit_floating(a, "head products", [&](auto tag) {
    using T = decltype(tag);
    kernel::gemm_grid<T>(ta, tb, m, n, k, T(1), a.data<T>(), la.ld, la.strides, b.data<T>(), lb.ld,
                       lb.strides, T(0), c.data<T>(), lc.ld, lc.strides, batch, heads);
  });
}

// The checks both ops share: 3-D float tensors of one dtype, hidden size a
// multiple of heads.
void check_heads(const char* op, const Tensor& a, const char* a_name, const Tensor& b,
                 const char* b_name, int64_t heads) {
  if (heads <= 0) fail(op, ": heads must be positive, got ", heads);
  if (a.dim() != 3 || b.dim() != 3)
    fail(op, ": ", a_name, " ", a.shape(), " and ", b_name, " ", b.shape(), " must be 3-D");
  if (!is_floating(a.dtype())) fail(op, ": needs float32 or float64, got ", a.dtype(), " ", a_name, " ", a.shape());
  check_same_dtype(a, b, op);
}

}  // namespace

// q: (B, Q, heads * d), k: (B, K, heads * d) -> scores (B * heads, Q, K),
// scores[b * heads + h] = q_h k_h^T with q_h = q[b, :, h*d : h*d+d].
// Backward, with g_bh = dL/dscores[b * heads + h]:
//   dq_h = g_bh k_h     dk_h = g_bh^T q_h
Tensor head_scores(const Tensor& q, const Tensor& k, int64_t heads) {
  check_heads("head_scores", q, "queries", k, "keys", heads);
  const int64_t batch = q.shape()[0], nq = q.shape()[1], nk = k.shape()[1], hidden = q.shape()[2];
  if (k.shape()[0] != batch || k.shape()[2] != hidden || hidden == 0 || hidden % heads != 0)
    fail("head_scores: queries ", q.shape(), " and keys ", k.shape(),
         " must be (B, Q, H) and (B, K, H) with H a positive multiple of heads ", heads);
  const int64_t d = hidden / heads;
  Tensor scores = empty({batch * heads, nq, nk}, q.dtype());
  head_products(false, true, nq, nk, d, q, by_columns(nq, d, heads), k, by_columns(nk, d, heads),
                scores, stacked(nq, nk, heads), batch, heads);
  return record("head_scores", scores, {q, k}, {q.requires_grad() ? k : Tensor(), k.requires_grad() ? q : Tensor()},
                [q, k, heads](const Tensor& g) -> Grads {
    if (grad_enabled())
      return {q.requires_grad() ? head_pool(g, k, heads) : Tensor(),
              k.requires_grad() ? head_pool(transpose(g, 1, 2), q, heads) : Tensor()};
    const int64_t batch = q.shape()[0], nq = q.shape()[1], nk = k.shape()[1];
    const int64_t d = q.shape()[2] / heads;
    Tensor dq, dk;
    if (q.requires_grad()) {
      dq = empty(q.shape(), q.dtype());
      head_products(false, false, nq, d, nk, g, stacked(nq, nk, heads), k, by_columns(nk, d, heads),
                    dq, by_columns(nq, d, heads), batch, heads);
    }
    if (k.requires_grad()) {
      dk = empty(k.shape(), k.dtype());
      head_products(true, false, nk, d, nq, g, stacked(nq, nk, heads), q, by_columns(nq, d, heads),
                    dk, by_columns(nk, d, heads), batch, heads);
    }
    return {dq, dk};
  });
}

// weights: (B * heads, Q, K), v: (B, K, heads * d) -> (B, Q, heads * d),
// out[b, :, h*d : h*d+d] = weights[b * heads + h] v_h: each head's weighted
// sum of values, written straight into its columns (the heads concatenated).
// Backward, with g_h = dL/dout[b, :, h*d : h*d+d]:
//   dweights_bh = g_h v_h^T     dv_h = weights_bh^T g_h
Tensor head_pool(const Tensor& weights, const Tensor& v, int64_t heads) {
  check_heads("head_pool", weights, "weights", v, "values", heads);
  const int64_t nq = weights.shape()[1], nk = weights.shape()[2];
  const int64_t batch = v.shape()[0], hidden = v.shape()[2];
  if (hidden == 0 || hidden % heads != 0 || weights.shape()[0] != batch * heads || v.shape()[1] != nk)
    fail("head_pool: weights ", weights.shape(), " and values ", v.shape(),
         " must be (B * heads, Q, K) and (B, K, H) with H a positive multiple of heads ", heads);
  const int64_t d = hidden / heads;
  Tensor out = empty({batch, nq, hidden}, v.dtype());
  head_products(false, false, nq, d, nk, weights, stacked(nq, nk, heads), v,
                by_columns(nk, d, heads), out, by_columns(nq, d, heads), batch, heads);
  return record("head_pool", out, {weights, v},
                {weights.requires_grad() ? v : Tensor(), v.requires_grad() ? weights : Tensor()}, [weights, v, heads](const Tensor& g) -> Grads {
    if (grad_enabled())
      return {weights.requires_grad() ? head_scores(g, v, heads) : Tensor(),
              v.requires_grad() ? head_pool(transpose(weights, 1, 2), g, heads) : Tensor()};
    const int64_t nq = weights.shape()[1], nk = weights.shape()[2], batch = v.shape()[0];
    const int64_t d = v.shape()[2] / heads;
    Tensor dw, dv;
    if (weights.requires_grad()) {
      dw = empty(weights.shape(), weights.dtype());
      head_products(false, true, nq, nk, d, g, by_columns(nq, d, heads), v,
                    by_columns(nk, d, heads), dw, stacked(nq, nk, heads), batch, heads);
    }
    if (v.requires_grad()) {
      dv = empty(v.shape(), v.dtype());
      head_products(true, false, nk, d, nq, weights, stacked(nq, nk, heads), g,
                    by_columns(nq, d, heads), dv, by_columns(nk, d, heads), batch, heads);
    }
    return {dw, dv};
  });
}

}  // namespace sg
