#pragma once
#include "nn/module.hpp"

namespace sg::nn {

// y = x W^T + b. weight: (out, in), as PyTorch stores it, so checkpoints
// move between the two unchanged; the product uses GEMM's transpose flag,
// not a copy.  x: (..., in) -> y: (..., out)
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;  // bias undefined when disabled
  int64_t in_features, out_features;
};

}  // namespace sg::nn
