// Optimizers, gradient clipping and learning-rate schedules. The update
// formulas are written out in optim/optim.hpp; each update here is one loop
// over a parameter's elements that reads and writes everything it needs
// (parameter, gradient, buffers) once. Scalar coefficients are computed in
// double, as PyTorch computes them in Python, then rounded to the element type.
#include "optim/optim.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "autograd/engine.hpp"
#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/parallel.hpp"

namespace sg::optim {
namespace {

void check_lr(const char* who, double lr) {
  if (!(lr >= 0) || !std::isfinite(lr)) fail(who, ": learning rate must be >= 0 and finite, got ", lr);
}

// Sum of squares of n values in double. The sum is split into fixed chunks
// (whatever the thread count) that are added in order, so the result is the
// same bits on 1 or 16 threads: a resumed run must clip exactly as the
// uninterrupted one did.
template <class T>
double sum_of_squares(const T* x, int64_t n) {
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks), 0.0);
  parallel_for(chunks, n >= kParallelElementwise, [&](int64_t c) {
    double s = 0;
    const int64_t end = std::min(n, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    partial[static_cast<size_t>(c)] = s;
  });
  double total = 0;
  for (double s : partial) total += s;
  return total;
}

}  // namespace

// ================= Optimizer =================

Optimizer::Optimizer(const char* name, std::vector<Tensor> params, double lr)
    : name_(name), params_(std::move(params)), lr_(lr) {
  check_lr(name_, lr);
  if (params_.empty()) fail(name_, ": got an empty parameter list");
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.defined()) fail(name_, ": parameter ", i, " is an undefined tensor");
    if (!is_floating(p.dtype()))
      fail(name_, ": parameter ", i, " of shape ", p.shape(), " is int64; parameters are float");
    for (size_t j = 0; j < i; ++j)
      if (params_[j].is_same(p))
        fail(name_, ": parameter ", i, " of shape ", p.shape(), " is the same tensor as parameter ", j,
             " (it would be updated twice)");
  }
  param_steps_.assign(params_.size(), 0);
}

void Optimizer::set_lr(double lr) {
  check_lr(name_, lr);
  lr_ = lr;
}

void Optimizer::init_buffers() {
  buffers_.assign(buffer_names().size(), std::vector<Tensor>(params_.size()));
}

void Optimizer::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    ++param_steps_[i];
    update(i);
    // update() writes the parameter in place through data<T>(): a graph
    // built before this step that saved the parameter must see the change
    // (backward() then refuses to use the stale values).
    params_[i].bump_version();
  }
  ++step_count_;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.set_grad(Tensor());
}

nn::StateDict Optimizer::state_dict() const {
  nn::StateDict out;
  out["lr"] = scalar(lr_, float64);
  out["step"] = scalar(static_cast<double>(step_count_), int64);
  const std::vector<std::string> names = buffer_names();
  for (size_t b = 0; b < names.size(); ++b)
    for (size_t i = 0; i < params_.size(); ++i)
      if (buffers_[b][i].defined()) out[names[b] + "." + std::to_string(i)] = clone(buffers_[b][i]);
  if (counts_param_steps())
    for (size_t i = 0; i < params_.size(); ++i)
      if (param_steps_[i] > 0)
        out["step." + std::to_string(i)] = scalar(static_cast<double>(param_steps_[i]), int64);
  return out;
}

void Optimizer::check_state_dict(const nn::StateDict& state) const {
  const std::string who = std::string(name_) + ".load_state_dict";
  auto check_scalar = [&](const std::string& key, const Tensor& t, DType dtype) {
    if (t.dim() != 0 || t.dtype() != dtype)
      fail(who, ": '", key, "' has shape ", t.shape(), " and dtype ", t.dtype(), ", expected shape () and dtype ",
           dtype);
  };
  for (const char* key : {"lr", "step"})
    if (!state.count(key)) fail(who, ": missing entry '", key, "'");

  const std::vector<std::string> names = buffer_names();
  // present[i]: how many of parameter i's entries (buffers, and step.<i> for Adam) are there.
  std::vector<size_t> present(params_.size(), 0);
  for (const auto& [key, t] : state) {
    if (!t.defined()) fail(who, ": entry '", key, "' is an undefined tensor");
    if (key == "lr") {
      check_scalar(key, t, float64);
      const double lr = t.item<double>();
      if (!(lr >= 0) || !std::isfinite(lr)) fail(who, ": 'lr' is ", lr, ", expected >= 0 and finite");
      continue;
    }
    if (key == "step") {
      check_scalar(key, t, int64);
      if (t.item<int64_t>() < 0) fail(who, ": 'step' is ", t.item<int64_t>(), ", expected >= 0");
      continue;
    }
    // "<buffer>.<i>": the index is everything after the last dot.
    const size_t dot = key.rfind('.');
    const std::string prefix = dot == std::string::npos ? key : key.substr(0, dot);
    const std::string digits = dot == std::string::npos ? "" : key.substr(dot + 1);
    const bool is_index = !digits.empty() && digits.size() < 10 &&
                          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    const bool known = (prefix == "step" && counts_param_steps()) ||
                       std::find(names.begin(), names.end(), prefix) != names.end();
    if (!known || !is_index)
      fail(who, ": unexpected entry '", key, "' of shape ", t.shape(), " (", name_,
           " has no such state)");
    const size_t i = std::stoul(digits);
    if (i >= params_.size())
      fail(who, ": entry '", key, "' is for parameter ", i, ", but the optimizer has ", params_.size(),
           " parameters");
    if (prefix == "step") {
      check_scalar(key, t, int64);
      if (t.item<int64_t>() < 1) fail(who, ": '", key, "' is ", t.item<int64_t>(), ", expected >= 1");
    } else {
      const Tensor& p = params_[i];
      if (t.shape() != p.shape())
        fail(who, ": '", key, "' has shape ", t.shape(), " in the state, parameter ", i, " has shape ",
             p.shape());
      if (t.dtype() != p.dtype())
        fail(who, ": '", key, "' has dtype ", t.dtype(), " in the state, parameter ", i, " of shape ",
             p.shape(), " has dtype ", p.dtype());
    }
    ++present[i];
  }
  // A parameter has either all of its state (it has stepped) or none of it.
  const size_t full = names.size() + (counts_param_steps() ? 1 : 0);
  for (size_t i = 0; i < params_.size(); ++i)
    if (present[i] != 0 && present[i] != full) {
      std::string expected;
      for (const auto& n : names) expected += (expected.empty() ? "'" : ", '") + n + "." + std::to_string(i) + "'";
      if (counts_param_steps()) expected += ", 'step." + std::to_string(i) + "'";
      fail(who, ": parameter ", i, " has only part of its state; expected all or none of ", expected);
    }
}

void Optimizer::load_state_dict(const nn::StateDict& state) {
  check_state_dict(state);
  lr_ = state.at("lr").item<double>();
  step_count_ = state.at("step").item<int64_t>();
  const std::vector<std::string> names = buffer_names();
  for (size_t b = 0; b < names.size(); ++b)
    for (size_t i = 0; i < params_.size(); ++i) {
      auto it = state.find(names[b] + "." + std::to_string(i));
      buffers_[b][i] = it == state.end() ? Tensor() : clone(it->second);
    }
  for (size_t i = 0; i < params_.size(); ++i) {
    auto it = state.find("step." + std::to_string(i));
    param_steps_[i] = it == state.end() ? 0 : it->second.item<int64_t>();
  }
}

// ================= SGD =================

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer("SGD", std::move(params), options.lr), options_(options) {
  if (!(options.momentum >= 0) || !std::isfinite(options.momentum))
    fail("SGD: momentum must be >= 0, got ", options.momentum);
  if (!(options.weight_decay >= 0) || !std::isfinite(options.weight_decay))
    fail("SGD: weight_decay must be >= 0, got ", options.weight_decay);
  if (options.nesterov && options.momentum == 0)
    fail("SGD: nesterov needs momentum > 0, got momentum ", options.momentum);
  init_buffers();
}

std::vector<std::string> SGD::buffer_names() const {
  if (options_.momentum == 0) return {};
  return {"momentum_buffer"};
}

void SGD::update(size_t i) {
  Tensor& p = params_[i];
  const Tensor g = p.grad();
  const bool use_momentum = options_.momentum != 0;
  // As PyTorch, the buffer starts as a copy of the first (decayed) gradient.
  bool first = false;
  if (use_momentum && !buffers_[0][i].defined()) {
    buffers_[0][i] = empty(p.shape(), p.dtype());
    first = true;
  }
  visit_floating(p.dtype(), "SGD.step", [&](auto tag) {
    using T = decltype(tag);
    // p, g, buf: (n) elements each, updated in place.
    T* pd = p.data<T>();
    const T* gd = g.data<T>();
    T* bd = use_momentum ? buffers_[0][i].data<T>() : nullptr;
    const T neg_lr = static_cast<T>(-lr_);
    const T wd = static_cast<T>(options_.weight_decay);
    const T momentum = static_cast<T>(options_.momentum);
    const bool decay = options_.weight_decay != 0, nesterov = options_.nesterov;
    const int64_t n = p.numel();
    parallel_for(n, n >= kParallelElementwise, [&](int64_t j) {
      T d = gd[j];
      if (decay) d = d + wd * pd[j];
      if (bd) {
        const T b = first ? d : bd[j] * momentum + d;
        bd[j] = b;
        d = nesterov ? d + momentum * b : b;
      }
      pd[j] = pd[j] + neg_lr * d;
    });
  });
}

// ================= Adam / AdamW =================

namespace {
void check_adam(const char* who, double beta1, double beta2, double eps, double weight_decay) {
  if (!(beta1 >= 0 && beta1 < 1)) fail(who, ": beta1 must be in [0, 1), got ", beta1);
  if (!(beta2 >= 0 && beta2 < 1)) fail(who, ": beta2 must be in [0, 1), got ", beta2);
  if (!(eps > 0) || !std::isfinite(eps)) fail(who, ": eps must be > 0, got ", eps);
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay))
    fail(who, ": weight_decay must be >= 0, got ", weight_decay);
}
}  // namespace

namespace {

// Adam's constants for one parameter and step. Plain Adam's L2 term has wd > 0
// and decay_factor 1; AdamW's decoupled decay has wd 0 and decay_factor 1 - lr wd.
template <class T>
struct AdamStep {
  T beta1, one_minus_beta1, beta2, one_minus_beta2, neg_step_size, bc2_sqrt, eps, wd, decay_factor;
};
constexpr int64_t kAdamChunk = 1 << 13;

// p, g, m (exp_avg), v (exp_avg_sq): elements [begin, end) updated in place.
// A function with restrict pointers so that the loop vectorises (inside the
// OpenMP closure the compiler cannot tell the four arrays apart).
template <class T>
void adam_range(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t begin,
                int64_t end, const AdamStep<T> st) {
  // BEGIN ASSIGNMENT 7: adam_range: the update of elements [begin, end) of one parameter and its moments
  for (int64_t j = begin; j < end; ++j) {
    const T pj = p[j] * st.decay_factor;
    const T gj = g[j] + st.wd * pj;
    const T mj = m[j] * st.beta1 + gj * st.one_minus_beta1;
    const T vj = v[j] * st.beta2 + st.one_minus_beta2 * gj * gj;
    m[j] = mj;
    v[j] = vj;
    p[j] = pj + st.neg_step_size * mj / (std::sqrt(vj) / st.bc2_sqrt + st.eps);
  }
  // END ASSIGNMENT 7
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam("Adam", std::move(params), options, false) {}

Adam::Adam(const char* name, std::vector<Tensor> params, AdamOptions options, bool decoupled)
    : Optimizer(name, std::move(params), options.lr), options_(options), decoupled_(decoupled) {
  check_adam(name, options.beta1, options.beta2, options.eps, options.weight_decay);
  init_buffers();
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions o)
    : Adam("AdamW", std::move(params), AdamOptions{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.decay_vectors}, true) {}

std::vector<std::string> Adam::buffer_names() const { return {"exp_avg", "exp_avg_sq"}; }

void Adam::update(size_t i) {
  Tensor& p = params_[i];
  const Tensor g = p.grad();
  if (!buffers_[0][i].defined()) {
    buffers_[0][i] = zeros(p.shape(), p.dtype());
    buffers_[1][i] = zeros(p.shape(), p.dtype());
  }
  AdamOptions o = options_;
  if (!o.decay_vectors && p.dim() < 2) o.weight_decay = 0;  // a bias or a gain: not decayed
  // BEGIN ASSIGNMENT 7: Adam::update: the step's constants (bias corrections, Adam's L2 term or AdamW's decoupled decay) for adam_range
  const double t = static_cast<double>(param_steps_[i]);  // already counts this step
  const double step_size = lr_ / (1 - std::pow(o.beta1, t));
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(o.beta2, t));
  visit_floating(p.dtype(), decoupled_ ? "AdamW.step" : "Adam.step", [&](auto tag) {
    using T = decltype(tag);
    // p, g, m (exp_avg), v (exp_avg_sq): (n) elements each, updated in place.
    T* pd = p.data<T>();
    const T* gd = g.data<T>();
    T* md = buffers_[0][i].data<T>();
    T* vd = buffers_[1][i].data<T>();
    AdamStep<T> st;
    st.beta1 = static_cast<T>(o.beta1), st.one_minus_beta1 = static_cast<T>(1 - o.beta1);
    st.beta2 = static_cast<T>(o.beta2), st.one_minus_beta2 = static_cast<T>(1 - o.beta2);
    st.neg_step_size = static_cast<T>(-step_size);
    st.bc2_sqrt = static_cast<T>(bias_correction2_sqrt);
    st.eps = static_cast<T>(o.eps);
    st.wd = static_cast<T>(!decoupled_ ? o.weight_decay : 0);
    st.decay_factor = static_cast<T>(decoupled_ ? 1 - lr_ * o.weight_decay : 1);
    const int64_t n = p.numel(), chunks = (n + kAdamChunk - 1) / kAdamChunk;
    parallel_for(chunks, n >= kParallelElementwise, [&](int64_t c) {
      adam_range(pd, gd, md, vd, c * kAdamChunk, std::min(n, (c + 1) * kAdamChunk), st);
    });
  });
  // END ASSIGNMENT 7
}

// ================= clipping =================

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  if (!(max_norm >= 0) || !std::isfinite(max_norm))
    fail("clip_grad_norm: max_norm must be >= 0 and finite, got ", max_norm);
  double squares = 0;
  for (const Tensor& p : params) {
    if (!p.defined()) fail("clip_grad_norm: got an undefined parameter");
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    squares += visit_floating(g.dtype(), "clip_grad_norm",
                              [&](auto tag) { return sum_of_squares(g.data<decltype(tag)>(), g.numel()); });
  }
  const double norm = std::sqrt(squares);
  const double coef = max_norm / (norm + 1e-6);
  if (std::isfinite(norm) && coef < 1) {
    NoGradGuard no_grad;
    for (const Tensor& p : params) {
      Tensor g = p.grad();
      if (g.defined()) kernel::scale_(g, coef);
    }
  }
  return norm;
}

// ================= schedules =================

Schedule constant_schedule(double lr) {
  check_lr("constant_schedule", lr);
  return [lr](int64_t step) {
    if (step < 0) fail("constant_schedule: step must be >= 0, got ", step);
    return lr;
  };
}

namespace {
void check_warmup_cosine(double base_lr, int64_t warmup_steps, int64_t total_steps, double min_lr) {
  check_lr("warmup_cosine", base_lr);
  if (total_steps <= 0) fail("warmup_cosine: total_steps must be > 0, got ", total_steps);
  if (warmup_steps < 0 || warmup_steps > total_steps)
    fail("warmup_cosine: warmup_steps must be in [0, total_steps = ", total_steps, "], got ", warmup_steps);
  if (!(min_lr >= 0 && min_lr <= base_lr))
    fail("warmup_cosine: min_lr must be in [0, base_lr = ", base_lr, "], got ", min_lr);
}

double warmup_cosine_unchecked(int64_t step, double base_lr, int64_t warmup_steps, int64_t total_steps,
                               double min_lr) {
  if (step < 0) fail("warmup_cosine: step must be >= 0, got ", step);
  if (step < warmup_steps) return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (step >= total_steps) return min_lr;
  const double progress =
      static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  return min_lr + (base_lr - min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * progress));
}
}  // namespace

double warmup_cosine(int64_t step, double base_lr, int64_t warmup_steps, int64_t total_steps, double min_lr) {
  check_warmup_cosine(base_lr, warmup_steps, total_steps, min_lr);
  return warmup_cosine_unchecked(step, base_lr, warmup_steps, total_steps, min_lr);
}

Schedule warmup_cosine_schedule(double base_lr, int64_t warmup_steps, int64_t total_steps, double min_lr) {
  check_warmup_cosine(base_lr, warmup_steps, total_steps, min_lr);
  return [=](int64_t step) { return warmup_cosine_unchecked(step, base_lr, warmup_steps, total_steps, min_lr); };
}

}  // namespace sg::optim
