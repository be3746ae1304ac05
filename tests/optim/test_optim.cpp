// Optimizers, gradient clipping and schedules (optim/optim.hpp).
//
// Every optimizer runs five steps on two parameters, p (2, 3) and q (3), with
// fixed gradients; q has a gradient only on steps 1, 3 and 4, so the
// per-parameter state (and Adam's per-parameter step count) is exercised.
// Results are checked against
//   * a naive reference written below in plain doubles, in the textbook form
//     (Adam with m_hat and v_hat), independent of the fused loops, and
//   * the values torch.optim gave for the same run (PyTorch 1.13, float64),
//     printed with repr() and pasted here.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>
#include <optional>
#include <vector>

#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "nn/module.hpp"
#include "optim/optim.hpp"

using namespace sg;
using Catch::Matchers::Contains;

namespace {

const std::vector<double> kP0 = {0.5, -1.25, 2.0, 0.125, -0.75, 1.5};
const std::vector<double> kQ0 = {1.0, -2.0, 0.25};
constexpr int kSteps = 5;

// Gradients of step k, exact binary fractions so every implementation sees the same bits.
std::vector<double> grad_p(int k) {
  std::vector<double> g(6);
  for (int i = 0; i < 6; ++i) g[i] = ((i * 7 + k * 3) % 11 - 5) / 4.0;
  return g;
}
std::optional<std::vector<double>> grad_q(int k) {
  if (k != 1 && k != 3 && k != 4) return std::nullopt;
  std::vector<double> g(3);
  for (int i = 0; i < 3; ++i) g[i] = ((i * 5 + k) % 7 - 3) / 2.0;
  return g;
}

Tensor make(const std::vector<double>& v, const Shape& shape, DType dtype) {
  Tensor t = kernel::to(from_vector(v, shape), dtype);
  t.set_requires_grad(true);
  return t;
}

// Gives p and q the gradients of step k (q none on some steps).
void set_grads(Tensor& p, Tensor& q, int k) {
  p.set_grad(kernel::to(from_vector(grad_p(k), {2, 3}), p.dtype()));
  if (auto g = grad_q(k)) q.set_grad(kernel::to(from_vector(*g, {3}), q.dtype()));
}

// Runs steps [first, last) of the fixed schedule of gradients.
void run_steps(optim::Optimizer& opt, Tensor& p, Tensor& q, int first, int last) {
  for (int k = first; k < last; ++k) {
    opt.zero_grad();
    set_grads(p, q, k);
    opt.step();
  }
}

// p's then q's values after kSteps steps of an optimizer built by make_opt.
template <class MakeOpt>
std::vector<double> run(MakeOpt make_opt, DType dtype = float64) {
  Tensor p = make(kP0, {2, 3}, dtype), q = make(kQ0, {3}, dtype);
  auto opt = make_opt(std::vector<Tensor>{p, q});
  run_steps(opt, p, q, 0, kSteps);
  std::vector<double> out = p.to_vector<double>();
  for (double v : q.to_vector<double>()) out.push_back(v);
  return out;
}

// ---- naive references, one parameter each ----
struct RefSGD {
  double lr, momentum = 0, weight_decay = 0;
  bool nesterov = false;
  std::vector<double> buf;  // empty until the first step
  void step(std::vector<double>& p, const std::vector<double>& g) {
    const bool first = buf.empty();
    if (first) buf.resize(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + weight_decay * p[i];
      if (momentum != 0) {
        buf[i] = first ? d : momentum * buf[i] + d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
  }
};

struct RefAdam {
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;
  std::vector<double> m, v;
  int t = 0;
  void step(std::vector<double>& p, const std::vector<double>& g) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      double gi = g[i];
      if (decoupled)
        p[i] -= lr * weight_decay * p[i];
      else
        gi += weight_decay * p[i];
      m[i] = beta1 * m[i] + (1 - beta1) * gi;
      v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;
      const double m_hat = m[i] / (1 - std::pow(beta1, t));
      const double v_hat = v[i] / (1 - std::pow(beta2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

// Runs a reference (one copy per parameter) over the same schedule.
template <class Ref>
std::vector<double> run_reference(const Ref& proto) {
  Ref rp = proto, rq = proto;
  std::vector<double> p = kP0, q = kQ0;
  for (int k = 0; k < kSteps; ++k) {
    rp.step(p, grad_p(k));
    if (auto g = grad_q(k)) rq.step(q, *g);
  }
  p.insert(p.end(), q.begin(), q.end());
  return p;
}

void require_close(const std::vector<double>& got, const std::vector<double>& want, double rel) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << want[i]);
    REQUIRE(std::abs(got[i] - want[i]) <= rel * (1 + std::abs(want[i])));
  }
}

}  // namespace

TEST_CASE("SGD matches a naive reference and torch.optim.SGD", "[optim]") {
  SECTION("plain") {
    auto got = run([](auto ps) { return optim::SGD(ps, {.lr = 0.1}); });
    require_close(got, run_reference(RefSGD{.lr = 0.1}), 1e-14);
    require_close(got, {0.65, -1.425, 2.05, 0.125, -0.8, 1.675, 1.05, -1.9999999999999998, 0.2}, 1e-14);
  }
  SECTION("momentum and weight decay") {
    auto got = run([](auto ps) { return optim::SGD(ps, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01}); });
    require_close(got, run_reference(RefSGD{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01}), 1e-14);
    require_close(got,
                  {1.0171300691744245, -1.738287635430799, 2.036201415842248, -0.1465588315815502,
                   -0.9170162039714743, 1.8705859669529734, 1.215014899, -2.154819748, -0.02156135025000004},
                  1e-14);
  }
  SECTION("nesterov and weight decay") {
    auto got = run([](auto ps) {
      return optim::SGD(ps, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.05, .nesterov = true});
    });
    require_close(got, run_reference(RefSGD{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.05, .nesterov = true}),
                  1e-14);
    require_close(got,
                  {1.059145922319407, -1.7604107140404803, 1.9390107492291622, -0.11473899826946382,
                   -0.8893866895613226, 1.8924845569259103, 1.203869990125, -2.0641609065, -0.048151113093749996},
                  1e-14);
  }
}

TEST_CASE("Adam matches a naive reference and torch.optim.Adam", "[optim]") {
  SECTION("defaults") {
    auto got = run([](auto ps) { return optim::Adam(ps, {.lr = 0.01}); });
    require_close(got, run_reference(RefAdam{.lr = 0.01}), 1e-13);
    require_close(got,
                  {0.5279622806214492, -1.2796843032643788, 2.0108127405198113, 0.10866420814005173,
                   -0.7699391626073564, 1.524628585908035, 1.018473254299944, -2.0108130070770427,
                   0.23007454782144832},
                  1e-13);
  }
  SECTION("L2 weight decay in the gradient, other betas and eps") {
    const optim::AdamOptions o{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1};
    auto got = run([&](auto ps) { return optim::Adam(ps, o); });
    require_close(got, run_reference(RefAdam{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1}),
                  1e-13);
    require_close(got,
                  {0.5237294837158346, -1.2739229249697877, 1.997492431317915, 0.11009506868393253,
                   -0.7654854373570474, 1.5160397532520302, 1.0146875571818441, -2.0061859096243264,
                   0.23028964153293283},
                  1e-13);
  }
}

TEST_CASE("AdamW decouples weight decay, matching a naive reference and torch.optim.AdamW", "[optim]") {
  auto got = run([](auto ps) { return optim::AdamW(ps, {.lr = 0.01, .weight_decay = 0.1}); });
  require_close(got, run_reference(RefAdam{.lr = 0.01, .weight_decay = 0.1, .decoupled = true}), 1e-13);
  require_close(got,
                {0.5253887745254231, -1.2733695720327334, 2.0007929387966006, 0.10809283464646638,
                 -0.7661299279856597, 1.5170812876199227, 1.0154495627176976, -2.0047975698718905,
                 0.22935446538215626},
                1e-13);
  // The default weight decay is PyTorch's 0.01, and it differs from Adam's L2 penalty.
  CHECK(optim::AdamWOptions{}.weight_decay == 0.01);
  auto adam = run([](auto ps) { return optim::Adam(ps, {.lr = 0.01, .weight_decay = 0.1}); });
  CHECK(adam != got);
}

TEST_CASE("AdamW with decay_vectors off decays matrices only, as GPT-2's two parameter groups", "[optim]") {
  // Zero gradients: Adam's own step is 0, so what moves is the decay alone.
  Tensor matrix = sg::full({2, 3}, 2.0, sg::float64).set_requires_grad(true);
  Tensor vector = sg::full({3}, 2.0, sg::float64).set_requires_grad(true);
  matrix.set_grad(sg::zeros({2, 3}, sg::float64));
  vector.set_grad(sg::zeros({3}, sg::float64));
  optim::AdamW opt({matrix, vector}, {.lr = 0.5, .weight_decay = 0.1, .decay_vectors = false});
  opt.step();
  for (double v : matrix.to_vector<double>()) REQUIRE(v == Approx(2.0 * (1 - 0.5 * 0.1)).epsilon(1e-15));
  for (double v : vector.to_vector<double>()) REQUIRE(v == 2.0);
  REQUIRE(optim::AdamWOptions{}.decay_vectors);  // PyTorch's default: one group, every parameter decayed
}

TEST_CASE("optimizers update float32 parameters in float32", "[optim]") {
  auto sgd = run([](auto ps) { return optim::SGD(ps, {.lr = 0.1, .momentum = 0.9, .nesterov = true}); }, float32);
  require_close(sgd, run_reference(RefSGD{.lr = 0.1, .momentum = 0.9, .nesterov = true}), 1e-5);
  auto adam = run([](auto ps) { return optim::Adam(ps, {.lr = 0.01, .weight_decay = 0.1}); }, float32);
  require_close(adam, run_reference(RefAdam{.lr = 0.01, .weight_decay = 0.1}), 1e-5);
  auto adamw = run([](auto ps) { return optim::AdamW(ps, {.lr = 0.01}); }, float32);
  require_close(adamw, run_reference(RefAdam{.lr = 0.01, .weight_decay = 0.01, .decoupled = true}), 1e-5);
}

TEST_CASE("optimizers skip parameters without a gradient and keep no state for them", "[optim]") {
  Tensor p = make(kP0, {2, 3}, float64), q = make(kQ0, {3}, float64);
  optim::Adam opt({p, q}, {.lr = 0.1, .weight_decay = 0.5});
  run_steps(opt, p, q, 0, 1);  // q has no gradient on step 0
  CHECK(q.to_vector<double>() == kQ0);
  CHECK(p.to_vector<double>() != kP0);
  const nn::StateDict state = opt.state_dict();
  CHECK(state.count("exp_avg.0") == 1);
  CHECK(state.count("step.0") == 1);
  CHECK(state.count("exp_avg.1") == 0);
  CHECK(state.count("step.1") == 0);
  CHECK(opt.step_count() == 1);
  opt.zero_grad();
  CHECK_FALSE(p.grad().defined());
}

TEST_CASE("clip_grad_norm scales all gradients together as PyTorch does", "[optim]") {
  Tensor a = zeros({2}, float64).set_requires_grad(), b = zeros({1, 1}, float64).set_requires_grad();
  Tensor none = zeros({4}, float64).set_requires_grad();  // no gradient: skipped
  a.set_grad(from_vector(std::vector<double>{3, -4}, {2}));
  b.set_grad(from_vector(std::vector<double>{12}, {1, 1}));

  SECTION("above max_norm: scaled by max_norm / (norm + 1e-6)") {
    CHECK(optim::clip_grad_norm({a, b, none}, 6.5) == 13.0);
    // torch.nn.utils.clip_grad_norm_ on the same gradients:
    require_close(a.grad().to_vector<double>(), {1.4999998846153937, -1.9999998461538582}, 1e-15);
    require_close(b.grad().to_vector<double>(), {5.999999538461575}, 1e-15);
    CHECK_FALSE(none.grad().defined());
  }
  SECTION("below max_norm: unchanged, bit for bit") {
    CHECK(optim::clip_grad_norm({a, b}, 20.0) == 13.0);
    CHECK(a.grad().to_vector<double>() == std::vector<double>{3, -4});
    CHECK(b.grad().to_vector<double>() == std::vector<double>{12});
  }
  SECTION("no gradients: norm 0") { CHECK(optim::clip_grad_norm({none}, 1.0) == 0.0); }
  SECTION("a large float32 gradient (the parallel path) gives the norm in double") {
    const int64_t n = 100000;
    std::vector<float> g(n);
    double squares = 0;
    for (int64_t i = 0; i < n; ++i) {
      g[i] = static_cast<float>((i % 13) - 6) * 0.25f;
      squares += static_cast<double>(g[i]) * g[i];
    }
    Tensor big = zeros({n}).set_requires_grad();
    big.set_grad(from_vector(g, {n}));
    CHECK(optim::clip_grad_norm({big}, 1.0) == Approx(std::sqrt(squares)).epsilon(1e-12));
    double clipped = 0;
    for (float v : big.grad().to_vector<float>()) clipped += static_cast<double>(v) * v;
    CHECK(std::sqrt(clipped) == Approx(1.0).epsilon(1e-5));
  }
  REQUIRE_THROWS_WITH(optim::clip_grad_norm({a}, -1.0),
                      "clip_grad_norm: max_norm must be >= 0 and finite, got -1");
}

TEST_CASE("learning-rate schedules give the documented values at key steps", "[optim]") {
  // base 1, warm-up 10 steps, cosine to 0.1 at step 110.
  auto lr = [](int64_t step) { return optim::warmup_cosine(step, 1.0, 10, 110, 0.1); };
  CHECK(lr(0) == Approx(0.1));   // (0 + 1) / 10
  CHECK(lr(4) == Approx(0.5));   // (4 + 1) / 10
  CHECK(lr(9) == Approx(1.0));   // end of warm-up
  CHECK(lr(10) == Approx(1.0));  // cosine starts at base_lr
  CHECK(lr(35) == Approx(0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi / 4))));  // a quarter of the way
  CHECK(lr(60) == Approx(0.55));                                                  // half way: the mean
  CHECK(lr(109) == Approx(0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 99 / 100))));
  CHECK(lr(110) == 0.1);
  CHECK(lr(1000) == 0.1);
  // Without warm-up, step 0 is base_lr; the schedule object gives the same numbers.
  CHECK(optim::warmup_cosine(0, 2.0, 0, 100) == 2.0);
  const optim::Schedule s = optim::warmup_cosine_schedule(1.0, 10, 110, 0.1);
  for (int64_t step : {0, 5, 10, 50, 109, 110, 200}) CHECK(s(step) == lr(step));
  const optim::Schedule c = optim::constant_schedule(0.3);
  CHECK(c(0) == 0.3);
  CHECK(c(12345) == 0.3);

  REQUIRE_THROWS_WITH(optim::warmup_cosine(5, 1.0, 20, 10),
                      "warmup_cosine: warmup_steps must be in [0, total_steps = 10], got 20");
  REQUIRE_THROWS_WITH(optim::warmup_cosine(5, 1.0, 0, 0), "warmup_cosine: total_steps must be > 0, got 0");
  REQUIRE_THROWS_WITH(optim::warmup_cosine_schedule(1.0, 0, 10, 2.0),
                      "warmup_cosine: min_lr must be in [0, base_lr = 1], got 2");
  REQUIRE_THROWS_WITH(s(-1), "warmup_cosine: step must be >= 0, got -1");
}

TEST_CASE("an optimizer's state_dict continues a run exactly", "[optim]") {
  auto check = [](auto make_opt) {
    // Uninterrupted: steps 0..5.
    Tensor p = make(kP0, {2, 3}, float64), q = make(kQ0, {3}, float64);
    auto opt = make_opt(std::vector<Tensor>{p, q});
    run_steps(opt, p, q, 0, 3);
    opt.set_lr(opt.lr() * 0.5);  // a changed lr is part of the state
    const nn::StateDict saved = opt.state_dict();
    const Tensor p_saved = clone(p), q_saved = clone(q);
    run_steps(opt, p, q, 3, 6);

    // Resumed: fresh parameters and optimizer, state loaded, steps 3..5.
    Tensor p2 = clone(p_saved).set_requires_grad(), q2 = clone(q_saved).set_requires_grad();
    auto resumed = make_opt(std::vector<Tensor>{p2, q2});
    resumed.load_state_dict(saved);
    CHECK(resumed.step_count() == 3);
    CHECK(resumed.lr() == saved.at("lr").item<double>());
    run_steps(resumed, p2, q2, 3, 6);
    CHECK(p2.to_vector<double>() == p.to_vector<double>());  // bit for bit
    CHECK(q2.to_vector<double>() == q.to_vector<double>());
  };
  check([](auto ps) { return optim::SGD(ps, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01}); });
  check([](auto ps) { return optim::Adam(ps, {.lr = 0.01, .weight_decay = 0.1}); });
  check([](auto ps) { return optim::AdamW(ps, {.lr = 0.01}); });
}

TEST_CASE("load_state_dict rejects a mismatched state and changes nothing", "[optim]") {
  Tensor p = make(kP0, {2, 3}, float64), q = make(kQ0, {3}, float64);
  optim::Adam opt({p, q}, {.lr = 0.01});
  run_steps(opt, p, q, 0, 2);
  const nn::StateDict good = opt.state_dict();
  auto unchanged = [&] {
    const nn::StateDict now = opt.state_dict();
    REQUIRE(now.size() == good.size());
    for (const auto& [k, t] : good) CHECK(now.at(k).to_vector<double>() == t.to_vector<double>());
  };

  nn::StateDict bad = good;
  bad["exp_avg.0"] = zeros({3, 2}, float64);
  REQUIRE_THROWS_WITH(opt.load_state_dict(bad),
                      "Adam.load_state_dict: 'exp_avg.0' has shape (3, 2) in the state, parameter 0 has shape (2, 3)");
  unchanged();

  bad = good;
  bad["exp_avg_sq.1"] = zeros({3}, float32);
  REQUIRE_THROWS_WITH(opt.load_state_dict(bad), Contains("'exp_avg_sq.1' has dtype float32 in the state"));
  unchanged();

  bad = good;
  bad["momentum_buffer.0"] = zeros({2, 3}, float64);
  REQUIRE_THROWS_WITH(opt.load_state_dict(bad),
                      "Adam.load_state_dict: unexpected entry 'momentum_buffer.0' of shape (2, 3) (Adam has no such state)");

  bad = good;
  bad["exp_avg.7"] = zeros({2, 3}, float64);
  REQUIRE_THROWS_WITH(opt.load_state_dict(bad),
                      "Adam.load_state_dict: entry 'exp_avg.7' is for parameter 7, but the optimizer has 2 parameters");

  bad = good;
  bad.erase("exp_avg_sq.0");
  REQUIRE_THROWS_WITH(opt.load_state_dict(bad),
                      "Adam.load_state_dict: parameter 0 has only part of its state; expected all or none of "
                      "'exp_avg.0', 'exp_avg_sq.0', 'step.0'");

  bad = good;
  bad.erase("lr");
  REQUIRE_THROWS_WITH(opt.load_state_dict(bad), "Adam.load_state_dict: missing entry 'lr'");
  unchanged();

  // An SGD without momentum has no buffers to take.
  optim::SGD sgd({p, q}, {.lr = 0.1});
  REQUIRE_THROWS_WITH(sgd.load_state_dict(good), Contains("SGD.load_state_dict: unexpected entry 'exp_avg.0'"));
}

TEST_CASE("optimizers reject bad hyperparameters, naming the optimizer and the value", "[optim]") {
  Tensor p = make(kP0, {2, 3}, float64);
  REQUIRE_THROWS_WITH(optim::SGD({p}, {.lr = -0.1}), "SGD: learning rate must be >= 0 and finite, got -0.1");
  REQUIRE_THROWS_WITH(optim::SGD({p}, {.lr = 0.1, .momentum = -0.5}), "SGD: momentum must be >= 0, got -0.5");
  REQUIRE_THROWS_WITH(optim::SGD({p}, {.lr = 0.1, .weight_decay = -1}), "SGD: weight_decay must be >= 0, got -1");
  REQUIRE_THROWS_WITH(optim::SGD({p}, {.lr = 0.1, .nesterov = true}),
                      "SGD: nesterov needs momentum > 0, got momentum 0");
  REQUIRE_THROWS_WITH(optim::Adam({p}, {.beta1 = 1.0}), "Adam: beta1 must be in [0, 1), got 1");
  REQUIRE_THROWS_WITH(optim::Adam({p}, {.beta2 = -0.1}), "Adam: beta2 must be in [0, 1), got -0.1");
  REQUIRE_THROWS_WITH(optim::Adam({p}, {.eps = 0}), "Adam: eps must be > 0, got 0");
  REQUIRE_THROWS_WITH(optim::AdamW({p}, {.lr = -1}), "AdamW: learning rate must be >= 0 and finite, got -1");
  REQUIRE_THROWS_WITH(optim::AdamW({p}, {.weight_decay = -0.01}), "AdamW: weight_decay must be >= 0, got -0.01");
  REQUIRE_THROWS_WITH(optim::Adam({}, {}), "Adam: got an empty parameter list");
  REQUIRE_THROWS_WITH(optim::Adam({p, p}, {}),
                      "Adam: parameter 1 of shape (2, 3) is the same tensor as parameter 0 (it would be updated twice)");
  REQUIRE_THROWS_WITH(optim::SGD({arange(3)}, {}), "SGD: parameter 0 of shape (3) is int64; parameters are float");
  optim::SGD ok({p}, {.lr = 0.1});
  REQUIRE_THROWS_WITH(ok.set_lr(-2), "SGD: learning rate must be >= 0 and finite, got -2");
  CHECK(ok.lr() == 0.1);
}
