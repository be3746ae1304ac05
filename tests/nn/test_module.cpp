// nn/module.cpp: what Module gives every layer: dotted parameter names in
// registration order, train()/eval() reaching submodules, zero_grad, the
// state dict round trip and its errors, check_shape.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/reduce.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"
#include "nn_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

namespace {

// Every module in the tree under m, m included.
void visit(sg::nn::Module& m, const std::function<void(sg::nn::Module&)>& f) {
  f(m);
  for (auto& [name, child] : m.named_children()) visit(*child, f);
}

}  // namespace

TEST_CASE("TransformerEncoder gradchecks with each positional encoding at dropout 0",
          "[nn][gradcheck][transformer]") {
  using sg::nn::Positional;
  for (Positional kind : {Positional::sinusoidal, Positional::learned, Positional::none}) {
    SECTION(sg::nn::positional_name(kind)) {
      sg::manual_seed(60);
      sg::nn::TransformerEncoder encoder(tiny_encoder(kind));
      randomize(encoder, 61);
      auto fn = [&](const Inputs& in) { return encoder.forward(in[0], in[1]); };
      check_module(std::string("TransformerEncoder, ") + sg::nn::positional_name(kind), encoder, fn,
                   {ids({1, 3, 3, 6, 0, 2, 5, 1}, {2, 4}), ids({4, 2}, {2})});
    }
  }
}

// ---------------------------------------------------------------------------
// Module: names, counts, modes, gradients, state dicts
// ---------------------------------------------------------------------------

TEST_CASE("named_parameters gives dotted names in registration order", "[nn][module]") {
  sg::nn::TransformerEncoder learned(tiny_encoder(sg::nn::Positional::learned));
  std::vector<std::string> expected = {"embedding.weight", "pos_encoding.P"};
  for (std::string b : {"blocks.0.", "blocks.1."})
    for (std::string n : {"attention.W_q.weight", "attention.W_k.weight", "attention.W_v.weight",
                          "attention.W_o.weight", "addnorm1.ln.weight", "addnorm1.ln.bias",
                          "ffn.dense1.weight", "ffn.dense1.bias", "ffn.dense2.weight", "ffn.dense2.bias",
                          "addnorm2.ln.weight", "addnorm2.ln.bias"})
      expected.push_back(b + n);
  REQUIRE(names_of(learned.named_parameters()) == expected);
  REQUIRE(learned.named_buffers().empty());

  // h = 8, ffn 12, vocab 7, max_len 6: per block 4h^2 + 2(2h) + (h*12 + 12) + (12*h + h).
  const int64_t per_block = 4 * 64 + 2 * 16 + (96 + 12) + (96 + 8);
  REQUIRE(learned.parameter_count() == 7 * 8 + 6 * 8 + 2 * per_block);
  REQUIRE(learned.parameters().size() == expected.size());

  // The sinusoidal table is a buffer: not a parameter, not in the state dict.
  sg::nn::TransformerEncoder fixed(tiny_encoder(sg::nn::Positional::sinusoidal));
  REQUIRE(fixed.parameter_count() == 7 * 8 + 2 * per_block);
  REQUIRE(names_of(fixed.named_buffers()) == std::vector<std::string>{"pos_encoding.P"});
  REQUIRE(fixed.state_dict().count("pos_encoding.P") == 0);
  REQUIRE(fixed.state_dict().size() == expected.size() - 1);
}

TEST_CASE("register_parameter, register_buffer and register_module refuse an empty or repeated name", "[nn][module]") {
  struct Twice : sg::nn::Module {
    explicit Twice(const std::string& second) {
      register_parameter("w", sg::zeros({2}));
      register_module(second, std::make_shared<sg::nn::Linear>(2, 2));
    }
  };
  REQUIRE_THROWS_WITH(Twice("w"), Contains("the name 'w' is already registered"));
  REQUIRE_THROWS_WITH(Twice(""), Contains("needs a name"));
  REQUIRE_NOTHROW(Twice("lin"));
}

TEST_CASE("train() and eval() reach every submodule and switch dropout", "[nn][module]") {
  sg::manual_seed(70);
  sg::nn::TransformerEncoder encoder(tiny_encoder(sg::nn::Positional::sinusoidal, 0.5));
  const Tensor x = ids({1, 3, 3, 6, 0, 2, 5, 1}, {2, 4});
  int modules = 0;
  visit(encoder, [&](sg::nn::Module& m) {
    ++modules;
    REQUIRE(m.is_training());
  });
  REQUIRE(modules > 20);  // the walk really goes down to the Linear and Dropout leaves

  encoder.eval();
  visit(encoder, [](sg::nn::Module& m) { REQUIRE_FALSE(m.is_training()); });
  const auto a = encoder.forward(x).to_vector<float>(), b = encoder.forward(x).to_vector<float>();
  REQUIRE(a == b);  // no dropout: deterministic

  encoder.train();
  visit(encoder, [](sg::nn::Module& m) { REQUIRE(m.is_training()); });
  REQUIRE(encoder.forward(x).to_vector<float>() != encoder.forward(x).to_vector<float>());
}

TEST_CASE("zero_grad clears every parameter's gradient, and backward accumulates", "[nn][module]") {
  sg::manual_seed(72);
  sg::nn::PositionWiseFFN ffn(3, 4, 2);
  const Tensor x = sg::randn({5, 3});
  sg::backward(sg::sum(ffn.forward(x)));
  const auto first = ffn.dense1->weight.grad().to_vector<float>();
  sg::backward(sg::sum(ffn.forward(x)));
  const auto twice = ffn.dense1->weight.grad().to_vector<float>();
  for (size_t i = 0; i < first.size(); ++i) REQUIRE(twice[i] == Approx(2 * first[i]));
  ffn.zero_grad();
  for (const Tensor& p : ffn.parameters()) REQUIRE_FALSE(p.grad().defined());
}

TEST_CASE("state_dict and load_state_dict round trip", "[nn][module]") {
  sg::manual_seed(80);
  sg::nn::MultiHeadAttention a(8, 2, 0.0, true);
  sg::manual_seed(81);
  sg::nn::MultiHeadAttention b(8, 2, 0.0, true);
  const Tensor x = sg::randn({2, 3, 8});
  REQUIRE(a.forward(x, x, x).to_vector<float>() != b.forward(x, x, x).to_vector<float>());

  b.load_state_dict(a.state_dict());
  REQUIRE(a.forward(x, x, x).to_vector<float>() == b.forward(x, x, x).to_vector<float>());

  // state_dict() hands out the live parameters; loading copies their values.
  sg::nn::StateDict live = a.state_dict();
  REQUIRE(live.at("W_q.weight").is_same(a.W_q->weight));
  sg::kernel::fill_(live.at("W_q.weight"), 0.5);
  REQUIRE(a.W_q->weight.to_vector<float>()[0] == 0.5f);
  REQUIRE(b.W_q->weight.to_vector<float>()[0] != 0.5f);
}

TEST_CASE("load_state_dict names what is wrong and leaves the model unchanged", "[nn][module]") {
  sg::manual_seed(82);
  sg::nn::Linear model(3, 2);
  sg::manual_seed(83);
  sg::nn::Linear other(3, 2);
  const auto before = model.weight.to_vector<float>();
  const auto before_bias = model.bias.to_vector<float>();
  // Each bad state also holds good values from `other`: none may be copied in.
  sg::nn::StateDict missing = {{"weight", other.weight}};
  REQUIRE_THROWS_WITH(model.load_state_dict(missing), "load_state_dict: missing parameter 'bias' of shape (2)");

  sg::nn::StateDict extra = other.state_dict();
  extra["scale"] = sg::ones({4});
  REQUIRE_THROWS_WITH(model.load_state_dict(extra), "load_state_dict: unexpected entry 'scale' of shape (4)");

  sg::nn::StateDict wrong_shape = other.state_dict();
  wrong_shape["weight"] = sg::zeros({3, 2});
  REQUIRE_THROWS_WITH(model.load_state_dict(wrong_shape),
                      "load_state_dict: 'weight' has shape (3, 2) in the state, (2, 3) in the model");

  sg::nn::StateDict wrong_dtype = other.state_dict();
  wrong_dtype["bias"] = sg::zeros({2}, sg::float64);
  REQUIRE_THROWS_WITH(model.load_state_dict(wrong_dtype),
                      Contains("'bias' has dtype float64 in the state, float32 in the model"));

  REQUIRE(model.weight.to_vector<float>() == before);
  REQUIRE(model.bias.to_vector<float>() == before_bias);
}

TEST_CASE("check_shape names the tensor and both shapes", "[nn][module]") {
  const Tensor t = sg::zeros({2, 3});
  REQUIRE_NOTHROW(sg::nn::check_shape(t, {2, 3}));
  REQUIRE_THROWS_WITH(sg::nn::check_shape(t, {2, 4}, "output"),
                      "check_shape: output has shape (2, 3), expected (2, 4)");
}

TEST_CASE("Module::to refuses int64 and leaves the parameters as they were", "[nn]") {
  sg::nn::Linear layer(3, 2);
  const std::vector<float> before = layer.parameters()[0].to_vector<float>();
  REQUIRE_THROWS_WITH(layer.to(sg::int64), Contains("Module::to: cannot convert the parameters to int64") &&
                                               Contains("float32 or float64"));
  for (const Tensor& p : layer.parameters()) {
    CHECK(p.dtype() == sg::float32);
    CHECK(p.requires_grad());
  }
  CHECK(layer.parameters()[0].to_vector<float>() == before);
  layer.to(sg::float64);  // the float dtypes still convert
  for (const Tensor& p : layer.parameters()) CHECK(p.dtype() == sg::float64);
}
