// Elementwise binary kernels with NumPy broadcasting.
//
// The plan: align both shapes at the right, give each operand a stride of 0
// along every axis it broadcasts over, then merge neighbouring axes that are
// contiguous for both operands. What is left is usually one or two axes, and
// the innermost one runs as a tight loop with unit or zero strides, which the
// compiler vectorises: same shapes become one flat loop, a bias (C) added to
// (N, C) becomes N rows of C.
#include <algorithm>

#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"

namespace sg::kernel {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) fail(op, ": cannot broadcast ", a, " with ", b);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

struct Plan {
  // Merged axes, outermost first; out is contiguous over `dims`.
  std::vector<int64_t> dims, sa, sb;
};

// Strides (in elements) of a contiguous `shape` seen through `out`'s axes,
// 0 where `shape` broadcasts.
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    const size_t src = shape.size() - 1 - k, dst = out.size() - 1 - k;
    s[dst] = shape[src] == 1 ? 0 : stride;
    stride *= shape[src];
  }
  return s;
}

Plan make_plan(const Shape& a, const Shape& b, const Shape& out) {
  const auto sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  Plan p;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 1) continue;  // size-1 axes move nothing
    if (!p.dims.empty() && p.sa.back() == sa[i] * out[i] && p.sb.back() == sb[i] * out[i]) {
      // Axis i continues the previous one for both operands: merge.
      p.dims.back() *= out[i];
      p.sa.back() = sa[i];
      p.sb.back() = sb[i];
    } else {
      p.dims.push_back(out[i]);
      p.sa.push_back(sa[i]);
      p.sb.push_back(sb[i]);
    }
  }
  if (p.dims.empty()) p.dims = {1}, p.sa = {0}, p.sb = {0};
  return p;
}

// out[...] = f(a[...], b[...]) over the plan. `o` may alias `a` (in place).
// Work is split into pieces of whole rows of the innermost axis, or, when
// there are few long rows (same-shape operands merge into one row), into
// blocks of a row, so big tensors use every thread either way.
template <class T, class R, class F>
void run_plan(const Plan& p, const T* a, const T* b, R* o, F f) {
  const int64_t inner = p.dims.back(), ia = p.sa.back(), ib = p.sb.back();
  const int64_t total = numel(p.dims);
  if (total == 0) return;  // an empty output; inner may be 0 as well
  const int64_t rows = total / inner;
  const int64_t outer_axes = static_cast<int64_t>(p.dims.size()) - 1;
  const int64_t block = rows >= kParallelRows ? inner : std::min<int64_t>(inner, 1 << 14);
  const int64_t blocks_per_row = (inner + block - 1) / block;
  parallel_for(rows * blocks_per_row, total >= kParallelElementwise, [&](int64_t piece) {
    const int64_t r = piece / blocks_per_row;
    const int64_t begin = (piece % blocks_per_row) * block, end = std::min(inner, begin + block);
    int64_t oa = 0, ob = 0, rem = r;
    for (int64_t d = outer_axes - 1; d >= 0; --d) {
      const int64_t i = rem % p.dims[d];
      rem /= p.dims[d];
      oa += i * p.sa[d];
      ob += i * p.sb[d];
    }
    const T* x = a + oa;
    const T* y = b + ob;
    R* z = o + r * inner;
    if (ia == 1 && ib == 1)
      for (int64_t i = begin; i < end; ++i) z[i] = f(x[i], y[i]);
    else if (ia == 1 && ib == 0)
      for (int64_t i = begin; i < end; ++i) z[i] = f(x[i], y[0]);
    else if (ia == 0 && ib == 1)
      for (int64_t i = begin; i < end; ++i) z[i] = f(x[0], y[i]);
    else
      for (int64_t i = begin; i < end; ++i) z[i] = f(x[i * ia], y[i * ib]);
  });
}

template <bool kIntsOk, class F>
Tensor binary(const Tensor& a, const Tensor& b, const char* op, F f) {
  check_same_dtype(a, b, op);
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), op);
  const Plan plan = make_plan(a.shape(), b.shape(), out_shape);
  Tensor out = empty(out_shape, a.dtype());
  auto run = [&](auto tag) {
    using T = decltype(tag);
    run_plan(plan, a.data<T>(), b.data<T>(), out.data<T>(),
             [&](T x, T y) { return static_cast<T>(f(x, y)); });
  };
  if constexpr (kIntsOk)
    visit_dtype(a.dtype(), run);
  else
    visit_floating(a, op, run);  // same dtype as b, checked above
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary<true>(a, b, "add", [](auto x, auto y) { return x + y; }); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary<true>(a, b, "sub", [](auto x, auto y) { return x - y; }); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary<true>(a, b, "mul", [](auto x, auto y) { return x * y; }); }
Tensor div(const Tensor& a, const Tensor& b) { return binary<false>(a, b, "div", [](auto x, auto y) { return x / y; }); }
Tensor maximum(const Tensor& a, const Tensor& b) {
  // NaN-propagating like NumPy's maximum: a NaN on either side wins.
  return binary<true>(a, b, "maximum", [](auto x, auto y) { return (x > y || x != x) ? x : y; });
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary<true>(a, b, "minimum", [](auto x, auto y) { return (x < y || x != x) ? x : y; });
}
Tensor eq(const Tensor& a, const Tensor& b) { return binary<true>(a, b, "eq", [](auto x, auto y) { return x == y; }); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary<true>(a, b, "ne", [](auto x, auto y) { return x != y; }); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary<true>(a, b, "lt", [](auto x, auto y) { return x < y; }); }
Tensor le(const Tensor& a, const Tensor& b) { return binary<true>(a, b, "le", [](auto x, auto y) { return x <= y; }); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary<true>(a, b, "gt", [](auto x, auto y) { return x > y; }); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary<true>(a, b, "ge", [](auto x, auto y) { return x >= y; }); }

void add_(Tensor& dst, const Tensor& src) {
  check_same_dtype(dst, src, "add_");
  if (broadcast_shapes(dst.shape(), src.shape(), "add_") != dst.shape())
    fail("add_: cannot add a tensor of shape ", src.shape(), " into one of shape ", dst.shape());
  const Plan plan = make_plan(dst.shape(), src.shape(), dst.shape());
  visit_dtype(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    run_plan(plan, dst.data<T>(), src.data<T>(), dst.data<T>(), [](T x, T y) { return x + y; });
  });
  dst.bump_version();
}

}  // namespace sg::kernel

namespace sg::kernel {
Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (broadcast_shapes(x.shape(), shape, "broadcast_to") != shape)
    fail("broadcast_to: cannot broadcast ", x.shape(), " to ", shape);
  const Plan plan = make_plan(x.shape(), x.shape(), shape);
  Tensor out = empty(shape, x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    run_plan(plan, x.data<T>(), x.data<T>(), out.data<T>(), [](T v, T) { return v; });
  });
  return out;
}
}  // namespace sg::kernel
