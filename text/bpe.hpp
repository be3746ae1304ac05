#pragma once
// Byte-level byte-pair encoding (Sennrich et al., 2016; GPT-2's byte-level
// form): ids 0..255 are the 256 bytes, and each id from 256 on is a merge of
// two earlier ids, learned from a corpus by repeatedly merging its most
// frequent adjacent pair. Any byte string encodes (every byte is a token),
// and decoding concatenates the tokens' bytes, so decode(encode(x)) == x
// for any x, UTF-8 or not.
//
// Before counting pairs the text is cut into chunks that no merge crosses,
// as GPT-2 does with its regular expression: a run of letters (bytes of
// 0x80 and above count as letters, so UTF-8 characters stay whole) with the
// one space before it, a run of digits, a run of other visible bytes, a run
// of whitespace. So a token never spans two words.
#include <utility>

#include "text/tokenizer.hpp"

namespace sg::text {

class BpeTokenizer : public Tokenizer {
 public:
  // Learns merges from `corpus` until the vocabulary has vocab_size ids
  // (at least 256), or until no pair occurs twice. Ties between equally
  // frequent pairs go to the smaller pair (first id, then second).
  static BpeTokenizer train(const std::string& corpus, int64_t vocab_size);
  // merges[i] = the pair of ids that id 256 + i stands for; each id of a pair below 256 + i.
  explicit BpeTokenizer(std::vector<std::pair<int64_t, int64_t>> merges);

  std::vector<int64_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return 256 + static_cast<int64_t>(merges_.size()); }
  const char* kind() const override { return "bpe"; }
  std::string to_json() const override;
  const std::vector<std::pair<int64_t, int64_t>>& merges() const { return merges_; }
  // The bytes id stands for.
  const std::string& bytes(int64_t id) const;

 private:
  std::vector<std::pair<int64_t, int64_t>> merges_;
  std::vector<std::string> bytes_;  // per id
};

// The chunks of `text` (see above), in order; their concatenation is `text`.
std::vector<std::string> bpe_chunks(const std::string& text);

}  // namespace sg::text
