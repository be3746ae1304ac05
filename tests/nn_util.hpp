#pragma once
// Helpers of the layers' tests, on top of test_util.hpp: gradchecks of a
// whole module, random parameters, and the small models they share. Not in
// test_util.hpp, which the tests' precompiled header holds: a change to a
// layer recompiles only the tests that include this.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/tools/gradcheck.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/module.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"

namespace test_util {

// gradcheck_module with the default (tight) tolerances; requires it to pass
// and to have compared every element of every float input and parameter.
inline void check_module(const std::string& name, sg::nn::Module& module, const sg::GradcheckFn& fn,
                         const std::vector<sg::Tensor>& inputs) {
  sg::GradcheckOptions options;
  options.name = name;
  options.max_elements = 1 << 20;  // no sampling: every element
  const sg::GradcheckResult r = sg::nn::gradcheck_module(module, fn, inputs, options);
  INFO(name);
  REQUIRE(r);
  int64_t expected = module.parameter_count();
  for (const sg::Tensor& t : inputs)
    if (sg::is_floating(t.dtype())) expected += t.numel();
  REQUIRE(r.checked == expected);
}

// Replaces every parameter by N(0, 0.5^2) values. LayerNorm starts with
// gains of 1 and biases of 0, where a backward that ignored them would still
// pass.
inline void randomize(sg::nn::Module& module, uint64_t seed) {
  sg::Generator gen(seed);
  sg::nn::StateDict state;
  for (const auto& [name, p] : module.named_parameters())
    state[name] = sg::randn(p.shape(), gen, p.dtype(), 0.0, 0.5);
  module.load_state_dict(state);
}

// The names of a list of named tensors, in order.
inline std::vector<std::string> names_of(const sg::nn::NamedTensors& list) {
  std::vector<std::string> out;
  for (const auto& [name, t] : list) out.push_back(name);
  return out;
}

// A two-block encoder small enough to gradcheck every element.
inline sg::nn::TransformerEncoderOptions tiny_encoder(sg::nn::Positional positional, double dropout = 0,
                                                      bool pre_norm = false) {
  return {.vocab_size = 7,
          .num_hiddens = 8,
          .ffn_num_hiddens = 12,
          .num_heads = 2,
          .num_blocks = 2,
          .dropout = dropout,
          .positional = positional,
          .max_len = 6,
          .max_distance = 2,  // sequences of 4: offsets up to 3 are clipped
          .pre_norm = pre_norm};
}

}  // namespace test_util
