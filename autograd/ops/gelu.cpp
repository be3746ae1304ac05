// GELU, x * Phi(x), in PyTorch's two forms (torch.nn.functional.gelu):
//   approximate = "none"  exact, with the normal CDF Phi(x) = (1 + erf(x / sqrt 2)) / 2
//   approximate = "tanh"  0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
//                         (GPT-2's form); differs from the exact one by up to ~5e-4
// Forward and backward are one pass each over the elements; the backward
// recomputes from x (cheaper than keeping Phi).
// Second order: first order keeps the one-pass kernel. Under create_graph
// (recording on) the slope is written with recorded ops: for "tanh" entirely
// (tanh, mul, affine); for "none" as Phi(x) + x phi(x), where Phi is a small
// recorded op (normal_cdf, below) whose backward is phi(x) =
// exp(-x^2/2)/sqrt(2 pi), itself recorded ops, so every order works.
#include <cmath>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/gelu.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/unary.hpp"
#include "core/kernels/vecmath.hpp"
#include "core/parallel.hpp"

namespace sg {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kInvSqrt2 = 0.7071067811865476;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1 / sqrt(2 pi), the normal pdf at 0

// Phi(v), the normal CDF, and phi(v), its density.
// float: straight-line arithmetic that a loop vectorises (std::erf and
// std::exp are a libm call per element, which made gelu a third of a GPT's
// step). Phi(v) = erfc(-v / sqrt 2) / 2 with erfc(z), z >= 0, from Numerical
// Recipes' Chebyshev fit (erfcc: relative error under 1.2e-7 for every z)
// and exp_fast (2e-7): so Phi is accurate relative to itself far into the
// left tail, where 1 + erf(x) would cancel; for v >= 0, Phi = 1 - erfc / 2.
// double: std::erf and std::exp, every bit (gradcheck and the fixtures).
inline float normal_cdf_value(float v) {
  const float z = std::fabs(v) * float(kInvSqrt2), t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  for (float c : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                  1.00002368f, -1.26551223f})
    p = p * t + c;
  const float half_erfc = 0.5f * t * kernel::exp_fast(p - z * z);
  return v < 0 ? half_erfc : 1.0f - half_erfc;
}
inline double normal_cdf_value(double v) { return 0.5 * (1 + std::erf(v * kInvSqrt2)); }
inline float normal_pdf_value(float v) { return float(kInvSqrt2Pi) * kernel::exp_fast(-0.5f * v * v); }
inline double normal_pdf_value(double v) { return kInvSqrt2Pi * std::exp(-0.5 * v * v); }

// value(v) -> gelu(v); slope(v) -> d gelu / dv.
template <class T>
T exact_value(T v) { return v * normal_cdf_value(v); }
template <class T>
T exact_slope(T v) { return normal_cdf_value(v) + v * normal_pdf_value(v); }  // Phi(v) + v phi(v)
template <class T>
T tanh_value(T v) { return T(0.5) * v * (T(1) + std::tanh(T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v))); }
template <class T>
T tanh_slope(T v) {
  // 0.5 (1 + t) + 0.5 v (1 - t^2) du/dv, du/dv = sqrt(2/pi) (1 + 3 * 0.044715 v^2)
  const T t = std::tanh(T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v));
  return T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * v * v);
}

// out[i] = f(x[i]) (g undefined) or g[i] * f(x[i]); x: any shape -> same shape.
template <bool kSlope>
Tensor apply(const Tensor& x, const Tensor& g, bool exact) {
  Tensor out = empty(x.shape(), x.dtype());
  visit_floating(x, "gelu", [&](auto tag) {
    using T = decltype(tag);
    const T* a = x.data<T>();
    const T* gv = kSlope ? g.data<T>() : nullptr;
    T* o = out.data<T>();
    const int64_t n = x.numel();
    const bool big = n >= kParallelElementwise;
    // One loop per form, each straight-line code that vectorises.
    if constexpr (kSlope) {
      if (exact) parallel_for(n, big, [&](int64_t i) { o[i] = gv[i] * exact_slope(a[i]); });
      else parallel_for(n, big, [&](int64_t i) { o[i] = gv[i] * tanh_slope(a[i]); });
    } else {
      if (exact) parallel_for(n, big, [&](int64_t i) { o[i] = exact_value(a[i]); });
      else parallel_for(n, big, [&](int64_t i) { o[i] = tanh_value(a[i]); });
    }
  });
  return out;
}

// phi(x), the normal density, with recorded ops.
Tensor normal_pdf(const Tensor& x) { return affine(exp(affine(mul(x, x), -0.5, 0)), kInvSqrt2Pi, 0); }

// Phi(x), the normal CDF, as a recorded op: used by the composed slope only.
Tensor normal_cdf(const Tensor& x) {
  Tensor out = empty(x.shape(), x.dtype());
  visit_floating(x, "gelu", [&](auto tag) {
    using T = decltype(tag);
    const T* a = x.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = normal_cdf_value(a[i]);
  });
  return record("normal_cdf", out, {x}, [x](const Tensor& g) -> Grads { return {mul(g, normal_pdf(x))}; });
}

// d gelu / dx with recorded ops.
Tensor composed_slope(const Tensor& x, bool exact) {
  if (exact) return add(normal_cdf(x), mul(x, normal_pdf(x)));
  const Tensor x2 = mul(x, x);
  const Tensor t = tanh(affine(mul(x, affine(x2, 0.044715, 1.0)), kSqrt2OverPi, 0));  // tanh(u)
  const Tensor du = affine(x2, kSqrt2OverPi * 3 * 0.044715, kSqrt2OverPi);               // du/dx
  return add(affine(t, 0.5, 0.5), mul(affine(x, 0.5, 0), mul(affine(mul(t, t), -1.0, 1.0), du)));
}

}  // namespace

// x: any shape -> same shape.
Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh")
    fail("gelu: approximate must be \"none\" (exact, erf) or \"tanh\", got \"", approximate, "\"");
  if (!is_floating(x.dtype()))
    fail("gelu: needs a float32 or float64 tensor, got ", x.dtype(), " ", x.shape());
  const bool exact = approximate == "none";
  return record("gelu", apply<false>(x, Tensor(), exact), {x}, [x, exact](const Tensor& g) -> Grads {
    if (grad_enabled()) return {mul(g, composed_slope(x, exact))};
    return {apply<true>(x, g, exact)};
  });
}

}  // namespace sg
