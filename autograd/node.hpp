#pragma once
// The autograd graph. Every differentiable op that runs while recording is on
// and has an input that requires grad gives its output a Node:
//
//   op        the op's name, used in every error the engine raises
//   inputs    the tensors the op read (the graph's edges, towards the leaves)
//   backward  given the gradient of the output, returns one gradient per
//             input (an undefined Tensor where none flows)
//
// The backward is a lambda written right under the op's forward; it captures
// by value what it needs (inputs, saved statistics). It must never capture
// the op's own output tensor (that would be a reference cycle: output ->
// node -> output); capture `out.detach()` instead, which shares the data
// without the node.
#include <atomic>
#include <functional>
#include <vector>

#include "core/tensor.hpp"

namespace sg {

using Grads = std::vector<Tensor>;
using BackwardFn = std::function<Grads(const Tensor& grad_output)>;

struct Node {
  Node(const char* op_name, std::vector<Tensor> in, BackwardFn fn);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const char* op;
  std::vector<Tensor> inputs;
  BackwardFn backward;
  Tensor grad;            // gradient of the output, summed during one backward pass
  bool released = false;  // backward already ran and freed inputs and closure

  // Nodes alive in the process; tests use it to prove graphs are freed.
  static int64_t live_count();
};

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

// Gives `out` a node when recording is on and any input requires grad, and
// returns it. This is how every op joins the graph:
//
//   Tensor out = core::exp(x);
//   return record("exp", out, {x}, [y = out.detach()](const Tensor& g) -> Grads {
//     return {core::mul(g, y)};
//   });
Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward);

// True when op results from these inputs would be recorded.
bool any_requires_grad(const std::vector<Tensor>& inputs);

// Runs reverse-mode differentiation from `output`. A non-scalar output needs
// `grad_output` of its shape. Gradients add into the .grad of every leaf that
// requires grad. The graph is freed afterwards unless retain_graph is set.
void backward(const Tensor& output, const Tensor& grad_output = Tensor(), bool retain_graph = false);

}  // namespace sg
