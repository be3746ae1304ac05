#pragma once
// Small layers: Dropout, Embedding, LayerNorm.
#include "core/random.hpp"
#include "nn/module.hpp"

namespace sg::nn {

// Zeroes elements with probability p in training mode (scaling the rest by
// 1/(1-p)); the identity in eval mode.  x: any shape -> same shape
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) const;
  double p;
  // Masks come from this generator when set, else from the default one: a
  // module of its own per thread gives reproducible masks on every thread.
  std::shared_ptr<Generator> generator;
};

// A lookup table of vocab_size rows.  ids: (...) int64 -> (..., dim)
class Embedding : public Module {
 public:
  Embedding(int64_t vocab_size, int64_t dim);  // weight ~ N(0, 1), as PyTorch
  Tensor forward(const Tensor& ids) const;
  Tensor weight;  // (vocab_size, dim)
};

// Normalises the last axis, then scales and shifts.  x: (..., dim) -> same
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5);
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;  // gamma (ones) and beta (zeros), each (dim)
  double eps;
};

}  // namespace sg::nn
