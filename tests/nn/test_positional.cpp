// nn/positional.cpp: the sinusoidal and learned encodings, and the one enum
// of kinds of positions.
#include <catch2/catch.hpp>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/positional.hpp"
#include "nn/transformer.hpp"

#include <cmath>
#include <functional>
#include <string>

#include "nn_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;
#include <vector>

TEST_CASE("PositionalEncoding gradchecks, with and without an offset", "[nn][gradcheck][positional]") {
  for (int64_t offset : {0, 5}) {
    sg::nn::PositionalEncoding pe(8, 0.0, 10);
    auto fn = [&](const Inputs& in) { return pe.forward(in[0], offset); };
    check_module("PositionalEncoding, offset " + std::to_string(offset), pe, fn, {normal({2, 3, 8}, 20)});
    REQUIRE(pe.P.dtype() == sg::float32);  // gradcheck_module converts buffers too, and gives them back
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

TEST_CASE("parse_positional knows all six kinds", "[nn][positions]") {
  using sg::nn::Positional;
  for (Positional kind : {Positional::none, Positional::sinusoidal, Positional::learned, Positional::relative,
                          Positional::rotary, Positional::alibi})
    REQUIRE(sg::nn::parse_positional(sg::nn::positional_name(kind)) == kind);
  REQUIRE_THROWS_WITH(sg::nn::parse_positional("t5"),
                      "positional encoding 't5' is not one of none, sinusoidal, learned, relative, rotary, alibi");
}

TEST_CASE("The kinds' table: one row per kind, and what the encoder and attention build from it",
          "[nn][positions]") {
  using sg::nn::Positional;
  using sg::nn::PositionsAct;
  const auto& kinds = sg::nn::positional_kinds();
  REQUIRE(kinds.size() == 6);
  REQUIRE(sg::nn::positional_names() ==
          std::vector<std::string>{"none", "sinusoidal", "learned", "relative", "rotary", "alibi"});
  for (size_t i = 0; i < kinds.size(); ++i) {
    const sg::nn::PositionalKind& k = kinds[i];
    INFO(k.name);
    CHECK(static_cast<size_t>(k.kind) == i);  // rows in the enum's order
    CHECK(&sg::nn::positional_kind(k.kind) == &k);
    CHECK(sg::nn::parse_positional(k.name) == k.kind);
    CHECK(std::string(k.help).find('\n') == std::string::npos);
    CHECK(!std::string(k.help).empty());
    // A builder exactly for the encodings added to the embeddings.
    CHECK((k.make != nullptr) == (k.acts == PositionsAct::embeddings));
    CHECK(sg::nn::in_attention(k.kind) == (k.acts == PositionsAct::attention));
    // The encoder: the row's module on the embeddings, or only dropout.
    sg::nn::TransformerEncoder encoder(tiny_encoder(k.kind));
    CHECK((encoder.pos_encoding != nullptr) == (k.acts == PositionsAct::embeddings));
    CHECK((encoder.embedding_dropout != nullptr) == (k.acts != PositionsAct::embeddings));
    for (const auto& block : encoder.blocks)
      CHECK(block->attention->positions.kind == (k.acts == PositionsAct::attention ? k.kind : Positional::none));
  }
  CHECK(dynamic_cast<sg::nn::PositionalEncoding*>(sg::nn::positional_kind(Positional::sinusoidal).make(4, 0.0, 5).get()));
  CHECK(dynamic_cast<sg::nn::LearnedPositionalEncoding*>(sg::nn::positional_kind(Positional::learned).make(4, 0.0, 5).get()));
  REQUIRE_THROWS_WITH(sg::nn::positional_kind(static_cast<Positional>(17)), Contains("not a kind of positions (17)"));
  // Attention refuses the kinds added to the embeddings, naming those it takes.
  REQUIRE_THROWS_WITH(sg::nn::MultiHeadAttention(8, 2, 0.0, false, false, {.kind = Positional::learned}),
                      Contains("positions 'learned' are added to the embeddings") &&
                          Contains("(none, relative, rotary or alibi)"));
}

TEST_CASE("set_table replaces the positions table in place, checked", "[nn][positional]") {
  for (bool learned : {false, true}) {
    INFO((learned ? "learned" : "sinusoidal"));
    std::shared_ptr<sg::nn::AddedPositions> pe;
    if (learned) pe = std::make_shared<sg::nn::LearnedPositionalEncoding>(4, 0.0, 3);
    else pe = std::make_shared<sg::nn::PositionalEncoding>(4, 0.0, 3);
    const Tensor handle = pe->P;
    const auto version = handle.version();
    std::vector<double> values(12);
    for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25 * static_cast<double>(i) - 1;
    pe->set_table(sg::from_vector(values, {3, 4}, sg::float64));  // (max_len, d), float64 rounded to P's float32
    REQUIRE(pe->P.raw_data() == handle.raw_data());
    REQUIRE(handle.version() > version);
    REQUIRE(pe->P.dtype() == sg::float32);
    // forward adds the new rows: zeros in, rows 1..2 out.
    const std::vector<double> out = pe->forward(sg::zeros({1, 2, 4}), 1).to_vector<double>();
    REQUIRE(out == std::vector<double>(values.begin() + 4, values.end()));
    REQUIRE_THROWS_WITH(pe->set_table(sg::zeros({1, 4, 4})),
                        Contains("set_table: the table must be floating (1, 3, 4) or (3, 4), got float32 (1, 4, 4)"));
    values[5] = NAN;
    REQUIRE_THROWS_WITH(pe->set_table(sg::from_vector(values, {1, 3, 4})), Contains("element 5") && Contains("nan"));
  }
}
