// Hidden tests of assignment 4: layer norm's forward and backward. Values
// and all three gradients are compared with naive long double loops (the
// gradient of x from the full Jacobian, not the library's closed form) for
// random output gradients in float32 and float64, with an eps large enough
// and inputs small enough that where eps goes matters, and gradchecked in
// float64.
#include <catch2/catch.hpp>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/layer_norm.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "hidden_util.hpp"

using namespace hidden;

namespace {

using LD = long double;

struct Case {
  Shape x;
  double eps;
  double x_scale;  // inputs of small variance make eps matter
};

const std::vector<Case> kCases = {{{4, 7}, 1e-5, 1.0}, {{2, 3, 16}, 1e-5, 3.0}, {{3, 5}, 0.5, 1.0},
                                  {{5, 6}, 1e-2, 0.05}, {{6}, 1e-5, 1.0},     {{3, 1}, 1e-5, 1.0},
                                  {{0, 4}, 1e-5, 1.0}};

// y, dx, dgamma, dbeta for output gradient g, naively. dx from the Jacobian:
// dy_j/dx_i = gamma_j (delta_ij - 1/D) rstd - gamma_j xhat_j xhat_i rstd / D.
void naive(const Case& c, const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta,
           const std::vector<double>& g, std::vector<double>& y, std::vector<double>& dx, std::vector<double>& dgamma,
           std::vector<double>& dbeta) {
  const int64_t D = c.x.back(), rows = count(c.x) / D;
  y.assign(x.size(), 0);
  dx.assign(x.size(), 0);
  std::vector<LD> dg(static_cast<size_t>(D)), db(static_cast<size_t>(D));
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * D;
    LD mean = 0, var = 0;
    for (int64_t i = 0; i < D; ++i) mean += xr[i];
    mean /= D;
    for (int64_t i = 0; i < D; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= D;  // the biased variance, as PyTorch and d2l
    const LD rstd = 1 / std::sqrt(var + c.eps);
    std::vector<LD> xhat(static_cast<size_t>(D));
    for (int64_t i = 0; i < D; ++i) xhat[static_cast<size_t>(i)] = (xr[i] - mean) * rstd;
    for (int64_t j = 0; j < D; ++j) {
      const size_t o = static_cast<size_t>(r * D + j), uj = static_cast<size_t>(j);
      y[o] = static_cast<double>(xhat[uj] * gamma[uj] + beta[uj]);
      dg[uj] += g[o] * xhat[uj];
      db[uj] += g[o];
    }
    for (int64_t i = 0; i < D; ++i) {
      LD s = 0;
      for (int64_t j = 0; j < D; ++j) {
        const LD jac = gamma[static_cast<size_t>(j)] * rstd *
                       ((i == j ? 1.0L : 0.0L) - 1.0L / D - xhat[static_cast<size_t>(j)] * xhat[static_cast<size_t>(i)] / D);
        s += g[static_cast<size_t>(r * D + j)] * jac;
      }
      dx[static_cast<size_t>(r * D + i)] = static_cast<double>(s);
    }
  }
  dgamma.assign(dg.begin(), dg.end());
  dbeta.assign(db.begin(), db.end());
}

template <class T>
// offset: the rows' mean. Far from 0 next to their spread (offset set and
// only the cases of input scale 1 or more), var = E[x^2] - mean^2 cancels
// catastrophically, while the mean of (x - mean)^2 does not.
void check(uint64_t seed, double offset = 0.3) {
  for (const Case& c : kCases) {
    if (offset != 0.3 && c.x_scale < 1) continue;
    const int64_t D = c.x.back();
    INFO("layer_norm " << test_util::shape_str(c.x) << " eps " << c.eps << " input scale " << c.x_scale
                       << " mean about " << offset);
    std::vector<double> x = randoms(c.x, ++seed, c.x_scale), gamma = randoms({D}, ++seed), beta = randoms({D}, ++seed),
                        g = randoms(c.x, ++seed);
    for (auto& v : x) v += offset;  // a mean that is not 0
    for (auto* v : {&x, &gamma, &beta, &g})
      for (auto& e : *v) e = static_cast<double>(static_cast<T>(e));
    std::vector<double> y, dx, dgamma, dbeta;
    naive(c, x, gamma, beta, g, y, dx, dgamma, dbeta);
    Inputs in = {tensor(x, c.x, sg::dtype_of<T>).set_requires_grad(), tensor(gamma, {D}, sg::dtype_of<T>).set_requires_grad(),
                 tensor(beta, {D}, sg::dtype_of<T>).set_requires_grad()};
    const Tensor out = sg::layer_norm(in[0], in[1], in[2], c.eps);
    // float32 loses digits in x - mean when the variance is small next to the mean
    const double k = std::is_same_v<T, float> ? 1.0 / std::min(1.0, c.x_scale) : 1.0;
    test_util::check_values<T>(out, c.x, y, rel_tol<T>() * 20 * k, abs_tol<T>() * 20 * k);
    sg::backward(out, tensor(g, c.x, sg::dtype_of<T>));
    test_util::check_values<T>(in[0].grad(), c.x, dx, rel_tol<T>() * 200 * k, abs_tol<T>() * 200 * k);
    test_util::check_values<T>(in[1].grad(), {D}, dgamma, rel_tol<T>() * 50 * k, abs_tol<T>() * 50 * k);
    test_util::check_values<T>(in[2].grad(), {D}, dbeta, rel_tol<T>() * 50, abs_tol<T>() * 50);
  }
}

}  // namespace

TEST_CASE("4.1 layer_norm forward and backward match naive loops in float64", "[a4][a4.1]") { check<double>(2000); }

TEST_CASE("4.2 layer_norm forward and backward match naive loops in float32", "[a4][a4.2]") { check<float>(2100); }

TEST_CASE("4.3 layer_norm gradchecks in float64 for x gamma and beta", "[a4][a4.3]") {
  uint64_t seed = 2200;
  for (const Case& c : kCases) {
    if (count(c.x) == 0) continue;
    const int64_t D = c.x.back();
    const double eps = c.eps;
    const Tensor x = sg::kernel::affine(test_util::normal(c.x, ++seed), c.x_scale, 0.3);
    gradcheck("layer_norm " + test_util::shape_str(c.x) + " eps " + std::to_string(eps),
              [eps](const Inputs& in) { return sg::layer_norm(in[0], in[1], in[2], eps); },
              {x, test_util::normal({D}, ++seed), test_util::normal({D}, ++seed)});
  }
  gradcheck("layer_norm of a permuted input", [](const Inputs& in) {
    return sg::layer_norm(sg::permute(in[0], {1, 0}), in[1], in[2], 0.1);
  }, {test_util::normal({5, 3}, 2290), test_util::normal({5}, 2291), test_util::normal({5}, 2292)});
}

TEST_CASE("4.4 layer_norm gives each row mean 0 and variance 1 before gamma and beta", "[a4][a4.4]") {
  const Shape s{3, 8};
  const Tensor x = sg::kernel::affine(test_util::normal(s, 2301), 4.0, -2.0);
  const Tensor y = sg::layer_norm(x, sg::ones({8}, sg::float64), sg::zeros({8}, sg::float64), 1e-12);
  const auto v = y.to_vector<double>();
  for (int r = 0; r < 3; ++r) {
    double m = 0, q = 0;
    for (int j = 0; j < 8; ++j) m += v[static_cast<size_t>(r * 8 + j)];
    for (int j = 0; j < 8; ++j) q += v[static_cast<size_t>(r * 8 + j)] * v[static_cast<size_t>(r * 8 + j)];
    CHECK(std::fabs(m / 8) < 1e-12);
    CHECK(std::fabs(q / 8 - 1) < 1e-9);
  }
}

TEST_CASE("4.5 layer_norm's parameter gradients add up over rows and calls", "[a4][a4.5]") {
  // gamma and beta used by two calls: their gradients are the sums of both.
  gradcheck("layer_norm twice", [](const Inputs& in) {
    return sg::layer_norm(in[0], in[2], in[3]) * sg::layer_norm(in[1], in[2], in[3], 0.2);
  }, {test_util::normal({4, 5}, 2401), test_util::normal({4, 5}, 2402), test_util::normal({5}, 2403),
      test_util::normal({5}, 2404)});
}

TEST_CASE("4.6 an input changed in place between forward and backward gives the version error or the forward's gradient",
          "[a4][a4.6]") {
  const Shape sx{3, 2, 6}, sp{6};
  check_inplace_change("layer_norm", [](const Inputs& in) { return sg::layer_norm(in[0], in[1], in[2], 1e-3); },
                       {randoms(sx, 460, 2.0), randoms(sp, 461), randoms(sp, 462)}, {sx, sp, sp}, 463);
}

TEST_CASE("4.7 layer_norm of rows whose mean is far from 0 next to their spread in float64 and float32", "[a4][a4.7]") {
  // Means of 3000 in float64 and 30 in float32 with a spread of about 1:
  // a variance taken as E[x^2] - mean^2 loses every digit there.
  check<double>(2700, 3e3);
  check<float>(2800, 30.0);
}
