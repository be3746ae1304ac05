// Anomaly mode's checks and their messages (autograd/anomaly.hpp), called
// only while it is on: record() checks each op's output, the engine each
// gradient and each sum of gradients.
#include "autograd/anomaly.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace sg::anomaly {
namespace {
// The op whose backward is running on this thread, so that a NaN found in
// an op called inside that backward is reported with it.
thread_local const char* g_in_backward_of = nullptr;
}  // namespace

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

}  // namespace sg::anomaly
