// Softmax and log-softmax along the last axis, numerically stable: the row's
// maximum is subtracted before exp, so no exp overflows.
#include <algorithm>
#include <cmath>

#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"
#include "core/kernels/sum.hpp"
#include "core/kernels/vecmath.hpp"

namespace sg::kernel {
namespace {

// x: (rows, n) -> out: (rows, n), each row independently.
template <bool kLog>
Tensor softmax_rows(const Tensor& x, const char* op) {
  if (x.dim() == 0) fail(op, ": needs at least one axis, got a scalar");
  Tensor out = empty(x.shape(), x.dtype());
  const int64_t n = x.shape().back();
  if (x.numel() == 0) return out;
  const int64_t rows = x.numel() / n;
  visit_floating(x, op, [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(rows, rows >= kParallelRows && x.numel() >= kParallelElementwise / 4, [&](int64_t r) {
      const T* in = src + r * n;
      T* o = dst + r * n;
      // omp simd: lets the maximum run in vector lanes (any order gives the same maximum).
      T m = in[0];
#pragma omp simd reduction(max : m)
      for (int64_t i = 1; i < n; ++i) m = std::max(m, in[i]);
      // The exps first, then their pairwise sum (core/kernels/sum.hpp);
      // log-softmax overwrites them below.
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = exp_flush(in[i] - m);
      const T total = sum_values(o, n);
      if constexpr (kLog) {
        // (x - m) - log(total), not x - (m + log(total)): with large logits
        // m + log(total) would round away log(total)'s low bits.
        const T log_total = std::log(total);
        for (int64_t i = 0; i < n; ++i) o[i] = (in[i] - m) - log_total;
      } else {
        const T inv = T(1) / total;
        for (int64_t i = 0; i < n; ++i) o[i] *= inv;
      }
    });
  });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x) { return softmax_rows<false>(x, "softmax"); }
Tensor log_softmax(const Tensor& x) { return softmax_rows<true>(x, "log_softmax"); }

}  // namespace sg::kernel
