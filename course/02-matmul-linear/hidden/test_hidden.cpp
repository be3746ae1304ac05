// Hidden tests of assignment 2: matmul's backward for every transpose flag
// and batch broadcasting, and linear's backward. Gradients are compared
// with naive triple loops for random output gradients in float32 and
// float64, square and non-square, and with float64 gradchecks.
#include <catch2/catch.hpp>

#include "autograd/engine.hpp"
#include "autograd/ops/linear.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "hidden_util.hpp"

using namespace hidden;

namespace {

// The element (i, j) of operand x stored as `stored` (..., r, c), read as op(x) when transposed.
struct Mat {
  Shape stored;
  bool t;
};

// C = op(A) op(B) with batch broadcasting, naively: returns dA and dB for output gradient g.
void naive_matmul_grads(const std::vector<double>& a, const Mat& ma, const std::vector<double>& b, const Mat& mb,
                        const std::vector<double>& g, const Shape& so, std::vector<long double>& da,
                        std::vector<long double>& db) {
  const size_t ra = ma.stored.size(), rb = mb.stored.size(), ro = so.size();
  const int64_t M = so[ro - 2], N = so[ro - 1];
  const int64_t K = ma.t ? ma.stored[ra - 2] : ma.stored[ra - 1];
  const Shape batch(so.begin(), so.end() - 2);
  const Shape ba(ma.stored.begin(), ma.stored.end() - 2), bb(mb.stored.begin(), mb.stored.end() - 2);
  da.assign(a.size(), 0);
  db.assign(b.size(), 0);
  const int64_t nb = count(batch);
  const int64_t sa = ma.stored[ra - 2] * ma.stored[ra - 1], sb = mb.stored[rb - 2] * mb.stored[rb - 1];
  for (int64_t n = 0; n < nb; ++n) {
    const int64_t pa = broadcast_source(n, batch, ba) * sa, pb = broadcast_source(n, batch, bb) * sb;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const long double gij = g[static_cast<size_t>((n * M + i) * N + j)];
        for (int64_t k = 0; k < K; ++k) {
          // op(A)[i][k] and op(B)[k][j] in storage
          const int64_t ia = pa + (ma.t ? k * M + i : i * K + k), ib = pb + (mb.t ? j * K + k : k * N + j);
          da[static_cast<size_t>(ia)] += gij * b[static_cast<size_t>(ib)];
          db[static_cast<size_t>(ib)] += gij * a[static_cast<size_t>(ia)];
        }
      }
  }
}

struct Case {
  Shape a, b;
  bool ta, tb;
};

// (M, K) x (K, N) in every storage, square and not, with batches on either side.
const std::vector<Case> kCases = {
    {{3, 4}, {4, 5}, false, false}, {{4, 3}, {4, 5}, true, false},   {{3, 4}, {5, 4}, false, true},
    {{4, 3}, {5, 4}, true, true},   {{4, 4}, {4, 4}, false, false},   {{4, 4}, {4, 4}, true, false},
    {{4, 4}, {4, 4}, false, true},  {{4, 4}, {4, 4}, true, true},     {{2, 3, 4}, {4, 5}, false, false},
    {{2, 3, 4}, {5, 4}, false, true}, {{2, 4, 4}, {4, 4}, false, true}, {{3, 4}, {2, 4, 5}, false, false},
    {{2, 1, 3, 4}, {3, 4, 5}, false, false}, {{2, 4, 3}, {2, 5, 4}, true, true}, {{1, 3, 4}, {2, 4, 5}, false, false},
    {{0, 3, 4}, {4, 5}, false, false},
};

template <class T>
void check_matmul(uint64_t seed) {
  for (const Case& c : kCases) {
    INFO("matmul " << test_util::shape_str(c.a) << (c.ta ? "^T" : "") << " x " << test_util::shape_str(c.b)
                   << (c.tb ? "^T" : ""));
    const Tensor probe = sg::kernel::matmul(sg::zeros(c.a, sg::float64), sg::zeros(c.b, sg::float64), c.ta, c.tb);
    const Shape so = probe.shape();
    std::vector<double> a = randoms(c.a, ++seed), b = randoms(c.b, ++seed), g = randoms(so, ++seed);
    for (auto* v : {&a, &b, &g})
      for (auto& x : *v) x = static_cast<double>(static_cast<T>(x));
    std::vector<long double> da, db;
    naive_matmul_grads(a, {c.a, c.ta}, b, {c.b, c.tb}, g, so, da, db);
    const auto grads = grads_of([&](const Inputs& in) { return sg::matmul(in[0], in[1], c.ta, c.tb); }, {a, b},
                                {c.a, c.b}, g, sg::dtype_of<T>);
    test_util::check_values<T>(grads[0], c.a, std::vector<double>(da.begin(), da.end()), rel_tol<T>() * 20, abs_tol<T>() * 20);
    test_util::check_values<T>(grads[1], c.b, std::vector<double>(db.begin(), db.end()), rel_tol<T>() * 20, abs_tol<T>() * 20);
  }
}

// y = x W^T + b naively: dx, dW, db for output gradient g; x (rows, in).
void naive_linear_grads(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& g,
                        int64_t rows, int64_t in, int64_t out, std::vector<long double>& dx,
                        std::vector<long double>& dw, std::vector<long double>& db) {
  dx.assign(static_cast<size_t>(rows * in), 0);
  dw.assign(static_cast<size_t>(out * in), 0);
  db.assign(static_cast<size_t>(out), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      const long double go = g[static_cast<size_t>(r * out + o)];
      db[static_cast<size_t>(o)] += go;
      for (int64_t i = 0; i < in; ++i) {
        dx[static_cast<size_t>(r * in + i)] += go * w[static_cast<size_t>(o * in + i)];
        dw[static_cast<size_t>(o * in + i)] += go * x[static_cast<size_t>(r * in + i)];
      }
    }
}

template <class T>
void check_linear(uint64_t seed) {
  const std::vector<std::pair<Shape, int64_t>> cases = {{{5, 4}, 3}, {{2, 3, 4}, 6}, {{4}, 2}, {{3, 4}, 4},
                                                        {{2, 2, 4}, 4}, {{0, 4}, 3}};
  for (const auto& [sx, out] : cases) {
    const int64_t in = sx.back(), rows = count(sx) / in;
    Shape sy = sx;
    sy.back() = out;
    INFO("linear x " << test_util::shape_str(sx) << " out " << out);
    std::vector<double> x = randoms(sx, ++seed), w = randoms({out, in}, ++seed), b = randoms({out}, ++seed),
                        g = randoms(sy, ++seed);
    for (auto* v : {&x, &w, &b, &g})
      for (auto& e : *v) e = static_cast<double>(static_cast<T>(e));
    std::vector<long double> dx, dw, db;
    naive_linear_grads(x, w, g, rows, in, out, dx, dw, db);
    for (bool bias : {true, false}) {
      INFO("bias " << bias);
      const auto grads = bias ? grads_of([](const Inputs& t) { return sg::linear(t[0], t[1], t[2]); }, {x, w, b},
                                         {sx, {out, in}, {out}}, g, sg::dtype_of<T>)
                              : grads_of([](const Inputs& t) { return sg::linear(t[0], t[1]); }, {x, w},
                                         {sx, {out, in}}, g, sg::dtype_of<T>);
      test_util::check_values<T>(grads[0], sx, std::vector<double>(dx.begin(), dx.end()), rel_tol<T>() * 20, abs_tol<T>() * 20);
      test_util::check_values<T>(grads[1], {out, in}, std::vector<double>(dw.begin(), dw.end()), rel_tol<T>() * 20, abs_tol<T>() * 20);
      if (bias)
        test_util::check_values<T>(grads[2], {out}, std::vector<double>(db.begin(), db.end()), rel_tol<T>() * 20, abs_tol<T>() * 20);
    }
  }
}

}  // namespace

TEST_CASE("2.1 matmul backward matches naive loops in float64 for every transpose and batch", "[a2][a2.1]") {
  check_matmul<double>(100);
}

TEST_CASE("2.2 matmul backward matches naive loops in float32", "[a2][a2.2]") { check_matmul<float>(200); }

TEST_CASE("2.3 matmul gradchecks in float64 with broadcast batches and permuted inputs", "[a2][a2.3]") {
  uint64_t seed = 300;
  for (const Case& c : kCases) {
    if (count(c.a) == 0) continue;
    const std::string name = "matmul " + test_util::shape_str(c.a) + (c.ta ? "^T x " : " x ") +
                             test_util::shape_str(c.b) + (c.tb ? "^T" : "");
    gradcheck(name, [c](const Inputs& in) { return sg::matmul(in[0], in[1], c.ta, c.tb); },
              {test_util::normal(c.a, ++seed), test_util::normal(c.b, ++seed)});
  }
  // A permuted (transposed-by-copy) operand, and a product used twice.
  gradcheck("matmul of a permuted operand", [](const Inputs& in) {
    return sg::matmul(sg::permute(in[0], {0, 2, 1}), in[1]);
  }, {test_util::normal({2, 4, 3}, 351), test_util::normal({4, 5}, 352)});
  gradcheck("x x^T", [](const Inputs& in) { return sg::matmul(in[0], in[0], false, true); },
            {test_util::normal({3, 4}, 353)});
}

TEST_CASE("2.4 linear backward matches naive loops in float64 and float32", "[a2][a2.4]") {
  check_linear<double>(400);
  check_linear<float>(450);
}

TEST_CASE("2.5 linear gradchecks in float64 with and without bias", "[a2][a2.5]") {
  uint64_t seed = 500;
  for (const auto& [sx, out] : std::vector<std::pair<Shape, int64_t>>{{{5, 4}, 3}, {{2, 3, 4}, 6}, {{4}, 2}, {{3, 3}, 3}}) {
    const int64_t in = sx.back();
    const Tensor x = test_util::normal(sx, ++seed), w = test_util::normal({out, in}, ++seed),
                 b = test_util::normal({out}, ++seed);
    gradcheck("linear " + test_util::shape_str(sx), [](const Inputs& t) { return sg::linear(t[0], t[1], t[2]); }, {x, w, b});
    gradcheck("linear no bias " + test_util::shape_str(sx), [](const Inputs& t) { return sg::linear(t[0], t[1]); }, {x, w});
  }
  // Two layers and a permuted input.
  gradcheck("two linears", [](const Inputs& t) {
    return sg::linear(sg::linear(sg::permute(t[0], {1, 0}), t[1], t[2]), t[3]);
  }, {test_util::normal({4, 3}, 551), test_util::normal({5, 4}, 552), test_util::normal({5}, 553),
      test_util::normal({2, 5}, 554)});
}

TEST_CASE("2.6 linear gives gradients only to what requires them", "[a2][a2.6]") {
  const Tensor g = test_util::normal({3, 2}, 601);
  Tensor x = test_util::normal({3, 4}, 602), w = test_util::normal({2, 4}, 603).set_requires_grad(),
         b = test_util::normal({2}, 604).set_requires_grad();
  sg::backward(sg::linear(x, w, b), g);
  CHECK(!x.grad().defined());
  std::vector<double> want_db = {0, 0};
  const auto gv = g.to_vector<double>();
  for (int r = 0; r < 3; ++r)
    for (int o = 0; o < 2; ++o) want_db[static_cast<size_t>(o)] += gv[static_cast<size_t>(r * 2 + o)];
  test_util::check_values<double>(b.grad(), {2}, want_db, 1e-12, 1e-13);
  Tensor x2 = test_util::normal({3, 4}, 605).set_requires_grad(), w2 = test_util::normal({2, 4}, 606);
  sg::backward(sg::linear(x2, w2), g);
  CHECK(x2.grad().shape() == Shape{3, 4});
  CHECK(!w2.grad().defined());
}

TEST_CASE("2.7 an input changed in place between forward and backward gives the version error or the forward's gradient",
          "[a2][a2.7]") {
  uint64_t seed = 270;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      const Shape sa = ta ? Shape{2, 4, 3} : Shape{2, 3, 4}, sb = tb ? Shape{5, 4} : Shape{4, 5};
      check_inplace_change(std::string("matmul transpose_a ") + (ta ? "1" : "0") + " transpose_b " + (tb ? "1" : "0"),
                           [ta, tb](const Inputs& in) { return sg::matmul(in[0], in[1], ta, tb); },
                           {randoms(sa, ++seed), randoms(sb, ++seed)}, {sa, sb}, ++seed);
    }
  const Shape sx{2, 3, 4}, sw{5, 4}, sbias{5};
  check_inplace_change("linear with bias", [](const Inputs& in) { return sg::linear(in[0], in[1], in[2]); },
                       {randoms(sx, 280), randoms(sw, 281), randoms(sbias, 282)}, {sx, sw, sbias}, 283);
  check_inplace_change("linear without bias", [](const Inputs& in) { return sg::linear(in[0], in[1]); },
                       {randoms(sx, 284), randoms(sw, 285)}, {sx, sw}, 286);
}

TEST_CASE("2.8 with recording on matmul and linear's backward is recorded: their gradients differentiate again in the inputs and g",
          "[a2][a2.8]") {
  // The create_graph form (recording on) for every transpose flag and batch
  // broadcast, and linear with and without bias; the other tests run the
  // first-order form (recording off).
  uint64_t seed = 800;
  for (const Case& c : kCases) {
    if (count(c.a) == 0) continue;
    const std::string name = "matmul " + test_util::shape_str(c.a) + (c.ta ? "^T x " : " x ") +
                             test_util::shape_str(c.b) + (c.tb ? "^T" : "");
    check_create_graph_form(name, [c](const Inputs& in) { return sg::matmul(in[0], in[1], c.ta, c.tb); },
                            {test_util::normal(c.a, ++seed), test_util::normal(c.b, ++seed)}, ++seed);
  }
  for (const auto& [sx, out] : std::vector<std::pair<Shape, int64_t>>{{{5, 4}, 3}, {{2, 3, 4}, 6}, {{4}, 2}}) {
    const int64_t in = sx.back();
    const Tensor x = test_util::normal(sx, ++seed), w = test_util::normal({out, in}, ++seed),
                 b = test_util::normal({out}, ++seed);
    check_create_graph_form("linear " + test_util::shape_str(sx),
                            [](const Inputs& t) { return sg::linear(t[0], t[1], t[2]); }, {x, w, b}, ++seed);
    check_create_graph_form("linear no bias " + test_util::shape_str(sx),
                            [](const Inputs& t) { return sg::linear(t[0], t[1]); }, {x, w}, ++seed);
  }
}
