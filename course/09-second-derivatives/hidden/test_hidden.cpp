// Hidden tests of assignment 9: backwards that can be differentiated again
// (the create_graph forms of tanh and softmax, autograd/ops/unary.cpp and
// autograd/ops/softmax.cpp) and the Hessian-vector product (hvp,
// autograd/tools/functional.cpp).
//
// Every value is compared with closed forms written out here in long double
// loops, not with finite differences alone: the first derivative that the
// create_graph form returns, and the derivatives of <that gradient, w> with
// respect to the input x and to the incoming gradient g (w, g and x random
// and varying along every axis, shapes with no two axes equal), in float64
// and float32; the third derivative of tanh by repeated grad; hvp and
// hessian against the analytic Hessian of functions built from tanh,
// softmax and a broadcast product. gradgradcheck (float64) runs on top, and
// an input changed in place between the forward and a create_graph backward
// must be refused by each op.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/softmax.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/tools/functional.hpp"
#include "autograd/tools/gradgradcheck.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "hidden_util.hpp"

using namespace hidden;
using Catch::Contains;

namespace {

using LD = long double;
using Op = std::function<Tensor(const Tensor&)>;

// What an op's create_graph backward must give, for x, the incoming
// gradient g and a second cotangent w (all of x's shape):
//   first = J^T g (the gradient itself),
//   dx    = d <first, w> / dx,
//   dg    = d <first, w> / dg.
struct Second {
  std::vector<double> first, dx, dg;
};

// tanh, t = tanh(x): first = g (1 - t^2); dg = w (1 - t^2);
// dx = w g (-2 t (1 - t^2)).
Second tanh_second(const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& w) {
  Second s;
  for (size_t i = 0; i < x.size(); ++i) {
    const LD t = std::tanh(static_cast<LD>(x[i])), d1 = 1 - t * t, d2 = -2 * t * d1;
    s.first.push_back(static_cast<double>(g[i] * d1));
    s.dg.push_back(static_cast<double>(w[i] * d1));
    s.dx.push_back(static_cast<double>(w[i] * g[i] * d2));
  }
  return s;
}

std::vector<LD> softmax_of(const std::vector<double>& x, size_t at, size_t n) {
  std::vector<LD> s(n);
  LD m = x[at], total = 0;
  for (size_t k = 0; k < n; ++k) m = std::max(m, static_cast<LD>(x[at + k]));
  for (size_t k = 0; k < n; ++k) total += (s[k] = std::exp(static_cast<LD>(x[at + k]) - m));
  for (auto& v : s) v /= total;
  return s;
}

// softmax along the last axis of n, per row, s = softmax(x), gs = g . s:
//   first_k = s_k (g_k - gs);
//   dg_j    = s_j (w_j - w . s);
//   dx_l    = sum_k w_k [s_k (d_kl - s_l)(g_k - gs) - s_k s_l (g_l - gs)].
Second softmax_second(const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& w,
                      size_t n) {
  Second r;
  r.first.resize(x.size()), r.dx.resize(x.size()), r.dg.resize(x.size());
  for (size_t at = 0; at < x.size(); at += n) {
    const std::vector<LD> s = softmax_of(x, at, n);
    LD gs = 0, ws = 0;
    for (size_t k = 0; k < n; ++k) gs += g[at + k] * s[k], ws += w[at + k] * s[k];
    for (size_t k = 0; k < n; ++k) {
      r.first[at + k] = static_cast<double>(s[k] * (g[at + k] - gs));
      r.dg[at + k] = static_cast<double>(s[k] * (w[at + k] - ws));
    }
    for (size_t l = 0; l < n; ++l) {
      LD d = 0;
      for (size_t k = 0; k < n; ++k)
        d += w[at + k] * (s[k] * ((k == l ? 1 : 0) - s[l]) * (g[at + k] - gs) - s[k] * s[l] * (g[at + l] - gs));
      r.dx[at + l] = static_cast<double>(d);
    }
  }
  return r;
}

// Runs op's create_graph backward in dtype T and compares the gradient and
// both derivatives of <gradient, w> with want.
template <class T>
void check_second(const std::string& name, const Op& op, const Shape& shape, uint64_t seed,
                  const std::function<Second(const std::vector<double>&, const std::vector<double>&,
                                             const std::vector<double>&)>& naive,
                  double shift = 0) {
  const bool f32 = std::is_same_v<T, float>;
  INFO(name << " " << test_util::shape_str(shape) << (f32 ? " float32" : " float64")
            << (shift != 0 ? " at x around " + std::to_string(shift) : std::string()));
  auto rounded = [](std::vector<double> v) {
    for (auto& e : v) e = static_cast<double>(static_cast<T>(e));
    return v;
  };
  std::vector<double> x0 = randoms(shape, seed, 1.5);
  for (auto& e : x0) e += shift;
  const auto xv = rounded(x0), gv = rounded(randoms(shape, seed + 1)),
             wv = rounded(randoms(shape, seed + 2));
  const Second want = naive(xv, gv, wv);
  const sg::DType dt = sg::dtype_of<T>;
  const Tensor x = tensor(xv, shape, dt).set_requires_grad(), g = tensor(gv, shape, dt).set_requires_grad();
  const Tensor first = sg::grad(op(x), {x}, g, sg::BackwardOptions{false, true})[0];
  REQUIRE(first.defined());
  const double rel = f32 ? 5e-5 : 1e-11, abs = f32 ? 5e-6 : 1e-13;
  {
    INFO("the gradient J^T g from the create_graph backward");
    test_util::check_values<T>(first, shape, want.first, rel, abs);
  }
  INFO("the gradient must have a history (create_graph): it is recorded in x and g");
  REQUIRE(first.requires_grad());
  const sg::Grads d = sg::grad(sg::sum(sg::mul(first, tensor(wv, shape, dt))), {x, g});
  REQUIRE(d[0].defined());
  REQUIRE(d[1].defined());
  {
    INFO("d <J^T g, w> / dx: the second derivative");
    test_util::check_values<T>(d[0], shape, want.dx, rel, abs);
  }
  INFO("d <J^T g, w> / dg");
  test_util::check_values<T>(d[1], shape, want.dg, rel, abs);
}

// x, a non-leaf, changed in place after op(x): the create_graph backward
// must refuse (its composed form reads x), naming the op.
void check_in_place(const std::string& name, const Op& op, const Shape& shape) {
  INFO(name);
  const Tensor leaf = tensor(randoms(shape, 90), shape, sg::float64).set_requires_grad();
  Tensor x = sg::mul(leaf, tensor(randoms(shape, 91), shape, sg::float64));
  const Tensor loss = sg::sum(sg::mul(op(x), tensor(randoms(shape, 92), shape, sg::float64)));
  sg::kernel::add_(x, sg::ones(shape, sg::float64));
  REQUIRE_THROWS_WITH(sg::grad(loss, {leaf}, Tensor(), sg::BackwardOptions{false, true}),
                      Contains("'" + name + "'") && Contains("in-place"));
}

const Op tanh_op = [](const Tensor& x) { return sg::tanh(x); };
const Op softmax_op = [](const Tensor& x) { return sg::softmax(x); };

// f(A, y) = sum_ij C_ij tanh(A_ij y_j), A (m, n), y (n): its Hessian-vector
// product for the directions (VA, vy), with u = A_ij y_j, t1 = tanh'(u),
// t2 = tanh''(u):
//   (Hv)_A_ij = C_ij (t2 y_j^2 VA_ij + (t2 A_ij y_j + t1) vy_j)
//   (Hv)_y_j  = sum_i C_ij ((t2 A_ij y_j + t1) VA_ij + t2 A_ij^2 vy_j)
struct Hv {
  std::vector<double> a, y;
};
Hv tanh_product_hvp(const std::vector<double>& A, const std::vector<double>& y, const std::vector<double>& C,
                    const std::vector<double>& VA, const std::vector<double>& vy, int64_t m, int64_t n) {
  Hv out{std::vector<double>(A.size()), std::vector<double>(y.size())};
  std::vector<LD> hy(y.size(), 0.0L);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const size_t k = static_cast<size_t>(i * n + j);
      const LD a = A[k], yy = y[static_cast<size_t>(j)], c = C[k];
      const LD t = std::tanh(a * yy), t1 = 1 - t * t, t2 = -2 * t * t1;
      out.a[k] = static_cast<double>(c * (t2 * yy * yy * VA[k] + (t2 * a * yy + t1) * vy[static_cast<size_t>(j)]));
      hy[static_cast<size_t>(j)] += c * ((t2 * a * yy + t1) * VA[k] + t2 * a * a * vy[static_cast<size_t>(j)]);
    }
  for (size_t j = 0; j < hy.size(); ++j) out.y[j] = static_cast<double>(hy[j]);
  return out;
}

}  // namespace

TEST_CASE("9.1 tanh's create_graph backward gives g (1 - t^2) and its derivatives in x and in g match closed forms",
          "[a9][a9.1]") {
  uint64_t seed = 910;
  for (const Shape& shape : {Shape{3, 5}, Shape{2, 3, 4}, Shape{7}}) {
    check_second<double>("tanh", tanh_op, shape, ++seed * 3, tanh_second);
    check_second<float>("tanh", tanh_op, shape, ++seed * 3, tanh_second);
  }
}

TEST_CASE("9.2 tanh differentiates three times by repeated grad and passes gradgradcheck in a composed function",
          "[a9][a9.2]") {
  // d^3 tanh / dx^3 = (1 - t^2)(6 t^2 - 2): the create_graph form of the
  // create_graph form.
  const std::vector<double> xv = {-1.7, -0.4, 0.0, 0.25, 0.9, 2.1};
  const Tensor x = tensor(xv, {2, 3}, sg::float64).set_requires_grad();
  Tensor d = sg::tanh(x);
  for (int k = 1; k <= 3; ++k) {
    d = sg::grad(sg::sum(d), {x}, Tensor(), sg::BackwardOptions{false, true})[0];
    REQUIRE(d.defined());
    std::vector<double> want;
    for (double e : xv) {
      const LD t = std::tanh(static_cast<LD>(e)), s = 1 - t * t;
      want.push_back(static_cast<double>(k == 1 ? s : k == 2 ? -2 * t * s : s * (6 * t * t - 2)));
    }
    INFO("derivative " << k);
    test_util::check_values<double>(d, {2, 3}, want, 1e-11, 1e-13);
  }
  check_gradgrad("tanh", [](const Inputs& in) { return sg::tanh(in[0]); },
                 {tensor(randoms({3, 4}, 921), {3, 4}, sg::float64)});
  check_gradgrad("tanh(a * b) * c",
                 [](const Inputs& in) { return sg::mul(sg::tanh(sg::mul(in[0], in[1])), in[2]); },
                 {tensor(randoms({2, 3, 4}, 922), {2, 3, 4}, sg::float64), tensor(randoms({3, 1}, 923), {3, 1}, sg::float64),
                  tensor(randoms({4}, 924), {4}, sg::float64)});
}

TEST_CASE("9.3 tanh refuses an input changed in place before a create_graph backward", "[a9][a9.3]") {
  check_in_place("tanh", tanh_op, {2, 3});
}

TEST_CASE("9.4 softmax's create_graph backward gives s (g - g.s) and its derivatives in x and in g match closed forms",
          "[a9][a9.4]") {
  uint64_t seed = 940;
  for (const Shape& shape : {Shape{4, 7}, Shape{2, 3, 5}, Shape{6}}) {
    const size_t n = static_cast<size_t>(shape.back());
    auto naive = [n](const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& w) {
      return softmax_second(x, g, w, n);
    };
    check_second<double>("softmax", softmax_op, shape, ++seed * 3, naive);
    check_second<float>("softmax", softmax_op, shape, ++seed * 3, naive);
  }
}

TEST_CASE("9.5 softmax passes gradgradcheck alone and in a composed function", "[a9][a9.5]") {
  check_gradgrad("softmax", [](const Inputs& in) { return sg::softmax(in[0]); },
                 {tensor(randoms({3, 5}, 951), {3, 5}, sg::float64)});
  check_gradgrad("softmax(a * b) * c",
                 [](const Inputs& in) { return sg::mul(sg::softmax(sg::mul(in[0], in[1])), in[2]); },
                 {tensor(randoms({2, 3, 4}, 952), {2, 3, 4}, sg::float64), tensor(randoms({4}, 953), {4}, sg::float64),
                  tensor(randoms({3, 1}, 954), {3, 1}, sg::float64)});
}

TEST_CASE("9.6 softmax refuses an input changed in place before a create_graph backward", "[a9][a9.6]") {
  check_in_place("softmax", softmax_op, {3, 4});
}

TEST_CASE("9.7 hvp of sum C tanh(A y) with y broadcast over rows equals the analytic Hessian times v in both dtypes",
          "[a9][a9.7]") {
  const int64_t m = 3, n = 5;
  uint64_t seed = 970;
  for (sg::DType dt : {sg::float64, sg::float32}) {
    const bool f32 = dt == sg::float32;
    auto r = [&](const Shape& s) {
      auto v = randoms(s, ++seed);
      for (auto& e : v) e = f32 ? static_cast<double>(static_cast<float>(e)) : e;
      return v;
    };
    const auto A = r({m, n}), y = r({n}), C = r({m, n}), VA = r({m, n}), vy = r({n});
    const Tensor Ct = tensor(C, {m, n}, dt);
    const sg::VectorFn f = [&](const Inputs& in) { return sg::sum(sg::mul(Ct, sg::tanh(sg::mul(in[0], in[1])))); };
    const Tensor At = tensor(A, {m, n}, dt), yt = tensor(y, {n}, dt);
    const std::vector<Tensor> hv = sg::hvp(f, {At, yt}, {tensor(VA, {m, n}, dt), tensor(vy, {n}, dt)});
    const Hv want = tanh_product_hvp(A, y, C, VA, vy, m, n);
    INFO((f32 ? "float32" : "float64"));
    REQUIRE(hv.size() == 2);
    const double rel = f32 ? 1e-4 : 1e-11, abs = f32 ? 1e-5 : 1e-13;
    if (f32) {
      test_util::check_values<float>(hv[0], {m, n}, want.a, rel, abs);
      test_util::check_values<float>(hv[1], {n}, want.y, rel, abs);
    } else {
      test_util::check_values<double>(hv[0], {m, n}, want.a, rel, abs);
      test_util::check_values<double>(hv[1], {n}, want.y, rel, abs);
    }
    INFO("hvp differentiates at copies: the inputs themselves get no gradient and keep their values");
    REQUIRE_FALSE(At.requires_grad());
    REQUIRE_FALSE(At.grad().defined());
  }
}

TEST_CASE("9.8 hessian of c . softmax(x) is the analytic one column by column", "[a9][a9.8]") {
  // H_lm = sum_k c_k [s_k (d_km - s_m)(d_kl - s_l) - s_k s_l (d_lm - s_m)].
  const int64_t n = 5;
  const auto x = randoms({n}, 981), c = randoms({n}, 982);
  const Tensor ct = tensor(c, {n}, sg::float64);
  const Tensor h = sg::hessian([&](const Tensor& t) { return sg::sum(sg::mul(ct, sg::softmax(t))); },
                               tensor(x, {n}, sg::float64));
  const std::vector<LD> s = softmax_of(x, 0, static_cast<size_t>(n));
  std::vector<double> want(static_cast<size_t>(n * n));
  for (int64_t l = 0; l < n; ++l)
    for (int64_t mm = 0; mm < n; ++mm) {
      LD total = 0;
      for (int64_t k = 0; k < n; ++k) {
        const LD sk = s[static_cast<size_t>(k)], sl = s[static_cast<size_t>(l)], sm = s[static_cast<size_t>(mm)];
        total += c[static_cast<size_t>(k)] * (sk * ((k == mm) - sm) * ((k == l) - sl) - sk * sl * ((l == mm) - sm));
      }
      want[static_cast<size_t>(l * n + mm)] = static_cast<double>(total);
    }
  test_util::check_values<double>(h, {n, n}, want, 1e-11, 1e-13);
}

TEST_CASE("9.9 hvp gives zeros where there is no second derivative and refuses a non-scalar f", "[a9][a9.9]") {
  const Tensor a = tensor(randoms({2, 3}, 990), {2, 3}, sg::float64), b = tensor(randoms({4}, 991), {4}, sg::float64);
  const std::vector<Tensor> v = {tensor(randoms({2, 3}, 992), {2, 3}, sg::float64),
                                 tensor(randoms({4}, 993), {4}, sg::float64)};
  auto zeros_like_inputs = [&](const std::vector<Tensor>& hv, const std::string& what) {
    INFO(what);
    REQUIRE(hv.size() == 2);
    test_util::check_values<double>(hv[0], {2, 3}, std::vector<double>(6, 0.0), 0, 0);
    test_util::check_values<double>(hv[1], {4}, std::vector<double>(4, 0.0), 0, 0);
  };
  // Linear in both: the first gradient is a constant, H = 0.
  const Tensor w = tensor(randoms({2, 3}, 994), {2, 3}, sg::float64);
  zeros_like_inputs(sg::hvp([&](const Inputs& in) { return sg::add(sg::sum(sg::mul(in[0], w)), sg::sum(in[1])); },
                            {a, b}, v),
                    "f linear in both inputs");
  // Constant: no path at all.
  zeros_like_inputs(sg::hvp([&](const Inputs&) { return sg::sum(w); }, {a, b}, v), "f constant");
  // b unused: its part is zeros of b's shape, a's part the analytic one:
  // f = sum tanh(a), H = diag(tanh''(a)).
  const std::vector<Tensor> hv = sg::hvp([](const Inputs& in) { return sg::sum(sg::tanh(in[0])); }, {a, b}, v);
  REQUIRE(hv.size() == 2);
  const auto av = a.to_vector<double>(), va = v[0].to_vector<double>();
  std::vector<double> want;
  for (size_t i = 0; i < av.size(); ++i) {
    const LD t = std::tanh(static_cast<LD>(av[i]));
    want.push_back(static_cast<double>(-2 * t * (1 - t * t) * va[i]));
  }
  test_util::check_values<double>(hv[0], {2, 3}, want, 1e-11, 1e-13);
  {
    INFO("the unused input's part: zeros of its shape");
    test_util::check_values<double>(hv[1], {4}, std::vector<double>(4, 0.0), 0, 0);
  }
  REQUIRE_THROWS_WITH(sg::hvp([](const Inputs& in) { return sg::tanh(in[0]); }, {a, b}, v),
                      Contains("hvp") && Contains("scalar"));
}

TEST_CASE("9.10 hvp turns recording on for itself: the same result under NoGradGuard and recording left as it was",
          "[a9][a9.10]") {
  // f = sum tanh(a): H v = tanh''(a) v elementwise.
  const Tensor a = tensor(randoms({2, 3}, 1001), {2, 3}, sg::float64);
  const Tensor v = tensor(randoms({2, 3}, 1002), {2, 3}, sg::float64);
  const auto av = a.to_vector<double>(), vv = v.to_vector<double>();
  std::vector<double> want;
  for (size_t i = 0; i < av.size(); ++i) {
    const LD t = std::tanh(static_cast<LD>(av[i]));
    want.push_back(static_cast<double>(-2 * t * (1 - t * t) * vv[i]));
  }
  const sg::VectorFn f = [](const Inputs& in) { return sg::sum(sg::tanh(in[0])); };
  for (const bool recording : {true, false}) {
    INFO((recording ? "called with recording on" : "called under a NoGradGuard (recording off)"));
    std::vector<Tensor> hv;
    if (recording) {
      hv = sg::hvp(f, {a}, {v});
      REQUIRE(sg::grad_enabled());
    } else {
      sg::NoGradGuard off;
      hv = sg::hvp(f, {a}, {v});
      INFO("recording must be off again after hvp returns");
      REQUIRE_FALSE(sg::grad_enabled());
    }
    REQUIRE(hv.size() == 1);
    test_util::check_values<double>(hv[0], {2, 3}, want, 1e-11, 1e-13);
  }
}

TEST_CASE("9.11 softmax's create_graph backward at scores past exp's range in float64 and float32", "[a9][a9.11]") {
  // Rows around +-1000 in float64 and +100 and -120 in float32, where exp
  // overflows to inf or underflows to 0 and a softmax written as exp(x) /
  // sum exp(x) is inf / inf or 0 / 0; shifted rows have the softmax, and
  // the derivatives, of the unshifted ones.
  uint64_t seed = 1190;
  for (const Shape& shape : {Shape{4, 7}, Shape{2, 3, 5}}) {
    const size_t n = static_cast<size_t>(shape.back());
    auto naive = [n](const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& w) {
      return softmax_second(x, g, w, n);
    };
    for (const double shift : {1000.0, -1000.0}) check_second<double>("softmax", softmax_op, shape, ++seed * 3, naive, shift);
    for (const double shift : {100.0, -120.0}) check_second<float>("softmax", softmax_op, shape, ++seed * 3, naive, shift);
  }
}
