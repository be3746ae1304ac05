// Embedding lookup: a row gather forward, a scatter-add backward.
// Second order: the backward is linear in g alone. First order runs the
// scatter loop; under create_graph (recording on) the same loop is a
// recorded op (scatter_rows, below) whose backward is the gather,
// embedding() itself, so every order works.
#include "autograd/engine.hpp"
#include "autograd/ops/embedding.hpp"
#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"

#include <cstring>

namespace sg {
namespace {

// g: (..., D) -> (V, D): row ids[i] gets g[i] added (a row used twice gets both).
Tensor scatter_loop(const Tensor& g, const Tensor& ids, const Shape& weight_shape) {
  Tensor dw = zeros(weight_shape, g.dtype());
  const int64_t d = weight_shape[1], count = ids.numel();
  const int64_t* idx = ids.data<int64_t>();
  visit_floating(g.dtype(), "embedding", [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    T* w = dw.data<T>();
    // Serial over ids: two ids may name the same row.
    for (int64_t i = 0; i < count; ++i)
      for (int64_t j = 0; j < d; ++j) w[idx[i] * d + j] += gp[i * d + j];
  });
  return dw;
}

// scatter_loop as a recorded op, for create_graph.
Tensor scatter_rows(const Tensor& g, const Tensor& ids, const Shape& weight_shape) {
  return record("embedding_backward", scatter_loop(g, ids, weight_shape), {g, ids}, {ids}, [ids](const Tensor& gg) -> Grads {
    return {embedding(gg, ids), Tensor()};
  });
}

}  // namespace

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
    if (grad_enabled()) return {scatter_rows(g, ids, weight.shape()), Tensor()};
    return {scatter_loop(g, ids, weight.shape()), Tensor()};
  });
}

}  // namespace sg
