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
//                     parameters only. f must return a scalar (as PyTorch's).
//
// The same over a model's parameters (or any leaves that require grad):
// `loss` takes no argument and reads the parameters where they are, so
// nothing is copied and no module is rebuilt (what PyTorch's functional_call
// is for). The parameters' .grad is left alone:
//
//   auto loss = [&] { return sg::nn::mse_loss(model.forward(x), y); };
//   std::vector<sg::Tensor> hv = sg::hvp(loss, model.parameters(), v);   // H v, v one tensor per parameter
//   sg::Tensor h = sg::hessian(loss, model.parameters());                // (n, n), n = parameter_count()
//
// hessian over parameters takes the first gradient once (recorded) and then
// one backward per column through it: about n + 1 backwards.
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

// Over parameters: `params` leaves that require grad, all of one float
// dtype; v one tensor per parameter, of its shape and dtype. hvp's and
// hessian's loss must return a scalar; jvp's f any tensor (J v of its shape).
using LossFn = std::function<Tensor()>;
std::vector<Tensor> hvp(const LossFn& loss, const std::vector<Tensor>& params, const std::vector<Tensor>& v);
Tensor jvp(const LossFn& f, const std::vector<Tensor>& params, const std::vector<Tensor>& v);
// (n, n) with n the parameters' total element count, in their order (row
// and column k: element k of the parameters flattened one after another).
Tensor hessian(const LossFn& loss, const std::vector<Tensor>& params);

}  // namespace sg
