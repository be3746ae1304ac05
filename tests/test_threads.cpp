// The thread-safety contract (docs/architecture.md): inference on one model
// from several threads gives the same bits as one thread; the default
// generator can be shared; concurrent backward passes into shared leaves sum
// exactly; checkpoint saves from several threads never share a temporary;
// sampling from one GPT on several threads gives each its own tokens.
// Run under ThreadSanitizer by the tsan preset (docs/reliability.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/dropout.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/shape.hpp"
#include "autograd/ops/unary.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/basic.hpp"
#include "checkpoint/checkpoint.hpp"
#include "parallel/data_parallel.hpp"
#include "nn/linear.hpp"
#include "nn/transformer.hpp"
#include "decoding/sampling.hpp"
#include "nn/gpt.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using sg::Tensor;

namespace {
constexpr int kThreads = 4;

// Runs f(0) ... f(n - 1) on n threads. An exception on a thread is rethrown
// here after all have joined (the first thread's first), so that a test fails
// with its message rather than aborting the program.
template <class F>
void run_threads(int n, F f) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&f, &errors, t] {
      try {
        f(t);
      } catch (...) {
        errors[static_cast<size_t>(t)] = std::current_exception();
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::equal(static_cast<const char*>(a.raw_data()), static_cast<const char*>(a.raw_data()) + a.nbytes(),
                    static_cast<const char*>(b.raw_data()));
}
}  // namespace

TEST_CASE("threads: inference on one MultiHeadAttention from several threads gives one thread's bits",
          "[threads]") {
  sg::manual_seed(3);
  sg::nn::MultiHeadAttention mha(16, 4, 0.2);
  mha.eval();
  sg::Generator gen(7);
  std::vector<Tensor> xs, lens;
  for (int t = 0; t < kThreads; ++t) {
    xs.push_back(sg::randn({2, 5 + t, 16}, gen));
    lens.push_back(sg::from_vector(std::vector<int64_t>{3, 5 + t}, {2}));
  }
  std::vector<Tensor> want(kThreads), want_w(kThreads);
  {
    sg::NoGradGuard no_grad;
    for (int t = 0; t < kThreads; ++t) want[t] = mha.forward(xs[t], xs[t], xs[t], lens[t], nullptr, &want_w[t]);
  }
  std::vector<int> mismatches(kThreads, 0);
  run_threads(kThreads, [&](int t) {
    sg::NoGradGuard no_grad;
    for (int rep = 0; rep < 50; ++rep) {
      // Every other forward asks for the weights: each gets its own, whole.
      Tensor w;
      const Tensor got = mha.forward(xs[t], xs[t], xs[t], lens[t], nullptr, rep % 2 ? &w : nullptr);
      if (!same_bits(got, want[t]) || (rep % 2 && !same_bits(w, want_w[t]))) ++mismatches[t];
    }
  });
  for (int t = 0; t < kThreads; ++t) CHECK(mismatches[t] == 0);
  for (int t = 0; t < kThreads; ++t) CHECK(want_w[t].shape() == sg::Shape{2, 4, 5 + t, 5 + t});
}

TEST_CASE("threads: inference on one TransformerEncoder from several threads gives one thread's bits", "[threads]") {
  sg::manual_seed(4);
  sg::nn::TransformerEncoderOptions options;
  options.vocab_size = 20, options.num_hiddens = 16, options.ffn_num_hiddens = 32;
  sg::nn::TransformerEncoder encoder(options);
  encoder.eval();
  sg::Generator gen(8);
  const Tensor ids = sg::randint(0, 20, {3, 7}, gen);
  const Tensor lens = sg::from_vector(std::vector<int64_t>{7, 4, 2}, {3});
  Tensor want;
  std::vector<Tensor> want_w;  // per block
  {
    sg::NoGradGuard no_grad;
    want = encoder.forward(ids, lens, nullptr, &want_w);
  }
  std::vector<int> mismatches(kThreads, 0);
  run_threads(kThreads, [&](int t) {
    sg::NoGradGuard no_grad;
    for (int rep = 0; rep < 20; ++rep) {
      std::vector<Tensor> w;
      bool same = same_bits(encoder.forward(ids, lens, nullptr, &w), want) && w.size() == want_w.size();
      for (size_t i = 0; same && i < w.size(); ++i) same = same_bits(w[i], want_w[i]);
      if (!same) ++mismatches[t];
    }
  });
  for (int t = 0; t < kThreads; ++t) CHECK(mismatches[t] == 0);
}

TEST_CASE("threads: sampling from one GPT on several threads, each with its own cache and generator, gives one thread's tokens",
          "[threads]") {
  sg::manual_seed(6);
  sg::nn::GPT model({.vocab_size = 11, .block_size = 6, .n_layer = 2, .n_head = 2, .n_embd = 16});
  model.eval();
  auto sample = [&](int t) {
    sg::Generator gen(100 + static_cast<uint64_t>(t));
    return sg::decoding::generate(model, {1, 2, 3}, {.max_new_tokens = 12}, gen);
  };
  std::vector<std::vector<int64_t>> want;
  for (int t = 0; t < kThreads; ++t) want.push_back(sample(t));
  std::vector<int> mismatches(kThreads, 0);
  run_threads(kThreads, [&](int t) {
    for (int rep = 0; rep < 5; ++rep)
      if (sample(t) != want[static_cast<size_t>(t)]) ++mismatches[t];
  });
  for (int t = 0; t < kThreads; ++t) CHECK(mismatches[t] == 0);
}

TEST_CASE("threads: the default generator shared by threads never gives one value twice", "[threads]") {
  sg::manual_seed(11);
  constexpr int kDraws = 20'000;
  std::vector<std::vector<uint64_t>> words(kThreads);
  std::vector<Tensor> tensors(kThreads);
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < kDraws; ++i) words[t].push_back(sg::default_generator().next_u64());
    tensors[t] = sg::rand({kDraws}, sg::float64);  // one locked stretch of the stream
  });
  // Every 64-bit word drawn is distinct (xoshiro256** repeats none in 2^256).
  std::set<uint64_t> all;
  for (const auto& w : words) all.insert(w.begin(), w.end());
  CHECK(all.size() == static_cast<size_t>(kThreads * kDraws));
  std::set<double> values;
  for (const Tensor& t : tensors)
    for (double v : t.to_vector<double>()) values.insert(v);
  CHECK(values.size() == static_cast<size_t>(kThreads * kDraws));
  // Together they are exactly the stream's next 2 x 4 x 20,000 draws (one
  // 64-bit word each): none skipped, none repeated.
  sg::Generator replay(11);
  std::set<uint64_t> stream_words;
  std::set<double> stream_values;
  for (int i = 0; i < 2 * kThreads * kDraws; ++i) {
    const uint64_t x = replay.next_u64();
    stream_words.insert(x);
    stream_values.insert(static_cast<double>(x >> 11) * 0x1.0p-53);  // Generator::uniform
  }
  int64_t outside = 0;
  for (uint64_t x : all) outside += stream_words.count(x) == 0;
  for (double v : values) outside += stream_values.count(v) == 0;
  CHECK(outside == 0);
}

TEST_CASE("threads: each thread with its own generator gets a reproducible stream", "[threads]") {
  std::vector<Tensor> got(kThreads);
  run_threads(kThreads, [&](int t) {
    sg::Generator gen(100 + static_cast<uint64_t>(t));
    got[t] = sg::dropout(sg::ones({1000}), 0.5, true, gen);
  });
  for (int t = 0; t < kThreads; ++t) {
    sg::Generator gen(100 + static_cast<uint64_t>(t));
    CHECK(same_bits(got[t], sg::dropout(sg::ones({1000}), 0.5, true, gen)));
  }
  // The Dropout module takes one too.
  std::vector<Tensor> masks(kThreads);
  run_threads(kThreads, [&](int t) {
    sg::nn::Dropout drop(0.5);
    drop.generator = std::make_shared<sg::Generator>(100 + static_cast<uint64_t>(t));
    masks[t] = drop.forward(sg::ones({1000}));
  });
  for (int t = 0; t < kThreads; ++t) CHECK(same_bits(masks[t], got[t]));
}

TEST_CASE("threads: a data-parallel step's micro-batches share the step's dropout keys", "[threads]") {
  // The workers ask for the same keys at once (parallel/data_parallel.cpp, under
  // a lock): the summed gradient is the whole batch's masks, bit for bit.
  sg::nn::Dropout drop(0.5);
  Tensor w = sg::ones({8, 64}, sg::float64).set_requires_grad();
  auto forward = [&](const Tensor& x, sg::nn::DropoutKeys* keys) {
    return sg::sum(drop.forward(x, keys) * drop.forward(x, keys));
  };
  sg::manual_seed(12);
  sg::backward(forward(w, nullptr));
  const Tensor whole = sg::clone(w.grad());
  w.set_grad(Tensor());
  sg::manual_seed(12);
  sg::parallel::DataParallel dp({w}, kThreads);
  dp.backward(8, [&](const sg::parallel::MicroBatch& m) {
    return forward(sg::slice(w, 0, m.first, m.first + m.count), m.dropout_keys);
  });
  CHECK(same_bits(w.grad(), whole));
  CHECK(sg::max(whole).item<double>() > 0);  // not all dropped: a real comparison
}

TEST_CASE("threads: concurrent backward passes into one shared leaf add exactly", "[threads]") {
  // Each pass adds 1 to every element of w's gradient: 4 threads x 10,000
  // passes must give 40,000 exactly (float64 holds every integer here).
  const Tensor w = sg::ones({3}, sg::float64).set_requires_grad();
  constexpr int kPasses = 10'000;
  run_threads(kThreads, [&](int) {
    for (int i = 0; i < kPasses; ++i) sg::backward(sg::sum(w * 1.0));
  });
  CHECK(w.grad().to_vector<double>() == std::vector<double>(3, kThreads * kPasses));
}

TEST_CASE("threads: tensors one thread makes and another drops reuse their memory", "[threads][memory]") {
  // A worker makes 1 MiB tensors and the main thread drops them, in lockstep,
  // as a data-parallel step's gradients go: the freed blocks must flow back
  // to the worker's next tensors (core/allocator.cpp), not pile up in the
  // main thread's cache while the worker touches fresh pages every time.
  constexpr int64_t kFloats = int64_t{1} << 18;
  constexpr int kWarmup = 20, kRounds = 300;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Tensor> slot;
  std::thread worker([&] {
    for (int i = 0; i < kWarmup + kRounds; ++i) {
      Tensor t = sg::full({kFloats}, i);
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !slot; });
      slot = std::move(t);
      cv.notify_all();
    }
  });
  long rss_after_warmup = 0;
  bool values_right = true;
  for (int i = 0; i < kWarmup + kRounds; ++i) {
    std::optional<Tensor> got;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return slot.has_value(); });
      got.swap(slot);
      cv.notify_all();
    }
    const float* v = got->data<float>();
    values_right = values_right && v[0] == float(i) && v[kFloats - 1] == float(i);
    got.reset();  // freed here, on the main thread
    if (i == kWarmup - 1) rss_after_warmup = test_util::resident_bytes();
  }
  worker.join();
  const long rss_end = test_util::resident_bytes();
  CHECK(values_right);
  INFO("resident after " << kWarmup << " tensors: " << rss_after_warmup << " bytes, after " << kWarmup + kRounds
                         << ": " << rss_end);
  REQUIRE(rss_after_warmup > 0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // Sanitizers keep freed memory aside on purpose; elsewhere 300 MiB made
  // and dropped may add no more than a few tensors' worth.
  CHECK(rss_end - rss_after_warmup < 16L * 1024 * 1024);
#endif
}

TEST_CASE("threads: training one shared model's gradients: one model, several graphs", "[threads]") {
  // Data-parallel by hand: each thread runs forward and backward on its own
  // batch into the shared parameters; the sum equals the serial sum.
  sg::manual_seed(5);
  sg::nn::Linear layer(8, 4);
  sg::Generator gen(9);
  std::vector<Tensor> batches;
  for (int t = 0; t < kThreads; ++t) batches.push_back(sg::randn({16, 8}, gen));
  auto loss_of = [&](const Tensor& x) { return sg::sum(sg::tanh(layer.forward(x))); };
  for (const Tensor& x : batches) sg::backward(loss_of(x));
  std::vector<Tensor> serial;
  for (const Tensor& p : layer.parameters()) serial.push_back(sg::clone(p.grad()));
  layer.zero_grad();
  run_threads(kThreads, [&](int t) { sg::backward(loss_of(batches[t])); });
  const std::vector<Tensor> params = layer.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<double> a = params[i].grad().to_vector<double>(), b = serial[i].to_vector<double>();
    for (size_t k = 0; k < a.size(); ++k) CHECK(a[k] == Approx(b[k]).epsilon(1e-5).margin(1e-6));
  }
}

TEST_CASE("threads: second-order gradients of one shared model on several threads give one thread's bits",
          "[threads][second_order]") {
  // Each thread builds its own graph from the shared parameters, takes the
  // gradient with create_graph, and differentiates a gradient penalty of it
  // (WGAN-GP's ||dL/dx||^2) again: the engine's recorded backward reads the
  // shared parameters and writes only the thread's own graph.
  sg::manual_seed(6);
  sg::nn::Linear layer(8, 4);
  const std::vector<Tensor> params = layer.parameters();
  sg::Generator gen(10);
  std::vector<Tensor> batches;
  for (int t = 0; t < kThreads; ++t) batches.push_back(sg::randn({16, 8}, gen));
  auto penalty_grads = [&](const Tensor& batch) {
    const Tensor x = sg::clone(batch).set_requires_grad();
    const Tensor dx = sg::grad(sg::sum(sg::tanh(layer.forward(x))), {x}, Tensor(), {.create_graph = true})[0];
    return sg::grad(sg::sum(dx * dx), params);  // second order: through the backward of tanh and linear
  };
  std::vector<std::vector<Tensor>> want;
  for (const Tensor& b : batches) want.push_back(penalty_grads(b));
  std::vector<int> mismatches(kThreads, 0);
  run_threads(kThreads, [&](int t) {
    for (int rep = 0; rep < 10; ++rep) {
      const std::vector<Tensor> got = penalty_grads(batches[t]);
      bool same = got.size() == want[t].size();
      for (size_t i = 0; same && i < got.size(); ++i) same = same_bits(got[i], want[t][i]);
      if (!same) ++mismatches[t];
    }
  });
  for (int t = 0; t < kThreads; ++t) CHECK(mismatches[t] == 0);
  for (const Tensor& p : params) CHECK_FALSE(p.grad().defined());  // grad() leaves .grad alone
}

TEST_CASE("threads: checkpoint saves from several threads to one path never share a temporary", "[threads]") {
  const fs::path dir = fs::temp_directory_path() / ("sg-threads-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "model.safetensors").string();
  std::vector<std::unique_ptr<sg::nn::Linear>> models;
  for (int t = 0; t < kThreads; ++t) {
    sg::manual_seed(static_cast<uint64_t>(t));
    models.push_back(std::make_unique<sg::nn::Linear>(64, 64));
  }
  std::vector<std::string> errors(kThreads);
  run_threads(kThreads, [&](int t) {
    try {
      for (int rep = 0; rep < 10; ++rep) sg::checkpoint::save(path, *models[t]);
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  });
  for (int t = 0; t < kThreads; ++t) CHECK(errors[t].empty());
  // One complete file from one of the threads; no temporary left behind.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  CHECK(names == std::vector<std::string>{"model.safetensors"});
  sg::nn::Linear loaded(64, 64);
  sg::checkpoint::load(path, loaded);
  int matches = 0;
  for (int t = 0; t < kThreads; ++t) matches += same_bits(loaded.weight, models[t]->weight) && same_bits(loaded.bias, models[t]->bias);
  CHECK(matches == 1);
  fs::remove_all(dir);
}
