#pragma once
// Tensor: a cheap handle (shared ownership) to an n-dimensional array.
//
//   shape    row-major, always contiguous; a scalar has shape ()
//   storage  one buffer shared by a tensor and its views; `offset` (in
//            elements) says where this tensor starts in it, so reshape and
//            leading-dimension slices are free
//   dtype    float32 (default), float64 or int64
//   autograd requires_grad, grad (leaves only) and the graph node that
//            made it (null for leaves); see autograd/
//
// Tensors hold no operations as methods: every op is a free function, the
// graph-free kernels in sg::kernel (core/kernels.hpp) and the differentiable ones
// in sg (autograd/ops.hpp). So `x.shape()` is metadata, `sg::sum(x)` is math.
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace sg {

// The element count of shape; throws "numel: shape (4611686018427387904, 4)
// has more than 2^63 - 1 elements" when the product overflows int64_t.
int64_t numel(const Shape& shape);
// The per-axis coordinates of row-major element `index` of `shape`: element 5
// of (2, 3) is (1, 2). For messages that point at one element.
Shape unravel_index(int64_t index, const Shape& shape);
// Resolves a possibly negative axis (-1 is the last) against a rank; throws
// "<op>: axis 3 out of range for a tensor of shape (2, 3)" otherwise.
int64_t normalize_axis(int64_t axis, const Shape& shape, const char* op);

// One buffer of raw bytes, 64-byte aligned, from the caching allocator
// (core/allocator.cpp). Never zero-filled: creation functions fill it.
//
// `version` counts the in-place writes to the buffer, as PyTorch's version
// counter does: every in-place kernel (the `_` functions of sg::kernel) and
// every optimizer step adds 1. It lives on the storage, so a tensor and all
// its views share it. The autograd graph notes the versions of the tensors a
// backward will read, and backward() refuses to run if one has changed
// (autograd/node.hpp). Relaxed atomics: free on x86, and two threads that
// read it while a third writes are not a data race.
struct Storage {
  explicit Storage(size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data = nullptr;
  size_t bytes = 0;
  std::atomic<uint64_t> version{0};
  const void* owner = nullptr;  // the allocating thread's block cache (core/allocator.cpp)
};

struct Node;  // autograd/node.hpp
class Tensor;

struct TensorImpl {
  Shape shape;
  DType dtype = DType::float32;
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // accumulated gradient of a leaf
  std::shared_ptr<Node> node;        // the op that made this tensor, if recorded
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor; defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return checked().shape; }
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const { return sg::numel(shape()); }
  DType dtype() const { return checked().dtype; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }

  // Typed pointer to the first element; throws if T is not the dtype.
  template <class T> T* data() const;
  void* raw_data() const;

  // The single value of a one-element tensor, converted to T.
  template <class T = double> T item() const;
  // All values, converted to T, in row-major order.
  template <class T> std::vector<T> to_vector() const;

  // --- autograd state (the engine lives in autograd/) ---
  bool requires_grad() const { return checked().requires_grad; }
  // Marks a leaf as a variable whose gradient backward() accumulates.
  Tensor& set_requires_grad(bool on = true);
  Tensor grad() const;  // undefined until a backward pass reaches this leaf
  void set_grad(const Tensor& g);
  const std::shared_ptr<Node>& node() const { return checked().node; }
  bool is_leaf() const { return node() == nullptr; }
  // A handle to the same data with no graph and requires_grad off.
  Tensor detach() const;

  // In-place writes to this tensor's storage so far (shared with its views).
  uint64_t version() const { return checked().storage->version.load(std::memory_order_relaxed); }
  // Records an in-place write. The in-place kernels and the optimizers call
  // it; so must any code that writes through data<T>() into a tensor that
  // may already be in a graph (a custom in-place op, a hand-written update).
  void bump_version() const { checked().storage->version.fetch_add(1, std::memory_order_relaxed); }

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  // True when both handles refer to the same tensor (not just equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  TensorImpl& checked() const;
  std::shared_ptr<TensorImpl> impl_;
};

// Prints shape, dtype and values; large tensors are abbreviated with "...".
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

// ---- creation ----
Tensor empty(const Shape& shape, DType dtype = float32);  // values unspecified
Tensor zeros(const Shape& shape, DType dtype = float32);
Tensor ones(const Shape& shape, DType dtype = float32);
Tensor full(const Shape& shape, double value, DType dtype = float32);
Tensor scalar(double value, DType dtype = float32);  // shape ()
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// [start, end) in steps of step, as numpy.arange; int64 unless told.
Tensor arange(double start, double end, double step = 1, DType dtype = int64);
Tensor arange(int64_t end, DType dtype = int64);
// From values in row-major order; values.size() must equal numel(shape).
// The dtype follows the element type unless given.
Tensor from_vector(const std::vector<float>& values, const Shape& shape);
Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype = float64);
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape);
Tensor tensor(std::initializer_list<float> values);  // 1-D float32
// A deep copy with its own storage, no graph.
Tensor clone(const Tensor& t);

// Same dtype and shape, else throws "<op>: ..." naming both.
void check_same_shape(const Tensor& a, const Tensor& b, const char* op);
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);

// As visit_floating(dtype, ...), for kernels that take tensor t: an int64 t
// throws "<op>: needs a float32 or float64 tensor, got int64 (2, 3)".
template <class F>
decltype(auto) visit_floating(const Tensor& t, const char* op, F&& f) {
  if (!is_floating(t.dtype()))
    fail(op, ": needs a float32 or float64 tensor, got ", t.dtype(), " ", t.shape());
  return visit_floating(t.dtype(), op, std::forward<F>(f));
}

// ---- implementation of the small templates ----
template <class T>
T* Tensor::data() const {
  const TensorImpl& i = checked();
  if (i.dtype != dtype_of<T>)
    fail("data<", dtype_name(dtype_of<T>), ">: tensor of shape ", i.shape, " has dtype ",
         dtype_name(i.dtype));
  return static_cast<T*>(i.storage->data) + i.offset;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  std::vector<T> out(static_cast<size_t>(numel()));
  visit_dtype(dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* p = data<S>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(p[i]);
  });
  return out;
}

template <class T>
T Tensor::item() const {
  if (numel() != 1) fail("item: tensor of shape ", shape(), " has ", numel(), " elements, not 1");
  return to_vector<T>()[0];
}

}  // namespace sg
