#pragma once
// Derivative products in the spirit of torch.autograd.functional, built on
// grad() with create_graph (autograd/engine.hpp). f maps the inputs (float
// tensors, used as they are; each is copied to a fresh leaf) to one output.
//
//   jvp(f, x, v)      J v, forward mode by the double-vjp trick: with u a
//                     dummy cotangent, g(u) = J^T u is linear in u, and
//                     d(g . v)/du = J v. Two backward passes, the first
//                     recorded: about 3x the cost of f.
//   vjp(f, x, u)      J^T u: one backward pass.
//   hvp(f, x, v)      H v for a scalar f: the gradient of (grad f . v), two
//                     backward passes, the first recorded: about 4x the cost of f.
//   hessian(f, x)     the full (n, n) Hessian for one input of n elements,
//                     one hvp per column: n times hvp's cost, for a handful of
//                     parameters only.
#include <functional>
#include <vector>

#include "core/tensor.hpp"

namespace sg {

using VectorFn = std::function<Tensor(const std::vector<Tensor>&)>;

// One tensor per input, each of that input's shape; v (jvp, hvp) one per input.
std::vector<Tensor> vjp(const VectorFn& f, const std::vector<Tensor>& x, const Tensor& u);
Tensor jvp(const VectorFn& f, const std::vector<Tensor>& x, const std::vector<Tensor>& v);
std::vector<Tensor> hvp(const VectorFn& f, const std::vector<Tensor>& x, const std::vector<Tensor>& v);
// f of a single input of n elements -> (n, n), in x's dtype.
Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x);

}  // namespace sg
