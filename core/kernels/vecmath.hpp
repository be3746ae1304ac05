#pragma once
// exp that the compiler vectorises. std::exp is a call into libm per element
// (about 2.4 ns here): softmax over attention scores spent most of its time
// in it. exp_fast is straight-line arithmetic, so a loop over it becomes
// AVX-512 code (about 16 floats per few cycles).
//
// float: exp(x) = 2^n exp(r), n = round(x log2(e)), r = x - n ln(2) in
// [-ln2/2, ln2/2] (ln 2 split in two for an exact reduction), exp(r) by
// Cephes' degree-6 polynomial: relative error under 2e-7 (about 2 ulp) over
// the whole range, checked against std::exp in tests/core/kernels/test_unary.cpp.
// 2^n is built from the exponent bits in two halves, so results that
// underflow to subnormals or zero, or overflow to infinity, come out as
// std::exp's do; exp(-inf) = 0, exp(inf) = inf, NaN stays NaN. Softmax uses
// exp_flush, which returns 0 instead of any result under e^-87.
// double: std::exp (the float64 paths serve gradcheck, where accuracy rules).
#include <bit>
#include <cmath>
#include <cstdint>

namespace sg::kernel {

namespace detail {

// a * b + c: one fused instruction where the target has FMA (x86-64-v3 and
// up, AArch64). Without it std::fma is a call into libm per element, which
// keeps every loop over exp scalar (SSE4.2 builds): there the multiply and
// the add are rounded separately, still within the error bound above (the
// reduction's ln 2 is split so that n * 0.693359375 is exact either way).
inline float madd(float a, float b, float c) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// kFlush = false: exp_fast. kFlush = true: exp_flush, whose inputs are
// clamped at -87 instead of -104, so that no step of the computation makes a
// subnormal float, and whose results below e^-87 (~1.6e-38, just above the
// smallest normal float) are 0.
template <bool kFlush>
inline float exp_float(float x) {
  constexpr float lo = kFlush ? -87.0f : -104.0f;
  // Past these bounds the result is 0 or inf anyway. Written so that NaN lands
  // on lo (both tests false): converting NaN to int below would be undefined.
  const float c = x > lo ? (x < 89.0f ? x : 89.0f) : lo;
  // Round to nearest by adding and subtracting 1.5 * 2^23 (exact for |v| < 2^22):
  // std::floor or std::nearbyint would keep the loop from vectorising without -ffast-math.
  const float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = madd(n, -0.693359375f, c);  // c - n ln2, ln2 = 0.693359375 - 2.12194440e-4
  r = madd(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = madd(p, r, 1.3981999507e-3f);
  p = madd(p, r, 8.3334519073e-3f);
  p = madd(p, r, 4.1665795894e-2f);
  p = madd(p, r, 1.6666665459e-1f);
  p = madd(p, r, 5.0000001201e-1f);
  p = madd(p * r, r, r) + 1.0f;  // exp(r) = 1 + r + r^2 P(r)
  const auto k = static_cast<int32_t>(n);  // in [-150, 128]
  const int32_t half = k >> 1;             // 2^k = 2^half 2^(k - half), both normal floats
  const float y = p * std::bit_cast<float>((half + 127) << 23) * std::bit_cast<float>((k - half + 127) << 23);
  if constexpr (kFlush) return x != x ? x : (x < lo ? 0.0f : y);
  return x != x ? x : y;
}

}  // namespace detail

inline float exp_fast(float x) { return detail::exp_float<false>(x); }

// exp for softmax: exp_fast, but 0 wherever the result would be under
// e^-87 (subnormal or nearly). Such a weight changes no row sum, and making
// a subnormal float costs the CPU a microcode assist of ~100 cycles per
// vector lane: attention rows with masked keys (exp(-1e6 - max)) or peaked
// scores ran several times slower with exp_fast (docs/architecture.md).
inline float exp_flush(float x) { return detail::exp_float<true>(x); }

inline double exp_fast(double x) { return std::exp(x); }
inline double exp_flush(double x) { return std::exp(x); }  // float64 keeps every bit

}  // namespace sg::kernel
