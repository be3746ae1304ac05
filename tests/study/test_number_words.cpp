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
      // Past 999: mille never takes an s, never "un mille"; before it cents
      // and quatre-vingts lose their s, "et un" stays.
      {1000, "one thousand", "mille"},
      {1001, "one thousand one", "mille un"},
      {1021, "one thousand twenty-one", "mille vingt et un"},
      {1080, "one thousand eighty", "mille quatre-vingts"},
      {1100, "one thousand one hundred", "mille cent"},
      {1200, "one thousand two hundred", "mille deux cents"},
      {2000, "two thousand", "deux mille"},
      {2001, "two thousand one", "deux mille un"},
      {10000, "ten thousand", "dix mille"},
      {17000, "seventeen thousand", "dix-sept mille"},
      {21000, "twenty-one thousand", "vingt et un mille"},
      {21021, "twenty-one thousand twenty-one", "vingt et un mille vingt et un"},
      {71000, "seventy-one thousand", "soixante et onze mille"},
      {71071, "seventy-one thousand seventy-one", "soixante et onze mille soixante et onze"},
      {80000, "eighty thousand", "quatre-vingt mille"},
      {80080, "eighty thousand eighty", "quatre-vingt mille quatre-vingts"},
      {81000, "eighty-one thousand", "quatre-vingt-un mille"},
      {91000, "ninety-one thousand", "quatre-vingt-onze mille"},
      {100000, "one hundred thousand", "cent mille"},
      {101000, "one hundred one thousand", "cent un mille"},
      {180000, "one hundred eighty thousand", "cent quatre-vingt mille"},
      {200000, "two hundred thousand", "deux cent mille"},
      {200200, "two hundred thousand two hundred", "deux cent mille deux cents"},
      {201000, "two hundred one thousand", "deux cent un mille"},
      {280000, "two hundred eighty thousand", "deux cent quatre-vingt mille"},
      {300001, "three hundred thousand one", "trois cent mille un"},
      {580000, "five hundred eighty thousand", "cinq cent quatre-vingt mille"},
      {999999, "nine hundred ninety-nine thousand nine hundred ninety-nine",
       "neuf cent quatre-vingt-dix-neuf mille neuf cent quatre-vingt-dix-neuf"},
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
  for (int64_t n : {0, 71, 91, 280, 21021, 80080, 999999}) {  // written_form undoes number_tokens
    INFO(n);
    CHECK(sg::study::written_form(sg::study::number_tokens(sg::study::french_words(n))) == sg::study::french_words(n));
    CHECK(sg::study::written_form(sg::study::number_tokens(sg::study::english_words(n))) == sg::study::english_words(n));
  }
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

TEST_CASE("the split by digit length: every length held out, seeded, disjoint", "[number_words]") {
  const auto a = sg::study::split_by_length(999999, 0.2, 500, 20000, 3);
  const auto b = sg::study::split_by_length(999999, 0.2, 500, 20000, 3);
  const auto c = sg::study::split_by_length(999999, 0.2, 500, 20000, 4);
  CHECK(a.test == b.test);
  CHECK(a.train == b.train);
  CHECK(a.test != c.test);
  // Per length: 10 numbers of 1 digit -> 2 held out, 90 -> 18, 900 -> 180, then the cap.
  const int64_t want_test[7] = {0, 2, 18, 180, 500, 500, 500};
  const int64_t want_train[7] = {0, 8, 72, 720, 8500, 20000, 20000};
  int64_t test[7] = {}, train[7] = {};
  for (int64_t n : a.test) ++test[sg::study::digit_length(n)];
  for (int64_t n : a.train) ++train[sg::study::digit_length(n)];
  for (int d = 1; d <= 6; ++d) {
    INFO(d << " digits");
    CHECK(test[d] == want_test[d]);
    CHECK(train[d] == want_train[d]);
  }
  CHECK(a.test.size() >= 1500);
  CHECK(std::is_sorted(a.test.begin(), a.test.end()));
  CHECK(std::is_sorted(a.train.begin(), a.train.end()));
  std::set<int64_t> seen(a.train.begin(), a.train.end());
  for (int64_t n : a.test) CHECK(seen.insert(n).second);
  CHECK(sg::study::digit_length(0) == 1);
  CHECK(sg::study::digit_length(9) == 1);
  CHECK(sg::study::digit_length(10) == 2);
  CHECK(sg::study::digit_length(999999) == 6);
  // A range that ends inside a length: 0..1500 has 501 numbers of 4 digits.
  const auto part = sg::study::split_by_length(1500, 0.2, 1000, 1000, 0);
  int64_t four = 0;
  for (int64_t n : part.test) four += n >= 1000;
  CHECK(four == 100);
  CHECK(part.test.back() <= 1500);
  CHECK(part.train.back() <= 1500);
}

TEST_CASE("number words refuse numbers and splits outside the task", "[number_words][bad_input]") {
  REQUIRE_THROWS_WITH(sg::study::english_words(1000000),
                      Contains("english_words") && Contains("1000000") && Contains("0..999999"));
  REQUIRE_THROWS_WITH(sg::study::french_words(-1), Contains("french_words") && Contains("-1") && Contains("0..999999"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(0, 1000000, 0.2, 1), Contains("0..1000000") && Contains("0..999999"));
  REQUIRE_THROWS_WITH(sg::study::split_by_length(1000000, 0.2, 10, 10, 1), Contains("0..1000000"));
  REQUIRE_THROWS_WITH(sg::study::split_by_length(999, 0.2, 0, 10, 1), Contains("test_cap 0"));
  REQUIRE_THROWS_WITH(sg::study::split_by_length(999, 0.95, 1000, 10, 1),
                      Contains("the 10 numbers of 1 digits (0..9) leave 10 for the test set"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(5, 4, 0.2, 1), Contains("5..4"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(0, 99, 0.0, 1), Contains("test_fraction") && Contains("got 0"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(0, 99, 1.0, 1), Contains("got 1"));
  REQUIRE_THROWS_WITH(sg::study::split_numbers(0, 3, 0.1, 1),
                      Contains("4 numbers") && Contains("leaves 0 for the test set"));
}
