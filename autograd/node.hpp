#pragma once
// The autograd graph. Every differentiable op that runs while recording is on
// and has an input that requires grad gives its output a Node:
//
//   op        the op's name, used in every error the engine raises
//   inputs    the tensors the op read (the graph's edges, towards the leaves)
//   backward  given the gradient of the output, returns one gradient per
//             input (an undefined Tensor where none flows)
//
//   saved     the tensors whose values backward reads, each with the version
//             of its storage when the op ran (core/tensor.hpp: Storage)
//
// The backward is a lambda written right under the op's forward; it captures
// by value what it needs (inputs, saved statistics). It must never capture
// the op's own output tensor (that would be a reference cycle: output ->
// node -> output); capture `out.detach()` instead, which shares the data
// without the node.
//
// Versions: backward() first walks the whole graph and compares every saved
// tensor's version with the one noted at record(); a tensor changed in place
// since (sg::kernel::add_, an optimizer step, ...) throws an sg::Error naming
// the op, the tensor and both versions, before any backward runs. So a
// gradient is never computed from values the forward did not see.
//
// Teardown: ~Node releases its inputs through a work list, not recursively,
// so dropping a graph of any depth uses a bounded stack.
//
// What makes nodes and runs them (record, backward, grad, the recording and
// anomaly-mode switches) is the engine's API, in autograd/engine.hpp.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
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

  // A tensor the backward reads, and its storage's version when the op ran.
  struct Saved {
    std::shared_ptr<Storage> storage;
    uint64_t version = 0;
    int which = 0;  // its index in inputs; kOutput; or kOther - k for the k-th other tensor
  };
  static constexpr int kOutput = -1, kOther = -2;

  const char* op;
  std::vector<Tensor> inputs;
  BackwardFn backward;
  std::vector<Saved> saved;
  Tensor grad;            // gradient of the output, summed during one backward pass
  bool released = false;  // backward already ran and freed inputs and closure
  // Set when the backward pass that released this node threw part-way: what failed.
  std::shared_ptr<const std::string> failure;

  // Nodes alive in the process; tests use it to prove graphs are freed.
  static int64_t live_count();
};

namespace detail {
// How many times record() has been called on this thread, by any sg:: op,
// recording or not. The engine reads it around a backward under
// create_graph: a backward that called no sg:: op is graph-free.
uint64_t record_calls();
}  // namespace detail

}  // namespace sg
