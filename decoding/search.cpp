#include "decoding/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/engine.hpp"
#include "core/kernels.hpp"

namespace sg::decoding {
namespace {

// The options' checks, one message each, naming the values.
void check(const nn::EncoderDecoder& model, const Tensor& src, const SearchOptions& o, const char* who) {
  if (model.is_training())
    fail(who, ": the model is in training mode (dropout on): call eval() before searching");
  const int64_t vocab = model.decoder->options.vocab_size;
  for (const auto& [name, id] : {std::pair{"bos", o.bos}, {"eos", o.eos}, {"pad", o.pad}})
    if (id < 0 || id >= vocab)
      fail(who, ": ", name, " id ", id, " is outside the target vocabulary [0, ", vocab, ")");
  if (o.max_len < 1) fail(who, ": max_len must be at least 1, got ", o.max_len);
  if (o.beam_width < 1) fail(who, ": beam_width must be at least 1, got ", o.beam_width);
  if (!std::isfinite(o.length_alpha) || o.length_alpha < 0)
    fail(who, ": length_alpha must be a finite number >= 0, got ", o.length_alpha);
  if (src.dim() != 2) fail(who, ": source ids must be (batch, steps), got ", src.shape());
}

// One decoding step: the last tokens (one per row) -> the log-probabilities
// of the next, (rows x vocab) in double.
std::vector<double> next_log_probs(const nn::EncoderDecoder& model, nn::DecoderState& state,
                                   const std::vector<int64_t>& last) {
  const int64_t rows = static_cast<int64_t>(last.size());
  const Tensor logits = model.decoder->step(from_vector(last, {rows, 1}), state);  // (rows, 1, V)
  return kernel::log_softmax(kernel::reshape(logits, {rows, logits.shape()[2]})).to_vector<double>();
}

double normalised(const Hypothesis& h, double alpha) {
  return h.log_prob / std::pow(static_cast<double>(std::max<int64_t>(h.length(), 1)), alpha);
}

}  // namespace

std::vector<Hypothesis> greedy(const nn::EncoderDecoder& model, const Tensor& src, const Tensor& src_valid_lens,
                               const SearchOptions& o) {
  check(model, src, o, "greedy");
  // BEGIN ASSIGNMENT 8: greedy: from <bos>, each step's most probable token (the first of ties) per source until <eos> or max_len; finished rows fed <pad> and left unchanged; each step's log-probability into token_log_probs (its whole row into step_log_probs when keep_step_log_probs); with stop_at_eos off <eos> is a token like any other
  NoGradGuard no_grad;
  nn::DecoderState state = model.start(src, src_valid_lens, o.mode);
  const int64_t batch = src.shape()[0], vocab = model.decoder->options.vocab_size;
  std::vector<Hypothesis> out(static_cast<size_t>(batch));
  std::vector<int64_t> last(static_cast<size_t>(batch), o.bos);
  int64_t running = batch;
  for (int64_t step = 0; step < o.max_len && running > 0; ++step) {
    const std::vector<double> lp = next_log_probs(model, state, last);
    for (size_t b = 0; b < out.size(); ++b) {
      Hypothesis& h = out[b];
      if (h.ended) {
        last[b] = o.pad;  // finished: its row still runs with the batch, its output unused
        continue;
      }
      const double* row = lp.data() + b * static_cast<size_t>(vocab);
      const int64_t token = std::max_element(row, row + vocab) - row;  // the first of ties
      h.log_prob += row[token];
      h.token_log_probs.push_back(row[token]);
      if (o.keep_step_log_probs) h.step_log_probs.emplace_back(row, row + vocab);
      if (token == o.eos && o.stop_at_eos) h.ended = true, --running;
      else h.tokens.push_back(token);
      last[b] = token;
    }
  }
  for (Hypothesis& h : out) h.score = h.log_prob;
  return out;
  // END ASSIGNMENT 8
}

std::vector<Hypothesis> beam_search(const nn::EncoderDecoder& model, const Tensor& src,
                                    const Tensor& src_valid_lens, const SearchOptions& o) {
  check(model, src, o, "beam_search");
  NoGradGuard no_grad;
  const int64_t batch = src.shape()[0], k = o.beam_width, vocab = model.decoder->options.vocab_size;
  const double dead = -std::numeric_limits<double>::infinity();
  nn::DecoderState state = model.start(src, src_valid_lens, o.mode);
  // Row b * k + j of the state is beam j of source b; at first only beam 0 lives.
  std::vector<int64_t> rows(static_cast<size_t>(batch * k));
  for (int64_t r = 0; r < batch * k; ++r) rows[static_cast<size_t>(r)] = r / k;
  state.select(rows);
  std::vector<Hypothesis> beams(static_cast<size_t>(batch * k));
  for (int64_t r = 0; r < batch * k; ++r)
    if (r % k != 0) beams[static_cast<size_t>(r)].log_prob = dead;
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(batch));
  std::vector<bool> done(static_cast<size_t>(batch), false);
  std::vector<int64_t> last(static_cast<size_t>(batch * k), o.bos);
  struct Candidate {
    double log_prob;
    int64_t beam, token;  // beam within the source; its index j * vocab + token orders ties
  };
  for (int64_t step = 0; step < o.max_len; ++step) {
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    if (o.stop && o.stop->load()) fail("beam_search: stopped before step ", step, " of at most ", o.max_len);
    const std::vector<double> lp = next_log_probs(model, state, last);
    std::vector<Hypothesis> next(beams.size());
    for (int64_t b = 0; b < batch; ++b) {
      const auto first = static_cast<size_t>(b * k);
      if (done[static_cast<size_t>(b)]) {  // keeps its rows, fed <pad>
        for (int64_t j = 0; j < k; ++j) {
          rows[first + j] = b * k + j, last[first + j] = o.pad;
          next[first + j] = std::move(beams[first + j]);
        }
        continue;
      }
      std::vector<Candidate> cands;
      for (int64_t j = 0; j < k; ++j) {
        const Hypothesis& h = beams[first + j];
        if (h.log_prob == dead) continue;
        const double* row = lp.data() + (first + j) * static_cast<size_t>(vocab);
        for (int64_t v = 0; v < vocab; ++v) cands.push_back({h.log_prob + row[v], j, v});
      }
      const size_t keep = std::min(cands.size(), static_cast<size_t>(2 * k));
      std::partial_sort(cands.begin(), cands.begin() + keep, cands.end(), [](const Candidate& x, const Candidate& y) {
        if (x.log_prob != y.log_prob) return x.log_prob > y.log_prob;
        return x.beam != y.beam ? x.beam < y.beam : x.token < y.token;
      });
      int64_t live = 0;
      for (size_t rank = 0; rank < keep && live < k; ++rank) {
        const Candidate& c = cands[rank];
        Hypothesis h = beams[first + c.beam];
        const double* row = lp.data() + (first + static_cast<size_t>(c.beam)) * static_cast<size_t>(vocab);
        h.token_log_probs.push_back(row[c.token]);
        if (o.keep_step_log_probs) h.step_log_probs.emplace_back(row, row + vocab);
        h.log_prob = c.log_prob;
        if (c.token == o.eos && o.stop_at_eos) {
          if (rank >= static_cast<size_t>(k)) continue;  // only the first k ranks may finish
          h.ended = true;
          h.score = normalised(h, o.length_alpha);
          finished[static_cast<size_t>(b)].push_back(std::move(h));
          continue;
        }
        h.tokens.push_back(c.token);
        rows[first + live] = b * k + c.beam, last[first + live] = c.token;
        next[first + live] = std::move(h);
        ++live;
      }
      for (int64_t j = live; j < k; ++j) {  // fewer live extensions than beams: dead rows
        rows[first + j] = b * k, last[first + j] = o.pad;
        next[first + j].log_prob = dead;
      }
      // Done with beam_width finished hypotheses, and never while the most
      // probable hypothesis of the beam is still live: its log P only falls
      // as it grows, so once a finished one is at least as probable, no live
      // one can overtake it by log P. Without the second condition a
      // confident model's improbable early <eos> extensions (ranked among
      // the first beam_width because everything but the one right
      // continuation is improbable) fill the finished set while the right
      // translation is still being written, and the search returns a short,
      // wrong one (docs/results.md, "Translation and the other examples", its stopping rule). Width 1
      // stays greedy: a finished rank 0 is the most probable extension.
      const std::vector<Hypothesis>& ended = finished[static_cast<size_t>(b)];
      double best_finished = dead, best_live = dead;
      for (const Hypothesis& h : ended) best_finished = std::max(best_finished, h.log_prob);
      for (int64_t j = 0; j < live; ++j) best_live = std::max(best_live, next[first + j].log_prob);
      if (static_cast<int64_t>(ended.size()) >= k && best_finished >= best_live) done[static_cast<size_t>(b)] = true;
    }
    beams = std::move(next);
    state.select(rows);
  }
  std::vector<Hypothesis> out(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Hypothesis>& all = finished[static_cast<size_t>(b)];
    if (!done[static_cast<size_t>(b)])  // stopped at max_len: the live hypotheses count too
      for (int64_t j = 0; j < k; ++j) {
        Hypothesis& h = beams[static_cast<size_t>(b * k + j)];
        if (h.log_prob == dead) continue;
        h.score = normalised(h, o.length_alpha);
        all.push_back(std::move(h));
      }
    // The best score, the first of ties (finished before live, in rank order).
    size_t best = 0;
    for (size_t i = 1; i < all.size(); ++i)
      if (all[i].score > all[best].score) best = i;
    out[static_cast<size_t>(b)] = std::move(all[best]);
  }
  return out;
}

}  // namespace sg::decoding
