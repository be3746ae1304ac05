// Dropout as a composition: x times a constant mask of 0 and 1/(1-p). The
// mask has no gradient of its own, so mul's backward does all the work.
#include "autograd/ops.hpp"
#include "core/ops.hpp"

namespace sg {

// x: any shape -> same shape.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!(p >= 0 && p < 1)) fail("dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0) return x;
  Tensor mask = empty(x.shape(), x.dtype());
  visit_floating(x, "dropout", [&](auto tag) {
    using T = decltype(tag);
    T* m = mask.data<T>();
    const T keep = static_cast<T>(1.0 / (1.0 - p));
    // Drawn in order on one thread: the same seed gives the same mask on any thread count.
    for (int64_t i = 0; i < mask.numel(); ++i) m[i] = gen.uniform() < p ? T(0) : keep;
  });
  return mul(x, mask);
}

Tensor dropout(const Tensor& x, double p, bool training) {
  return dropout(x, p, training, default_generator());
}

}  // namespace sg
