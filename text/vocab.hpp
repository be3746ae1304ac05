#pragma once
// Tokens and their vocabulary, as Dive into Deep Learning builds them for
// machine translation ("Machine Translation and the Dataset"), for tokens
// from any source: a text split on spaces, a task generated in code.
//
//   text::Vocab vocab(sentences, {.min_freq = 2});   // <unk> <pad> <bos> <eos> then the corpus
//   vocab.ids({"va", "!"}) -> {12, 5};  vocab.tokens({12, 5}) -> {"va", "!"}
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace sg::text {

using Tokens = std::vector<std::string>;

// The special tokens. <unk> is in every vocabulary; d2l's translation data
// reserves the other three (VocabOptions' default).
inline const std::string kUnk = "<unk>";
inline const std::string kPad = "<pad>";
inline const std::string kBos = "<bos>";
inline const std::string kEos = "<eos>";

// d2l's tokenisation once its preprocessing has put spaces around the
// punctuation: split on ' ', dropping empty pieces (as d2l 1.0's _tokenize),
// so "a  b " gives {"a", "b"} and "" gives {}.
Tokens tokenize(const std::string& line);
// The tokens joined by single spaces (d2l's ' '.join), "" for none.
std::string join(const Tokens& tokens);

// The order of the ids after <unk> and the reserved tokens.
enum class VocabOrder {
  // d2l 2nd edition 0.17 (and this default): <unk> is 0, the reserved tokens
  // follow in their order, then the corpus's tokens by descending count;
  // equal counts keep the order of first appearance in the corpus (d2l's
  // stable sort over a Counter, which remembers insertion order).
  frequency,
  // d2l 1.0: every token, <unk> and the reserved ones included, sorted by
  // code point (UTF-8 bytes compare in the same order), so a vocabulary
  // matches d2l 1.0's ids for the same tokens.
  alphabetical,
};

struct VocabOptions {
  int64_t min_freq = 0;  // a corpus token counted fewer times becomes <unk>
  Tokens reserved = {kPad, kBos, kEos};  // in the vocabulary whatever their count
  VocabOrder order = VocabOrder::frequency;
};

class Vocab {
 public:
  // Counts the tokens of every sentence. Throws for a negative min_freq, a
  // reserved token given twice, or <unk> among the reserved tokens (it is
  // always there).
  explicit Vocab(const std::vector<Tokens>& sentences, VocabOptions options = {});
  // The vocabulary whose ids are exactly idx_to_token's positions (a saved
  // vocabulary's idx_to_token(), read back); counts are not kept (count()
  // is 0). Throws for a token given twice, an empty one, one holding a
  // space or a line break, or a list without <unk>.
  static Vocab from_tokens(const Tokens& idx_to_token);

  int64_t size() const { return static_cast<int64_t>(idx_to_token_.size()); }
  bool contains(const std::string& token) const { return token_to_idx_.count(token) != 0; }
  // A token's id; <unk>'s id for a token not in the vocabulary (as d2l).
  int64_t id(const std::string& token) const;
  std::vector<int64_t> ids(const Tokens& tokens) const;
  // An id's token; an id outside [0, size) throws (d2l's Python list would
  // wrap a negative id around).
  const std::string& token(int64_t id) const;
  Tokens tokens(const std::vector<int64_t>& ids) const;
  // How often the corpus had the token (0 for reserved-only or unknown ones).
  int64_t count(const std::string& token) const;

  int64_t unk() const { return id(kUnk); }
  // The ids of <pad>, <bos> and <eos>; each throws if this vocabulary was
  // built without that token.
  int64_t pad() const { return special(kPad); }
  int64_t bos() const { return special(kBos); }
  int64_t eos() const { return special(kEos); }

  const Tokens& idx_to_token() const { return idx_to_token_; }

 private:
  Vocab() = default;
  int64_t special(const std::string& token) const;
  void add(const std::string& token);

  Tokens idx_to_token_;
  std::unordered_map<std::string, int64_t> token_to_idx_;
  std::unordered_map<std::string, int64_t> counts_;
};

}  // namespace sg::text
