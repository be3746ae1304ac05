// Rotary position embedding (RoPE, Su et al., 2021): each pair of features
// (2j, 2j+1) of the vector at position t is rotated by the angle t * theta_j,
// theta_j = base^(-2j / d). A query rotated for position m and a key rotated
// for position n then have a dot product that depends on m - n only, since
// R(m)^T R(n) = R(n - m). The pairs and frequencies are those of the
// sinusoidal table P (sin/cos of the same angles).
// Second order: the backward rotates g back, a linear map of g alone. First
// order calls the rotation kernel; under create_graph (recording on) it is a
// recorded rotation (rotate, below), whose backward is the opposite rotation.
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/rope.hpp"
#include "core/kernels.hpp"
#include "core/parallel.hpp"
#include "core/runtime.hpp"

namespace sg {
namespace {

// x: (..., T, d) -> y: (..., T, d). Rotates the vector at row t by +angle
// (direction 1) or -angle (direction -1), angle = (offset + t) * theta_j:
//   y[2j]   = x[2j] cos - x[2j+1] sin
//   y[2j+1] = x[2j] sin + x[2j+1] cos
// The rotation by -angle is the inverse (and the transpose) of the one by +angle.
Tensor rotate_pairs(const Tensor& x, int64_t offset, double base, int direction) {
  const int64_t steps = x.shape()[x.dim() - 2], d = x.shape().back(), half = d / 2;
  const int64_t rows = x.numel() / std::max<int64_t>(d, 1);  // every (..., t) vector
  // cos and sin of every (t, j) angle, computed in double: (T, d/2) each.
  std::vector<double> cos_t(static_cast<size_t>(steps * half)), sin_t(cos_t.size());
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t j = 0; j < half; ++j) {
      const double theta = std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(d));
      const double angle = static_cast<double>(offset + t) * theta;
      cos_t[static_cast<size_t>(t * half + j)] = std::cos(angle);
      sin_t[static_cast<size_t>(t * half + j)] = direction * std::sin(angle);
    }
  Tensor out = empty(x.shape(), x.dtype());
  visit_floating(x, "rope", [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* o = out.data<T>();
    parallel_for(rows, x.numel() >= kParallelElementwise, [&](int64_t r) {
      const int64_t t = r % steps;
      const double* c = cos_t.data() + t * half;
      const double* s = sin_t.data() + t * half;
      for (int64_t j = 0; j < half; ++j) {
        const T a = in[r * d + 2 * j], b = in[r * d + 2 * j + 1];
        o[r * d + 2 * j] = a * T(c[j]) - b * T(s[j]);
        o[r * d + 2 * j + 1] = a * T(s[j]) + b * T(c[j]);
      }
    });
  });
  return out;
}

// rotate_pairs as a recorded op; its backward rotates the other way.
Tensor rotate(const Tensor& x, int64_t offset, double base, int direction) {
  return record("rope", rotate_pairs(x, offset, base, direction), {x}, {}, [offset, base, direction](const Tensor& g) -> Grads {
    return {grad_enabled() ? rotate(g, offset, base, -direction) : rotate_pairs(g, offset, base, -direction)};
  });
}

}  // namespace

// x: (..., T, d), d even -> (..., T, d), row t rotated for position offset + t.
// Backward: the gradient rotated back (by -angle), since y = R x gives dx = R^T g.
Tensor rope(const Tensor& x, int64_t offset, double base) {
  if (x.dim() < 2) fail("rope: x must be (..., steps, dim), got ", x.shape());
  if (x.shape().back() % 2 != 0)
    fail("rope: the last axis of x ", x.shape(), " must be even (features rotate in pairs), got ",
         x.shape().back());
  if (offset < 0) fail("rope: offset must be non-negative, got ", offset, " for x ", x.shape());
  if (!(base > 1)) fail("rope: base must be greater than 1, got ", base);
  Tensor out = rotate_pairs(x, offset, base, 1);
  return record("rope", out, {x}, {}, [offset, base](const Tensor& g) -> Grads {
    return {grad_enabled() ? rotate(g, offset, base, -1) : rotate_pairs(g, offset, base, -1)};
  });
}

}  // namespace sg
