#pragma once
// The engine's API: the recording switch (NoGradGuard), record() (how an op
// joins the graph), anomaly mode, and the backward pass (backward, grad).
// The graph's nodes are in autograd/node.hpp; record() and the switches are
// defined in autograd/record.cpp, the backward pass in autograd/engine.cpp,
// anomaly mode's checks in autograd/anomaly.cpp.
#include <vector>

#include "autograd/node.hpp"
#include "core/tensor.hpp"

namespace sg {

// Recording switch. While a NoGradGuard lives (per thread), ops record
// nothing: for evaluation, optimizer updates and backward itself.
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// The opposite: recording on while it lives (per thread), even inside a
// NoGradGuard. backward(..., {.create_graph = true}) runs the backwards
// under it so that the gradients they compute are recorded.
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

// Gives `out` a node when recording is on and any input requires grad, and
// returns it. This is how every op joins the graph: the library's own, and
// yours, defined in your program with no change to the library (PyTorch's
// autograd.Function). A whole op, forward and backward:
//
//   // y = x^2, dy/dx = 2x
//   sg::Tensor square(const sg::Tensor& x) {
//     return sg::record("square", sg::kernel::mul(x, x), {x}, [x](const sg::Tensor& g) -> sg::Grads {
//       if (sg::grad_enabled()) return {sg::mul(g, sg::affine(x, 2, 0))};   // composed: twice differentiable
//       return {sg::kernel::mul(g, sg::kernel::affine(x, 2, 0))};          // graph-free: first order, fastest
//     });
//   }
//
// The backward has two forms, and may have both, as above (every op of the
// library does):
//   graph-free  sg::kernel calls only. Records nothing, so its gradient has
//               no history: enough for backward() and first-order grad(),
//               and a create_graph pass through the op throws, naming it
//               (PyTorch's once_differentiable), rather than return a second
//               derivative that leaves the op out.
//   composed    sg:: ops (sg::mul, sg::exp, ...) on g and the captured
//               inputs. Under create_graph they record, so the gradient can
//               be differentiated again (hvp, hessian, gradient penalties,
//               second-order MAML); check it with sg::gradgradcheck.
// Which to write: the composed form alone is the shortest twice
// differentiable op; the graph-free form alone suits an op whose second
// derivatives nobody takes; both, switched on sg::grad_enabled() (true only
// under create_graph), give the kernels' speed to first order and second
// derivatives too. The engine tells the forms apart by whether the backward
// called any sg:: op: a composed backward that returns g itself, or calls an
// sg:: op that records nothing (a mul by a constant mask), is composed.
//
// This form saves every input: backward() refuses to run if any input was
// changed in place after the op (its version moved). When backward reads
// fewer tensors, or reads the output, list what it reads in `saved` (the
// second form, PyTorch's ctx.save_for_backward):
//
//   sg::Tensor out = sg::kernel::exp(x);
//   return sg::record("exp", out, {x}, {out}, [y = out.detach()](const sg::Tensor& g) -> sg::Grads {
//     return {sg::kernel::mul(g, y)};  // reads only the output
//   });
//
// An op whose backward reads nothing but shapes (add, sum, reshape) saves
// {}; then a later in-place change of its inputs is fine, as in PyTorch.
//
//   op        the op's name, for errors, anomaly mode and to_dot. The node
//             keeps the pointer: pass a string literal, not a temporary's c_str().
//   out       the forward's result, computed with the graph-free kernels
//             (sg::kernel) so it has no node yet; an output that is already in
//             a graph throws.
//   inputs    every tensor the result depends on, in the order backward's
//             gradients come back. An input that needs no gradient (int64
//             ids, a constant mask) may be listed; it gets none.
//   backward  given the gradient of out (out's shape and dtype), returns one
//             gradient per input, each of that input's shape and dtype (the
//             engine checks, naming the op), or Tensor() where none flows
//             (`x.requires_grad() ? ... : Tensor()` skips needless work). It
//             runs with recording off, so sg:: ops and sg::kernel kernels both
//             work in it; under backward's create_graph it runs with recording
//             on (grad_enabled() is true), and then only what it computes
//             with sg:: ops from g and the captured inputs can be
//             differentiated again (the two forms above; docs/adding-a-layer.md:
//             "Twice differentiable"). Never change g or an input in place (returning g
//             itself is fine): the engine sums gradients out of place.
//             Capture by value; capture `out.detach()`, never `out` (a cycle).
//   saved     (second form) every tensor whose values backward reads: inputs,
//             `out` itself (only its storage and version are kept, so no
//             cycle), or others. Undefined tensors are skipped. Something
//             backward recomputes from an input (max's argmax) counts as
//             reading it. The first form saves all of `inputs`.
//
// Then check it with sg::gradcheck (autograd/tools/gradcheck.hpp); the walk-through
// is docs/adding-a-layer.md, and examples/custom_layer.cpp runs one.
Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward);
Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, const std::vector<Tensor>& saved,
              BackwardFn backward);

// True when op results from these inputs would be recorded.
bool any_requires_grad(const std::vector<Tensor>& inputs);

// For a backward whose composed form (under create_graph) reads a tensor the
// op did not list in `saved`: exp, sqrt, tanh, sigmoid and the softmaxes save
// their output, which their first-order backward reads, but the composed form
// recomputes it from the input, so that it has a history. Throws, as
// backward() does for a saved tensor, when `t` is no longer at `version`,
// the version it had when the op ran (read then with t.version()):
//
//   [x, v = x.version()](const Tensor& g) -> Grads {
//     if (grad_enabled()) { check_version("exp", "its input", x, v); return {mul(g, exp(x))}; }
//     ...
void check_version(const char* op, const char* what, const Tensor& t, uint64_t version);

// Anomaly mode: finds where a NaN or an infinity is born. Off by default;
// per thread, like NoGradGuard. While it is on:
//   * every op's result is checked when the op calls record(): every
//     differentiable op in sg, recording or not (under NoGradGuard too), and
//     every custom op. Kernels in sg::kernel are not checked on their own.
//   * every gradient a backward returns is checked, and so is the gradient
//     passed to backward() and each sum of gradients.
// The first non-finite value throws sg::Error naming the op (or whose
// backward it was), the element, the shapes, which op made each input, and
// in backward the ops through which the gradient reached it from the output.
// It costs a scan of every result; off, one boolean test per op.
//
//   { sg::AnomalyModeGuard anomaly;  // on until the end of the scope
//     sg::Tensor loss = model.forward(x);
//     sg::backward(loss); }          // throws at the first NaN or inf
bool anomaly_mode();
void set_anomaly_mode(bool on);
class AnomalyModeGuard {
 public:
  explicit AnomalyModeGuard(bool on = true);
  ~AnomalyModeGuard();
  AnomalyModeGuard(const AnomalyModeGuard&) = delete;
  AnomalyModeGuard& operator=(const AnomalyModeGuard&) = delete;

 private:
  bool previous_;
};

// How a backward pass runs.
//   retain_graph  keep the graph after the pass, to go through it again.
//   create_graph  record the pass itself: the gradients carry their own
//                 history (every backward runs with recording on, and the
//                 engine's sums of gradients are recorded adds), so they can
//                 be differentiated again, to any order (PyTorch's
//                 create_graph). Implies retain_graph. Off, backward runs
//                 with recording off and calls the same kernels as before.
struct BackwardOptions {
  bool retain_graph = false;
  bool create_graph = false;
};

// Runs reverse-mode differentiation from `output`. A non-scalar output needs
// `grad_output` of its shape. Gradients add into the .grad of every leaf that
// requires grad. The graph is freed afterwards unless retain_graph is set.
//
// All or nothing: the leaves' gradients are summed on the side and added
// into their .grad only once every backward has run, so a pass that throws
// (a saved tensor changed in place, a custom backward's error, anomaly mode)
// changes no .grad. Its nodes that already ran are freed (unless
// retain_graph), and a later backward through them says which error freed them.
//
// With create_graph, a pass through an op whose backward is graph-free
// (record() above: it ran only sg::kernel functions) throws, naming the op,
// before any .grad changes, rather than leave that op out of the second
// derivative.
//
// With create_graph, a leaf's .grad is a tensor with a history (a .grad
// already there is replaced by the recorded sum, out of place); that history
// holds the leaf, so leaf -> .grad -> graph -> leaf is a reference cycle
// until you reset the .grad (leaf.set_grad(Tensor())), as in PyTorch. grad()
// below returns the gradients instead and has no such cycle: prefer it.
//
// Threads: passes on several threads may share leaves (one model's
// parameters, each thread its own graph); their additions into a shared
// leaf's .grad are serialised, so the sum is exact (in some order). Two
// threads must not run backward through the same non-leaf tensor at once.
//
//   sg::backward(loss);                           // first order, graph freed
//   sg::backward(loss, {.create_graph = true});   // .grad differentiable
void backward(const Tensor& output, const Tensor& grad_output = Tensor(), bool retain_graph = false);
void backward(const Tensor& output, const Tensor& grad_output, BackwardOptions options);
void backward(const Tensor& output, BackwardOptions options);

// The gradients of `output` with respect to `inputs` (PyTorch's
// torch.autograd.grad), returned instead of added into .grad: no .grad
// changes. One per input, each in a buffer of its own; undefined where no
// gradient flows. An input is any tensor that requires grad: a leaf, or an
// intermediate result of the graph, whose gradient is the one that flows
// into it (the sum over the ops that read it, as in PyTorch), to first
// order and, with create_graph, to any order. The pass runs only the
// backwards on a path from `output` to an input; otherwise it is the same
// pass as backward() (checks, errors, freeing the graph). A data-parallel
// step (parallel/data_parallel.hpp) uses it to keep each micro-batch's
// gradients apart and sum them in a fixed order.
//
// Derivatives of derivatives: with create_graph the returned gradients have
// a history and can be passed to grad() again. grad_output may itself
// require grad (a leaf), and then the gradients are differentiable in it
// too (autograd/tools/functional.hpp uses that for jvp). A backward that is
// graph-free (it ran only sg::kernel functions, record() above) makes a
// create_graph pass through its op throw, naming the op: its gradient could
// not be differentiated again.
//
//   sg::Tensor x = sg::full({}, 0.5, sg::float64).set_requires_grad();
//   sg::Tensor h = sg::tanh(x);
//   sg::Tensor dh = sg::grad(sg::mul(h, h), {h})[0];            // 2 tanh(x): an intermediate's gradient
//   sg::Tensor dy = sg::grad(sg::tanh(x), {x}, {.create_graph = true})[0];
//   sg::Tensor d2y = sg::grad(dy, {x})[0];        // -2 tanh(x) (1 - tanh(x)^2)
Grads grad(const Tensor& output, const std::vector<Tensor>& inputs, const Tensor& grad_output = Tensor(),
           bool retain_graph = false);
Grads grad(const Tensor& output, const std::vector<Tensor>& inputs, const Tensor& grad_output,
           BackwardOptions options);
Grads grad(const Tensor& output, const std::vector<Tensor>& inputs, BackwardOptions options);

}  // namespace sg
