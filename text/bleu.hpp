#pragma once
// BLEU, the n-gram overlap of a predicted token sequence with its label, in
// two forms: d2l's sentence score and Papineni et al.'s corpus score.
//
// Both clip counts the same way: an n-gram of the prediction matches at most
// as many times as the label holds it ("the the the" against "the cat" has
// one matching unigram, not three).
#include <cstdint>
#include <vector>

#include "text/vocab.hpp"

namespace sg::text {

// d2l's bleu(pred_seq, label_seq, k) (its sequence-to-sequence section; d2l.bleu), on tokens:
//
//   exp(min(0, 1 - len_label / len_pred)) * prod_{n=1..min(k, len_pred)} p_n^(1 / 2^n)
//
// p_n = clipped matching n-grams / the prediction's n-grams. The weight
// 1/2^n makes a long match count more than a short one. As d2l's code:
// * the orders n > len_pred are skipped, not scored 0: the prediction "a"
//   against the label "a" scores 1 for every k (older d2l printings, which
//   loop to k, divide by zero there);
// * a prediction longer than its label has no length penalty;
// * an empty prediction scores 0 (d2l's ''.split(' ') is one empty token,
//   which matches nothing, so d2l gives 0 too).
// k must be at least 1.
double bleu(const Tokens& pred, const Tokens& label, int64_t k);

// Corpus BLEU (Papineni et al. 2002), one label per prediction:
//
//   BP * exp( sum_{n=1..max_n} log(p_n) / max_n ),   BP = min(1, exp(1 - r / c))
//
// p_n = (clipped matching n-grams summed over all pairs) / (the predictions'
// n-grams summed over all pairs); c and r are the total prediction and label
// lengths. It is 0 when some p_n is 0, or no prediction has an n-gram of
// order n (c = 0 included): the geometric mean has a zero factor. No
// smoothing: as sacreBLEU's and NLTK's corpus_bleu without smoothing.
// max_n = 4 is the standard BLEU-4. Throws for max_n < 1, no pairs, or
// lists of different lengths.
double corpus_bleu(const std::vector<Tokens>& preds, const std::vector<Tokens>& labels, int64_t max_n = 4);

}  // namespace sg::text
