// nn/transformer.cpp: PositionWiseFFN, AddNorm, the encoder block (post- and
// pre-norm) and the encoder with every kind of positions.
#include <catch2/catch.hpp>

#include "core/kernels.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
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
#include <vector>

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

// ---------------------------------------------------------------------------
// TransformerEncoder with positions in attention, and pre-norm
// ---------------------------------------------------------------------------

TEST_CASE("TransformerEncoder gradchecks with relative and rotary positions, post- and pre-norm",
          "[nn][positions][transformer][gradcheck]") {
  using sg::nn::Positional;
  for (Positional kind : {Positional::relative, Positional::rotary, Positional::sinusoidal}) {
    for (bool pre_norm : {false, true}) {
      if (kind == Positional::sinusoidal && !pre_norm) continue;  // the gradcheck of TransformerEncoderBlock above has it
      const std::string name = std::string(sg::nn::positional_name(kind)) + (pre_norm ? ", pre-norm" : "");
      SECTION(name) {
        sg::manual_seed(90);
        sg::nn::TransformerEncoder encoder(tiny_encoder(kind, 0, pre_norm));
        randomize(encoder, 91);
        auto fn = [&](const Inputs& in) { return encoder.forward(in[0], in[1]); };
        check_module("TransformerEncoder, " + name, encoder, fn,
                     {ids({1, 3, 3, 6, 0, 2, 5, 1}, {2, 4}), ids({4, 2}, {2})});
      }
    }
  }
}

TEST_CASE("Encoders with relative or rotary positions add nothing to the embeddings", "[nn][positions][transformer]") {
  using sg::nn::Positional;
  for (Positional kind : {Positional::relative, Positional::rotary}) {
    sg::nn::TransformerEncoder encoder(tiny_encoder(kind));
    INFO(sg::nn::positional_name(kind));
    REQUIRE(encoder.pos_encoding == nullptr);
    REQUIRE(encoder.embedding_dropout != nullptr);
    REQUIRE(encoder.final_ln == nullptr);
    // Sequences longer than max_len are fine: nothing is indexed by absolute position.
    REQUIRE(encoder.forward(sg::zeros({1, 9}, sg::int64)).shape() == Shape{1, 9, 8});
  }
  sg::nn::TransformerEncoder relative(tiny_encoder(Positional::relative));
  REQUIRE(relative.state_dict().count("blocks.1.attention.relative_keys") == 1);
  REQUIRE(relative.state_dict().count("blocks.1.attention.relative_values") == 1);  // Shaw et al.: both
  sg::nn::TransformerEncoderOptions o = tiny_encoder(Positional::relative);
  o.relative_values = false;
  REQUIRE(sg::nn::TransformerEncoder(o).state_dict().count("blocks.1.attention.relative_values") == 0);
  sg::nn::TransformerEncoder pre(tiny_encoder(Positional::none, 0, true));
  REQUIRE(pre.state_dict().count("final_ln.weight") == 1);
}

TEST_CASE("The pre-norm block keeps the residual path an identity", "[nn][positions][transformer]") {
  // With both branches' outputs zeroed (W_o and dense2 all zero), a pre-norm
  // block returns X itself; a post-norm block returns LayerNorm(LayerNorm(X)).
  const Tensor X = normal({2, 3, 8}, 95);
  for (bool pre_norm : {true, false}) {
    sg::nn::TransformerEncoderBlock block(8, 12, 2, 0.0, false, false, {}, pre_norm);
    block.to(sg::float64);
    sg::kernel::fill_(block.attention->W_o->weight, 0);
    sg::kernel::fill_(block.ffn->dense2->weight, 0);
    sg::kernel::fill_(block.ffn->dense2->bias, 0);
    const double change = sg::kernel::max(sg::kernel::abs(sg::kernel::sub(block.forward(X), X))).item<double>();
    INFO("pre_norm " << pre_norm << ", largest change " << change);
    if (pre_norm) REQUIRE(change == 0.0);
    else REQUIRE(change > 0.1);
  }
}
