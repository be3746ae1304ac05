#pragma once
// Tokenizers for language models (sg::text): text -> ids -> text.
//   CharTokenizer (text/char_tokenizer.hpp): every distinct character of a
//     corpus one token, as nanoGPT's shakespeare_char prepares its data;
//   BpeTokenizer (text/bpe.hpp): byte-level byte-pair encoding trained on a
//     corpus (GPT-2's scheme), lossless on any bytes.
// Either is saved as one JSON text (to_json), which a checkpoint carries in
// its metadata, and read back by tokenizer_from_json.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sg::text {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Throws naming the offset (and the character) of what it cannot encode.
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  // Throws for an id outside [0, vocab_size()).
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual const char* kind() const = 0;  // "char" or "bpe", as --tokenizer spells it
  // {"kind": "char", ...}: everything needed to rebuild it.
  virtual std::string to_json() const = 0;
};

// Rebuilds what to_json wrote; throws naming what is missing or wrong.
std::unique_ptr<Tokenizer> tokenizer_from_json(const std::string& json);

}  // namespace sg::text
