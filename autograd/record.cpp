// record(), which every differentiable op calls to put its node in the
// graph, and the switches it reads: recording (NoGradGuard) and anomaly mode.
#include <memory>
#include <utility>
#include <vector>

#include "autograd/anomaly.hpp"
#include "autograd/engine.hpp"
#include "autograd/profiler.hpp"

namespace sg {
namespace {
thread_local bool g_grad_enabled = true;
thread_local bool g_anomaly_mode = false;
thread_local uint64_t t_record_calls = 0;
}  // namespace

uint64_t detail::record_calls() { return t_record_calls; }

bool grad_enabled() { return g_grad_enabled; }
// The recording switch is g_grad_enabled, this thread's own: record_node()
// below gives an op's output a node only while it is true.
NoGradGuard::NoGradGuard() {
  // BEGIN ASSIGNMENT 0: NoGradGuard: turn recording off on this thread, remembering in previous_ whether it was on
  previous_ = g_grad_enabled;
  g_grad_enabled = false;
  // END ASSIGNMENT 0
}
NoGradGuard::~NoGradGuard() {
  // BEGIN ASSIGNMENT 0: ~NoGradGuard: put this thread's recording switch back as it was when the guard was made
  g_grad_enabled = previous_;
  // END ASSIGNMENT 0
}
EnableGradGuard::EnableGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = true; }
EnableGradGuard::~EnableGradGuard() { g_grad_enabled = previous_; }

bool anomaly_mode() { return g_anomaly_mode; }
void set_anomaly_mode(bool on) { g_anomaly_mode = on; }
AnomalyModeGuard::AnomalyModeGuard(bool on) : previous_(g_anomaly_mode) { g_anomaly_mode = on; }
AnomalyModeGuard::~AnomalyModeGuard() { g_anomaly_mode = previous_; }

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

namespace {
Tensor record_node(const char* op, Tensor out, std::vector<Tensor> inputs,
                   const std::vector<Tensor>* saved, BackwardFn backward) {
  ++t_record_calls;
  if (g_anomaly_mode) anomaly::check_forward(op, out, inputs);  // before the early return: ops that record nothing too
  profile_mark(op);
  if (!any_requires_grad(inputs)) return out;
  TensorImpl* impl = out.impl();
  // The usual cause: the forward called a recording op (sg::exp, which made
  // this node) where it meant the graph-free kernel (sg::kernel::exp).
  if (impl->node)
    fail(op, ": record() needs a fresh output tensor, got the output of op '", impl->node->op,
         "', which is already in the graph: compute the forward with the graph-free kernels "
         "(sg::kernel::", impl->node->op, ", not sg::", impl->node->op, ")");
  if (impl->requires_grad)
    fail(op, ": record() needs a fresh output tensor, got a leaf that requires grad "
         "(return a new tensor computed with sg::kernel:: functions)");
  auto node = std::make_shared<Node>(op, std::move(inputs), std::move(backward));
  // The versions of what backward will read (every input when `saved` is null).
  auto save = [&](const Tensor& t, int which) {
    if (t.defined())
      node->saved.push_back({t.impl()->storage, t.impl()->storage->version.load(std::memory_order_relaxed), which});
  };
  if (!saved) {
    for (size_t i = 0; i < node->inputs.size(); ++i) save(node->inputs[i], static_cast<int>(i));
  } else {
    node->saved.reserve(saved->size());
    int others = 0;
    for (const Tensor& t : *saved) {
      if (!t.defined()) continue;
      int which = -1;
      for (size_t i = 0; i < node->inputs.size() && which < 0; ++i)
        if (node->inputs[i].is_same(t)) which = static_cast<int>(i);
      if (which < 0) which = t.is_same(out) || t.impl()->storage == impl->storage ? Node::kOutput : Node::kOther - others++;
      save(t, which);
    }
  }
  impl->node = std::move(node);
  impl->requires_grad = true;
  return out;
}
}  // namespace

void check_version(const char* op, const char* what, const Tensor& t, uint64_t version) {
  const uint64_t now = t.version();
  if (now != version)
    fail("backward (create_graph): '", op, "' reads ", what, " (", t.shape(), " ", t.dtype(),
         ") for its second-order form, and it was modified by an in-place operation since: it is at version ",
         now, ", it was at version ", version, " when '", op,
         "' ran; the gradient would be computed from values the forward did not see. Change it after "
         "backward(), or give the op a copy (sg::clone)");
}

Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward) {
  return record_node(op, std::move(out), std::move(inputs), nullptr, std::move(backward));
}

Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, const std::vector<Tensor>& saved,
              BackwardFn backward) {
  return record_node(op, std::move(out), std::move(inputs), &saved, std::move(backward));
}

}  // namespace sg
