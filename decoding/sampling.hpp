#pragma once
// Sampling text from a GPT (sg::decoding::generate): one token at a time,
// each drawn from the model's distribution for the next token, reshaped by
// a temperature, top-k and top-p (nucleus), seeded by a Generator.
//
//   sg::Generator gen(1337);
//   model.eval();
//   std::vector<int64_t> ids = sg::decoding::generate(model, prompt_ids, {.max_new_tokens = 200, .top_k = 40}, gen);
//
// The context: the model reads at most block_size tokens, so each step
// conditions on the last block_size tokens of the text so far, as nanoGPT's
// generate crops them. With the key/value cache (use_cache, the default)
// each new token costs one position's work while the text fits the
// context; once it is longer, every step reads its whole window again (a
// window moved by one token gives every token another position, and every
// block another input), which is what recomputing does at every step. So
// both give the same tokens, the cache faster.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/random.hpp"
#include "nn/gpt.hpp"

namespace sg::decoding {

struct SamplingOptions {
  int64_t max_new_tokens = 200;
  // Divides the logits: below 1 sharper, above 1 flatter; 0 takes the most
  // probable token (the first of ties) and draws nothing.
  double temperature = 1.0;
  int64_t top_k = 0;   // keep the k most probable tokens (ties with the k-th kept); 0 keeps all
  double top_p = 1.0;  // keep the most probable tokens until their probability reaches p; 1 keeps all
  bool use_cache = true;
};

// The distribution the next token is drawn from: logits (one per token of
// the vocabulary) -> probabilities summing to 1, after temperature, top-k
// and top-p, in that order (temperature 0: all mass on the first maximum).
std::vector<double> next_token_distribution(const std::vector<double>& logits, const SamplingOptions& options);

// A draw from `probabilities` (summing to 1): one uniform number from gen,
// the first id whose cumulative probability exceeds it.
int64_t draw(const std::vector<double>& probabilities, Generator& gen);

// prompt (at least one id, each in [0, vocab_size)) -> the prompt followed
// by max_new_tokens ids. on_token, when given, sees each new id as it is
// drawn (a program prints the text as it comes). The model must be in eval
// mode (dropout off).
std::vector<int64_t> generate(const nn::GPT& model, const std::vector<int64_t>& prompt,
                              const SamplingOptions& options, Generator& gen,
                              const std::function<void(int64_t)>& on_token = nullptr);

}  // namespace sg::decoding
