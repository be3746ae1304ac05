#pragma once
// Model files and training state (checkpoint/safetensors.hpp has the format):
//   save / load                           a model's weights, in a file any
//                                         safetensors reader loads (with no
//                                         optimizer: the weights alone)
//   save_training_state / load_training_state
//                                         an optimizer's state and a generator,
//                                         in a file of their own
// A program keeps a model that other tools load as model.safetensors (the
// weights under the model's own names) and what resuming needs beside it.
// save and load also take an optimizer and a generator, for a training
// checkpoint in one file (the layout of older smallgrad files).
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

// The training state alone: the optimizer's state_dict() under its own
// names ("exp_avg.3"), metadata: the caller's entries (keys starting with
// "smallgrad." are reserved), "smallgrad.optimizer" (its name) and
// "smallgrad.generator" when a generator is given. load_training_state checks
// everything (the optimizer's name, every buffer's name and shape, the
// generator's state) before anything changes, and returns the metadata.
void save_training_state(const std::string& path, const optim::Optimizer& optimizer,
                         const Generator* generator = nullptr, const Metadata& metadata = {});
Metadata load_training_state(const std::string& path, optim::Optimizer& optimizer, Generator* generator = nullptr);

}  // namespace sg::checkpoint
