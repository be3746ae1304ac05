// Extending smallgrad from your own code, with no change to the library:
//
//   * SiLU as a custom op: its forward computed with the graph-free kernels
//     (sg::kernel), its backward written right under it, both joined to the
//     graph by sg::record (PyTorch's autograd.Function). Its backward has both
//     forms: graph-free kernels to first order, sg:: ops under create_graph;
//   * a cube op whose backward is graph-free only: right to first order, and
//     a second derivative through it (hvp) is refused, naming it;
//   * RMSNorm as a custom module: a class deriving from sg::nn::Module that
//     registers a weight and builds its forward from existing ops, so it needs
//     no backward of its own.
//
// Both are gradchecked (SiLU twice: its backward is differentiable too), then a small MLP made with them (Linear -> RMSNorm ->
// SiLU -> Linear) learns a toy regression. The same code builds in a
// project of your own against the installed library (docs/adding-a-layer.md).
//
//   custom_layer [--steps N] [--threads N]
#include <smallgrad.hpp>

#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include "autograd/tools/functional.hpp"  // hvp (not in smallgrad.hpp)
#include "cli.hpp"

namespace {

// ---- a custom op ----
// SiLU (swish): y = x * s with s = sigmoid(x).   x: any shape -> same shape
// dy/dx = s + x * s * (1 - s) = s * (1 + x * (1 - s))
sg::Tensor silu(const sg::Tensor& x) {
  sg::Tensor s = sg::kernel::sigmoid(x);  // kept for backward
  sg::Tensor y = sg::kernel::mul(x, s);
  return sg::record("silu", y, {x}, [x, s](const sg::Tensor& g) -> sg::Grads {
    // Under create_graph (a gradient of this gradient will be taken) the
    // engine records while backward runs: the same formula with sg:: ops,
    // from x (the kept s has no history), so the gradient can be
    // differentiated again. Otherwise the graph-free kernels, as fast as before.
    if (sg::grad_enabled()) {
      const sg::Tensor sx = sg::sigmoid(x);
      return {g * (sx * (x * (1.0 - sx) + 1.0))};
    }
    sg::Tensor one_minus_s = sg::kernel::affine(s, -1.0, 1.0);
    sg::Tensor dy_dx = sg::kernel::mul(s, sg::kernel::affine(sg::kernel::mul(x, one_minus_s), 1.0, 1.0));
    return {sg::kernel::mul(g, dy_dx)};  // one gradient per input: dL/dx = dL/dy * dy/dx
  });
}

// ---- a custom op, first order only ----
// y = x^3, dy/dx = 3 x^2, the backward in graph-free kernels alone: the
// gradient it returns has no history, so a create_graph pass through it (an
// hvp, a gradient penalty) throws naming 'cube' instead of returning a
// second derivative that leaves it out. Its composed form would be
// `return {g * x * x * 3.0};` (sg:: ops), as silu's above.
sg::Tensor cube(const sg::Tensor& x) {
  return sg::record("cube", sg::kernel::pow(x, 3), {x}, [x](const sg::Tensor& g) -> sg::Grads {
    return {sg::kernel::mul(g, sg::kernel::affine(sg::kernel::mul(x, x), 3.0, 0))};
  });
}

// ---- a custom module ----
// RMSNorm (Zhang & Sennrich, 2019): scales each row of the last axis to unit
// root mean square, then by a learned weight; no mean subtracted, no bias.
//   y = x / sqrt(mean(x^2) + eps) * weight.   x: (..., dim) -> same shape
class RMSNorm : public sg::nn::Module {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6) : dim(dim), eps(eps) {
    if (dim <= 0) sg::fail("RMSNorm: dim must be positive, got ", dim);
    weight = register_parameter("weight", sg::ones({dim}));
  }
  sg::Tensor forward(const sg::Tensor& x) const {
    if (x.dim() == 0 || x.shape().back() != dim)
      sg::fail("RMSNorm: input of shape ", x.shape(), " does not end in dim ", dim);
    sg::Tensor mean_square = sg::mean(x * x, -1, /*keepdim=*/true);  // (..., 1)
    return x / sg::sqrt(mean_square + eps) * weight;
  }
  int64_t dim;
  double eps;
  sg::Tensor weight;  // (dim), starts at ones
};

// A model built from library layers and the two above; submodules are
// registered by name, so its parameters are "fc1.weight", "norm.weight", ...
class MLP : public sg::nn::Module {
 public:
  MLP(int64_t in, int64_t hidden, int64_t out) {
    fc1 = register_module("fc1", std::make_shared<sg::nn::Linear>(in, hidden));
    norm = register_module("norm", std::make_shared<RMSNorm>(hidden));
    fc2 = register_module("fc2", std::make_shared<sg::nn::Linear>(hidden, out));
  }
  sg::Tensor forward(const sg::Tensor& x) const { return fc2->forward(silu(norm->forward(fc1->forward(x)))); }
  std::shared_ptr<sg::nn::Linear> fc1, fc2;
  std::shared_ptr<RMSNorm> norm;
};

// Checks both against central differences, prints the reports; false if either fails.
bool gradcheck_both() {
  sg::Generator gen(1);
  auto silu_fn = [](const std::vector<sg::Tensor>& in) { return silu(in[0]); };
  const sg::GradcheckResult op = sg::gradcheck(silu_fn, {sg::randn({3, 5}, gen)}, {.name = "silu"});
  std::cout << op << "\n";
  // Twice differentiable: the gradient of its backward, against central differences.
  const sg::GradcheckResult twice = sg::gradgradcheck(silu_fn, {sg::randn({3, 5}, gen)}, {.name = "silu"});
  std::cout << "second order: " << twice << "\n";

  RMSNorm norm(6);  // gradcheck_module checks it in float64 and gives it back in float32
  sg::kernel::copy_(norm.weight, sg::rand({6}, gen, sg::float32, 0.5, 1.5));  // not all ones
  auto norm_fn = [&](const std::vector<sg::Tensor>& in) { return norm.forward(in[0]); };
  const sg::GradcheckResult layer =
      sg::nn::gradcheck_module(norm, norm_fn, {sg::randn({4, 6}, gen)}, {.name = "RMSNorm"});
  std::cout << layer << "\n";

  // The graph-free op: right to first order, refused to second.
  auto cube_fn = [](const std::vector<sg::Tensor>& in) { return cube(in[0]); };
  const sg::GradcheckResult first = sg::gradcheck(cube_fn, {sg::randn({3, 5}, gen)}, {.name = "cube"});
  std::cout << first << "\n";
  bool refused = false;
  try {
    const sg::Tensor x = sg::randn({4}, gen, sg::float64);
    sg::hvp([](const std::vector<sg::Tensor>& in) { return sg::sum(cube(in[0])); }, {x}, {sg::ones({4}, sg::float64)});
  } catch (const sg::Error& e) {
    std::cout << "second order through cube refused: " << e.what() << "\n";
    refused = std::string(e.what()).find("'cube' is graph-free") != std::string::npos;
  }
  return op && twice && layer && first && refused;
}

// Fits y = sin(pi x0) * x1 + 0.5 x2^2 on 256 points of [-1, 1]^3 with Adam;
// returns the first and the last full-batch mean squared error.
std::pair<double, double> train(int64_t steps) {
  sg::manual_seed(0);
  sg::Generator gen(7);
  const sg::Tensor x = sg::rand({256, 3}, gen, sg::float32, -1, 1);
  const std::vector<float> v = x.to_vector<float>();
  std::vector<float> target(256);
  for (size_t i = 0; i < target.size(); ++i)
    target[i] = std::sin(3.14159265f * v[3 * i]) * v[3 * i + 1] + 0.5f * v[3 * i + 2] * v[3 * i + 2];
  const sg::Tensor y = sg::from_vector(target, {256, 1});

  MLP model(3, 32, 1);
  sg::optim::Adam opt(model.parameters(), {.lr = 1e-2});
  std::cout << "\ntraining an MLP (" << model.parameter_count() << " parameters: fc1 -> RMSNorm -> silu -> fc2)\n";
  double first = 0, last = 0;
  for (int64_t step = 0; step <= steps; ++step) {
    opt.zero_grad();
    sg::Tensor loss = sg::nn::mse_loss(model.forward(x), y);
    sg::backward(loss);
    opt.step();
    last = loss.item<double>();
    if (step == 0) first = last;
    if (step % std::max<int64_t>(steps / 5, 1) == 0) std::cout << "step " << step << ": loss " << last << "\n";
  }
  return {first, last};
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{"A custom op (SiLU) and a custom module (RMSNorm) from user code: gradcheck, then train."};
  int64_t steps = 300;
  int threads = 0;
  flags.whole("--steps", steps, "training steps of the small MLP", 1, 1000000);
  flags.threads(threads);
  return examples::run(flags, argc, argv, [&] {
    examples::apply_threads(threads);
    if (!gradcheck_both()) return 1;
    const auto [first, last] = train(steps);
    if (!(last < 0.5 * first)) {
      std::cout << "the loss did not fall: " << first << " -> " << last << "\n";
      return 1;
    }
    std::cout << "loss fell from " << first << " to " << last << "\n";
    return 0;
  });
}
