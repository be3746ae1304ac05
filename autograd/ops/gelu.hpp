#pragma once
// gelu (autograd/ops/gelu.cpp): any shape -> the same shape.
#include <string>

#include "core/tensor.hpp"

namespace sg {

// x * Phi(x), PyTorch's gelu: approximate "none" (default) is the exact form
// with erf, "tanh" the approximation GPT-2 uses (they differ by up to ~5e-4).
Tensor gelu(const Tensor& x, const std::string& approximate = "none");

}  // namespace sg
