// Layout ops: views (reshape, leading-axis slices) and copies (permute,
// inner-axis slices, concat, dtype conversion).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"

namespace sg::kernel {
namespace {

Tensor view(const Tensor& x, Shape shape, int64_t extra_offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = std::move(shape);
  impl->dtype = x.dtype();
  impl->storage = x.impl()->storage;
  impl->offset = x.impl()->offset + extra_offset;
  return Tensor(std::move(impl));
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) fail("reshape: more than one -1 in ", shape, " (from ", x.shape(), ")");
      infer = static_cast<int64_t>(i);
    } else if (out[i] < 0) {
      fail("reshape: negative size in ", shape, " (from ", x.shape(), ")");
    } else if (__builtin_mul_overflow(known, out[i], &known)) {
      fail("reshape: shape ", shape, " has more than 2^63 - 1 elements (from ", x.shape(), ")");
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      fail("reshape: cannot reshape ", x.shape(), " (", x.numel(), " elements) into ", shape);
    out[static_cast<size_t>(infer)] = x.numel() / known;
  }
  if (numel(out) != x.numel())
    fail("reshape: cannot reshape ", x.shape(), " (", x.numel(), " elements) into ", shape, " (",
         numel(out), " elements)");
  return view(x, out, 0);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  const Shape& in = x.shape();
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm(dims.size());
  std::vector<bool> seen(in.size(), false);
  if (static_cast<int64_t>(dims.size()) != rank)
    fail("permute: ", dims.size(), " axes given for a tensor of shape ", in);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = normalize_axis(dims[i], in, "permute");
    if (seen[static_cast<size_t>(d)]) fail("permute: axis ", dims[i], " repeated in ", Shape(dims), " for shape ", in);
    seen[static_cast<size_t>(d)] = true;
    perm[i] = d;
  }
  // out axis i walks in's axis perm[i]; in_strides are the contiguous strides of x.
  std::vector<int64_t> in_strides(in.size(), 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    in_strides[static_cast<size_t>(i)] = in_strides[static_cast<size_t>(i + 1)] * in[static_cast<size_t>(i + 1)];
  Shape out_shape(in.size());
  std::vector<int64_t> src_stride(in.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out_shape[i] = in[static_cast<size_t>(perm[i])];
    src_stride[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  Tensor out = empty(out_shape, x.dtype());
  if (out.numel() == 0) return out;
  if (rank == 0) {
    std::memcpy(out.raw_data(), x.raw_data(), x.nbytes());
    return out;
  }
  // Rows of the output's last axis, each gathered from x with one stride, in
  // blocks of rows. A block finds its first row's source offset by division,
  // then steps an odometer: attention's head splits copy rows of 16 floats,
  // where three divisions per row cost more than the copy.
  const int64_t inner = out_shape.back(), rows = out.numel() / inner;
  const int64_t inner_stride = src_stride.back();
  constexpr int64_t kRowsPerBlock = 256;
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(blocks, out.numel() >= kParallelElementwise, [&](int64_t b) {
      std::vector<int64_t> index(static_cast<size_t>(rank), 0);  // of the row's first element
      int64_t off = 0, rem = b * kRowsPerBlock;
      for (int64_t d = rank - 2; d >= 0; --d) {
        index[static_cast<size_t>(d)] = rem % out_shape[static_cast<size_t>(d)];
        rem /= out_shape[static_cast<size_t>(d)];
        off += index[static_cast<size_t>(d)] * src_stride[static_cast<size_t>(d)];
      }
      const int64_t end = std::min(rows, (b + 1) * kRowsPerBlock);
      for (int64_t r = b * kRowsPerBlock; r < end; ++r) {
        const T* s = src + off;
        T* o = dst + r * inner;
        if (inner_stride == 1)
          std::memcpy(o, s, static_cast<size_t>(inner) * sizeof(T));
        else
          for (int64_t i = 0; i < inner; ++i) o[i] = s[i * inner_stride];
        for (int64_t d = rank - 2; d >= 0; --d) {  // next row: carry through the axes
          const auto du = static_cast<size_t>(d);
          off += src_stride[du];
          if (++index[du] < out_shape[du]) break;
          off -= index[du] * src_stride[du];
          index[du] = 0;
        }
      }
    });
  });
  return out;
}

Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1) {
  std::vector<int64_t> dims(x.shape().size());
  std::iota(dims.begin(), dims.end(), 0);
  const int64_t a = normalize_axis(axis0, x.shape(), "transpose");
  const int64_t b = normalize_axis(axis1, x.shape(), "transpose");
  std::swap(dims[static_cast<size_t>(a)], dims[static_cast<size_t>(b)]);
  return permute(x, dims);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end) {
  axis = normalize_axis(axis, x.shape(), "slice");
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  if (start < 0 || end > n || start > end)
    fail("slice: range [", start, ", ", end, ") out of bounds for axis ", axis, " of size ", n,
         " in shape ", x.shape());
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = end - start;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.shape().size(); ++i) inner *= x.shape()[i];
  if (outer == 1) return view(x, out_shape, start * inner);  // contiguous already
  Tensor out = empty(out_shape, x.dtype());
  const size_t esz = dtype_size(x.dtype());
  const size_t row_bytes = static_cast<size_t>((end - start) * inner) * esz;
  const auto* src = static_cast<const char*>(x.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  parallel_for(outer, out.numel() >= kParallelElementwise, [&](int64_t o) {
    std::memcpy(dst + static_cast<size_t>(o) * row_bytes,
                src + static_cast<size_t>((o * n + start) * inner) * esz, row_bytes);
  });
  return out;
}

Tensor select(const Tensor& x, int64_t index) {
  if (x.dim() == 0) fail("select: a scalar has no axis 0 to index");
  const int64_t n = x.shape()[0];
  if (index < 0 || index >= n) fail("select: index ", index, " out of range for axis 0 of shape ", x.shape());
  Shape out_shape(x.shape().begin() + 1, x.shape().end());
  return view(x, out_shape, index * numel(out_shape));
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) fail("concat: no tensors given");
  const Shape& first = xs[0].shape();
  axis = normalize_axis(axis, first, "concat");
  Shape out_shape = first;
  out_shape[static_cast<size_t>(axis)] = 0;
  for (const Tensor& t : xs) {
    check_same_dtype(xs[0], t, "concat");
    bool ok = t.shape().size() == first.size();
    for (size_t i = 0; ok && i < first.size(); ++i)
      ok = i == static_cast<size_t>(axis) || t.shape()[i] == first[i];
    if (!ok) fail("concat: shape ", t.shape(), " does not match ", first, " outside axis ", axis);
    out_shape[static_cast<size_t>(axis)] += t.shape()[static_cast<size_t>(axis)];
  }
  Tensor out = empty(out_shape, xs[0].dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= first[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < first.size(); ++i) inner *= first[i];
  const size_t esz = dtype_size(out.dtype());
  const size_t out_row = static_cast<size_t>(out_shape[static_cast<size_t>(axis)] * inner) * esz;
  auto* dst = static_cast<char*>(out.raw_data());
  size_t col = 0;  // byte offset of this piece inside an output row
  for (const Tensor& t : xs) {
    const size_t row = static_cast<size_t>(t.shape()[static_cast<size_t>(axis)] * inner) * esz;
    const auto* src = static_cast<const char*>(t.raw_data());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<size_t>(o) * out_row + col, src + static_cast<size_t>(o) * row, row);
    col += row;
  }
  return out;
}

Tensor to(const Tensor& x, DType dtype) {
  Tensor out = empty(x.shape(), dtype);
  visit_dtype(x.dtype(), [&](auto src_tag) {
    using S = decltype(src_tag);
    visit_dtype(dtype, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      const S* s = x.data<S>();
      D* d = out.data<D>();
      const int64_t n = x.numel();
      parallel_for(n, n >= kParallelElementwise, [&](int64_t i) { d[i] = static_cast<D>(s[i]); });
  });
  });
  return out;
}

}  // namespace sg::kernel
