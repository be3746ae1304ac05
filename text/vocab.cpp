#include "text/vocab.hpp"

#include <algorithm>
#include <set>

#include "core/error.hpp"

namespace sg::text {

Tokens tokenize(const std::string& line) {
  Tokens out;
  size_t start = 0;
  while (start <= line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string::npos) end = line.size();
    if (end > start) out.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string join(const Tokens& tokens) {
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
  return out;
}

Vocab::Vocab(const std::vector<Tokens>& sentences, VocabOptions options) {
  if (options.min_freq < 0) fail("Vocab: min_freq must be 0 or more, got ", options.min_freq);
  std::set<std::string> reserved;
  for (const std::string& t : options.reserved) {
    if (t == kUnk) fail("Vocab: '", kUnk, "' is always in the vocabulary; do not reserve it");
    if (!reserved.insert(t).second) fail("Vocab: reserved token '", t, "' is given twice");
  }
  // Counts, and the order of first appearance for equal counts.
  Tokens first_seen;
  for (const Tokens& sentence : sentences)
    for (const std::string& t : sentence)
      if (counts_[t]++ == 0) first_seen.push_back(t);
  Tokens kept;
  for (const std::string& t : first_seen)
    if (counts_[t] >= options.min_freq && !reserved.count(t) && t != kUnk) kept.push_back(t);

  if (options.order == VocabOrder::frequency) {
    std::stable_sort(kept.begin(), kept.end(),
                     [&](const std::string& a, const std::string& b) { return counts_[a] > counts_[b]; });
    add(kUnk);
    for (const std::string& t : options.reserved) add(t);
    for (const std::string& t : kept) add(t);
  } else {
    Tokens all = kept;
    all.push_back(kUnk);
    all.insert(all.end(), options.reserved.begin(), options.reserved.end());
    std::sort(all.begin(), all.end());  // std::string compares bytes as unsigned char
    for (const std::string& t : all) add(t);
  }
}

Vocab Vocab::from_tokens(const Tokens& idx_to_token) {
  Vocab v;
  for (size_t i = 0; i < idx_to_token.size(); ++i) {
    const std::string& t = idx_to_token[i];
    if (t.empty() || t.find_first_of(" \n\r") != std::string::npos)
      fail("Vocab::from_tokens: token ", i, " '", t, "' is empty or holds a space or a line break");
    if (v.contains(t)) fail("Vocab::from_tokens: token '", t, "' is given twice (ids ", v.id(t), " and ", i, ")");
    v.add(t);
  }
  if (!v.contains(kUnk)) fail("Vocab::from_tokens: the ", idx_to_token.size(), " tokens hold no '", kUnk, "'");
  return v;
}

void Vocab::add(const std::string& token) {
  token_to_idx_.emplace(token, size());
  idx_to_token_.push_back(token);
}

int64_t Vocab::id(const std::string& token) const {
  auto it = token_to_idx_.find(token);
  return it != token_to_idx_.end() ? it->second : token_to_idx_.at(kUnk);
}

std::vector<int64_t> Vocab::ids(const Tokens& tokens) const {
  std::vector<int64_t> out;
  out.reserve(tokens.size());
  for (const std::string& t : tokens) out.push_back(id(t));
  return out;
}

const std::string& Vocab::token(int64_t id) const {
  if (id < 0 || id >= size())
    fail("Vocab::token: id ", id, " is outside the vocabulary's ids 0..", size() - 1);
  return idx_to_token_[static_cast<size_t>(id)];
}

Tokens Vocab::tokens(const std::vector<int64_t>& ids) const {
  Tokens out;
  out.reserve(ids.size());
  for (int64_t i : ids) out.push_back(token(i));
  return out;
}

int64_t Vocab::count(const std::string& token) const {
  auto it = counts_.find(token);
  return it != counts_.end() ? it->second : 0;
}

int64_t Vocab::special(const std::string& token) const {
  auto it = token_to_idx_.find(token);
  if (it == token_to_idx_.end())
    fail("Vocab: '", token, "' is not in this vocabulary (", size(),
         " tokens): reserve it in VocabOptions::reserved");
  return it->second;
}

}  // namespace sg::text
