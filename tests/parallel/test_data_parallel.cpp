// Data-parallel steps (parallel/data_parallel.hpp): the loss and gradients equal
// the whole batch's step in float64, on any thread count; the same thread
// count gives the same bits; dropout masks are the whole batch's, cut by
// example; errors leave .grad alone; train() with several threads follows
// the one-thread run's loss curve.
#include <catch2/catch.hpp>

#include <cstring>
#include <stdexcept>

#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/dropout.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "core/random.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"
#include "parallel/data_parallel.hpp"
#include "study/encoder_training.hpp"
#include "nn/module.hpp"
#include "nn/positional.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Tensor;

namespace {

sg::study::Config small_config(double dropout) {
  sg::study::Config c;
  c.task = "sort";
  c.hidden = 16;
  c.heads = 2;
  c.ffn = 32;
  c.blocks = 2;
  c.batch = 7;  // not a multiple of 2, 3 or 4: micro-batches of unequal sizes
  c.dropout = dropout;
  c.positional = sg::nn::Positional::learned;
  return c;
}

struct StepResult {
  double loss = 0;
  std::vector<std::vector<double>> grads;  // per parameter
  uint64_t next_draw = 0;                  // the default generator's next value after the step
};

std::vector<std::vector<double>> grads_of(const sg::nn::Module& m) {
  std::vector<std::vector<double>> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.grad().to_vector<double>());
  return out;
}

// One step of `model` on `b`: whole batch (threads 0) or data-parallel.
StepResult step(sg::study::Model& model, const sg::study::Batch& b, int threads) {
  model.zero_grad();
  sg::manual_seed(99);  // dropout draws its keys from the default generator
  StepResult r;
  if (threads == 0) {
    r.loss = sg::study::forward_backward(model, b, nullptr, false).loss;
  } else {
    sg::parallel::DataParallel dp(model.parameters(), threads);
    r.loss = sg::study::forward_backward(model, b, &dp, false).loss;
  }
  r.grads = grads_of(model);
  r.next_draw = sg::default_generator().next_u64();
  return r;
}

double worst_difference(const StepResult& a, const StepResult& b) {
  double worst = test_util::abs_diff(a.loss, b.loss);
  REQUIRE(a.grads.size() == b.grads.size());
  for (size_t p = 0; p < a.grads.size(); ++p) {
    REQUIRE(a.grads[p].size() == b.grads[p].size());
    for (size_t i = 0; i < a.grads[p].size(); ++i)
      worst = std::max(worst, test_util::abs_diff(a.grads[p][i], b.grads[p][i]));
  }
  return worst;
}

}  // namespace

TEST_CASE("data-parallel: loss and gradients equal the whole batch's in float64 on any thread count",
          "[data_parallel]") {
  const double dropout = GENERATE(0.0, 0.3);
  INFO("dropout " << dropout);
  const sg::study::Config c = small_config(dropout);
  sg::manual_seed(1);
  sg::study::Model model(c);
  model.to(sg::float64);
  sg::Generator data(5);
  const sg::study::Batch b = sg::study::make_batch(c, c.batch, c.min_len, c.max_len, data);
  const StepResult whole = step(model, b, 0);
  REQUIRE(whole.loss > 0.5);  // an untrained model's loss: a real comparison
  for (int threads : {1, 2, 3, 4, 7}) {
    INFO(threads << " threads");
    const StepResult parallel = step(model, b, threads);
    CHECK(worst_difference(whole, parallel) < 1e-12);
    // The generator moved exactly as in the whole batch's forward.
    CHECK(parallel.next_draw == whole.next_draw);
  }
}

TEST_CASE("data-parallel: two runs with the same seed and thread count give the same bits", "[data_parallel]") {
  const sg::study::Config c = small_config(0.2);
  sg::manual_seed(2);
  sg::study::Model model(c);  // float32
  sg::Generator data(6);
  const sg::study::Batch b = sg::study::make_batch(c, c.batch, c.min_len, c.max_len, data);
  for (int threads : {2, 3}) {
    const StepResult first = step(model, b, threads);
    for (int run = 0; run < 3; ++run) {
      const StepResult again = step(model, b, threads);
      REQUIRE(std::memcmp(&first.loss, &again.loss, sizeof(double)) == 0);
      for (size_t p = 0; p < first.grads.size(); ++p)
        REQUIRE(first.grads[p] == again.grads[p]);  // exact, element by element
    }
  }
}

TEST_CASE("data-parallel: dropout masks depend on the example, not on the thread or the split",
          "[data_parallel][dropout]") {
  // x: (6 examples, 3, 5) of ones: dropout's output is its mask, scaled.
  const Tensor x = sg::ones({6, 3, 5}, sg::float64);
  sg::Generator gen(11);
  const std::vector<double> whole = sg::dropout(x, 0.5, true, gen).to_vector<double>();
  const uint64_t after_whole = gen.next_u64();
  for (int64_t parts : {1, 2, 3, 6}) {
    INFO(parts << " micro-batches");
    sg::Generator g(11);
    const uint64_t key = g.next_u64();  // the whole batch's key, shared by the micro-batches
    std::vector<double> joined;
    const int64_t count = 6 / parts;
    for (int64_t k = 0; k < parts; ++k) {
      const std::vector<double> piece =
          sg::dropout(sg::slice(x, 0, k * count, (k + 1) * count), 0.5, true, sg::DropoutKey{key, k * count, count})
              .to_vector<double>();
      joined.insert(joined.end(), piece.begin(), piece.end());
    }
    REQUIRE(joined == whole);
    REQUIRE(g.next_u64() == after_whole);  // one key drawn, as by the whole batch
  }
  // Both kinds of value appear: the comparison is not between two all-ones masks.
  REQUIRE(std::count(whole.begin(), whole.end(), 0.0) > 10);
  REQUIRE(std::count(whole.begin(), whole.end(), 2.0) > 10);
}

TEST_CASE("data-parallel: each micro-batch's Dropouts take the whole batch's keys, in call order",
          "[data_parallel][dropout]") {
  // Two Dropouts on a (7, 3, 5) parameter of ones, the second with a
  // generator of its own, the first twice: the gradient of the sum is the
  // sum of the three masks (scaled), the whole batch's whatever the split,
  // if every micro-batch's k-th dropout used the whole batch's k-th key.
  sg::nn::Dropout a(0.5), b(0.3);
  b.generator = std::make_shared<sg::Generator>(23);
  a.train(), b.train();
  Tensor w = sg::ones({7, 3, 5}, sg::float64).set_requires_grad();
  auto forward = [&](const Tensor& x, sg::nn::DropoutKeys* keys) {
    return a.forward(x, keys) + b.forward(x, keys) + a.forward(x, keys);
  };
  sg::manual_seed(31);
  sg::backward(sg::sum(forward(w, nullptr)));
  const std::vector<double> whole = w.grad().to_vector<double>();
  const uint64_t next_default = sg::default_generator().next_u64(), next_b = b.generator->next_u64();
  int distinct = 0;
  for (double v : whole) distinct += v != whole[0];
  REQUIRE(distinct > 10);  // the masks vary: a real comparison
  for (int threads : {1, 2, 3, 4, 7}) {
    INFO(threads << " threads");
    w.set_grad(Tensor());
    sg::manual_seed(31);
    b.generator = std::make_shared<sg::Generator>(23);
    sg::parallel::DataParallel dp({w}, threads);
    std::vector<std::pair<int64_t, int64_t>> places(static_cast<size_t>(threads), {-1, -1});
    dp.backward(7, [&](const sg::parallel::MicroBatch& m) {  // no Catch2 assertion on the workers
      if (m.dropout_keys) places[static_cast<size_t>(m.index)] = {m.dropout_keys->first, m.dropout_keys->count};
      return sg::sum(forward(sg::slice(w, 0, m.first, m.first + m.count), m.dropout_keys));
    });
    CHECK(w.grad().to_vector<double>() == whole);
    // The generators moved exactly as in the whole batch's forward.
    CHECK(sg::default_generator().next_u64() == next_default);
    CHECK(b.generator->next_u64() == next_b);
    const auto split = dp.split(7);
    for (const auto& m : split) CHECK(places[static_cast<size_t>(m.index)] == std::make_pair(m.first, m.count));
  }
  // A micro-batch whose dropouts draw from another generator than the first's is refused.
  sg::parallel::DataParallel dp({w}, 2);
  REQUIRE_THROWS_WITH(dp.backward(2,
                                  [&](const sg::parallel::MicroBatch& m) {
                                    const sg::nn::Dropout& first = m.index == 0 ? a : b;
                                    return sg::sum(first.forward(sg::slice(w, 0, m.first, m.first + 1), m.dropout_keys));
                                  }),
                      Contains("dropout: call 0") && Contains("another generator"));
}

TEST_CASE("data-parallel: a micro-batch whose tensor does not split by example is refused", "[data_parallel][dropout]") {
  Tensor w = sg::ones({6, 2}).set_requires_grad();
  sg::nn::Dropout drop(0.5);
  sg::parallel::DataParallel dp({w}, 2);
  REQUIRE_THROWS_WITH(dp.backward(6,
                                  [&](const sg::parallel::MicroBatch& m) {
                                    // 4 rows for a micro-batch of 3 examples
                                    return sg::sum(drop.forward(sg::slice(w, 0, 0, 4), m.dropout_keys));
                                  }),
                      Contains("dropout") && Contains("3 examples") && Contains("(4, 2)"));
  sg::nn::DropoutKeys no_function{.first = 0, .count = 2};
  REQUIRE_THROWS_WITH(drop.forward(w, &no_function), Contains("Dropout") && Contains("[0, 2)") && Contains("no key function"));
}

TEST_CASE("data-parallel: micro-batches split the batch in order, larger first", "[data_parallel]") {
  Tensor w = sg::ones({1}).set_requires_grad();
  sg::parallel::DataParallel dp({w}, 3);
  const auto m = dp.split(8);
  REQUIRE(m.size() == 3);
  CHECK((m[0].first == 0 && m[0].count == 3));
  CHECK((m[1].first == 3 && m[1].count == 3));
  CHECK((m[2].first == 6 && m[2].count == 2));
  CHECK(dp.split(2).size() == 2);  // never an empty micro-batch
  REQUIRE_THROWS_WITH(dp.split(0), Contains("batch of 0"));
  REQUIRE_THROWS_WITH(sg::parallel::DataParallel({w}, -1), Contains("DataParallel") && Contains("got -1"));
  REQUIRE_THROWS_WITH(sg::parallel::DataParallel({w * 2.0}, 2), Contains("parameter 0 is not a leaf"));
}

TEST_CASE("data-parallel: each micro-batch runs its ops on one thread, on threads of its own", "[data_parallel]") {
  Tensor w = sg::ones({1}, sg::float64).set_requires_grad();
  sg::parallel::DataParallel dp({w}, 3);
  std::vector<int> counts(3, 0);
  std::vector<std::thread::id> ids(3);
  const double loss = dp.backward(9, [&](const sg::parallel::MicroBatch& m) {
    counts[static_cast<size_t>(m.index)] = sg::num_threads();
    ids[static_cast<size_t>(m.index)] = std::this_thread::get_id();
    return sg::sum(w) * static_cast<double>(m.count);  // shares 3, 3, 3
  });
  CHECK(loss == 9);
  CHECK(w.grad().item<double>() == 9);
  CHECK(counts == std::vector<int>{1, 1, 1});
  CHECK(ids[0] == std::this_thread::get_id());  // the caller runs the first
  CHECK(ids[1] != ids[0]);
  CHECK(ids[2] != ids[1]);
}

TEST_CASE("data-parallel: an error in any micro-batch is rethrown and no .grad changes", "[data_parallel]") {
  Tensor w = sg::ones({2}, sg::float64).set_requires_grad();
  sg::parallel::DataParallel dp({w}, 3);
  dp.backward(3, [&](const sg::parallel::MicroBatch&) { return sg::sum(w); });
  const std::vector<double> before = w.grad().to_vector<double>();
  REQUIRE(before == std::vector<double>{3, 3});
  REQUIRE_THROWS_WITH(dp.backward(3,
                                  [&](const sg::parallel::MicroBatch& m) {
                                    if (m.index == 2) sg::fail("bad micro-batch ", m.index);
                                    return sg::sum(w);
                                  }),
                      Contains("bad micro-batch 2"));
  REQUIRE_THROWS_WITH(dp.backward(3, [&](const sg::parallel::MicroBatch&) { return w * 2.0; }),
                      Contains("micro-batch 0") && Contains("not a scalar"));
  REQUIRE(w.grad().to_vector<double>() == before);
  // The workers survive an error: the next step works.
  dp.backward(3, [&](const sg::parallel::MicroBatch&) { return sg::sum(w); });
  REQUIRE(w.grad().to_vector<double>() == std::vector<double>{6, 6});
}

// In float64, so that 60 steps of AdamW do not amplify the rounding
// differences of the sum's order into visible ones (in float32 the curves
// part in the third digit by step 60).
TEST_CASE("data-parallel: train() on 2 threads follows the one-thread run's loss curve", "[data_parallel][training]") {
  sg::study::Config c;
  c.task = "sort";
  c.positional = sg::nn::Positional::learned;
#if defined(__SANITIZE_ADDRESS__)
  // The same code for 20 steps under ASan (memory, not the curve's length,
  // is what it checks): 60 steps took 103 s of the asan stage.
  c.steps = 20;
  c.eval_every = 10;
#else
  c.steps = 60;
  c.eval_every = 20;
#endif
  c.dropout = 0.1;
  auto run = [&](int threads) {
    sg::ThreadCountGuard guard(threads);
    REQUIRE(sg::study::data_parallel_threads(c) == (threads > 1 ? threads : 1));
    sg::manual_seed(c.seed);
    sg::study::Model model(c);
    model.to(sg::float64);
    return sg::study::train(model, c);
  };
  const sg::study::Result one = run(1), two = run(2), again = run(2);
  REQUIRE(one.curve.size() == two.curve.size());
  for (size_t i = 0; i < one.curve.size(); ++i) {
    INFO("step " << one.curve[i].step);
    CHECK(two.curve[i].loss == Approx(one.curve[i].loss).epsilon(1e-9));
    CHECK(two.curve[i].eval_acc == one.curve[i].eval_acc);
    CHECK(two.curve[i].loss == again.curve[i].loss);  // the same bits
    CHECK(two.curve[i].grad_norm == again.curve[i].grad_norm);
  }
  CHECK(one.curve.back().loss < one.curve.front().loss);
}
