// nn/basic.cpp: LayerNorm, Embedding and Dropout layers.
#include <catch2/catch.hpp>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/basic.hpp"
#include "nn/transformer.hpp"

#include <cmath>
#include <functional>
#include <string>

#include "nn/positional.hpp"
#include "nn_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using namespace test_util;

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

TEST_CASE("Dropout rejects p outside 0 <= p < 1", "[nn]") {
  REQUIRE_THROWS_WITH(sg::nn::Dropout(-0.1), "Dropout: p must be in [0, 1), got -0.1");
  REQUIRE_THROWS_WITH(sg::nn::Dropout(1.0), "Dropout: p must be in [0, 1), got 1");
  REQUIRE_NOTHROW(sg::nn::Dropout(0.0));
  REQUIRE_THROWS_WITH(sg::nn::TransformerEncoder(tiny_encoder(sg::nn::Positional::none, 1.5)),
                      Contains("p must be in [0, 1), got 1.5"));
}
