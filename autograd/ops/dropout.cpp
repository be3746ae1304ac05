// Dropout: y = x * m / (1 - p), m_i = 0 with probability p, else 1.
//
// The mask is never stored. Element i's coin is a hash of (key, i), with one
// key drawn from the generator per call (a counter-based generator, as in
// Philox): any thread can flip any element's coin, so the kernel runs in
// parallel and still gives the same mask on any thread count, and backward
// flips the same coins again instead of keeping a mask as big as x.
//
// Given a DropoutKey (autograd/ops.hpp), x holds examples [first, first +
// count) of a batch and counts its elements from first times the elements
// per example: a micro-batch given the key the whole batch drew gets the
// whole batch's mask, cut to its examples.
//
// Second order: the backward is the same mask applied to g, a linear map of
// g alone. First order applies it with the kernel; under create_graph
// (recording on) it is the recorded dropout op itself on g (same coins), so
// its backward is the mask again, to any order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "autograd/engine.hpp"
#include "autograd/ops/dropout.hpp"
#include "core/kernels.hpp"
#include "core/parallel.hpp"

namespace sg {
namespace {

// The coin of element i (counted from the first example, see above) is a
// keyed 32-bit hash of i's low 32 bits, built from 32 x 32 -> 32-bit
// multiplies, xors and shifts only: every vector ISA multiplies 32-bit lanes
// (SSE4.1 pmulld, AVX2, AVX-512, NEON), while 64-bit lane multiplies exist
// only in AVX-512DQ (AVX2 and SSE emulate each with three multiplies and
// shifts, which made dropout the slowest op of an AVX2 step).
//
// The hash is Wellons' "triple32" (hash-prospector): three rounds of
// xorshift and multiply, a bijection on 32 bits whose output bits each flip
// with probability close to 1/2 when any input bit flips (the least biased
// three-round hash that search found), so consecutive counters give
// independent-looking coins. It is keyed twice: k0 is xored into the counter
// and k1 into the state before the last round, so the masks of two keys are
// unrelated, not one sequence shifted (as hash(i + k) would give: two calls
// whose keys landed close would drop the same elements, shifted).
// lowbias32 (two multiplies) keyed before its second round, or applied
// twice with a key each, showed structure in checks like those of
// tests/autograd/ops/test_dropout_statistics.cpp (docs/results.md, "CPU
// targets"). k0 and k1 come from the call's 64-bit key and i's high 32 bits
// through SplitMix64's finaliser, once per 2^32 elements.
inline uint32_t coin(uint32_t i, uint32_t k0, uint32_t k1) {
  uint32_t x = i ^ k0;
  x ^= x >> 17;
  x *= 0xED5AD4BBu;
  x ^= x >> 11;
  x *= 0xAC4C1B51u;
  x ^= k1;
  x ^= x >> 15;
  x *= 0x31848BABu;
  return x ^ (x >> 14);
}

// (k0, k1) for the elements whose index has high half `hi`: SplitMix64's
// finaliser of the key and hi (64-bit multiplies, scalar, once per range).
inline std::pair<uint32_t, uint32_t> round_keys(uint64_t key, uint64_t hi) {
  uint64_t z = key + (hi + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return {static_cast<uint32_t>(z), static_cast<uint32_t>(z >> 32)};
}

// Elements [begin, end) of x, whose element 0 has index base: out_i = 0 where
// the coin of index base + i is below threshold, else x_i * scale.
// A function of its own with restrict pointers: inside the OpenMP region's
// closure GCC could not prove in and out apart and left the loop scalar.
template <class T>
void mask_range(const T* __restrict in, T* __restrict out, int64_t begin, int64_t end, uint64_t key,
                uint64_t base, uint32_t threshold, T scale) {
  while (begin < end) {
    // The run of indices that share their high 32 bits (all of them below 2^32 elements).
    const uint64_t index = base + static_cast<uint64_t>(begin);
    const uint32_t lo = static_cast<uint32_t>(index);
    const int64_t n = static_cast<int64_t>(std::min<uint64_t>(static_cast<uint64_t>(end - begin), (1ull << 32) - lo));
    const auto [k0, k1] = round_keys(key, index >> 32);
    const T* x = in + begin;
    T* o = out + begin;
    // Vectorised: 32-bit lanes, a select, no branch. The coin's index is a
    // 32-bit counter of its own: computed as lo + j from the 64-bit j, it
    // made g++ count j in 64-bit lanes and narrow them to 32 bits each step,
    // five shuffles per vector of AVX2.
    uint32_t index32 = lo;
    for (int64_t j = 0; j < n; ++j, ++index32) {
      o[j] = x[j] * (coin(index32, k0, k1) < threshold ? T(0) : scale);
    }
    begin += n;
  }
}

// x: any shape -> out: x's shape, masked and scaled; element i flips coin base + i.
Tensor apply_mask(const Tensor& x, uint64_t key, uint64_t base, uint32_t threshold, double keep) {
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

// x's mask from key, the coins counted from base; the op dropout records.
Tensor masked(const Tensor& x, double p, uint64_t key, uint64_t base) {
  // P(coin < threshold) = floor(p 2^32) / 2^32: p to within 2^-32 (p < 1, so it fits).
  const auto threshold = static_cast<uint32_t>(std::ldexp(p, 32));
  const double keep = 1.0 / (1.0 - p);
  return record("dropout", apply_mask(x, key, base, threshold, keep), {x}, {},
                [p, key, base, threshold, keep](const Tensor& g) -> Grads {
                  if (grad_enabled()) return {masked(g, p, key, base)};  // create_graph: recorded
                  return {apply_mask(g, key, base, threshold, keep)};  // the same coins: dL/dx = dL/dy * m / (1 - p)
                });
}

}  // namespace

// x: any shape -> same shape.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!(p >= 0 && p < 1)) fail("dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0) return x;
  return masked(x, p, gen.next_u64(), 0);
}

// x: (count * n, ...) -> same shape; examples [first, first + count) of the key's batch.
Tensor dropout(const Tensor& x, double p, bool training, const DropoutKey& k) {
  if (!(p >= 0 && p < 1)) fail("dropout: p must be in [0, 1), got ", p);
  if (k.first < 0 || k.count < 1)
    fail("dropout: examples [", k.first, ", ", k.first + k.count,
         ") are not a micro-batch (need first >= 0, count >= 1)");
  if (x.dim() == 0 ? k.count != 1 : x.shape()[0] % k.count != 0)
    fail("dropout: in a micro-batch of ", k.count, " examples, x of shape ", x.shape(),
         " needs a leading axis that is a multiple of ", k.count, " (the examples, outermost)");
  if (!training || p == 0) return x;
  return masked(x, p, k.key, static_cast<uint64_t>(k.first * (x.numel() / k.count)));
}

Tensor dropout(const Tensor& x, double p, bool training) {
  return dropout(x, p, training, default_generator());
}

}  // namespace sg
