// The graph's nodes: their count, their destruction (without recursion, however
// long the graph), the recording and anomaly-mode switches, and record(),
// which every differentiable op calls to put its node in the graph.
#include <atomic>
#include <memory>
#include <vector>

#include "autograd/anomaly.hpp"
#include "autograd/node.hpp"
#include "autograd/profiler.hpp"

namespace sg {
namespace {
std::atomic<int64_t> g_live_nodes{0};
thread_local bool g_grad_enabled = true;
thread_local bool g_anomaly_mode = false;
}  // namespace

Node::Node(const char* op_name, std::vector<Tensor> in, BackwardFn fn)
    : op(op_name), inputs(std::move(in)), backward(std::move(fn)) {
  g_live_nodes.fetch_add(1, std::memory_order_relaxed);
}

namespace {
// The nodes waiting to be destroyed by the outermost ~Node on this thread
// (null when no ~Node is running). A plain pointer: no thread_local
// destructor whose order could matter at thread exit.
thread_local std::vector<std::shared_ptr<Node>>* t_dying = nullptr;

// Drops node's closure and inputs, moving out, instead of destroying, the
// node of every input tensor that dies with them: those nodes are destroyed
// later by the loop in ~Node, so destruction never recurses down the graph.
void release_edges(Node& node, std::vector<std::shared_ptr<Node>>& dying) {
  // The closure first: its captures are mostly copies of inputs, which the
  // inputs still hold, so it frees little else (and what it frees comes
  // back here through t_dying).
  node.backward = nullptr;
  for (Tensor& t : node.inputs)
    if (t.defined() && t.impl_ptr().use_count() == 1 && t.impl()->node)
      dying.push_back(std::move(t.impl()->node));
  node.inputs.clear();
}
}  // namespace

Node::~Node() {
  g_live_nodes.fetch_sub(1, std::memory_order_relaxed);
  if (t_dying) {  // inside another ~Node's loop: hand the inputs' nodes to it
    release_edges(*this, *t_dying);
    return;
  }
  std::vector<std::shared_ptr<Node>> dying;
  t_dying = &dying;
  release_edges(*this, dying);
  while (!dying.empty()) {
    std::shared_ptr<Node> next = std::move(dying.back());
    dying.pop_back();
    next.reset();  // if this was the last owner, ~Node above pushes its inputs' nodes
  }
  t_dying = nullptr;
}

int64_t Node::live_count() { return g_live_nodes.load(std::memory_order_relaxed); }

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

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

Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward) {
  return record_node(op, std::move(out), std::move(inputs), nullptr, std::move(backward));
}

Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, const std::vector<Tensor>& saved,
              BackwardFn backward) {
  return record_node(op, std::move(out), std::move(inputs), &saved, std::move(backward));
}

}  // namespace sg
