// The backward engine: scalar and explicit-gradient backward, accumulation,
// retain_graph, freed graphs, shape checks on every op's gradients,
// requires_grad propagation, detach, NoGradGuard (nesting, per thread), and
// that graphs are freed: live-node counts and resident memory stay flat over
// 10,000 training steps.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <unistd.h>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/embedding.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/unary.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Tensor;
using test_util::resident_bytes;

namespace {

Tensor values(std::vector<double> v, const sg::Shape& shape) {
  return sg::from_vector(v, shape, sg::float64);
}

void require_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-12) {
  REQUIRE(t.defined());
  const auto got = t.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(expected[i]).margin(tol));
  }
}

// A custom op, as a student writes one: y = 2x, whose backward counts its calls.
Tensor counted_double(const Tensor& x, int* calls) {
  return sg::record("counted_double", sg::kernel::affine(x, 2.0, 0.0), {x},
                    [calls](const Tensor& g) -> Grads {
                      ++*calls;
                      return {sg::kernel::affine(g, 2.0, 0.0)};
                    });
}

}  // namespace

TEST_CASE("backward of a scalar fills the leaves' gradients", "[autograd][engine]") {
  Tensor x = values({1, -2, 3}, {3}).set_requires_grad();
  Tensor loss = sg::sum(x * x);  // d/dx = 2x
  sg::backward(loss);
  require_values(x.grad(), {2, -4, 6});

  SECTION("a leaf itself can be the output") {
    Tensor s = values({5}, {}).set_requires_grad();
    sg::backward(s);
    require_values(s.grad(), {1});
  }
}

TEST_CASE("backward of a non-scalar needs an explicit gradient", "[autograd][engine]") {
  Tensor x = values({1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad();
  Tensor y = x * 3.0;
  REQUIRE_THROWS_WITH(sg::backward(y), Contains("backward: output of shape (2, 3) is not a scalar") &&
                                           Contains("pass a gradient of that shape"));
  SECTION("a gradient of the output's shape works") {
    sg::backward(y, values({1, 0, -1, 2, 0, 0.5}, {2, 3}));
    require_values(x.grad(), {3, 0, -3, 6, 0, 1.5});
  }
  SECTION("a gradient of another shape or dtype is refused, naming both") {
    REQUIRE_THROWS_WITH(sg::backward(y, sg::ones({3, 2}, sg::float64)),
                        Contains("gradient of shape (3, 2)") && Contains("output of shape (2, 3)"));
    REQUIRE_THROWS_WITH(sg::backward(y, sg::ones({2, 3}, sg::float32)),
                        Contains("dtype float32") && Contains("dtype float64"));
  }
}

TEST_CASE("backward of a tensor that needs no gradient is a clear error", "[autograd][engine]") {
  Tensor a = values({1, 2}, {2});  // requires_grad off
  Tensor y = sg::sum(a * a);
  REQUIRE_FALSE(y.requires_grad());
  REQUIRE_THROWS_WITH(sg::backward(y), Contains("backward: tensor of shape () does not require grad"));
}

TEST_CASE("gradients accumulate across backward passes until cleared", "[autograd][engine]") {
  Tensor x = values({0.5, -1.5}, {2}).set_requires_grad();
  sg::backward(sg::sum(x * x));
  sg::backward(sg::sum(x * x));
  require_values(x.grad(), {2.0, -6.0});  // 2 * 2x
  sg::backward(sg::sum(x * 4.0));
  require_values(x.grad(), {6.0, -2.0});
  x.set_grad(Tensor());  // what zero_grad does
  REQUIRE_FALSE(x.grad().defined());
  sg::backward(sg::sum(x));
  require_values(x.grad(), {1, 1});
}

TEST_CASE("a leaf's gradient is its own buffer, even when two leaves get the same one",
          "[autograd][engine]") {
  // add's backward hands one gradient buffer to both inputs; the engine must
  // copy it into each leaf so that an in-place update of one leaves the other alone.
  Tensor a = values({1, 2}, {2}).set_requires_grad();
  Tensor b = values({3, 4}, {2}).set_requires_grad();
  sg::backward(a + b, values({1, 1}, {2}));
  Tensor ga = a.grad();
  sg::kernel::scale_(ga, 10.0);
  require_values(a.grad(), {10, 10});
  require_values(b.grad(), {1, 1});
}

TEST_CASE("retain_graph allows a second backward, and a freed graph is a clear error",
          "[autograd][engine]") {
  Tensor x = values({1, 2, 3}, {3}).set_requires_grad();
  Tensor loss = sg::sum(sg::tanh(x) * x);
  std::vector<double> once;
  for (double v : {1.0, 2.0, 3.0}) {
    const double t = std::tanh(v);
    once.push_back(t + v * (1 - t * t));
  }
  sg::backward(loss, Tensor(), /*retain_graph=*/true);
  require_values(x.grad(), once);
  sg::backward(loss);  // through the retained graph, then frees it
  require_values(x.grad(), {2 * once[0], 2 * once[1], 2 * once[2]});
  REQUIRE_THROWS_WITH(sg::backward(loss), Contains("already freed by an earlier backward()") &&
                                              Contains("retain_graph"));
  SECTION("the message names the op whose graph is gone") {
    Tensor y = sg::exp(x);
    Tensor first = sg::sum(y);
    sg::backward(first);
    REQUIRE_THROWS_WITH(sg::backward(first), Contains("'sum'"));
  }
  SECTION("a part of a freed graph reached from a new output is refused too") {
    Tensor h = sg::exp(x);
    sg::backward(sg::sum(h));
    Tensor again = sg::sum(h * 2.0);  // new nodes on top of h's freed node
    REQUIRE_THROWS_WITH(sg::backward(again), Contains("through 'exp' was already freed"));
  }
}

TEST_CASE("a tensor used several times (diamond graphs) gets the sum of its gradients",
          "[autograd][engine]") {
  // y = e * e + e with e = exp(x): dy/dx = (2e + 1) e
  Tensor x = values({0.1, -0.3}, {2}).set_requires_grad();
  Tensor e = sg::exp(x);
  sg::backward(sg::sum(e * e + e));
  std::vector<double> expected;
  for (double v : {0.1, -0.3}) expected.push_back((2 * std::exp(v) + 1) * std::exp(v));
  require_values(x.grad(), expected);

  SECTION("x op x") {
    Tensor z = values({3}, {}).set_requires_grad();
    sg::backward(z * z * z);  // 3 z^2
    require_values(z.grad(), {27});
  }
}

TEST_CASE("each node's backward runs once, after all of its consumers", "[autograd][engine]") {
  int calls = 0;
  Tensor x = values({1, 2}, {2}).set_requires_grad();
  Tensor c = counted_double(x, &calls);
  // c feeds three consumers along paths of different lengths.
  Tensor y = sg::sum(c * c) + sg::sum(sg::exp(c) * 0.0) + sg::sum(c);
  sg::backward(y);
  REQUIRE(calls == 1);
  // dy/dx = 2 * (2c + 1) = 2 * (4x + 1)
  require_values(x.grad(), {10, 18});
}

TEST_CASE("the engine checks every gradient's shape and names the op", "[autograd][engine]") {
  Tensor x = sg::ones({2, 3}, sg::float64).set_requires_grad();
  SECTION("a wrong shape") {
    Tensor y = sg::record("my_transposing_op", sg::kernel::affine(x, 1.0, 0.0), {x},
                          [](const Tensor& g) -> Grads { return {sg::kernel::transpose(g, 0, 1)}; });
    REQUIRE_THROWS_WITH(sg::backward(sg::sum(y)),
                        Contains("backward of 'my_transposing_op' returned a gradient of shape (3, 2)") &&
                            Contains("for input 0 of shape (2, 3)"));
  }
  SECTION("a wrong dtype") {
    Tensor y = sg::record("my_float32_op", sg::kernel::affine(x, 1.0, 0.0), {x},
                          [](const Tensor& g) -> Grads { return {sg::kernel::to(g, sg::float32)}; });
    REQUIRE_THROWS_WITH(sg::backward(sg::sum(y)),
                        Contains("'my_float32_op'") && Contains("(float32)") && Contains("(float64)"));
  }
  SECTION("a wrong number of gradients") {
    Tensor y = sg::record("my_two_grads_op", sg::kernel::affine(x, 1.0, 0.0), {x},
                          [](const Tensor& g) -> Grads { return {g, g}; });
    REQUIRE_THROWS_WITH(sg::backward(sg::sum(y)),
                        Contains("backward of 'my_two_grads_op' returned 2 gradients for 1 inputs"));
  }
  SECTION("record() refuses an output that is already in a graph") {
    Tensor y = x * 2.0;
    REQUIRE_THROWS_WITH(sg::record("reuse", y, {x}, [](const Tensor& g) -> Grads { return {g}; }),
                        Contains("reuse: record() needs a fresh output tensor"));
  }
  SECTION("a forward that called a recording op instead of its kernel is told which to call") {
    // sg::exp (records a node) where sg::kernel::exp (does not) was meant.
    REQUIRE_THROWS_WITH(sg::record("my_exp", sg::exp(x), {x}, [](const Tensor& g) -> Grads { return {g}; }),
                        Contains("my_exp: record() needs a fresh output tensor, got the output of op 'exp'") &&
                            Contains("(sg::kernel::exp, not sg::exp)"));
  }
  SECTION("a leaf that requires grad is not an op's output") {
    REQUIRE_THROWS_WITH(sg::record("my_leaf", x, {x}, [](const Tensor& g) -> Grads { return {g}; }),
                        Contains("my_leaf: record() needs a fresh output tensor, got a leaf that requires grad"));
  }
}

TEST_CASE("a backward that failed part-way leaves no partial gradients behind",
          "[autograd][engine]") {
  // The failing op is reached before the h * 2 path has finished adding into
  // h's node; a later backward through h must not see that partial sum.
  Tensor x = values({1, 2}, {2}).set_requires_grad();
  Tensor h = sg::exp(x);
  Tensor bad = sg::record("bad_shape", sg::kernel::affine(h, 1.0, 0.0), {h},
                          [](const Tensor&) -> Grads { return {sg::ones({5}, sg::float64)}; });
  for (const bool bad_first : {true, false}) {
    Tensor loss = bad_first ? sg::sum(bad) + sg::sum(h * 2.0) : sg::sum(h * 2.0) + sg::sum(bad);
    REQUIRE_THROWS_WITH(sg::backward(loss, Tensor(), true), Contains("'bad_shape'"));
  }
  x.set_grad(Tensor());
  sg::backward(sg::sum(h));
  require_values(x.grad(), {std::exp(1.0), std::exp(2.0)});
}

TEST_CASE("requires_grad propagates from any input that has it", "[autograd][engine]") {
  Tensor w = values({1, 2, 3}, {3}).set_requires_grad();
  Tensor c = values({4, 5, 6}, {3});
  REQUIRE(w.is_leaf());
  REQUIRE((w * c).requires_grad());
  REQUIRE_FALSE((w * c).is_leaf());
  REQUIRE((c + w).requires_grad());
  REQUIRE(sg::sum(sg::tanh(w)).requires_grad());
  REQUIRE_FALSE((c * c).requires_grad());
  REQUIRE((c * c).is_leaf());  // nothing recorded
  // An op whose only differentiable input lacks requires_grad records nothing,
  // even with an int64 input alongside.
  Tensor table = sg::ones({4, 3}, sg::float64);
  Tensor ids = sg::from_vector(std::vector<int64_t>{0, 3}, {2});
  REQUIRE_FALSE(sg::embedding(table, ids).requires_grad());
  table.set_requires_grad();
  REQUIRE(sg::embedding(table, ids).requires_grad());
  REQUIRE_THROWS_WITH(ids.set_requires_grad(), Contains("int64 tensor of shape (2) cannot have gradients"));

  SECTION("only inputs that require grad receive one") {
    Tensor y = sg::sum(w * c);
    sg::backward(y);
    require_values(w.grad(), {4, 5, 6});
    REQUIRE_FALSE(c.grad().defined());
  }
}

TEST_CASE("detach shares the data but cuts the graph", "[autograd][engine]") {
  Tensor x = values({1, 2}, {2}).set_requires_grad();
  Tensor y = x * x;
  Tensor d = y.detach();
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.is_leaf());
  REQUIRE(d.raw_data() == y.raw_data());
  // z = y * detach(y): the gradient flows through the first factor only.
  sg::backward(sg::sum(y * d));
  require_values(x.grad(), {2 * 1 * 1, 2 * 2 * 4});  // d(y)/dx * d = 2x * x^2
  REQUIRE_THROWS_WITH(y.set_requires_grad(false), Contains("use detach()"));
}

TEST_CASE("NoGradGuard records nothing, nests, and is per thread", "[autograd][engine]") {
  Tensor x = values({1, 2}, {2}).set_requires_grad();
  const int64_t start = sg::Node::live_count();
  REQUIRE(sg::grad_enabled());
  {
    sg::NoGradGuard outer;
    REQUIRE_FALSE(sg::grad_enabled());
    Tensor y = sg::sum(sg::exp(x) * x);
    REQUIRE_FALSE(y.requires_grad());
    REQUIRE(y.is_leaf());
    REQUIRE(sg::Node::live_count() == start);
    REQUIRE_THROWS_WITH(sg::backward(y), Contains("does not require grad"));
    {
      sg::NoGradGuard inner;
      REQUIRE_FALSE(sg::grad_enabled());
    }
    REQUIRE_FALSE(sg::grad_enabled());  // the inner guard restores "off", not "on"

    // Another thread has its own switch: recording is on there.
    bool thread_enabled = false, thread_recorded = false;
    std::thread t([&] {
      thread_enabled = sg::grad_enabled();
      Tensor z = x * x;
      thread_recorded = z.requires_grad() && z.node() != nullptr;
    });
    t.join();
    REQUIRE(thread_enabled);
    REQUIRE(thread_recorded);
    REQUIRE_FALSE(sg::grad_enabled());
  }
  REQUIRE(sg::grad_enabled());
  REQUIRE((x * x).requires_grad());

  SECTION("a guard on another thread leaves this one recording") {
    std::thread t([] { sg::NoGradGuard g; });
    t.join();
    REQUIRE(sg::grad_enabled());
  }
}

TEST_CASE("no graph node outlives the step", "[autograd][engine]") {
  Tensor w = values({0.5, -0.25, 1.0}, {3}).set_requires_grad();
  Tensor x = values({1, 2, 3}, {3});
  const int64_t start = sg::Node::live_count();

  SECTION("backward frees every node but the output's own") {
    {
      Tensor loss = sg::mean(sg::tanh(w * x + 1.0) * sg::sigmoid(w));
      REQUIRE(sg::Node::live_count() > start + 4);
      sg::backward(loss);
      // Only the loss's node (released, holding nothing) remains while the loss lives.
      REQUIRE(sg::Node::live_count() == start + 1);
    }
    REQUIRE(sg::Node::live_count() == start);
  }
  SECTION("a graph that is never backwarded is freed when dropped") {
    {
      Tensor h = sg::exp(w * x);
      Tensor loss = sg::sum(h * h);
      REQUIRE(sg::Node::live_count() > start);
    }
    REQUIRE(sg::Node::live_count() == start);
  }
  SECTION("retain_graph keeps the nodes until the output goes") {
    {
      Tensor loss = sg::sum(sg::exp(w) * x);
      const int64_t built = sg::Node::live_count();
      sg::backward(loss, Tensor(), true);
      REQUIRE(sg::Node::live_count() == built);
    }
    REQUIRE(sg::Node::live_count() == start);
  }
  SECTION("an error during backward leaks nothing") {
    {
      Tensor y = sg::record("bad", sg::kernel::affine(w, 1.0, 0.0), {w},
                            [](const Tensor&) -> Grads { return {sg::ones({5}, sg::float64)}; });
      REQUIRE_THROWS(sg::backward(sg::sum(sg::exp(y))));
    }
    REQUIRE(sg::Node::live_count() == start);
  }
  SECTION("a deep chain backwards without deep recursion") {
    {
      Tensor h = w;
      for (int i = 0; i < 20000; ++i) h = h * 1.0;
      sg::backward(sg::sum(h));
    }
    require_values(w.grad(), {1, 1, 1});
    REQUIRE(sg::Node::live_count() == start);
  }
}

TEST_CASE("ten thousand training steps keep the node count and memory flat", "[autograd][engine][memory]") {
  // A 2-layer MLP on (8, 16) inputs, MSE loss, plain SGD under NoGradGuard.
  sg::Generator gen(7);
  Tensor w1 = sg::randn({16, 32}, gen, sg::float32, 0, 0.25).set_requires_grad();
  Tensor b1 = sg::zeros({32}).set_requires_grad();
  Tensor w2 = sg::randn({32, 4}, gen, sg::float32, 0, 0.18).set_requires_grad();
  Tensor b2 = sg::zeros({4}).set_requires_grad();
  const Tensor x = sg::randn({8, 16}, gen);
  const Tensor target = sg::randn({8, 4}, gen);
  std::vector<Tensor> params{w1, b1, w2, b2};
  const int64_t start_nodes = sg::Node::live_count();

  auto step = [&] {
    Tensor h = sg::relu(sg::matmul(x, w1) + b1);
    Tensor out = sg::matmul(h, w2) + b2;
    Tensor diff = out - target;
    Tensor loss = sg::mean(diff * diff);
    sg::backward(loss);
    sg::NoGradGuard no_grad;
    for (Tensor& p : params) {
      Tensor update = sg::kernel::affine(p.grad(), -0.05, 0.0);
      sg::kernel::add_(p, update);
      p.set_grad(Tensor());
    }
    return loss.item<double>();
  };

  const double first_loss = step();
  double loss = first_loss;
  long rss_at_1000 = 0;
  int64_t max_nodes = 0;
  for (int i = 2; i <= 10000; ++i) {
    loss = step();
    max_nodes = std::max(max_nodes, sg::Node::live_count() - start_nodes);
    if (i == 1000) rss_at_1000 = resident_bytes();
  }
  const long rss_at_10000 = resident_bytes();
  INFO("resident at step 1000: " << rss_at_1000 << " bytes, at step 10000: " << rss_at_10000);
  REQUIRE(max_nodes == 0);
  REQUIRE(rss_at_1000 > 0);
#if !defined(__SANITIZE_ADDRESS__)  // ASan's quarantine keeps freed memory resident on purpose
  // 9,000 more steps may not add more than 256 KiB (a leak of one small
  // tensor or node per step would add well over 1 MiB).
  REQUIRE(rss_at_10000 - rss_at_1000 < 256 * 1024);
#endif
  REQUIRE(loss < 0.5 * first_loss);  // and it did train
}

TEST_CASE("grad returns the leaves' gradients and leaves .grad alone", "[autograd][engine]") {
  Tensor x = values({1, -2, 3}, {3}).set_requires_grad();
  Tensor w = values({0.5, 4, -1}, {3}).set_requires_grad();
  Tensor unused = values({7}, {1}).set_requires_grad();
  sg::backward(sg::sum(x * x));  // x.grad = 2x, before
  Grads g = sg::grad(sg::sum(x * w + x * x), {w, x, unused});
  REQUIRE(g.size() == 3);
  require_values(g[0], {1, -2, 3});        // d/dw = x
  require_values(g[1], {2.5, 0, 5});       // d/dx = w + 2x
  REQUIRE_FALSE(g[2].defined());           // no gradient flows to it
  require_values(x.grad(), {2, -4, 6});    // unchanged
  REQUIRE_FALSE(w.grad().defined());
  // Each gradient is a buffer of its own: changing it changes nothing else.
  sg::kernel::fill_(g[0], 0.0);
  require_values(x, {1, -2, 3});
  REQUIRE_THROWS_WITH(sg::grad(sg::sum(x * x), {values({1}, {1})}),
                      Contains("grad: input 0 of shape (1) does not require grad"));
  REQUIRE_THROWS_WITH(sg::grad(sg::sum(w), {x, Tensor()}), Contains("grad: input 1 is an undefined tensor"));
}

TEST_CASE("grad of an intermediate tensor is the gradient that flows into it, summed over its uses",
          "[autograd][engine]") {
  const std::vector<double> xv = {0.3, -1.2, 2.0}, wv = {0.5, 4, -1};
  Tensor x = values(xv, {3}).set_requires_grad();
  Tensor w = values(wv, {3});
  Tensor h = sg::tanh(x);                               // an intermediate, read twice below
  Tensor y = sg::sum(h * h) + sg::sum(h * w);
  Tensor unrelated = sg::exp(x);                        // in x's graph, not in y's
  Grads g = sg::grad(y, {h, x, unrelated, y});
  std::vector<double> dh(3), dx(3);
  for (size_t i = 0; i < 3; ++i) {
    const double t = std::tanh(xv[i]);
    dh[i] = 2 * t + wv[i];
    dx[i] = dh[i] * (1 - t * t);
  }
  require_values(g[0], dh);             // dy/dh: the sum over both uses of h
  require_values(g[1], dx);             // and on through tanh to the leaf
  REQUIRE_FALSE(g[2].defined());        // no gradient flows into it from y
  require_values(g[3], {1});            // the output itself: the seed
  REQUIRE_FALSE(x.grad().defined());    // .grad untouched
  REQUIRE_FALSE(h.grad().defined());
  // With an explicit gradient of a non-scalar output.
  Tensor z = h * 3.0;
  require_values(sg::grad(z, {h}, values({1, 2, 3}, {3}))[0], {3, 6, 9});
}

TEST_CASE("grad of an intermediate runs only the backwards above it", "[autograd][engine]") {
  Tensor x = values({1, 2}, {2}).set_requires_grad();
  int calls = 0;
  Tensor h = counted_double(x, &calls) * 1.0;  // the counted op lies below h
  Tensor y = sg::sum(h * h);
  require_values(sg::grad(y, {h}, Tensor(), true)[0], {4, 8});  // 2h
  REQUIRE(calls == 0);
  require_values(sg::grad(y, {x})[0], {8, 16});  // 2h * 2
  REQUIRE(calls == 1);
}

TEST_CASE("errors from grad() name grad; a gradient without create_graph says how to differentiate it again",
          "[autograd][engine]") {
  Tensor x = values({0.5}, {}).set_requires_grad();
  // The gradient of a first-order grad() has no history: its error names create_graph.
  const Tensor dy = sg::grad(sg::tanh(x), {x})[0];
  REQUIRE_THROWS_WITH(sg::grad(dy, {x}), Contains("grad: tensor of shape () does not require grad") &&
                                             Contains("{.create_graph = true}"));
  REQUIRE_THROWS_WITH(sg::backward(dy), Contains("backward: tensor of shape () does not require grad") &&
                                            Contains("{.create_graph = true}"));
  // A graph freed by an earlier pass.
  Tensor y = sg::sum(x * x);
  (void)sg::grad(y, {x});
  REQUIRE_THROWS_WITH(sg::grad(y, {x}), Catch::StartsWith("grad: the graph through 'sum' was already freed") &&
                                            Contains("retain_graph"));
  // A saved tensor changed in place.
  Tensor a = values({1, 2}, {2}).set_requires_grad();
  Tensor b = values({3, 4}, {2});
  Tensor p = sg::sum(a * b);
  sg::kernel::add_(b, values({1, 1}, {2}));
  REQUIRE_THROWS_WITH(sg::grad(p, {a}), Catch::StartsWith("grad: 'mul' saved its input 1") &&
                                            Contains("Change it after grad()"));
  // A custom backward returning the wrong shape.
  Tensor c = values({1, 2, 3}, {3}).set_requires_grad();
  Tensor bad = sg::record("bad_shape", sg::kernel::affine(c, 1, 0), {c}, [](const Tensor&) -> Grads {
    return {sg::ones({2}, sg::float64)};
  });
  REQUIRE_THROWS_WITH(sg::grad(sg::sum(bad), {c}), Catch::StartsWith("grad: backward of 'bad_shape' returned a gradient"));
}
