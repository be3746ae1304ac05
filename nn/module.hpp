#pragma once
// nn::Module: the base class of every layer. A layer registers its
// parameters and submodules by name in its constructor; the base class then
// gives it named_parameters() with dotted names ("blocks.0.attention.W_q.weight"),
// train()/eval() that reach every submodule, zero_grad(), and a state dict to
// save and load. A new layer is one class:
//
//   struct Scale : sg::nn::Module {
//     sg::Tensor gain;
//     explicit Scale(int64_t d) { gain = register_parameter("gain", sg::ones({d})); }
//     sg::Tensor forward(const sg::Tensor& x) { return x * gain; }
//   };
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tools/gradcheck.hpp"
#include "core/tensor.hpp"

namespace sg::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using StateDict = std::map<std::string, Tensor>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;  // parameters are shared handles: copying would alias them
  Module& operator=(const Module&) = delete;

  // All parameters, this module's first, then each submodule's, in
  // registration order. A parameter registered under two names (tied
  // weights: a language model's head sharing its embedding's table) is
  // listed once, under the first.
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;
  // Every name of every parameter, a tied one under each of its names (so
  // twice): what state_dict() holds and load_state_dict() expects, as
  // PyTorch's state_dict keeps both names of a tied weight.
  NamedTensors named_state() const;
  // Buffers: tensors that belong to the module's state but are not trained
  // (a fixed positional-encoding table).
  NamedTensors named_buffers() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const {
    return children_;
  }
  int64_t parameter_count() const;

  // Training mode (dropout active) for this module and every submodule.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Clears every parameter's gradient (the next backward starts from zero).
  void zero_grad();

  // Name -> parameter (the live handles: changing their values changes the
  // model), every name of a tied parameter included (named_state()).
  StateDict state_dict() const;
  // Copies values in by name. Everything is checked first (missing or
  // unexpected names, shapes, dtypes), and on any mismatch it throws naming
  // the tensor and both shapes, leaving the model unchanged.
  void load_state_dict(const StateDict& state);

  // Converts every float parameter and buffer to dtype, float32 or float64,
  // in place (for gradcheck in float64); int64 buffers stay. int64 throws.
  void to(DType dtype);

 protected:
  // Registers a parameter (marks it requires_grad) and returns the handle to keep.
  Tensor register_parameter(const std::string& name, Tensor value);
  Tensor register_buffer(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    check_new_name(name);
    children_.emplace_back(name, module);
    return module;
  }

 private:
  void check_new_name(const std::string& name) const;
  NamedTensors params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Throws "check_shape: <what> has shape (2, 3), expected (2, 4)" unless equal:
// like d2l's check_shape, for asserting shapes in examples and tests.
void check_shape(const Tensor& t, const Shape& expected, const std::string& what = "tensor");

// gradcheck for a layer: converts `module` to float64 for the check and
// back to its own dtypes afterwards (the values unchanged, the gradients
// cleared), and checks the gradients of fn(inputs) with respect to the
// floating inputs and every parameter. A failing report starts with a line
// per input and parameter, by name: shape, elements checked, failed, worst error.
//
//   sg::nn::Linear layer(3, 2);
//   auto fn = [&](const std::vector<sg::Tensor>& in) { return layer.forward(in[0]); };
//   REQUIRE(sg::nn::gradcheck_module(layer, fn, {sg::randn({4, 3})}));
GradcheckResult gradcheck_module(Module& module, const GradcheckFn& fn,
                                 const std::vector<Tensor>& inputs,
                                 const GradcheckOptions& options = {});

}  // namespace sg::nn
