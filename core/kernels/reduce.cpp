// Reductions. Every reduction along an axis views x as (outer, n, inner),
// where n is the reduced axis, outer the axes before it and inner those after,
// and writes out: (outer, inner). Each output element is accumulated by one
// thread in a fixed order, so results do not depend on the thread count.
// Sums are pairwise (core/kernels/sum.hpp), not one running total per output.
#include <algorithm>
#include <cmath>

#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"
#include "core/kernels/sum.hpp"

namespace sg::kernel {
namespace {

struct Split {
  int64_t outer = 1, n = 1, inner = 1;
};

Split split_at(const Shape& s, int64_t axis_begin, int64_t axis_end) {
  Split r;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i)
    (i < axis_begin ? r.outer : i < axis_end ? r.n : r.inner) *= s[static_cast<size_t>(i)];
  return r;
}

Shape reduced_shape(const Shape& s, int64_t axis, bool keepdim) {
  Shape out = s;
  if (keepdim)
    out[static_cast<size_t>(axis)] = 1;
  else
    out.erase(out.begin() + axis);
  return out;
}

// x: (outer, n, inner) -> out: (outer, inner), out = sum over n.
template <class T>
void sum_kernel(const T* x, T* out, Split s) {
  const int64_t work = s.outer * s.n * s.inner;
  if (s.inner == 1) {
    parallel_for(s.outer, work >= kParallelElementwise, [&](int64_t o) { out[o] = sum_values(x + o * s.n, s.n); });
    return;
  }
  // Blocks of the inner axis, so that few long columns (a bias gradient:
  // outer 1, n = B*T, inner = C) still spread over threads; each block's
  // columns are summed over n by sum_rows (leaves of rows, then pairwise).
  const int64_t block = std::max<int64_t>(1, std::min<int64_t>(s.inner, 512));  // inner may be 0
  const int64_t blocks = (s.inner + block - 1) / block;
  parallel_for(s.outer * blocks, work >= kParallelElementwise, [&](int64_t piece) {
    const int64_t o = piece / blocks, begin = (piece % blocks) * block;
    const int64_t width = std::min(s.inner, begin + block) - begin;
    const T* base = x + o * s.n * s.inner + begin;
    sum_rows(s.n, width, out + o * s.inner + begin, [&](int64_t j, T* __restrict acc) {
      const T* __restrict src = base + j * s.inner;
      for (int64_t i = 0; i < width; ++i) acc[i] += src[i];
    });
  });
}

// x: (outer, n, inner) -> values: (outer, inner) and/or indices: (outer, inner).
// The first maximum wins ties; a NaN counts as the maximum, as in PyTorch.
template <class T>
void max_kernel(const T* x, T* values, int64_t* indices, Split s) {
  const int64_t work = s.outer * s.n * s.inner;
  parallel_for(s.outer * s.inner, work >= kParallelElementwise, [&](int64_t piece) {
    const int64_t o = piece / s.inner, i = piece % s.inner;
    const T* src = x + o * s.n * s.inner + i;
    T best = src[0];
    int64_t arg = 0;
    for (int64_t j = 1; j < s.n && best == best; ++j) {
      const T v = src[j * s.inner];
      if (v > best || v != v) best = v, arg = j;
    }
    if (values) values[piece] = best;
    if (indices) indices[piece] = arg;
  });
}

Tensor sum_range(const Tensor& x, int64_t begin, int64_t end, const Shape& out_shape) {
  Tensor out = empty(out_shape, x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    sum_kernel<T>(x.data<T>(), out.data<T>(), split_at(x.shape(), begin, end));
  });
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, int64_t axis, bool keepdim) {
  axis = normalize_axis(axis, x.shape(), "sum");
  return sum_range(x, axis, axis + 1, reduced_shape(x.shape(), axis, keepdim));
}

Tensor mean(const Tensor& x, int64_t axis, bool keepdim) {
  axis = normalize_axis(axis, x.shape(), "mean");
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  if (n == 0) fail("mean: axis ", axis, " of shape ", x.shape(), " is empty");
  visit_floating(x, "mean", [](auto) {});
  Tensor s = sum(x, axis, keepdim);
  scale_(s, 1.0 / static_cast<double>(n));
  return s;
}

namespace {
Tensor max_or_argmax(const Tensor& x, int64_t axis, bool keepdim, bool want_index, const char* op) {
  axis = normalize_axis(axis, x.shape(), op);
  if (x.shape()[static_cast<size_t>(axis)] == 0)
    fail(op, ": axis ", axis, " of shape ", x.shape(), " is empty");
  const Shape out_shape = reduced_shape(x.shape(), axis, keepdim);
  Tensor out = empty(out_shape, want_index ? int64 : x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Split s = split_at(x.shape(), axis, axis + 1);
    if (want_index)
      max_kernel<T>(x.data<T>(), nullptr, out.data<int64_t>(), s);
    else
      max_kernel<T>(x.data<T>(), out.data<T>(), nullptr, s);
  });
  return out;
}
}  // namespace

Tensor max(const Tensor& x, int64_t axis, bool keepdim) {
  return max_or_argmax(x, axis, keepdim, false, "max");
}
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
  return max_or_argmax(x, axis, keepdim, true, "argmax");
}

Tensor sum(const Tensor& x) {
  // Fixed-size blocks summed pairwise in parallel, then the block sums in
  // order in a wider type: the same answer on any thread count.
  constexpr int64_t kBlock = 4096;
  const int64_t n = x.numel(), blocks = std::max<int64_t>(1, (n + kBlock - 1) / kBlock);
  Tensor out = empty({}, x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
    const T* p = x.data<T>();
    std::vector<Acc> partial(static_cast<size_t>(blocks), Acc{0});
    parallel_for(blocks, n >= kParallelElementwise, [&](int64_t b) {
      const int64_t begin = b * kBlock;
      partial[static_cast<size_t>(b)] = sum_values(p + begin, std::min(n, begin + kBlock) - begin);
    });
    Acc total = 0;
    for (Acc v : partial) total += v;
    *out.data<T>() = static_cast<T>(total);
  });
  return out;
}

Tensor mean(const Tensor& x) {
  visit_floating(x, "mean", [](auto) {});
  if (x.numel() == 0) fail("mean: tensor of shape ", x.shape(), " is empty");
  Tensor s = sum(x);
  scale_(s, 1.0 / static_cast<double>(x.numel()));
  return s;
}

Tensor max(const Tensor& x) {
  if (x.numel() == 0) fail("max: tensor of shape ", x.shape(), " is empty");
  return max(reshape(x, {x.numel()}), 0, false);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  // BEGIN ASSIGNMENT 1: kernel::sum_to: sum x over the axes it was broadcast along, down to `shape`
  if (x.shape() == shape) return x;
  if (shape.size() > x.shape().size() || broadcast_shapes(shape, x.shape(), "sum_to") != x.shape())
    fail("sum_to: cannot sum a tensor of shape ", x.shape(), " down to ", shape);
  // Target aligned at the right; reduce each run of neighbouring axes where
  // the target has size 1 but x does not, outermost run first.
  const auto rank = static_cast<int64_t>(x.shape().size());
  const auto lead = rank - static_cast<int64_t>(shape.size());
  auto reduced = [&](int64_t i) {
    return x.shape()[static_cast<size_t>(i)] != 1 && (i < lead || shape[static_cast<size_t>(i - lead)] == 1);
  };
  Tensor cur = x;
  for (int64_t i = 0; i < rank;) {
    if (!reduced(i)) { ++i; continue; }
    int64_t j = i;
    while (j < rank && (reduced(j) || cur.shape()[static_cast<size_t>(j)] == 1)) ++j;
    Shape next = cur.shape();
    for (int64_t k = i; k < j; ++k) next[static_cast<size_t>(k)] = 1;
    cur = sum_range(cur, i, j, next);
    i = j;
  }
  return reshape(cur, shape);
  // END ASSIGNMENT 1
}

}  // namespace sg::kernel
