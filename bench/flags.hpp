#pragma once
// The benchmarks' flags: pairs "--name N" of whole numbers in [1, max].
// Shared by bench/gemm.cpp, bench/reduce.cpp and bench/decode_speed.cpp (a
// header, not a program: the bench/ glob builds only .cpp files).
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace bench {

// Sets each flag named in `flags` from argv; false on an unknown flag, a
// missing value, or a value that is not a whole number in [1, max].
inline bool whole_flags(int argc, char** argv, const std::vector<std::pair<const char*, int*>>& flags, long max) {
  for (int i = 1; i < argc; ++i) {
    int* target = nullptr;
    for (const auto& [name, value] : flags)
      if (!std::strcmp(argv[i], name)) target = value;
    if (!target || i + 1 >= argc) return false;
    char* end = nullptr;
    const char* text = argv[++i];
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < 1 || v > max) return false;
    *target = static_cast<int>(v);
  }
  return true;
}

}  // namespace bench
