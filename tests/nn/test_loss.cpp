// nn::mse_loss: the value against a naive loop, and its gradient against
// central differences in float64 (both inputs).
#include <catch2/catch.hpp>

#include <vector>

#include "autograd/engine.hpp"
#include "autograd/node.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "core/tensor.hpp"
#include "nn/loss.hpp"
#include "test_util.hpp"

TEST_CASE("mse_loss is the mean of squared differences", "[mse_loss]") {
  const sg::Shape shape{3, 4};
  const auto p = test_util::uniform_values<double>(shape, -3, 3, 1);
  const auto t = test_util::uniform_values<double>(shape, -3, 3, 2);
  double want = 0;
  for (size_t i = 0; i < p.size(); ++i) want += (p[i] - t[i]) * (p[i] - t[i]);
  want /= static_cast<double>(p.size());
  const sg::Tensor loss = sg::nn::mse_loss(test_util::make(p, shape), test_util::make(t, shape));
  test_util::check_values<double>(loss, {}, {want}, 1e-14, 0);
  // float32, and a hand-computed case: ((1-0)^2 + (2-4)^2) / 2 = 2.5
  const sg::Tensor small = sg::nn::mse_loss(sg::tensor({1, 2}), sg::tensor({0, 4}));
  test_util::check_values<float>(small, {}, {2.5}, 0, 0);
  test_util::check_values<float>(sg::nn::mse_loss(sg::tensor({5, -1}), sg::tensor({5, -1})), {}, {0}, 0, 0);
}

TEST_CASE("mse_loss gradients match central differences in float64", "[mse_loss]") {
  auto fn = [](const std::vector<sg::Tensor>& in) { return sg::nn::mse_loss(in[0], in[1]); };
  sg::GradcheckOptions options;
  options.name = "mse_loss";
  const sg::GradcheckResult r = sg::gradcheck(fn, {test_util::normal({4, 5}, 3), test_util::normal({4, 5}, 4)}, options);
  INFO(r);
  REQUIRE(r);
  CHECK(r.checked == 40);
  // d/dp = 2 (p - t) / n, checked against the formula too.
  sg::Tensor p = sg::from_vector(std::vector<double>{1, 2, 3}, {3}, sg::float64).set_requires_grad();
  const sg::Tensor t = sg::from_vector(std::vector<double>{0, 2, 5}, {3}, sg::float64);
  sg::backward(sg::nn::mse_loss(p, t));
  test_util::check_values<double>(p.grad(), {3}, {2.0 / 3, 0, -4.0 / 3}, 1e-15, 0);
}
