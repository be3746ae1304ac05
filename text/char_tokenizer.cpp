#include "text/char_tokenizer.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace sg::text {
namespace {

// "'a' (U+0061)", or the code point alone for what a terminal would not show.
std::string describe(char32_t c) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(c));
  if (c < 0x20 || c == 0x7f) return hex;
  return "'" + utf8_encode({c}) + "' (" + hex + ")";
}

constexpr size_t kDirect = 0x10000;  // code points looked up in a table; the rest by binary search

}  // namespace

std::vector<char32_t> utf8_code_points(const std::string& text, const char* who) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    char32_t c = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
    bool ok = len > 0 && i + static_cast<size_t>(len) <= n;
    for (int k = 1; ok && k < len; ++k) {
      ok = (s[i + k] & 0xc0) == 0x80;
      c = (c << 6) | (s[i + k] & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
    ok = ok && !(len == 2 && c < 0x80) && !(len == 3 && c < 0x800) && !(len == 4 && c < 0x10000) &&
         !(c >= 0xd800 && c <= 0xdfff) && c <= 0x10ffff;
    if (!ok) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", b);
      fail(who, ": the bytes at offset ", i, " are not UTF-8 (first byte ", hex, ")");
    }
    out.push_back(c);
    i += static_cast<size_t>(len);
  }
  return out;
}

std::string utf8_encode(const std::vector<char32_t>& code_points) {
  std::string out;
  for (char32_t c : code_points) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | (c >> 6)), out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | (c >> 12)), out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (c >> 18)), out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f)), out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  return out;
}

CharTokenizer CharTokenizer::train(const std::string& corpus) {
  std::vector<char32_t> chars = utf8_code_points(corpus, "CharTokenizer");
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  return CharTokenizer(std::move(chars));
}

CharTokenizer::CharTokenizer(std::vector<char32_t> characters) : chars_(std::move(characters)) {
  if (chars_.empty()) fail("CharTokenizer: no characters (an empty corpus?)");
  ids_.assign(kDirect, -1);
  for (size_t i = 0; i < chars_.size(); ++i) {
    const char32_t c = chars_[i];
    if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) fail("CharTokenizer: character ", i, " is not a code point");
    if (i > 0 && c <= chars_[i - 1])
      fail("CharTokenizer: the characters must be sorted and distinct; ", describe(c), " follows ",
           describe(chars_[i - 1]));
    if (c < kDirect) ids_[c] = static_cast<int64_t>(i);
  }
}

std::vector<int64_t> CharTokenizer::encode(const std::string& text) const {
  const std::vector<char32_t> cps = utf8_code_points(text, "CharTokenizer::encode");
  std::vector<int64_t> out(cps.size());
  size_t offset = 0;  // of the character in bytes, for the message
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    int64_t id = -1;
    if (c < kDirect) {
      id = ids_[c];
    } else {
      const auto it = std::lower_bound(chars_.begin(), chars_.end(), c);
      if (it != chars_.end() && *it == c) id = it - chars_.begin();
    }
    if (id < 0)
      fail("CharTokenizer::encode: the character ", describe(c), " at offset ", offset,
           " is not in the vocabulary of ", chars_.size(), " characters");
    out[i] = id;
    offset += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return out;
}

std::string CharTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<char32_t> cps(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size())
      fail("CharTokenizer::decode: id ", ids[i], " at position ", i, " is outside [0, ", vocab_size(), ")");
    cps[i] = chars_[static_cast<size_t>(ids[i])];
  }
  return utf8_encode(cps);
}

std::string CharTokenizer::to_json() const {
  nlohmann::json j;
  j["kind"] = kind();
  j["characters"] = std::vector<uint32_t>(chars_.begin(), chars_.end());
  return j.dump();
}

}  // namespace sg::text
