#pragma once
// The edit (Levenshtein) distance between two token sequences: the fewest
// insertions, deletions and substitutions of one token that turn one into
// the other. Phone error rate and word error rate of a pronunciation model
// (study/pronunciation.hpp) are built on it.
#include <cstdint>

#include "text/vocab.hpp"  // Tokens

namespace sg::text {

// O(|a| |b|) time, O(|b|) memory. edit_distance(a, {}) = |a|.
int64_t edit_distance(const Tokens& a, const Tokens& b);

}  // namespace sg::text
