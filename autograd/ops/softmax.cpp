// Softmax family along the last axis.
// Second order: the first-order backwards stay the fused kernels below (one
// pass per row). Under create_graph (recording on) each backward is the same
// formula written with recorded ops, from the output computed again from x
// with the recorded op itself (the saved output has no history): one more
// forward per create_graph pass, nothing more in first order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "autograd/engine.hpp"
#include "autograd/ops/softmax.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"
#include "core/kernels/sum.hpp"
#include "core/kernels/vecmath.hpp"

namespace sg {

// x: (..., n) -> y: (..., n). dx = y * (g - sum(g * y)) per row.
Tensor softmax(const Tensor& x) {
  Tensor out = kernel::softmax(x);
  return record("softmax", out, {x}, {out}, [x, v = x.version(), y = out.detach()](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      // BEGIN ASSIGNMENT 9: softmax's create_graph backward: s (g - sum(g s)) per row with recorded ops, s = softmax(x) from x (checked unchanged since the forward)
      check_version("softmax", "its input", x, v);  // the composed form reads x, which the op does not save
      const Tensor s = softmax(x), gs = mul(g, s);
      return {sub(gs, mul(s, sum(gs, -1, true)))};
      // END ASSIGNMENT 9
    }
    // BEGIN ASSIGNMENT 3: softmax's backward: dx = y * (g - sum(g * y)) per row
    const Tensor gy = kernel::mul(g, y);
    return {kernel::sub(gy, kernel::mul(y, kernel::sum(gy, -1, true)))};
    // END ASSIGNMENT 3
  });
}

// x: (..., n) -> x - logsumexp(x). dx = g - softmax(x) * sum(g) per row.
Tensor log_softmax(const Tensor& x) {
  Tensor out = kernel::log_softmax(x);
  return record("log_softmax", out, {x}, {out}, [x, v = x.version(), y = out.detach()](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      check_version("log_softmax", "its input", x, v);  // the composed form reads x, which the op does not save
      return {sub(g, mul(softmax(x), sum(g, -1, true)))};  // exp(log_softmax) = softmax
    }
    // BEGIN ASSIGNMENT 3: log_softmax's backward: dx = g - softmax(x) * sum(g) per row
    return {kernel::sub(g, kernel::mul(kernel::exp(y), kernel::sum(g, -1, true)))};
    // END ASSIGNMENT 3
  });
}

namespace {

// The valid length of every (b, q) row: from valid_lens (B) or (B, Q), with
// the causal limit applied; K (all keys) when there is no mask.
std::vector<int64_t> row_lengths(const Tensor& scores, const Tensor& valid_lens, bool causal) {
  // BEGIN ASSIGNMENT 3: row_lengths: the valid length of every (b, q) row from valid_lens (B) or (B, Q), causal limit applied
  const int64_t batch = scores.shape()[0], queries = scores.shape()[1], keys = scores.shape()[2];
  std::vector<int64_t> len(static_cast<size_t>(batch * queries), keys);
  if (valid_lens.defined()) {
    if (valid_lens.dtype() != int64)
      fail("masked_softmax: valid_lens must be int64, got ", valid_lens.dtype(), " ", valid_lens.shape());
    const bool per_batch = valid_lens.shape() == Shape{batch};
    if (!per_batch && valid_lens.shape() != Shape{batch, queries})
      fail("masked_softmax: valid_lens of shape ", valid_lens.shape(), " for scores of shape ",
           scores.shape(), ": expected (", batch, ") or (", batch, ", ", queries, ")");
    const int64_t* v = valid_lens.data<int64_t>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t q = 0; q < queries; ++q) {
        const int64_t n = per_batch ? v[b] : v[b * queries + q];
        if (n < 0 || n > keys)
          fail("masked_softmax: valid length ", n, " at batch ", b, (per_batch ? "" : detail::cat(", query ", q)),
               " is outside [0, ", keys, "] for scores of shape ", scores.shape());
        len[static_cast<size_t>(b * queries + q)] = n;
      }
  }
  if (causal)
    for (int64_t r = 0; r < batch * queries; ++r)
      len[static_cast<size_t>(r)] = std::min(len[static_cast<size_t>(r)], r % queries + 1);
  return len;
  // END ASSIGNMENT 3
}

}  // namespace

// op over 16 floats as a tree of vector halves (16 -> 8 -> 4 -> 2 -> 1): an
// in-order reduction, which is what g++ makes of `omp simd reduction` and of
// plain loops here, is a chain of 16 dependent operations, the slowest part
// of a 16-key row. The first step reads the two halves of the row straight
// into 8-float vectors, so nothing here is wider than 32 bytes: one register
// with AVX2 or AVX-512, two with SSE or NEON (GCC splits the vector), never
// a 64-byte vector that a narrower target would lower through memory.
template <class Op>
float reduce16(const float* x, Op op) {
  using V8 [[gnu::vector_size(32)]] = float;
  using V4 [[gnu::vector_size(16)]] = float;
  V8 lo8, hi8;
  std::memcpy(&lo8, x, sizeof lo8);
  std::memcpy(&hi8, x + 8, sizeof hi8);
  const V8 a = op(lo8, hi8);
  V4 lo4, hi4;
  std::memcpy(&lo4, &a, sizeof lo4);
  std::memcpy(&hi4, reinterpret_cast<const char*>(&a) + sizeof lo4, sizeof hi4);
  const V4 b = op(lo4, hi4);
  return op(op(b[0], b[1]), op(b[2], b[3]));
}
struct Add {
  template <class V>
  V operator()(V a, V b) const { return a + b; }
};
struct Max {
  template <class V>
  V operator()(V a, V b) const { return a > b ? a : b; }
};

// One row: o = softmax(s * in[0, n) followed by keys - n copies of -1e6).
// A function of its own, with restrict pointers and values: inside the
// OpenMP closure every captured variable is a load the compiler must repeat.
// kKeys > 0 fixes the row length at compile time (attention's 16 keys): the
// loops then become a few whole-vector instructions with no remainder code
// and short reductions, 2x faster than the general loop on 16-key rows.
template <int kKeys, class T>
void masked_softmax_row(const T* __restrict in, T* __restrict o, int64_t n, int64_t row_keys, T s) {
  // BEGIN ASSIGNMENT 3: masked_softmax_row: o = softmax(s * x) over the row's first n keys, the others replaced by -1e6
  const int64_t keys = kKeys > 0 ? kKeys : row_keys;
  // -1e6 is the replacement value; it takes part in max and sum like any
  // score. exp_flush, not exp_fast: a replaced key's exp(-1e6 - max) would
  // pass through subnormal floats on its way to 0, ~100 cycles a lane.
  T v[kKeys > 0 ? kKeys : 1];  // the fixed-width row's scaled, masked scores
  T m, total = 0;
  if constexpr (kKeys > 0) {
    static_assert(kKeys == 16 && std::is_same_v<T, float>, "the fixed path is one float vector");
#pragma omp simd
    for (int j = 0; j < kKeys; ++j) {
      const T x = in[j];  // read unconditionally (the row has kKeys values): a load
      v[j] = j < n ? s * x : T(-1e6);  // under a condition needs AVX-512's masks to vectorise
    }
    m = reduce16(v, Max{});
#pragma omp simd
    for (int j = 0; j < kKeys; ++j) o[j] = kernel::exp_flush(v[j] - m);
    total = reduce16(o, Add{});
  } else {
    m = n < keys ? T(-1e6) : s * in[0];
    // omp simd: lets the maximum run in vector lanes (any order gives the same maximum).
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < n; ++j) m = std::max(m, s * in[j]);
#pragma omp simd
    for (int64_t j = 0; j < keys; ++j) {
      const T x = in[j];  // unconditional load, as above
      o[j] = kernel::exp_flush((j < n ? s * x : T(-1e6)) - m);
    }
    total = kernel::sum_values(o, keys);  // pairwise, the same on every vector width
  }
  const T inv = T(1) / total;
#pragma omp simd
  for (int64_t j = 0; j < keys; ++j) o[j] *= inv;
  // END ASSIGNMENT 3
}

// One row of the gradient: d_j = s * y_j * (g_j - sum_k g_k y_k) for j < n,
// 0 past n (replaced scores get no gradient).
template <int kKeys, class T>
void masked_softmax_grad_row(const T* __restrict g, const T* __restrict y, T* __restrict d,
                             int64_t n, int64_t row_keys, T s) {
  // BEGIN ASSIGNMENT 3: masked_softmax_grad_row: d_j = s * y_j * (g_j - sum_k g_k y_k) on the first n keys, 0 past them
  const int64_t keys = kKeys > 0 ? kKeys : row_keys;
  T dot = 0;
  if constexpr (kKeys > 0) {
    T gy[kKeys];
#pragma omp simd
    for (int j = 0; j < kKeys; ++j) gy[j] = g[j] * y[j];
    dot = reduce16(gy, Add{});
  } else {
    dot = kernel::sum_values<T>(keys, [&](int64_t j) { return g[j] * y[j]; });
  }
#pragma omp simd
  for (int64_t j = 0; j < keys; ++j) {
    const T dj = s * y[j] * (g[j] - dot);  // unconditional loads, as in the forward
    d[j] = j < n ? dj : T(0);
  }
  // END ASSIGNMENT 3
}

// Runs row(r, keys-as-compile-time-constant-or-0) for every row, choosing
// the fixed-width row functions for 16 float keys (one AVX-512 vector, two
// AVX2 vectors, four SSE or NEON vectors: the loops over 16 keys compile to
// whole vectors of any of these widths with no remainder code).
template <class T, class Row>
void for_each_row(int64_t rows, int64_t keys, bool parallel, Row row) {
  if constexpr (std::is_same_v<T, float>) {
    if (keys == 16) {
      parallel_for(rows, parallel, [&](int64_t r) { row(r, std::integral_constant<int, 16>{}); });
      return;
    }
  }
  parallel_for(rows, parallel, [&](int64_t r) { row(r, std::integral_constant<int, 0>{}); });
}

// scores: (B, Q, K), valid_lens: none, (B) or (B, Q) -> weights: (B, Q, K).
// Row r keeps keys [0, len[r]) of scale * scores and replaces the rest by
// -1e6, then softmax. One pass each way: the scaling (attention's 1/sqrt(d))
// and the mask live inside the kernel instead of costing a tensor each.
// Backward: dx_j = scale * y_j (g_j - sum_k g_k y_k) on kept keys, 0 on replaced ones.
Tensor masked_softmax(const Tensor& scores, const Tensor& valid_lens, bool causal, double scale) {
  if (scores.dim() != 3) fail("masked_softmax: scores must be (batch, queries, keys), got ", scores.shape());
  if (!std::isfinite(scale)) fail("masked_softmax: scale must be finite, got ", scale);
  const auto len = row_lengths(scores, valid_lens, causal);
  const int64_t keys = scores.shape()[2], rows = scores.numel() / std::max<int64_t>(keys, 1);
  const bool parallel = rows >= kParallelRows && scores.numel() >= kParallelElementwise / 4;
  Tensor out = empty(scores.shape(), scores.dtype());
  visit_floating(scores, "masked_softmax", [&](auto tag) {
    using T = decltype(tag);
    const T* x = scores.data<T>();
    T* y = out.data<T>();
    const T s = static_cast<T>(scale);
    for_each_row<T>(rows, keys, parallel, [&](int64_t r, auto fixed) {
      masked_softmax_row<fixed()>(x + r * keys, y + r * keys, len[static_cast<size_t>(r)], keys, s);
    });
  });
  return record("masked_softmax", out, {scores}, {out},
                [y = out.detach(), len, keys, rows, scale, parallel, scores, v = scores.version(), valid_lens,
                 causal](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      check_version("masked_softmax", "its scores", scores, v);  // the composed form reads them; the op saves only its output
      // dx = scale * y * (g - sum(g y)) on the valid keys, 0 on the masked
      // ones (a row of valid length 0 has uniform y but no gradient).
      Tensor valid = zeros(g.shape(), g.dtype());
      visit_floating(g, "masked_softmax", [&](auto tag) {
        using T = decltype(tag);
        T* m = valid.data<T>();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < len[static_cast<size_t>(r)]; ++j) m[r * keys + j] = T(1);
      });
      const Tensor s = masked_softmax(scores, valid_lens, causal, scale);
      return {mul(affine(mul(s, sub(g, sum(mul(g, s), -1, true))), scale, 0), valid)};
    }
    Tensor dx = empty(g.shape(), g.dtype());
    visit_floating(g, "masked_softmax", [&](auto tag) {
      using T = decltype(tag);
      const T *gp = g.data<T>(), *yp = y.data<T>();
      T* dp = dx.data<T>();
      const T s = static_cast<T>(scale);
      for_each_row<T>(rows, keys, parallel, [&](int64_t r, auto fixed) {
        masked_softmax_grad_row<fixed()>(gp + r * keys, yp + r * keys, dp + r * keys,
                                         len[static_cast<size_t>(r)], keys, s);
      });
    });
    return {dx};
  });
}

}  // namespace sg
