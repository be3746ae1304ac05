#pragma once
// gradgradcheck: checks second derivatives, as PyTorch's does. Beside
// gradcheck (autograd/tools/gradcheck.hpp), in three lines:
//
//   auto fn = [](const std::vector<sg::Tensor>& in) { return my_op(in[0], in[1]); };
//   sg::GradcheckResult r = sg::gradgradcheck(fn, {sg::randn({3, 4}), sg::randn({4})});
//   std::cout << r;  // in a Catch2 test: REQUIRE(r) prints this report on failure
//
// How it works: with v a fixed random cotangent of fn's output's shape (the
// "grad_output", float64, seeded), the first derivative
//
//   F(x, v) = grad(fn(x), x, v, {.create_graph = true})  (v^T dfn/dx, every input's, flattened, concatenated)
//
// is itself a function of the inputs x and of v, and gradcheck runs on it:
// its derivatives, from a backward through the graph that backward built,
// are compared with central differences of F, where F is the first-order
// backward (the kernels, recording off). So a backward whose own derivative
// is wrong (one that reads a detached copy of an input, say) fails, naming
// the input or "grad_output" and the element, in the units of F: the first
// derivative's. F's output, larger than max_outputs, is projected on random
// weights: the gradient of a random projection of the first derivative.
// `fn` must be deterministic and build its result in float64 from its inputs.
#include <functional>
#include <string>
#include <vector>

#include "autograd/tools/gradcheck.hpp"
#include "core/tensor.hpp"

namespace sg {

GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});

// The general form, as gradcheck_leaves: `leaves` are float64 leaves that
// require grad (a module's parameters after module.to(float64), an input),
// perturbed in place and restored.
GradcheckResult gradgradcheck_leaves(const std::function<Tensor()>& fn, const std::vector<Tensor>& leaves,
                                     const std::vector<std::string>& labels,
                                     const GradcheckOptions& options = {});

}  // namespace sg
