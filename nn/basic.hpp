#pragma once
// Small layers: Dropout, Embedding, LayerNorm.
#include <cstddef>
#include <functional>

#include "core/random.hpp"
#include "nn/module.hpp"

namespace sg::nn {

// Where one forward's dropouts take their keys, passed down explicitly
// through the layers' forward (Dropout, the positional encodings, AddNorm,
// MultiHeadAttention, the Transformer blocks and encoder).
//   * none (nullptr, the default): the forward runs on a whole batch, and
//     each Dropout draws its key from its generator;
//   * given: the forward runs examples [first, first + count) of a larger
//     batch, and its k-th dropout (k counted in `calls`) takes key(k, gen),
//     the key the whole batch's k-th dropout draws from gen (its Dropout's
//     generator): its mask is the whole batch's, cut to these examples
//     (sg::dropout with a DropoutKey). A data-parallel step gives each
//     micro-batch one (parallel/data_parallel.hpp).
// Only a dropout that masks (training, p > 0) takes a key.
struct DropoutKeys {
  int64_t first = 0, count = 1;
  std::function<uint64_t(size_t call, Generator& gen)> key;
  size_t calls = 0;
};

// Zeroes elements with probability p in training mode (scaling the rest by
// 1/(1-p)); the identity in eval mode.  x: any shape -> same shape; with
// `keys`, x's leading axis holds examples [first, first + count) of the batch.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x, DropoutKeys* keys = nullptr) const;
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
// bias = false: scales only (PyTorch's LayerNorm(bias=False), GPT models
// without biases); no "bias" parameter.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool bias = true);
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;  // gamma (ones) and beta (zeros), each (dim); bias undefined when disabled
  double eps;
};

}  // namespace sg::nn
