#include "nn/init.hpp"

#include <cmath>

namespace sg::nn::init {

Tensor linear_uniform(const Shape& shape, int64_t fan_in, Generator& gen) {
  if (fan_in <= 0) fail("linear_uniform: fan_in must be positive, got ", fan_in, " for shape ", shape);
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return rand(shape, gen, float32, -bound, bound);
}

Tensor normal(const Shape& shape, double mean, double std, Generator& gen) {
  return randn(shape, gen, float32, mean, std);
}

}  // namespace sg::nn::init
