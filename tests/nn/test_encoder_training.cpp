// Learning happens: on the shift task (label = the previous token), a tiny
// encoder with positional encodings learns it, and one without positions
// cannot (self-attention without positions is permutation-equivariant, so
// it cannot tell which token came before which).
#include <catch2/catch.hpp>

#include "nn/encoder_training.hpp"

namespace {
sg::training::Result train_shift(sg::nn::Positional kind, int64_t steps = 800) {
  sg::training::Config c;
  c.task = "shift";
  c.positional = kind;
  c.steps = steps;
  c.eval_every = 100;
  sg::set_num_threads(1);  // a tiny model: one thread is fastest, and CTest runs tests side by side
  sg::manual_seed(c.seed);
  sg::training::Model model(c);
  return sg::training::train(model, c);
}
}  // namespace

TEST_CASE("the shift task is learned with sinusoidal positions", "[training]") {
  const sg::training::Result r = train_shift(sg::nn::Positional::sinusoidal);
  INFO("accuracy " << r.acc_train_lengths);
  CHECK(r.curve.front().loss > r.curve.back().loss * 10);
  CHECK(r.acc_train_lengths > 0.9);
}

TEST_CASE("the shift task is learned with learned positions", "[training]") {
  const sg::training::Result r = train_shift(sg::nn::Positional::learned);
  INFO("accuracy " << r.acc_train_lengths);
  CHECK(r.acc_train_lengths > 0.9);
}

// Positions inside attention see offsets, which is all shift needs: learned
// in a quarter of the steps, and for lengths 13-16 never trained on as well
// (offsets past max_distance share the clipped vector; rotations exist for any position).
TEST_CASE("the shift task is learned fast with relative and with rotary positions, longer sequences too",
          "[training]") {
  for (sg::nn::Positional kind : {sg::nn::Positional::relative, sg::nn::Positional::rotary}) {
    const sg::training::Result r = train_shift(kind, 200);
    INFO(sg::nn::positional_name(kind) << ": accuracy " << r.acc_train_lengths << ", longer " << r.acc_longer);
    CHECK(r.acc_train_lengths > 0.95);
    CHECK(r.acc_longer > 0.95);
  }
}

TEST_CASE("without positions the shift task stays near chance", "[training]") {
  const sg::training::Result r = train_shift(sg::nn::Positional::none);
  INFO("accuracy " << r.acc_train_lengths);
  CHECK(r.acc_train_lengths < 0.4);
}

TEST_CASE("batches follow each task's definition", "[training]") {
  sg::training::Config c;
  sg::Generator gen(3);
  for (const std::string& task : sg::training::task_names()) {
    c.task = task;
    const sg::training::Batch b = sg::training::make_batch(c, 8, 3, 7, gen);
    const auto ids = b.ids.to_vector<int64_t>(), labels = b.labels.to_vector<int64_t>();
    const auto lens = b.valid_lens.to_vector<int64_t>();
    for (int64_t s = 0; s < 8; ++s) {
      const int64_t len = lens[static_cast<size_t>(s)];
      REQUIRE(len >= 3);
      REQUIRE(len <= 7);
      const int64_t* x = ids.data() + s * 7;
      const int64_t* y = labels.data() + s * 7;
      for (int64_t t = len; t < 7; ++t) CHECK((x[t] == sg::training::kPad && y[t] == sg::training::kIgnore));
      for (int64_t t = 0; t < len; ++t) {
        CHECK(x[t] >= 1);
        if (task == "shift") CHECK(y[t] == (t >= 1 ? x[t - 1] : 0));
        if (task == "reverse") CHECK(y[t] == x[len - 1 - t]);
        if (task == "sort" && t > 0) CHECK(y[t - 1] <= y[t]);
        if (task == "count") CHECK(y[t] == std::count(x, x + len, x[t]));
      }
    }
  }
}
