// Built against the installed package only: one include, one target.
#include <smallgrad.hpp>

#include <cmath>
#include <iostream>

int main() {
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
  return 0;
}
