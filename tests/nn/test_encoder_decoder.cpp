// nn/encoder_decoder.cpp and nn/loss.cpp's sequence_loss: d2l's Seq2Seq
// loss (by hand and gradchecked), a float64 gradcheck of the whole
// encoder-decoder's loss, encoding then decoding step by step against the
// teacher-forced forward, d2l's names, a safetensors round trip, and bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "checkpoint/checkpoint.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/loss.hpp"
#include "seq2seq_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using sg::nn::Positional;
using Inputs = std::vector<Tensor>;
using namespace test_util;

namespace {
// Sources (2, 5) with lengths 5 and 3 (padded with 0), decoder inputs and labels (2, 4), target pad 0.
const Tensor kSource = ids({1, 3, 6, 2, 4, 5, 2, 3, 0, 0}, {2, 5});
const Tensor kSourceLens = ids({5, 3}, {2});
const Tensor kDecInput = ids({1, 5, 7, 3, 1, 4, 2, 0}, {2, 4});
const Tensor kLabels = ids({5, 7, 3, 2, 4, 2, 0, 0}, {2, 4});
}  // namespace

TEST_CASE("sequence_loss is d2l's masked mean, worked out by hand", "[nn][loss][seq2seq]") {
  const Tensor logits = normal({2, 3, 5}, 10);
  const Tensor labels = ids({4, 1, 0, 2, 0, 0}, {2, 3});  // pad 0: three real labels
  const std::vector<double> z = logits.to_vector<double>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  double sum = 0;
  int real = 0;
  for (size_t r = 0; r < 6; ++r) {
    if (y[r] == 0) continue;
    double norm = 0;
    for (size_t c = 0; c < 5; ++c) norm += std::exp(z[r * 5 + c]);
    sum += std::log(norm) - z[r * 5 + static_cast<size_t>(y[r])];
    ++real;
  }
  REQUIRE(std::abs(sg::nn::sequence_loss(logits, labels, 0).item<double>() - sum / real) <= 1e-13);
  check_gradient("sequence_loss", [&](const Inputs& in) { return sg::nn::sequence_loss(in[0], labels, 0); },
                 {logits});
  REQUIRE(sg::nn::sequence_loss(logits, sg::zeros({2, 3}, sg::int64), 0).item<double>() == 0.0);  // all padding
  REQUIRE_THROWS_WITH(sg::nn::sequence_loss(logits, ids({1, 2}, {1, 2}), 0),
                      Contains("logits (2, 3, 5) and labels (1, 2) must be (B, T, V) and (B, T)"));
}

TEST_CASE("The encoder-decoder's loss gradchecks in float64", "[nn][gradcheck][seq2seq]") {
  for (bool pre_norm : {false, true}) {
    SECTION(pre_norm ? "pre-norm" : "post-norm") {
      auto model = tiny_model(Positional::sinusoidal, 20, pre_norm, 9, sg::float32);
      auto fn = [&](const Inputs&) { return sg::nn::sequence_loss(model->forward(kSource, kDecInput, kSourceLens), kLabels, 0); };
      check_module("EncoderDecoder loss", *model, fn, {});
    }
  }
}

TEST_CASE("Encoding then decoding step by step equals the teacher-forced forward", "[nn][seq2seq][cache]") {
  sg::NoGradGuard no_grad;
  for (Positional kind : {Positional::sinusoidal, Positional::relative, Positional::alibi}) {
    INFO(sg::nn::positional_name(kind));
    auto model = tiny_model(kind, 30);
    const Tensor forced = model->forward(kSource, kDecInput, kSourceLens);
    sg::nn::DecoderState state = model->start(kSource, kSourceLens);
    for (int64_t t = 0; t < 4; ++t)
      REQUIRE(max_abs_diff(model->decoder->step(sg::kernel::slice(kDecInput, 1, t, t + 1), state),
                           sg::kernel::slice(forced, 1, t, t + 1)) <= 1e-12);
  }
}

TEST_CASE("The padding of the source changes nothing", "[nn][seq2seq]") {
  auto model = tiny_model(Positional::sinusoidal, 35);
  Tensor other = sg::clone(kSource);
  other.data<int64_t>()[8] = 6, other.data<int64_t>()[9] = 1;  // example 1's padding
  REQUIRE(max_abs_diff(model->forward(kSource, kDecInput, kSourceLens), model->forward(other, kDecInput, kSourceLens)) == 0.0);
}

TEST_CASE("EncoderDecoder's names are d2l's Seq2Seq names, the encoder's as the decoder's", "[nn][seq2seq]") {
  auto model = tiny_model(Positional::sinusoidal, 40);
  const sg::nn::StateDict state = model->state_dict();
  REQUIRE(state.count("encoder.blks.block1.attention.W_q.weight") == 1);
  REQUIRE(state.count("decoder.blks.block1.attention2.W_o.weight") == 1);
  REQUIRE(state.count("decoder.dense.bias") == 1);
  for (const auto& [name, t] : state) {
    INFO(name);
    REQUIRE(name.find(".blocks.") == std::string::npos);
  }
  // A standalone encoder keeps its own names (the positions study's checkpoints).
  REQUIRE(sg::nn::TransformerEncoder(tiny_encoder(Positional::sinusoidal)).state_dict().count(
              "blocks.1.attention.W_q.weight") == 1);
}

TEST_CASE("A source valid length of 0 works as in the block: uniform attention over the source",
          "[nn][seq2seq]") {
  auto model = tiny_model(Positional::sinusoidal, 41);
  const Tensor lens = ids({0, 3}, {2});
  sg::nn::DecoderAttentionWeights w;
  const Tensor logits = model->forward(kSource, kDecInput, lens, nullptr, &w);
  for (double v : logits.to_vector<double>()) REQUIRE(std::isfinite(v));
  // Source 0: every cross-attention weight is 1/5 (all five positions masked alike).
  for (const Tensor& cross : w.cross) {
    const std::vector<double> c = sg::kernel::slice(cross, 0, 0, 1).to_vector<double>();
    for (double v : c) REQUIRE(std::abs(v - 0.2) <= 1e-12);
  }
  // Decoding one token at a time from start() gives the teacher-forced logits.
  sg::NoGradGuard no_grad;
  sg::nn::DecoderState state = model->start(kSource, lens);
  for (int64_t t = 0; t < 4; ++t) {
    const Tensor step = model->decoder->step(sg::kernel::slice(kDecInput, 1, t, t + 1), state);
    REQUIRE(max_abs_diff(step, sg::kernel::slice(logits, 1, t, t + 1)) <= 1e-12);
  }
  REQUIRE_THROWS_WITH(model->forward(kSource, kDecInput, ids({-1, 3}, {2})),
                      Contains("source 0 has valid length -1, outside [0, 5]"));
}

TEST_CASE("predict_forward is d2l's prediction-mode forward: no mask, positions 0..T-1", "[nn][seq2seq]") {
  auto model = tiny_model(Positional::sinusoidal, 42);
  sg::NoGradGuard no_grad;
  const Tensor whole = model->predict_forward(kSource, kDecInput, kSourceLens);
  REQUIRE(whole.shape() == Shape{2, 4, 9});
  // One token: no mask to differ by, so it is the teacher-forced forward.
  const Tensor first = sg::kernel::slice(kDecInput, 1, 0, 1);
  REQUIRE(max_abs_diff(model->predict_forward(kSource, first, kSourceLens),
                       model->forward(kSource, first, kSourceLens)) <= 1e-12);
  // No mask: a later token changes the earlier outputs, which the causal forward keeps.
  Tensor changed = sg::clone(kDecInput);
  changed.data<int64_t>()[3] = 6;  // source 0's last input token
  const Tensor other = model->predict_forward(kSource, changed, kSourceLens);
  REQUIRE(max_abs_diff(sg::kernel::slice(other, 1, 0, 1), sg::kernel::slice(whole, 1, 0, 1)) > 1e-6);
  REQUIRE(max_abs_diff(sg::kernel::slice(model->forward(kSource, changed, kSourceLens), 1, 0, 3),
                       sg::kernel::slice(model->forward(kSource, kDecInput, kSourceLens), 1, 0, 3)) == 0.0);
  // The same as feeding the whole input to step() from a d2l-mode state.
  sg::nn::DecoderState state = model->start(kSource, kSourceLens, sg::nn::DecodingMode::d2l);
  REQUIRE(max_abs_diff(model->decoder->step(kDecInput, state), whole) == 0.0);
  model->train();
  REQUIRE_THROWS_WITH(model->predict_forward(kSource, kDecInput, kSourceLens), Contains("training mode"));
}

TEST_CASE("An encoder-decoder survives a safetensors round trip", "[nn][seq2seq][checkpoint]") {
  TempDir dir;
  auto model = tiny_model(Positional::rotary, 50, false, 9, sg::float32);
  sg::checkpoint::save(dir.file("seq2seq.safetensors"), *model);
  auto other = tiny_model(Positional::rotary, 51, false, 9, sg::float32);
  const Tensor before = other->forward(kSource, kDecInput, kSourceLens);
  const Tensor want = model->forward(kSource, kDecInput, kSourceLens);
  REQUIRE(max_abs_diff(before, want) > 0);
  sg::checkpoint::load(dir.file("seq2seq.safetensors"), *other);
  const Tensor got = other->forward(kSource, kDecInput, kSourceLens);
  REQUIRE(std::memcmp(got.data<float>(), want.data<float>(), want.nbytes()) == 0);
}

TEST_CASE("EncoderDecoder refuses bad input with one clear message", "[nn][seq2seq][errors]") {
  auto model = tiny_model(Positional::sinusoidal, 60);  // source table max_len 6, vocabularies 7 and 9
  REQUIRE_THROWS_WITH(model->forward(sg::ones({1, 7}, sg::int64), ids({1}, {1, 1})),
                      Contains("the source has 7 tokens, longer than the encoder's positions table (max_len 6)"));
  REQUIRE_THROWS_WITH(model->start(sg::ones({1, 7}, sg::int64)), Contains("EncoderDecoder::start: the source has 7 tokens"));
  REQUIRE_THROWS_WITH(model->forward(sg::zeros({2, 0}, sg::int64), kDecInput),
                      Contains("the source is empty, shape (2, 0)"));
  REQUIRE_THROWS_WITH(model->forward(kSource, kDecInput, ids({5, 6}, {2})),
                      Contains("source 1 has valid length 6, outside [0, 5]"));
  REQUIRE_THROWS_WITH(model->forward(ids({1, 7}, {1, 2}), ids({1}, {1, 1})), Contains("embedding: id 7"));
  REQUIRE_THROWS_WITH(model->forward(kSource, ids({1, 9, 2, 3, 1, 1, 1, 1}, {2, 4}), kSourceLens), Contains("embedding: id 9"));
  REQUIRE_THROWS_WITH(model->forward(kSource, ids({1, 2}, {1, 2}), kSourceLens),
                      Contains("decoder input (1, 2) must be (2, T >= 1) for source ids (2, 5)"));
  REQUIRE_THROWS_WITH(model->forward(sg::zeros({2, 5}), kDecInput), Contains("source ids must be int64 (batch, steps)"));
  sg::nn::TransformerEncoderOptions causal = tiny_encoder(Positional::none);
  causal.causal = true;
  REQUIRE_THROWS_WITH(sg::nn::EncoderDecoder(causal, tiny_decoder(Positional::none)), Contains("causal option must be off"));
  sg::nn::TransformerDecoderOptions wide = tiny_decoder(Positional::none);
  wide.num_hiddens = 16;
  REQUIRE_THROWS_WITH(sg::nn::EncoderDecoder(tiny_encoder(Positional::none), wide),
                      Contains("encoder num_hiddens 8 and decoder num_hiddens 16 differ"));
}
