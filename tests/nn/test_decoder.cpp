// nn/decoder.cpp: the decoder block (gradcheck, post- and pre-norm), the
// decoder's d2l names, causality, and decoding with the key/value cache
// against the teacher-forced forward for every kind of positions, and d2l's
// position-0 decoding against its semantics.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "nn/decoder.hpp"
#include "nn/positional.hpp"
#include "seq2seq_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using sg::nn::DecodingMode;
using sg::nn::Positional;
using Inputs = std::vector<Tensor>;
using namespace test_util;

namespace {

std::vector<Positional> every_kind() {
  std::vector<Positional> kinds;
  for (const sg::nn::PositionalKind& k : sg::nn::positional_kinds()) kinds.push_back(k.kind);
  return kinds;
}

// A float64 decoder in eval mode with random parameters.
std::shared_ptr<sg::nn::TransformerDecoder> tiny(Positional kind, bool pre_norm, uint64_t seed) {
  sg::manual_seed(seed);
  auto decoder = std::make_shared<sg::nn::TransformerDecoder>(tiny_decoder(kind, pre_norm));
  randomize(*decoder, seed + 1);
  decoder->to(sg::float64);
  decoder->eval();
  return decoder;
}

// Target ids (2, 6) and encoder outputs (2, 5, 8) with source lengths 5 and 3.
const Tensor kTarget = ids({1, 4, 2, 8, 3, 0, 1, 7, 7, 5, 2, 6}, {2, 6});
const Tensor kSourceLens = ids({5, 3}, {2});

}  // namespace

TEST_CASE("TransformerDecoderBlock gradchecks, post- and pre-norm, with source lengths",
          "[nn][gradcheck][decoder]") {
  for (bool pre_norm : {false, true}) {
    SECTION(pre_norm ? "pre-norm" : "post-norm") {
      sg::manual_seed(60);
      sg::nn::TransformerDecoderBlock block(8, 12, 2, 0.0, false, {}, pre_norm);
      randomize(block, 61);
      auto fn = [&](const Inputs& in) { return block.forward(in[0], in[1], in[2]); };
      check_module("TransformerDecoderBlock", block, fn, {normal({2, 4, 8}, 62), normal({2, 3, 8}, 63), ids({3, 2}, {2})});
    }
  }
}

TEST_CASE("TransformerDecoderBlock gradchecks with relative positions in its self-attention",
          "[nn][gradcheck][decoder][positions]") {
  sg::manual_seed(64);
  sg::nn::TransformerDecoderBlock block(8, 12, 2, 0.0, false, {.kind = Positional::relative, .max_distance = 2});
  randomize(block, 65);
  auto fn = [&](const Inputs& in) { return block.forward(in[0], in[1], in[2]); };
  check_module("TransformerDecoderBlock, relative", block, fn, {normal({2, 4, 8}, 66), normal({2, 3, 8}, 67), ids({3, 1}, {2})});
}

TEST_CASE("TransformerDecoder's parameters carry d2l's state_dict names", "[nn][decoder]") {
  sg::nn::TransformerDecoderOptions o = tiny_decoder(Positional::sinusoidal);
  o.num_blocks = 1;
  const sg::nn::TransformerDecoder decoder(o);
  // d2l 11.7's TransformerDecoder(vocab, 8, 12, 2, 1, 0).state_dict().keys(), in its order
  // (PositionalEncoding's P is a plain attribute there, a buffer here: in neither).
  std::vector<std::string> d2l = {"embedding.weight"};
  for (const char* a : {"attention1", "addnorm1", "attention2", "addnorm2", "ffn", "addnorm3"}) {
    const std::string p = std::string("blks.block0.") + a;
    if (std::string(a).rfind("attention", 0) == 0)
      for (const char* w : {"W_q", "W_k", "W_v", "W_o"}) d2l.push_back(p + "." + w + ".weight");
    else if (std::string(a) == "ffn")
      for (const char* w : {"dense1.weight", "dense1.bias", "dense2.weight", "dense2.bias"}) d2l.push_back(p + "." + w);
    else
      d2l.push_back(p + ".ln.weight"), d2l.push_back(p + ".ln.bias");
  }
  d2l.push_back("dense.weight"), d2l.push_back("dense.bias");
  REQUIRE(names_of(decoder.named_parameters()) == d2l);
  REQUIRE(decoder.state_dict().at("dense.weight").shape() == Shape{9, 8});  // (out, in), as nn.Linear
}

TEST_CASE("The decoder is causal: a later target token leaves earlier outputs unchanged to the last bit",
          "[nn][decoder][positions]") {
  for (Positional kind : every_kind()) {
    for (bool training : {false, true}) {  // causal in eval mode too, unlike d2l's whole-sequence forward
      INFO(sg::nn::positional_name(kind) << (training ? ", training" : ", eval"));
      auto decoder = tiny(kind, false, 70);
      decoder->to(sg::float32);
      decoder->train(training);  // dropout is 0: training changes only what d2l's mask would
      const Tensor enc = sg::kernel::to(normal({2, 5, 8}, 71), sg::float32);
      const Tensor before = decoder->forward(kTarget, enc, kSourceLens);
      for (int64_t changed = 1; changed < 6; ++changed) {
        Tensor target = sg::clone(kTarget);
        target.data<int64_t>()[changed] = (target.data<int64_t>()[changed] + 3) % 9;  // example 0 only
        const Tensor after = decoder->forward(target, enc, kSourceLens);
        const std::vector<float> a = before.to_vector<float>(), b = after.to_vector<float>();
        bool earlier_same = true, later_moved = false;
        for (int64_t t = 0; t < 6; ++t)
          for (int64_t v = 0; v < 9; ++v) {
            const size_t i = static_cast<size_t>(t * 9 + v);
            if (t < changed && std::memcmp(&a[i], &b[i], sizeof(float)) != 0) earlier_same = false;
            if (t >= changed && a[i] != b[i]) later_moved = true;
          }
        INFO("changed position " << changed);
        REQUIRE(earlier_same);
        REQUIRE(later_moved);
        // Example 1 did not change at all.
        REQUIRE(std::memcmp(a.data() + 54, b.data() + 54, 54 * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("Decoding with the key/value cache equals the teacher-forced forward, for every kind of positions",
          "[nn][decoder][positions][cache]") {
  sg::NoGradGuard no_grad;
  for (Positional kind : every_kind()) {
    for (bool pre_norm : {false, true}) {
      INFO(sg::nn::positional_name(kind) << (pre_norm ? ", pre-norm" : ", post-norm"));
      auto decoder = tiny(kind, pre_norm, 80);
      const Tensor enc = normal({2, 5, 8}, 81);
      const Tensor forced = decoder->forward(kTarget, enc, kSourceLens);  // (2, 6, 9)
      // One token at a time.
      sg::nn::DecoderState state = decoder->init_state(enc, kSourceLens);
      for (int64_t t = 0; t < 6; ++t) {
        const Tensor logits = decoder->step(sg::kernel::slice(kTarget, 1, t, t + 1), state);
        INFO("step " << t);
        REQUIRE(max_abs_diff(logits, sg::kernel::slice(forced, 1, t, t + 1)) <= 1e-12);
      }
      REQUIRE(state.steps == 6);
      REQUIRE(state.blocks[1].self.length() == 6);  // six projections, one per step
      REQUIRE(state.blocks[1].cross.length() == 5);
      // Several tokens per step (a prompt), then one.
      sg::nn::DecoderState chunks = decoder->init_state(enc, kSourceLens);
      REQUIRE(max_abs_diff(decoder->step(sg::kernel::slice(kTarget, 1, 0, 4), chunks), sg::kernel::slice(forced, 1, 0, 4)) <= 1e-12);
      REQUIRE(max_abs_diff(decoder->step(sg::kernel::slice(kTarget, 1, 4, 6), chunks), sg::kernel::slice(forced, 1, 4, 6)) <= 1e-12);
    }
  }
}

TEST_CASE("The cache's attention weights are the teacher-forced ones, row by row", "[nn][decoder][cache]") {
  sg::NoGradGuard no_grad;
  auto decoder = tiny(Positional::rotary, false, 85);
  const Tensor enc = normal({2, 5, 8}, 86);
  sg::nn::DecoderAttentionWeights forced, stepped;
  decoder->forward(kTarget, enc, kSourceLens, nullptr, &forced);
  sg::nn::DecoderState state = decoder->init_state(enc, kSourceLens);
  for (int64_t t = 0; t < 6; ++t) {
    decoder->step(sg::kernel::slice(kTarget, 1, t, t + 1), state, &stepped);
    REQUIRE(stepped.self[1].shape() == Shape{2, 2, 1, t + 1});
    REQUIRE(stepped.cross[0].shape() == Shape{2, 2, 1, 5});
    // Self: row t of the forced weights, keys 0..t (the later ones are masked to 0 there).
    const Tensor row = sg::kernel::slice(sg::kernel::slice(forced.self[1], 2, t, t + 1), 3, 0, t + 1);
    REQUIRE(max_abs_diff(stepped.self[1], sg::clone(row)) <= 1e-12);
    REQUIRE(max_abs_diff(stepped.cross[0], sg::clone(sg::kernel::slice(forced.cross[0], 2, t, t + 1))) <= 1e-12);
  }
}

TEST_CASE("d2l's decoding: every step at position 0, the block inputs cached, no mask", "[nn][decoder][cache]") {
  // d2l's predict_step feeds one token per step; its PositionalEncoding adds
  // P[:, :1], and in prediction mode self-attention has no mask over the
  // block inputs cached so far. That is a teacher-forced causal forward in
  // which every position's encoding is row 0: checked here against a decoder
  // whose table holds row 0 in every row.
  sg::NoGradGuard no_grad;
  for (Positional kind : {Positional::sinusoidal, Positional::learned}) {
    INFO(sg::nn::positional_name(kind));
    auto decoder = tiny(kind, false, 90);
    auto row0 = tiny(kind, false, 90);
    double* P = row0->pos_encoding->P.data<double>();
    for (int64_t i = 1; i < 10; ++i)
      for (int64_t j = 0; j < 8; ++j) P[i * 8 + j] = P[j];
    const Tensor enc = normal({2, 5, 8}, 91);
    const Tensor expected = row0->forward(kTarget, enc, kSourceLens);
    const Tensor positioned = decoder->forward(kTarget, enc, kSourceLens);
    sg::nn::DecoderState state = decoder->init_state(enc, kSourceLens, DecodingMode::d2l);
    double moved = 0;
    for (int64_t t = 0; t < 6; ++t) {
      const Tensor logits = decoder->step(sg::kernel::slice(kTarget, 1, t, t + 1), state);
      INFO("step " << t);
      REQUIRE(max_abs_diff(logits, sg::kernel::slice(expected, 1, t, t + 1)) <= 1e-12);
      moved = std::max(moved, max_abs_diff(logits, sg::kernel::slice(positioned, 1, t, t + 1)));
    }
    REQUIRE(state.blocks[0].inputs.shape() == Shape{2, 6, 8});  // d2l's state[2][i]
    REQUIRE(!state.blocks[0].self.keys.defined());
    REQUIRE(moved > 1e-3);  // position 0 everywhere is not what training saw
  }
}

TEST_CASE("DecoderState::select reorders and repeats examples", "[nn][decoder][cache]") {
  sg::NoGradGuard no_grad;
  for (Positional kind : {Positional::none, Positional::rotary}) {  // both cache layouts
    INFO(sg::nn::positional_name(kind));
    auto decoder = tiny(kind, false, 95);
    const Tensor enc = normal({2, 5, 8}, 96);
    sg::nn::DecoderState state = decoder->init_state(enc, kSourceLens);
    decoder->step(sg::kernel::slice(kTarget, 1, 0, 2), state);
    state.select({1, 1, 0});
    REQUIRE(state.batch == 3);
    const Tensor next = ids({7, 5, 2}, {3, 1});
    const Tensor got = decoder->step(next, state);
    // The same as decoding examples 1, 1, 0 from the start.
    const Tensor enc3 = sg::kernel::concat({sg::kernel::slice(enc, 0, 1, 2), sg::kernel::slice(enc, 0, 1, 2), sg::kernel::slice(enc, 0, 0, 1)}, 0);
    sg::nn::DecoderState fresh = decoder->init_state(enc3, ids({3, 3, 5}, {3}));
    decoder->step(ids({1, 7, 1, 7, 1, 4}, {3, 2}), fresh);
    REQUIRE(max_abs_diff(got, decoder->step(next, fresh)) <= 1e-12);
    REQUIRE_THROWS_WITH(state.select({0, 3}), Contains("row 3 is outside the batch [0, 3)"));
  }
}

TEST_CASE("TransformerDecoder refuses bad input with one clear message", "[nn][decoder][errors]") {
  auto decoder = tiny(Positional::sinusoidal, false, 99);
  const Tensor enc = normal({2, 5, 8}, 100);
  REQUIRE_THROWS_WITH(decoder->forward(ids({1, 2, 3}, {3}), enc), Contains("ids must be (batch, steps), got (3)"));
  REQUIRE_THROWS_WITH(decoder->forward(ids({1, 2, 3}, {1, 3}), enc),
                      Contains("encoder outputs (2, 5, 8) must be (1, S, 8) for target ids (1, 3)"));
  REQUIRE_THROWS_WITH(decoder->forward(ids({1, 9}, {2, 1}), enc), Contains("id 9"));  // vocabulary of 9
  REQUIRE_THROWS_WITH(decoder->init_state(normal({2, 0, 8}, 101)), Contains("must be (B, S >= 1, 8)"));
  sg::nn::DecoderState state = decoder->init_state(enc, kSourceLens);
  REQUIRE_THROWS_WITH(decoder->step(ids({1, 2, 3}, {3, 1}), state), Contains("ids must be (2, n >= 1), got (3, 1)"));
  // Past the positions table (max_len 10): named by the encoding.
  decoder->step(sg::zeros({2, 10}, sg::int64), state);
  REQUIRE_THROWS_WITH(decoder->step(sg::zeros({2, 1}, sg::int64), state),
                      Contains("positions [10, 11)") && Contains("exceed max_len 10"));
}

TEST_CASE("One block driven step by step from init_cache equals its teacher-forced forward",
          "[nn][decoder][cache]") {
  sg::NoGradGuard no_grad;
  auto decoder = tiny(Positional::sinusoidal, false, 102);
  const sg::nn::TransformerDecoderBlock& block = *decoder->blocks[0];
  const Tensor X = normal({2, 4, 8}, 103), enc = normal({2, 5, 8}, 104);
  const Tensor expected = block.forward(X, enc, kSourceLens);
  sg::nn::DecoderBlockCache cache = block.init_cache(enc);
  for (int64_t t = 0; t < 4; ++t) {
    const Tensor got = block.step(sg::kernel::slice(X, 1, t, t + 1), cache, kSourceLens, t, DecodingMode::cached);
    INFO("step " << t);
    REQUIRE(max_abs_diff(got, sg::kernel::slice(expected, 1, t, t + 1)) <= 1e-12);
  }
  sg::nn::DecoderBlockCache empty_cache;
  REQUIRE_THROWS_WITH(block.step(sg::kernel::slice(X, 1, 0, 1), empty_cache, kSourceLens, 0, DecodingMode::cached),
                      Contains("the cache holds no cross-attention keys (make it with init_cache)"));
  sg::nn::DecoderBlockCache one = block.init_cache(sg::kernel::slice(enc, 0, 0, 1));
  REQUIRE_THROWS_WITH(block.step(sg::kernel::slice(X, 1, 0, 1), one, kSourceLens, 0, DecodingMode::cached),
                      Contains("X (2, 1, 8) has batch 2, the cache's cross-attention keys (1, 5, 8) batch 1"));
}
