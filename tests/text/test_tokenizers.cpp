// The language models' tokenizers (text/char_tokenizer.cpp, text/bpe.cpp,
// text/tokenizer.cpp): nanoGPT's character vocabulary, UTF-8 errors with
// their offsets, byte-level BPE lossless on random bytes and on every file
// of the repository, merges as training learns them, JSON round trips.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/random.hpp"
#include "text/bpe.hpp"
#include "text/char_tokenizer.hpp"

using Catch::Contains;
using sg::text::BpeTokenizer;
using sg::text::CharTokenizer;

TEST_CASE("CharTokenizer: every distinct character, sorted by code point, as nanoGPT's shakespeare_char", "[tokenizer]") {
  const CharTokenizer tok = CharTokenizer::train("hello, wörld\n");
  // sorted(set(text)): '\n' ' ' ',' 'd' 'e' 'h' 'l' 'o' 'r' 'w' 'ö'
  REQUIRE(tok.vocab_size() == 11);
  REQUIRE(tok.encode("\n") == std::vector<int64_t>{0});
  REQUIRE(tok.encode("wörld") == std::vector<int64_t>{9, 10, 8, 6, 3});
  REQUIRE(tok.decode(tok.encode("hello, wörld\n")) == "hello, wörld\n");
  REQUIRE_THROWS_WITH(tok.encode("hex"), Contains("'x' (U+0078) at offset 2") && Contains("11 characters"));
  REQUIRE_THROWS_WITH(tok.encode("wö€"), Contains("U+20AC") && Contains("offset 3"));
  REQUIRE_THROWS_WITH(tok.decode({11}), Contains("id 11 at position 0 is outside [0, 11)"));
}

TEST_CASE("CharTokenizer refuses bytes that are not UTF-8, naming the offset", "[tokenizer]") {
  REQUIRE_THROWS_WITH(CharTokenizer::train(std::string("abc\xff", 4)), Contains("offset 3") && Contains("0xff"));
  REQUIRE_THROWS_WITH(CharTokenizer::train(std::string("ab\xc3", 3)), Contains("offset 2"));          // cut short
  REQUIRE_THROWS_WITH(CharTokenizer::train(std::string("a\xc0\xaf", 3)), Contains("offset 1"));       // overlong
  REQUIRE_THROWS_WITH(CharTokenizer::train(std::string("a\xed\xa0\x80", 4)), Contains("offset 1"));   // a surrogate
  REQUIRE_THROWS_WITH(CharTokenizer::train(""), Contains("no characters"));
  REQUIRE(CharTokenizer::train("\xf0\x9f\x98\x80").vocab_size() == 1);  // four bytes, one character
}

TEST_CASE("BpeTokenizer learns the most frequent pair first, the smaller of ties", "[tokenizer]") {
  // Chunks: "aaab", " aaab", " aab" (the space joins the word after it).
  const BpeTokenizer tok = BpeTokenizer::train("aaab aaab aab", 258);
  REQUIRE(tok.merges().size() == 2);
  REQUIRE(tok.merges()[0] == std::pair<int64_t, int64_t>{'a', 'a'});  // 5 times: ('a', 'a') beats ('a', 'b'), 3
  REQUIRE(tok.bytes(256) == "aa");
  REQUIRE(tok.bytes(257).size() >= 2);
  REQUIRE(tok.encode("aab") == std::vector<int64_t>{256, 'b'} ) ;
  REQUIRE(BpeTokenizer::train("abc", 300).vocab_size() == 256);  // no pair occurs twice: no merge
  REQUIRE_THROWS_WITH(BpeTokenizer::train("x", 100), Contains("at least 256"));
  REQUIRE_THROWS_WITH(tok.decode({258}), Contains("id 258 at position 0 is outside [0, 258)"));
}

TEST_CASE("bpe_chunks cut words with their leading space and keep every byte", "[tokenizer]") {
  REQUIRE(sg::text::bpe_chunks("In the  beginning, 12 x\n\n")
          == std::vector<std::string>{"In", " the", " ", " beginning", ",", " 12", " x", "\n\n"});
  std::string joined;
  for (const std::string& c : sg::text::bpe_chunks("a\t b\r\n  c")) joined += c;
  REQUIRE(joined == "a\t b\r\n  c");
}

TEST_CASE("BpeTokenizer is lossless on random bytes and on every file of the repository", "[tokenizer]") {
  std::string corpus;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(SMALLGRAD_SOURCE_DIR)) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() || path.find("/.git/") != std::string::npos || path.find("/build/") != std::string::npos ||
        path.find("/out/") != std::string::npos)
      continue;
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    files.push_back(ss.str());
    if (corpus.size() < 2000000) corpus += files.back();
  }
  REQUIRE(files.size() > 100);
  const BpeTokenizer tok = BpeTokenizer::train(corpus, 600);
  REQUIRE(tok.vocab_size() == 600);
  const BpeTokenizer back(tok.merges());  // as loaded from its JSON
  for (size_t i = 0; i < files.size(); ++i) {
    INFO("file " << i << " of " << files.size());
    const std::vector<int64_t> ids = tok.encode(files[i]);
    REQUIRE(ids.size() <= files[i].size());
    REQUIRE(back.decode(ids) == files[i]);
  }
  sg::Generator gen(17);
  for (int trial = 0; trial < 50; ++trial) {
    std::string bytes(static_cast<size_t>(gen.randint(0, 3000)), '\0');
    for (char& b : bytes) b = static_cast<char>(gen.randint(0, 256));
    REQUIRE(tok.decode(tok.encode(bytes)) == bytes);
  }
}

TEST_CASE("Tokenizers round-trip through their JSON; a damaged one is refused", "[tokenizer]") {
  const CharTokenizer c = CharTokenizer::train("to be or not");
  const auto c2 = sg::text::tokenizer_from_json(c.to_json());
  REQUIRE(std::string(c2->kind()) == "char");
  REQUIRE(c2->encode("not to be") == c.encode("not to be"));
  const BpeTokenizer b = BpeTokenizer::train("to be or not to be, to be", 260);
  const auto b2 = sg::text::tokenizer_from_json(b.to_json());
  REQUIRE(b2->vocab_size() == b.vocab_size());
  REQUIRE(b2->encode("be or to") == b.encode("be or to"));
  REQUIRE_THROWS_WITH(sg::text::tokenizer_from_json("{\"kind\": \"words\"}"), Contains("unknown kind 'words'"));
  REQUIRE_THROWS_WITH(sg::text::tokenizer_from_json("{\"kind\": \"bpe\"}"), Contains("not a saved tokenizer"));
  REQUIRE_THROWS_WITH(sg::text::tokenizer_from_json("{\"kind\":\"bpe\",\"merges\":[[1,300]]}"), Contains("merge 0"));
  REQUIRE_THROWS_WITH(sg::text::tokenizer_from_json("{\"kind\":\"char\",\"characters\":[98,97]}"), Contains("sorted"));
}
