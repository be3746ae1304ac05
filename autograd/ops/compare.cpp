// Comparisons: masks of 1 and 0, no gradient (autograd/ops/compare.hpp).
#include "autograd/ops/compare.hpp"

#include <cmath>

#include "core/kernels.hpp"

namespace sg {
namespace {

// s as a scalar tensor of x's dtype; an int64 x needs a whole s (x < 2.5
// compared as x < 2 would be wrong for x = 2).
Tensor scalar_like(const Tensor& x, double s, const char* op) {
  if (x.dtype() == int64 && !(std::trunc(s) == s && std::fabs(s) < 0x1p63))
    fail(op, ": an int64 tensor of shape ", x.shape(), " compared with ", s,
         ", which is not a whole number (convert with to(float32) first)");
  return scalar(s, x.dtype());
}

}  // namespace

// a: (...), b: (...) broadcast -> mask: broadcast shape, a's dtype.
Tensor eq(const Tensor& a, const Tensor& b) { return kernel::eq(a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return kernel::ne(a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return kernel::lt(a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return kernel::le(a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return kernel::gt(a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return kernel::ge(a, b); }

// x: (...) -> mask: x's shape and dtype.
Tensor eq(const Tensor& x, double s) { return kernel::eq(x, scalar_like(x, s, "eq")); }
Tensor ne(const Tensor& x, double s) { return kernel::ne(x, scalar_like(x, s, "ne")); }
Tensor lt(const Tensor& x, double s) { return kernel::lt(x, scalar_like(x, s, "lt")); }
Tensor le(const Tensor& x, double s) { return kernel::le(x, scalar_like(x, s, "le")); }
Tensor gt(const Tensor& x, double s) { return kernel::gt(x, scalar_like(x, s, "gt")); }
Tensor ge(const Tensor& x, double s) { return kernel::ge(x, scalar_like(x, s, "ge")); }

}  // namespace sg
