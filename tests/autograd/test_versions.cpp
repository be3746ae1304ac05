// Version counters: a tensor changed in place after an op saved it for its
// backward makes backward() throw, naming the op, the tensor and both
// versions (PyTorch's "modified by an inplace operation"), instead of a
// silently wrong gradient. And no false alarms: in-place changes before a
// tensor is used, to tensors an op does not read in its backward, and
// optimizer steps after backward() are fine.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/unary.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/linear.hpp"
#include "optim/optim.hpp"

using Catch::Matchers::Contains;
using sg::Tensor;

namespace {
Tensor vec(std::vector<double> v) { return sg::from_vector(v, {static_cast<int64_t>(v.size())}); }

std::vector<double> grad_of(const Tensor& t) {
  REQUIRE(t.grad().defined());
  return t.grad().to_vector<double>();
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const sg::Error& e) {
    return e.what();
  }
  FAIL("no sg::Error was thrown");
  return {};
}
}  // namespace

TEST_CASE("in-place kernels, views and optimizer steps count versions", "[versions]") {
  Tensor w = vec({1, 2, 3});
  const uint64_t v0 = w.version();
  Tensor view = sg::kernel::reshape(w, {3, 1});  // shares w's storage, so its version
  sg::kernel::add_(w, vec({1, 1, 1}));
  CHECK(w.version() == v0 + 1);
  CHECK(view.version() == v0 + 1);
  sg::kernel::scale_(view, 2);
  sg::kernel::fill_(w, 0);
  sg::kernel::copy_(w, vec({4, 5, 6}));
  CHECK(w.version() == v0 + 4);
  // Out-of-place results are new storage at their own count; clone copies values only.
  const Tensor c = sg::clone(w);
  sg::kernel::add_(w, vec({1, 1, 1}));
  CHECK(c.version() == 0);

  w.set_requires_grad();
  sg::optim::SGD opt({w}, {.lr = 0.1});
  const uint64_t before = w.version();
  opt.step();  // no gradient yet: the parameter is not written
  CHECK(w.version() == before);
  sg::backward(sg::sum(w));
  opt.step();
  CHECK(w.version() == before + 1);
}

TEST_CASE("an in-place add after the forward pass makes backward throw, naming op, input and versions",
          "[versions]") {
  // loss = sum(w * w); dloss/dw = 2w would come out as 2 (w + 10) if mul
  // read the changed w.
  Tensor w = vec({1, 2, 3}).set_requires_grad();
  const Tensor loss = sg::sum(w * w);
  const uint64_t saved = w.version();
  sg::NoGradGuard no_grad;
  sg::kernel::add_(w, vec({10, 10, 10}));
  const std::string m = message_of([&] { sg::backward(loss); });
  CHECK_THAT(m, Contains("'mul' saved its input 0 ((3) float64, a leaf)") &&
                    Contains("modified by an in-place operation") &&
                    Contains("at version " + std::to_string(saved + 1)) &&
                    Contains("at version " + std::to_string(saved) + " when 'mul' ran") &&
                    Contains("through 'sum' -> 'mul'"));
  CHECK_FALSE(w.grad().defined());  // nothing ran, nothing was added
  // The check ran before any backward: nothing was freed, and a retry says the same.
  CHECK(message_of([&] { sg::backward(loss); }) == m);
}

TEST_CASE("an optimizer step between the forward and backward() is caught", "[versions]") {
  sg::nn::Linear first(3, 4), second(4, 2);
  std::vector<Tensor> params = first.parameters();
  for (const Tensor& p : second.parameters()) params.push_back(p);
  sg::optim::SGD opt(params, {.lr = 0.1});
  const Tensor x = sg::ones({5, 3});
  auto forward = [&] { return sg::sum(second.forward(sg::tanh(first.forward(x)))); };
  sg::backward(forward());  // gradients exist, so step() writes
  const Tensor loss = forward();
  opt.step();
  // The second layer's backward reads its weight (for the gradient of its input).
  CHECK_THAT(message_of([&] { sg::backward(loss); }),
             Contains("'linear' saved its input 1 ((2, 4) float32, a leaf)"));
  // The usual order is silent: zero_grad, forward, backward, step, and again.
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    sg::backward(forward());
    opt.step();
  }
}

TEST_CASE("a tensor no gradient needs is not saved: mul by a constant, linear on data", "[versions]") {
  // As PyTorch: mul saves b only when a needs a gradient, and a only when b does.
  Tensor w = vec({1, 2, 3}).set_requires_grad();
  Tensor c = vec({4, 5, 6});
  const Tensor loss = sg::sum(w * c);
  sg::kernel::scale_(w, 10);  // dloss/dw = c does not read w
  sg::backward(loss);
  CHECK(grad_of(w) == std::vector<double>{4, 5, 6});
  const Tensor again = sg::sum(w * c);
  sg::kernel::scale_(c, 10);  // but it reads c
  CHECK_THAT(message_of([&] { sg::backward(again); }), Contains("'mul' saved its input 1 ((3) float64, a leaf)"));
}

TEST_CASE("max: changing the maximum in place after max() is caught, not sent to the wrong element",
          "[versions]") {
  Tensor m = vec({1, 5, 3}).set_requires_grad();
  const Tensor top = sg::max(m);
  {
    sg::NoGradGuard no_grad;
    sg::kernel::copy_(m, vec({9, 5, 3}));  // the argmax would now be element 0
  }
  CHECK_THAT(message_of([&] { sg::backward(top); }),
             Contains("'max' saved its input 0 ((3) float64 made by 'reshape')") && Contains("in-place"));
  CHECK_FALSE(m.grad().defined());
}

TEST_CASE("an op that saved its output catches an in-place change of the output", "[versions]") {
  const Tensor x = vec({0, 1, 2}).set_requires_grad();
  Tensor e = sg::exp(x);
  const Tensor loss = sg::sum(e * 2.0);
  sg::kernel::add_(e, vec({1, 1, 1}));  // exp's backward reads its output
  CHECK_THAT(message_of([&] { sg::backward(loss); }),
             Contains("'exp' saved its output ((3) float64)") && Contains("in-place"));
}

TEST_CASE("a view shares the version of the tensor it views", "[versions]") {
  Tensor w = vec({1, 2, 3, 4}).set_requires_grad();
  const Tensor r = sg::reshape(w, {2, 2});
  const Tensor loss = sg::sum(r * r);
  Tensor plain = w.detach();  // same storage, no graph
  sg::kernel::scale_(plain, 3);
  CHECK_THAT(message_of([&] { sg::backward(loss); }), Contains("'mul' saved its input 0 ((2, 2) float64 made by 'reshape')"));
}

TEST_CASE("no false alarms: changes before use, inputs no backward reads, steps after backward",
          "[versions]") {
  SECTION("changed before it is used") {
    Tensor w = vec({1, 2, 3}).set_requires_grad();
    sg::kernel::add_(w, vec({1, 1, 1}));
    sg::backward(sg::sum(w * w));
    CHECK(grad_of(w) == std::vector<double>{4, 6, 8});
  }
  SECTION("add, sum, reshape and affine read no input values in backward, as in PyTorch") {
    Tensor a = vec({1, 2, 3}).set_requires_grad();
    Tensor b = vec({4, 5, 6}).set_requires_grad();
    const Tensor loss = sg::sum(sg::reshape(a + b, {3, 1}) * 2.0 + 1.0);
    sg::kernel::add_(a, vec({100, 100, 100}));
    sg::kernel::fill_(b, -1);
    sg::backward(loss);
    CHECK(grad_of(a) == std::vector<double>{2, 2, 2});
    CHECK(grad_of(b) == std::vector<double>{2, 2, 2});
  }
  SECTION("zero_grad and step after backward, then a new graph") {
    Tensor w = vec({1, 2, 3}).set_requires_grad();
    sg::optim::SGD opt({w}, {.lr = 0.5});
    for (int i = 0; i < 3; ++i) {
      opt.zero_grad();
      sg::backward(sg::sum(w * w));
      opt.step();  // w <- w - 0.5 * 2w = 0
    }
    CHECK(w.to_vector<double>() == std::vector<double>{0, 0, 0});
  }
  SECTION("a gradient changed in place (clipping) is not a saved tensor") {
    Tensor w = vec({3, 4}).set_requires_grad();
    sg::backward(sg::sum(w * w));
    CHECK(sg::optim::clip_grad_norm({w}, 1.0) == Approx(10.0));
    sg::backward(sg::sum(w * w));  // accumulates into the clipped .grad
    CHECK(grad_of(w)[0] == Approx(0.6 + 6).epsilon(1e-5));
  }
}

TEST_CASE("retain_graph: a step between two backward passes through one graph is caught", "[versions]") {
  Tensor w = vec({1, 2}).set_requires_grad();
  sg::optim::SGD opt({w}, {.lr = 0.1});
  const Tensor loss = sg::sum(w * w);
  sg::backward(loss, Tensor(), /*retain_graph=*/true);
  sg::backward(loss, Tensor(), true);  // nothing changed: fine
  CHECK(grad_of(w) == std::vector<double>{4, 8});
  opt.step();
  CHECK_THAT(message_of([&] { sg::backward(loss); }), Contains("'mul' saved its input"));
  CHECK(grad_of(w) == std::vector<double>{4, 8});
}

namespace {
// Custom ops, as a student writes them (autograd/engine.hpp: record).
Tensor square(const Tensor& x) {  // the first form: every input saved
  return sg::record("square", sg::kernel::mul(x, x), {x}, [x](const Tensor& g) -> sg::Grads {
    return {sg::kernel::mul(g, sg::kernel::affine(x, 2, 0))};
  });
}
Tensor shift(const Tensor& x) {  // reads nothing: saves {}
  return sg::record("shift", sg::kernel::affine(x, 1, 1), {x}, {}, [](const Tensor& g) -> sg::Grads { return {g}; });
}
Tensor cube_from_output(const Tensor& x) {  // y = x^3 saved with its output: dy = 3 y / x
  Tensor out = sg::kernel::pow(x, 3);
  return sg::record("cube", out, {x}, {x, out}, [x, y = out.detach()](const Tensor& g) -> sg::Grads {
    return {sg::kernel::mul(g, sg::kernel::div(sg::kernel::affine(y, 3, 0), x))};
  });
}
}  // namespace

TEST_CASE("custom ops: record() saves every input unless told what backward reads", "[versions]") {
  Tensor x = vec({1, 2}).set_requires_grad();
  const Tensor a = sg::sum(square(x)), b = sg::sum(shift(x));
  Tensor y = cube_from_output(x);
  const Tensor c = sg::sum(y);
  sg::kernel::add_(x, vec({1, 1}));
  CHECK_THAT(message_of([&] { sg::backward(a); }), Contains("'square' saved its input 0"));
  sg::backward(b);  // shift saved nothing
  CHECK(grad_of(x) == std::vector<double>{1, 1});
  CHECK_THAT(message_of([&] { sg::backward(c); }), Contains("'cube' saved its input 0"));

  Tensor z = vec({1, 2}).set_requires_grad();
  Tensor cz = cube_from_output(z);
  const Tensor lz = sg::sum(cz);
  sg::kernel::scale_(cz, 2);  // the output, which cube listed in saved
  CHECK_THAT(message_of([&] { sg::backward(lz); }), Contains("'cube' saved its output ((2) float64)"));
}

TEST_CASE("anomaly mode adds what the op read to the version error", "[versions]") {
  sg::AnomalyModeGuard anomaly;
  Tensor w = vec({1, 2}).set_requires_grad();
  const Tensor loss = sg::sum(sg::log(w) * 3.0);
  sg::kernel::add_(w, vec({1, 1}));
  CHECK_THAT(message_of([&] { sg::backward(loss); }),
             Contains("'log' saved its input 0 ((2) float64, a leaf)") &&
                 Contains("through 'sum' -> 'affine' -> 'log'") &&
                 Contains("the forward 'log' read (2) float64, a leaf"));
}

TEST_CASE("the version check costs no false alarm in a training loop with clipping and AdamW",
          "[versions]") {
  sg::Generator gen(5);
  sg::nn::Linear a(4, 8), b(8, 2);
  std::vector<Tensor> params = a.parameters();
  for (const Tensor& p : b.parameters()) params.push_back(p);
  sg::optim::AdamW opt(params, {});
  for (int step = 0; step < 5; ++step) {
    const Tensor x = sg::randn({6, 4}, gen);
    const Tensor loss = sg::mean(sg::pow(b.forward(sg::tanh(a.forward(x))), 2));
    opt.zero_grad();
    sg::backward(loss);
    sg::optim::clip_grad_norm(params, 0.5);
    opt.step();
  }
}
