// Second derivatives of every op (autograd/ops/) and of the layers built on
// them, by gradgradcheck (autograd/tools/gradgradcheck.hpp) in float64: the
// derivative of each backward, built under create_graph, against central
// differences of the first-order backward. And a planted error: a backward
// that reads a detached input, which gradcheck passes and gradgradcheck
// must catch, naming the input.
#include <catch2/catch.hpp>

#include <string>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/compare.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/dropout.hpp"
#include "autograd/ops/embedding.hpp"
#include "autograd/ops/gelu.hpp"
#include "autograd/ops/head_products.hpp"
#include "autograd/ops/layer_norm.hpp"
#include "autograd/ops/linear.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/rope.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/softmax.hpp"
#include "autograd/ops/softplus.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/tools/gradgradcheck.hpp"
#include "core/kernels.hpp"
#include "nn/attention.hpp"
#include "nn/basic.hpp"
#include "nn/decoder.hpp"
#include "nn/linear.hpp"
#include "nn/transformer.hpp"
#include "nn_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

namespace {

// gradgradcheck with the default tolerances; requires it to pass and to have
// compared every element of every floating input and of the cotangent.
void check_second(const std::string& name, const sg::GradcheckFn& fn, const Inputs& inputs) {
  sg::GradcheckOptions options;
  options.name = name;
  const sg::GradcheckResult r = sg::gradgradcheck(fn, inputs, options);
  INFO(r.report());
  REQUIRE(r);
  int64_t expected = 0;
  for (const Tensor& t : inputs)
    if (sg::is_floating(t.dtype())) expected += t.numel();
  sg::NoGradGuard no_grad;
  Inputs x;
  for (const Tensor& t : inputs) x.push_back(sg::is_floating(t.dtype()) ? sg::kernel::to(t, sg::float64) : t);
  expected += fn(x).numel();  // the cotangent's elements
  REQUIRE(r.checked == expected);
}

// The same for a module: its parameters (in float64) and the inputs.
void check_module_second(const std::string& name, sg::nn::Module& module, const sg::GradcheckFn& fn,
                         const Inputs& inputs) {
  module.to(sg::float64);
  Inputs x, leaves;
  std::vector<std::string> labels;
  for (const auto& [pname, p] : module.named_parameters()) leaves.push_back(p), labels.push_back(pname);
  for (size_t i = 0; i < inputs.size(); ++i) {
    x.push_back(sg::is_floating(inputs[i].dtype()) ? sg::kernel::to(inputs[i], sg::float64).set_requires_grad(true)
                                                   : inputs[i]);
    leaves.push_back(x.back());
    labels.push_back("input " + std::to_string(i));
  }
  sg::GradcheckOptions options;
  options.name = name;
  options.max_outputs = 64;  // the first derivative is large: project it (PyTorch's random projection)
  const sg::GradcheckResult r = sg::gradgradcheck_leaves([&] { return fn(x); }, leaves, labels, options);
  INFO(r.report());
  REQUIRE(r);
  REQUIRE(r.checked > module.parameter_count());
}

Tensor pos_values(const Shape& s, uint64_t seed) { return sg::kernel::affine(sg::kernel::abs(normal(s, seed)), 1.0, 0.5); }

}  // namespace

TEST_CASE("arithmetic ops are twice differentiable", "[autograd][gradgradcheck]") {
  const Tensor a = normal({3, 4}, 1), b = normal({4}, 2), c = pos_values({3, 1}, 3);
  check_second("add, broadcast", [](const Inputs& in) { return in[0] + in[1]; }, {a, b});
  check_second("sub, broadcast", [](const Inputs& in) { return in[0] - in[1]; }, {a, b});
  check_second("mul, broadcast", [](const Inputs& in) { return in[0] * in[1]; }, {a, b});
  check_second("mul, same input", [](const Inputs& in) { return in[0] * in[0]; }, {a});
  check_second("div, broadcast", [](const Inputs& in) { return in[0] / in[1]; }, {a, c});
  check_second("affine and neg", [](const Inputs& in) { return -(in[0] * 3.0 + 1.0); }, {a});
  check_second("scalar over tensor", [](const Inputs& in) { return 2.0 - in[0] / 4.0; }, {a});
}

TEST_CASE("unary ops are twice differentiable", "[autograd][gradgradcheck][a9]") {
  const Tensor x = normal({2, 3}, 4), p = pos_values({2, 3}, 5);
  check_second("exp", [](const Inputs& in) { return sg::exp(in[0]); }, {x});
  check_second("log", [](const Inputs& in) { return sg::log(in[0]); }, {p});
  check_second("sqrt", [](const Inputs& in) { return sg::sqrt(in[0]); }, {p});
  check_second("tanh", [](const Inputs& in) { return sg::tanh(in[0]); }, {x});
  check_second("sigmoid", [](const Inputs& in) { return sg::sigmoid(in[0]); }, {x});
  check_second("relu", [](const Inputs& in) { return sg::relu(in[0]) * in[0]; }, {x});
  check_second("abs", [](const Inputs& in) { return sg::abs(in[0]) * in[0]; }, {x});
  for (double e : {2.0, 3.0, -1.0, 0.5})  // pow 0 has the constant derivative 0: nothing to differentiate
    check_second("pow " + std::to_string(e), [e](const Inputs& in) { return sg::pow(in[0], e); }, {p});
  check_second("gelu exact", [](const Inputs& in) { return sg::gelu(in[0]); }, {x});
  check_second("gelu tanh", [](const Inputs& in) { return sg::gelu(in[0], "tanh"); }, {x});
  check_second("softplus", [](const Inputs& in) { return sg::softplus(in[0], 2.0, 1.5); }, {x * 2.0});
}

TEST_CASE("reductions and shape ops are twice differentiable", "[autograd][gradgradcheck]") {
  const Tensor x = normal({2, 3, 4}, 6);
  // Squared first, so that the first derivative depends on x.
  auto sq = [](const Tensor& t) { return t * t; };
  check_second("sum", [&](const Inputs& in) { return sg::sum(sq(in[0])); }, {x});
  check_second("sum axis", [&](const Inputs& in) { return sg::sum(sq(in[0]), 1, false); }, {x});
  check_second("mean", [&](const Inputs& in) { return sg::mean(sq(in[0])); }, {x});
  check_second("mean axis keepdim", [&](const Inputs& in) { return sg::mean(sq(in[0]), -1, true); }, {x});
  check_second("max axis", [&](const Inputs& in) { return sg::max(sq(in[0]), 1, false); }, {x});
  check_second("max", [&](const Inputs& in) { return sg::max(sq(in[0])); }, {x});
  check_second("reshape", [&](const Inputs& in) { return sg::reshape(sq(in[0]), {6, 4}); }, {x});
  check_second("permute", [&](const Inputs& in) { return sg::permute(sq(in[0]), {2, 0, 1}); }, {x});
  check_second("transpose", [&](const Inputs& in) { return sg::transpose(sq(in[0]), 0, 2); }, {x});
  check_second("slice", [&](const Inputs& in) { return sg::slice(sq(in[0]), 2, 1, 3); }, {x});
  check_second("concat", [&](const Inputs& in) { return sg::concat({sq(in[0]), in[1] * in[0]}, 1); }, {x, normal({2, 3, 4}, 7)});
  check_second("broadcast_to", [&](const Inputs& in) { return sg::broadcast_to(sq(in[0]), {3, 2, 4}); }, {normal({2, 1}, 8)});
  check_second("sum_to", [&](const Inputs& in) { return sg::sum_to(sq(in[0]), {3, 1}); }, {x});
}

TEST_CASE("matrix products are twice differentiable", "[autograd][gradgradcheck]") {
  const Tensor a = normal({2, 3, 4}, 9), b = normal({4, 5}, 10), bt = normal({5, 4}, 11), w = normal({3, 4}, 12);
  check_second("matmul, batch and 2-D weight", [](const Inputs& in) { return sg::matmul(in[0], in[1]); }, {a, b});
  check_second("matmul, transposed b", [](const Inputs& in) { return sg::matmul(in[0], in[1], false, true); }, {a, bt});
  check_second("matmul, transposed a", [](const Inputs& in) { return sg::matmul(in[0], in[1], true, false); },
               {normal({4, 3}, 13), b});
  check_second("linear with bias", [](const Inputs& in) { return sg::linear(in[0], in[1], in[2]); }, {a, w, normal({3}, 14)});
  check_second("linear without bias", [](const Inputs& in) { return sg::linear(in[0], in[1]); }, {a, w});
  const Tensor q = normal({2, 3, 4}, 15), k = normal({2, 2, 4}, 16), att = normal({4, 3, 2}, 17);
  check_second("head_scores", [](const Inputs& in) { return sg::head_scores(in[0], in[1], 2); }, {q, k});
  check_second("head_pool", [](const Inputs& in) { return sg::head_pool(in[0], in[1], 2); }, {att, k});
}

TEST_CASE("softmax family is twice differentiable", "[autograd][gradgradcheck][a9]") {
  const Tensor x = normal({2, 3, 4}, 18);
  check_second("softmax", [](const Inputs& in) { return sg::softmax(in[0]); }, {x});
  check_second("log_softmax", [](const Inputs& in) { return sg::log_softmax(in[0]); }, {x});
  check_second("masked_softmax, no mask, scale", [](const Inputs& in) { return sg::masked_softmax(in[0], Tensor(), false, 0.5); }, {x});
  check_second("masked_softmax, (B) lens", [](const Inputs& in) { return sg::masked_softmax(in[0], ids({2, 4}, {2})); }, {x});
  check_second("masked_softmax, (B, Q) lens with a 0",
               [](const Inputs& in) { return sg::masked_softmax(in[0], ids({1, 0, 4, 3, 2, 1}, {2, 3})); }, {x});
  check_second("masked_softmax, causal", [](const Inputs& in) { return sg::masked_softmax(in[0], ids({4, 1}, {2}), true, 0.7); }, {x});
}

TEST_CASE("embedding, rope, layer_norm, dropout and cross_entropy are twice differentiable", "[autograd][gradgradcheck]") {
  const Tensor w = normal({5, 3}, 19), id = ids({1, 3, 1, 0}, {2, 2});
  check_second("embedding, an id used twice", [&](const Inputs& in) { return sg::embedding(in[0] * in[0], id); }, {w});
  const Tensor x = normal({2, 3, 4}, 20);
  check_second("rope, offset 2", [](const Inputs& in) { return sg::rope(in[0] * in[0], 2); }, {x});
  check_second("layer_norm", [](const Inputs& in) { return sg::layer_norm(in[0], in[1], in[2]); },
               {x, normal({4}, 21), normal({4}, 22)});
  check_second("dropout with a fixed key", [](const Inputs& in) { return sg::dropout(in[0] * in[0], 0.4, true, sg::DropoutKey{7}); }, {x});
  check_second("cross_entropy, an ignored row",
               [](const Inputs& in) { return sg::cross_entropy(in[0], ids({1, -100, 3, 0, 2, 2}, {2, 3})); }, {x});
}

TEST_CASE("comparisons have no gradient, and a product with one is twice differentiable", "[autograd][gradgradcheck]") {
  const Tensor x = normal({3, 4}, 23);
  check_second("x^3 where x > 0", [](const Inputs& in) { return in[0] * in[0] * in[0] * sg::gt(in[0], 0.0); }, {x});
}

TEST_CASE("Linear, LayerNorm, MultiHeadAttention, the encoder and the decoder block are twice differentiable",
          "[autograd][gradgradcheck][nn]") {
  sg::manual_seed(30);
  SECTION("Linear") {
    sg::nn::Linear layer(4, 3);
    randomize(layer, 31);
    check_module_second("Linear", layer, [&](const Inputs& in) { return layer.forward(sg::tanh(in[0])); }, {normal({2, 4}, 32)});
  }
  SECTION("LayerNorm") {
    sg::nn::LayerNorm norm(4);
    randomize(norm, 33);
    check_module_second("LayerNorm", norm, [&](const Inputs& in) { return norm.forward(in[0]); }, {normal({2, 3, 4}, 34)});
  }
  const Tensor q = normal({2, 3, 8}, 35), kv = normal({2, 4, 8}, 36);
  using sg::nn::Positional;
  struct Case {
    const char* name;
    sg::nn::AttentionPositions positions;
    Tensor lens;
    bool causal;
  };
  const std::vector<Case> cases = {
      {"no positions, (B) valid_lens", {}, ids({2, 4}, {2}), false},
      {"no positions, (B, Q) valid_lens with a 0, causal", {}, ids({1, 0, 4, 3, 2, 1}, {2, 3}), true},
      {"relative with values, (B) valid_lens", {.kind = Positional::relative, .max_distance = 1, .relative_values = true},
       ids({3, 4}, {2}), false},
      {"rotary, (B, Q) valid_lens with a 0", {.kind = Positional::rotary, .relative_values = false},
       ids({1, 0, 4, 3, 2, 1}, {2, 3}), false},
      {"alibi, causal", {.kind = Positional::alibi}, ids({4, 2}, {2}), true},
  };
  for (const Case& c : cases) {
    SECTION(std::string("MultiHeadAttention, ") + c.name) {
      sg::nn::MultiHeadAttention mha(8, 2, 0.0, true, c.causal, c.positions);
      randomize(mha, 37);
      check_module_second(std::string("MultiHeadAttention, ") + c.name, mha,
                          [&](const Inputs& in) { return mha.forward(in[0], in[1], in[1], c.lens); }, {q, kv});
    }
  }
  SECTION("encoder block") {
    sg::nn::TransformerEncoderBlock block(8, 6, 2, 0.0);
    randomize(block, 38);
    check_module_second("TransformerEncoderBlock", block,
                        [&](const Inputs& in) { return block.forward(in[0], ids({2, 3}, {2})); }, {q});
  }
  SECTION("decoder block") {  // masked self-attention, cross-attention with the source's lengths, FFN
    sg::nn::TransformerDecoderBlock block(8, 6, 2, 0.0);
    randomize(block, 39);
    check_module_second("TransformerDecoderBlock", block,
                        [&](const Inputs& in) { return block.forward(in[0], in[1], ids({4, 2}, {2})); }, {q, kv});
  }
}

TEST_CASE("gradgradcheck catches a backward whose own derivative is wrong", "[autograd][gradgradcheck]") {
  // cube(x) = x^3 with the right first derivative 3 x^2 g, computed from a
  // detached x: gradcheck passes, but the derivative of the backward in x is 0.
  auto cube = [](const Tensor& x) {
    return sg::record("cube", sg::kernel::pow(x, 3), {x}, [x](const Tensor& g) -> sg::Grads {
      const Tensor d = x.detach();  // the planted error: no history
      return {g * (d * d) * 3.0};
    });
  };
  const Tensor x = normal({4}, 40);
  const sg::GradcheckFn fn = [&](const Inputs& in) { return cube(in[0]); };
  REQUIRE(sg::gradcheck(fn, {x}));
  const sg::GradcheckResult r = sg::gradgradcheck(fn, {x}, {.name = "cube"});
  REQUIRE_FALSE(r);
  REQUIRE(r.per_input[0].failed == 4);  // every element of x
  REQUIRE(r.per_input[1].failed == 0);  // the cotangent is right
  REQUIRE_THAT(r.report(), Contains("first derivative of cube") && Contains("FAIL input 0") && Contains("ok   grad_output"));

  // A composed form (create_graph) that disagrees with the kernels' form
  // (first order): caught in x and in the cotangent.
  auto two_forms = [](const Tensor& x) {
    return sg::record("two_forms", sg::kernel::pow(x, 3), {x}, [x](const Tensor& g) -> sg::Grads {
      if (sg::grad_enabled()) return {g * x * x * 2.0};  // wrong: 2 x^2
      return {sg::kernel::mul(g, sg::kernel::affine(sg::kernel::mul(x, x), 3.0, 0))};
    });
  };
  const sg::GradcheckFn fn2 = [&](const Inputs& in) { return two_forms(in[0]); };
  REQUIRE(sg::gradcheck(fn2, {x}));
  const sg::GradcheckResult r2 = sg::gradgradcheck(fn2, {x}, {.name = "two_forms"});
  REQUIRE_FALSE(r2);
  REQUIRE(r2.per_input[0].failed == 4);
  REQUIRE(r2.per_input[1].failed == 4);
}
