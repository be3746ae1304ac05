// Hidden tests of assignment 1: the backward of add, mul and div with
// broadcasting, and kernel::sum_to. Gradients are compared with values
// computed here by naive loops over the broadcast result, for random
// (never all-ones) output gradients, in float32 and float64, and with
// float64 gradchecks.
#include <catch2/catch.hpp>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "hidden_util.hpp"

using namespace hidden;
using Catch::Contains;

namespace {

// The broadcast pairs: trailing vectors, inner and leading size-1 axes, both
// sides broadcast, shape () and empty tensors.
const std::vector<std::pair<Shape, Shape>> kPairs = {
    {{3, 4}, {4}},       {{3, 1, 4}, {2, 1}}, {{1}, {2, 3}},      {{2, 3, 1}, {1, 3, 5}},
    {{2, 3}, {2, 3}},    {{}, {2, 2}},         {{4, 1, 1}, {1, 2, 3}}, {{0, 3}, {3}},
};

Shape out_shape(const Shape& a, const Shape& b) { return sg::kernel::broadcast_shapes(a, b, "test"); }

// da[i] = sum over the outputs o that read a[i] of g[o] * da_factor(o), the same for b.
template <class T>
void check_binary(const char* op, const std::function<Tensor(const Inputs&)>& fn,
                  const std::function<double(double, double, double)>& dfa,
                  const std::function<double(double, double, double)>& dfb, uint64_t seed, double b_shift) {
  for (const auto& [sa, sb] : kPairs) {
    const Shape so = out_shape(sa, sb);
    INFO(op << " of " << test_util::shape_str(sa) << " and " << test_util::shape_str(sb));
    std::vector<double> a = randoms(sa, seed), b = randoms(sb, seed + 1), g = randoms(so, seed + 2);
    for (auto& v : b) v += v >= 0 ? b_shift : -b_shift;  // keeps div's denominators away from 0
    // Round the inputs to T first, so the reference sees the values the op sees.
    for (auto* v : {&a, &b, &g})
      for (auto& x : *v) x = static_cast<double>(static_cast<T>(x));
    std::vector<long double> da(a.size()), db(b.size());
    for (int64_t o = 0; o < count(so); ++o) {
      const int64_t ia = broadcast_source(o, so, sa), ib = broadcast_source(o, so, sb);
      da[static_cast<size_t>(ia)] += static_cast<long double>(g[static_cast<size_t>(o)]) * dfa(a[ia], b[ib], 0);
      db[static_cast<size_t>(ib)] += static_cast<long double>(g[static_cast<size_t>(o)]) * dfb(a[ia], b[ib], 0);
    }
    const auto grads = grads_of(fn, {a, b}, {sa, sb}, g, sg::dtype_of<T>);
    const std::vector<double> wa(da.begin(), da.end()), wb(db.begin(), db.end());
    test_util::check_values<T>(grads[0], sa, wa, rel_tol<T>() * 10, abs_tol<T>() * 10);
    test_util::check_values<T>(grads[1], sb, wb, rel_tol<T>() * 10, abs_tol<T>() * 10);
  }
}

}  // namespace

TEST_CASE("1.1 add backward sums g over the broadcast axes in float32 and float64", "[a1][a1.1]") {
  auto fn = [](const Inputs& in) { return sg::add(in[0], in[1]); };
  auto one = [](double, double, double) { return 1.0; };
  check_binary<double>("add", fn, one, one, 11, 0);
  check_binary<float>("add", fn, one, one, 12, 0);
}

TEST_CASE("1.2 mul backward is g b and g a summed over the broadcast axes", "[a1][a1.2]") {
  auto fn = [](const Inputs& in) { return sg::mul(in[0], in[1]); };
  auto da = [](double, double b, double) { return b; };
  auto db = [](double a, double, double) { return a; };
  check_binary<double>("mul", fn, da, db, 21, 0);
  check_binary<float>("mul", fn, da, db, 22, 0);
}

TEST_CASE("1.3 div backward is g / b and -g a / b^2 summed over the broadcast axes", "[a1][a1.3]") {
  auto fn = [](const Inputs& in) { return sg::div(in[0], in[1]); };
  auto da = [](double, double b, double) { return 1.0 / b; };
  auto db = [](double a, double b, double) { return -a / (b * b); };
  check_binary<double>("div", fn, da, db, 31, 0.5);
  check_binary<float>("div", fn, da, db, 32, 0.5);
}

TEST_CASE("1.4 add mul and div gradcheck in float64 for every broadcast pair", "[a1][a1.4]") {
  uint64_t seed = 40;
  for (const auto& [sa, sb] : kPairs) {
    if (count(sa) == 0 || count(sb) == 0) continue;  // nothing to check numerically
    const Tensor a = test_util::normal(sa, ++seed), b = test_util::normal(sb, ++seed);
    const Tensor bpos = sg::kernel::affine(sg::kernel::abs(b), 1.0, 0.5);
    const std::string shapes = test_util::shape_str(sa) + " and " + test_util::shape_str(sb);
    gradcheck("add " + shapes, [](const Inputs& in) { return in[0] + in[1]; }, {a, b});
    gradcheck("mul " + shapes, [](const Inputs& in) { return in[0] * in[1]; }, {a, b});
    gradcheck("div " + shapes, [](const Inputs& in) { return in[0] / in[1]; }, {a, bpos});
    // An input used twice: both gradients are added.
    gradcheck("mul twice " + shapes, [](const Inputs& in) { return (in[0] * in[1]) * in[0]; }, {a, b});
  }
}

TEST_CASE("1.5 gradients flow through permuted inputs and broadcast results", "[a1][a1.5]") {
  // Inputs that are a permutation of another tensor, and a chain of broadcasts.
  const Tensor a = test_util::normal({4, 3}, 51), b = test_util::normal({3, 1}, 52), c = test_util::normal({2, 1, 4}, 53);
  gradcheck("permuted a + b", [](const Inputs& in) { return sg::permute(in[0], {1, 0}) + in[1]; }, {a, b});
  gradcheck("chain", [](const Inputs& in) {
    return (sg::permute(in[0], {1, 0}) * in[1]) / (in[2] * in[2] + 1.0) - in[1];
  }, {a, b, c});
}

TEST_CASE("1.6 only the inputs that require grad get a gradient", "[a1][a1.6]") {
  for (int which = 0; which < 2; ++which) {
    Tensor a = test_util::normal({2, 3}, 61), b = test_util::normal({3}, 62);
    (which == 0 ? a : b).set_requires_grad();
    const Tensor g = test_util::normal({2, 3}, 63);
    for (int op = 0; op < 3; ++op) {
      Tensor x = a.detach(), y = b.detach();
      (which == 0 ? x : y).set_requires_grad();
      const Tensor y2 = y + 3.0;  // keeps denominators away from 0
      sg::backward(op == 0 ? x + y2 : op == 1 ? x * y2 : x / y2, g);
      CHECK((which == 0 ? x : y).grad().defined());
      CHECK(!(which == 0 ? y : x).grad().defined());
    }
  }
}

TEST_CASE("1.7 kernel::sum_to sums over leading and size-1 axes in float32 and float64", "[a1][a1.7]") {
  const Shape from{2, 3, 4, 5};
  const std::vector<Shape> targets = {{2, 3, 4, 5}, {3, 4, 5}, {5}, {1}, {}, {4, 1}, {2, 1, 1, 5},
                                      {1, 3, 1, 1}, {3, 1, 5}, {1, 1, 1, 1}};
  const std::vector<double> x = randoms(from, 71);
  for (const Shape& to : targets) {
    INFO("sum_to " << test_util::shape_str(to));
    std::vector<long double> want(static_cast<size_t>(count(to)));
    for (int64_t i = 0; i < count(from); ++i) want[static_cast<size_t>(broadcast_source(i, from, to))] += x[static_cast<size_t>(i)];
    const std::vector<double> w(want.begin(), want.end());
    test_util::check_values<double>(sg::kernel::sum_to(tensor(x, from, sg::float64), to), to, w, 1e-12, 1e-13);
    std::vector<double> xf(x.size());
    std::vector<long double> wantf(w.size());
    for (size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(x[i]);
    for (int64_t i = 0; i < count(from); ++i) wantf[static_cast<size_t>(broadcast_source(i, from, to))] += xf[static_cast<size_t>(i)];
    test_util::check_values<float>(sg::kernel::sum_to(tensor(xf, from, sg::float32), to), to,
                                   std::vector<double>(wantf.begin(), wantf.end()), 1e-5, 1e-5);
  }
  // An empty axis sums to zeros.
  test_util::check_values<double>(sg::kernel::sum_to(sg::zeros({0, 3}, sg::float64), {3}), {3}, {0, 0, 0}, 0, 0);
}

TEST_CASE("1.8 kernel::sum_to refuses a shape the tensor was not broadcast from", "[a1][a1.8]") {
  const Tensor x = sg::zeros({2, 3, 4}, sg::float64);
  // The message names both shapes.
  for (const Shape& to : {Shape{3}, Shape{2, 3, 4, 1}, Shape{5, 3, 4}, Shape{2, 1, 3}}) {
    INFO("sum_to " << test_util::shape_str(to));
    CHECK_THROWS_WITH(sg::kernel::sum_to(x, to), Contains("(2, 3, 4)") && Contains(test_util::shape_str(to)));
  }
  // Same number of elements, not a broadcast: still refused.
  CHECK_THROWS_WITH(sg::kernel::sum_to(sg::zeros({1, 4}, sg::float64), {2, 2}), Contains("(1, 4)") && Contains("(2, 2)"));
  CHECK_THROWS_WITH(sg::kernel::sum_to(sg::zeros({3, 4}, sg::float64), {4, 3}), Contains("(3, 4)") && Contains("(4, 3)"));
  // And a shape it was broadcast from is accepted.
  CHECK_NOTHROW(sg::kernel::sum_to(x, {3, 1}));
}

TEST_CASE("1.9 an input changed in place between forward and backward gives the version error or the forward's gradient",
          "[a1][a1.9]") {
  // div saves b and its output, not a: a backward that reads a again
  // (-g a / b^2 with the changed a) is silently wrong.
  const std::vector<std::pair<Shape, Shape>> pairs = {{{3, 4}, {4}}, {{2, 1, 3}, {4, 1}}};
  uint64_t seed = 190;
  for (const auto& [sa, sb] : pairs) {
    std::vector<double> a = randoms(sa, ++seed), b = randoms(sb, ++seed);
    for (auto& v : b) v += v >= 0 ? 1.5 : -1.5;
    const std::string shapes = test_util::shape_str(sa) + " and " + test_util::shape_str(sb);
    check_inplace_change("add of " + shapes, [](const Inputs& in) { return sg::add(in[0], in[1]); }, {a, b}, {sa, sb}, ++seed);
    check_inplace_change("mul of " + shapes, [](const Inputs& in) { return sg::mul(in[0], in[1]); }, {a, b}, {sa, sb}, ++seed);
    check_inplace_change("div of " + shapes, [](const Inputs& in) { return sg::div(in[0], in[1]); }, {a, b}, {sa, sb}, ++seed);
  }
}

namespace {

// div's gradients where b^2 underflows (|b| about 1e-200 in float64, 1e-30
// in float32) though every gradient is a normal number: -g a / b^2 must be
// computed as -(g / b) (a / b), never by dividing by b * b. First order
// (backward) and the create_graph form (grad with create_graph) alike.
template <class T>
void div_at_small_b(uint64_t seed, bool create_graph) {
  const double tiny = std::is_same_v<T, float> ? 1e-30 : 1e-200;
  const Shape s{2, 3};
  std::vector<double> a = randoms(s, seed), b = randoms(s, seed + 1), g = randoms(s, seed + 2);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<double>(static_cast<T>(a[i] * tiny));
    b[i] = static_cast<double>(static_cast<T>((b[i] < 0 ? -0.5 : 0.5) * tiny + b[i] * tiny));
    g[i] = static_cast<double>(static_cast<T>(g[i]));
  }
  std::vector<double> da(a.size()), db(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const long double A = a[i], B = b[i], G = g[i];
    da[i] = static_cast<double>(G / B);
    db[i] = static_cast<double>(-(G / B) * (A / B));
  }
  const Tensor at = tensor(a, s, sg::dtype_of<T>).set_requires_grad(), bt = tensor(b, s, sg::dtype_of<T>).set_requires_grad();
  const Tensor y = sg::div(at, bt);
  const sg::Grads got = sg::grad(y, {at, bt}, tensor(g, s, sg::dtype_of<T>), sg::BackwardOptions{false, create_graph});
  INFO((std::is_same_v<T, float> ? "float32" : "float64") << (create_graph ? ", create_graph form" : ", first order")
                                                          << ", |a| and |b| about " << tiny);
  test_util::check_values<T>(got[0], s, da, rel_tol<T>() * 10, 0.0);
  test_util::check_values<T>(got[1], s, db, rel_tol<T>() * 10, 0.0);
}

}  // namespace

TEST_CASE("1.10 div's gradients stay finite and right where b squared underflows: both dtypes and the create_graph form",
          "[a1][a1.10]") {
  for (const bool create_graph : {false, true}) {
    div_at_small_b<double>(1100, create_graph);
    div_at_small_b<float>(1110, create_graph);
  }
}

TEST_CASE("1.11 with recording on add mul and div's backward is recorded: their gradients differentiate again in the inputs and g",
          "[a1][a1.11]") {
  // The create_graph form (recording on, as sg::grad with create_graph and
  // hvp run it) for every broadcast pair; the other tests run the
  // first-order form (recording off).
  uint64_t seed = 1120;
  for (const auto& [sa, sb] : kPairs) {
    if (count(sa) == 0 || count(sb) == 0) continue;
    const Tensor a = test_util::normal(sa, ++seed), b = test_util::normal(sb, ++seed);
    const Tensor bpos = sg::kernel::affine(sg::kernel::abs(b), 1.0, 0.5);
    const std::string shapes = test_util::shape_str(sa) + " and " + test_util::shape_str(sb);
    check_create_graph_form("add " + shapes, [](const Inputs& in) { return sg::add(in[0], in[1]); }, {a, b}, ++seed);
    check_create_graph_form("mul " + shapes, [](const Inputs& in) { return sg::mul(in[0], in[1]); }, {a, b}, ++seed);
    check_create_graph_form("div " + shapes, [](const Inputs& in) { return sg::div(in[0], in[1]); }, {a, bpos}, ++seed);
  }
}

TEST_CASE("1.12 div's create_graph backward refuses a numerator changed in place since the forward naming it",
          "[a1][a1.12]") {
  // The create_graph form reads a again (for -g a / b^2), which div does not
  // save: changed in place after the forward it would give the gradient of
  // values the forward never saw, so it must throw the engine's version error.
  const Shape sa{3, 4}, sb{4};
  std::vector<double> bv = randoms(sb, 1202);
  for (auto& v : bv) v += v >= 0 ? 1.5 : -1.5;
  const Tensor leaf = tensor(randoms(sa, 1201), sa, sg::float64).set_requires_grad();
  const Tensor b = tensor(bv, sb, sg::float64).set_requires_grad();
  Tensor a = sg::mul(leaf, tensor(randoms(sa, 1203), sa, sg::float64));  // a node, changed in place below
  const Tensor loss = sg::sum(sg::mul(sg::div(a, b), tensor(randoms(sa, 1204), sa, sg::float64)));
  sg::kernel::add_(a, sg::ones(sa, sg::float64));
  REQUIRE_THROWS_WITH(sg::grad(loss, {leaf, b}, Tensor(), sg::BackwardOptions{false, true}),
                      Contains("'div'") && Contains("its numerator") && Contains("in-place"));
}
