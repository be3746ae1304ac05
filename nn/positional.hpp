#pragma once
// Positional encodings: what tells a self-attention layer where each token is.
#include <string>
#include <vector>

#include "nn/basic.hpp"

namespace sg::nn {

// Where a model gets token positions from, the one list of kinds for every
// layer that takes positions:
//   none                  nothing (self-attention alone is permutation-equivariant)
//   sinusoidal, learned   an absolute encoding added to the embeddings
//                         (PositionalEncoding, LearnedPositionalEncoding below)
//   relative, rotary,     inside attention (MultiHeadAttention, nn/attention.hpp)
//   alibi
// A new kind is a value here, its name in positional.cpp, and its code in the
// file that implements it.
enum class Positional { none, sinusoidal, learned, relative, rotary, alibi };
// "none", "sinusoidal", "learned", "relative", "rotary", "alibi"
const char* positional_name(Positional p);
// The kind named `name`; throws naming every kind when there is none.
Positional parse_positional(const std::string& name);
// True for the kinds attention carries itself (relative, rotary, alibi),
// false for none and the encodings added to the embeddings.
bool in_attention(Positional p);

// ALiBi's slopes (Press et al., 2022, "Train Short, Test Long"): head h of
// num_heads (h = 1 .. num_heads) adds -m_h * |i - j| to the score of query i
// and key j, with the geometric m_h = 2^(-8 h / num_heads): 1/2, 1/4, ...,
// 1/256 for 8 heads. (For a number of heads that is not a power of two the
// paper's code interleaves two such sequences; here the one formula serves
// every count.) Fixed, not trained. Returns m_1 .. m_num_heads.
std::vector<double> alibi_slopes(int64_t num_heads);

// The fixed sinusoidal encoding of Dive into Deep Learning:
//   P[i, 2j]   = sin(i / 10000^(2j / d))
//   P[i, 2j+1] = cos(i / 10000^(2j / d))
// for positions i < max_len. forward adds rows [offset, offset + T) of P to
// X and applies dropout; `offset` lets a decoder continue past the tokens it
// has already emitted. num_hiddens must be even (sin and cos come in pairs).
class PositionalEncoding : public Module {
 public:
  PositionalEncoding(int64_t num_hiddens, double dropout, int64_t max_len = 1000);
  // X: (B, T, num_hiddens) -> same shape; keys: the dropout's (nn/basic.hpp)
  Tensor forward(const Tensor& X, int64_t offset = 0, DropoutKeys* keys = nullptr) const;
  Tensor P;  // (1, max_len, num_hiddens), a buffer: fixed, not trained
  int64_t num_hiddens, max_len;
  std::shared_ptr<Dropout> dropout;
};

// A learned encoding: a trained (1, max_len, num_hiddens) parameter added to X,
// initialised N(0, 0.02^2). It knows nothing about positions it never saw in training.
class LearnedPositionalEncoding : public Module {
 public:
  LearnedPositionalEncoding(int64_t num_hiddens, double dropout, int64_t max_len = 1000);
  Tensor forward(const Tensor& X, int64_t offset = 0, DropoutKeys* keys = nullptr) const;
  Tensor P;  // (1, max_len, num_hiddens), a parameter
  int64_t num_hiddens, max_len;
  std::shared_ptr<Dropout> dropout;
};

}  // namespace sg::nn
