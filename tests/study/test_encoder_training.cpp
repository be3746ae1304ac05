// Learning happens: on the shift task (label = the previous token), a tiny
// encoder with positional encodings learns it, and one without positions
// cannot (self-attention without positions is permutation-equivariant, so
// it cannot tell which token came before which).
#include <catch2/catch.hpp>

#include "core/random.hpp"
#include "core/runtime.hpp"
#include "study/encoder_training.hpp"
#include "nn/positional.hpp"

namespace {
sg::study::Result train_shift(sg::nn::Positional kind, int64_t steps = 800) {
  sg::study::Config c;
  c.task = "shift";
  c.positional = kind;
  c.steps = steps;
  c.eval_every = 100;
  sg::set_num_threads(1);  // a tiny model: one thread is fastest, and CTest runs tests side by side
  sg::manual_seed(c.seed);
  sg::study::Model model(c);
  return sg::study::train(model, c);
}
}  // namespace

TEST_CASE("the shift task is learned with sinusoidal positions", "[training]") {
  const sg::study::Result r = train_shift(sg::nn::Positional::sinusoidal);
  INFO("accuracy " << r.acc_train_lengths);
  CHECK(r.curve.front().loss > r.curve.back().loss * 10);
  CHECK(r.acc_train_lengths > 0.9);
}

TEST_CASE("the shift task is learned with learned positions", "[training]") {
  const sg::study::Result r = train_shift(sg::nn::Positional::learned);
  INFO("accuracy " << r.acc_train_lengths);
  CHECK(r.acc_train_lengths > 0.9);
}

// Positions inside attention see offsets, which is all shift needs: learned
// in a quarter of the steps, and for lengths 13-16 never trained on as well
// (offsets past max_distance share the clipped vector; rotations exist for any position).
TEST_CASE("the shift task is learned fast with relative and with rotary positions, longer sequences too",
          "[training]") {
  for (sg::nn::Positional kind : {sg::nn::Positional::relative, sg::nn::Positional::rotary}) {
    const sg::study::Result r = train_shift(kind, 200);
    INFO(sg::nn::positional_name(kind) << ": accuracy " << r.acc_train_lengths << ", longer " << r.acc_longer);
    CHECK(r.acc_train_lengths > 0.95);
    CHECK(r.acc_longer > 0.95);
  }
}

TEST_CASE("without positions the shift task stays near chance", "[training]") {
  const sg::study::Result r = train_shift(sg::nn::Positional::none);
  INFO("accuracy " << r.acc_train_lengths);
  CHECK(r.acc_train_lengths < 0.4);
}

TEST_CASE("batches follow each task's definition", "[training]") {
  sg::study::Config c;
  sg::Generator gen(3);
  for (const std::string& task : sg::study::task_names()) {
    c.task = task;
    const sg::study::Batch b = sg::study::make_batch(c, 8, 3, 7, gen);
    const auto ids = b.ids.to_vector<int64_t>(), labels = b.labels.to_vector<int64_t>(), scored = b.scored.to_vector<int64_t>();
    const auto lens = b.valid_lens.to_vector<int64_t>();
    for (int64_t s = 0; s < 8; ++s) {
      const int64_t len = lens[static_cast<size_t>(s)];
      REQUIRE(len >= 3);
      REQUIRE(len <= 7);
      const int64_t* x = ids.data() + s * 7;
      const int64_t* y = labels.data() + s * 7;
      const int64_t* sc = scored.data() + s * 7;
      for (int64_t t = len; t < 7; ++t) CHECK((x[t] == sg::study::kPad && y[t] == sg::study::kIgnore));
      for (int64_t t = 0; t < len; ++t) {
        CHECK(x[t] >= 1);
        if (task == "shift") CHECK(y[t] == (t >= 1 ? x[t - 1] : 0));
        // What accuracy counts: every label but the fixed 0 of shift's
        // first position and recall's first three (--back 3).
        const int64_t fixed = task == "shift" ? 1 : task == "recall" ? 3 : 0;
        CHECK(sc[t] == (t < fixed ? sg::study::kIgnore : y[t]));
        if (task == "reverse") CHECK(y[t] == x[len - 1 - t]);
        if (task == "sort" && t > 0) CHECK(y[t - 1] <= y[t]);
        if (task == "count") CHECK(y[t] == std::count(x, x + len, x[t]));
      }
    }
  }
}

TEST_CASE("training evaluates at step 0 and records attention at the asked steps", "[training]") {
  sg::study::Config c;
  c.hidden = 16, c.heads = 2, c.ffn = 16, c.blocks = 2, c.batch = 8, c.eval_sequences = 16;
  c.steps = 6, c.eval_every = 3;
  c.record_attention_at = {0, 2, 6, 50};  // 50 is past the end: skipped
  c.record_sequences = 3;
  sg::set_num_threads(1);
  sg::manual_seed(c.seed);
  sg::study::Model model(c);
  const sg::study::Result r = sg::study::train(model, c);
  REQUIRE(r.curve.size() == 3);
  CHECK(r.curve[0].step == 0);
  CHECK(r.curve[0].grad_norm > 0);
  CHECK(r.curve[1].step == 3);
  CHECK(r.step_loss.size() == 6);
  REQUIRE(r.attention.snapshots.size() == 3);
  CHECK(r.attention.snapshots[0].step == 0);
  CHECK(r.attention.snapshots[2].step == 6);
  const int64_t T = r.attention.examples.ids.shape()[1];
  CHECK(T == c.max_len);
  CHECK(r.attention.examples.ids.shape()[0] == 3);
  const std::vector<int64_t> lens = r.attention.examples.valid_lens.to_vector<int64_t>();
  for (const auto& snap : r.attention.snapshots) {
    REQUIRE(snap.blocks.size() == 2);
    for (const auto& w : snap.blocks) {
      REQUIRE(w.size() == static_cast<size_t>(3 * 2 * T * T));
      // Each valid query's weights sum to 1 over the valid keys; padded keys get 0.
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t q = 0; q < lens[static_cast<size_t>(b)]; ++q) {
          double sum = 0, pad = 0;
          for (int64_t k = 0; k < T; ++k) {
            const double v = w[static_cast<size_t>(((b * 2 + 1) * T + q) * T + k)];
            (k < lens[static_cast<size_t>(b)] ? sum : pad) += v;
          }
          CHECK(sum == Approx(1.0).margin(1e-5));
          CHECK(pad == 0);
        }
    }
  }
  // Training changed the attention between step 0 and the end.
  CHECK(r.attention.snapshots[0].blocks[1] != r.attention.snapshots[2].blocks[1]);
  // Recording does not change training: the same run without it ends with the same loss.
  sg::study::Config plain = c;
  plain.record_attention_at.clear();
  sg::manual_seed(c.seed);
  sg::study::Model again(plain);
  CHECK(sg::study::train(again, plain).step_loss == r.step_loss);
}

TEST_CASE("chance is the share of the most frequent label, over labelled positions only", "[training]") {
  using sg::study::kIgnore;
  sg::study::EvalSet set;
  // Labels 3, 3, 5 and 7 labelled (two padding or unlabelled positions left
  // out): always answering 3 is right 2 times in 4.
  set.batches.push_back({sg::Tensor(), sg::Tensor(), sg::Tensor(), sg::from_vector(std::vector<int64_t>{kIgnore, 3, 5, 3, 7, kIgnore}, {2, 3})});
  CHECK(sg::study::chance_accuracy(set) == 0.5);
  set.batches.push_back({sg::Tensor(), sg::Tensor(), sg::Tensor(), sg::from_vector(std::vector<int64_t>{7, 7, 7, 7}, {1, 4})});
  CHECK(sg::study::chance_accuracy(set) == 5.0 / 8.0);  // now 7: 5 of the 8 labels
  CHECK(sg::study::chance_accuracy(sg::study::EvalSet{}) == 0.0);

  // On the shift task's real evaluation set: the 15 symbols are equally
  // likely, and the positions before the shift count for nothing.
  sg::study::Config c;
  const double chance = sg::study::chance_accuracy(sg::study::make_eval_set(c, c.min_len, c.max_len, 1));
  CHECK(chance > 1.0 / 15 * 0.7);
  CHECK(chance < 1.0 / 15 * 1.5);
}

TEST_CASE("accuracy counts only the positions whose label depends on the input; the loss all", "[training]") {
  sg::study::Config c;
  c.task = "shift";
  c.shift = 2;
  sg::Generator gen(11);
  const sg::study::Batch b = sg::study::make_batch(c, 4, 5, 5, gen);  // four sequences of length 5
  // Logits that answer every scored label right, and class 1 (never the
  // fixed label 0) at the two fixed positions of each sequence: 12 scored
  // positions, all right; against the loss's labels 12 of 20.
  const std::vector<int64_t> y = b.scored.to_vector<int64_t>();
  std::vector<float> logits(y.size() * static_cast<size_t>(c.vocab), 0.0f);
  size_t labelled = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const bool has_label = y[i] != sg::study::kIgnore;
    labelled += has_label;
    logits[i * static_cast<size_t>(c.vocab) + static_cast<size_t>(has_label ? y[i] : 1)] = 1.0f;
  }
  CHECK(labelled == 12);
  const sg::Tensor l = sg::from_vector(logits, {4, 5, c.vocab});
  CHECK(sg::study::accuracy(l, b.scored) == 1.0);
  CHECK(sg::study::labelled_count(b.scored) == 12);
  CHECK(sg::study::labelled_count(b.labels) == 20);
  CHECK(sg::study::right_count(l, b.labels) == 12);
}

TEST_CASE("the study's errors name the flags the user typed", "[training]") {
  using Catch::Matchers::Contains;
  sg::study::Config c;
  c.heads = 3;
  REQUIRE_THROWS_WITH(sg::study::check_config(c), Contains("--heads 3 must divide --hidden 64"));
  c.heads = 1, c.hidden = 63;
  REQUIRE_THROWS_WITH(sg::study::check_config(c), Contains("--hidden 63 must be even for --positional sinusoidal"));
  c.positional = sg::nn::Positional::rotary, c.hidden = 12, c.heads = 4;
  REQUIRE_THROWS_WITH(sg::study::check_config(c),
                      Contains("--hidden 12 / --heads 4 = 3 features per head must be even for --positional rotary"));
  c = sg::study::Config{};
  c.shift = 20;
  REQUIRE_THROWS_WITH(sg::study::check_config(c), Contains("--shift 20 must be less than --max-len 12"));
}
