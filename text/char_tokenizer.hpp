#pragma once
// Character tokens, as nanoGPT's shakespeare_char builds them: the
// vocabulary is every distinct character (Unicode code point) of the corpus,
// sorted by code point, and a character's id is its place in that list.
// The text is UTF-8; bytes that are not UTF-8 are refused with their offset.
#include "text/tokenizer.hpp"

namespace sg::text {

// text -> its code points; throws "<who>: bytes at offset N are not UTF-8 (0x..)".
std::vector<char32_t> utf8_code_points(const std::string& text, const char* who = "utf8");
// code points -> UTF-8.
std::string utf8_encode(const std::vector<char32_t>& code_points);

class CharTokenizer : public Tokenizer {
 public:
  // The distinct characters of `corpus`, sorted.
  static CharTokenizer train(const std::string& corpus);
  // The characters, each once, in id order.
  explicit CharTokenizer(std::vector<char32_t> characters);

  std::vector<int64_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(chars_.size()); }
  const char* kind() const override { return "char"; }
  std::string to_json() const override;
  const std::vector<char32_t>& characters() const { return chars_; }

 private:
  std::vector<char32_t> chars_;
  std::vector<int64_t> ids_;  // code point -> id for code points below 0x10000 (-1: absent)
};

}  // namespace sg::text
