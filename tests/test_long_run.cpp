// A short long run: the encoder's training step (every layer of the tiny
// encoder, masks, dropout, cross-entropy, AdamW, clipping, evaluation in
// no-grad mode) repeated a thousand times leaves no graph node behind and
// keeps resident memory flat. The MLP test in tests/autograd/test_engine.cpp
// covers the engine; this one covers the layers and the optimizer, whose
// leaks (a node kept by attention weights, optimizer state growing) the MLP
// would not see. bench/long_run.cpp runs the full-size model for 20,000
// steps (docs/reliability.md).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>

#include "autograd/engine.hpp"
#include "autograd/ops/cross_entropy.hpp"
#include "core/random.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"
#include "study/encoder_training.hpp"
#include "optim/optim.hpp"
#include "test_util.hpp"

using test_util::resident_bytes;

TEST_CASE("a thousand encoder training steps keep graph nodes and resident memory flat", "[memory][training]") {
#if defined(__SANITIZE_ADDRESS__)
  // ASan's quarantine keeps freed memory resident on purpose, so only the
  // node count is checked there (and LeakSanitizer checks the rest at exit).
  const int steps = 200;
#else
  const int steps = 1000;
#endif
  const int baseline_step = 100;
  sg::study::Config c;
  c.hidden = 32;
  c.heads = 4;
  c.ffn = 64;
  c.batch = 16;
  c.dropout = 0.1;
  sg::set_num_threads(1);
  sg::manual_seed(0);
  sg::study::Model model(c);
  sg::optim::AdamW opt(model.parameters(), {.lr = 3e-3});
  const sg::study::EvalSet eval_set = sg::study::make_eval_set(c, c.min_len, c.max_len, 1);
  sg::Generator data(1);
  const int64_t nodes_before = sg::Node::live_count();

  int64_t max_nodes = 0;
  long rss_baseline = 0;
  double first_loss = 0, loss = 0;
  for (int step = 1; step <= steps; ++step) {
    const sg::study::Batch b = sg::study::make_batch(c, c.batch, c.min_len, c.max_len, data);
    {
      const sg::Tensor l = sg::cross_entropy(model.forward(b.ids, b.valid_lens), b.labels, sg::study::kIgnore);
      opt.zero_grad();
      sg::backward(l);
      sg::optim::clip_grad_norm(model.parameters(), 1.0);
      opt.step();
      loss = l.item<double>();
    }
    if (step == 1) first_loss = loss;
    if (step % 100 == 0) sg::study::evaluate(model, eval_set);
    max_nodes = std::max(max_nodes, sg::Node::live_count() - nodes_before);
    if (step == baseline_step) rss_baseline = resident_bytes();
  }
  const long rss_end = resident_bytes();
  INFO("resident at step " << baseline_step << ": " << rss_baseline << " bytes, at step " << steps << ": "
                           << rss_end);
  CHECK(max_nodes == 0);
  REQUIRE(rss_baseline > 0);
#if !defined(__SANITIZE_ADDRESS__)
  // 900 steps may not add more than 256 KiB: a node kept alive each step
  // would keep its input tensors (kilobytes each) and add megabytes.
  CHECK(rss_end - rss_baseline < 256 * 1024);
#endif
  CHECK(loss < first_loss);  // and it trained
}
