// Embedding lookup: a row gather forward, a scatter-add backward.
#include "autograd/engine.hpp"
#include "autograd/ops/embedding.hpp"
#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"

#include <cstring>

namespace sg {

// weight: (V, D), ids: (...) int64 -> out: (..., D), out[i] = weight[ids[i]].
// Backward: dweight[ids[i]] += g[i] (a row used twice gets both gradients).
Tensor embedding(const Tensor& weight, const Tensor& ids) {
  if (weight.dim() != 2) fail("embedding: weight must be (vocab, dim), got ", weight.shape());
  if (ids.dtype() != int64) fail("embedding: ids must be int64, got ", ids.dtype(), " ", ids.shape());
  const int64_t vocab = weight.shape()[0], dim = weight.shape()[1], n = ids.numel();
  const int64_t* id = ids.data<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    if (id[i] < 0 || id[i] >= vocab)
      fail("embedding: id ", id[i], " at position ", i, " of ids ", ids.shape(),
           " is outside the vocabulary [0, ", vocab, ") of weight ", weight.shape());
  Shape out_shape = ids.shape();
  out_shape.push_back(dim);
  Tensor out = empty(out_shape, weight.dtype());
  const size_t row = static_cast<size_t>(dim) * dtype_size(weight.dtype());
  const auto* src = static_cast<const char*>(weight.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  parallel_for(n, n * dim >= kParallelElementwise, [&](int64_t i) {
    std::memcpy(dst + static_cast<size_t>(i) * row, src + static_cast<size_t>(id[i]) * row, row);
  });

  return record("embedding", out, {weight, ids}, {ids}, [weight, ids](const Tensor& g) -> Grads {
    Tensor dw = zeros_like(weight);
    const int64_t d = weight.shape()[1], count = ids.numel();
    const int64_t* idx = ids.data<int64_t>();
    visit_floating(weight.dtype(), "embedding", [&](auto tag) {
      using T = decltype(tag);
      const T* gp = g.data<T>();
      T* w = dw.data<T>();
      // Serial over ids: two ids may name the same row.
      for (int64_t i = 0; i < count; ++i)
        for (int64_t j = 0; j < d; ++j) w[idx[i] * d + j] += gp[i * d + j];
    });
    return {dw, Tensor()};
  });
}

}  // namespace sg
