#pragma once
// Anomaly mode's checks (internal to the engine: autograd/record.cpp calls
// check_forward from record(), autograd/engine.cpp the rest during a
// backward pass). Each throws sg::Error naming the op, the element and how
// the gradient got there; none is called while anomaly mode is off.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/node.hpp"

namespace sg::anomaly {

// The flat index of the first NaN or infinity in t, or -1 (int64 holds neither).
int64_t first_nonfinite(const Tensor& t);

// "NaN at element 4 (1, 1)"
std::string where(const Tensor& t, int64_t i);

// "(2, 3) float32 made by 'sub'" or "(3) float32, a leaf"; for a list, "; " between them.
std::string describe(const Tensor& t);
std::string describe_all(const std::vector<Tensor>& inputs);

// op's output `out`, computed from `inputs`, holds no NaN or infinity.
void check_forward(const char* op, const Tensor& out, const std::vector<Tensor>& inputs);

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

// The gradient node's backward returned for its input `input` is finite.
void check_gradient(const Node& node, size_t input, const Tensor& grad, const Tensor& grad_output,
                    const Trail& trail);

// The gradients that consumers sent to node's output were each finite (each
// was checked), so a non-finite sum is an overflow of the sum.
void check_sum(const Node& node, const Tensor& grad_output, const Trail& trail);

// node's backward, with the op named for check_forward's messages while it runs.
Grads backward_naming_op(Node& node, const Tensor& grad_output);

}  // namespace sg::anomaly
