// The backward engine: topological order from the output, each node's
// backward once, gradient shapes checked against their inputs.
#include <unordered_set>

#include "autograd/node.hpp"
#include "core/ops.hpp"

namespace sg {
namespace {
std::atomic<int64_t> g_live_nodes{0};
thread_local bool g_grad_enabled = true;
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

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward) {
  if (!any_requires_grad(inputs)) return out;
  TensorImpl* impl = out.impl();
  if (impl->node || impl->requires_grad)
    fail(op, ": record() needs a fresh output tensor, got one that is already in a graph");
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

// Sums g into a gradient slot. Out of place: the slot may share its buffer
// with another tensor (add's backward hands the same gradient to both inputs).
void accumulate(Tensor& slot, const Tensor& g) { slot = slot.defined() ? core::add(slot, g) : g; }

void accumulate_leaf(Tensor leaf, const Tensor& g) {
  // A leaf's .grad is its own buffer (never shared), so optimizers and
  // clipping may change it in place.
  Tensor current = leaf.grad();
  if (current.defined())
    core::add_(current, g);
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
  for (const auto& node : order) {
    Tensor g = std::move(node->grad);
    node->grad = Tensor();
    if (g.defined()) {
      Grads grads = node->backward(g);
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
