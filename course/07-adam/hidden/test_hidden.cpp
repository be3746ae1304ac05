// Hidden tests of assignment 7: Adam (with its L2 term) and AdamW (decoupled
// weight decay), against PyTorch's formulas written out naively in long
// double, over several steps with random gradients, non-default betas, a
// large eps (so where eps goes matters), a parameter large enough to be
// split in chunks, and a parameter that skips a step (its own step count).
#include <catch2/catch.hpp>

#include <memory>

#include "core/tensor.hpp"
#include "optim/optim.hpp"
#include "hidden_util.hpp"

using namespace hidden;

namespace {

using LD = long double;

struct Opts {
  double lr, beta1, beta2, eps, wd;
  bool decoupled;
};

// One parameter's state in the naive optimizer.
struct Naive {
  std::vector<LD> p, m, v;
  int64_t t = 0;
  void step(const std::vector<double>& g, const Opts& o) {
    ++t;
    const LD bc1 = 1 - std::pow(static_cast<LD>(o.beta1), static_cast<LD>(t));
    const LD bc2 = 1 - std::pow(static_cast<LD>(o.beta2), static_cast<LD>(t));
    for (size_t i = 0; i < p.size(); ++i) {
      LD gi = g[i];
      if (o.decoupled)
        p[i] *= 1 - static_cast<LD>(o.lr) * o.wd;
      else
        gi += o.wd * p[i];
      m[i] = o.beta1 * m[i] + (1 - static_cast<LD>(o.beta1)) * gi;
      v[i] = o.beta2 * v[i] + (1 - static_cast<LD>(o.beta2)) * gi * gi;
      const LD mhat = m[i] / bc1, vhat = v[i] / bc2;
      p[i] -= o.lr * mhat / (std::sqrt(vhat) + o.eps);
    }
  }
};

template <class T>
void run(const Opts& o, uint64_t seed) {
  const std::vector<Shape> shapes = {{3, 4}, {10000}, {5}};
  std::vector<Tensor> params;
  std::vector<Naive> naive;
  for (const Shape& s : shapes) {
    std::vector<double> p = randoms(s, ++seed);
    for (auto& e : p) e = static_cast<double>(static_cast<T>(e));
    params.push_back(tensor(p, s, sg::dtype_of<T>).set_requires_grad());
    naive.push_back({std::vector<LD>(p.begin(), p.end()), std::vector<LD>(p.size()), std::vector<LD>(p.size())});
  }
  std::unique_ptr<sg::optim::Optimizer> opt;
  if (o.decoupled)
    opt = std::make_unique<sg::optim::AdamW>(params, sg::optim::AdamWOptions{o.lr, o.beta1, o.beta2, o.eps, o.wd});
  else
    opt = std::make_unique<sg::optim::Adam>(params, sg::optim::AdamOptions{o.lr, o.beta1, o.beta2, o.eps, o.wd});
  for (int step = 1; step <= 6; ++step) {
    for (size_t i = 0; i < params.size(); ++i) {
      if (i == 2 && step == 3) {  // parameter 2 gets no gradient this step: it is skipped
        params[i].set_grad(Tensor());
        continue;
      }
      std::vector<double> g = randoms(shapes[i], ++seed, step == 2 ? 1e-3 : 1.0);  // a step of tiny gradients
      for (auto& e : g) e = static_cast<double>(static_cast<T>(e));
      params[i].set_grad(tensor(g, shapes[i], sg::dtype_of<T>));
      naive[i].step(g, o);
    }
    opt->step();
    for (size_t i = 0; i < params.size(); ++i) {
      INFO("step " << step << " parameter " << i << (o.decoupled ? " AdamW" : " Adam") << " lr " << o.lr << " betas "
                   << o.beta1 << " " << o.beta2 << " eps " << o.eps << " weight_decay " << o.wd);
      const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
      test_util::check_values<T>(params[i], shapes[i], std::vector<double>(naive[i].p.begin(), naive[i].p.end()), tol, tol);
    }
  }
}

const std::vector<Opts> kAdam = {{0.1, 0.8, 0.95, 1e-3, 0.0, false}, {0.05, 0.9, 0.999, 1e-8, 0.1, false},
                                 {0.01, 0.5, 0.7, 0.3, 0.02, false}};
const std::vector<Opts> kAdamW = {{0.1, 0.8, 0.95, 1e-3, 0.1, true}, {0.05, 0.9, 0.999, 1e-8, 0.0, true},
                                  {0.01, 0.5, 0.7, 0.3, 0.5, true}};

}  // namespace

TEST_CASE("7.1 Adam follows PyTorch's formulas for six steps in float64", "[a7][a7.1]") {
  uint64_t seed = 3000;
  for (const Opts& o : kAdam) run<double>(o, seed += 100);
}

TEST_CASE("7.2 AdamW follows PyTorch's formulas for six steps in float64", "[a7][a7.2]") {
  uint64_t seed = 3500;
  for (const Opts& o : kAdamW) run<double>(o, seed += 100);
}

TEST_CASE("7.3 Adam and AdamW follow PyTorch's formulas in float32", "[a7][a7.3]") {
  uint64_t seed = 4000;
  for (const Opts& o : kAdam) run<float>(o, seed += 100);
  for (const Opts& o : kAdamW) run<float>(o, seed += 100);
}

TEST_CASE("7.4 Adam's first step moves every element by lr g / (|g| + eps)", "[a7][a7.4]") {
  // After one step m_hat = g and v_hat = g^2 exactly: a value known without the recurrences.
  Tensor p = sg::from_vector(std::vector<double>{1.0, -2.0, 0.5, 3.0}, {4}, sg::float64).set_requires_grad();
  const std::vector<double> g = {0.2, -3.0, 1e-4, 0.0};
  sg::optim::Adam opt({p}, {.lr = 0.1, .beta1 = 0.7, .beta2 = 0.9, .eps = 1e-3});
  p.set_grad(sg::from_vector(g, {4}, sg::float64));
  opt.step();
  const std::vector<double> start = {1.0, -2.0, 0.5, 3.0};
  std::vector<double> want(4);
  for (size_t i = 0; i < 4; ++i) want[i] = start[i] - 0.1 * g[i] / (std::fabs(g[i]) + 1e-3);
  test_util::check_values<double>(p, {4}, want, 1e-12, 1e-14);
}

TEST_CASE("7.5 AdamW with zero gradients only decays the weights", "[a7][a7.5]") {
  Tensor p = sg::from_vector(std::vector<double>{1.0, -2.0, 4.0}, {3}, sg::float64).set_requires_grad();
  sg::optim::AdamW opt({p}, {.lr = 0.1, .weight_decay = 0.5});
  for (int step = 0; step < 3; ++step) {
    p.set_grad(sg::zeros({3}, sg::float64));
    opt.step();
  }
  const double f = std::pow(1 - 0.1 * 0.5, 3);
  test_util::check_values<double>(p, {3}, {f, -2 * f, 4 * f}, 1e-12, 1e-14);
}
