// text/vocab.hpp: tokenisation, the vocabulary's ids in d2l's two orders,
// min_freq, <unk>, and its errors.
#include <catch2/catch.hpp>

#include "text/vocab.hpp"

using Catch::Contains;
using sg::text::Tokens;
using sg::text::Vocab;

TEST_CASE("tokenize splits on spaces and drops empty pieces; join undoes it", "[text]") {
  CHECK(sg::text::tokenize("go .") == Tokens{"go", "."});
  CHECK(sg::text::tokenize("  a  b ") == Tokens{"a", "b"});
  CHECK(sg::text::tokenize("").empty());
  CHECK(sg::text::tokenize("   ").empty());
  CHECK(sg::text::tokenize("j'ai") == Tokens{"j'ai"});  // nothing but spaces splits
  CHECK(sg::text::join({"va", "!"}) == "va !");
  CHECK(sg::text::join({}).empty());
}

TEST_CASE("Vocab: <unk>, the reserved tokens, then descending counts, ties by first appearance", "[text]") {
  // counts: b 3, a 2, c 2 (a seen before c), d 1, e 1 (d before e)
  const std::vector<Tokens> corpus = {{"b", "a", "d"}, {"c", "b", "e"}, {"a", "c", "b"}};
  const Vocab v(corpus);
  CHECK(v.idx_to_token() == Tokens{"<unk>", "<pad>", "<bos>", "<eos>", "b", "a", "c", "d", "e"});
  CHECK(v.unk() == 0);
  CHECK(v.pad() == 1);
  CHECK(v.bos() == 2);
  CHECK(v.eos() == 3);
  CHECK(v.size() == 9);
  CHECK(v.count("b") == 3);
  CHECK(v.count("<pad>") == 0);
  CHECK(v.ids({"a", "zzz", "e"}) == std::vector<int64_t>{5, 0, 8});  // unknown -> <unk>
  CHECK(v.tokens({4, 0, 3}) == Tokens{"b", "<unk>", "<eos>"});
  CHECK(v.contains("d"));
  CHECK_FALSE(v.contains("zzz"));

  // min_freq 2 drops d and e (counted once): they become <unk>.
  const Vocab v2(corpus, {.min_freq = 2});
  CHECK(v2.idx_to_token() == Tokens{"<unk>", "<pad>", "<bos>", "<eos>", "b", "a", "c"});
  CHECK(v2.id("d") == v2.unk());

  // A corpus token that is also reserved keeps its reserved place, once.
  const Vocab v3({{"<eos>", "x", "<eos>"}}, {.reserved = {"<eos>"}});
  CHECK(v3.idx_to_token() == Tokens{"<unk>", "<eos>", "x"});
  CHECK(v3.count("<eos>") == 2);
}

TEST_CASE("Vocab: d2l 1.0's alphabetical order, by code point", "[text]") {
  // '-' (0x2D) sorts before '<' (0x3C), '<' before letters, 'z' before "é" (0xC3 0xA9).
  const Vocab v({{"zéro", "un", "-", "un", "zz"}}, {.min_freq = 1, .order = sg::text::VocabOrder::alphabetical});
  CHECK(v.idx_to_token() == Tokens{"-", "<bos>", "<eos>", "<pad>", "<unk>", "un", "zz", "zéro"});
  CHECK(v.unk() == 4);
  CHECK(v.pad() == 3);
}

TEST_CASE("Vocab: bad ids, options and missing special tokens give clear errors", "[text][bad_input]") {
  const Vocab v(std::vector<Tokens>{{"a", "b"}});
  REQUIRE_THROWS_WITH(v.token(6), Contains("Vocab::token") && Contains("id 6") && Contains("0..5"));
  REQUIRE_THROWS_WITH(v.token(-1), Contains("id -1") && Contains("0..5"));
  REQUIRE_THROWS_WITH(v.tokens({0, 7}), Contains("id 7"));
  REQUIRE_THROWS_WITH(Vocab({{"a"}}, {.min_freq = -1}), Contains("min_freq") && Contains("-1"));
  REQUIRE_THROWS_WITH(Vocab({{"a"}}, {.reserved = {"<pad>", "<pad>"}}), Contains("'<pad>'") && Contains("twice"));
  REQUIRE_THROWS_WITH(Vocab({{"a"}}, {.reserved = {"<unk>"}}), Contains("'<unk>'") && Contains("always"));
  const Vocab bare({{"a"}}, {.reserved = {}});
  CHECK(bare.idx_to_token() == Tokens{"<unk>", "a"});
  REQUIRE_THROWS_WITH(bare.pad(), Contains("'<pad>'") && Contains("not in this vocabulary") && Contains("2 tokens"));
  REQUIRE_THROWS_WITH(bare.bos(), Contains("'<bos>'"));
  REQUIRE_THROWS_WITH(bare.eos(), Contains("'<eos>'"));
}

TEST_CASE("Vocab::from_tokens keeps the given ids, and refuses a list it cannot be", "[text]") {
  const sg::text::Vocab built({{"b", "a", "b", "c"}});
  const sg::text::Vocab back = sg::text::Vocab::from_tokens(built.idx_to_token());
  REQUIRE(back.idx_to_token() == built.idx_to_token());
  for (const std::string& t : built.idx_to_token()) REQUIRE(back.id(t) == built.id(t));
  REQUIRE(back.eos() == built.eos());
  REQUIRE(back.id("zzz") == back.unk());
  REQUIRE(back.count("b") == 0);  // counts are not kept
  REQUIRE_THROWS_WITH(sg::text::Vocab::from_tokens({"<unk>", "a", "a"}),
                      Catch::Contains("token 'a' is given twice (ids 1 and 2)"));
  REQUIRE_THROWS_WITH(sg::text::Vocab::from_tokens({"a"}), Catch::Contains("hold no '<unk>'"));
  REQUIRE_THROWS_WITH(sg::text::Vocab::from_tokens({"<unk>", "a b"}), Catch::Contains("token 1 'a b' is empty or holds"));
}
