#pragma once
// The safetensors format (checkpoint/safetensors.cpp), so weights move to and
// from PyTorch and NumPy (https://github.com/huggingface/safetensors). A file is:
//
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   a JSON object, padded with spaces to a multiple of 8 bytes:
//               {"__metadata__": {"key": "value", ...},
//                "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//   the rest  the data section: each tensor's raw little-endian row-major
//             bytes at [begin, end) relative to the start of this section
//
// dtypes: F32 (float32), F64 (float64), I64 (int64). Tensors are written
// 8-byte types first, so every tensor is aligned to its element size in the
// file (as the reference writer does). Loading checks everything the format
// promises (header length, JSON, dtypes, shapes against data sizes, offsets
// that tile the data section exactly, no trailing bytes) before reading any
// tensor, and names the file and the tensor in every error.
//
// Checksums. Every file saved here carries, in its metadata, the CRC-32C
// (Castagnoli) of each tensor's data bytes and of the rest of the metadata:
//   "checksum":        "crc32c"
//   "checksum.crc32c": "{\"<name>\": \"<8 lowercase hex digits>\", ...,
//                        \"__metadata__\": \"<8 hex digits>\"}"
// where __metadata__'s CRC runs over every other metadata key and value in
// key order, each followed by a NUL byte. Loading verifies all of them and
// refuses a mismatch naming the tensor and the file, so a flipped bit
// anywhere in a file (data, names, metadata, either checksum entry) is
// refused rather than loaded. A file without either entry (from PyTorch,
// nanoGPT, an older smallgrad) loads unchecked; one with only one of them is
// refused as damaged. Any safetensors reader reads these files (the
// checksums are ordinary metadata), and the two entries are removed from
// SafetensorsFile::metadata, which holds what the writer gave.
//
// Saving writes "<path>.tmp-<pid>", flushes it to disk, then renames it over
// path: a crash or an error leaves either the old file or the new one, never
// a half-written file; on error the temporary is removed.
//
// In Python (tests/fixtures/check_cpp_checkpoint.py does this in full):
//   n = struct.unpack("<Q", f.read(8))[0]; header = json.loads(f.read(n))
//   data = f.read(); e = header["w"]
//   w = np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]], "<f4").reshape(e["shape"])
// or safetensors.torch.load_file(path) where the package is installed.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "nn/module.hpp"

namespace sg::checkpoint {

using Metadata = std::map<std::string, std::string>;

struct SafetensorsFile {
  nn::StateDict tensors;
  Metadata metadata;         // without the checksum entries
  bool checksummed = false;  // the file carried checksums, and every one matched
};

// CRC-32C of n bytes, continuing from `crc` (the CRC of what came before).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

// Names must be non-empty, unique, and not "__metadata__"; metadata keys
// must not be "checksum" or start with "checksum.".
void save_safetensors(const std::string& path, const nn::NamedTensors& tensors, const Metadata& metadata = {});
void save_safetensors(const std::string& path, const nn::StateDict& tensors, const Metadata& metadata = {});
SafetensorsFile load_safetensors(const std::string& path);
// The same checks and result from a whole file's bytes in memory; `name`
// stands for the file in error messages ("parse_safetensors: '<name>': ...").
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& name);

}  // namespace sg::checkpoint
