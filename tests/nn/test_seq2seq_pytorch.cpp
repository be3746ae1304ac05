// The encoder-decoder against d2l's PyTorch classes (section 11.7), in
// float64. tests/fixtures/make_fixtures.py (seq2seq_case) builds d2l's
// Seq2Seq with d2l's state_dict names and writes two files:
//   seq2seq_d2l_checkpoint.safetensors  its state_dict, under d2l's names
//       as the EncoderDecoder carries them, read by sg::checkpoint::load (every
//       name must match a parameter and every parameter must be there);
//       metadata: the sizes, the special ids and d2l's own names
//   seq2seq_d2l.safetensors  inputs, the teacher-forced logits (training
//       mode: the causal mask), the masked loss, every parameter's gradient,
//       and predict_step's ids and logits (eval mode: position 0 at every
//       step, no mask)
// The other direction: "a checkpoint written here loads into d2l's Seq2Seq"
// writes a checkpoint and this model's outputs, which
// tests/fixtures/check_cpp_seq2seq.py loads into d2l's classes with
// strict=True (by hand, with PyTorch; tests/README.md).
//
// Tolerance: both sides compute in float64 in different summation orders;
// the differences are a few units in the last place, amplified by the
// depth (4 blocks, a softmax, a backward): 1e-13 absolute plus 1e-12 of the
// element (the measured largest differences are in docs/results.md). A wrong
// mask, scale or name would be off by 1e-2 or more.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "autograd/engine.hpp"
#include "checkpoint/checkpoint.hpp"
#include "core/kernels.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/loss.hpp"
#include "seq2seq_util.hpp"
#include "test_util.hpp"

using sg::Tensor;

namespace {

const std::string kDir = SMALLGRAD_FIXTURES;

int64_t meta_int(const sg::checkpoint::Metadata& m, const std::string& key) {
  auto it = m.find(key);
  if (it == m.end()) sg::fail("seq2seq fixture: no metadata '", key, "'");
  return std::stoll(it->second);
}

// The d2l-shaped model of the fixture's sizes, float64, dropout 0.
std::shared_ptr<sg::nn::EncoderDecoder> d2l_model(const sg::checkpoint::Metadata& m) {
  const int64_t h = meta_int(m, "num_hiddens"), ffn = meta_int(m, "ffn_num_hiddens"),
                heads = meta_int(m, "num_heads"), blocks = meta_int(m, "num_blocks");
  auto model = std::make_shared<sg::nn::EncoderDecoder>(
      sg::nn::TransformerEncoderOptions{.vocab_size = meta_int(m, "src_vocab"), .num_hiddens = h,
                                        .ffn_num_hiddens = ffn, .num_heads = heads, .num_blocks = blocks,
                                        .dropout = 0},
      sg::nn::TransformerDecoderOptions{.vocab_size = meta_int(m, "tgt_vocab"), .num_hiddens = h,
                                        .ffn_num_hiddens = ffn, .num_heads = heads, .num_blocks = blocks,
                                        .dropout = 0});
  model->to(sg::float64);
  return model;
}

// |ours - d2l| <= 1e-13 + 1e-12 |d2l| elementwise (NaN fails); the largest
// difference is printed with SMALLGRAD_FIXTURES_VERBOSE=1.
void require_float64_close(const std::string& what, const Tensor& ours, const Tensor& d2l) {
  INFO(what);
  REQUIRE(ours.defined());
  REQUIRE(ours.shape() == d2l.shape());
  const auto a = ours.to_vector<double>(), e = d2l.to_vector<double>();
  const test_util::Worst worst =
      test_util::worst_excess(a, e, [&](size_t i) { return 1e-13 + 1e-12 * std::fabs(e[i]); });
  double max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, test_util::abs_diff(a[i], e[i]));
  if (std::getenv("SMALLGRAD_FIXTURES_VERBOSE"))
    std::cout << "  " << what << " " << ours.shape() << ": max |diff| " << max_diff << "\n";
  INFO("element " << worst.index << ": ours " << a[worst.index] << ", d2l " << e[worst.index]);
  REQUIRE(worst.ok());
}

}  // namespace

TEST_CASE("d2l's Seq2Seq checkpoint loads strictly and the encoder-decoder matches it in float64",
          "[fixtures][seq2seq][checkpoint]") {
  const sg::checkpoint::SafetensorsFile header = sg::checkpoint::load_safetensors(kDir + "/seq2seq_d2l_checkpoint.safetensors");
  auto model = d2l_model(header.metadata);
  const sg::checkpoint::Metadata meta = sg::checkpoint::load(kDir + "/seq2seq_d2l_checkpoint.safetensors", *model);

  // Our names are exactly d2l's state_dict names.
  std::set<std::string> d2l_names, ours;
  std::stringstream list(meta.at("d2l_names"));
  for (std::string name; std::getline(list, name, ',');) d2l_names.insert(name);
  for (const auto& [name, p] : model->named_parameters()) ours.insert(name);
  REQUIRE(ours == d2l_names);

  const sg::checkpoint::SafetensorsFile f = sg::checkpoint::load_safetensors(kDir + "/seq2seq_d2l.safetensors");
  const Tensor &src = f.tensors.at("input.src"), &lens = f.tensors.at("input.src_valid_lens");
  const Tensor &dec_input = f.tensors.at("input.dec_input"), &labels = f.tensors.at("input.labels");
  {
    INFO("teacher forcing, d2l's Seq2Seq loss and its gradients");
    const Tensor logits = model->forward(src, dec_input, lens);
    require_float64_close("teacher-forced logits", logits, f.tensors.at("logits"));
    const Tensor loss = sg::nn::sequence_loss(logits, labels, meta_int(meta, "pad"));
    require_float64_close("loss", loss, f.tensors.at("loss"));
    sg::backward(loss);
    size_t compared = 0;
    for (const auto& [name, p] : model->named_parameters()) {
      require_float64_close("grad of " + name, p.grad(), f.tensors.at("grad." + name));
      ++compared;
    }
    size_t in_file = 0;
    for (const auto& [key, t] : f.tensors) in_file += key.rfind("grad.", 0) == 0;
    REQUIRE(compared == in_file);
  }
  {
    INFO("d2l's predict_step: DecodingMode::d2l, one token per step from <bos>, its arg-max fed back");
    sg::NoGradGuard no_grad;
    model->eval();
    const Tensor& want_logits = f.tensors.at("predict.logits");
    const std::vector<int64_t> want_ids = f.tensors.at("predict.ids").to_vector<int64_t>();
    const int64_t batch = src.shape()[0], steps = meta_int(meta, "predict_steps");
    sg::nn::DecoderState state = model->start(src, lens, sg::nn::DecodingMode::d2l);
    Tensor ids = sg::full({batch, 1}, static_cast<double>(meta_int(meta, "bos")), sg::int64);
    for (int64_t t = 0; t < steps; ++t) {
      const Tensor logits = model->decoder->step(ids, state);
      require_float64_close("predict step " + std::to_string(t), logits, sg::kernel::slice(want_logits, 1, t, t + 1));
      ids = sg::kernel::argmax(logits, -1);
      const std::vector<int64_t> got = ids.to_vector<int64_t>();
      for (int64_t b = 0; b < batch; ++b) REQUIRE(got[b] == want_ids[b * steps + t]);
    }
    // Position-correct decoding of the same tokens differs from step 1 on:
    // the fixture does test d2l's position 0, not a mode that agrees anyway.
    sg::nn::DecoderState cached = model->start(src, lens, sg::nn::DecodingMode::cached);
    model->decoder->step(sg::full({batch, 1}, static_cast<double>(meta_int(meta, "bos")), sg::int64), cached);
    const Tensor second = model->decoder->step(sg::kernel::slice(f.tensors.at("predict.ids"), 1, 0, 1), cached);
    REQUIRE(test_util::max_abs_diff(second, sg::kernel::slice(want_logits, 1, 1, 2)) > 1e-3);
  }
}

TEST_CASE("a checkpoint of the encoder-decoder written here loads into d2l's Seq2Seq", "[seq2seq][checkpoint]") {
  // Checked by hand with tests/fixtures/check_cpp_seq2seq.py (PyTorch);
  // see tests/README.md. Writes the checkpoint (d2l's names) and, beside it, the inputs and this model's outputs.
  const sg::checkpoint::SafetensorsFile fixture = sg::checkpoint::load_safetensors(kDir + "/seq2seq_d2l_checkpoint.safetensors");
  sg::checkpoint::Metadata meta = fixture.metadata;
  meta.erase("d2l_names");
  meta["case"] = "smallgrad_seq2seq";
  meta["producer"] = "smallgrad tests/nn/test_seq2seq_pytorch.cpp";
  auto model = d2l_model(meta);
  test_util::randomize(*model, 36);
  model->eval();
  const sg::checkpoint::SafetensorsFile io = sg::checkpoint::load_safetensors(kDir + "/seq2seq_d2l.safetensors");
  const Tensor &src = io.tensors.at("input.src"), &lens = io.tensors.at("input.src_valid_lens");
  const Tensor &dec_input = io.tensors.at("input.dec_input"), &labels = io.tensors.at("input.labels");
  sg::NoGradGuard no_grad;
  const Tensor logits = model->forward(src, dec_input, lens);
  const Tensor loss = sg::nn::sequence_loss(logits, labels, meta_int(meta, "pad"));
  const int64_t batch = src.shape()[0], steps = meta_int(meta, "predict_steps");
  sg::nn::DecoderState state = model->start(src, lens, sg::nn::DecodingMode::d2l);
  Tensor ids = sg::full({batch, 1}, static_cast<double>(meta_int(meta, "bos")), sg::int64);
  std::vector<Tensor> step_logits, step_ids;
  for (int64_t t = 0; t < steps; ++t) {
    step_logits.push_back(model->decoder->step(ids, state));
    ids = sg::kernel::argmax(step_logits.back(), -1);
    step_ids.push_back(ids);
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string checkpoint = (dir / "smallgrad_seq2seq_checkpoint.safetensors").string();
  sg::checkpoint::save(checkpoint, *model, nullptr, meta);
  sg::checkpoint::save_safetensors((dir / "smallgrad_seq2seq_outputs.safetensors").string(),
                                   sg::nn::StateDict{{"input.src", src},
                                                     {"input.src_valid_lens", lens},
                                                     {"input.dec_input", dec_input},
                                                     {"input.labels", labels},
                                                     {"logits", logits},
                                                     {"loss", loss},
                                                     {"predict.logits", sg::kernel::concat(step_logits, 1)},
                                                     {"predict.ids", sg::kernel::concat(step_ids, 1)}},
                                   meta);
  // What the script reads is what was written.
  auto other = d2l_model(meta);
  sg::checkpoint::load(checkpoint, *other);
  other->eval();
  REQUIRE(test_util::max_abs_diff(other->forward(src, dec_input, lens), logits) == 0);
}
