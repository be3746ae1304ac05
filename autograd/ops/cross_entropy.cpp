// Cross-entropy over logits through a fused log-softmax: never forms
// softmax probabilities that could underflow before the log.
// Second order: first order keeps the fused backward loop. Under create_graph
// (recording on) the gradient (softmax(logits) - onehot(target)) g / M on the
// counted rows is written with recorded ops (softmax computed again from the
// logits; the one-hot and the row mask are constants).
#include <cmath>

#include "autograd/engine.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/softmax.hpp"
#include "core/kernels.hpp"

namespace sg {

// logits: (..., C) viewed as (N, C); targets: (...) int64 viewed as (N).
// loss = -(1/M) sum over the M rows with target != ignore_index of
//        log_softmax(logits[n])[target[n]]
// Backward: dlogits[n] = (softmax(logits[n]) - onehot(target[n])) * g / M,
// and 0 on ignored rows.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
  if (logits.dim() < 1) fail("cross_entropy: logits must have a class axis, got ", logits.shape());
  if (!is_floating(logits.dtype()))
    fail("cross_entropy: logits must be float32 or float64, got ", logits.dtype(), " ", logits.shape());
  if (targets.dtype() != int64)
    fail("cross_entropy: targets must be int64, got ", targets.dtype(), " ", targets.shape());
  const Shape expected(logits.shape().begin(), logits.shape().end() - 1);
  if (targets.shape() != expected)
    fail("cross_entropy: targets of shape ", targets.shape(), " for logits of shape ",
         logits.shape(), ": expected ", expected);
  const int64_t classes = logits.shape().back(), rows = targets.numel();
  const int64_t* t = targets.data<int64_t>();
  int64_t counted = 0;
  for (int64_t n = 0; n < rows; ++n) {
    if (t[n] == ignore_index) continue;
    if (t[n] < 0 || t[n] >= classes)
      fail("cross_entropy: target ", t[n], " at position ", n, " is outside [0, ", classes,
           ") for logits of shape ", logits.shape(), " (ignore_index is ", ignore_index, ")");
    ++counted;
  }
  const Tensor logp = kernel::log_softmax(logits);  // (N, C), kept for backward
  Tensor loss = empty({}, logits.dtype());
  visit_floating(logits, "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T* lp = logp.data<T>();
    double total = 0;
    for (int64_t n = 0; n < rows; ++n)
      if (t[n] != ignore_index) total -= lp[n * classes + t[n]];
    *loss.data<T>() = static_cast<T>(counted ? total / static_cast<double>(counted) : 0.0);
  });
  return record("cross_entropy", loss, {logits, targets}, {targets},
                [logp, targets, ignore_index, counted, logits, v = logits.version()](const Tensor& g) -> Grads {
    if (grad_enabled()) {
      check_version("cross_entropy", "its logits", logits, v);  // the composed form reads them; the op saves only targets
      Tensor onehot = zeros(logp.shape(), logp.dtype()), rowmask = zeros(logp.shape(), logp.dtype());
      const int64_t classes = logp.shape().back(), rows = targets.numel();
      const int64_t* t = targets.data<int64_t>();
      visit_floating(logp.dtype(), "cross_entropy", [&](auto tag) {
        using T = decltype(tag);
        T *oh = onehot.data<T>(), *rm = rowmask.data<T>();
        for (int64_t n = 0; n < rows; ++n) {
          if (t[n] == ignore_index) continue;
          oh[n * classes + t[n]] = T(1);
          for (int64_t c = 0; c < classes; ++c) rm[n * classes + c] = T(1);
        }
      });
      const Tensor scale = counted ? affine(g, 1.0 / static_cast<double>(counted), 0) : zeros_like(g);
      return {mul(mul(sub(softmax(logits), onehot), rowmask), scale), Tensor()};
    }
    Tensor d = empty(logp.shape(), logp.dtype());
    const int64_t classes = logp.shape().back(), rows = targets.numel();
    const int64_t* t = targets.data<int64_t>();
    visit_floating(logp.dtype(), "cross_entropy", [&](auto tag) {
      using T = decltype(tag);
      const T* lp = logp.data<T>();
      T* dp = d.data<T>();
      const T scale = counted ? g.item<T>() / static_cast<T>(counted) : T(0);
      for (int64_t n = 0; n < rows; ++n) {
        const bool ignored = t[n] == ignore_index;
        for (int64_t c = 0; c < classes; ++c)
          dp[n * classes + c] = ignored ? T(0) : (std::exp(lp[n * classes + c]) - (c == t[n])) * scale;
      }
    });
    return {d, Tensor()};
  });
}

}  // namespace sg
