// libFuzzer target for the safetensors reader (checkpoint/safetensors.cpp): any
// bytes must either parse into tensors that account for every byte of the
// file, or be refused with sg::Error. Anything else (a crash, a sanitizer
// report, another exception, a hang) is a bug. Built and run by
// scripts/fuzz.sh with clang's -fsanitize=fuzzer,address,undefined.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "checkpoint/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  sg::checkpoint::SafetensorsFile file;
  try {
    file = sg::checkpoint::parse_safetensors(bytes, "fuzz-input");
  } catch (const sg::Error&) {
    return 0;  // refused with a message: what a bad file should get
  }
  // Accepted: what the reader promises must hold. The metadata is no
  // tensor, and the tensors account for every byte after the header, no
  // more, no less (reading each one touches all of its bytes, so ASan sees
  // a tensor that is bigger than its storage).
  uint64_t header_size = 0;
  std::memcpy(&header_size, data, 8);
  uint64_t tensor_bytes = 0;
  for (const auto& [name, t] : file.tensors) {
    if (name == "__metadata__") __builtin_trap();
    volatile unsigned char sum = 0;
    const auto* p = static_cast<const unsigned char*>(t.raw_data());
    for (size_t i = 0; i < t.nbytes(); ++i) sum = static_cast<unsigned char>(sum + p[i]);
    tensor_bytes += t.nbytes();
  }
  if (8 + header_size + tensor_bytes != size) __builtin_trap();
  return 0;
}
