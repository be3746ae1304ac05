// The backward engine: topological order from the output, each node's
// backward once, gradient shapes checked against their inputs. Also the
// recording and anomaly-mode switches, and anomaly mode's checks.
#include <algorithm>
#include <cmath>
#include <mutex>
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

namespace {
Tensor record_node(const char* op, Tensor out, std::vector<Tensor> inputs,
                   const std::vector<Tensor>* saved, BackwardFn backward) {
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
// (for describing its output); `path` runs from the output's node to node.
void check_runnable(const Node& node, const Tensor& made, const std::vector<const Node*>& path) {
  if (node.released) {
    if (node.failure)
      fail("backward: the graph through '", node.op, "' was freed by an earlier backward() that "
           "failed part-way, with: ", *node.failure, "; build the graph again (that backward changed "
           "no .grad)");
    fail("backward: the graph through '", node.op,
         "' was already freed by an earlier backward(); pass retain_graph = true to the first "
         "backward to go through it twice");
  }
  for (const Node::Saved& s : node.saved) {
    const uint64_t now = s.storage->version.load(std::memory_order_relaxed);
    if (now == s.version) continue;
    const std::string what =
        s.which >= 0 ? detail::cat("its input ", s.which, " (", describe(node.inputs[static_cast<size_t>(s.which)]), ")")
        : s.which == Node::kOutput ? detail::cat("its output (", made.shape(), " ", made.dtype(), ")")
                                   : detail::cat("saved tensor ", Node::kOther - s.which, " (not an input)");
    fail("backward: '", node.op, "' saved ", what, " for its backward, and it was modified by an "
         "in-place operation since: it is at version ", now, ", it was at version ", s.version,
         " when '", node.op, "' ran; the gradient would be computed from values the forward did not "
         "see. Change it after backward(), or give the op a copy (sg::clone). '", node.op,
         "' was reached from the output through ", path_text(path),
         g_anomaly_mode ? detail::cat("; the forward '", node.op, "' read ", describe_all(node.inputs)) : "");
  }
}

// Nodes reachable from output, each after every node that consumes its
// output (reverse topological order), by an iterative depth-first search;
// each node is checked (check_runnable) when first reached, so a pass that
// cannot run throws before any backward has run.
std::vector<std::shared_ptr<Node>> order_from(const Tensor& output) {
  struct Frame {
    std::shared_ptr<Node> node;
    size_t next;
  };
  std::vector<std::shared_ptr<Node>> post;
  std::unordered_set<Node*> seen{output.node().get()};
  std::vector<Frame> stack{{output.node(), 0}};
  std::vector<const Node*> path{output.node().get()};  // the stack's nodes
  check_runnable(*output.node(), output, path);
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next < f.node->inputs.size()) {
      const Tensor& in = f.node->inputs[f.next++];
      if (in.defined() && in.node() && seen.insert(in.node().get()).second) {
        path.push_back(in.node().get());
        check_runnable(*in.node(), in, path);
        stack.push_back({in.node(), 0});
      }
    } else {
      post.push_back(std::move(f.node));
      stack.pop_back();
      path.pop_back();
    }
  }
  return {post.rbegin(), post.rend()};
}

// True when nothing but `t` holds its buffer (no other handle, no view), and
// the buffer is exactly its data: safe to keep as a leaf's .grad or to add into.
bool owns_buffer(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.impl()->storage.use_count() == 1 && t.impl()->offset == 0 &&
         t.impl()->storage->bytes == t.nbytes();
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

// Serialises additions into leaves' .grad across threads: one lock for the
// process, taken once per backward pass (at its end), so it costs nothing
// measurable and concurrent passes into shared parameters sum exactly.
std::mutex g_leaf_mutex;

// The gradients one pass sends to leaves, summed here until the pass has
// succeeded; then added into the leaves' .grad all at once.
class LeafGrads {
 public:
  void add(const Tensor& leaf, const Tensor& g) {
    const auto [it, fresh] = index_.try_emplace(leaf.impl(), items_.size());
    if (fresh)
      items_.push_back({leaf, g});
    else
      accumulate(items_[it->second].grad, g);
  }

  // Adds every sum into its leaf's .grad. A leaf's .grad is its own buffer
  // (never shared), so optimizers and clipping may change it in place:
  // copies are made first, so that nothing below the lock can fail.
  void commit() {
    for (Item& item : items_)
      if (!owns_buffer(item.grad)) item.grad = clone(item.grad);
    std::lock_guard<std::mutex> lock(g_leaf_mutex);
    for (Item& item : items_) {
      Tensor current = item.leaf.grad();
      if (current.defined())
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
      const auto it = in.defined() ? index_.find(in.impl()) : index_.end();
      if (it == index_.end()) {
        out.emplace_back();
        continue;
      }
      Tensor& g = items_[it->second].grad;
      out.push_back(owns_buffer(g) ? g : clone(g));
    }
    items_.clear();
    index_.clear();
    return out;
  }

 private:
  struct Item {
    Tensor leaf, grad;
  };
  std::vector<Item> items_;
  std::unordered_map<const TensorImpl*, size_t> index_;
};

// node's backward, its errors prefixed with the op's name (the engine's own
// checks name it already; an error from inside a backward may not).
Grads run_backward(Node& node, const Tensor& g, bool anomaly) {
  try {
    return anomaly ? backward_naming_op(node, g) : node.backward(g);
  } catch (const Error& e) {
    fail("backward of '", node.op, "' failed: ", e.what());
  }
}

// One backward pass from `output`; the leaves' gradients are left in `leaves`.
// `who` names the caller in errors.
void run_pass(const char* who, const Tensor& output, const Tensor& grad_output, bool retain_graph,
              LeafGrads& leaves) {
  if (!output.requires_grad())
    fail(who, ": tensor of shape ", output.shape(),
         " does not require grad (no input of the ops that made it requires grad)");
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
  const bool anomaly = g_anomaly_mode;
  if (anomaly)
    if (const int64_t bad = first_nonfinite(seed); bad >= 0)
      fail("anomaly mode: the gradient passed to backward() holds ", where(seed, bad), " of ",
           seed.shape(), " ", seed.dtype());
  if (output.is_leaf()) {
    leaves.add(output, seed);
    return;
  }

  NoGradGuard no_grad;  // backward's own arithmetic is not recorded
  const auto order = order_from(output);  // throws, before anything ran, if a node cannot run
  // A backward that threw part-way (say, a wrong gradient shape) leaves
  // partial sums in the nodes it had not reached yet; start from none.
  for (const auto& node : order) node->grad = Tensor();
  output.node()->grad = seed;
  Trail trail;  // filled in anomaly mode only
  size_t done = 0;  // nodes whose backward has run (and which are released unless retain_graph)
  try {
    for (; done < order.size(); ++done) {
      Node* node = order[done].get();
      Tensor g = std::move(node->grad);
      node->grad = Tensor();
      if (g.defined()) {
        if (anomaly) check_sum(*node, g, trail);
        profile_mark("sum gradients");
        Grads grads = run_backward(*node, g, anomaly);
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
            if (in.node()) trail.from.try_emplace(in.node().get(), node);
          }
          if (in.node())
            accumulate(in.node()->grad, gi);
          else
            leaves.add(in, gi);
        }
      }
      if (!retain_graph) {
        node->released = true;
        node->backward = nullptr;
        node->inputs.clear();
        node->saved.clear();
      }
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
  LeafGrads leaves;
  run_pass("backward", output, grad_output, retain_graph, leaves);
  leaves.commit();
}

Grads grad(const Tensor& output, const std::vector<Tensor>& inputs, const Tensor& grad_output, bool retain_graph) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) fail("grad: input ", i, " is an undefined tensor");
    if (!inputs[i].is_leaf() || !inputs[i].requires_grad())
      fail("grad: input ", i, " of shape ", inputs[i].shape(),
           " is not a leaf tensor that requires grad (grad returns leaves' gradients only)");
  }
  LeafGrads leaves;
  run_pass("grad", output, grad_output, retain_graph, leaves);
  return leaves.take(inputs);
}

}  // namespace sg
