#include "nn/module.hpp"

#include "core/kernels.hpp"

namespace sg::nn {
namespace {
void collect(const Module& m, const std::string& prefix, NamedTensors& out, bool buffers,
             const NamedTensors& own) {
  for (const auto& [name, t] : own) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : m.named_children()) {
    const NamedTensors sub = buffers ? child->named_buffers() : child->named_parameters();
    for (const auto& [n, t] : sub) out.emplace_back(prefix + name + "." + n, t);
  }
}
}  // namespace

void Module::check_new_name(const std::string& name) const {
  if (name.empty()) fail("Module: a parameter, buffer or submodule needs a name");
  auto taken = [&](const auto& list) {
    for (const auto& entry : list)
      if (entry.first == name) return true;
    return false;
  };
  if (taken(params_) || taken(buffers_) || taken(children_))
    fail("Module: the name '", name, "' is already registered");
}

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  check_new_name(name);
  if (!is_floating(value.dtype()))
    fail("register_parameter: '", name, "' of shape ", value.shape(), " is int64; parameters are float");
  value.set_requires_grad(true);
  params_.emplace_back(name, value);
  return value;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name);
  buffers_.emplace_back(name, value);
  return value;
}

NamedTensors Module::named_state() const {
  NamedTensors out;
  for (const auto& [name, t] : params_) out.emplace_back(name, t);
  for (const auto& [name, child] : children_)
    for (const auto& [n, t] : child->named_state()) out.emplace_back(name + "." + n, t);
  return out;
}

NamedTensors Module::named_parameters() const {
  // A tensor registered under several names (tied weights) is listed once,
  // under its first name, as PyTorch's named_parameters() does: an
  // optimizer, a gradient sum or a count must see it once.
  NamedTensors out;
  for (const auto& [name, t] : named_state()) {
    bool seen = false;
    for (const auto& [n, u] : out) seen = seen || u.impl() == t.impl();
    if (!seen) out.emplace_back(name, t);
  }
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect(*this, "", out, true, buffers_);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (Tensor p : parameters()) p.set_grad(Tensor());
}

StateDict Module::state_dict() const {
  StateDict out;
  for (auto& [name, t] : named_state()) out[name] = t;
  return out;
}

void Module::load_state_dict(const StateDict& state) {
  const NamedTensors params = named_state();
  for (const auto& [name, p] : params) {
    auto it = state.find(name);
    if (it == state.end()) fail("load_state_dict: missing parameter '", name, "' of shape ", p.shape());
    if (it->second.shape() != p.shape())
      fail("load_state_dict: '", name, "' has shape ", it->second.shape(), " in the state, ",
           p.shape(), " in the model");
    if (it->second.dtype() != p.dtype())
      fail("load_state_dict: '", name, "' has dtype ", it->second.dtype(), " in the state, ",
           p.dtype(), " in the model");
  }
  if (state.size() != params.size())
    for (const auto& [name, t] : state) {
      bool known = false;
      for (const auto& [n, p] : params) known = known || n == name;
      if (!known) fail("load_state_dict: unexpected entry '", name, "' of shape ", t.shape());
    }
  for (auto [name, p] : params) kernel::copy_(p, state.at(name));
}

namespace {

// Converts t's data to dtype under the same handle (layers keep their member
// handles); its gradient is dropped.
void convert_in_place(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype || !is_floating(t.dtype()) || !is_floating(dtype)) return;
  const Tensor c = kernel::to(t, dtype);
  TensorImpl* impl = t.impl();
  impl->storage = c.impl()->storage;
  impl->offset = 0;
  impl->dtype = dtype;
  impl->grad.reset();
}

}  // namespace

void Module::to(DType dtype) {
  // Checked before anything converts: an int64 parameter would still require
  // grad, which every other path (register_parameter, set_requires_grad,
  // the optimizers) refuses; convert_in_place is the only way a tensor's dtype changes.
  if (!is_floating(dtype))
    fail("Module::to: cannot convert the parameters to ", dtype,
         "; parameters require grad, so they are float32 or float64");
  for (const auto& [name, t] : named_parameters()) convert_in_place(t, dtype);
  for (const auto& [name, t] : named_buffers()) convert_in_place(t, dtype);
}

GradcheckResult gradcheck_module(Module& module, const GradcheckFn& fn,
                                 const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  // Every parameter and buffer goes back to its own dtype afterwards, also
  // when the check throws: float32 -> float64 -> float32 is exact, and the
  // check restores every element it perturbs, so the values are unchanged.
  struct Restore {
    std::vector<std::pair<Tensor, DType>> saved;
    ~Restore() {
      for (const auto& [t, dtype] : saved) convert_in_place(t, dtype);
    }
  } restore;
  for (const auto& [name, t] : module.named_parameters()) restore.saved.emplace_back(t, t.dtype());
  for (const auto& [name, t] : module.named_buffers()) restore.saved.emplace_back(t, t.dtype());
  module.to(float64);
  std::vector<Tensor> x, leaves;
  std::vector<std::string> labels;
  for (size_t i = 0; i < inputs.size(); ++i) {
    x.push_back(is_floating(inputs[i].dtype()) ? kernel::to(inputs[i], float64).set_requires_grad(true)
                                               : inputs[i]);
    leaves.push_back(x.back());
    labels.push_back("input " + std::to_string(i));
  }
  for (const auto& [name, p] : module.named_parameters()) {
    leaves.push_back(p);
    labels.push_back(name);
  }
  return gradcheck_leaves([&] { return fn(x); }, leaves, labels, options);
}

void check_shape(const Tensor& t, const Shape& expected, const std::string& what) {
  if (t.shape() != expected) fail("check_shape: ", what, " has shape ", t.shape(), ", expected ", expected);
}

}  // namespace sg::nn
