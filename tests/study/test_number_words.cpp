// study/number_words.hpp: the English and French forms against a table
// written by hand (traditional French spelling), the tokens, and the seeded
// train/test split.
#include <catch2/catch.hpp>

#include "study/number_words.hpp"

#include <algorithm>
#include <set>

using Catch::Contains;

TEST_CASE("numbers in English and French words, by hand", "[number_words]") {
  struct Row {
    int64_t n;
    const char* english;
    const char* french;
  };
  const Row table[] = {
      {0, "zero", "zéro"},
      {1, "one", "un"},
      {10, "ten", "dix"},
      {11, "eleven", "onze"},
      {16, "sixteen", "seize"},
      {17, "seventeen", "dix-sept"},
      {19, "nineteen", "dix-neuf"},
      {20, "twenty", "vingt"},
      {21, "twenty-one", "vingt et un"},
      {22, "twenty-two", "vingt-deux"},
      {31, "thirty-one", "trente et un"},
      {45, "forty-five", "quarante-cinq"},
      {61, "sixty-one", "soixante et un"},
      {69, "sixty-nine", "soixante-neuf"},
      {70, "seventy", "soixante-dix"},
      {71, "seventy-one", "soixante et onze"},
      {72, "seventy-two", "soixante-douze"},
      {77, "seventy-seven", "soixante-dix-sept"},
      {79, "seventy-nine", "soixante-dix-neuf"},
      {80, "eighty", "quatre-vingts"},
      {81, "eighty-one", "quatre-vingt-un"},
      {88, "eighty-eight", "quatre-vingt-huit"},
      {90, "ninety", "quatre-vingt-dix"},
      {91, "ninety-one", "quatre-vingt-onze"},
      {97, "ninety-seven", "quatre-vingt-dix-sept"},
      {99, "ninety-nine", "quatre-vingt-dix-neuf"},
      {100, "one hundred", "cent"},
      {101, "one hundred one", "cent un"},
      {111, "one hundred eleven", "cent onze"},
      {121, "one hundred twenty-one", "cent vingt et un"},
      {171, "one hundred seventy-one", "cent soixante et onze"},
      {180, "one hundred eighty", "cent quatre-vingts"},
      {181, "one hundred eighty-one", "cent quatre-vingt-un"},
      {200, "two hundred", "deux cents"},
      {201, "two hundred one", "deux cent un"},
      {217, "two hundred seventeen", "deux cent dix-sept"},
      {280, "two hundred eighty", "deux cent quatre-vingts"},
      {300, "three hundred", "trois cents"},
      {391, "three hundred ninety-one", "trois cent quatre-vingt-onze"},
      {500, "five hundred", "cinq cents"},
      {770, "seven hundred seventy", "sept cent soixante-dix"},
      {999, "nine hundred ninety-nine", "neuf cent quatre-vingt-dix-neuf"},
  };
  for (const Row& row : table) {
    INFO("n = " << row.n);
    CHECK(sg::study::english_words(row.n) == row.english);
    CHECK(sg::study::french_words(row.n) == row.french);
  }
}

TEST_CASE("number tokens: hyphens are tokens of their own", "[number_words]") {
  using T = sg::text::Tokens;
  CHECK(sg::study::number_tokens("seventy-one") == T{"seventy", "-", "one"});
  CHECK(sg::study::number_tokens("soixante et onze") == T{"soixante", "et", "onze"});
  CHECK(sg::study::number_tokens("deux cent quatre-vingts") == T{"deux", "cent", "quatre", "-", "vingts"});
  CHECK(sg::study::number_tokens("quatre-vingt-dix-neuf") == T{"quatre", "-", "vingt", "-", "dix", "-", "neuf"});
  const sg::study::NumberPairs pairs = sg::study::number_pairs({81, 7});
  CHECK(pairs.numbers == std::vector<int64_t>{81, 7});
  CHECK(pairs.english[0] == T{"eighty", "-", "one"});
  CHECK(pairs.french[0] == T{"quatre", "-", "vingt", "-", "un"});
  CHECK(pairs.french[1] == T{"sept"});
  // Every number's French form is words and hyphens, none empty.
  for (int64_t n = 0; n <= sg::study::kNumberWordsMax; ++n)
    for (const std::string& t : sg::study::number_tokens(sg::study::french_words(n))) CHECK_FALSE(t.empty());
}

TEST_CASE("the train/test split of the numbers is disjoint, complete and seeded", "[number_words]") {
  const auto a = sg::study::split_numbers(0, 999, 0.2, 1);
  const auto b = sg::study::split_numbers(0, 999, 0.2, 1);
  const auto c = sg::study::split_numbers(0, 999, 0.2, 2);
  CHECK(a.test.size() == 200);
  CHECK(a.train.size() == 800);
  CHECK(a.train == b.train);
  CHECK(a.test == b.test);
  CHECK(a.test != c.test);
  CHECK(std::is_sorted(a.train.begin(), a.train.end()));
  CHECK(std::is_sorted(a.test.begin(), a.test.end()));
  std::set<int64_t> all(a.train.begin(), a.train.end());
  for (int64_t n : a.test) CHECK(all.insert(n).second);  // never also in training
  CHECK(all.size() == 1000);
  CHECK(*all.begin() == 0);
  CHECK(*all.rbegin() == 999);
  const auto small = sg::study::split_numbers(10, 19, 0.3, 5);
  CHECK(small.test.size() == 3);
  CHECK(small.train.size() == 7);
  CHECK(small.test.front() >= 10);
  CHECK(small.train.back() <= 19);
}

TEST_CASE("number words refuse numbers and splits outside the task", "[number_words][bad_input]") {
  REQUIRE_THROWS_WITH(sg::study::english_words(1000), Contains("english_words") && Contains("1000") && Contains("0..999"));
  REQUIRE_THROWS_WITH(sg::study::french_words(-1), Contains("french_words") && Contains("-1") && Contains("0..999"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(0, 1000, 0.2, 1), Contains("0..1000") && Contains("0..999"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(5, 4, 0.2, 1), Contains("5..4"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(0, 99, 0.0, 1), Contains("test_fraction") && Contains("got 0"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(0, 99, 1.0, 1), Contains("got 1"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(0, 3, 0.1, 1),
                      Contains("4 numbers") && Contains("leaves 0 for the test set"));
}
