// text/bleu.hpp against values worked out by hand (each case's arithmetic
// is in its comment; d2l's own Python bleu gives the same numbers).
#include <catch2/catch.hpp>

#include "text/bleu.hpp"

#include <cmath>

using Catch::Contains;
using sg::text::bleu;
using sg::text::corpus_bleu;
using sg::text::tokenize;

namespace {
// Fails on NaN: the difference of NaN is never within the bound.
bool near(double got, double want) { return std::abs(got - want) <= 1e-12; }
}  // namespace

TEST_CASE("d2l's bleu on hand-worked cases", "[text][bleu]") {
  // Perfect match: every p_n = 1, no penalty.
  CHECK(near(bleu(tokenize("a b c d"), tokenize("a b c d"), 2), 1.0));
  CHECK(near(bleu(tokenize("a b c d"), tokenize("a b c d"), 4), 1.0));
  // d2l's example: label A B C D E F, prediction A B, k = 2: p_1 = p_2 = 1,
  // penalty exp(1 - 6/2) = exp(-2) ~ 0.1353.
  CHECK(near(bleu(tokenize("A B"), tokenize("A B C D E F"), 2), std::exp(-2.0)));
  // A partial match, "the the cat" against "the cat sat" (equal lengths):
  // p_1 = 2/3 (the second "the" is clipped), p_2 = 1/2 ("the cat" of "the the",
  // "the cat"): sqrt(2/3) * (1/2)^(1/4) ~ 0.68659.
  CHECK(near(bleu(tokenize("the the cat"), tokenize("the cat sat"), 2), std::sqrt(2.0 / 3) * std::pow(0.5, 0.25)));
  // ... and with k = 4 the one trigram misses: p_3 = 0, so 0.
  CHECK(bleu(tokenize("the the cat"), tokenize("the cat sat"), 4) == 0.0);
  // k = 2 against k = 4: "a b c d e" against "a b c d f": p_1..p_4 = 4/5, 3/4, 2/3, 1/2.
  // k = 2: (4/5)^(1/2) (3/4)^(1/4) ~ 0.83236; k = 4: times (2/3)^(1/8) (1/2)^(1/16) ~ 0.75768.
  const double k2 = std::pow(0.8, 0.5) * std::pow(0.75, 0.25);
  CHECK(near(bleu(tokenize("a b c d e"), tokenize("a b c d f"), 2), k2));
  CHECK(near(bleu(tokenize("a b c d e"), tokenize("a b c d f"), 4), k2 * std::pow(2.0 / 3, 0.125) * std::pow(0.5, 0.0625)));
  // Clipping: "the the the" against "the cat", k = 1: p_1 = 1/3, no penalty
  // (the prediction is the longer): sqrt(1/3).
  CHECK(near(bleu(tokenize("the the the"), tokenize("the cat"), 1), std::sqrt(1.0 / 3)));
  // Longer than the label: "a b c" against "a b", k = 1: penalty exp(min(0, 1 - 2/3)) = 1, sqrt(2/3).
  CHECK(near(bleu(tokenize("a b c"), tokenize("a b"), 1), std::sqrt(2.0 / 3)));
}

TEST_CASE("d2l's bleu at the edges: short and empty predictions", "[text][bleu]") {
  // Orders past the prediction's length are skipped, as d2l's min(k, len_pred):
  // "a" against "a" is 1 for any k; "a" against "a b" is the penalty exp(1 - 2) alone.
  CHECK(near(bleu({"a"}, {"a"}, 4), 1.0));
  CHECK(near(bleu({"a"}, tokenize("a b"), 3), std::exp(-1.0)));
  // An empty prediction scores 0 (d2l: ''.split(' ') is one empty token, p_1 = 0).
  CHECK(bleu({}, tokenize("a b"), 1) == 0.0);
  CHECK(bleu({}, tokenize("a b"), 3) == 0.0);
  // An empty label: no penalty, nothing to match.
  CHECK(bleu({"a"}, {}, 2) == 0.0);
  REQUIRE_THROWS_WITH(bleu({"a"}, {"a"}, 0), Contains("bleu") && Contains("k") && Contains("got 0"));
}

TEST_CASE("corpus BLEU pools clipped counts over the corpus", "[text][bleu]") {
  // A perfect corpus of sentences of 4 tokens or more: 1.
  CHECK(near(corpus_bleu({tokenize("a b c d"), tokenize("e f g h i")}, {tokenize("a b c d"), tokenize("e f g h i")}), 1.0));
  // Two pairs: "a b c d e" / "a b c d f" and "x y z w" / itself.
  // n = 1: (4 + 4) / (5 + 4) = 8/9; n = 2: (3 + 3) / (4 + 3) = 6/7;
  // n = 3: (2 + 2) / (3 + 2) = 4/5; n = 4: (1 + 1) / (2 + 1) = 2/3;
  // c = r = 9, no penalty: (8/9 * 6/7 * 4/5 * 2/3)^(1/4) = (384/945)^(1/4) ~ 0.79841.
  const std::vector<sg::text::Tokens> preds = {tokenize("a b c d e"), tokenize("x y z w")};
  const std::vector<sg::text::Tokens> labels = {tokenize("a b c d f"), tokenize("x y z w")};
  CHECK(near(corpus_bleu(preds, labels), std::pow(384.0 / 945, 0.25)));
  // max_n = 2: (8/9 * 6/7)^(1/2).
  CHECK(near(corpus_bleu(preds, labels, 2), std::sqrt(8.0 / 9 * 6.0 / 7)));
  // Brevity: every n-gram matches, c = 4, r = 8: exp(1 - 8/4) = exp(-1).
  CHECK(near(corpus_bleu({tokenize("a b c d")}, {tokenize("a b c d e f g h")}), std::exp(-1.0)));
  // No 4-gram in any prediction: 0 for BLEU-4, 1 for BLEU-3.
  CHECK(corpus_bleu({tokenize("a b c")}, {tokenize("a b c")}) == 0.0);
  CHECK(near(corpus_bleu({tokenize("a b c")}, {tokenize("a b c")}, 3), 1.0));
  // Empty predictions only: nothing matched, 0.
  CHECK(corpus_bleu({{}}, {tokenize("a b")}, 1) == 0.0);

  REQUIRE_THROWS_WITH(corpus_bleu(preds, labels, 0), Contains("corpus_bleu") && Contains("max_n") && Contains("got 0"));
  REQUIRE_THROWS_WITH(corpus_bleu(preds, {labels[0]}), Contains("2 predictions but 1 labels"));
  REQUIRE_THROWS_WITH(corpus_bleu({}, {}), Contains("corpus_bleu: no predictions"));
}
