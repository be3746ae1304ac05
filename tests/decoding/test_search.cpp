// decoding/search.cpp: greedy search against a search that runs the whole
// prefix through the teacher-forced forward at every step, beam width 1
// against greedy, beam search against an exhaustive search over every
// output, batched against one source at a time, a stop flag, and bad options.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <vector>

#include "autograd/engine.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "decoding/search.hpp"
#include "seq2seq_util.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Tensor;
using sg::decoding::Hypothesis;
using sg::decoding::SearchOptions;
using sg::nn::Positional;
using namespace test_util;

namespace {

// Sources (3, 5), lengths 5, 3 and 1.
const Tensor kSource = ids({1, 3, 6, 2, 4, 5, 2, 3, 0, 0, 4, 0, 0, 0, 0}, {3, 5});
const Tensor kSourceLens = ids({5, 3, 1}, {3});

SearchOptions options(int64_t max_len, int64_t beam_width = 1, double alpha = 0.75) {
  return {.bos = 1, .eos = 2, .pad = 0, .max_len = max_len, .beam_width = beam_width, .length_alpha = alpha};
}

// Source b of kSource alone: (1, 5) and (1).
Tensor source(int64_t b) { return sg::kernel::slice(kSource, 0, b, b + 1); }
Tensor source_len(int64_t b) { return sg::kernel::slice(kSourceLens, 0, b, b + 1); }

// log P(tokens then <eos> if ended | source b), from the teacher-forced forward.
double log_prob(const sg::nn::EncoderDecoder& model, int64_t b, const std::vector<int64_t>& tokens, bool ended) {
  std::vector<int64_t> input = {1}, labels = tokens;
  input.insert(input.end(), tokens.begin(), tokens.end());
  if (ended) labels.push_back(2);
  else input.pop_back();
  const int64_t n = static_cast<int64_t>(labels.size());
  const Tensor logits = model.forward(source(b), ids(input, {1, n}), source_len(b));
  const std::vector<double> lp = sg::kernel::log_softmax(sg::kernel::reshape(logits, {n, -1})).to_vector<double>();
  const int64_t vocab = logits.shape()[2];
  double sum = 0;
  for (int64_t t = 0; t < n; ++t) sum += lp[static_cast<size_t>(t * vocab + labels[static_cast<size_t>(t)])];
  return sum;
}

}  // namespace

TEST_CASE("greedy equals a search that reruns the whole prefix at every step", "[decoding]") {
  sg::NoGradGuard no_grad;
  int64_t tokens_seen = 0, ended_seen = 0, cut_seen = 0;  // the cases are not all trivial
  for (Positional kind : {Positional::sinusoidal, Positional::rotary, Positional::relative})
  for (double eos_bias : {0.0, 1.0, 2.0}) {
    INFO(sg::nn::positional_name(kind) << ", <eos> logit + " << eos_bias);
    auto model = tiny_model(kind, 10, false, 5);
    model->decoder->dense->bias.data<double>()[2] += eos_bias;  // <eos> sooner
    const std::vector<Hypothesis> got = sg::decoding::greedy(*model, kSource, kSourceLens, options(6));
    REQUIRE(got.size() == 3);
    for (int64_t b = 0; b < 3; ++b) {
      // The naive loop: the teacher-forced forward on <bos> + the tokens so far, argmax of its last row.
      std::vector<int64_t> input = {1}, tokens;
      bool ended = false;
      while (!ended && static_cast<int64_t>(tokens.size()) < 6) {
        const int64_t n = static_cast<int64_t>(input.size());
        const Tensor logits = model->forward(source(b), ids(input, {1, n}), source_len(b));
        const std::vector<double> last = sg::kernel::slice(logits, 1, n - 1, n).to_vector<double>();
        const int64_t token = std::max_element(last.begin(), last.end()) - last.begin();
        if (token == 2) ended = true;
        else tokens.push_back(token), input.push_back(token);
      }
      INFO("source " << b);
      REQUIRE(got[static_cast<size_t>(b)].tokens == tokens);
      REQUIRE(got[static_cast<size_t>(b)].ended == ended);
      REQUIRE(std::abs(got[static_cast<size_t>(b)].log_prob - log_prob(*model, b, tokens, ended)) <= 1e-12);
      tokens_seen += static_cast<int64_t>(tokens.size()), ended_seen += ended, cut_seen += !ended;
    }
  }
  INFO(tokens_seen << " tokens, " << ended_seen << " ended, " << cut_seen << " at max_len");
  REQUIRE(tokens_seen >= 9);
  REQUIRE(ended_seen >= 1);
  REQUIRE(cut_seen >= 1);
}

TEST_CASE("Beam search of width 1 is greedy search", "[decoding]") {
  for (Positional kind : {Positional::none, Positional::learned, Positional::alibi}) {
    for (sg::nn::DecodingMode mode : {sg::nn::DecodingMode::cached, sg::nn::DecodingMode::d2l}) {
      for (uint64_t seed : {20, 21, 22}) {
        INFO(sg::nn::positional_name(kind) << ", seed " << seed << (mode == sg::nn::DecodingMode::d2l ? ", d2l" : ""));
        auto model = tiny_model(kind, seed, seed == 22, 5, sg::float32);
        model->decoder->dense->bias.data<float>()[2] += static_cast<float>(seed - 20);  // some end at <eos>
        SearchOptions o = options(7);
        o.mode = mode;
        const std::vector<Hypothesis> greedy = sg::decoding::greedy(*model, kSource, kSourceLens, o);
        const std::vector<Hypothesis> beam = sg::decoding::beam_search(*model, kSource, kSourceLens, o);
        for (size_t b = 0; b < 3; ++b) {
          REQUIRE(beam[b].tokens == greedy[b].tokens);
          REQUIRE(beam[b].ended == greedy[b].ended);
          REQUIRE(beam[b].log_prob == greedy[b].log_prob);  // the same additions in the same order
        }
      }
    }
  }
}

TEST_CASE("A beam wider than every output is an exhaustive search by normalised score", "[decoding]") {
  // Target vocabulary 5 (<eos> = 2), max_len 3: 1 + 4 + 16 outputs end at
  // <eos>, 64 stop at max_len; a beam of 100 never prunes one.
  sg::NoGradGuard no_grad;
  for (double alpha : {0.0, 0.75, 2.0}) {
    auto model = tiny_model(Positional::sinusoidal, 30, false, 5);
    const std::vector<Hypothesis> beam = sg::decoding::beam_search(*model, kSource, kSourceLens, options(3, 100, alpha));
    for (int64_t b = 0; b < 3; ++b) {
      double best = -INFINITY;
      std::vector<int64_t> best_tokens;
      bool best_ended = false;
      std::function<void(std::vector<int64_t>&)> visit = [&](std::vector<int64_t>& tokens) {
        for (bool ended : {true, false}) {
          const int64_t length = static_cast<int64_t>(tokens.size()) + (ended ? 1 : 0);
          if (length > 3 || (!ended && length < 3)) continue;
          const double score = log_prob(*model, b, tokens, ended) / std::pow(static_cast<double>(length), alpha);
          if (score > best) best = score, best_tokens = tokens, best_ended = ended;
        }
        if (tokens.size() + 1 >= 3 + 1) return;
        for (int64_t v : {0, 1, 3, 4}) {
          tokens.push_back(v);
          if (tokens.size() <= 3) visit(tokens);
          tokens.pop_back();
        }
      };
      std::vector<int64_t> empty;
      visit(empty);
      INFO("alpha " << alpha << ", source " << b);
      const Hypothesis& h = beam[static_cast<size_t>(b)];
      REQUIRE(h.tokens == best_tokens);
      REQUIRE(h.ended == best_ended);
      REQUIRE(std::abs(h.score - best) <= 1e-12);
    }
  }
}

TEST_CASE("Searches batched over sources equal one source at a time", "[decoding]") {
  auto model = tiny_model(Positional::rotary, 40, false, 6, sg::float32);
  const SearchOptions o = options(6, 3);
  const std::vector<Hypothesis> greedy = sg::decoding::greedy(*model, kSource, kSourceLens, o);
  const std::vector<Hypothesis> beam = sg::decoding::beam_search(*model, kSource, kSourceLens, o);
  for (int64_t b = 0; b < 3; ++b) {
    INFO("source " << b);
    const Hypothesis g = sg::decoding::greedy(*model, source(b), source_len(b), o)[0];
    const Hypothesis k = sg::decoding::beam_search(*model, source(b), source_len(b), o)[0];
    REQUIRE(g.tokens == greedy[static_cast<size_t>(b)].tokens);
    REQUIRE(k.tokens == beam[static_cast<size_t>(b)].tokens);
    REQUIRE(std::abs(k.score - beam[static_cast<size_t>(b)].score) <= 1e-5);
    REQUIRE(static_cast<int64_t>(k.tokens.size()) <= 6);
  }
}

TEST_CASE("Beam search ends before its next step once its stop flag is set", "[decoding]") {
  auto model = tiny_model(Positional::rotary, 40, false, 6, sg::float32);
  std::atomic<bool> stop{false};
  SearchOptions o = options(6, 3);
  o.stop = &stop;
  const std::vector<Hypothesis> unstopped = sg::decoding::beam_search(*model, kSource, kSourceLens, o);
  const std::vector<Hypothesis> plain = sg::decoding::beam_search(*model, kSource, kSourceLens, options(6, 3));
  for (size_t b = 0; b < plain.size(); ++b) REQUIRE(unstopped[b].tokens == plain[b].tokens);
  stop = true;
  REQUIRE_THROWS_WITH(sg::decoding::beam_search(*model, kSource, kSourceLens, o),
                      Contains("beam_search: stopped before step 0 of at most 6"));
}

TEST_CASE("Searches refuse bad options with one clear message", "[decoding][errors]") {
  auto model = tiny_model(Positional::sinusoidal, 50, false, 5, sg::float32);
  REQUIRE_THROWS_WITH(sg::decoding::beam_search(*model, kSource, kSourceLens, options(5, 0)),
                      Contains("beam_search: beam_width must be at least 1, got 0"));
  SearchOptions o = options(5);
  o.eos = 5;
  REQUIRE_THROWS_WITH(sg::decoding::greedy(*model, kSource, kSourceLens, o),
                      Contains("greedy: eos id 5 is outside the target vocabulary [0, 5)"));
  REQUIRE_THROWS_WITH(sg::decoding::greedy(*model, kSource, kSourceLens, SearchOptions{}),
                      Contains("bos id -1 is outside the target vocabulary"));
  REQUIRE_THROWS_WITH(sg::decoding::greedy(*model, kSource, kSourceLens, options(0)), Contains("max_len must be at least 1, got 0"));
  REQUIRE_THROWS_WITH(sg::decoding::beam_search(*model, kSource, kSourceLens, options(4, 2, -1)),
                      Contains("length_alpha must be a finite number >= 0, got -1"));
  REQUIRE_THROWS_WITH(sg::decoding::greedy(*model, sg::zeros({2, 0}, sg::int64), Tensor(), options(4)),
                      Contains("the source is empty"));
  REQUIRE_THROWS_WITH(sg::decoding::greedy(*model, ids({1, 9}, {1, 2}), Tensor(), options(4)), Contains("embedding: id 9"));
  model->train();
  REQUIRE_THROWS_WITH(sg::decoding::greedy(*model, kSource, kSourceLens, options(4)),
                      Contains("the model is in training mode (dropout on): call eval()"));
}

TEST_CASE("Searches return each step's log-probabilities, summing to the hypothesis's", "[decoding]") {
  sg::NoGradGuard no_grad;
  auto model = tiny_model(Positional::sinusoidal, 30, false, 5);
  model->decoder->dense->bias.data<double>()[2] += 1.0;  // some end at <eos>
  for (int64_t width : {1, 3}) {
    SearchOptions o = options(6, width);
    o.keep_step_log_probs = true;
    const std::vector<Hypothesis> got = width == 1 ? sg::decoding::greedy(*model, kSource, kSourceLens, o)
                                                   : sg::decoding::beam_search(*model, kSource, kSourceLens, o);
    for (int64_t b = 0; b < 3; ++b) {
      const Hypothesis& h = got[static_cast<size_t>(b)];
      INFO("width " << width << ", source " << b);
      REQUIRE(static_cast<int64_t>(h.token_log_probs.size()) == h.length());
      REQUIRE(static_cast<int64_t>(h.step_log_probs.size()) == h.length());
      double sum = 0;
      for (size_t t = 0; t < h.token_log_probs.size(); ++t) {
        const int64_t token = t < h.tokens.size() ? h.tokens[t] : 2;
        REQUIRE(h.step_log_probs[t].size() == 5);
        REQUIRE(h.step_log_probs[t][static_cast<size_t>(token)] == h.token_log_probs[t]);
        sum += h.token_log_probs[t];
      }
      REQUIRE(std::abs(sum - h.log_prob) <= 1e-12);
      // The teacher-forced forward's log P of the same output.
      REQUIRE(std::abs(h.log_prob - log_prob(*model, b, h.tokens, h.ended)) <= 1e-10);
    }
  }
  // Without keep_step_log_probs the distributions are not kept.
  REQUIRE(sg::decoding::greedy(*model, kSource, kSourceLens, options(6))[0].step_log_probs.empty());
}

TEST_CASE("Without stop_at_eos a search runs max_len steps, as d2l's predict_step", "[decoding]") {
  sg::NoGradGuard no_grad;
  auto model = tiny_model(Positional::sinusoidal, 31, false, 5);
  model->decoder->dense->bias.data<double>()[2] += 3.0;  // <eos> early
  SearchOptions fixed = options(7);
  fixed.stop_at_eos = false;
  const std::vector<Hypothesis> stopping = sg::decoding::greedy(*model, kSource, kSourceLens, options(7));
  const std::vector<Hypothesis> running = sg::decoding::greedy(*model, kSource, kSourceLens, fixed);
  int64_t ended = 0;
  for (size_t b = 0; b < 3; ++b) {
    INFO("source " << b);
    const Hypothesis& h = running[b];
    REQUIRE(h.tokens.size() == 7);
    REQUIRE(!h.ended);
    // Cut at its first <eos>, it is the search that stops there (d2l's translate cuts so).
    const auto eos = std::find(h.tokens.begin(), h.tokens.end(), 2);
    REQUIRE(std::vector<int64_t>(h.tokens.begin(), eos) == stopping[b].tokens);
    REQUIRE((eos != h.tokens.end()) == stopping[b].ended);
    ended += stopping[b].ended;
    // The naive loop: the teacher-forced forward's arg-max of every prefix, <eos> fed back like any token.
    std::vector<int64_t> input = {1};
    for (int64_t t = 0; t < 7; ++t) {
      const int64_t n = static_cast<int64_t>(input.size());
      const std::vector<double> last = sg::kernel::slice(model->forward(source(static_cast<int64_t>(b)), ids(input, {1, n}),
                                                                        source_len(static_cast<int64_t>(b))),
                                                         1, n - 1, n).to_vector<double>();
      input.push_back(std::max_element(last.begin(), last.end()) - last.begin());
    }
    REQUIRE(std::vector<int64_t>(input.begin() + 1, input.end()) == h.tokens);
  }
  REQUIRE(ended > 0);  // the case is not trivial
  fixed.beam_width = 3;
  for (const Hypothesis& h : sg::decoding::beam_search(*model, kSource, kSourceLens, fixed)) {
    REQUIRE(h.tokens.size() == 7);
    REQUIRE(!h.ended);
  }
}
