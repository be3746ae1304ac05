// checkpoint/names.cpp: smallgrad's block names against d2l's.
#include <catch2/catch.hpp>

#include <string>

#include "checkpoint/names.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/transformer.hpp"

using Catch::Contains;

TEST_CASE("to_d2l_name maps a standalone encoder's block names onto d2l's, and back", "[checkpoint]") {
  using sg::checkpoint::from_d2l_name;
  using sg::checkpoint::to_d2l_name;
  REQUIRE(to_d2l_name("blocks.3.attention.W_q.weight") == "blks.block3.attention.W_q.weight");
  REQUIRE(to_d2l_name("encoder.blocks.12.ffn.dense1.bias") == "encoder.blks.block12.ffn.dense1.bias");
  REQUIRE(to_d2l_name("embedding.weight") == "embedding.weight");
  REQUIRE(to_d2l_name("myblocks.3.x") == "myblocks.3.x");  // only a whole name part
  REQUIRE(to_d2l_name("blocks.x.y") == "blocks.x.y");      // and only with a block number
  REQUIRE(from_d2l_name("blks.block3.attention.W_q.weight") == "blocks.3.attention.W_q.weight");

  // Every name of an encoder maps to the name an EncoderDecoder's encoder
  // (built with d2l_names) carries, and back.
  sg::nn::TransformerEncoderOptions o;
  o.vocab_size = 7, o.num_hiddens = 8, o.ffn_num_hiddens = 12, o.num_heads = 2, o.num_blocks = 2, o.max_len = 10;
  const sg::nn::StateDict ours = sg::nn::TransformerEncoder(o).state_dict();
  o.d2l_names = true;
  const sg::nn::StateDict theirs = sg::nn::TransformerEncoder(o).state_dict();
  const sg::nn::StateDict mapped = sg::checkpoint::to_d2l_names(ours);
  REQUIRE(mapped.size() == theirs.size());
  for (const auto& [name, t] : theirs) {
    INFO(name);
    REQUIRE(mapped.count(name) == 1);
    REQUIRE(mapped.at(name).shape() == t.shape());
  }
  REQUIRE(sg::checkpoint::from_d2l_names(mapped).size() == ours.size());
  for (const auto& [name, t] : ours) REQUIRE(sg::checkpoint::from_d2l_names(mapped).count(name) == 1);

  sg::nn::StateDict both = {{"blocks.0.w", sg::zeros({1})}, {"blks.block0.w", sg::zeros({1})}};
  REQUIRE_THROWS_WITH(sg::checkpoint::to_d2l_names(both), Contains("two names become 'blks.block0.w'"));
}
