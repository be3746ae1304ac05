// text/cmudict.hpp: Festival's CMU lexicon read as word -> phones, with and
// without stress, duplicates left out, and a bad line named; and the
// dictionary Debian's festlex-cmu installs (scripts/setup.sh installs it).
#include <catch2/catch.hpp>

#include "text/cmudict.hpp"

#include <filesystem>
#include <fstream>
#include <set>

using Catch::Contains;
using sg::text::parse_cmudict;
using sg::text::Tokens;

TEST_CASE("parse_cmudict: words, phones in order, stress on vowels when asked", "[text]") {
  const std::string text =
      "MNCL\n"
      "(\"aaberg\" nil (((aa) 1) ((b er g) 0)))\n"
      "(\"lead\" n (((l eh d) 1)))\n"
      "(\"lead\" v (((l iy d) 1)))\n"
      "(\"lead\" v_p (((l eh d) 1)))\n"  // the same phones as the noun: left out
      "\n"
      "(\"Abc\" nil (((ey) 1) ((b iy) 1) ((s iy) 1)))\r\n";
  const auto plain = parse_cmudict(text, "t.out");
  REQUIRE(plain.size() == 4);
  CHECK(plain[0].word == "aaberg");
  CHECK(plain[0].phones == Tokens{"aa", "b", "er", "g"});
  CHECK(plain[1].word == "lead");
  CHECK(plain[1].phones == Tokens{"l", "eh", "d"});
  CHECK(plain[2].phones == Tokens{"l", "iy", "d"});
  CHECK(plain[3].word == "abc");  // lower-cased
  CHECK(plain[3].phones == Tokens{"ey", "b", "iy", "s", "iy"});
  const auto stressed = parse_cmudict(text, "t.out", true);
  REQUIRE(stressed.size() == 4);
  CHECK(stressed[0].phones == Tokens{"aa1", "b", "er0", "g"});
  CHECK(stressed[3].phones == Tokens{"ey1", "b", "iy1", "s", "iy1"});
}

TEST_CASE("parse_cmudict: a line that is not an entry is named with its file and line", "[text]") {
  const auto bad = [](const std::string& line) { return parse_cmudict("MNCL\n(\"ok\" nil (((ow) 1)))\n" + line + "\n", "d.out"); };
  REQUIRE_THROWS_WITH(bad("(\"cat\" nil (((k ae t) 1))"), Contains("read_cmudict: d.out:3") && Contains("expected ')'"));
  REQUIRE_THROWS_WITH(bad("(cat nil (((k ae t) 1)))"), Contains("d.out:3") && Contains("expected '\"'"));
  REQUIRE_THROWS_WITH(bad("(\"cat nil (((k ae t) 1)))"), Contains("d.out:3") && Contains("closing quote"));
  REQUIRE_THROWS_WITH(bad("(\"\" nil (((k ae t) 1)))"), Contains("d.out:3") && Contains("empty word"));
  REQUIRE_THROWS_WITH(bad("(\"cat\" nil (((k ae t) x)))"), Contains("d.out:3") && Contains("stress 'x'"));
  REQUIRE_THROWS_WITH(bad("(\"cat\" nil ())"), Contains("d.out:3") && Contains("no phones"));
  REQUIRE_THROWS_WITH(bad("(\"cat\" nil (((k ae t) 1))) extra"), Contains("d.out:3") && Contains("text after"));
  REQUIRE_THROWS_WITH(bad("(\"caf\xc3\xa9\" nil (((k ae f ey) 1)))"), Contains("d.out:3") && Contains("printable ASCII"));
}

TEST_CASE("read_cmudict: a missing file is named, an empty one refused", "[text]") {
  REQUIRE_THROWS_WITH(sg::text::read_cmudict("/nonexistent/cmu.out"),
                      Contains("read_cmudict") && Contains("/nonexistent/cmu.out"));
  const std::string empty = (std::filesystem::temp_directory_path() / "smallgrad_empty_cmudict.out").string();
  std::ofstream(empty) << "MNCL\n";
  REQUIRE_THROWS_WITH(sg::text::read_cmudict(empty), Contains("holds no entry"));
  std::filesystem::remove(empty);
}

TEST_CASE("read_cmudict: Debian's festlex-cmu dictionary", "[text]") {
  const auto entries = sg::text::read_cmudict();
  // festlex-cmu 2.4 (Debian bookworm): 105,901 entries, 69 of which repeat an
  // earlier one's word and phones (another part of speech, or an upper-case spelling).
  CHECK(entries.size() == 105832);
  std::set<std::string> phones;
  for (const auto& e : entries)
    for (const std::string& p : e.phones) phones.insert(p);
  CHECK(phones.size() == 40);  // ARPAbet's 39 and Festival's ax (schwa)
  CHECK(phones.count("ax") == 1);
  bool found = false;
  for (const auto& e : entries)
    if (e.word == "aaberg") {
      found = true;
      CHECK(e.phones == Tokens{"aa", "b", "er", "g"});
    }
  CHECK(found);
}
