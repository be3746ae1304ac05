#include "text/bleu.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"

namespace sg::text {

namespace {

// The clipped matches of the prediction's n-grams against the label's:
// sum over n-grams g of min(count in pred, count in label). n-grams are
// compared as token lists (d2l joins them with ' ', the same for tokens
// without spaces).
int64_t clipped_matches(const Tokens& pred, const Tokens& label, size_t n) {
  std::map<Tokens, int64_t> label_counts;
  for (size_t i = 0; i + n <= label.size(); ++i) ++label_counts[Tokens(label.begin() + i, label.begin() + i + n)];
  int64_t matches = 0;
  for (size_t i = 0; i + n <= pred.size(); ++i) {
    auto it = label_counts.find(Tokens(pred.begin() + i, pred.begin() + i + n));
    if (it != label_counts.end() && it->second > 0) {
      ++matches;
      --it->second;
    }
  }
  return matches;
}

int64_t ngrams(const Tokens& seq, int64_t n) { return std::max<int64_t>(0, static_cast<int64_t>(seq.size()) - n + 1); }

}  // namespace

double bleu(const Tokens& pred, const Tokens& label, int64_t k) {
  if (k < 1) fail("bleu: k (the longest n-gram) must be at least 1, got ", k);
  if (pred.empty()) return 0.0;
  const double len_pred = static_cast<double>(pred.size()), len_label = static_cast<double>(label.size());
  double score = std::exp(std::min(0.0, 1.0 - len_label / len_pred));
  const int64_t top = std::min<int64_t>(k, static_cast<int64_t>(pred.size()));
  for (int64_t n = 1; n <= top; ++n) {
    const double p = static_cast<double>(clipped_matches(pred, label, static_cast<size_t>(n))) /
                     static_cast<double>(ngrams(pred, n));
    score *= std::pow(p, std::pow(0.5, static_cast<double>(n)));
  }
  return score;
}

double corpus_bleu(const std::vector<Tokens>& preds, const std::vector<Tokens>& labels, int64_t max_n) {
  if (max_n < 1) fail("corpus_bleu: max_n (the longest n-gram) must be at least 1, got ", max_n);
  if (preds.size() != labels.size())
    fail("corpus_bleu: ", preds.size(), " predictions but ", labels.size(), " labels");
  if (preds.empty()) fail("corpus_bleu: no predictions");
  double c = 0, r = 0, log_sum = 0;
  for (size_t i = 0; i < preds.size(); ++i) {
    c += static_cast<double>(preds[i].size());
    r += static_cast<double>(labels[i].size());
  }
  for (int64_t n = 1; n <= max_n; ++n) {
    int64_t matches = 0, total = 0;
    for (size_t i = 0; i < preds.size(); ++i) {
      matches += clipped_matches(preds[i], labels[i], static_cast<size_t>(n));
      total += ngrams(preds[i], n);
    }
    if (matches == 0) return 0.0;  // also total == 0
    log_sum += std::log(static_cast<double>(matches) / static_cast<double>(total));
  }
  const double bp = std::exp(std::min(0.0, 1.0 - r / c));  // c > 0: some unigram matched
  return bp * std::exp(log_sum / static_cast<double>(max_n));
}

}  // namespace sg::text
