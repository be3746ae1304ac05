#include "nn/basic.hpp"

#include "autograd/ops/dropout.hpp"
#include "autograd/ops/embedding.hpp"
#include "autograd/ops/layer_norm.hpp"
#include "nn/init.hpp"

namespace sg::nn {

Dropout::Dropout(double p_) : p(p_) {
  if (!(p >= 0 && p < 1)) fail("Dropout: p must be in [0, 1), got ", p);
}
Tensor Dropout::forward(const Tensor& x, DropoutKeys* keys) const {
  Generator& gen = generator ? *generator : default_generator();
  if (!keys || !is_training() || p == 0) return dropout(x, p, is_training(), gen);
  if (!keys->key)
    fail("Dropout: DropoutKeys for examples [", keys->first, ", ", keys->first + keys->count, ") has no key function");
  return dropout(x, p, true, DropoutKey{keys->key(keys->calls++, gen), keys->first, keys->count});
}

Embedding::Embedding(int64_t vocab, int64_t dim) {
  if (vocab <= 0 || dim <= 0) fail("Embedding: sizes must be positive, got vocab ", vocab, ", dim ", dim);
  weight = register_parameter("weight", init::normal({vocab, dim}, 0.0, 1.0));
}
Tensor Embedding::forward(const Tensor& ids) const { return embedding(weight, ids); }

LayerNorm::LayerNorm(int64_t dim, double eps_, bool with_bias) : eps(eps_) {
  if (dim <= 0) fail("LayerNorm: dim must be positive, got ", dim);
  weight = register_parameter("weight", ones({dim}));
  if (with_bias) bias = register_parameter("bias", zeros({dim}));
}
Tensor LayerNorm::forward(const Tensor& x) const {
  // Without a bias the fused op still takes a beta: zeros, outside the graph.
  return layer_norm(x, weight, bias.defined() ? bias : zeros(weight.shape(), weight.dtype()), eps);
}

}  // namespace sg::nn
