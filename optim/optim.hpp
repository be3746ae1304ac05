#pragma once
// Optimizers (namespace sg::optim): SGD, Adam and AdamW with PyTorch's
// semantics (torch.optim.SGD, Adam and AdamW, the single-tensor path), plus
// global-norm gradient clipping and learning-rate schedules.
//
//   sg::optim::AdamW opt(model.parameters(), {.lr = 3e-4});
//   auto schedule = sg::optim::warmup_cosine_schedule(3e-4, 100, 10000, 3e-5);
//   for (...) {
//     opt.zero_grad();
//     Tensor loss = ...;
//     sg::backward(loss);
//     sg::optim::clip_grad_norm(opt.params(), 1.0);
//     opt.set_lr(schedule(opt.step_count()));
//     opt.step();
//   }
//
// An update runs in place on each parameter's data under a NoGradGuard, as
// one fused loop per parameter; a parameter whose gradient is undefined (no
// backward reached it) is skipped and its state left as it was, as PyTorch
// does.
//
// State. state_dict() returns tensors only, so it goes into the same
// safetensors checkpoint as the model (checkpoint/checkpoint.hpp). Entries:
//   "lr"                  float64 ()  the current learning rate
//   "step"                int64 ()    step() calls so far (what schedules read)
//   "<buffer>.<i>"        the per-parameter buffers of parameter i (its index
//                         in params()), same shape and dtype as it, present
//                         once that parameter has had a gradient:
//                           SGD   momentum_buffer.<i> (when momentum != 0)
//                           Adam  exp_avg.<i>, exp_avg_sq.<i>, step.<i>
//                                 (int64 (); Adam's bias correction counts the
//                                 steps each parameter actually took)
// Hyperparameters other than lr come from the constructor, not the state.
// Loading checks every entry first and changes nothing on a mismatch.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "nn/module.hpp"

namespace sg::optim {

// The base of every optimizer. A new one derives from it, names its
// per-parameter buffers in buffer_names(), calls init_buffers() in its
// constructor and writes update(i); stepping (and skipping parameters with no
// gradient), zero_grad, lr and the state dict come from here.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Applies one update to every parameter that has a gradient.
  void step();
  // Clears every parameter's gradient (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);  // lr >= 0, finite
  // step() calls so far, restored by load_state_dict: schedules read it.
  int64_t step_count() const { return step_count_; }
  const std::vector<Tensor>& params() const { return params_; }
  // "SGD", "Adam" or "AdamW": for messages and checkpoint metadata.
  const char* name() const { return name_; }

  // Copies of the state (entries listed at the top of this file): later
  // steps do not change a state dict already taken.
  nn::StateDict state_dict() const;
  // Throws "<name>.load_state_dict: ..." naming the entry (and both shapes)
  // on any mismatch, without changing anything.
  void check_state_dict(const nn::StateDict& state) const;
  // check_state_dict, then copies the state in (the optimizer keeps its own copies).
  void load_state_dict(const nn::StateDict& state);

 protected:
  // Checks the parameters (defined, float, no duplicates) and lr.
  Optimizer(const char* name, std::vector<Tensor> params, double lr);

  // The names of the per-parameter buffers ("exp_avg", ...), float tensors
  // shaped like their parameter. When counts_param_steps(), the base class
  // also keeps and saves each parameter's step count ("step.<i>").
  virtual std::vector<std::string> buffer_names() const = 0;
  virtual bool counts_param_steps() const { return false; }
  // One update of params_[i], whose grad is defined.
  virtual void update(size_t i) = 0;

  // Sizes buffers_ from buffer_names(); each derived constructor calls it
  // (a base constructor cannot call the virtual).
  void init_buffers();
  // buffers_[b][i]: buffer b of parameter i, undefined until its first update.
  std::vector<std::vector<Tensor>> buffers_;
  std::vector<int64_t> param_steps_;  // Adam: steps taken by each parameter

  const char* name_;
  std::vector<Tensor> params_;
  double lr_;
  int64_t step_count_ = 0;
};

// ---- SGD ----
// torch.optim.SGD with dampening 0. With g the gradient and p the parameter:
//   g = g + weight_decay * p
//   if momentum != 0:
//     buf = g on the first step, else buf = momentum * buf + g
//     g = nesterov ? g + momentum * buf : buf
//   p = p - lr * g
struct SGDOptions {
  double lr = 1e-3;  // PyTorch's default
  double momentum = 0;
  double weight_decay = 0;
  bool nesterov = false;  // needs momentum > 0
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  const SGDOptions& options() const { return options_; }

 private:
  std::vector<std::string> buffer_names() const override;
  void update(size_t i) override;
  SGDOptions options_;
};

// ---- Adam and AdamW ----
// torch.optim.Adam / AdamW (amsgrad off). With t the parameter's step count
// after incrementing it:
//   Adam:  g = g + weight_decay * p              (L2 penalty in the gradient)
//   AdamW: p = p * (1 - lr * weight_decay)       (decoupled decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  // false: weight decay only on parameters of 2 or more dimensions (weight
  // matrices and embedding tables), none on biases and LayerNorm gains: the
  // two parameter groups GPT-2 and nanoGPT's configure_optimizers make.
  bool decay_vectors = true;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  bool decay_vectors = true;  // as AdamOptions
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options);
  const AdamOptions& options() const { return options_; }

 protected:
  // AdamW shares everything but where weight decay goes.
  Adam(const char* name, std::vector<Tensor> params, AdamOptions options, bool decoupled);

 private:
  std::vector<std::string> buffer_names() const override;
  bool counts_param_steps() const override { return true; }
  void update(size_t i) override;
  AdamOptions options_;
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options);
};

// ---- gradient clipping ----
// torch.nn.utils.clip_grad_norm_: the 2-norm of all gradients together
// (parameters without a gradient are skipped), accumulated in double; when
// max_norm / (norm + 1e-6) < 1 every gradient is scaled by that factor.
// Returns the norm before clipping. A non-finite norm is returned as is and
// the gradients are left alone (PyTorch would fill them with NaN), so the
// caller can see it and skip the step.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

// ---- learning-rate schedules ----
// A schedule maps a step (0-based: the number of optimizer steps already
// taken, i.e. opt.step_count() just before opt.step()) to a learning rate.
using Schedule = std::function<double(int64_t step)>;

Schedule constant_schedule(double lr);

// Linear warm-up, then cosine decay to min_lr, with W = warmup_steps and
// T = total_steps:
//   step < W:       base_lr * (step + 1) / W        (never 0; reaches base_lr at step W - 1)
//   W <= step < T:  min_lr + (base_lr - min_lr) * (1 + cos(pi * (step - W) / (T - W))) / 2
//   step >= T:      min_lr
// So step W gives base_lr and the curve approaches min_lr as step nears T.
// Needs 0 <= W <= T, T > 0, 0 <= min_lr <= base_lr and step >= 0.
double warmup_cosine(int64_t step, double base_lr, int64_t warmup_steps, int64_t total_steps,
                     double min_lr = 0);
// The same as a Schedule; the arguments are checked here, once.
Schedule warmup_cosine_schedule(double base_lr, int64_t warmup_steps, int64_t total_steps,
                                double min_lr = 0);

}  // namespace sg::optim
