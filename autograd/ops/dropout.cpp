// Dropout: y = x * m / (1 - p), m_i = 0 with probability p, else 1.
//
// The mask is never stored. Element i's coin is a hash of (key, i), with one
// key drawn from the generator per call (a counter-based generator, as in
// Philox): any thread can flip any element's coin, so the kernel runs in
// parallel and still gives the same mask on any thread count, and backward
// flips the same coins again instead of keeping a mask as big as x.
//
// In a data-parallel step (DropoutShard, autograd/ops.hpp) a micro-batch of
// examples [first, first + count) counts its elements from first times the
// elements per example, and uses the key the whole batch would: its mask is
// the whole batch's mask, cut to its examples.
#include <algorithm>
#include <cmath>

#include "autograd/ops.hpp"
#include "core/kernels.hpp"
#include "core/parallel.hpp"

namespace sg {
namespace {

// SplitMix64's finaliser over a Weyl sequence: consecutive i give independent-looking
// 64-bit values (it passes BigCrush as a stream).
inline uint64_t coin(uint64_t key, uint64_t i) {
  uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Elements [begin, end): out_i = 0 where coin(key, i) < threshold, else x_i * scale.
// A function of its own with restrict pointers: inside the OpenMP region's
// closure GCC could not prove in and out apart and left the loop scalar.
template <class T>
void mask_range(const T* __restrict in, T* __restrict out, int64_t begin, int64_t end, uint64_t key,
                uint64_t base, uint64_t threshold, T scale) {
  for (int64_t i = begin; i < end; ++i) {  // vectorised: a select, no branch, no masked load
    const T m = coin(key, base + static_cast<uint64_t>(i)) < threshold ? T(0) : scale;
    out[i] = in[i] * m;
  }
}

// x: any shape -> out: x's shape, masked and scaled; element i flips coin base + i.
Tensor apply_mask(const Tensor& x, uint64_t key, uint64_t base, uint64_t threshold, double keep) {
  Tensor out = empty(x.shape(), x.dtype());
  visit_floating(x, "dropout", [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* o = out.data<T>();
    const T scale = static_cast<T>(keep);
    const int64_t n = x.numel(), block = 1 << 13, blocks = (n + block - 1) / block;
    parallel_for(blocks, n >= kParallelElementwise, [&](int64_t b) {
      mask_range(in, o, b * block, std::min(n, (b + 1) * block), key, base, threshold, scale);
    });
  });
  return out;
}

thread_local DropoutShard* t_shard = nullptr;

}  // namespace

uint64_t DropoutKeys::key(size_t k, Generator& gen) {
  std::lock_guard<std::mutex> lock(mu_);
  if (k == keys_.size()) keys_.emplace_back(&gen, gen.next_u64());  // first here: draw, in call order
  if (k > keys_.size() || keys_[k].first != &gen)
    fail("dropout: call ", k, " of a data-parallel micro-batch ",
         k > keys_.size() ? "came before the calls ahead of it had keys"
                          : "uses another generator than the same call of the first micro-batch",
         ": every micro-batch must run the same dropouts in the same order");
  return keys_[k].second;
}

DropoutShard::DropoutShard(DropoutKeys& k, int64_t first_example, int64_t examples)
    : keys(k), first(first_example), count(examples), previous_(t_shard) {
  if (first < 0 || count < 1)
    fail("DropoutShard: examples [", first, ", ", first + count, ") are not a micro-batch (need first >= 0, count >= 1)");
  t_shard = this;
}

DropoutShard::~DropoutShard() { t_shard = previous_; }

// x: any shape -> same shape.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!(p >= 0 && p < 1)) fail("dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0) return x;
  uint64_t key = 0, base = 0;
  if (DropoutShard* shard = t_shard) {
    if (x.dim() == 0 || x.shape()[0] % shard->count != 0)
      fail("dropout: in a data-parallel micro-batch of ", shard->count, " examples, x of shape ", x.shape(),
           " needs a leading axis that is a multiple of ", shard->count, " (the examples, outermost)");
    key = shard->keys.key(shard->calls++, gen);
    base = static_cast<uint64_t>(shard->first * (x.numel() / shard->count));
  } else {
    key = gen.next_u64();
  }
  const auto threshold = static_cast<uint64_t>(std::ldexp(p, 64));  // P(coin < threshold) = p
  const double keep = 1.0 / (1.0 - p);
  return record("dropout", apply_mask(x, key, base, threshold, keep), {x}, {},
                [key, base, threshold, keep](const Tensor& g) -> Grads {
                  return {apply_mask(g, key, base, threshold, keep)};  // the same coins: dL/dx = dL/dy * m / (1 - p)
                });
}

Tensor dropout(const Tensor& x, double p, bool training) {
  return dropout(x, p, training, default_generator());
}

}  // namespace sg
