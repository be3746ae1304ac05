// A tour of smallgrad's tensor core and autograd in one page: tensors,
// broadcasting, matrix products over BLIS, and a tiny model fitted by
// gradient descent. Run: build/release/examples/tensor_tour [--threads N] [--steps N]
#include <smallgrad.hpp>

#include <iostream>
#include <string>

#include "cli.hpp"

namespace {

int tour(int64_t steps) {
  std::cout << "smallgrad: " << sg::num_threads() << " threads, BLIS kernels '" << sg::blis_kernels()
            << "'\n\n";

  // Tensors and broadcasting: (2, 3) + (3) adds the row to every row.
  sg::Tensor a = sg::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  sg::Tensor b = sg::tensor({10, 20, 30});
  std::cout << "a =\n" << a << "\n\na + b =\n" << a + b << "\n\n";
  std::cout << "sum over rows: " << sg::sum(a, 0) << "\nsoftmax of each row:\n"
            << sg::softmax(a) << "\n\n";

  // A matrix product through BLIS: (2, 3) x (3, 2).
  std::cout << "a @ a^T =\n" << sg::matmul(a, a, false, true) << "\n\n";

  // Autograd: fit y = 3x - 1 (plus noise) with a weight and a bias.
  sg::Generator gen(42);
  sg::Tensor x = sg::rand({64, 1}, gen, sg::float32, -1, 1);
  sg::Tensor y = x * 3.0 - 1.0 + sg::randn({64, 1}, gen) * 0.05;
  sg::Tensor w = sg::zeros({1, 1}).set_requires_grad();
  sg::Tensor bias = sg::zeros({1}).set_requires_grad();
  for (int64_t step = 0; step <= steps; ++step) {
    examples::check_stop();
    sg::Tensor err = sg::matmul(x, w) + bias - y;
    sg::Tensor loss = sg::mean(err * err);
    w.set_grad({});
    bias.set_grad({});
    sg::backward(loss);
    {
      sg::NoGradGuard no_grad;  // the update itself is not part of the graph
      sg::kernel::add_(w, sg::kernel::affine(w.grad(), -0.5, 0));
      sg::kernel::add_(bias, sg::kernel::affine(bias.grad(), -0.5, 0));
    }
    if (step % (steps / 4 > 0 ? steps / 4 : 1) == 0)
      std::cout << "step " << step << ": loss " << loss.item<double>() << "\n";
  }
  std::cout << "fitted w = " << w.item<double>() << " (true 3), b = " << bias.item<double>()
            << " (true -1)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{"A tour of smallgrad's tensors, broadcasting, matrix products and autograd, ending with a\n"
                        "line fitted by gradient descent."};
  int threads = 0;
  int64_t steps = 200;
  flags.whole("--steps", steps, "gradient-descent steps of the line fit", 1, 1000000);
  flags.threads(threads);
  return examples::run(flags, argc, argv, [&] {
    examples::apply_threads(threads);
    return tour(steps);
  });
}
