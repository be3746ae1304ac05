// Sizes that overflow are refused with an sg::Error naming the shape (they
// used to give a tensor of numel 0 that kept its shape, and a later
// reduction crashed); and a backward() that throws part-way changes no
// leaf's .grad and says what failed.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"

using Catch::Matchers::Contains;
using sg::Tensor;

TEST_CASE("shapes whose element count overflows int64 are refused, naming the shape", "[sizes]") {
  const sg::Shape huge{int64_t{1} << 62, 4};
  const std::string named = "(4611686018427387904, 4)";
  REQUIRE_THROWS_WITH(sg::ones(huge), Contains("ones: shape " + named) && Contains("2^63 - 1 elements"));
  REQUIRE_THROWS_WITH(sg::zeros(huge), Contains("zeros: shape " + named));
  REQUIRE_THROWS_WITH(sg::empty(huge), Contains("empty: shape " + named));
  REQUIRE_THROWS_WITH(sg::full(huge, 2.0), Contains("full: shape " + named));
  REQUIRE_THROWS_WITH(sg::randn(huge), Contains("shape " + named));
  REQUIRE_THROWS_WITH(sg::numel(huge), Contains("numel: shape " + named));
  // Three axes whose product overflows only at the last multiplication.
  REQUIRE_THROWS_WITH(sg::zeros({int64_t{1} << 31, int64_t{1} << 31, 4}),
                      Contains("shape (2147483648, 2147483648, 4)"));
  // A view to an overflowing shape, and data that cannot fill one.
  const Tensor x = sg::ones({4});
  REQUIRE_THROWS_WITH(sg::reshape(x, huge), Contains("reshape: shape " + named + " has more than"));
  REQUIRE_THROWS_WITH(sg::reshape(x, {-1, int64_t{1} << 62, 4}), Contains("reshape: shape (-1, " ));
  REQUIRE_THROWS_AS(sg::from_vector(std::vector<float>{1, 2, 3, 4}, huge), sg::Error);
  // An empty axis makes any shape empty: zero elements, no overflow.
  CHECK(sg::zeros({0, int64_t{1} << 62, 4}).numel() == 0);
}

TEST_CASE("shapes whose byte count overflows or exceeds the address space are refused", "[sizes]") {
  // 2^61 float64 elements: the count fits int64, the bytes (2^64) do not.
  REQUIRE_THROWS_WITH(sg::zeros({int64_t{1} << 61}, sg::float64),
                      Contains("zeros: shape (2305843009213693952) of float64") && Contains("bytes"));
  // 2^46 float32 elements, 2^48 bytes: more than any process can map.
  REQUIRE_THROWS_WITH(sg::empty({int64_t{1} << 23, int64_t{1} << 23}),
                      Contains("empty: shape (8388608, 8388608) of float32") &&
                          Contains("more than the 140737488355328 bytes"));
  REQUIRE_THROWS_WITH(sg::ones({-1, 3}), Contains("ones: negative dimension in shape (-1, 3)"));
}

namespace {
// A custom op whose backward fails, as a student's bug would.
Tensor broken(const Tensor& x) {
  return sg::record("broken", sg::kernel::affine(x, 1, 0), {x}, [](const Tensor& g) -> sg::Grads {
    return {sg::kernel::add(g, sg::ones({7}))};  // cannot broadcast (3) with (7)
  });
}
}  // namespace

TEST_CASE("a backward that throws part-way changes no leaf's gradient and says what failed", "[sizes]") {
  Tensor a = sg::from_vector(std::vector<float>{1, 2, 3}, {3}).set_requires_grad();
  Tensor b = sg::from_vector(std::vector<float>{4, 5, 6}, {3}).set_requires_grad();
  a.set_grad(sg::full({3}, 10.0));  // an earlier accumulation, which must stay as it is
  // The reverse of the depth-first order runs a * 2.0 (and so reaches a) before 'broken'.
  const Tensor loss = sg::sum(broken(b) + a * 2.0);
  std::string first;
  try {
    sg::backward(loss);
  } catch (const sg::Error& e) {
    first = e.what();
  }
  CHECK_THAT(first, Contains("backward of 'broken' failed: add: cannot broadcast"));
  CHECK(a.grad().to_vector<float>() == std::vector<float>{10, 10, 10});
  CHECK_FALSE(b.grad().defined());
  // A retry says which error freed the graph, not just that it was freed.
  REQUIRE_THROWS_WITH(sg::backward(loss), Contains("freed by an earlier backward() or grad() that failed part-way") &&
                                              Contains(first) && Contains("changed no .grad"));
}

TEST_CASE("with retain_graph, a failed backward leaves the graph as it was", "[sizes]") {
  Tensor a = sg::from_vector(std::vector<float>{1, 2, 3}, {3}).set_requires_grad();
  const Tensor loss = sg::sum(a * a + broken(a));
  REQUIRE_THROWS_WITH(sg::backward(loss, Tensor(), true), Contains("backward of 'broken' failed"));
  REQUIRE_THROWS_WITH(sg::backward(loss, Tensor(), true), Contains("backward of 'broken' failed"));
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("a successful backward adds into .grad as before, also for a leaf used twice", "[sizes]") {
  Tensor a = sg::from_vector(std::vector<double>{1, 2}, {2}, sg::float64).set_requires_grad();
  sg::backward(sg::sum(a * a + a));  // 2a + 1
  CHECK(a.grad().to_vector<double>() == std::vector<double>{3, 5});
  const Tensor g = a.grad();
  sg::backward(sg::sum(a * 3.0));  // into the same buffer, in place
  CHECK(a.grad().is_same(g));
  CHECK(g.to_vector<double>() == std::vector<double>{6, 8});
  // A leaf's .grad is its own buffer, never shared with another tensor.
  Tensor c = sg::from_vector(std::vector<double>{1, 2}, {2}, sg::float64).set_requires_grad();
  const Tensor seed = sg::from_vector(std::vector<double>{5, 7}, {2}, sg::float64);
  sg::backward(c, seed);
  CHECK(c.grad().to_vector<double>() == std::vector<double>{5, 7});
  CHECK(c.grad().raw_data() != seed.raw_data());
}
