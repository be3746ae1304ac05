#include "nn/linear.hpp"

#include "autograd/ops/linear.hpp"
#include "nn/init.hpp"

namespace sg::nn {

Linear::Linear(int64_t in, int64_t out, bool use_bias) : in_features(in), out_features(out) {
  if (in <= 0 || out <= 0) fail("Linear: sizes must be positive, got in ", in, ", out ", out);
  weight = register_parameter("weight", init::linear_uniform({out, in}, in));
  if (use_bias) bias = register_parameter("bias", init::linear_uniform({out}, in));
}

Tensor Linear::forward(const Tensor& x) const {
  // The op checks the shapes; its message gets the layer's name in front.
  try {
    return linear(x, weight, bias);
  } catch (const Error& e) {
    fail("Linear(", in_features, " -> ", out_features, "): ", e.what());
  }
}

}  // namespace sg::nn
