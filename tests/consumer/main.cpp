// Built against the installed package only: one include, one target. Besides
// using the library, it extends it as a student's project would, with no
// change to the library: a custom op (sg::record) and a custom module
// (sg::nn::Module), both gradchecked.
#include <smallgrad.hpp>

#include <cmath>
#include <exception>
#include <iostream>
#include <memory>

namespace {

// softsign: y = x / (1 + |x|), dy/dx = 1 / (1 + |x|)^2.   x: any shape -> same
sg::Tensor softsign(const sg::Tensor& x) {
  sg::Tensor denominator = sg::kernel::affine(sg::kernel::abs(x), 1.0, 1.0);  // 1 + |x|
  return sg::record("softsign", sg::kernel::div(x, denominator), {x}, [denominator](const sg::Tensor& g) -> sg::Grads {
    return {sg::kernel::div(g, sg::kernel::mul(denominator, denominator))};
  });
}

// y = softsign(x W^T + b) * gain: a library Linear inside, a parameter of its own.
//   x: (..., in) -> (..., out)
class SoftsignLayer : public sg::nn::Module {
 public:
  SoftsignLayer(int64_t in, int64_t out) {
    linear = register_module("linear", std::make_shared<sg::nn::Linear>(in, out));
    gain = register_parameter("gain", sg::full({out}, 2.0));
  }
  sg::Tensor forward(const sg::Tensor& x) const { return softsign(linear->forward(x)) * gain; }
  std::shared_ptr<sg::nn::Linear> linear;
  sg::Tensor gain;
};

int run() {
  sg::Tensor w = sg::randn({3, 2}).set_requires_grad();
  sg::Tensor x = sg::ones({4, 3});
  sg::Tensor loss = sg::sum(sg::matmul(x, w));
  sg::backward(loss);
  // d sum(x w) / dw = x^T 1 = 4 everywhere.
  for (float g : w.grad().to_vector<float>())
    if (std::fabs(g - 4.0f) > 1e-5f) {
      std::cerr << "unexpected gradient " << g << "\n";
      return 1;
    }
  std::cout << "consumer ok: loss " << loss.item<double>() << ", BLIS kernels " << sg::blis_kernels()
            << "\n";

  auto op_fn = [](const std::vector<sg::Tensor>& in) { return softsign(in[0]); };
  const sg::GradcheckResult op = sg::gradcheck(op_fn, {sg::randn({3, 4})}, {.name = "softsign"});
  SoftsignLayer layer(3, 2);
  auto layer_fn = [&](const std::vector<sg::Tensor>& in) { return layer.forward(in[0]); };
  const sg::GradcheckResult module =
      sg::nn::gradcheck_module(layer, layer_fn, {sg::randn({4, 3})}, {.name = "SoftsignLayer"});
  std::cout << op << "\n" << module << "\n";
  return op && module && module.checked == 12 + 2 + 6 + 2 ? 0 : 1;
}

}  // namespace

// Every exception ends the program with one line and exit status 1.
int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return 1;
  }
}
