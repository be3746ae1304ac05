#include "autograd/tools/gradgradcheck.hpp"

#include "autograd/engine.hpp"
#include "autograd/ops/shape.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"

namespace sg {

GradcheckResult gradgradcheck_leaves(const std::function<Tensor()>& fn, const std::vector<Tensor>& leaves,
                                     const std::vector<std::string>& labels, const GradcheckOptions& opt) {
  std::vector<Tensor> varied;  // the floating leaves: F is their gradients
  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::string label = i < labels.size() ? labels[i] : "input " + std::to_string(i);
    if (is_floating(leaves[i].dtype()) &&
        (leaves[i].dtype() != float64 || !leaves[i].is_leaf() || !leaves[i].requires_grad()))
      fail("gradgradcheck(", opt.name, "): ", label, " of shape ", leaves[i].shape(),
           " must be a float64 leaf that requires grad");
    if (is_floating(leaves[i].dtype())) varied.push_back(leaves[i]);
  }
  Shape out_shape;
  {
    NoGradGuard no_grad;
    const Tensor y = fn();
    if (!y.defined() || y.dtype() != float64)
      fail("gradgradcheck(", opt.name, "): fn returned ", y.defined() ? dtype_name(y.dtype()) : "nothing",
           "; it must compute in float64 from the inputs it is given");
    out_shape = y.shape();
  }
  Generator gen(opt.seed + 1);
  const Tensor v = randn(out_shape, gen, float64).set_requires_grad(true);  // the cotangent

  // F: every varied leaf's first derivative v^T dy/dx, flattened and
  // concatenated. Recording on (the analytic pass), backward builds a graph
  // (create_graph); off (gradcheck's central differences), it is the
  // first-order backward, the kernels.
  auto first_derivative = [&]() -> Tensor {
    const bool outer = grad_enabled();
    EnableGradGuard on;  // fn's graph is needed either way
    const Tensor y = fn();
    if (!y.requires_grad())
      fail("gradgradcheck(", opt.name, "): the output of shape ", y.shape(),
           " does not depend on any input through differentiable ops");
    const Grads gs = grad(y, varied, v, BackwardOptions{false, outer});
    std::vector<Tensor> parts;  // recorded when the gradients are (sg::reshape records only then)
    for (size_t i = 0; i < gs.size(); ++i) {
      const Tensor gi = gs[i].defined() ? gs[i] : zeros(varied[i].shape(), float64);
      parts.push_back(reshape(gi, {gi.numel()}));
    }
    return concat(parts, 0);
  };

  std::vector<Tensor> all = leaves;
  all.push_back(v);
  std::vector<std::string> all_labels;
  for (size_t i = 0; i < leaves.size(); ++i)
    all_labels.push_back(i < labels.size() ? labels[i] : "input " + std::to_string(i));
  all_labels.push_back("grad_output");
  GradcheckOptions o = opt;
  o.name = "first derivative of " + opt.name;
  return gradcheck_leaves(first_derivative, all, all_labels, o);
}

GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& opt) {
  std::vector<Tensor> x;  // float64 copies of the floating inputs; int64 ones as given
  for (const Tensor& in : inputs)
    x.push_back(is_floating(in.dtype()) ? kernel::to(in, float64).set_requires_grad(true) : in);
  return gradgradcheck_leaves([&] { return fn(x); }, x, {}, opt);
}

}  // namespace sg
