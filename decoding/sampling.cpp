#include "decoding/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/engine.hpp"
#include "core/kernels.hpp"

namespace sg::decoding {

std::vector<double> next_token_distribution(const std::vector<double>& logits, const SamplingOptions& o) {
  const char* op = "next_token_distribution";
  if (logits.empty()) fail(op, ": no logits");
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    fail(op, ": temperature must be finite and at least 0, got ", o.temperature);
  if (o.top_k < 0) fail(op, ": top_k must be at least 0 (0 keeps every token), got ", o.top_k);
  if (!(o.top_p > 0 && o.top_p <= 1)) fail(op, ": top_p must be in (0, 1], got ", o.top_p);
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isnan(logits[i])) fail(op, ": logit ", i, " is NaN");
  const size_t n = logits.size();
  std::vector<double> p(n, 0.0);
  const size_t best = static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  if (o.temperature == 0) {
    p[best] = 1;
    return p;
  }
  // BEGIN ASSIGNMENT 10: next_token_distribution: p = softmax(logits / temperature) over the tokens top-k keeps (those at least the k-th largest logit, ties kept), stable at any logits, 0 elsewhere
  // Softmax of logits / temperature, over the tokens top-k keeps: those at
  // least as large as the k-th largest logit (nanoGPT's rule, ties kept).
  double threshold = -INFINITY;
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < n) {
    std::vector<double> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<double>());
    threshold = sorted[static_cast<size_t>(o.top_k - 1)];
  }
  double total = 0;
  for (size_t i = 0; i < n; ++i)
    if (logits[i] >= threshold) total += p[i] = std::exp((logits[i] - logits[best]) / o.temperature);
  for (double& x : p) x /= total;
  // END ASSIGNMENT 10
  if (o.top_p < 1) {
    // The nucleus: tokens by falling probability (ties by id) until the
    // kept mass reaches top_p; the token that crosses it is kept.
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    double kept = 0;
    size_t i = 0;
    while (i < n && kept < o.top_p && p[order[i]] > 0) kept += p[order[i++]];
    for (; i < n; ++i) p[order[i]] = 0;
    for (double& x : p) x /= kept;
  }
  return p;
}

int64_t draw(const std::vector<double>& probabilities, Generator& gen) {
  const double u = gen.uniform();
  double cumulative = 0;
  int64_t last = -1;  // the last id with mass: what rounding leaves when u is near 1
  for (size_t i = 0; i < probabilities.size(); ++i) {
    if (probabilities[i] <= 0) continue;
    last = static_cast<int64_t>(i);
    cumulative += probabilities[i];
    if (u < cumulative) return last;
  }
  if (last < 0) fail("draw: no token has a positive probability");
  return last;
}

std::vector<int64_t> generate(const nn::GPT& model, const std::vector<int64_t>& prompt,
                              const SamplingOptions& options, Generator& gen,
                              const std::function<void(int64_t)>& on_token) {
  if (prompt.empty()) fail("generate: the prompt is empty (give at least one token)");
  if (options.max_new_tokens < 0) fail("generate: max_new_tokens must be at least 0, got ", options.max_new_tokens);
  if (model.is_training())
    fail("generate: the model is in training mode (dropout on); call eval() before sampling");
  const int64_t vocab = model.options.vocab_size, context = model.options.block_size;
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab)
      fail("generate: prompt token ", i, " is ", prompt[i], ", outside the vocabulary [0, ", vocab, ")");
  NoGradGuard no_grad;
  std::vector<int64_t> text = prompt;
  nn::GPTCache cache;
  int64_t cache_start = 0;  // the text position of the cache's first token
  auto ids_of = [&](int64_t from, int64_t to) {
    return from_vector(std::vector<int64_t>(text.begin() + from, text.begin() + to), {1, to - from});
  };
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    const int64_t length = static_cast<int64_t>(text.size());
    const int64_t window = std::max<int64_t>(0, length - context);  // the first token the model reads
    Tensor logits;
    // BEGIN ASSIGNMENT 10: generate's logits: without the cache, forward on the window's tokens; with it, forward_cached on the tokens the cache has not read yet (a new cache when the window moved)
    if (!options.use_cache) {
      logits = model.forward(ids_of(window, length));
    } else {
      if (window != cache_start) cache = nn::GPTCache{}, cache_start = window;  // the window moved: read it again
      logits = model.forward_cached(ids_of(cache_start + cache.length(), length), cache);
    }
    // END ASSIGNMENT 10
    const int64_t rows = logits.shape()[1];
    const Tensor last = kernel::to(kernel::slice(kernel::reshape(logits, {rows, vocab}), 0, rows - 1, rows), float64);
    const double* l = last.data<double>();
    const std::vector<double> p = next_token_distribution(std::vector<double>(l, l + vocab), options);
    const int64_t next = options.temperature == 0 ? std::max_element(p.begin(), p.end()) - p.begin() : draw(p, gen);
    text.push_back(next);
    if (on_token) on_token(next);
  }
  return text;
}

}  // namespace sg::decoding
