// Every layer gradchecked in float64 through nn::gradcheck_module (inputs
// and every parameter, by name), at sizes small enough to check every
// element; then what Module gives every layer: dotted parameter names in
// registration order, train()/eval() reaching submodules, zero_grad, the
// state dict round trip and its errors, and each layer's error messages.
// Values against PyTorch are in test_nn_fixtures.cpp.
#include <catch2/catch.hpp>

#include <smallgrad.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using test_util::check_module;
using test_util::normal;
using test_util::randomize;

namespace {


Tensor ids(std::vector<int64_t> v, const Shape& shape) { return sg::from_vector(v, shape); }

// Every module in the tree under m, m included.
void visit(sg::nn::Module& m, const std::function<void(sg::nn::Module&)>& f) {
  f(m);
  for (auto& [name, child] : m.named_children()) visit(*child, f);
}

std::vector<std::string> names_of(const sg::nn::NamedTensors& list) {
  std::vector<std::string> out;
  for (const auto& [name, t] : list) out.push_back(name);
  return out;
}

sg::nn::TransformerEncoderOptions tiny_encoder(sg::nn::Positional positional, double dropout = 0) {
  sg::nn::TransformerEncoderOptions o;
  o.vocab_size = 7;
  o.num_hiddens = 8;
  o.ffn_num_hiddens = 12;
  o.num_heads = 2;
  o.num_blocks = 2;
  o.dropout = dropout;
  o.positional = positional;
  o.max_len = 6;
  return o;
}

}  // namespace

// ---------------------------------------------------------------------------
// gradcheck, layer by layer
// ---------------------------------------------------------------------------

TEST_CASE("Linear gradchecks with and without bias", "[nn][gradcheck]") {
  sg::manual_seed(1);
  for (bool bias : {true, false}) {
    sg::nn::Linear layer(3, 4, bias);
    REQUIRE(names_of(layer.named_parameters()) ==
            (bias ? std::vector<std::string>{"weight", "bias"} : std::vector<std::string>{"weight"}));
    auto fn = [&](const Inputs& in) { return layer.forward(in[0]); };
    // A 3-D input: the 2-D weight broadcasts over the batch axis.
    check_module(bias ? "Linear" : "Linear (no bias)", layer, fn, {normal({2, 5, 3}, 2)});
  }
}

TEST_CASE("LayerNorm gradchecks with non-trivial gain and bias", "[nn][gradcheck]") {
  sg::nn::LayerNorm ln(5);
  randomize(ln, 3);
  auto fn = [&](const Inputs& in) { return ln.forward(in[0]); };
  check_module("LayerNorm", ln, fn, {normal({2, 3, 5}, 4)});
}

TEST_CASE("Embedding gradchecks, with an id used twice", "[nn][gradcheck]") {
  sg::manual_seed(5);
  sg::nn::Embedding emb(6, 4);
  auto fn = [&](const Inputs& in) { return emb.forward(in[0]); };
  check_module("Embedding", emb, fn, {ids({1, 4, 1, 0, 5, 4}, {2, 3})});
}

TEST_CASE("MultiHeadAttention gradchecks with every kind of mask", "[nn][gradcheck][attention]") {
  // Q = 3 queries against K = 4 keys, 2 heads of 4.
  const Tensor q = normal({2, 3, 8}, 10), k = normal({2, 4, 8}, 11), v = normal({2, 4, 8}, 12);
  struct Case {
    const char* name;
    Tensor lens;
    bool causal, bias;
  };
  const std::vector<Case> cases = {
      {"no mask", Tensor(), false, false},
      {"no mask, with biases", Tensor(), false, true},
      {"(B) valid_lens", ids({2, 4}, {2}), false, false},
      {"(B, Q) valid_lens with a 0", ids({1, 0, 4, 3, 2, 1}, {2, 3}), false, false},
      {"causal", Tensor(), true, false},
      {"causal and (B) valid_lens", ids({4, 1}, {2}), true, false},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      sg::manual_seed(13);
      sg::nn::MultiHeadAttention mha(8, 2, 0.0, c.bias, c.causal);
      auto fn = [&](const Inputs& in) { return mha.forward(in[0], in[1], in[2], c.lens); };
      check_module(std::string("MultiHeadAttention, ") + c.name, mha, fn, {q, k, v});
    }
  }
}

TEST_CASE("PositionalEncoding gradchecks, with and without an offset", "[nn][gradcheck][positional]") {
  for (int64_t offset : {0, 5}) {
    sg::nn::PositionalEncoding pe(8, 0.0, 10);
    auto fn = [&](const Inputs& in) { return pe.forward(in[0], offset); };
    check_module("PositionalEncoding, offset " + std::to_string(offset), pe, fn, {normal({2, 3, 8}, 20)});
    // The buffer P converts with the module for the check (else fn would not
    // compute in float64 and the check would refuse it) and comes back after.
    REQUIRE(pe.P.dtype() == sg::float32);
  }
}

TEST_CASE("LearnedPositionalEncoding gradchecks, with and without an offset", "[nn][gradcheck][positional]") {
  sg::manual_seed(21);
  for (int64_t offset : {0, 4}) {
    // Rows of P outside [offset, offset + 3) must get exactly zero gradient,
    // and gradcheck compares them too.
    sg::nn::LearnedPositionalEncoding pe(4, 0.0, 8);
    auto fn = [&](const Inputs& in) { return pe.forward(in[0], offset); };
    check_module("LearnedPositionalEncoding, offset " + std::to_string(offset), pe, fn,
                 {normal({2, 3, 4}, 22)});
  }
}

TEST_CASE("PositionWiseFFN gradchecks", "[nn][gradcheck][transformer]") {
  sg::manual_seed(30);
  sg::nn::PositionWiseFFN ffn(6, 10, 5);
  auto fn = [&](const Inputs& in) { return ffn.forward(in[0]); };
  check_module("PositionWiseFFN", ffn, fn, {normal({2, 3, 6}, 31)});
}

TEST_CASE("AddNorm gradchecks at dropout 0", "[nn][gradcheck][transformer]") {
  sg::nn::AddNorm addnorm(6, 0.0);
  randomize(addnorm, 40);
  auto fn = [&](const Inputs& in) { return addnorm.forward(in[0], in[1]); };
  check_module("AddNorm", addnorm, fn, {normal({2, 3, 6}, 41), normal({2, 3, 6}, 42)});
}

TEST_CASE("TransformerEncoderBlock gradchecks with valid_lens", "[nn][gradcheck][transformer]") {
  sg::manual_seed(50);
  sg::nn::TransformerEncoderBlock block(8, 12, 2, 0.0);
  randomize(block, 51);
  auto fn = [&](const Inputs& in) { return block.forward(in[0], in[1]); };
  check_module("TransformerEncoderBlock", block, fn, {normal({2, 4, 8}, 52), ids({3, 4}, {2})});
}

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

TEST_CASE("Dropout zeroes and rescales in training and is the identity in eval", "[nn][module]") {
  sg::manual_seed(71);
  sg::nn::Dropout drop(0.25);
  const Tensor x = sg::ones({1000});
  const auto y = drop.forward(x).to_vector<float>();
  int zeros = 0;
  for (float v : y) {
    REQUIRE((v == 0.0f || v == Approx(1 / 0.75)));
    zeros += v == 0.0f;
  }
  REQUIRE(zeros > 180);  // about 250 expected
  REQUIRE(zeros < 320);
  drop.eval();
  REQUIRE(drop.forward(x).is_same(x));
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

// ---------------------------------------------------------------------------
// attention weights and layer errors
// ---------------------------------------------------------------------------

TEST_CASE("attention_weights are (B, heads, Q, K) with masked keys exactly zero", "[nn][attention]") {
  sg::manual_seed(90);
  const int64_t batch = 2, heads = 2, nq = 3, nk = 4;
  sg::nn::MultiHeadAttention mha(8, heads, 0.0);
  REQUIRE_FALSE(mha.attention_weights().defined());
  const Tensor q = sg::randn({batch, nq, 8}), kv = sg::randn({batch, nk, 8});

  // (B, Q) lengths, one of them 0; then the same run with causal on top.
  const std::vector<int64_t> lens = {1, 0, 4, 3, 2, 4};
  for (bool causal : {false, true}) {
    mha.causal = causal;
    mha.forward(q, kv, kv, ids(lens, {batch, nq}));
    const Tensor w = mha.attention_weights();
    sg::nn::check_shape(w, {batch, heads, nq, nk}, "attention weights");
    const auto p = w.to_vector<float>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < nq; ++i) {
          int64_t len = lens[static_cast<size_t>(b * nq + i)];
          if (causal) len = std::min(len, i + 1);
          double total = 0;
          for (int64_t j = 0; j < nk; ++j) {
            const float pij = p[static_cast<size_t>(((b * heads + h) * nq + i) * nk + j)];
            INFO("b " << b << " h " << h << " query " << i << " key " << j << " causal " << causal);
            if (len == 0) REQUIRE(pij == Approx(1.0 / nk));  // d2l's -1e6: uniform, not NaN
            else if (j >= len) REQUIRE(pij == 0.0f);
            else REQUIRE(pij > 0.0f);
            total += pij;
          }
          REQUIRE(total == Approx(1.0));
        }
  }
}

TEST_CASE("MultiHeadAttention rejects bad sizes and valid_lens", "[nn][attention]") {
  REQUIRE_THROWS_WITH(sg::nn::MultiHeadAttention(10, 3, 0.0),
                      "MultiHeadAttention: num_heads 3 must divide num_hiddens 10");
  sg::nn::MultiHeadAttention mha(8, 2, 0.0);
  const Tensor q = sg::zeros({2, 3, 8}), kv = sg::zeros({2, 4, 8});
  REQUIRE_THROWS_WITH(mha.forward(q, kv, kv, ids({1, 2, 3}, {3})),
                      Contains("valid_lens must be int64 (2) or (2, 3), got int64 (3)"));
  REQUIRE_THROWS_WITH(mha.forward(q, kv, kv, ids({1, 5}, {2})), Contains("valid length 5") && Contains("[0, 4]"));
  REQUIRE_THROWS_WITH(mha.forward(q, sg::zeros({2, 4, 6}), kv), Contains("keys (2, 4, 6)"));
}

TEST_CASE("Positional encodings reject odd widths and positions past max_len", "[nn][positional]") {
  REQUIRE_THROWS_WITH(sg::nn::PositionalEncoding(7, 0.0),
                      Contains("PositionalEncoding: num_hiddens must be positive and even") && Contains("got 7"));
  sg::nn::PositionalEncoding pe(8, 0.0, 10);
  const Tensor x = sg::zeros({2, 4, 8});
  REQUIRE_NOTHROW(pe.forward(x, 6));  // positions 6..9: the last ones there are
  REQUIRE_THROWS_WITH(pe.forward(x, 7),
                      "PositionalEncoding: positions [7, 11) for input (2, 4, 8) exceed max_len 10");
  REQUIRE_THROWS_WITH(pe.forward(x, -1), Contains("positions [-1, 3)"));
  REQUIRE_THROWS_WITH(pe.forward(sg::zeros({2, 4, 6})), Contains("must be (batch, steps, 8)"));

  sg::nn::LearnedPositionalEncoding learned(8, 0.0, 10);
  REQUIRE_THROWS_WITH(learned.forward(sg::zeros({1, 11, 8})),
                      "LearnedPositionalEncoding: positions [0, 11) for input (1, 11, 8) exceed max_len 10");
}

TEST_CASE("The sinusoidal table starts as sin 0 = 0 and cos 0 = 1", "[nn][positional]") {
  sg::nn::PositionalEncoding pe(6, 0.0, 3);
  const auto p = pe.P.to_vector<double>();
  REQUIRE(std::vector<double>(p.begin(), p.begin() + 6) == std::vector<double>{0, 1, 0, 1, 0, 1});
  // Row 1, pair j = 1: angle 1 / 10000^(2/6).
  REQUIRE(p[6 + 2] == Approx(std::sin(1 / std::pow(10000.0, 2.0 / 6))));
  REQUIRE(p[6 + 3] == Approx(std::cos(1 / std::pow(10000.0, 2.0 / 6))));
}

TEST_CASE("Dropout rejects p outside 0 <= p < 1", "[nn]") {
  REQUIRE_THROWS_WITH(sg::nn::Dropout(-0.1), "Dropout: p must be in [0, 1), got -0.1");
  REQUIRE_THROWS_WITH(sg::nn::Dropout(1.0), "Dropout: p must be in [0, 1), got 1");
  REQUIRE_NOTHROW(sg::nn::Dropout(0.0));
  REQUIRE_THROWS_WITH(sg::nn::TransformerEncoder(tiny_encoder(sg::nn::Positional::none, 1.5)),
                      Contains("p must be in [0, 1), got 1.5"));
}
