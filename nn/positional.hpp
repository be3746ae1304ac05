#pragma once
// Positional encodings: what tells a self-attention layer where each token is.
#include "nn/basic.hpp"

namespace sg::nn {

// The fixed sinusoidal encoding of Dive into Deep Learning:
//   P[i, 2j]   = sin(i / 10000^(2j / d))
//   P[i, 2j+1] = cos(i / 10000^(2j / d))
// for positions i < max_len. forward adds rows [offset, offset + T) of P to
// X and applies dropout; `offset` lets a decoder continue past the tokens it
// has already emitted. num_hiddens must be even (sin and cos come in pairs).
class PositionalEncoding : public Module {
 public:
  PositionalEncoding(int64_t num_hiddens, double dropout, int64_t max_len = 1000);
  // X: (B, T, num_hiddens) -> same shape
  Tensor forward(const Tensor& X, int64_t offset = 0) const;
  Tensor P;  // (1, max_len, num_hiddens), a buffer: fixed, not trained
  int64_t num_hiddens, max_len;
  std::shared_ptr<Dropout> dropout;
};

// A learned encoding: a trained (1, max_len, num_hiddens) parameter added to X,
// initialised N(0, 0.02^2). It knows nothing about positions it never saw in training.
class LearnedPositionalEncoding : public Module {
 public:
  LearnedPositionalEncoding(int64_t num_hiddens, double dropout, int64_t max_len = 1000);
  Tensor forward(const Tensor& X, int64_t offset = 0) const;
  Tensor P;  // (1, max_len, num_hiddens), a parameter
  int64_t num_hiddens, max_len;
  std::shared_ptr<Dropout> dropout;
};

}  // namespace sg::nn
