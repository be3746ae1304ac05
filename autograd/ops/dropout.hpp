#pragma once
// dropout (autograd/ops/dropout.cpp): a counter-based mask, never stored.
#include <cstdint>

#include "core/random.hpp"
#include "core/tensor.hpp"

namespace sg {

// Zeroes each element with probability p and scales the rest by 1/(1-p);
// the identity when !training or p == 0. p must be in [0, 1). Draws one
// number from gen per call; the mask is the same on any thread count.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);
Tensor dropout(const Tensor& x, double p, bool training);  // default generator
// A dropout's coins given instead of drawn: `key`, as one call of the
// overloads above draws it, and x's place in the batch it was drawn for:
// x's leading axis holds examples [first, first + count) of that batch
// (count must divide it; a scalar is one example). The mask is a function
// of (key, example) alone: a micro-batch given the whole batch's key and
// its first example gets the whole batch's mask, cut to its examples
// (parallel/data_parallel.hpp splits a batch this way). {key} alone is the whole
// batch, the mask the overloads above give when they draw `key`.
struct DropoutKey {
  uint64_t key = 0;
  int64_t first = 0, count = 1;
};
Tensor dropout(const Tensor& x, double p, bool training, const DropoutKey& key);

}  // namespace sg
