#pragma once
// The CMU pronouncing dictionary as Debian's festlex-cmu ships it for
// Festival (kCmudictPath, about 106,000 entries): a first line "MNCL", then
// one entry per line in Festival's lexicon format, a word, its part of
// speech (nil for most) and its syllables, each its phones and its stress:
//
//   ("lead" n (((l eh d) 1)))
//   ("lead" v (((l iy d) 1)))
//   ("aaberg" nil (((aa) 1) ((b er g) 0)))
//
// read as word -> phones: "lead" -> {l, eh, d} and {l, iy, d}; "aaberg" ->
// {aa, b, er, g}, or with stress {aa1, b, er0, g} (the syllable's stress,
// 0 or 1 in this version, on its vowel).
#include <string>
#include <vector>

#include "text/vocab.hpp"  // Tokens

namespace sg::text {

inline const char* const kCmudictPath = "/usr/share/festival/dicts/cmu/cmudict-0.4.out";

struct Pronunciation {
  std::string word;  // lower case
  Tokens phones;
};

// The entries of `text` in file order, words lower-cased, an entry whose
// word and phones repeat an earlier one's (another part of speech, or an
// upper-case spelling) left out, so a word's variants are its distinct
// pronunciations. stress: each vowel carries its syllable's stress digit.
// Throws sg::Error naming `name`, the line and what is wrong for a line
// that is not an entry (the "MNCL" header and empty lines are skipped), a
// word with a space, a quote, a byte outside printable ASCII or nothing in
// it, and an entry without phones.
std::vector<Pronunciation> parse_cmudict(const std::string& text, const std::string& name, bool stress = false);

// parse_cmudict of the file at `path`; throws naming the path when it
// cannot be read, and when it holds no entry.
std::vector<Pronunciation> read_cmudict(const std::string& path = kCmudictPath, bool stress = false);

// Whether a phone is a vowel (the ones that carry stress): aa ae ah ao aw ax
// ay eh er ey ih iy ow oy uh uw.
bool is_vowel(const std::string& phone);

}  // namespace sg::text
