// The backward engine: topological order from the output, each node's
// backward once, gradient shapes checked against their inputs. Also the
// recording and anomaly-mode switches, and anomaly mode's checks.
#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "autograd/node.hpp"
#include "autograd/profiler.hpp"
#include "core/kernels.hpp"

namespace sg {
namespace {
std::atomic<int64_t> g_live_nodes{0};
thread_local bool g_grad_enabled = true;
thread_local bool g_anomaly_mode = false;
// Anomaly mode only: the op whose backward is running, so that a NaN found
// in an op called inside that backward is reported with it.
thread_local const char* g_in_backward_of = nullptr;
}  // namespace

Node::Node(const char* op_name, std::vector<Tensor> in, BackwardFn fn)
    : op(op_name), inputs(std::move(in)), backward(std::move(fn)) {
  g_live_nodes.fetch_add(1, std::memory_order_relaxed);
}
Node::~Node() { g_live_nodes.fetch_sub(1, std::memory_order_relaxed); }
int64_t Node::live_count() { return g_live_nodes.load(std::memory_order_relaxed); }

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

bool anomaly_mode() { return g_anomaly_mode; }
void set_anomaly_mode(bool on) { g_anomaly_mode = on; }
AnomalyModeGuard::AnomalyModeGuard(bool on) : previous_(g_anomaly_mode) { g_anomaly_mode = on; }
AnomalyModeGuard::~AnomalyModeGuard() { g_anomaly_mode = previous_; }

namespace {

// ---- anomaly mode: the checks and their messages, called only while it is on ----

// The flat index of the first NaN or infinity in t, or -1 (int64 holds neither).
int64_t first_nonfinite(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype())) return -1;
  return visit_floating(t.dtype(), "anomaly mode", [&](auto tag) -> int64_t {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i)
      if (!std::isfinite(p[i])) return i;
    return -1;
  });
}

// "NaN at element 4 (1, 1)"
std::string where(const Tensor& t, int64_t i) {
  const double v = visit_floating(t.dtype(), "anomaly mode",
                                  [&](auto tag) { return static_cast<double>(t.data<decltype(tag)>()[i]); });
  return detail::cat(std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf", " at element ", i, " ",
                     unravel_index(i, t.shape()));
}

// "(2, 3) float32 made by 'sub'" or "(3) float32, a leaf"
std::string describe(const Tensor& t) {
  if (!t.defined()) return "none";
  return detail::cat(t.shape(), " ", t.dtype(),
                     t.node() ? detail::cat(" made by '", t.node()->op, "'") : std::string(", a leaf"));
}

std::string describe_all(const std::vector<Tensor>& inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? "; " : "") + describe(inputs[i]);
  return s;
}

void check_forward(const char* op, const Tensor& out, const std::vector<Tensor>& inputs) {
  const int64_t bad = first_nonfinite(out);
  if (bad < 0) return;
  std::string cause = "; every input was finite";
  for (size_t i = 0; i < inputs.size(); ++i)
    if (const int64_t j = first_nonfinite(inputs[i]); j >= 0) {
      cause = detail::cat("; input ", i, " already held ", where(inputs[i], j));
      break;
    }
  fail("anomaly mode: '", op, "' produced ", where(out, bad), " of its output ", out.shape(), " ",
       out.dtype(), ", from inputs ", describe_all(inputs), cause,
       g_in_backward_of ? detail::cat(" (called in the backward of '", g_in_backward_of, "')") : "");
}

// One backward pass's trail: for each node, the consumer whose gradient
// reached it first. It tells which way the gradient came from the output.
struct Trail {
  std::unordered_map<const Node*, const Node*> from;

  // "'sum' -> 'mul' -> 'log'": from the output down to node (the last 8 ops).
  std::string to(const Node* node) const {
    std::vector<const char*> ops{node->op};  // node first, the output last
    for (auto it = from.find(node); it != from.end(); it = from.find(it->second))
      ops.push_back(it->second->op);
    const size_t shown = std::min<size_t>(ops.size(), 8);
    std::string s = ops.size() > shown ? "... -> " : "";
    for (size_t k = shown; k-- > 0;) s += detail::cat("'", ops[k], "'", k ? " -> " : "");
    return s;
  }
};

void check_gradient(const Node& node, size_t input, const Tensor& grad, const Tensor& grad_output,
                    const Trail& trail) {
  const int64_t bad = first_nonfinite(grad);
  if (bad < 0) return;
  fail("anomaly mode: the backward of '", node.op, "' returned ", where(grad, bad),
       " in the gradient for its input ", input, " (", describe(node.inputs[input]),
       "), from a finite gradient of its output ", grad_output.shape(), "; the forward '", node.op,
       "' read ", describe_all(node.inputs), "; the gradient came from the output through ",
       trail.to(&node));
}

// The gradients that consumers sent to node's output were each finite (each
// was checked), so a non-finite sum is an overflow of the sum.
void check_sum(const Node& node, const Tensor& grad_output, const Trail& trail) {
  const int64_t bad = first_nonfinite(grad_output);
  if (bad < 0) return;
  fail("anomaly mode: the gradients summed for the output ", grad_output.shape(), " of '", node.op,
       "' overflowed to ", where(grad_output, bad), ", each of them finite; the gradient came from "
       "the output through ", trail.to(&node));
}

// node's backward with g_in_backward_of naming it, restored also when it throws.
Grads backward_naming_op(Node& node, const Tensor& grad_output) {
  struct Restore {
    const char* previous;
    ~Restore() { g_in_backward_of = previous; }
  } restore{g_in_backward_of};
  g_in_backward_of = node.op;
  return node.backward(grad_output);
}

}  // namespace

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward) {
  if (g_anomaly_mode) check_forward(op, out, inputs);  // before the early return: ops that record nothing too
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
  impl->node = std::make_shared<Node>(op, std::move(inputs), std::move(backward));
  impl->requires_grad = true;
  return out;
}

namespace {

// Nodes reachable from root, each after every node that consumes its output
// (reverse topological order), by an iterative depth-first search.
std::vector<std::shared_ptr<Node>> order_from(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> post;
  std::unordered_set<Node*> seen{root.get()};
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (node->released)
      fail("backward: the graph through '", node->op,
           "' was already freed by an earlier backward(); pass retain_graph = true to the first "
           "backward to go through it twice");
    if (next < node->inputs.size()) {
      const Tensor& in = node->inputs[next++];
      if (in.defined() && in.node() && seen.insert(in.node().get()).second)
        stack.emplace_back(in.node(), 0);
    } else {
      post.push_back(std::move(node));
      stack.pop_back();
    }
  }
  return {post.rbegin(), post.rend()};
}

// Sums g into a gradient slot. In place when nothing else holds the slot's
// buffer (no other handle to it, no view of it); out of place otherwise,
// since the slot may share its buffer with another tensor (add's backward
// hands the same gradient to both inputs, reshape's returns a view).
void accumulate(Tensor& slot, const Tensor& g) {
  if (!slot.defined())
    slot = g;
  else if (slot.impl_ptr().use_count() == 1 && slot.impl()->storage.use_count() == 1)
    kernel::add_(slot, g);
  else
    slot = kernel::add(slot, g);
}

void accumulate_leaf(Tensor leaf, const Tensor& g) {
  // A leaf's .grad is its own buffer (never shared), so optimizers and
  // clipping may change it in place.
  Tensor current = leaf.grad();
  if (current.defined())
    kernel::add_(current, g);
  else
    leaf.set_grad(clone(g));
}

}  // namespace

void backward(const Tensor& output, const Tensor& grad_output, bool retain_graph) {
  if (!output.requires_grad())
    fail("backward: tensor of shape ", output.shape(),
         " does not require grad (no input of the ops that made it requires grad)");
  Tensor seed = grad_output;
  if (!seed.defined()) {
    if (output.numel() != 1)
      fail("backward: output of shape ", output.shape(),
           " is not a scalar; pass a gradient of that shape to backward()");
    seed = ones(output.shape(), output.dtype());
  } else if (seed.shape() != output.shape() || seed.dtype() != output.dtype()) {
    fail("backward: gradient of shape ", seed.shape(), " and dtype ", seed.dtype(),
         " for an output of shape ", output.shape(), " and dtype ", output.dtype());
  }
  const bool anomaly = g_anomaly_mode;
  if (anomaly)
    if (const int64_t bad = first_nonfinite(seed); bad >= 0)
      fail("anomaly mode: the gradient passed to backward() holds ", where(seed, bad), " of ",
           seed.shape(), " ", seed.dtype());
  if (output.is_leaf()) {
    accumulate_leaf(output, seed);
    return;
  }

  NoGradGuard no_grad;  // backward's own arithmetic is not recorded
  const auto order = order_from(output.node());
  // A backward that threw part-way (say, a wrong gradient shape) leaves
  // partial sums in the nodes it had not reached yet; start from none.
  for (const auto& node : order) node->grad = Tensor();
  output.node()->grad = seed;
  Trail trail;  // filled in anomaly mode only
  for (const auto& node : order) {
    Tensor g = std::move(node->grad);
    node->grad = Tensor();
    if (g.defined()) {
      if (anomaly) check_sum(*node, g, trail);
      profile_mark("sum gradients");
      Grads grads = anomaly ? backward_naming_op(*node, g) : node->backward(g);
      profile_mark_backward(node->op);
      if (grads.size() != node->inputs.size())
        fail("backward of '", node->op, "' returned ", grads.size(), " gradients for ",
             node->inputs.size(), " inputs");
      for (size_t i = 0; i < grads.size(); ++i) {
        const Tensor& in = node->inputs[i];
        const Tensor& gi = grads[i];
        if (!gi.defined() || !in.defined() || !in.requires_grad()) continue;
        if (gi.shape() != in.shape() || gi.dtype() != in.dtype())
          fail("backward of '", node->op, "' returned a gradient of shape ", gi.shape(), " (",
               gi.dtype(), ") for input ", i, " of shape ", in.shape(), " (", in.dtype(), ")");
        if (anomaly) {
          check_gradient(*node, i, gi, g, trail);
          if (in.node()) trail.from.try_emplace(in.node().get(), node.get());
        }
        if (in.node())
          accumulate(in.node()->grad, gi);
        else
          accumulate_leaf(in, gi);
      }
    }
    if (!retain_graph) {
      node->released = true;
      node->backward = nullptr;
      node->inputs.clear();
    }
  }
}

}  // namespace sg
