// The graph's nodes: their count and their destruction (without recursion,
// however long the graph). record() makes them (autograd/record.cpp).
#include <atomic>
#include <memory>
#include <vector>

#include "autograd/node.hpp"

namespace sg {
namespace {
std::atomic<int64_t> g_live_nodes{0};
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

}  // namespace sg
