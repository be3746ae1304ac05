#pragma once
// The encoder configurations of the training-step benchmarks, and their FLOPs
// per step: one table for bench/train_step.cpp and its libtorch peer
// (bench/libtorch/train_step.cpp), so that both time the same shapes and
// count the same work. bench/torch_train_step.py holds the same table in
// Python. Plain C++17: libtorch's headers are compiled as C++17.
//
// FLOPs per step (multiply-adds count 2), with N = batch * seq tokens,
// H hidden, F ffn, V vocabulary, L blocks, T seq:
//   forward  = 2 N (L (4 H^2 + 2 H F) + H V)      the linear layers
//            + 2 * 2 N T H L                        Q K^T and weights x V
//   step     = 3 * forward                          backward is twice forward
// Elementwise work (softmax, layer norm, Adam) is not counted.
#include <cstdint>

namespace bench {

struct Config {
  const char* name;
  int64_t vocab, batch, seq, hidden, heads, ffn, blocks;
};

inline constexpr Config kConfigs[] = {
    {"tiny", 16, 64, 16, 64, 4, 128, 2},
    {"medium", 64, 32, 64, 128, 4, 256, 2},
    {"large", 256, 16, 128, 256, 8, 1024, 4},
};

inline double flops_per_step(const Config& c) {
  const double n = static_cast<double>(c.batch * c.seq), h = static_cast<double>(c.hidden);
  const double linear = 2 * n * (c.blocks * (4 * h * h + 2 * h * c.ffn) + h * c.vocab);
  const double attention = 2.0 * 2.0 * n * c.seq * h * c.blocks;
  return 3 * (linear + attention);
}

}  // namespace bench
