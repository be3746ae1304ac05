// The causal side of study/encoder_training.hpp: the tasks tally and recall,
// which tasks a causal model may be given, and the accuracy per position
// (and past the training length) that both studies report.
#include <catch2/catch.hpp>

#include "core/random.hpp"
#include "study/encoder_training.hpp"
#include "nn/positional.hpp"

#include <cmath>

using Catch::Contains;

TEST_CASE("tally and recall batches follow their definitions", "[training][causal]") {
  sg::study::Config c;
  c.back = 2;
  sg::Generator gen(5);
  for (const std::string task : {"tally", "recall"}) {
    c.task = task;
    const sg::study::Batch b = sg::study::make_batch(c, 16, 3, 9, gen);
    const auto ids = b.ids.to_vector<int64_t>(), labels = b.labels.to_vector<int64_t>(), scored = b.scored.to_vector<int64_t>();
    const auto lens = b.valid_lens.to_vector<int64_t>();
    for (int64_t s = 0; s < 16; ++s) {
      const int64_t len = lens[static_cast<size_t>(s)];
      const int64_t* x = ids.data() + s * 9;
      const int64_t* y = labels.data() + s * 9;
      const int64_t* sc = scored.data() + s * 9;
      for (int64_t t = len; t < 9; ++t) CHECK(y[t] == sg::study::kIgnore);
      for (int64_t t = 0; t < len; ++t) {
        if (task == "recall") {
          CHECK(y[t] == (t >= 2 ? x[t - 2] : 0));
          CHECK(sc[t] == (t >= 2 ? y[t] : sg::study::kIgnore));  // a fixed 0 is not scored
        } else {
          int64_t seen = 0;  // occurrences of x[t] in x[0..t], itself included
          for (int64_t u = 0; u <= t; ++u) seen += x[u] == x[t];
          CHECK(y[t] == seen);
        }
      }
    }
  }
  c.task = "tally";
  CHECK(c.classes() == std::max(c.max_len, c.eval_max_len) + 1);
  c.task = "recall";
  CHECK(c.classes() == c.vocab);
}

TEST_CASE("a causal model takes only the tasks whose labels look back", "[training][causal]") {
  sg::study::Config c;
  c.causal = true;
  for (const std::string& task : sg::study::causal_task_names()) {
    c.task = task;
    CHECK_NOTHROW(sg::study::check_config(c));
  }
  for (const std::string task : {"sort", "reverse", "count"}) {
    c.task = task;
    REQUIRE_THROWS_WITH(sg::study::check_config(c), Contains("'" + task + "'") && Contains("causal"));
  }
  c.causal = false;
  c.task = "recall";
  c.back = c.max_len;
  REQUIRE_THROWS_WITH(sg::study::check_config(c), Contains("--back 12 must be less than --max-len 12"));
  c.back = 0;
  REQUIRE_THROWS_WITH(sg::study::check_config(c), Contains("--back 0"));
}

TEST_CASE("accuracy per position adds up to the overall accuracy", "[training][causal]") {
  sg::study::Config c;
  c.task = "shift";
  c.causal = true;
  c.positional = sg::nn::Positional::alibi;
  c.eval_sequences = 40;
  c.batch = 16;
  sg::manual_seed(3);
  sg::study::Model model(c);
  const sg::study::EvalSet set = sg::study::make_eval_set(c, c.eval_min_len, c.eval_max_len, 2);
  const sg::study::PositionAccuracy p = sg::study::evaluate_positions(model, set);
  REQUIRE(p.right.size() == static_cast<size_t>(c.eval_max_len));
  // Every sequence has positions 0 .. eval_min_len - 1; fewer reach the later
  // ones. Position 0's label is shift's fixed 0: never scored.
  CHECK(p.total[0] == 0);
  for (int64_t t = 1; t < c.eval_min_len; ++t) CHECK(p.total[static_cast<size_t>(t)] == 40);
  for (int64_t t = c.eval_min_len; t < c.eval_max_len; ++t)
    CHECK(p.total[static_cast<size_t>(t)] <= p.total[static_cast<size_t>(t - 1)]);
  int64_t right = 0, total = 0, right_past = 0, total_past = 0;
  for (size_t t = 0; t < p.right.size(); ++t) {
    right += p.right[t], total += p.total[t];
    if (static_cast<int64_t>(t) >= c.max_len) right_past += p.right[t], total_past += p.total[t];
  }
  CHECK(std::fabs(p.from(0) - sg::study::evaluate(model, set)) < 1e-12);
  CHECK(p.from(c.max_len) == static_cast<double>(right_past) / static_cast<double>(total_past));
  const std::vector<double> by = p.by_position();
  CHECK(std::isnan(by[0]));  // nothing scored there
  for (size_t t = 1; t < by.size(); ++t)
    CHECK(by[t] == static_cast<double>(p.right[t]) / static_cast<double>(p.total[t]));
  CHECK(std::isnan(p.from(c.eval_max_len)));  // no position scored
}

TEST_CASE("train() reports accuracy past the training length and per position", "[training][causal]") {
  sg::study::Config c;
  c.task = "recall";
  c.causal = true;
  c.positional = sg::nn::Positional::relative;
  c.steps = 20;
  c.eval_every = 10;
  c.eval_sequences = 64;
  sg::manual_seed(4);
  sg::study::Model model(c);
  const sg::study::Result r = sg::study::train(model, c);
  REQUIRE(r.acc_by_position.size() == static_cast<size_t>(c.eval_max_len));
  sg::study::Model again(c);
  again.load_state_dict(model.state_dict());
  const sg::study::PositionAccuracy p =
      sg::study::evaluate_positions(again, sg::study::make_eval_set(c, c.eval_min_len, c.eval_max_len, 2));
  CHECK(r.acc_past_train == p.from(c.max_len));
  const std::vector<double> by = p.by_position();
  REQUIRE(r.acc_by_position.size() == by.size());
  for (size_t t = 0; t < by.size(); ++t) {
    INFO("position " << t);
    // recall's first `back` positions hold the fixed label 0: not scored, NaN
    CHECK(std::isnan(by[t]) == (static_cast<int64_t>(t) < c.back));
    CHECK((std::isnan(by[t]) ? std::isnan(r.acc_by_position[t]) : r.acc_by_position[t] == by[t]));
  }
}
