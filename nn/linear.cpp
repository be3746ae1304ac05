#include "nn/linear.hpp"

#include "autograd/ops.hpp"
#include "nn/init.hpp"

namespace sg::nn {

Linear::Linear(int64_t in, int64_t out, bool use_bias) : in_features(in), out_features(out) {
  if (in <= 0 || out <= 0) fail("Linear: sizes must be positive, got in ", in, ", out ", out);
  weight = register_parameter("weight", init::linear_uniform({out, in}, in));
  if (use_bias) bias = register_parameter("bias", init::linear_uniform({out}, in));
}

Tensor Linear::forward(const Tensor& x) const {
  if (x.dim() == 0 || x.shape().back() != in_features)
    fail("Linear: input of shape ", x.shape(), " does not end in in_features ", in_features,
         " (weight ", weight.shape(), ")");
  return linear(x, weight, bias);
}

}  // namespace sg::nn
