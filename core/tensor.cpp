// Tensor handles, shapes and creation functions.
#include "core/tensor.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/kernels.hpp"

namespace sg {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) fail("numel: shape ", shape, " has more than 2^63 - 1 elements");
  return n;
}

Shape unravel_index(int64_t index, const Shape& shape) {
  Shape c(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    c[k] = index % shape[k];
    index /= shape[k];
  }
  return c;
}

int64_t normalize_axis(int64_t axis, const Shape& shape, const char* op) {
  const auto rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank)
    fail(op, ": axis ", axis, " out of range for a tensor of shape ", shape);
  return axis < 0 ? axis + rank : axis;
}

TensorImpl& Tensor::checked() const {
  if (!impl_) fail("tensor: use of an undefined tensor (default-constructed or moved from)");
  return *impl_;
}

int64_t Tensor::size(int64_t axis) const {
  return shape()[static_cast<size_t>(normalize_axis(axis, shape(), "size"))];
}

void* Tensor::raw_data() const {
  const TensorImpl& i = checked();
  return static_cast<char*>(i.storage->data) + i.offset * static_cast<int64_t>(dtype_size(i.dtype));
}

Tensor& Tensor::set_requires_grad(bool on) {
  TensorImpl& i = checked();
  if (on && !is_floating(i.dtype))
    fail("set_requires_grad: an int64 tensor of shape ", i.shape, " cannot have gradients");
  if (!on && i.node)
    fail("set_requires_grad(false): tensor of shape ", i.shape,
         " was made by an op; use detach() to cut it from the graph");
  i.requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const {
  const TensorImpl& i = checked();
  return i.grad ? Tensor(i.grad) : Tensor();
}

void Tensor::set_grad(const Tensor& g) {
  TensorImpl& i = checked();
  if (g.defined() && (g.shape() != i.shape || g.dtype() != i.dtype))
    fail("set_grad: gradient of shape ", g.shape(), " and dtype ", g.dtype(),
         " for a tensor of shape ", i.shape, " and dtype ", i.dtype);
  i.grad = g.impl_ptr();
}

Tensor Tensor::detach() const {
  const TensorImpl& i = checked();
  auto d = std::make_shared<TensorImpl>();
  d->shape = i.shape;
  d->dtype = i.dtype;
  d->storage = i.storage;
  d->offset = i.offset;
  return Tensor(std::move(d));
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* op) {
  if (a.shape() != b.shape()) fail(op, ": shapes ", a.shape(), " and ", b.shape(), " differ");
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    fail(op, ": dtypes differ: ", a.dtype(), " ", a.shape(), " and ", b.dtype(), " ", b.shape());
}

// ---- creation ----

namespace {
// The largest buffer a tensor may have: 2^47 bytes (128 TiB), the user
// address space of x86-64 and of AArch64 with 4 KiB pages; no allocator can
// give more. (Larger requests below PTRDIFF_MAX would reach the allocator,
// and AddressSanitizer's aborts on them instead of returning null.)
constexpr int64_t kMaxBytes = int64_t{1} << 47;

// The byte count of a new tensor of shape, after checking that no dimension
// is negative and that neither the element count nor the byte count overflows.
size_t checked_bytes(const Shape& shape, DType dtype, const char* op) {
  int64_t n = 1, bytes = 0;
  for (int64_t d : shape)
    if (d < 0) fail(op, ": negative dimension in shape ", shape);
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      fail(op, ": shape ", shape, " has more than 2^63 - 1 elements");
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(dtype)), &bytes) || bytes > kMaxBytes)
    fail(op, ": shape ", shape, " of ", dtype, " needs ", n, " elements of ", dtype_size(dtype),
         " bytes, more than the ", kMaxBytes, " bytes a buffer can have");
  return static_cast<size_t>(bytes);
}
}  // namespace

Tensor empty(const Shape& shape, DType dtype) {
  const size_t bytes = checked_bytes(shape, dtype, "empty");
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->dtype = dtype;
  try {
    impl->storage = std::make_shared<Storage>(bytes);
  } catch (const Error& e) {
    fail("empty: shape ", shape, " of ", dtype, ": ", e.what());
  }
  return Tensor(std::move(impl));
}

Tensor full(const Shape& shape, double value, DType dtype) {
  checked_bytes(shape, dtype, "full");
  Tensor t = empty(shape, dtype);
  kernel::fill_(t, value);
  return t;
}

Tensor zeros(const Shape& shape, DType dtype) {
  checked_bytes(shape, dtype, "zeros");
  Tensor t = empty(shape, dtype);
  std::memset(t.raw_data(), 0, t.nbytes());  // all-zero bytes are 0 in every dtype
  return t;
}

Tensor ones(const Shape& shape, DType dtype) {
  checked_bytes(shape, dtype, "ones");
  return full(shape, 1.0, dtype);
}
Tensor scalar(double value, DType dtype) { return full({}, value, dtype); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype()); }

Tensor arange(double start, double end, double step, DType dtype) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    fail("arange: bad range start=", start, " end=", end, " step=", step);
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((end - start) / step)));
  Tensor t = empty({n}, dtype);
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  return t;
}

Tensor arange(int64_t end, DType dtype) { return arange(0, static_cast<double>(end), 1, dtype); }

namespace {
template <class S>
Tensor from_values(const std::vector<S>& values, const Shape& shape, DType dtype) {
  if (static_cast<int64_t>(values.size()) != numel(shape))
    fail("from_vector: ", values.size(), " values do not fill shape ", shape, " (", numel(shape),
         " elements)");
  Tensor t = empty(shape, dtype);
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return t;
}
}  // namespace

Tensor from_vector(const std::vector<float>& v, const Shape& s) { return from_values(v, s, float32); }
Tensor from_vector(const std::vector<double>& v, const Shape& s, DType d) { return from_values(v, s, d); }
Tensor from_vector(const std::vector<int64_t>& v, const Shape& s) { return from_values(v, s, int64); }
Tensor tensor(std::initializer_list<float> values) {
  return from_vector(std::vector<float>(values), {static_cast<int64_t>(values.size())});
}

Tensor clone(const Tensor& t) {
  Tensor c = empty(t.shape(), t.dtype());
  std::memcpy(c.raw_data(), t.raw_data(), t.nbytes());
  return c;
}

}  // namespace sg
