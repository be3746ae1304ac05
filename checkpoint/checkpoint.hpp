#pragma once
// Training checkpoints (sg::checkpoint::save / load): a model, optionally its
// optimizer and a generator, in one safetensors file (checkpoint/safetensors.hpp
// has the format).
#include "checkpoint/safetensors.hpp"
#include "core/random.hpp"
#include "nn/module.hpp"
#include "optim/optim.hpp"

namespace sg::checkpoint {

// A training checkpoint in one safetensors file:
//   the model's state_dict() under its own names ("encoder.0.weight"),
//   the optimizer's state_dict() under "optimizer.<name>" ("optimizer.exp_avg.3"),
//   metadata: the caller's entries, plus "smallgrad.optimizer" (the
//   optimizer's name) and "smallgrad.generator" (the generator's state, four
//   decimal 64-bit words) when those are given.
// Keys starting with "smallgrad." are reserved in the caller's metadata, and
// the model's names must not start with "optimizer.".
void save(const std::string& path, const nn::Module& model, const optim::Optimizer* optimizer = nullptr,
          const Metadata& metadata = {}, const Generator* generator = nullptr);

// Loads what save wrote into model, and into optimizer and
// generator when given (their state must then be in the file; without them
// it is ignored, to load weights alone). Everything is checked before
// anything changes: on any mismatch (a missing or extra tensor, a shape or
// dtype, another optimizer type, a weight holding a NaN or an infinity) it
// throws naming the file, the tensor and both shapes (or the element), and
// model, optimizer and generator stay as they were.
// Returns the file's metadata.
Metadata load(const std::string& path, nn::Module& model, optim::Optimizer* optimizer = nullptr,
              Generator* generator = nullptr);

}  // namespace sg::checkpoint
