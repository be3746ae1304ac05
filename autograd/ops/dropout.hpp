#pragma once
// dropout (autograd/ops/dropout.cpp): a counter-based mask, never stored.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "core/random.hpp"
#include "core/tensor.hpp"

namespace sg {

// Zeroes each element with probability p and scales the rest by 1/(1-p);
// the identity when !training or p == 0. p must be in [0, 1). Draws one
// number from gen per call; the mask is the same on any thread count.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);
Tensor dropout(const Tensor& x, double p, bool training);  // default generator
// Dropout in a data-parallel step (nn/data_parallel.hpp), where one batch
// runs as micro-batches on several threads. While a DropoutShard lives on a
// thread, dropout there takes x's leading axis as examples [first, first +
// count) of the whole batch (count must divide it), and its keys from
// `keys`, shared by the step's micro-batches: each micro-batch's k-th
// dropout uses the key the whole batch's k-th dropout would draw (the first
// micro-batch to get there draws it from the generator, the others read it).
// So every element flips the coin it would flip in the whole batch: the mask
// depends on the example, not on the thread or the split, and the generator
// ends where the whole batch's forward leaves it.
class DropoutKeys {
 public:
  uint64_t key(size_t k, Generator& gen);  // the k-th call's key

 private:
  std::mutex mu_;
  std::vector<std::pair<const Generator*, uint64_t>> keys_;
};
class DropoutShard {
 public:
  DropoutShard(DropoutKeys& keys, int64_t first, int64_t count);
  ~DropoutShard();
  DropoutShard(const DropoutShard&) = delete;
  DropoutShard& operator=(const DropoutShard&) = delete;

  DropoutKeys& keys;
  const int64_t first, count;
  size_t calls = 0;  // dropout calls so far on this shard

 private:
  DropoutShard* previous_;
};

}  // namespace sg
