// Graph teardown uses a bounded stack: a chain of a million ops, dropped
// without backward(), kept after backward(), or kept with retain_graph,
// frees every node without recursing once per op (which overflowed the
// stack at about 130,000 ops). These run on the test's own (default) stack,
// and under the asan preset.
#include <catch2/catch.hpp>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"

using sg::Tensor;

namespace {
constexpr int kChain = 1'000'000;

// x -> x * 1 + 0 (affine), kChain times: one node per op, each holding the previous.
Tensor chain(const Tensor& x, int n) {
  Tensor y = x;
  for (int i = 0; i < n; ++i) y = sg::affine(y, 1.0, 0.0);
  return y;
}
}  // namespace

TEST_CASE("a million-op graph dropped without backward() is freed without recursion", "[teardown]") {
  const int64_t live = sg::Node::live_count();
  {
    const Tensor x = sg::ones({1}).set_requires_grad();
    const Tensor y = chain(x, kChain);
    CHECK(sg::Node::live_count() == live + kChain);
  }  // y dies here: its node, then every node before it
  CHECK(sg::Node::live_count() == live);
}

TEST_CASE("a million-op graph after backward(), kept and then dropped", "[teardown]") {
  const int64_t live = sg::Node::live_count();
  const Tensor x = sg::ones({1}).set_requires_grad();
  {
    const Tensor y = chain(x * 2.0, kChain);
    sg::backward(y);
    CHECK(x.grad().item() == 2.0);
    // backward() released every node's inputs, so only y's own node is
    // left (the others were freed as the pass ended, again without recursion).
    CHECK(sg::Node::live_count() == live + 1);
  }
  CHECK(sg::Node::live_count() == live);
}

TEST_CASE("a million-op graph kept with retain_graph, backpropagated twice, then dropped", "[teardown]") {
  const int64_t live = sg::Node::live_count();
  const Tensor x = sg::ones({1}, sg::float64).set_requires_grad();
  {
    const Tensor y = chain(x, kChain);
    sg::backward(y, Tensor(), /*retain_graph=*/true);
    sg::backward(y, Tensor(), true);
    CHECK(x.grad().item() == 2.0);
    CHECK(sg::Node::live_count() == live + kChain);
  }
  CHECK(sg::Node::live_count() == live);
}

TEST_CASE("a running total over many steps (running = running + loss) is freed at scope exit",
          "[teardown]") {
  // The pattern a student writes to log a loss: every step's graph hangs
  // off the total, a chain of 'add' nodes with a second branch each.
  const int64_t live = sg::Node::live_count();
  {
    const Tensor w = sg::full({1}, 0.5).set_requires_grad();
    Tensor running = sg::zeros({1});
    for (int step = 0; step < 200'000; ++step) running = running + w * w;
    CHECK(sg::Node::live_count() > live + 200'000);
  }
  CHECK(sg::Node::live_count() == live);
}

TEST_CASE("a deep graph through a custom op's closure is freed without recursion", "[teardown]") {
  // This op's backward captures its input, which the closure then holds
  // besides the node's input list: both paths must be flattened.
  const int64_t live = sg::Node::live_count();
  {
    Tensor y = sg::ones({1}).set_requires_grad();
    for (int i = 0; i < 300'000; ++i)
      y = sg::record("keep", sg::kernel::affine(y, 1, 0), {y}, [y](const Tensor& g) -> sg::Grads {
        return {sg::kernel::mul(g, sg::ones_like(y))};
      });
  }
  CHECK(sg::Node::live_count() == live);
}
