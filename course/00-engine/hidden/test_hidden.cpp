// Hidden tests of assignment 0: the reverse pass (topological_order,
// accumulate, send_gradients, release) and NoGradGuard. Every gradient is
// compared with a formula evaluated here in long double, for random output
// gradients (never all ones), in float32 and float64. The graphs are made of
// ops defined in this file with sg::record and graph-free kernels (as a
// student writes a custom op), so that this grade depends on no other
// assignment's code.
#include <catch2/catch.hpp>

#include <pthread.h>

#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "autograd/engine.hpp"
#include "autograd/node.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "hidden_util.hpp"

using namespace hidden;
using Catch::Contains;
using sg::Grads;
namespace kernel = sg::kernel;

namespace {

// ---- the ops of these tests ----

// a * b (same shapes).
Tensor times(const Tensor& a, const Tensor& b) {
  return sg::record("times", kernel::mul(a, b), {a, b}, [a, b](const Tensor& g) -> Grads {
    return {a.requires_grad() ? kernel::mul(g, b) : Tensor(), b.requires_grad() ? kernel::mul(g, a) : Tensor()};
  });
}

// a * b, whose backward returns a gradient for both inputs, whether they
// require grad or not (allowed: the engine must not keep one for a constant).
Tensor lazy_times(const Tensor& a, const Tensor& b) {
  return sg::record("lazy_times", kernel::mul(a, b), {a, b},
                    [a, b](const Tensor& g) -> Grads { return {kernel::mul(g, b), kernel::mul(g, a)}; });
}

// a + b (same shapes). Its backward hands the very same tensor g to both
// inputs, as the library's add does: a gradient slot can share its buffer.
Tensor plus(const Tensor& a, const Tensor& b) {
  return sg::record("plus", kernel::add(a, b), {a, b}, {},
                    [ra = a.requires_grad(), rb = b.requires_grad()](const Tensor& g) -> Grads {
                      return {ra ? g : Tensor(), rb ? g : Tensor()};
                    });
}

// s x.
Tensor scale(const Tensor& x, double s) {
  return sg::record("scale", kernel::affine(x, s, 0.0), {x}, {},
                    [s](const Tensor& g) -> Grads { return {kernel::affine(g, s, 0.0)}; });
}

// exp(x); its backward reads the output.
Tensor expo(const Tensor& x) {
  Tensor out = kernel::exp(x);
  return sg::record("expo", out, {x}, {out}, [y = out.detach()](const Tensor& g) -> Grads {
    return {kernel::mul(g, y)};
  });
}

// x reshaped; its backward returns a view of g (sharing g's buffer).
Tensor view(const Tensor& x, const Shape& shape) {
  return sg::record("view", kernel::reshape(x, shape), {x}, {},
                    [from = x.shape()](const Tensor& g) -> Grads { return {kernel::reshape(g, from)}; });
}

// The sum of all elements, shape ().
Tensor total(const Tensor& x) {
  return sg::record("total", kernel::sum(x), {x}, {},
                    [from = x.shape()](const Tensor& g) -> Grads { return {kernel::broadcast_to(g, from)}; });
}

// x itself, whose backward sends nothing to its input.
Tensor stop(const Tensor& x, int* calls) {
  return sg::record("stop", kernel::affine(x, 1.0, 0.0), {x}, {}, [calls](const Tensor&) -> Grads {
    ++*calls;
    return {Tensor()};
  });
}

// 2 x; its backward counts its calls and adds up the gradients it received.
Tensor counted(const Tensor& x, int* calls, std::vector<double>* received) {
  return sg::record("counted", kernel::affine(x, 2.0, 0.0), {x}, {}, [calls, received](const Tensor& g) -> Grads {
    ++*calls;
    const auto v = kernel::to(g, sg::float64).to_vector<double>();
    received->insert(received->end(), v.begin(), v.end());
    return {kernel::affine(g, 2.0, 0.0)};
  });
}

// ---- helpers ----

// v rounded to T, so the formulas see the values the ops see.
template <class T>
std::vector<double> as(std::vector<double> v) {
  for (auto& x : v) x = static_cast<double>(static_cast<T>(x));
  return v;
}

template <class T>
Tensor leaf(const std::vector<double>& v, const Shape& s) {
  return tensor(v, s, sg::dtype_of<T>).set_requires_grad();
}

template <class T>
Tensor constant(const std::vector<double>& v, const Shape& s) {
  return tensor(v, s, sg::dtype_of<T>);
}

template <class T>
void check(const Tensor& got, const Shape& s, const std::vector<long double>& want, const char* what) {
  INFO(what);
  REQUIRE(got.defined());
  test_util::check_values<T>(got, s, std::vector<double>(want.begin(), want.end()), rel_tol<T>() * 10,
                             abs_tol<T>() * 10);
}

// Runs fn on a thread whose stack is 1 MB: a recursion over 100,000 nodes
// overflows it, whatever its frames. An exception is rethrown here.
void on_small_stack(const std::function<void()>& fn) {
  struct Job {
    const std::function<void()>* fn;
    std::exception_ptr error;
  } job{&fn, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t{1} << 20);
  pthread_t t;
  const int rc = pthread_create(
      &t, &attr,
      [](void* p) -> void* {
        auto* j = static_cast<Job*>(p);
        try {
          (*j->fn)();
        } catch (...) {
          j->error = std::current_exception();
        }
        return nullptr;
      },
      &job);
  pthread_attr_destroy(&attr);
  REQUIRE(rc == 0);
  pthread_join(t, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

// ---- 0.1 ----

template <class T>
void diamonds(uint64_t seed) {
  const Shape s{2, 3};
  const auto xv = as<T>(randoms(s, seed, 0.5)), gv = as<T>(randoms(s, seed + 1));
  // c = exp(x) feeds y twice: directly and through e = exp(c), in both
  // orders of y's inputs; dy/dx = g e (1 + c) c.
  for (const bool c_first : {true, false}) {
    INFO((c_first ? "y = c * exp(c)" : "y = exp(c) * c"));
    Tensor x = leaf<T>(xv, s);
    Tensor c = expo(x);
    Tensor y = c_first ? times(c, expo(c)) : times(expo(c), c);
    sg::backward(y, constant<T>(gv, s));
    std::vector<long double> want(xv.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const long double ci = std::exp(static_cast<long double>(xv[i]));
      want[i] = gv[i] * std::exp(ci) * (1 + ci) * ci;
    }
    check<T>(x.grad(), s, want, "diamond through exp");
  }
  // A ladder of ten diamonds: h <- plus(scale(h, 0.5), times(h, t_k)), the
  // two sides swapped every other rung; dy/dx = g prod_k (0.5 + t_k).
  std::vector<std::vector<double>> ts;
  for (int k = 0; k < 10; ++k) ts.push_back(as<T>(randoms(s, seed + 10 + static_cast<uint64_t>(k), 0.3)));
  Tensor x = leaf<T>(xv, s);
  Tensor h = x;
  for (int k = 0; k < 10; ++k) {
    Tensor left = scale(h, 0.5), right = times(h, constant<T>(ts[static_cast<size_t>(k)], s));
    h = k % 2 ? plus(left, right) : plus(right, left);
  }
  sg::backward(h, constant<T>(gv, s));
  std::vector<long double> want(xv.size());
  for (size_t i = 0; i < want.size(); ++i) {
    long double p = gv[i];
    for (const auto& t : ts) p *= 0.5L + t[i];
    want[i] = p;
  }
  check<T>(x.grad(), s, want, "ladder of ten diamonds");
}

// ---- 0.2 ----

template <class T>
void used_three_times(uint64_t seed) {
  const Shape s{3, 2};
  const auto xv = as<T>(randoms(s, seed, 0.5)), wv = as<T>(randoms(s, seed + 1)), vv = as<T>(randoms(s, seed + 2)),
             gv = as<T>(randoms(s, seed + 3));
  {  // a leaf used three times: y = x * x + x * w, dy/dx = g (2x + w)
    Tensor x = leaf<T>(xv, s), w = constant<T>(wv, s);
    sg::backward(plus(times(x, x), times(x, w)), constant<T>(gv, s));
    std::vector<long double> want(xv.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = gv[i] * (2.0L * xv[i] + wv[i]);
    check<T>(x.grad(), s, want, "leaf x in x * x + x * w");
  }
  {  // a node used three times by three ops: c = exp(x), y = c w - 2c + c v
    Tensor x = leaf<T>(xv, s), w = constant<T>(wv, s), v = constant<T>(vv, s);
    Tensor c = expo(x);
    Tensor y = plus(plus(times(c, w), scale(c, -2.0)), times(v, c));
    const Grads gr = sg::grad(y, {x}, constant<T>(gv, s));
    std::vector<long double> want(xv.size());
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = gv[i] * (static_cast<long double>(wv[i]) - 2 + vv[i]) * std::exp(static_cast<long double>(xv[i]));
    check<T>(gr[0], s, want, "node c in c w - 2c + v c (grad)");
    REQUIRE_FALSE(x.grad().defined());
  }
  {  // a node used three times, twice by the same op: y = c * c + c
    Tensor x = leaf<T>(xv, s);
    Tensor c = expo(x);
    sg::backward(plus(times(c, c), c), constant<T>(gv, s));
    std::vector<long double> want(xv.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const long double ci = std::exp(static_cast<long double>(xv[i]));
      want[i] = gv[i] * (2 * ci + 1) * ci;
    }
    check<T>(x.grad(), s, want, "node c in c * c + c");
  }
}

}  // namespace

TEST_CASE("0.1 diamonds: a node read twice gets both gradients before its backward runs", "[a0][a0.1]") {
  diamonds<double>(11);
  diamonds<float>(12);
}

TEST_CASE("0.2 a tensor used three times sums its three gradients: a leaf and a node", "[a0][a0.2]") {
  used_three_times<double>(21);
  used_three_times<float>(22);
}

TEST_CASE("0.3 a gradient shared by two inputs or by a view is never changed in place", "[a0][a0.3]") {
  const Shape s{2, 3}, flat{6};
  const auto xv = randoms(s, 31), yv = randoms(s, 32), gv = randoms(flat, 33);
  std::vector<long double> want_x(6), want_y(6);
  for (size_t i = 0; i < 6; ++i) want_x[i] = 4.0L * gv[i], want_y[i] = gv[i];
  // y' = view(3x) + (view(x) + view(y)): plus hands one g to both of its
  // inputs, and view's backward returns a view of it, so x's and y's sums
  // start out sharing a buffer; x then gets 3g more.
  for (const int order : {0, 1, 2, 3}) {
    INFO("order " << order);
    Tensor x = leaf<double>(xv, s), y = leaf<double>(yv, s);
    Tensor g = constant<double>(gv, flat);
    Tensor h = order % 2 ? plus(view(y, flat), view(x, flat)) : plus(view(x, flat), view(y, flat));
    Tensor r = view(scale(x, 3.0), flat);
    Tensor out = order < 2 ? plus(r, h) : plus(h, r);
    sg::backward(out, g);
    check<double>(kernel::reshape(x.grad(), flat), flat, want_x, "x");
    check<double>(kernel::reshape(y.grad(), flat), flat, want_y, "y");
    std::vector<long double> g_still(gv.begin(), gv.end());
    check<double>(g, flat, g_still, "the gradient passed to backward is unchanged");
  }
  // The same through nodes: a = exp(x) and b = exp(y) share plus's g; a gets 3g more.
  for (const bool a_first : {true, false}) {
    INFO((a_first ? "a + b" : "b + a"));
    Tensor x = leaf<float>(as<float>(xv), s), y = leaf<float>(as<float>(yv), s);
    Tensor a = expo(x), b = expo(y);
    Tensor g = constant<float>(as<float>(gv), s);
    Tensor out = plus(scale(a, 3.0), a_first ? plus(a, b) : plus(b, a));
    sg::backward(out, g);
    const auto xf = as<float>(xv), yf = as<float>(yv), gf = as<float>(gv);
    std::vector<long double> wx(6), wy(6), g_still(gf.begin(), gf.end());
    for (size_t i = 0; i < 6; ++i) {
      wx[i] = 4.0L * gf[i] * std::exp(static_cast<long double>(xf[i]));
      wy[i] = gf[i] * std::exp(static_cast<long double>(yf[i]));
    }
    check<float>(x.grad(), s, wx, "x through a");
    check<float>(y.grad(), s, wy, "y through b");
    check<float>(g, s, g_still, "the gradient passed to backward is unchanged");
  }
}

TEST_CASE("0.4 unused branches get no gradient and raise no error", "[a0][a0.4]") {
  const Shape s{4};
  const auto xv = randoms(s, 41), gv = randoms(s, 42);
  Tensor x = leaf<double>(xv, s), unused = leaf<double>(randoms(s, 43), s), behind = leaf<double>(xv, s);
  Tensor side = expo(x);  // a branch from x that the output does not use
  int stop_calls = 0, below_calls = 0;
  std::vector<double> below_received;
  Tensor cut = stop(counted(plus(behind, x), &below_calls, &below_received), &stop_calls);
  // y = 3x + cut: cut's backward sends nothing, so nothing reaches `behind`.
  Tensor y = plus(scale(x, 3.0), cut);
  sg::backward(y, constant<double>(gv, s));
  std::vector<long double> want(4);
  for (size_t i = 0; i < 4; ++i) want[i] = 3.0L * gv[i];
  check<double>(x.grad(), s, want, "x gets 3g only");
  REQUIRE(stop_calls == 1);
  REQUIRE(below_calls == 0);  // no gradient reached it: its backward never runs
  REQUIRE_FALSE(behind.grad().defined());
  REQUIRE_FALSE(unused.grad().defined());
  // The branch the output did not use is untouched: it can still be differentiated.
  x.set_grad(Tensor());
  sg::backward(total(side));
  std::vector<long double> want_side(4);
  for (size_t i = 0; i < 4; ++i) want_side[i] = std::exp(static_cast<long double>(xv[i]));
  check<double>(x.grad(), s, want_side, "x through the unused branch");
  // grad() of an input the output does not depend on: undefined, no error.
  Tensor z = leaf<double>(xv, s);
  const Grads gr = sg::grad(total(scale(z, 2.0)), {z, unused});
  check<double>(gr[0], s, {2, 2, 2, 2}, "z");
  REQUIRE_FALSE(gr[1].defined());
}

TEST_CASE("0.5 a chain of 100000 nodes on a 1 MB stack: no recursion", "[a0][a0.5]") {
  const int64_t start = sg::Node::live_count();
  const int n = 100000;
  const std::vector<double> xv{0.75, -1.25}, gv{0.5, -2.0};
  {
    Tensor x = leaf<double>(xv, {2});
    Tensor h = x;
    long double prod = 1;
    for (int k = 0; k < n; ++k) {
      const double f = k % 3 == 0 ? 1.0001 : k % 3 == 1 ? 0.9999 : 0.99995;
      h = scale(h, f);
      prod *= f;
    }
    Tensor y = h;
    REQUIRE(sg::Node::live_count() == start + n);
    Grads first;
    on_small_stack([&] {
      sg::backward(y, constant<double>(gv, {2}), true);
      first = sg::grad(y, {x}, constant<double>(gv, {2}));  // without retain_graph: frees the chain
    });
    check<double>(x.grad(), {2}, {gv[0] * prod, gv[1] * prod}, "backward through the chain");
    check<double>(first[0], {2}, {gv[0] * prod, gv[1] * prod}, "grad through the chain");
    h = Tensor();
    REQUIRE(sg::Node::live_count() == start + 1);  // only y's own node
  }
  REQUIRE(sg::Node::live_count() == start);
}

TEST_CASE("0.6 retain_graph lets a pass run twice and the graph is freed by the last", "[a0][a0.6]") {
  const int64_t start = sg::Node::live_count();
  const Shape s{3};
  const auto xv = randoms(s, 61), gv = randoms(s, 62);
  {
    Tensor x = leaf<double>(xv, s);
    Tensor h = expo(scale(x, 0.5));
    Tensor y = times(h, h);  // exp(x), d/dx = g exp(x)
    const int64_t nodes = sg::Node::live_count() - start;
    REQUIRE(nodes == 3);
    std::vector<long double> once(3);
    for (size_t i = 0; i < 3; ++i) once[i] = gv[i] * std::exp(static_cast<long double>(xv[i]));
    auto times_k = [&](long double k) {
      std::vector<long double> v(once);
      for (auto& e : v) e *= k;
      return v;
    };
    Tensor g = constant<double>(gv, s);
    sg::backward(y, g, true);
    check<double>(x.grad(), s, once, "first pass");
    REQUIRE(sg::Node::live_count() == start + nodes);  // retained
    sg::backward(y, g, true);
    check<double>(x.grad(), s, times_k(2), "second pass adds into .grad");
    check<double>(sg::grad(y, {x}, g, true)[0], s, once, "grad through the retained graph");
    sg::backward(y, g);  // the last pass frees the graph as it goes
    check<double>(x.grad(), s, times_k(3), "third pass");
    REQUIRE(sg::Node::live_count() == start + 2);  // y's and h's own nodes remain, holding nothing
    REQUIRE_THROWS_AS(sg::backward(y, g), sg::Error);
    REQUIRE_THROWS_WITH(sg::backward(y, g), Contains("already freed") && Contains("retain_graph"));
    REQUIRE_THROWS_AS(sg::grad(y, {x}, g), sg::Error);
    // h's node was freed by that pass too, though h is still alive.
    REQUIRE_THROWS_WITH(sg::backward(total(h)), Contains("already freed"));
    check<double>(x.grad(), s, times_k(3), ".grad after the refused passes");
  }
  REQUIRE(sg::Node::live_count() == start);
}

TEST_CASE("0.7 errors: a non-scalar output without a gradient and a wrong gradient shape name the problem",
          "[a0][a0.7]") {
  const Shape s{2, 3};
  Tensor x = leaf<double>(randoms(s, 71), s);
  Tensor y = expo(x);
  // The pass works with a gradient...
  sg::backward(y, constant<double>(randoms(s, 72), s), true);
  REQUIRE(x.grad().defined());
  // ... and without one it needs a scalar.
  REQUIRE_THROWS_AS(sg::backward(y), sg::Error);
  REQUIRE_THROWS_WITH(sg::backward(y), Contains("not a scalar") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::grad(y, {x}), Contains("not a scalar"));
  // A custom backward's gradient of the wrong shape is refused, naming the op,
  // before it reaches anything.
  Tensor bad = sg::record("bad_shape", kernel::affine(x, 1.0, 0.0), {x},
                          [](const Tensor& g) -> Grads { return {kernel::reshape(g, {3, 2})}; });
  x.set_grad(Tensor());
  REQUIRE_THROWS_WITH(sg::backward(total(bad)), Contains("backward of 'bad_shape' returned a gradient of shape (3, 2)"));
  REQUIRE_FALSE(x.grad().defined());
  Tensor bad_node = sg::record("bad_dtype", kernel::affine(y, 1.0, 0.0), {y},
                               [](const Tensor& g) -> Grads { return {kernel::to(g, sg::float32)}; });
  REQUIRE_THROWS_WITH(sg::backward(total(bad_node)), Contains("'bad_dtype'") && Contains("(float32)"));
}

TEST_CASE("0.8 only leaves that require grad get a .grad: never constants or tensors made by ops",
          "[a0][a0.8]") {
  const Shape s{2, 2};
  const auto xv = randoms(s, 81), cv = randoms(s, 82), gv = randoms(s, 83);
  Tensor x = leaf<double>(xv, s), c = constant<double>(cv, s);
  Tensor h = times(x, c);      // made by an op
  Tensor y = times(h, plus(h, c));  // h (h + c), c used three times
  sg::backward(y, constant<double>(gv, s));
  // dy/dh = 2h + c, dh/dx = c
  std::vector<long double> want(4);
  for (size_t i = 0; i < 4; ++i) {
    const long double hi = static_cast<long double>(xv[i]) * cv[i];
    want[i] = gv[i] * (2 * hi + cv[i]) * cv[i];
  }
  check<double>(x.grad(), s, want, "x");
  REQUIRE_FALSE(c.grad().defined());
  REQUIRE_FALSE(c.requires_grad());
  REQUIRE_FALSE(h.grad().defined());
  REQUIRE_FALSE(y.grad().defined());
  // float32, a constant that is the only other input of an op
  Tensor xf = leaf<float>(as<float>(xv), s), cf = constant<float>(as<float>(cv), s);
  sg::backward(total(times(cf, expo(xf))));
  std::vector<long double> wf(4);
  for (size_t i = 0; i < 4; ++i)
    wf[i] = static_cast<long double>(as<float>(cv)[i]) * std::exp(static_cast<long double>(as<float>(xv)[i]));
  check<float>(xf.grad(), s, wf, "float32 x");
  REQUIRE_FALSE(cf.grad().defined());
  // A backward that returns a gradient for a constant too: the constant keeps none.
  Tensor x2 = leaf<double>(xv, s), c2 = constant<double>(cv, s);
  sg::backward(lazy_times(c2, lazy_times(x2, c2)), constant<double>(gv, s));
  std::vector<long double> w2(4);
  for (size_t i = 0; i < 4; ++i) w2[i] = static_cast<long double>(gv[i]) * cv[i] * cv[i];
  check<double>(x2.grad(), s, w2, "x2 in c x2 c");
  REQUIRE_FALSE(c2.grad().defined());
}

TEST_CASE("0.9 NoGradGuard records nothing and nests and is restored after an exception", "[a0][a0.9]") {
  const int64_t start = sg::Node::live_count();
  Tensor x = leaf<double>({1.5, -0.5}, {2});
  REQUIRE(sg::grad_enabled());
  {
    sg::NoGradGuard outer;
    REQUIRE_FALSE(sg::grad_enabled());
    Tensor y = times(expo(x), x);
    check<double>(y, {2}, {1.5L * std::exp(1.5L), -0.5L * std::exp(-0.5L)}, "values under no_grad");
    REQUIRE_FALSE(y.requires_grad());
    REQUIRE(y.is_leaf());
    REQUIRE(sg::Node::live_count() == start);
    {
      sg::NoGradGuard inner;
      REQUIRE_FALSE(sg::grad_enabled());
    }
    REQUIRE_FALSE(sg::grad_enabled());  // the inner guard put back "off"
    {
      sg::EnableGradGuard on;
      REQUIRE(sg::grad_enabled());
      {
        sg::NoGradGuard again;
        REQUIRE_FALSE(sg::grad_enabled());
      }
      REQUIRE(sg::grad_enabled());  // put back "on"
    }
    REQUIRE_FALSE(sg::grad_enabled());
  }
  REQUIRE(sg::grad_enabled());
  // An exception inside the guard's scope.
  try {
    sg::NoGradGuard guard;
    throw std::runtime_error("thrown under no_grad");
  } catch (const std::runtime_error&) {
  }
  REQUIRE(sg::grad_enabled());
  try {
    sg::NoGradGuard guard;
    (void)times(x, constant<double>({1, 2, 3}, {3}));  // a shape error
  } catch (const sg::Error&) {
  }
  REQUIRE(sg::grad_enabled());
  // Recording and the pass work as before the guards.
  Tensor y = times(x, x);
  REQUIRE(y.requires_grad());
  sg::backward(total(y));
  check<double>(x.grad(), {2}, {3.0L, -1.0L}, "x after the guards");
  // Per thread: a guard on another thread leaves this one recording.
  bool other = true;
  std::thread t([&] {
    sg::NoGradGuard g;
    other = sg::grad_enabled();
  });
  t.join();
  REQUIRE_FALSE(other);
  REQUIRE(sg::grad_enabled());
}

TEST_CASE("0.10 each node's backward runs once per pass with the sum of all its consumers' gradients",
          "[a0][a0.10]") {
  const Shape s{3};
  const auto xv = randoms(s, 101), gv = randoms(s, 102);
  int calls = 0;
  std::vector<double> received;
  Tensor x = leaf<double>(xv, s);
  Tensor c = counted(x, &calls, &received);  // c = 2x
  // c feeds four consumers along paths of lengths 1 to 4: dy/dc = g (1 + 2 + 3 + 4) in all.
  Tensor y = plus(plus(scale(c, 1.0), scale(scale(c, 2.0), 1.0)),
                  plus(scale(scale(scale(c, 3.0), 1.0), 1.0), scale(scale(scale(scale(c, 4.0), 1.0), 1.0), 1.0)));
  Tensor g = constant<double>(gv, s);
  for (int pass = 1; pass <= 2; ++pass) {
    INFO("pass " << pass);
    received.clear();
    sg::backward(y, g, true);
    REQUIRE(calls == pass);
    std::vector<long double> sum(3), dx(3);
    for (size_t i = 0; i < 3; ++i) sum[i] = 10.0L * gv[i], dx[i] = 20.0L * gv[i] * pass;
    REQUIRE(received.size() == 3);
    for (size_t i = 0; i < 3; ++i) REQUIRE(received[i] == Approx(static_cast<double>(sum[i])).epsilon(1e-12));
    check<double>(x.grad(), s, dx, "x");
  }
}

TEST_CASE("0.11 grad returns what backward adds into .grad and changes no .grad", "[a0][a0.11]") {
  for (const bool f32 : {false, true}) {
    INFO((f32 ? "float32" : "float64"));
    const Shape s{2, 2};
    const auto xv = randoms(s, 111, 0.5), wv = randoms(s, 112), gv = randoms(s, 113);
    auto run = [&](auto tag, bool use_grad) {
      using T = decltype(tag);
      Tensor x = leaf<T>(as<T>(xv), s), w = leaf<T>(as<T>(wv), s), other = leaf<T>(as<T>(wv), s);
      Tensor e = expo(x);
      Tensor y = plus(times(e, w), times(e, e));  // e w + e^2
      const auto xr = as<T>(xv), wr = as<T>(wv), gr = as<T>(gv);
      std::vector<long double> dx(4), dw(4);
      for (size_t i = 0; i < 4; ++i) {
        const long double ei = std::exp(static_cast<long double>(xr[i]));
        dx[i] = gr[i] * (wr[i] + 2 * ei) * ei;
        dw[i] = gr[i] * ei;
      }
      if (use_grad) {
        const Grads got = sg::grad(y, {w, other, x}, constant<T>(gr, s));
        REQUIRE(got.size() == 3);
        check<T>(got[2], s, dx, "grad x");
        check<T>(got[0], s, dw, "grad w");
        REQUIRE_FALSE(got[1].defined());
        REQUIRE_FALSE(x.grad().defined());
        REQUIRE_FALSE(w.grad().defined());
      } else {
        sg::backward(y, constant<T>(gr, s));
        check<T>(x.grad(), s, dx, "backward x");
        check<T>(w.grad(), s, dw, "backward w");
        REQUIRE_FALSE(other.grad().defined());
      }
    };
    for (const bool use_grad : {true, false}) {
      if (f32)
        run(float(), use_grad);
      else
        run(double(), use_grad);
    }
  }
}

namespace {

// x squared, whose closure holds x itself: a tensor made by an op holds its
// node, so a released node that kept its closure would keep x's subgraph.
Tensor square_capturing(const Tensor& x) {
  return sg::record("square_capturing", kernel::mul(x, x), {x}, {},
                    [x](const Tensor& g) -> Grads { return {kernel::affine(kernel::mul(g, x), 2.0, 0.0)}; });
}

// x squared, with x in the node's saved tensors (the closure holds a detached copy).
Tensor square_saving(const Tensor& x) {
  return sg::record("square_saving", kernel::mul(x, x), {x}, {x}, [xd = x.detach()](const Tensor& g) -> Grads {
    return {kernel::affine(kernel::mul(g, xd), 2.0, 0.0)};
  });
}

// y = op(u) for u = 1.5 x + (-0.5 x) = x (three nodes): after the pass only
// y's own node may remain, and it holds nothing: not u through its closure
// (square_capturing), nor u's buffer through its saved tensors (square_saving).
template <class T>
void released_nodes_hold_nothing(uint64_t seed, bool saving) {
  INFO((saving ? "y's op saves u" : "y's op captures u in its closure"));
  const int64_t start = sg::Node::live_count();
  const Shape s{4};
  const auto xv = as<T>(randoms(s, seed)), gv = as<T>(randoms(s, seed + 1));
  {
    Tensor x = leaf<T>(xv, s);
    Tensor y;
    std::weak_ptr<sg::Storage> buffer;  // u's
    {
      // Every intermediate goes out of scope here: only the graph's own
      // references keep u and its node alive.
      const Tensor u = plus(scale(x, 1.5), scale(x, -0.5));
      buffer = u.impl()->storage;
      y = saving ? square_saving(u) : square_capturing(u);
    }
    REQUIRE(sg::Node::live_count() == start + 4);
    sg::backward(y, constant<T>(gv, s));
    std::vector<long double> want(4);
    for (size_t i = 0; i < 4; ++i) want[i] = 2.0L * static_cast<long double>(gv[i]) * static_cast<long double>(xv[i]);
    check<T>(x.grad(), s, want, "gradient of (1.5 x - 0.5 x)^2");
    // Only y's own node remains: released, holding no closure, no inputs,
    // no saved tensors, so neither u's node nor u's buffer lives on.
    INFO("live nodes after the pass: " << sg::Node::live_count() - start << ", want 1 (y's own); u's buffer "
                                       << (buffer.expired() ? "freed" : "still alive"));
    REQUIRE(sg::Node::live_count() == start + 1);
    REQUIRE(y.node()->released);
    REQUIRE_FALSE(static_cast<bool>(y.node()->backward));
    REQUIRE(y.node()->inputs.empty());
    REQUIRE(y.node()->saved.empty());
    REQUIRE(buffer.expired());
  }
  REQUIRE(sg::Node::live_count() == start);
}

// a * b whose backward, with recording on (a create_graph pass), is made of
// times_twice itself, so its gradient can be differentiated again, as the
// library's own ops are.
Tensor times_twice(const Tensor& a, const Tensor& b) {
  return sg::record("times_twice", kernel::mul(a, b), {a, b}, [a, b](const Tensor& g) -> Grads {
    if (sg::grad_enabled())
      return {a.requires_grad() ? times_twice(g, b) : Tensor(), b.requires_grad() ? times_twice(g, a) : Tensor()};
    return {a.requires_grad() ? kernel::mul(g, b) : Tensor(), b.requires_grad() ? kernel::mul(g, a) : Tensor()};
  });
}

// y = (c x)^2 elementwise, h = c x a node read by both inputs of y's op:
// with create_graph, h's two gradients are summed with their histories
// (the engine's add), so first = dy/dx G = 2 c^2 x G and its gradient for
// the cotangent W, 2 c^2 G W, are right; a sum that keeps one part's
// history only gives half of the second derivative.
template <class T>
void second_derivative_through_a_node_read_twice(uint64_t seed) {
  const Shape s{5};
  const auto xv = randoms(s, seed), cv = randoms(s, seed + 1), gv = randoms(s, seed + 2), wv = randoms(s, seed + 3);
  const Tensor x = constant<T>(xv, s).set_requires_grad(), c = constant<T>(cv, s);
  const Tensor h = times_twice(c, x);
  const Tensor y = times_twice(h, h);
  const Tensor first = sg::grad(y, {x}, constant<T>(gv, s), sg::BackwardOptions{false, true})[0];
  std::vector<long double> want1, want2;
  for (size_t i = 0; i < xv.size(); ++i) {
    const long double c2 = static_cast<long double>(cv[i]) * cv[i];
    want1.push_back(2 * c2 * xv[i] * gv[i]);
    want2.push_back(2 * c2 * gv[i] * wv[i]);
  }
  check<T>(first, s, want1, "the create_graph gradient of (c x)^2");
  INFO("the create_graph gradient must have a history: the sum of h's two gradients recorded");
  REQUIRE(first.requires_grad());
  const Tensor second = sg::grad(first, {x}, constant<T>(wv, s))[0];
  check<T>(second, s, want2, "its derivative in x (the second derivative of (c x)^2)");
}

}  // namespace

TEST_CASE("0.12 a released node frees its closure and saved tensors: the nodes and buffers they held die with the pass",
          "[a0][a0.12]") {
  for (const bool saving : {false, true}) {
    released_nodes_hold_nothing<float>(1201, saving);
    released_nodes_hold_nothing<double>(1203, saving);
  }
}

TEST_CASE("0.13 with create_graph a node read twice sums its gradients with their histories: second derivatives right",
          "[a0][a0.13]") {
  second_derivative_through_a_node_read_twice<double>(1301);
  second_derivative_through_a_node_read_twice<float>(1305);
}
