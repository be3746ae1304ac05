#pragma once
// Parameter initialisation, PyTorch's defaults, drawn from a Generator
// (sg::default_generator() unless given) so a seed reproduces a model.
#include "core/random.hpp"

namespace sg::nn::init {

// U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's Linear default for weight and
// bias (kaiming_uniform with a = sqrt(5) works out to exactly this bound).
Tensor linear_uniform(const Shape& shape, int64_t fan_in, Generator& gen = default_generator());
// N(mean, std^2).
Tensor normal(const Shape& shape, double mean, double std, Generator& gen = default_generator());

}  // namespace sg::nn::init
