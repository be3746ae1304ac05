// Determinism: training the tiny encoder (study/encoder_training.hpp's
// model and data, with dropout on, so the generator matters) gives
//   * bitwise-identical loss curves and weights for the same seed and
//     thread count,
//   * the same curve on 1 and 2 threads to 1e-5 relative (only BLIS may
//     reassociate sums differently; every other kernel gives each output
//     element to one thread in a fixed order),
//   * after a checkpoint (model, optimizer, generator) and a resume into a
//     fresh model, bitwise the same continuation as the uninterrupted run.
// One generator, sg::default_generator(), draws the data, the initial
// weights and the dropout masks, so the checkpoint's generator state is the
// whole random state of a run.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "core/random.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"
#include "checkpoint/checkpoint.hpp"
#include "study/encoder_training.hpp"
#include "optim/optim.hpp"
#include "test_util.hpp"

namespace {

// The tiny encoder of train_encoder (vocab 16, 64 hiddens, 4 heads, FFN 128,
// 2 blocks, batch 64: big enough that elementwise and row-wise kernels take
// their OpenMP paths on 2 threads), with dropout.
sg::study::Config tiny_config() {
  sg::study::Config c;
  c.task = "shift";
  c.dropout = 0.1;
  return c;
}

// Sets the thread count for one scope, then puts the previous one back.
struct Threads {
  int previous = sg::num_threads();
  explicit Threads(int n) { sg::set_num_threads(n); }
  ~Threads() { sg::set_num_threads(previous); }
};

// A model with its optimizer and schedule, stepped one batch at a time.
struct Trainer {
  sg::study::Config c;
  sg::study::Model model;
  sg::optim::AdamW opt;
  sg::optim::Schedule schedule;
  explicit Trainer(const sg::study::Config& config)
      : c(config),
        model(c),
        opt(model.parameters(), {.lr = 3e-3, .weight_decay = 0.01}),
        schedule(sg::optim::warmup_cosine_schedule(3e-3, 5, 40, 3e-4)) {
    model.train();
  }
  // One training step; returns the loss.
  double step() {
    const sg::study::Batch b = sg::study::make_batch(c, c.batch, c.min_len, c.max_len, sg::default_generator());
    const sg::Tensor loss = sg::cross_entropy(model.forward(b.ids, b.valid_lens), b.labels, sg::study::kIgnore);
    opt.zero_grad();
    sg::backward(loss);
    sg::optim::clip_grad_norm(model.parameters(), 1.0);
    opt.set_lr(schedule(opt.step_count()));
    opt.step();
    return loss.item<double>();
  }
  std::vector<double> steps(int n) {
    std::vector<double> losses;
    for (int i = 0; i < n; ++i) losses.push_back(step());
    return losses;
  }
  // Every parameter's bytes, in order: equal means bitwise equal.
  std::string weights() const {
    std::string out;
    for (const sg::Tensor& p : model.parameters())
      out.append(static_cast<const char*>(p.raw_data()), p.nbytes());
    return out;
  }
};

struct Curve {
  std::vector<double> losses;
  std::string weights;
};

Curve run(uint64_t seed, int threads, int steps) {
  Threads t(threads);
  sg::manual_seed(seed);
  Trainer trainer(tiny_config());
  Curve c;
  c.losses = trainer.steps(steps);
  c.weights = trainer.weights();
  return c;
}

// Bitwise equality of two loss curves (== would also call -0.0 and 0.0 equal).
bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("the same seed and thread count give bitwise-identical training, and 1 and 2 threads agree to 1e-5",
          "[determinism]") {
  // Fewer steps on 2 threads: CTest runs two tests at once, and 2-thread
  // steps are slow while another process holds the other core.
  const Curve one = run(7, 1, 24), one_again = run(7, 1, 24);
  const Curve two = run(7, 2, 8), two_again = run(7, 2, 8);
  CHECK(bitwise_equal(one.losses, one_again.losses));
  CHECK(one.weights == one_again.weights);
  CHECK(bitwise_equal(two.losses, two_again.losses));
  CHECK(two.weights == two_again.weights);

  // NaN-proof: a NaN or infinite loss on either side is an infinite difference.
  const std::vector<double> two_losses(two.losses.begin(), two.losses.end());
  const std::vector<double> one_losses(one.losses.begin(), one.losses.begin() + static_cast<long>(two.losses.size()));
  const double worst = test_util::max_rel_diff(two_losses, one_losses);
  CHECK(test_util::max_rel_diff(one.losses, one.losses) == 0);  // every loss finite (0 unless one is not)
  INFO("largest relative difference between the 1- and 2-thread losses: " << worst);
  CHECK(worst <= 1e-5);

  // The curves are real ones: another seed (other data, weights and dropout
  // masks) gives another curve from the first step, and training learns.
  const Curve other = run(8, 1, 3);
  CHECK(other.losses[0] != one.losses[0]);
  CHECK(one.losses.back() < 0.95 * one.losses.front());
}

TEST_CASE("resuming from a checkpoint continues the encoder's training bitwise", "[determinism][checkpoint]") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("smallgrad_determinism_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  const int first = 10, second = 10;
  Threads t(1);

  // Uninterrupted: `first` steps, a checkpoint, `second` more.
  sg::manual_seed(3);
  Trainer whole(tiny_config());
  whole.steps(first);
  sg::checkpoint::save(path, whole.model, &whole.opt, {}, &sg::default_generator());
  const std::vector<double> expected = whole.steps(second);

  // Resumed: another seed gives other weights and another random stream;
  // the checkpoint replaces all of it.
  sg::manual_seed(99);
  Trainer resumed(tiny_config());
  REQUIRE(resumed.weights() != whole.weights());
  sg::checkpoint::load(path, resumed.model, &resumed.opt, &sg::default_generator());
  CHECK(resumed.opt.step_count() == first);
  const std::vector<double> got = resumed.steps(second);
  std::filesystem::remove(path);

  CHECK(bitwise_equal(got, expected));
  CHECK(resumed.weights() == whole.weights());
}
