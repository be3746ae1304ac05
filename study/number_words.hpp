#pragma once
// The translation task: whole numbers 0..999,999 written in English words,
// to be translated into French words. Small, generated in code, and with what
// makes translation interesting:
// * reordering and words that appear: 71 "seventy-one" -> "soixante et onze"
//   (sixty and eleven), 91 "ninety-one" -> "quatre-vingt-onze" (four-twenty-eleven);
// * words that vanish: 101 "one hundred one" -> "cent un", no "un" before "cent";
// * agreement: "quatre-vingts" and "deux cents" take a plural s only when
//   nothing follows ("quatre-vingt-un", "deux cent un", "deux cent quatre-vingts");
// * past 999: "mille" never takes an s ("deux mille"), 1000 is "mille",
//   never "un mille", but 21,000 keeps its "et un" ("vingt et un mille");
//   before "mille" the plural s goes ("deux cent mille", "quatre-vingt
//   mille", against "deux cents", "quatre-vingts").
//
// English (American, no "and", no comma): "two hundred one", "ninety-nine",
// "seventy-one thousand two hundred".
// French in the traditional spelling (before the 1990 reform, which puts a
// hyphen between every two number words):
// * a hyphen joins tens and units below 100 (dix-sept, vingt-deux,
//   soixante-dix, quatre-vingt-un), except where "et" joins them, without
//   hyphens: 21, 31, 41, 51, 61 and 71 (vingt et un, soixante et onze);
//   81 and 91 take no "et" (quatre-vingt-un, quatre-vingt-onze);
// * no hyphen around "cent" (deux cent un, cent quatre-vingts);
// * 70-79 are soixante + 10..19, 80-99 quatre-vingt + 0..19;
// * "vingt" of quatre-vingts and "cent" of deux cents ... neuf cents take an
//   s when multiplied and last; 100 is "cent", never "un cent";
// * no hyphen around "mille" (dix-sept mille, mille un); 1100 is "mille
//   cent", not "onze cents".
//
// Tokens: split on spaces, and a hyphen is a token of its own in both
// languages ("seventy - one", "quatre - vingt - un"), so that the hyphen's
// appearing and vanishing, and "vingt" against "vingts", are separate
// tokens a model must choose.
#include <cstdint>
#include <string>
#include <vector>

#include "text/vocab.hpp"

namespace sg::study {

inline constexpr int64_t kNumberWordsMax = 999999;  // the task's numbers are 0..kNumberWordsMax

// The written forms, e.g. 71 -> "seventy-one" and "soixante et onze".
// Throw for a number outside 0..999,999.
std::string english_words(int64_t n);
std::string french_words(int64_t n);

// A written form's tokens: split on spaces, '-' a token of its own.
text::Tokens number_tokens(const std::string& words);
// The inverse: tokens joined by spaces, a '-' token joining its neighbours
// ("quatre - vingt - un" -> "quatre-vingt-un").
std::string written_form(const text::Tokens& tokens);

// The numbers low..high split into training and held-out test numbers:
// round(test_fraction * count) of them drawn for the test set by a shuffle
// from sg::Generator(seed), the rest for training; both sorted ascending,
// disjoint, and the same for the same arguments. Throws for a range outside
// 0..999,999 or empty, a fraction outside (0, 1), or a split that leaves either
// side empty.
struct NumberSplit {
  std::vector<int64_t> train, test;
};
NumberSplit split_numbers(int64_t low, int64_t high, double test_fraction, uint64_t seed);

// 1..6: the digits of n in 0..999,999 (0 has one).
int64_t digit_length(int64_t n);

// The numbers 0..high split digit length by digit length, for ranges too
// large to train on whole: the numbers of each length are ranked by a
// seeded hash of (seed, n) (the same on every run and machine); the first
// min(round(test_fraction * count), test_cap), at least 1, are held out,
// and of the others the first train_cap (all of them when they are fewer)
// are for training. Every digit length of the range is in both sets, and
// short numbers, few and special ("mille", "vingt et un"), are all
// trained on when they fit train_cap. Both sorted ascending, disjoint.
// Throws as split_numbers does, and for caps below 1.
NumberSplit split_by_length(int64_t high, double test_fraction, int64_t test_cap, int64_t train_cap, uint64_t seed);

// The token pairs of the given numbers, in their order.
struct NumberPairs {
  std::vector<int64_t> numbers;
  std::vector<text::Tokens> english, french;
};
NumberPairs number_pairs(const std::vector<int64_t>& numbers);

}  // namespace sg::study
