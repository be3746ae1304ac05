// The layers against PyTorch. tests/fixtures/make_fixtures.py builds the same
// layers in PyTorch with Dive into Deep Learning's semantics, fixes weights
// and inputs, and stores inputs, parameters, outputs and the gradients of
// L = sum(output * loss_weight) in small safetensors files (key conventions in
// that script's docstring). Here each case loads its file, builds our layer,
// loads the weights with load_state_dict, runs forward and backward with the
// same L, and compares every output and gradient. PyTorch is never needed.
//
// Tolerance, per element i of a tensor E:
//   |ours_i - torch_i| <= 1e-5 + 1e-4 * |torch_i| + 1e-5 * max_j |torch_j|
// Both sides compute in float32 but sum in different orders (BLIS against
// PyTorch's BLAS, fused kernels against PyTorch's), so results differ by a
// few units in the last place, amplified by the depth of the computation.
// The last term is for elements that are small differences of large terms:
// in the encoder, d W_k of the first block reaches 20 while some of its
// elements are 0.01 after cancellation, and there PyTorch's own float32
// result is 2e-5 away from the float64 one (ours is closer), far outside
// 1e-4 relative of the element itself. A real bug (a wrong scale, a mask off
// by one, a transposed weight) shows up as an error of order 1e-2 of the
// tensor's scale or more.
//
// Set SMALLGRAD_FIXTURES_VERBOSE=1 to print the largest difference of every
// compared tensor.
#include <catch2/catch.hpp>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/reduce.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/basic.hpp"
#include "checkpoint/checkpoint.hpp"
#include "nn/module.hpp"
#include "optim/optim.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"
#include "test_util.hpp"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

using sg::Tensor;

namespace {

struct Fixture {
  std::string name;
  sg::checkpoint::SafetensorsFile file;

  const Tensor& at(const std::string& key) const {
    auto it = file.tensors.find(key);
    if (it == file.tensors.end()) sg::fail("fixture '", name, "' has no tensor '", key, "'");
    return it->second;
  }
  bool has(const std::string& key) const { return file.tensors.count(key) != 0; }
  const std::string& meta(const std::string& key) const {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end()) sg::fail("fixture '", name, "' has no metadata '", key, "'");
    return it->second;
  }
  int64_t integer(const std::string& key) const { return std::stoll(meta(key)); }
  double number(const std::string& key) const { return std::stod(meta(key)); }

  // A fresh copy of input.<key>; float inputs require grad.
  Tensor input(const std::string& key) const {
    Tensor t = sg::clone(at("input." + key));
    if (sg::is_floating(t.dtype())) t.set_requires_grad(true);
    return t;
  }
  // The param.* entries under the module's own names.
  sg::nn::StateDict params() const {
    sg::nn::StateDict out;
    for (const auto& [key, t] : file.tensors)
      if (key.rfind("param.", 0) == 0) out[key.substr(6)] = t;
    return out;
  }
};

Fixture load_fixture(const std::string& name) {
  if (std::getenv("SMALLGRAD_FIXTURES_VERBOSE")) std::cout << name << "\n";
  std::string path = SMALLGRAD_FIXTURES;  // appended step by step: g++ 12 warns falsely on a chain of + here
  path.append("/").append(name).append(".safetensors");
  return {name, sg::checkpoint::load_safetensors(path)};
}

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-4;        // of the element
  double scale_rtol = 1e-5;  // of the tensor's largest magnitude
};

// |actual_i - expected_i| within the tolerance for every i; on failure
// reports the worst element (by how far past its bound it is).
void require_close(const std::string& what, const Tensor& actual, const Tensor& expected, Tolerance tol = {}) {
  INFO(what);
  REQUIRE(actual.defined());
  REQUIRE(actual.shape() == expected.shape());
  const auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
  double scale = 0, max_diff = 0;  // only for the report; the check is worst_excess
  for (double v : e) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, test_util::abs_diff(a[i], e[i]));
  // NaN-proof: a NaN or infinity on either side is an infinite excess.
  const test_util::Worst worst = test_util::worst_excess(
      a, e, [&](size_t i) { return tol.atol + tol.rtol * std::fabs(e[i]) + tol.scale_rtol * scale; });
  if (std::getenv("SMALLGRAD_FIXTURES_VERBOSE"))
    std::cout << "  " << what << " " << actual.shape() << ": max |diff| " << max_diff << ", max |value| "
              << scale << "\n";
  INFO("element " << worst.index << ": ours " << a[worst.index] << ", PyTorch " << e[worst.index] << " (atol " << tol.atol
                  << ", rtol " << tol.rtol << ", scale_rtol " << tol.scale_rtol << " of " << scale << ")");
  REQUIRE(worst.ok());
}

// Backpropagates L = sum(out * loss_weight) and compares the gradient of each
// float input (inputs: name -> the tensor passed in) and of every parameter
// with the fixture's grad.* entries; also checks that none went unchecked.
void require_gradients(const Fixture& f, const Tensor& out, const std::map<std::string, Tensor>& inputs,
                       const sg::nn::Module& module) {
  sg::backward(sg::sum(out * f.at("loss_weight")));
  size_t compared = 0;
  for (const auto& [name, t] : inputs) {
    if (!sg::is_floating(t.dtype())) continue;
    require_close("grad of input " + name, t.grad(), f.at("grad.input." + name));
    ++compared;
  }
  for (const auto& [name, p] : module.named_parameters()) {
    require_close("grad of " + name, p.grad(), f.at("grad.param." + name));
    ++compared;
  }
  size_t in_fixture = 0;
  for (const auto& [key, t] : f.file.tensors) in_fixture += key.rfind("grad.", 0) == 0;
  REQUIRE(compared == in_fixture);
}

void check_attention_fixture(const std::string& name) {
  const Fixture f = load_fixture(name);
  sg::nn::MultiHeadAttention mha(f.integer("num_hiddens"), f.integer("num_heads"), 0.0,
                                 f.integer("bias") != 0, f.integer("causal") != 0);
  mha.load_state_dict(f.params());
  const std::map<std::string, Tensor> in = {
      {"queries", f.input("queries")}, {"keys", f.input("keys")}, {"values", f.input("values")}};
  const Tensor lens = f.has("input.valid_lens") ? f.input("valid_lens") : Tensor();
  Tensor weights;
  const Tensor out = mha.forward(in.at("queries"), in.at("keys"), in.at("values"), lens, nullptr, &weights);
  require_close("output", out, f.at("output"));
  require_close("attention weights", weights, f.at("attention_weights"));
  require_gradients(f, out, in, mha);
}

}  // namespace

TEST_CASE("MultiHeadAttention matches PyTorch with no mask", "[fixtures][attention]") {
  check_attention_fixture("mha_nomask");
}

TEST_CASE("MultiHeadAttention matches PyTorch with (B) valid_lens and biases", "[fixtures][attention]") {
  check_attention_fixture("mha_valid1d");
}

TEST_CASE("MultiHeadAttention matches PyTorch with (B, Q) valid_lens, one of them 0",
          "[fixtures][attention]") {
  check_attention_fixture("mha_valid2d");
}

TEST_CASE("MultiHeadAttention matches PyTorch with a causal mask combined with valid_lens",
          "[fixtures][attention]") {
  check_attention_fixture("mha_causal");
}

TEST_CASE("PositionalEncoding's table and forward with an offset match d2l", "[fixtures][positional]") {
  const Fixture f = load_fixture("positional_encoding");
  sg::nn::PositionalEncoding pe(f.integer("num_hiddens"), 0.0, f.integer("max_len"));
  // Our table is the float64 formula rounded once to float32: within half an
  // ulp of values in [-1, 1].
  require_close("P against the float64 formula", pe.P, f.at("P_float64"), {6e-8, 0, 0});
  // d2l computes the angles in float32, which puts its table up to ~2e-6 off
  // the exact values at the last positions: inside the usual 1e-5.
  require_close("P against d2l's float32 table", pe.P, f.at("P"));
  const std::map<std::string, Tensor> in = {{"X", f.input("X")}};
  const Tensor out = pe.forward(in.at("X"), f.integer("offset"));
  require_close("output", out, f.at("output"));
  require_gradients(f, out, in, pe);
}

TEST_CASE("LayerNorm matches PyTorch", "[fixtures]") {
  const Fixture f = load_fixture("layer_norm");
  sg::nn::LayerNorm ln(f.integer("dim"), f.number("eps"));
  ln.load_state_dict(f.params());
  const std::map<std::string, Tensor> in = {{"X", f.input("X")}};
  const Tensor out = ln.forward(in.at("X"));
  require_close("output", out, f.at("output"));
  require_gradients(f, out, in, ln);
}

TEST_CASE("A 2-block TransformerEncoder matches PyTorch forward and backward", "[fixtures][transformer]") {
  const Fixture f = load_fixture("encoder_2block");
  sg::nn::TransformerEncoderOptions o;
  o.vocab_size = f.integer("vocab_size");
  o.num_hiddens = f.integer("num_hiddens");
  o.ffn_num_hiddens = f.integer("ffn_num_hiddens");
  o.num_heads = f.integer("num_heads");
  o.num_blocks = f.integer("num_blocks");
  o.max_len = f.integer("max_len");
  o.positional = sg::nn::parse_positional(f.meta("positional"));
  o.dropout = 0;
  sg::nn::TransformerEncoder encoder(o);
  encoder.load_state_dict(f.params());
  const Tensor ids = f.input("ids"), lens = f.input("valid_lens");
  std::vector<Tensor> weights;
  const Tensor out = encoder.forward(ids, lens, nullptr, &weights);
  require_close("output", out, f.at("output"));
  REQUIRE(weights.size() == static_cast<size_t>(o.num_blocks));
  for (size_t i = 0; i < weights.size(); ++i)
    require_close("attention weights of block " + std::to_string(i), weights[i],
                  f.at("attention_weights." + std::to_string(i)));
  require_gradients(f, out, {{"ids", ids}, {"valid_lens", lens}}, encoder);
}

TEST_CASE("cross_entropy with ignored positions matches PyTorch", "[fixtures][loss]") {
  const Fixture f = load_fixture("cross_entropy");
  const Tensor logits = f.input("logits");
  const Tensor loss = sg::cross_entropy(logits, f.input("targets"), f.integer("ignore_index"));
  require_close("loss", loss, f.at("output"));
  sg::backward(loss);
  require_close("grad of logits", logits.grad(), f.at("grad.input.logits"));
}

TEST_CASE("Adam and AdamW match PyTorch over three steps", "[fixtures][optim]") {
  const Fixture f = load_fixture("adam_3steps");
  const double lr = f.number("lr"), beta1 = f.number("beta1"), beta2 = f.number("beta2"),
               eps = f.number("eps"), weight_decay = f.number("weight_decay");
  for (const std::string name : {"adam", "adamw"}) {
    INFO(name);
    Tensor p = sg::clone(f.at("param.initial")).set_requires_grad(true);
    std::unique_ptr<sg::optim::Optimizer> opt;
    if (name == "adam")
      opt = std::make_unique<sg::optim::Adam>(std::vector<Tensor>{p},
                                              sg::optim::AdamOptions{lr, beta1, beta2, eps, weight_decay});
    else
      opt = std::make_unique<sg::optim::AdamW>(std::vector<Tensor>{p},
                                               sg::optim::AdamWOptions{lr, beta1, beta2, eps, weight_decay});
    for (int k = 1; k <= 3; ++k) {
      const std::string step = "step" + std::to_string(k);
      p.set_grad(sg::clone(f.at("grad." + step)));
      opt->step();
      // Parameters near 1 after a handful of float32 roundings: a few ulp.
      require_close(name + " after " + step, p, f.at(name + "." + step), {1e-6, 1e-6, 0});
    }
  }
}
