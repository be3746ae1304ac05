// nn::GPT (nn/gpt.cpp): nanoGPT's names and layouts against a PyTorch model
// in float64 (tests/fixtures/make_gpt_fixture.py), gradients of every kind
// of positions against central differences, the key/value cache against the
// whole forward, tied weights, GPT-2's initialisation and the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "autograd/engine.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/tools/gradgradcheck.hpp"
#include "checkpoint/safetensors.hpp"
#include "core/kernels.hpp"
#include "nn/gpt.hpp"
#include "seq2seq_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Tensor;
using sg::nn::GPT;
using sg::nn::GPTOptions;
using sg::nn::Positional;

namespace {

// |ours - torch| <= 1e-12 + 1e-10 |torch|: both float64, summed in other orders.
void require_float64_close(const std::string& what, const Tensor& ours, const Tensor& want) {
  INFO(what);
  REQUIRE(ours.defined());
  REQUIRE(ours.shape() == want.shape());
  const auto a = ours.to_vector<double>(), e = want.to_vector<double>();
  const test_util::Worst worst = test_util::worst_excess(a, e, [&](size_t i) { return 1e-12 + 1e-10 * std::fabs(e[i]); });
  INFO("element " << worst.index << ": ours " << a[worst.index] << ", torch " << e[worst.index]);
  REQUIRE(worst.ok());
}

int64_t meta(const sg::checkpoint::SafetensorsFile& f, const std::string& key) { return std::stoll(f.metadata.at(key)); }

GPTOptions small(Positional p, bool bias = true, bool tied = true) {
  return {.vocab_size = 7, .block_size = 6, .n_layer = 2, .n_head = 2, .n_embd = 8, .dropout = 0,
          .bias = bias, .tie_weights = tied, .positional = p};
}

const Positional kKinds[] = {Positional::learned, Positional::sinusoidal, Positional::none, Positional::rotary,
                             Positional::alibi};

}  // namespace

TEST_CASE("GPT matches a PyTorch model with nanoGPT's names: logits, loss, every gradient (float64)",
          "[gpt][fixtures]") {
  for (const char* name : {"gpt_tied_bias", "gpt_untied_nobias"}) {
    INFO(name);
    const auto f = sg::checkpoint::load_safetensors(std::string(SMALLGRAD_FIXTURES) + "/" + name + ".safetensors");
    GPT model({.vocab_size = meta(f, "vocab_size"), .block_size = meta(f, "block_size"), .n_layer = meta(f, "n_layer"),
               .n_head = meta(f, "n_head"), .n_embd = meta(f, "n_embd"), .dropout = 0,
               .bias = f.metadata.at("bias") == "True", .tie_weights = f.metadata.at("tied") == "True"});
    model.to(sg::float64);
    sg::nn::StateDict state;
    for (const auto& [key, t] : f.tensors)
      if (key.rfind("param.", 0) == 0) state[key.substr(6)] = t;
    // Strict both ways: every name of the PyTorch state_dict is ours and the other way round.
    std::set<std::string> theirs, ours;
    for (const auto& [key, t] : state) theirs.insert(key);
    for (const auto& [key, t] : model.state_dict()) ours.insert(key);
    REQUIRE(ours == theirs);
    model.load_state_dict(state);
    const Tensor logits = model.forward(f.tensors.at("input.ids"));
    require_float64_close("logits", logits, f.tensors.at("logits"));
    const Tensor loss = sg::cross_entropy(logits, f.tensors.at("input.targets"));
    require_float64_close("loss", loss, f.tensors.at("loss"));
    sg::backward(loss);
    size_t grads = 0;
    for (const auto& [key, t] : f.tensors) grads += key.rfind("grad.", 0) == 0;
    REQUIRE(model.named_parameters().size() == grads);
    for (const auto& [pname, p] : model.named_parameters())
      require_float64_close("grad of " + pname, p.grad(), f.tensors.at("grad." + pname));
  }
}

TEST_CASE("GPT's gradients match central differences for every kind of positions", "[gpt][gradcheck]") {
  for (Positional kind : kKinds) {
    INFO(sg::nn::positional_name(kind));
    sg::manual_seed(3);
    GPT model(small(kind, kind != Positional::none, kind != Positional::rotary));
    const Tensor ids = test_util::ids({1, 5, 2, 6, 0, 3, 3, 4, 1, 2}, {2, 5});
    const Tensor targets = test_util::ids({5, 2, 6, 0, 3, 4, 1, 2, 0, 6}, {2, 5});
    auto fn = [&](const std::vector<Tensor>&) { return sg::cross_entropy(model.forward(ids), targets); };
    REQUIRE(sg::nn::gradcheck_module(model, fn, {}));
  }
}

TEST_CASE("GPT's second derivatives match central differences (learned and rotary)", "[gpt][gradgradcheck]") {
  for (Positional kind : {Positional::learned, Positional::rotary}) {
    INFO(sg::nn::positional_name(kind));
    sg::manual_seed(4);
    GPT model({.vocab_size = 5, .block_size = 4, .n_layer = 1, .n_head = 2, .n_embd = 4, .dropout = 0,
               .bias = true, .positional = kind});
    model.to(sg::float64);
    const Tensor ids = test_util::ids({1, 4, 2, 0}, {1, 4}), targets = test_util::ids({4, 2, 0, 3}, {1, 4});
    // Second derivatives of the loss in the embedding table and the first
    // block's MLP, through every op of the model.
    const Tensor wte = model.transformer->wte->weight, fc = model.transformer->h->blocks[0]->mlp->c_fc->weight;
    REQUIRE(sg::gradgradcheck_leaves([&] { return sg::cross_entropy(model.forward(ids), targets); }, {wte, fc},
                                     {"transformer.wte.weight", "c_fc.weight"}));
  }
}

TEST_CASE("GPT::forward_cached equals the whole forward for every kind of positions", "[gpt][cache]") {
  for (Positional kind : kKinds) {
    INFO(sg::nn::positional_name(kind));
    sg::manual_seed(5);
    GPT model(small(kind));
    model.to(sg::float64);
    model.eval();
    sg::NoGradGuard no_grad;
    const Tensor ids = test_util::ids({1, 5, 2, 6, 0, 3, 3, 4, 1, 2, 6, 0}, {2, 6});
    const Tensor whole = model.forward(ids);
    sg::nn::GPTCache cache;
    std::vector<Tensor> parts;
    for (auto [from, to] : {std::pair<int64_t, int64_t>{0, 3}, {3, 4}, {4, 6}})
      parts.push_back(model.forward_cached(sg::kernel::slice(ids, 1, from, to), cache));
    REQUIRE(cache.length() == 6);
    REQUIRE(test_util::max_abs_diff(sg::kernel::concat(parts, 1), whole) < 1e-12);
    REQUIRE_THROWS_WITH(model.forward_cached(test_util::ids({1, 1}, {2, 1}), cache),
                        Contains("positions 6 .. 6") && Contains("block_size 6"));
  }
}

TEST_CASE("GPT ties the head to the embedding: one parameter, two state_dict names", "[gpt]") {
  GPT tied(small(Positional::learned)), untied(small(Positional::learned, true, false));
  REQUIRE(tied.lm_head->weight.impl() == tied.transformer->wte->weight.impl());
  REQUIRE(tied.state_dict().count("lm_head.weight") == 1);
  REQUIRE(tied.state_dict().count("transformer.wte.weight") == 1);
  REQUIRE(tied.parameters().size() + 1 == untied.parameters().size());
  REQUIRE(untied.parameter_count() - tied.parameter_count() == 7 * 8);
  std::set<sg::TensorImpl*> distinct;
  for (const Tensor& p : tied.parameters()) distinct.insert(p.impl());
  REQUIRE(distinct.size() == tied.parameters().size());
  // nanoGPT's baby configuration: 0.80 M parameters with the tied head.
  GPT baby({.vocab_size = 73});
  REQUIRE(baby.parameter_count() == 73 * 128 + 64 * 128 + 4 * (12 * 128 * 128 + 2 * 128) + 128);
}

TEST_CASE("GPT initialises as GPT-2: N(0, 0.02), residual projections scaled, no biases by default", "[gpt]") {
  sg::manual_seed(0);
  GPT model({.vocab_size = 50, .block_size = 64, .n_layer = 8, .n_head = 4, .n_embd = 128});
  auto stddev = [](const Tensor& t) {
    const auto v = t.to_vector<float>();
    double s = 0, s2 = 0;
    for (float x : v) s += x, s2 += static_cast<double>(x) * x;
    const double n = static_cast<double>(v.size()), mean = s / n;
    return std::sqrt(s2 / n - mean * mean);
  };
  const auto& block = *model.transformer->h->blocks[0];
  REQUIRE(stddev(block.attn->c_attn->weight) == Approx(0.02).epsilon(0.03));
  REQUIRE(stddev(model.transformer->wte->weight) == Approx(0.02).epsilon(0.05));
  REQUIRE(stddev(block.mlp->c_proj->weight) == Approx(0.02 / std::sqrt(16.0)).epsilon(0.03));
  REQUIRE(stddev(block.attn->c_proj->weight) == Approx(0.02 / std::sqrt(16.0)).epsilon(0.03));
  for (const auto& [name, p] : model.named_parameters()) {
    INFO(name);
    REQUIRE(name.find(".bias") == std::string::npos);
  }
}

TEST_CASE("GPT refuses what it cannot read, naming the shapes", "[gpt][errors]") {
  GPT model(small(Positional::learned));
  REQUIRE_THROWS_WITH(model.forward(test_util::ids({1, 2, 3, 4, 5, 6, 0}, {1, 7})),
                      Contains("GPT::forward") && Contains("block_size 6"));
  REQUIRE_THROWS_WITH(model.forward(sg::zeros({1, 3})), Contains("ids must be int64 (B, T)"));
  REQUIRE_THROWS_WITH(model.forward(test_util::ids({1, 9}, {1, 2})), Contains("9"));
  REQUIRE_THROWS_WITH(GPT({.n_head = 3, .n_embd = 128}), Contains("n_head 3 must divide n_embd 128"));
  REQUIRE_THROWS_WITH(GPT({.positional = Positional::relative}), Contains("'relative'"));
  REQUIRE_THROWS_WITH(GPT({.n_head = 4, .n_embd = 12, .positional = Positional::rotary}), Contains("head dimension must be even"));
}
