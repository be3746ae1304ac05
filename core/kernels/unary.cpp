// Elementwise unary kernels: out[i] = f(x[i]) over contiguous data.
#include <cmath>
#include <cstring>

#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"
#include "core/kernels/vecmath.hpp"

namespace sg::kernel {
namespace {

// x: (any shape) -> out: same shape and dtype. `f` is a generic lambda applied
// to each element; small tensors stay on one thread.
template <bool kIntsOk, class F>
Tensor map(const Tensor& x, const char* op, F f) {
  Tensor out = empty(x.shape(), x.dtype());
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* a = x.data<T>();
    T* o = out.data<T>();
    const int64_t n = x.numel();
    parallel_for(n, n >= kParallelElementwise, [&](int64_t i) { o[i] = static_cast<T>(f(a[i])); });
  };
  if constexpr (kIntsOk)
    visit_dtype(x.dtype(), run);
  else
    visit_floating(x, op, run);
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) { return map<true>(x, "neg", [](auto v) { return -v; }); }
Tensor abs(const Tensor& x) { return map<true>(x, "abs", [](auto v) { return v < 0 ? -v : v; }); }
Tensor exp(const Tensor& x) { return map<false>(x, "exp", [](auto v) { return exp_fast(v); }); }
Tensor log(const Tensor& x) { return map<false>(x, "log", [](auto v) { return std::log(v); }); }
Tensor sqrt(const Tensor& x) { return map<false>(x, "sqrt", [](auto v) { return std::sqrt(v); }); }
Tensor tanh(const Tensor& x) { return map<false>(x, "tanh", [](auto v) { return std::tanh(v); }); }
Tensor relu(const Tensor& x) {
  return map<true>(x, "relu", [](auto v) { return v > 0 ? v : decltype(v){0}; });
}

Tensor sigmoid(const Tensor& x) {
  // Written so that neither branch overflows: exp of a non-positive number only.
  return map<false>(x, "sigmoid", [](auto v) {
    using T = decltype(v);
    if (v >= 0) return T(1) / (T(1) + std::exp(-v));
    const T e = std::exp(v);
    return e / (T(1) + e);
  });
}

Tensor pow(const Tensor& x, double exponent) {
  if (exponent == 2) return map<false>(x, "pow", [](auto v) { return v * v; });
  return map<false>(x, "pow", [exponent](auto v) {
    return std::pow(v, static_cast<decltype(v)>(exponent));
  });
}

Tensor gelu(const Tensor& x) {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  return map<false>(x, "gelu", [](auto v) {
    using T = decltype(v);
    const T c = T(0.7978845608028654);
    return T(0.5) * v * (T(1) + std::tanh(c * (v + T(0.044715) * v * v * v)));
  });
}

Tensor affine(const Tensor& x, double alpha, double beta) {
  if (x.dtype() == int64) {
    auto whole = [](double s) { return std::trunc(s) == s && s >= -0x1p63 && s < 0x1p63; };
    if (!whole(alpha) || !whole(beta))
      fail("affine: an int64 tensor of shape ", x.shape(), " takes whole alpha and beta, got ", alpha, " and ",
           beta, " (the result would not be int64)");
    const auto a = static_cast<int64_t>(alpha), b = static_cast<int64_t>(beta);
    return map<true>(x, "affine", [a, b](auto v) { return v * a + b; });
  }
  return map<false>(x, "affine", [alpha, beta](auto v) {
    using T = decltype(v);
    return v * static_cast<T>(alpha) + static_cast<T>(beta);
  });
}

void fill_(Tensor& dst, double value) {
  visit_dtype(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = dst.data<T>();
    const T v = static_cast<T>(value);
    const int64_t n = dst.numel();
    parallel_for(n, n >= kParallelElementwise, [&](int64_t i) { o[i] = v; });
  });
  dst.bump_version();
}

void scale_(Tensor& dst, double s) {
  visit_floating(dst, "scale_", [&](auto tag) {
    using T = decltype(tag);
    T* o = dst.data<T>();
    const T v = static_cast<T>(s);
    const int64_t n = dst.numel();
    parallel_for(n, n >= kParallelElementwise, [&](int64_t i) { o[i] *= v; });
  });
  dst.bump_version();
}

void copy_(Tensor& dst, const Tensor& src) {
  check_same_shape(dst, src, "copy_");
  check_same_dtype(dst, src, "copy_");
  if (dst.raw_data() != src.raw_data()) std::memmove(dst.raw_data(), src.raw_data(), dst.nbytes());
  dst.bump_version();
}

}  // namespace sg::kernel
