#pragma once
// Checkpoints in the safetensors format, so weights move to and from PyTorch
// and NumPy (https://github.com/huggingface/safetensors). A file is:
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
// Saving writes "<path>.tmp-<pid>", flushes it to disk, then renames it over
// path: a crash or an error leaves either the old file or the new one, never
// a half-written file; on error the temporary is removed.
//
// In Python (tests/fixtures/check_cpp_checkpoint.py does this in full):
//   n = struct.unpack("<Q", f.read(8))[0]; header = json.loads(f.read(n))
//   data = f.read(); e = header["w"]
//   w = np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]], "<f4").reshape(e["shape"])
// or safetensors.torch.load_file(path) where the package is installed.
#include <map>
#include <string>

#include "core/random.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"

namespace sg::nn {

using Metadata = std::map<std::string, std::string>;

struct SafetensorsFile {
  StateDict tensors;
  Metadata metadata;
};

// Names must be non-empty, unique, and not "__metadata__".
void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});
void save_safetensors(const std::string& path, const StateDict& tensors, const Metadata& metadata = {});
SafetensorsFile load_safetensors(const std::string& path);
// The same checks and result from a whole file's bytes in memory; `name`
// stands for the file in error messages ("parse_safetensors: '<name>': ...").
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& name);

// A training checkpoint in one safetensors file:
//   the model's state_dict() under its own names ("encoder.0.weight"),
//   the optimizer's state_dict() under "optimizer.<name>" ("optimizer.exp_avg.3"),
//   metadata: the caller's entries, plus "smallgrad.optimizer" (the
//   optimizer's name) and "smallgrad.generator" (the generator's state, four
//   decimal 64-bit words) when those are given.
// Keys starting with "smallgrad." are reserved in the caller's metadata, and
// the model's names must not start with "optimizer.".
void save_checkpoint(const std::string& path, const Module& model, const optim::Optimizer* optimizer = nullptr,
                     const Metadata& metadata = {}, const Generator* generator = nullptr);

// Loads what save_checkpoint wrote into model, and into optimizer and
// generator when given (their state must then be in the file; without them
// it is ignored, to load weights alone). Everything is checked before
// anything changes: on any mismatch (a missing or extra tensor, a shape or
// dtype, another optimizer type, a weight holding a NaN or an infinity) it
// throws naming the file, the tensor and both shapes (or the element), and
// model, optimizer and generator stay as they were.
// Returns the file's metadata.
Metadata load_checkpoint(const std::string& path, Module& model, optim::Optimizer* optimizer = nullptr,
                         Generator* generator = nullptr);

}  // namespace sg::nn
