#pragma once
// Greedy and beam search over an encoder-decoder (sg::decoding), batched
// over sources, decoding one token per step with the decoder's key/value
// cache (or d2l's position-0 decoding: SearchOptions::mode).
//
// Every source starts from <bos> and stops at <eos> or after max_len
// tokens (or, with stop_at_eos off, runs max_len steps whatever it
// writes, as d2l's predict_step runs num_steps). The special ids are arguments: the vocabulary that names them
// lives with the data, not here. The model must be in eval mode (dropout
// off): a search on a model in training mode throws.
#include <atomic>
#include <cstdint>
#include <vector>

#include "core/tensor.hpp"
#include "nn/encoder_decoder.hpp"

namespace sg::decoding {

struct SearchOptions {
  int64_t bos = -1, eos = -1, pad = -1;  // the target vocabulary's <bos>, <eos>, <pad>: required
  int64_t max_len = 32;    // the most tokens generated per source, <eos> included
  int64_t beam_width = 4;  // beam_search: hypotheses kept per source, at least 1
  // beam_search's length normalisation (d2l 10.8, eq. 10.8.4): a finished
  // hypothesis scores log P / L^alpha, L its length with <eos>; 0 ranks by
  // log P alone, which favours short outputs.
  double length_alpha = 0.75;
  nn::DecodingMode mode = nn::DecodingMode::cached;
  // false: <eos> is a token like any other and every source runs max_len
  // steps (d2l's predict_step; its translate then cuts at the first <eos>).
  bool stop_at_eos = true;
  // true: each hypothesis keeps every step's whole distribution (step_log_probs).
  bool keep_step_log_probs = false;
  // beam_search: when given and set (a program's stop signal), it throws
  // before its next step, so a long search ends within one step.
  const std::atomic<bool>* stop = nullptr;
};

struct Hypothesis {
  // Generated, without <bos> and without the <eos> it stopped at; with
  // stop_at_eos off, every token of the max_len steps, <eos> included.
  std::vector<int64_t> tokens;
  bool ended = false;    // true when it stopped at <eos>, false at max_len
  double log_prob = 0;   // sum of the tokens' log-probabilities, <eos>'s included
  double score = 0;      // beam_search: log_prob / L^alpha; greedy: log_prob
  // Each step's log-probability of the token it chose, the final <eos>'s
  // included: length() of them, summing to log_prob.
  std::vector<double> token_log_probs;
  // keep_step_log_probs: each step's log-probabilities of the whole target
  // vocabulary (length() rows of vocabulary size), the model's distribution
  // given this hypothesis's prefix; empty otherwise.
  std::vector<std::vector<double>> step_log_probs;
  int64_t length() const { return static_cast<int64_t>(tokens.size()) + (ended ? 1 : 0); }
};

// The most probable token at every step (the first of ties), until <eos>.
// src (B, S) int64, src_valid_lens undefined or (B) -> one hypothesis per source.
std::vector<Hypothesis> greedy(const nn::EncoderDecoder& model, const Tensor& src, const Tensor& src_valid_lens,
                               const SearchOptions& options);

// Beam search: per source, the beam_width best partial hypotheses by log P.
// Each step extends every live hypothesis by every token and ranks the
// extensions by log P (ties: the earlier hypothesis, then the smaller id);
// an extension by <eos> within the first beam_width ranks is finished, the
// best beam_width others live on. A source stops when it has beam_width
// finished hypotheses and one of them is at least as probable (log P) as
// every live one, or at max_len (its live ones then count, without
// <eos>). Returns, per source, the hypothesis of the best score (the first
// of ties). Width 1 is greedy search.
std::vector<Hypothesis> beam_search(const nn::EncoderDecoder& model, const Tensor& src,
                                    const Tensor& src_valid_lens, const SearchOptions& options);

}  // namespace sg::decoding
