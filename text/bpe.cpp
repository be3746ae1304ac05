#include "text/bpe.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.hpp"

namespace sg::text {
namespace {

enum class ByteClass { letter, digit, space, other };

ByteClass byte_class(unsigned char b) {
  if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b >= 0x80) return ByteClass::letter;
  if (b >= '0' && b <= '9') return ByteClass::digit;
  if (b == ' ' || b == '\n' || b == '\t' || b == '\r' || b == '\f' || b == '\v') return ByteClass::space;
  return ByteClass::other;
}

using Pair = std::pair<int64_t, int64_t>;

// Replaces every (left-to-right, non-overlapping) occurrence of `pair` in ids by `id`.
void merge_in(std::vector<int64_t>& ids, const Pair& pair, int64_t id) {
  size_t out = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == pair.first && ids[i + 1] == pair.second) {
      ids[out++] = id;
      ++i;
    } else {
      ids[out++] = ids[i];
    }
  }
  ids.resize(out);
}

}  // namespace

std::vector<std::string> bpe_chunks(const std::string& text) {
  std::vector<std::string> chunks;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    size_t j = i;
    ByteClass c = byte_class(s[i]);
    // One space joins the run of letters, digits or marks after it (" the").
    if (s[i] == ' ' && i + 1 < n && byte_class(s[i + 1]) != ByteClass::space) c = byte_class(s[++j]);
    while (j < n && byte_class(s[j]) == c) {
      // A run of whitespace leaves its last space to the word after it.
      if (c == ByteClass::space && s[j] == ' ' && j + 1 < n && byte_class(s[j + 1]) != ByteClass::space && j > i)
        break;
      ++j;
    }
    chunks.emplace_back(text, i, j - i);
    i = j;
  }
  return chunks;
}

BpeTokenizer BpeTokenizer::train(const std::string& corpus, int64_t vocab_size) {
  if (vocab_size < 256)
    fail("BpeTokenizer::train: vocab_size must be at least 256 (one token per byte), got ", vocab_size);
  // Each distinct chunk once, with its count: merges never cross chunks.
  std::unordered_map<std::string, int64_t> counts;
  for (std::string& chunk : bpe_chunks(corpus)) ++counts[std::move(chunk)];
  std::vector<std::vector<int64_t>> words;
  std::vector<int64_t> freq;
  for (const auto& [chunk, count] : counts) {
    std::vector<int64_t> ids;
    for (unsigned char b : chunk) ids.push_back(b);
    words.push_back(std::move(ids));
    freq.push_back(count);
  }
  std::vector<Pair> merges;
  while (256 + static_cast<int64_t>(merges.size()) < vocab_size) {
    std::unordered_map<uint64_t, int64_t> pairs;  // (first << 32 | second) -> count
    for (size_t w = 0; w < words.size(); ++w)
      for (size_t i = 0; i + 1 < words[w].size(); ++i)
        pairs[static_cast<uint64_t>(words[w][i]) << 32 | static_cast<uint64_t>(words[w][i + 1])] += freq[w];
    uint64_t best_key = 0;
    int64_t best_count = 1;  // a pair seen once saves nothing
    for (const auto& [key, count] : pairs)
      if (count > best_count || (count == best_count && count > 1 && key < best_key)) best_key = key, best_count = count;
    const Pair best{static_cast<int64_t>(best_key >> 32), static_cast<int64_t>(best_key & 0xffffffffu)};
    if (best_count < 2) break;
    const int64_t id = 256 + static_cast<int64_t>(merges.size());
    merges.push_back(best);
    for (auto& ids : words) merge_in(ids, best, id);
  }
  return BpeTokenizer(std::move(merges));
}

BpeTokenizer::BpeTokenizer(std::vector<Pair> merges) : merges_(std::move(merges)) {
  for (int b = 0; b < 256; ++b) bytes_.emplace_back(1, static_cast<char>(b));
  for (size_t i = 0; i < merges_.size(); ++i) {
    const int64_t id = 256 + static_cast<int64_t>(i);
    const auto [a, b] = merges_[i];
    if (a < 0 || b < 0 || a >= id || b >= id)
      fail("BpeTokenizer: merge ", i, " (id ", id, ") joins ids ", a, " and ", b, "; each must be in [0, ", id, ")");
    bytes_.push_back(bytes_[static_cast<size_t>(a)] + bytes_[static_cast<size_t>(b)]);
  }
}

const std::string& BpeTokenizer::bytes(int64_t id) const {
  if (id < 0 || id >= vocab_size()) fail("BpeTokenizer: id ", id, " is outside [0, ", vocab_size(), ")");
  return bytes_[static_cast<size_t>(id)];
}

// Each chunk starts as its bytes, then takes the merges in the order they
// were learned: each step applies the earliest-learned merge present
// (GPT-2's rule), which reproduces the tokens training gave the corpus.
std::vector<int64_t> BpeTokenizer::encode(const std::string& text) const {
  std::map<Pair, int64_t> rank;  // pair -> the id it merges into
  for (size_t i = 0; i < merges_.size(); ++i) rank.emplace(merges_[i], 256 + static_cast<int64_t>(i));
  std::unordered_map<std::string, std::vector<int64_t>> seen;  // a corpus repeats its words
  std::vector<int64_t> out;
  for (const std::string& chunk : bpe_chunks(text)) {
    auto it = seen.find(chunk);
    if (it == seen.end()) {
      std::vector<int64_t> ids;
      for (unsigned char b : chunk) ids.push_back(b);
      while (ids.size() > 1) {
        int64_t best = std::numeric_limits<int64_t>::max();
        for (size_t i = 0; i + 1 < ids.size(); ++i) {
          const auto r = rank.find({ids[i], ids[i + 1]});
          if (r != rank.end()) best = std::min(best, r->second);
        }
        if (best == std::numeric_limits<int64_t>::max()) break;
        merge_in(ids, merges_[static_cast<size_t>(best - 256)], best);
      }
      it = seen.emplace(chunk, std::move(ids)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size())
      fail("BpeTokenizer::decode: id ", ids[i], " at position ", i, " is outside [0, ", vocab_size(), ")");
    out += bytes_[static_cast<size_t>(ids[i])];
  }
  return out;
}

std::string BpeTokenizer::to_json() const {
  nlohmann::json j;
  j["kind"] = kind();
  j["merges"] = merges_;
  return j.dump();
}

}  // namespace sg::text
