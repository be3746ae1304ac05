// autograd/ops/dropout.cpp: the counter-based mask, its scaling, and the
// same mask on any thread count.
#include <catch2/catch.hpp>

#include <limits>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/dropout.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

// ---------------------------------------------------------------------------
// dropout
// ---------------------------------------------------------------------------

TEST_CASE("dropout is the identity at p = 0 and in eval mode", "[autograd][gradcheck]") {
  const Tensor x = normal({3, 4}, 140);
  sg::Generator gen(1);
  REQUIRE(sg::dropout(x, 0.0, true, gen).is_same(x));
  REQUIRE(sg::dropout(x, 0.5, false, gen).is_same(x));
  check_gradient("dropout p=0", [](const Inputs& in) { sg::Generator g(1); return sg::dropout(in[0], 0.0, true, g); }, {x});
  check_gradient("dropout eval", [](const Inputs& in) { sg::Generator g(1); return sg::dropout(in[0], 0.5, false, g); }, {x});
  REQUIRE_THROWS_WITH(sg::dropout(x, 1.0, true, gen), Contains("dropout: p must be in [0, 1), got 1"));
  REQUIRE_THROWS_WITH(sg::dropout(x, -0.1, true, gen), Contains("got -0.1"));
}

TEST_CASE("dropout with a fixed mask gradchecks but a fresh mask per call does not", "[autograd][gradcheck]") {
  const Tensor x = normal({4, 5}, 141);
  const sg::Generator base(42);
  // A copy of the generator inside fn: every evaluation draws the same mask.
  check_gradient("dropout p=0.3 same mask", [base](const Inputs& in) {
    sg::Generator g = base;
    return sg::dropout(in[0], 0.3, true, g);
  }, {x});
  check_gradient("dropout p=0.5 composed", [base](const Inputs& in) {
    sg::Generator g = base;
    return sg::dropout(sg::tanh(in[0]), 0.5, true, g) * in[0];
  }, {x});
  sg::Generator shared(42);
  auto fresh = [&shared](const Inputs& in) { return sg::dropout(in[0], 0.3, true, shared); };
  REQUIRE_FALSE(sg::gradcheck(fresh, {x}));
}

TEST_CASE("dropout scales kept values by 1/(1-p) and drops about p of them", "[autograd]") {
  const Tensor x = sg::ones({200000}, sg::float64);
  for (double p : {0.1, 0.3, 0.9}) {
    sg::Generator gen(7);
    const auto y = sg::dropout(x, p, true, gen).to_vector<double>();
    const double keep = 1.0 / (1.0 - p);
    int64_t dropped = 0, wrong = 0;
    for (double v : y) {
      if (v == 0)
        ++dropped;
      else if (std::fabs(v - keep) > 1e-15 * keep)
        ++wrong;
    }
    REQUIRE(wrong == 0);  // every kept value is exactly x / (1 - p)
    const double fraction = static_cast<double>(dropped) / static_cast<double>(y.size());
    INFO("p " << p << " dropped " << fraction);
    REQUIRE(std::fabs(fraction - p) < 0.01);  // about 10 standard deviations
  }
  // The same seed gives the same mask.
  sg::Generator g1(3), g2(3);
  REQUIRE(sg::dropout(x, 0.5, true, g1).to_vector<double>() == sg::dropout(x, 0.5, true, g2).to_vector<double>());
}

TEST_CASE("dropout's mask is the same on any thread count, and neighbours are independent", "[autograd]") {
  const Tensor x = sg::ones({300000}, sg::float32);  // above the parallel threshold
  const int saved = sg::num_threads();
  std::vector<std::vector<float>> masks;
  for (int threads : {1, 2}) {
    sg::set_num_threads(threads);
    sg::Generator gen(11);
    masks.push_back(sg::dropout(x, 0.5, true, gen).to_vector<float>());
  }
  sg::set_num_threads(saved);
  REQUIRE(masks[0] == masks[1]);
  // Pairs (i, i+1): each of the four outcomes about a quarter of the time.
  int64_t counts[4] = {};
  for (size_t i = 0; i + 1 < masks[0].size(); i += 2) ++counts[(masks[0][i] > 0) * 2 + (masks[0][i + 1] > 0)];
  for (int64_t c : counts) REQUIRE(std::fabs(static_cast<double>(c) / 150000 - 0.25) < 0.01);
  // Two calls draw different masks; backward applies the forward's mask.
  sg::Generator gen(11);
  Tensor leaf = sg::ones({1000}, sg::float64).set_requires_grad();
  const Tensor y1 = sg::dropout(leaf, 0.5, true, gen), y2 = sg::dropout(leaf, 0.5, true, gen);
  REQUIRE(y1.to_vector<double>() != y2.to_vector<double>());
  sg::backward(sg::sum(y1));
  REQUIRE(leaf.grad().to_vector<double>() == y1.to_vector<double>());  // dy/dx = mask / (1 - p) = y for x = 1
}

TEST_CASE("dropout given a key: the key the generator would draw gives its mask, cut by example", "[autograd][dropout]") {
  const Tensor x = normal({6, 2, 3}, 142);
  sg::Generator drawn(21), copy(21);
  const uint64_t key = copy.next_u64();
  const std::vector<double> whole = sg::dropout(x, 0.4, true, drawn).to_vector<double>();
  REQUIRE(sg::dropout(x, 0.4, true, sg::DropoutKey{key}).to_vector<double>() == whole);
  REQUIRE(drawn.next_u64() == copy.next_u64());  // the drawing overload took one number, as `copy` did
  // Examples 2..4 alone: the whole batch's mask at their elements, forward and backward.
  Tensor part = sg::clone(sg::slice(x, 0, 2, 5)).set_requires_grad();
  const Tensor y = sg::dropout(part, 0.4, true, sg::DropoutKey{key, 2, 3});
  const std::vector<double> want(whole.begin() + 2 * 6, whole.begin() + 5 * 6);
  REQUIRE(y.to_vector<double>() == want);
  sg::backward(sg::sum(y * part));  // dL/dpart = 2 * part * mask / (1 - p)
  const std::vector<double> g = part.grad().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == Approx(2 * want[i]).epsilon(1e-12));
  int dropped = 0;
  for (double v : want) dropped += v == 0;
  REQUIRE(dropped > 0);
  REQUIRE(dropped < static_cast<int>(want.size()));  // some kept, some dropped: a real comparison
  check_gradient("dropout with a key", [key](const Inputs& in) { return sg::dropout(in[0], 0.4, true, sg::DropoutKey{key, 1, 2}); },
                 {normal({4, 3}, 143)});
  // Identity when not masking; bad places refused in every mode.
  REQUIRE(sg::dropout(x, 0.4, false, sg::DropoutKey{key, 2, 3}).is_same(x));
  REQUIRE(sg::dropout(x, 0.0, true, sg::DropoutKey{key, 2, 3}).is_same(x));
  REQUIRE_THROWS_WITH(sg::dropout(x, 0.4, true, sg::DropoutKey{key, -1, 2}),
                      Contains("dropout") && Contains("[-1, 1)") && Contains("not a micro-batch"));
  REQUIRE_THROWS_WITH(sg::dropout(x, 0.4, false, sg::DropoutKey{key, 0, 0}), Contains("dropout") && Contains("[0, 0)"));
  REQUIRE_THROWS_WITH(sg::dropout(x, 0.4, true, sg::DropoutKey{key, 0, 4}),
                      Contains("dropout") && Contains("4 examples") && Contains("(6, 2, 3)"));
  // A scalar is one example: example 3 of the batch.
  REQUIRE_THROWS_WITH(sg::dropout(sg::scalar(1.0), 0.4, true, sg::DropoutKey{key, 0, 2}), Contains("2 examples"));
  const std::vector<double> row = sg::dropout(sg::ones({6}), 0.4, true, sg::DropoutKey{key}).to_vector<double>();
  REQUIRE(sg::dropout(sg::scalar(1.0), 0.4, true, sg::DropoutKey{key, 3, 1}).item<double>() == row[3]);
  REQUIRE_THROWS_WITH(sg::dropout(x, 1.0, true, sg::DropoutKey{key}), Contains("dropout: p must be in [0, 1), got 1"));
}

// The documented coin (autograd/ops/dropout.cpp), one element at a time: the
// index's low 32 bits through triple32 keyed by (k0, k1), which SplitMix64's
// finaliser makes from the key and the index's high 32 bits. The kernel runs
// it in vector lanes; this is the scalar reading of the same formula, so a
// kernel whose lanes take the wrong index (an off-by-one, lanes narrowed from
// 64 bits in the wrong order, a run that crosses 2^32) drops other elements
// and fails here, where the statistical tests above would still pass.
namespace {

uint32_t reference_coin(uint64_t key, uint64_t index) {
  uint64_t z = key + ((index >> 32) + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const auto k0 = static_cast<uint32_t>(z), k1 = static_cast<uint32_t>(z >> 32);
  uint32_t x = static_cast<uint32_t>(index) ^ k0;
  x ^= x >> 17;
  x *= 0xED5AD4BBu;
  x ^= x >> 11;
  x *= 0xAC4C1B51u;
  x ^= k1;
  x ^= x >> 15;
  x *= 0x31848BABu;
  return x ^ (x >> 14);
}

// y from x under dropout(p) with `key`, x's element i counted as index base + i.
template <class T>
void require_reference_mask(const Tensor& x, const Tensor& y, double p, uint64_t key, uint64_t base) {
  const auto threshold = static_cast<uint32_t>(std::ldexp(p, 32));
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  const T* in = x.data<T>();
  const T* out = y.data<T>();
  int64_t dropped = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool drop = reference_coin(key, base + static_cast<uint64_t>(i)) < threshold;
    const T want = in[i] * (drop ? T(0) : scale);
    dropped += drop;
    if (!(out[i] == want)) {
      INFO("element " << i << " (index " << base + i << "): got " << out[i] << ", want " << want);
      REQUIRE(out[i] == want);
    }
  }
  if (x.numel() >= 100) REQUIRE((dropped > 0 && dropped < x.numel()));  // both kinds of element were compared
}

}  // namespace

TEST_CASE("dropout's mask is the documented hash of each element's index, bit for bit", "[autograd][dropout]") {
  const int before = sg::num_threads();
  // Sizes around the vector widths (4 to 16 lanes) and the kernel's blocks
  // of 8192 elements, in float and double, on one thread and on two.
  for (const int threads : {1, 2}) {
    sg::set_num_threads(threads);
    sg::Generator gen(5);
    for (const int64_t n : {1, 7, 8, 9, 17, 33, 1000, 8192, 8193, 100003}) {
      INFO("n=" << n << " threads=" << threads);
      const uint64_t key = gen.next_u64();
      const Tensor x64 = normal({n}, 150 + n), x32 = sg::kernel::to(x64, sg::float32);
      require_reference_mask<float>(x32, sg::dropout(x32, 0.3, true, sg::DropoutKey{key}), 0.3, key, 0);
      require_reference_mask<double>(x64, sg::dropout(x64, 0.3, true, sg::DropoutKey{key}), 0.3, key, 0);
    }
  }
  sg::set_num_threads(before);
  // A micro-batch counts from its first example: examples 5..7 of 3 values.
  const Tensor x = normal({3, 3}, 160);
  require_reference_mask<double>(x, sg::dropout(x, 0.5, true, sg::DropoutKey{77, 5, 3}), 0.5, 77, 15);
  // Examples of one value each, from index 2^32 - 5: the first five coins
  // take the round keys of high half 0, the next five those of high half 1.
  const Tensor across = sg::kernel::to(normal({10}, 161), sg::float32);
  const int64_t first = (int64_t{1} << 32) - 5;
  require_reference_mask<float>(across, sg::dropout(across, 0.5, true, sg::DropoutKey{78, first, 10}), 0.5, 78,
                                static_cast<uint64_t>(first));
}
