// Dropout: y = x * m / (1 - p), m_i = 0 with probability p, else 1.
//
// The mask is never stored. Element i's coin is a hash of (key, i), with one
// key drawn from the generator per call (a counter-based generator, as in
// Philox): any thread can flip any element's coin, so the kernel runs in
// parallel and still gives the same mask on any thread count, and backward
// flips the same coins again instead of keeping a mask as big as x.
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
                uint64_t threshold, T scale) {
  for (int64_t i = begin; i < end; ++i) {  // vectorised: a select, no branch, no masked load
    const T m = coin(key, static_cast<uint64_t>(i)) < threshold ? T(0) : scale;
    out[i] = in[i] * m;
  }
}

// x: any shape -> out: x's shape, masked and scaled.
Tensor apply_mask(const Tensor& x, uint64_t key, uint64_t threshold, double keep) {
  Tensor out = empty(x.shape(), x.dtype());
  visit_floating(x, "dropout", [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* o = out.data<T>();
    const T scale = static_cast<T>(keep);
    const int64_t n = x.numel(), block = 1 << 13, blocks = (n + block - 1) / block;
    parallel_for(blocks, n >= kParallelElementwise, [&](int64_t b) {
      mask_range(in, o, b * block, std::min(n, (b + 1) * block), key, threshold, scale);
    });
  });
  return out;
}

}  // namespace

// x: any shape -> same shape.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!(p >= 0 && p < 1)) fail("dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0) return x;
  const uint64_t key = gen.next_u64();
  const auto threshold = static_cast<uint64_t>(std::ldexp(p, 64));  // P(coin < threshold) = p
  const double keep = 1.0 / (1.0 - p);
  return record("dropout", apply_mask(x, key, threshold, keep), {x}, {}, [key, threshold, keep](const Tensor& g) -> Grads {
    return {apply_mask(g, key, threshold, keep)};  // the same coins: dL/dx = dL/dy * m / (1 - p)
  });
}

Tensor dropout(const Tensor& x, double p, bool training) {
  return dropout(x, p, training, default_generator());
}

}  // namespace sg
