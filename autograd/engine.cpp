// The backward engine: topological order from the output, each node's
// backward once, gradient shapes checked against their inputs, gradients
// summed into the leaves' .grad (backward) or returned (grad). The heart of
// it (topological_order, accumulate, send_gradients, release) is the
// course's assignment 0, the engine. Nodes are in
// autograd/node.cpp, record() in autograd/record.cpp, anomaly mode's checks
// in autograd/anomaly.cpp.
#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "autograd/anomaly.hpp"
#include "autograd/engine.hpp"
#include "autograd/node.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/profiler.hpp"
#include "core/kernels.hpp"

namespace sg {
namespace {

// "'sum' -> 'mul' -> 'exp'": the ops on a path from the output (the last 8).
std::string path_text(const std::vector<const Node*>& path) {
  const size_t shown = std::min<size_t>(path.size(), 8);
  std::string s = path.size() > shown ? "... -> " : "";
  for (size_t k = path.size() - shown; k < path.size(); ++k)
    s += detail::cat("'", path[k]->op, "'", k + 1 < path.size() ? " -> " : "");
  return s;
}

// Throws if node cannot run its backward: freed by an earlier pass, or a
// tensor it saved was changed in place since. `made` is the tensor node made
// (for describing its output); `path` runs from the output's node to node;
// `who` is the call that asked (backward or grad).
void check_runnable(const char* who, const Node& node, const Tensor& made, const std::vector<const Node*>& path) {
  if (node.released) {
    if (node.failure)
      fail(who, ": the graph through '", node.op, "' was freed by an earlier backward() or grad() that "
           "failed part-way, with: ", *node.failure, "; build the graph again (that pass changed "
           "no .grad)");
    fail(who, ": the graph through '", node.op,
         "' was already freed by an earlier backward() or grad(); pass retain_graph = true to the first "
         "pass to go through it twice");
  }
  for (const Node::Saved& s : node.saved) {
    const uint64_t now = s.storage->version.load(std::memory_order_relaxed);
    if (now == s.version) continue;
    const std::string what =
        s.which >= 0 ? detail::cat("its input ", s.which, " (", anomaly::describe(node.inputs[static_cast<size_t>(s.which)]), ")")
        : s.which == Node::kOutput ? detail::cat("its output (", made.shape(), " ", made.dtype(), ")")
                                   : detail::cat("saved tensor ", Node::kOther - s.which, " (not an input)");
    fail(who, ": '", node.op, "' saved ", what, " for its backward, and it was modified by an "
         "in-place operation since: it is at version ", now, ", it was at version ", s.version,
         " when '", node.op, "' ran; the gradient would be computed from values the forward did not "
         "see. Change it after ", who, "(), or give the op a copy (sg::clone). '", node.op,
         "' was reached from the output through ", path_text(path),
         anomaly_mode() ? detail::cat("; the forward '", node.op, "' read ", anomaly::describe_all(node.inputs)) : "");
  }
}

// True when node can run its backward: not freed by an earlier pass, and
// every tensor it saved still at the version it had when the op ran.
bool runnable(const Node& node) {
  if (node.released) return false;
  for (const Node::Saved& s : node.saved)
    if (s.storage->version.load(std::memory_order_relaxed) != s.version) return false;
  return true;
}

// Throws, before any backward has run, if a node of `order` (output's graph,
// output's node first) cannot run (check_runnable), naming the tensor the
// node made and the ops on a path to it from the output: each node reached
// from its first consumer in `order`.
void check_graph(const char* who, const Tensor& output, const std::vector<std::shared_ptr<Node>>& order,
                 const std::vector<char>& runs) {
  for (size_t k = 0; k < order.size(); ++k) {
    const auto& bad = order[k];
    if (!runs[k] || runnable(*bad)) continue;
    std::unordered_map<const Node*, std::pair<const Node*, const Tensor*>> from;  // node -> (consumer, tensor)
    for (const auto& node : order)
      for (const Tensor& in : node->inputs)
        if (in.defined() && in.node()) from.try_emplace(in.node().get(), node.get(), &in);
    std::vector<const Node*> path{bad.get()};
    while (path.back() != output.node().get()) path.push_back(from.at(path.back()).first);
    std::reverse(path.begin(), path.end());
    check_runnable(who, *bad, bad == output.node() ? output : *from.at(bad.get()).second, path);
  }
}

// Every node reachable from root through its inputs' nodes (in.node() of
// each defined input that has one), each once, each before the nodes of its
// inputs, so after every node that consumes its output: the order in which
// the backwards run, root first (a reverse topological order: the reverse of
// a depth-first search's post-order). Without recursion: a graph can be a
// chain of 100,000 nodes (an RNN over a long sequence), deeper than any
// thread's stack.
std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
  // BEGIN ASSIGNMENT 0: topological_order: every node reachable from root once, each before its inputs' nodes, without recursion
  struct Frame {
    std::shared_ptr<Node> node;
    size_t next;  // the next input to look at
  };
  std::vector<std::shared_ptr<Node>> post;  // each node after all of its inputs' nodes
  std::unordered_set<Node*> seen{root.get()};
  std::vector<Frame> stack{{root, 0}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next < f.node->inputs.size()) {
      const Tensor& in = f.node->inputs[f.next++];
      if (in.defined() && in.node() && seen.insert(in.node().get()).second) stack.push_back({in.node(), 0});
    } else {
      post.push_back(std::move(f.node));
      stack.pop_back();
    }
  }
  return {post.rbegin(), post.rend()};
  // END ASSIGNMENT 0
}

// True when nothing but `t` holds its buffer (no other handle, no view), and
// the buffer is exactly its data: safe to keep as a leaf's .grad or to add into.
bool owns_buffer(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.impl()->storage.use_count() == 1 && t.impl()->offset == 0 &&
         t.impl()->storage->bytes == t.nbytes();
}

// Sums g into a gradient slot (a node's sum of the gradients of its output,
// or a leaf's in LeafGrads): g itself into an empty slot; else in place when
// nothing else holds the slot's buffer (no other handle to it, no view of
// it); out of place otherwise, since the slot may share its buffer with
// another tensor (add's backward hands the same gradient to both inputs,
// reshape's returns a view). Under create_graph the sum is the recorded op
// sg::add, out of place, so that the summed gradient keeps both parts'
// histories.
void accumulate(Tensor& slot, const Tensor& g, bool create_graph) {
  if (create_graph && slot.defined()) {
    slot = add(slot, g);
    return;
  }
  // BEGIN ASSIGNMENT 0: accumulate: slot = g if empty, else slot + g, in place only when nothing else holds slot's buffer
  if (!slot.defined())
    slot = g;
  else if (slot.impl_ptr().use_count() == 1 && slot.impl()->storage.use_count() == 1)
    kernel::add_(slot, g);
  else
    slot = kernel::add(slot, g);
  // END ASSIGNMENT 0
}

// A buffer of g's own: g itself when it owns its buffer; else a copy, a
// recorded one (sg::affine) when g has a history to keep.
Tensor own_buffer(const Tensor& g) {
  if (owns_buffer(g)) return g;
  return g.requires_grad() ? affine(g, 1.0, 0.0) : clone(g);
}

// Serialises additions into leaves' .grad across threads: one lock for the
// process, taken once per backward pass (at its end), so it costs nothing
// measurable and concurrent passes into shared parameters sum exactly.
std::mutex g_leaf_mutex;

// The gradients one pass sends to leaves, summed here until the pass has
// succeeded; then added into the leaves' .grad all at once.
class LeafGrads {
 public:
  explicit LeafGrads(bool create_graph) : create_graph_(create_graph) {}
  bool create_graph() const { return create_graph_; }

  // grad() only: the tensors whose gradients are asked for. Those with a
  // node (intermediates) get the sum of the gradients of their node's
  // output, taken when the node's turn comes; the pass runs only the nodes
  // on a path from the output to one of them. Without a call (backward()),
  // every node runs.
  void want(const std::vector<Tensor>& targets) {
    targets_ = &targets;
    for (const Tensor& t : targets)
      if (t.node()) node_grads_.try_emplace(t.node().get());
  }
  // For each node of `order` (output's node first, each before its inputs'
  // nodes): 1 when its backward must run. A node freed by an earlier pass
  // counts as leading to a target (what it led to is gone), so that
  // check_graph reports it, unless it made a target itself: then only its
  // output's gradient is needed, which its consumers give.
  std::vector<char> runs(const std::vector<std::shared_ptr<Node>>& order) const {
    if (!targets_) return std::vector<char>(order.size(), 1);
    std::unordered_set<const TensorImpl*> leaf_targets;
    for (const Tensor& t : *targets_)
      if (!t.node()) leaf_targets.insert(t.impl());
    std::unordered_map<const Node*, size_t> index;
    for (size_t k = 0; k < order.size(); ++k) index.emplace(order[k].get(), k);
    std::vector<char> runs(order.size(), 0);
    for (size_t k = order.size(); k-- > 0;) {  // inputs' nodes before their consumers
      const Node& node = *order[k];
      runs[k] = node.released && !node_grads_.count(&node);
      for (const Tensor& in : node.inputs) {
        if (!in.defined() || runs[k]) continue;
        if (!in.node())
          runs[k] = leaf_targets.count(in.impl()) > 0;
        else
          runs[k] = node_grads_.count(in.node().get()) > 0 || runs[index.at(in.node().get())];
      }
    }
    return runs;
  }
  // Keeps g, the summed gradient of node's output, when that output was asked for.
  void node_gradient(const Node* node, const Tensor& g) {
    if (const auto it = node_grads_.find(node); it != node_grads_.end()) it->second = g;
  }

  void add(const Tensor& leaf, const Tensor& g) {
    const auto [it, fresh] = index_.try_emplace(leaf.impl(), items_.size());
    if (fresh)
      items_.push_back({leaf, g});
    else
      accumulate(items_[it->second].grad, g, create_graph_);
  }

  // Adds every sum into its leaf's .grad. A leaf's .grad is its own buffer
  // (never shared), so optimizers and clipping may change it in place:
  // copies are made first, so that nothing below the lock can fail.
  void commit() {
    for (Item& item : items_) item.grad = own_buffer(item.grad);
    std::lock_guard<std::mutex> lock(g_leaf_mutex);
    for (Item& item : items_) {
      Tensor current = item.leaf.grad();
      if (current.defined() && create_graph_)
        item.leaf.set_grad(sg::add(current, item.grad));  // recorded, out of place
      else if (current.defined())
        kernel::add_(current, item.grad);
      else
        item.leaf.set_grad(item.grad);
    }
    items_.clear();
    index_.clear();
  }

  // The summed gradient of each of `inputs` (undefined where none flowed),
  // each in a buffer of its own; no .grad changes.
  Grads take(const std::vector<Tensor>& inputs) {
    Grads out;
    out.reserve(inputs.size());
    for (const Tensor& in : inputs) {
      if (in.node()) {
        const Tensor& g = node_grads_.at(in.node().get());
        out.push_back(g.defined() ? own_buffer(g) : Tensor());
        continue;
      }
      const auto it = in.defined() ? index_.find(in.impl()) : index_.end();
      if (it == index_.end()) {
        out.emplace_back();
        continue;
      }
      out.push_back(own_buffer(items_[it->second].grad));
    }
    items_.clear();
    index_.clear();
    node_grads_.clear();
    return out;
  }

 private:
  struct Item {
    Tensor leaf, grad;
  };
  std::vector<Item> items_;
  std::unordered_map<const TensorImpl*, size_t> index_;
  bool create_graph_;
  const std::vector<Tensor>* targets_ = nullptr;
  std::unordered_map<const Node*, Tensor> node_grads_;
};

// Sends on what node's backward returned: grads[i] is the gradient of the
// loss with respect to node->inputs[i] (undefined where none flows). It goes
// into the sum of the node that made that input (accumulate into its .grad,
// which the pass reads when that node's turn comes), or into `leaves` when
// the input is a leaf that requires grad; nowhere else (a constant, an
// input that needs none). check(i) must see every gradient before it is
// sent: it throws for a wrong shape or dtype, naming the op, and in anomaly
// mode for a NaN or an infinity.
template <class Check>
void send_gradients(const Node& node, const Grads& grads, const Check& check, LeafGrads& leaves,
                    bool create_graph) {
  // BEGIN ASSIGNMENT 0: send_gradients: each defined grads[i] to its input's node (accumulate) or to leaves if a leaf that requires grad; check(i) first
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& in = node.inputs[i];
    if (!grads[i].defined() || !in.defined() || !in.requires_grad()) continue;
    check(i);
    if (in.node())
      accumulate(in.node()->grad, grads[i], create_graph);
    else
      leaves.add(in, grads[i]);
  }
  // END ASSIGNMENT 0
}

// Called for each node of a pass once its turn has come (its backward ran,
// or no gradient reached it). Unless retain_graph, frees what node holds for
// its backward (its closure, its inputs, its saved tensors), so a graph's
// memory goes as the pass goes, and marks it released: a later pass through
// it throws (check_runnable) instead of running a backward that is gone.
void release(Node& node, bool retain_graph) {
  // BEGIN ASSIGNMENT 0: release: unless retain_graph, mark node released and drop its closure, inputs and saved tensors
  if (retain_graph) return;
  node.released = true;
  node.backward = nullptr;
  node.inputs.clear();
  node.saved.clear();
  // END ASSIGNMENT 0
}

// node's backward, its errors prefixed with the op's name (the engine's own
// checks name it already; an error from inside a backward may not).
Grads run_backward(const char* who, Node& node, const Tensor& g, bool anomaly) {
  try {
    return anomaly ? anomaly::backward_naming_op(node, g) : node.backward(g);
  } catch (const Error& e) {
    fail(who, ": backward of '", node.op, "' failed: ", e.what());
  }
}

// Under create_graph, refuses a backward that ran no sg:: op (record() was
// not called: detail::record_calls() did not move) and yet returned a
// gradient other than g itself for an input that requires grad: it computed
// that gradient with the graph-free kernels (sg::kernel), which record
// nothing, so differentiating it again would silently leave out how it
// depends on the op's inputs (PyTorch's once_differentiable refuses the same).
// A composed backward calls sg:: ops even where they record nothing (relu's
// mul by a constant mask), so it is never refused.
void check_differentiable(const char* who, const Node& node, const Tensor& g, const Grads& grads,
                          uint64_t calls_before) {
  if (detail::record_calls() != calls_before) return;
  for (size_t i = 0; i < grads.size(); ++i)
    if (grads[i].defined() && !grads[i].is_same(g) && node.inputs[i].defined() && node.inputs[i].requires_grad())
      fail(who, " (create_graph): the backward of '", node.op, "' is graph-free (it ran no sg:: op, only "
           "sg::kernel functions, which record nothing), so the gradient it returns cannot be differentiated "
           "again and a second derivative through '", node.op, "' would be wrong; make '", node.op,
           "' twice differentiable by computing its backward with sg:: ops when grad_enabled() is true "
           "(docs/adding-a-layer.md, \"Twice differentiable\"), or leave out create_graph");
}

// One backward pass from `output`; the leaves' gradients are left in `leaves`.
// `who` names the caller in errors.
void run_pass(const char* who, const Tensor& output, const Tensor& grad_output, bool retain_graph,
              LeafGrads& leaves) {
  if (!output.requires_grad())
    fail(who, ": tensor of shape ", output.shape(),
         " does not require grad (no input of the ops that made it requires grad); if it is a gradient "
         "from grad() or backward(), or was computed from one, that pass needs {.create_graph = true} "
         "for its result to be differentiated again");
  Tensor seed = grad_output;
  if (!seed.defined()) {
    if (output.numel() != 1)
      fail(who, ": output of shape ", output.shape(),
           " is not a scalar; pass a gradient of that shape to ", who, "()");
    seed = ones(output.shape(), output.dtype());
  } else if (seed.shape() != output.shape() || seed.dtype() != output.dtype()) {
    fail(who, ": gradient of shape ", seed.shape(), " and dtype ", seed.dtype(),
         " for an output of shape ", output.shape(), " and dtype ", output.dtype());
  }
  const bool anomaly = anomaly_mode();
  if (anomaly)
    if (const int64_t bad = anomaly::first_nonfinite(seed); bad >= 0)
      fail("anomaly mode: the gradient passed to ", who, "() holds ", anomaly::where(seed, bad), " of ",
           seed.shape(), " ", seed.dtype());
  if (output.is_leaf()) {
    leaves.add(output, seed);
    return;
  }

  // Backward's own arithmetic is recorded only under create_graph; each
  // op's backward reads grad_enabled() to pick its kernels or its composed,
  // differentiable form.
  const bool create_graph = leaves.create_graph();
  if (create_graph) retain_graph = true;  // the new graph reads the old one's inputs and saved tensors
  std::optional<NoGradGuard> no_grad;
  std::optional<EnableGradGuard> with_grad;
  if (create_graph)
    with_grad.emplace();
  else
    no_grad.emplace();
  const auto order = topological_order(output.node());
  const std::vector<char> runs = leaves.runs(order);  // all of them, except for grad()
  check_graph(who, output, order, runs);  // throws, before anything ran, if a node cannot run
  // A backward that threw part-way (say, a wrong gradient shape) leaves
  // partial sums in the nodes it had not reached yet; start from none.
  for (const auto& node : order) node->grad = Tensor();
  output.node()->grad = seed;
  anomaly::Trail trail;  // filled in anomaly mode only
  size_t done = 0;  // nodes whose backward has run (and which are released unless retain_graph)
  try {
    for (; done < order.size(); ++done) {
      Node& node = *order[done];
      Tensor g = std::move(node.grad);
      node.grad = Tensor();
      leaves.node_gradient(&node, g);
      if (g.defined() && runs[done]) {
        if (anomaly) anomaly::check_sum(node, g, trail);
        profile_mark("sum gradients");
        const uint64_t calls = detail::record_calls();
        const Grads grads = run_backward(who, node, g, anomaly);
        profile_mark_backward(node.op);
        if (grads.size() != node.inputs.size())
          fail(who, ": backward of '", node.op, "' returned ", grads.size(), " gradients for ",
               node.inputs.size(), " inputs");
        if (create_graph) check_differentiable(who, node, g, grads, calls);
        // The engine's checks of the gradient for input i before it goes on.
        const auto check = [&](size_t i) {
          const Tensor& in = node.inputs[i];
          const Tensor& gi = grads[i];
          if (gi.shape() != in.shape() || gi.dtype() != in.dtype())
            fail(who, ": backward of '", node.op, "' returned a gradient of shape ", gi.shape(), " (",
                 gi.dtype(), ") for input ", i, " of shape ", in.shape(), " (", in.dtype(), ")");
          if (anomaly) {
            anomaly::check_gradient(node, i, gi, g, trail);
            if (in.node()) trail.from.try_emplace(in.node().get(), &node);
          }
        };
        send_gradients(node, grads, check, leaves, create_graph);
      }
      release(node, retain_graph);
    }
  } catch (const std::exception& e) {
    // Nothing reached a leaf's .grad (leaves.commit() did not run). The nodes
    // already passed are freed: a later backward through them says why.
    for (const auto& node : order) node->grad = Tensor();  // free the partial sums now
    if (!retain_graph && done > 0) {
      auto failure = std::make_shared<const std::string>(e.what());
      for (size_t k = 0; k < done; ++k) order[k]->failure = failure;
    }
    throw;
  }
}

}  // namespace

void backward(const Tensor& output, const Tensor& grad_output, bool retain_graph) {
  backward(output, grad_output, BackwardOptions{retain_graph, false});
}

void backward(const Tensor& output, BackwardOptions options) { backward(output, Tensor(), options); }

void backward(const Tensor& output, const Tensor& grad_output, BackwardOptions options) {
  LeafGrads leaves(options.create_graph);
  run_pass("backward", output, grad_output, options.retain_graph, leaves);
  leaves.commit();
}

Grads grad(const Tensor& output, const std::vector<Tensor>& inputs, const Tensor& grad_output, bool retain_graph) {
  return grad(output, inputs, grad_output, BackwardOptions{retain_graph, false});
}

Grads grad(const Tensor& output, const std::vector<Tensor>& inputs, BackwardOptions options) {
  return grad(output, inputs, Tensor(), options);
}

Grads grad(const Tensor& output, const std::vector<Tensor>& inputs, const Tensor& grad_output,
           BackwardOptions options) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) fail("grad: input ", i, " is an undefined tensor");
    if (!inputs[i].requires_grad())
      fail("grad: input ", i, " of shape ", inputs[i].shape(),
           " does not require grad: it is neither a leaf that requires grad nor the result of an op "
           "on one, so no gradient flows into it");
  }
  LeafGrads leaves(options.create_graph);
  leaves.want(inputs);
  run_pass("grad", output, grad_output, options.retain_graph, leaves);
  return leaves.take(inputs);
}

}  // namespace sg
