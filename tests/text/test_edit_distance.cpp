// text/edit_distance.hpp: the Levenshtein distance between token sequences,
// against hand-counted cases and an independent definition (the recursion
// over the last tokens, memoised) on random sequences.
#include <catch2/catch.hpp>

#include "text/edit_distance.hpp"

#include <functional>
#include <random>
#include <vector>

using sg::text::edit_distance;
using sg::text::Tokens;

TEST_CASE("edit_distance: hand-counted cases", "[text]") {
  CHECK(edit_distance({}, {}) == 0);
  CHECK(edit_distance({"a", "b"}, {}) == 2);
  CHECK(edit_distance({}, {"a", "b", "c"}) == 3);
  CHECK(edit_distance({"k", "ae", "t"}, {"k", "ae", "t"}) == 0);
  CHECK(edit_distance({"k", "ae", "t"}, {"k", "ah", "t"}) == 1);                    // a substitution
  CHECK(edit_distance({"k", "ae", "t"}, {"k", "ae", "t", "s"}) == 1);               // an insertion
  CHECK(edit_distance({"s", "k", "ae", "t"}, {"k", "ae", "t"}) == 1);               // a deletion
  CHECK(edit_distance({"k", "i", "t", "t", "e", "n"}, {"s", "i", "t", "t", "i", "n", "g"}) == 3);  // the classic
  CHECK(edit_distance({"a", "b"}, {"b", "a"}) == 2);  // no transpositions
  // Tokens compare whole: "ax" is not "a" followed by "x".
  CHECK(edit_distance({"ax"}, {"a", "x"}) == 2);
}

TEST_CASE("edit_distance agrees with the recursive definition on random sequences, both ways", "[text]") {
  std::mt19937 gen(7);
  const Tokens alphabet = {"aa", "b", "k", "t", "ax"};
  for (int trial = 0; trial < 200; ++trial) {
    Tokens a(gen() % 8), b(gen() % 8);
    for (auto& t : a) t = alphabet[gen() % alphabet.size()];
    for (auto& t : b) t = alphabet[gen() % alphabet.size()];
    // d(i, j): a's first i tokens against b's first j.
    std::vector<std::vector<int64_t>> memo(a.size() + 1, std::vector<int64_t>(b.size() + 1, -1));
    std::function<int64_t(size_t, size_t)> d = [&](size_t i, size_t j) -> int64_t {
      if (i == 0) return static_cast<int64_t>(j);
      if (j == 0) return static_cast<int64_t>(i);
      int64_t& m = memo[i][j];
      if (m < 0) m = std::min({d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1])});
      return m;
    };
    INFO("trial " << trial);
    CHECK(edit_distance(a, b) == d(a.size(), b.size()));
    CHECK(edit_distance(b, a) == d(a.size(), b.size()));
  }
}
