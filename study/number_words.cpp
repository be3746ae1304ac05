#include "study/number_words.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/random.hpp"

namespace sg::study {

namespace {

void check_number(const char* op, int64_t n) {
  if (n < 0 || n > kNumberWordsMax) fail(op, ": ", n, " is outside the task's numbers 0..", kNumberWordsMax);
}

const char* const kEnglishOnes[20] = {"zero",    "one",     "two",       "three",    "four",
                                      "five",    "six",     "seven",     "eight",    "nine",
                                      "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                                      "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
const char* const kEnglishTens[10] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};

// 0..99
std::string english_below_100(int64_t n) {
  if (n < 20) return kEnglishOnes[n];
  const std::string tens = kEnglishTens[n / 10];
  return n % 10 ? tens + "-" + kEnglishOnes[n % 10] : tens;
}

// French has single words up to 16; 17-19 are dix-sept, dix-huit, dix-neuf.
const char* const kFrenchUnits[17] = {"zéro", "un",   "deux",   "trois",    "quatre", "cinq",
                                      "six",  "sept", "huit",   "neuf",     "dix",    "onze",
                                      "douze", "treize", "quatorze", "quinze", "seize"};
const char* const kFrenchTens[7] = {"", "", "vingt", "trente", "quarante", "cinquante", "soixante"};

// 0..99; `last`: nothing follows (so 80 is quatre-vingts; before "mille",
// quatre-vingt).
std::string french_below_100(int64_t n, bool last) {
  if (n <= 16) return kFrenchUnits[n];
  if (n < 20) return std::string("dix-") + kFrenchUnits[n - 10];
  if (n < 70) {
    const std::string tens = kFrenchTens[n / 10];
    const int64_t u = n % 10;
    if (u == 0) return tens;
    if (u == 1) return tens + " et un";
    return tens + "-" + kFrenchUnits[u];
  }
  if (n < 80) return n == 71 ? "soixante et onze" : "soixante-" + french_below_100(n - 60, last);
  if (n == 80) return last ? "quatre-vingts" : "quatre-vingt";
  return "quatre-vingt-" + french_below_100(n - 80, last);
}

// 0..999; `last` as above: "deux cents" last, "deux cent mille" before mille.
std::string french_below_1000(int64_t n, bool last) {
  if (n < 100) return french_below_100(n, last);
  const int64_t hundreds = n / 100, rest = n % 100;
  std::string out = hundreds == 1 ? "cent" : std::string(kFrenchUnits[hundreds]) + " cent";
  if (rest == 0) return hundreds > 1 && last ? out + "s" : out;
  return out + " " + french_below_100(rest, last);
}

std::string english_below_1000(int64_t n) {
  if (n < 100) return english_below_100(n);
  std::string out = std::string(kEnglishOnes[n / 100]) + " hundred";
  return n % 100 ? out + " " + english_below_100(n % 100) : out;
}

}  // namespace

std::string english_words(int64_t n) {
  check_number("english_words", n);
  if (n < 1000) return english_below_1000(n);
  const std::string out = english_below_1000(n / 1000) + " thousand";
  return n % 1000 ? out + " " + english_below_1000(n % 1000) : out;
}

std::string french_words(int64_t n) {
  check_number("french_words", n);
  if (n < 1000) return french_below_1000(n, true);
  const int64_t thousands = n / 1000, rest = n % 1000;
  // "mille", never "un mille"; mille itself never takes an s.
  const std::string out = thousands == 1 ? "mille" : french_below_1000(thousands, false) + " mille";
  return rest ? out + " " + french_below_1000(rest, true) : out;
}

text::Tokens number_tokens(const std::string& words) {
  text::Tokens out;
  for (const std::string& word : text::tokenize(words)) {
    size_t start = 0;
    for (size_t dash; (dash = word.find('-', start)) != std::string::npos; start = dash + 1) {
      if (dash > start) out.push_back(word.substr(start, dash - start));
      out.push_back("-");
    }
    if (start < word.size()) out.push_back(word.substr(start));
  }
  return out;
}

std::string written_form(const text::Tokens& tokens) {
  std::string s;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool joined = tokens[i] == "-" || (i > 0 && tokens[i - 1] == "-");
    s += (i > 0 && !joined ? " " : "") + tokens[i];
  }
  return s;
}

NumberSplit split_numbers(int64_t low, int64_t high, double test_fraction, uint64_t seed) {
  if (low < 0 || high > kNumberWordsMax || low > high)
    fail("split_numbers: range ", low, "..", high, " is not a non-empty range within 0..", kNumberWordsMax);
  if (!(test_fraction > 0 && test_fraction < 1))  // NaN fails too
    fail("split_numbers: test_fraction must be in (0, 1), got ", test_fraction);
  const int64_t count = high - low + 1;
  const auto test_count = static_cast<int64_t>(std::llround(test_fraction * static_cast<double>(count)));
  if (test_count < 1 || test_count >= count)
    fail("split_numbers: test_fraction ", test_fraction, " of the ", count, " numbers ", low, "..", high,
         " leaves ", test_count, " for the test set and ", count - test_count, " for training: both need one");
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) order[static_cast<size_t>(i)] = low + i;
  Generator gen(seed);
  for (int64_t i = count - 1; i > 0; --i)  // Fisher-Yates
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(gen.randint(0, i + 1))]);
  NumberSplit split;
  split.test.assign(order.begin(), order.begin() + test_count);
  split.train.assign(order.begin() + test_count, order.end());
  std::sort(split.test.begin(), split.test.end());
  std::sort(split.train.begin(), split.train.end());
  return split;
}

int64_t digit_length(int64_t n) {
  check_number("digit_length", n);
  int64_t digits = 1;
  for (int64_t x = n; x >= 10; x /= 10) ++digits;
  return digits;
}

namespace {

// SplitMix64's finaliser of seed and n: a hash whose order of the numbers
// no pattern of their digits predicts.
uint64_t mix(uint64_t seed, int64_t n) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(n) + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

NumberSplit split_by_length(int64_t high, double test_fraction, int64_t test_cap, int64_t train_cap, uint64_t seed) {
  if (high < 0 || high > kNumberWordsMax)
    fail("split_by_length: range 0..", high, " is not a non-empty range within 0..", kNumberWordsMax);
  if (!(test_fraction > 0 && test_fraction < 1))  // NaN fails too
    fail("split_by_length: test_fraction must be in (0, 1), got ", test_fraction);
  if (test_cap < 1 || train_cap < 1)
    fail("split_by_length: test_cap ", test_cap, " and train_cap ", train_cap, " must be at least 1");
  NumberSplit split;
  for (int64_t low = 0, digits = 1; low <= high; low = low == 0 ? 10 : low * 10, ++digits) {
    const int64_t top = std::min(high, low == 0 ? 9 : low * 10 - 1), count = top - low + 1;
    const int64_t test_count =
        std::max<int64_t>(1, std::min(test_cap, static_cast<int64_t>(std::llround(test_fraction * static_cast<double>(count)))));
    if (test_count >= count)
      fail("split_by_length: the ", count, " numbers of ", digits, " digits (", low, "..", top, ") leave ", test_count,
           " for the test set and none for training");
    std::vector<std::pair<uint64_t, int64_t>> ranked;
    ranked.reserve(static_cast<size_t>(count));
    for (int64_t n = low; n <= top; ++n) ranked.emplace_back(mix(seed, n), n);
    std::sort(ranked.begin(), ranked.end());
    const int64_t train_count = std::min(train_cap, count - test_count);
    for (int64_t i = 0; i < test_count; ++i) split.test.push_back(ranked[static_cast<size_t>(i)].second);
    for (int64_t i = test_count; i < test_count + train_count; ++i)
      split.train.push_back(ranked[static_cast<size_t>(i)].second);
  }
  std::sort(split.test.begin(), split.test.end());
  std::sort(split.train.begin(), split.train.end());
  return split;
}

NumberPairs number_pairs(const std::vector<int64_t>& numbers) {
  NumberPairs pairs;
  for (int64_t n : numbers) {
    pairs.numbers.push_back(n);
    pairs.english.push_back(number_tokens(english_words(n)));
    pairs.french.push_back(number_tokens(french_words(n)));
  }
  return pairs;
}

}  // namespace sg::study
