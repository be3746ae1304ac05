#pragma once
// Positional encodings: what tells a self-attention layer where each token is.
#include <memory>
#include <string>
#include <vector>

#include "nn/basic.hpp"

namespace sg::nn {

// Where a model gets token positions from. The kinds are one table,
// positional_kinds() in positional.cpp: per kind its name, where it acts, a
// line for --help and, for an encoding added to the embeddings, how to build
// it. Parsing and printing names, the encoder (which module it builds),
// attention (which kinds it carries), the study's properties panel and the
// programs' flags all read that table:
//   none                  nothing (self-attention alone is permutation-equivariant)
//   sinusoidal, learned   an encoding added to the embeddings (AddedPositions below)
//   relative, rotary,     inside attention (MultiHeadAttention, nn/attention.hpp)
//   alibi
// A new kind is a value here, a row in the table, and its code: an
// AddedPositions subclass, or its branch in MultiHeadAttention::forward.
enum class Positional { none, sinusoidal, learned, relative, rotary, alibi };

// Where a kind of positions acts.
enum class PositionsAct {
  nowhere,     // no positions at all
  embeddings,  // a table added to the token embeddings (built by the row's `make`)
  attention,   // inside every attention layer (MultiHeadAttention's AttentionPositions)
};

class AddedPositions;

struct PositionalKind {
  Positional kind;
  const char* name;  // as flags, checkpoints and tables spell it
  PositionsAct acts;
  const char* help;  // one line, for a program's --help
  // acts == embeddings: builds the encoding for (num_hiddens, dropout,
  // max_len); null for every other kind.
  std::shared_ptr<AddedPositions> (*make)(int64_t num_hiddens, double dropout, int64_t max_len);
};

// Every kind, in the enum's order.
const std::vector<PositionalKind>& positional_kinds();
// The row of `p`; throws for a value that is not a kind.
const PositionalKind& positional_kind(Positional p);
// "none", "sinusoidal", "learned", "relative", "rotary", "alibi"
const char* positional_name(Positional p);
// Every kind's name, in the table's order.
std::vector<std::string> positional_names();
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
// ALiBi's bias for queries at positions offset .. offset + queries - 1 and
// keys at 0 .. keys - 1: (heads, queries, keys) in `dtype`, entry (h, i, j)
// = -m_h * |offset + i - j|, to add to the scaled scores.
Tensor alibi_bias(int64_t heads, int64_t queries, int64_t keys, DType dtype, int64_t offset = 0);

// An encoding added to the embeddings: forward adds rows [offset, offset + T)
// of the table P to X and applies dropout; `offset` lets a decoder continue
// past the tokens it has already emitted.
class AddedPositions : public Module {
 public:
  // X: (B, T, num_hiddens) -> same shape; keys: the dropout's (nn/basic.hpp)
  Tensor forward(const Tensor& X, int64_t offset = 0, DropoutKeys* keys = nullptr) const;
  // Replaces the table's values, in place (P keeps its handle, dtype and
  // version counter, bumped): table (1, max_len, num_hiddens) or (max_len,
  // num_hiddens), any floating dtype, rounded to P's. To match another
  // framework's table bit for bit (d2l's float32 sines), or to load one.
  // Throws naming both shapes, or the element, for a wrong shape or a value
  // that is not finite.
  void set_table(const Tensor& table);
  Tensor P;  // (1, max_len, num_hiddens): a buffer or a parameter, as the subclass registers it
  int64_t num_hiddens, max_len;
  std::shared_ptr<Dropout> dropout;

 protected:
  // `who`: the subclass's name, for errors.
  AddedPositions(const char* who, int64_t num_hiddens, int64_t max_len)
      : num_hiddens(num_hiddens), max_len(max_len), who_(who) {}

 private:
  const char* who_;
};

// The fixed sinusoidal encoding of Dive into Deep Learning:
//   P[i, 2j]   = sin(i / 10000^(2j / d))
//   P[i, 2j+1] = cos(i / 10000^(2j / d))
// for positions i < max_len, a buffer: fixed, not trained. num_hiddens must
// be even (sin and cos come in pairs).
class PositionalEncoding : public AddedPositions {
 public:
  PositionalEncoding(int64_t num_hiddens, double dropout, int64_t max_len = 1000);
};

// A learned encoding: a trained (1, max_len, num_hiddens) parameter P added to X,
// initialised N(0, 0.02^2). It knows nothing about positions it never saw in training.
class LearnedPositionalEncoding : public AddedPositions {
 public:
  LearnedPositionalEncoding(int64_t num_hiddens, double dropout, int64_t max_len = 1000);
};

}  // namespace sg::nn
