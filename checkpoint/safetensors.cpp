// safetensors files: writing (through a temporary file and a rename) and
// reading (from a file or from memory), with every check the format allows.
// The format is described in checkpoint/safetensors.hpp; training checkpoints on top
// of it are in checkpoint/checkpoint.cpp. This file needs only core/tensor (no BLIS,
// no OpenMP), so scripts/fuzz.sh can build it alone with the fuzzer.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "checkpoint/safetensors.hpp"

namespace sg::checkpoint {

// The data section holds raw little-endian bytes, which on this machine are
// the tensors' own bytes: no conversion is written, so say so loudly.
static_assert(std::endian::native == std::endian::little,
              "checkpoint/safetensors.cpp copies tensor bytes as they are; a big-endian port must swap them");

namespace {

using json = nlohmann::ordered_json;

const char* format_dtype(DType d) {
  switch (d) {
    case DType::float32: return "F32";
    case DType::float64: return "F64";
    case DType::int64: return "I64";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType& out) {
  if (s == "F32") out = float32;
  else if (s == "F64") out = float64;
  else if (s == "I64") out = int64;
  else return false;
  return true;
}

std::string sys_error() { return std::strerror(errno); }

// ---------- checksums ----------

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), eight bytes at a
// time through eight tables ("slicing by 8"): table[k][b] is the CRC of byte
// b followed by k zero bytes, so eight lookups advance the CRC a whole word.
struct Crc32cTables {
  uint32_t t[8][256];
  Crc32cTables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
      for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
};

// The checksum entries of a file's metadata (checkpoint/safetensors.hpp).
const std::string kChecksumKey = "checksum";
const std::string kChecksumsKey = "checksum.crc32c";
const char* kMetadataEntry = "__metadata__";

std::string hex8(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

bool parse_hex8(const std::string& s, uint32_t& out) {
  if (s.size() != 8) return false;
  out = 0;
  for (char c : s) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    out = (out << 4) | static_cast<uint32_t>(d);
  }
  return true;
}

// The CRC of the metadata a caller sees: every key and value but the
// checksum entries, in key order, each followed by a NUL byte.
uint32_t metadata_crc(const Metadata& metadata) {
  uint32_t crc = 0;
  for (const auto& [k, v] : metadata) {
    if (k == kChecksumKey || k == kChecksumsKey) continue;
    crc = crc32c(k.data(), k.size() + 1, crc);
    crc = crc32c(v.data(), v.size() + 1, crc);
  }
  return crc;
}

// ---------- writing ----------

// Writes all of [data, data + n) to fd; false (errno set) on failure.
bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// The bytes of a whole file: 8-byte length, padded header, data section.
// Returned as the header (length included) plus the tensors to write after it
// in order, so tensor data is never copied into a second buffer.
struct Layout {
  std::string head;                  // length + padded header
  std::vector<const Tensor*> order;  // tensors in data-section order
};

Layout plan_file(const std::string& path, const nn::NamedTensors& tensors, const Metadata& metadata) {
  const char* op = "save_safetensors";
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    if (name.empty()) fail(op, ": '", path, "': a tensor has an empty name");
    if (name == "__metadata__") fail(op, ": '", path, "': '__metadata__' is reserved for the metadata, not a tensor name");
    if (!seen.insert(name).second) fail(op, ": '", path, "': two tensors are named '", name, "'");
    if (!t.defined()) fail(op, ": '", path, "': tensor '", name, "' is undefined");
  }
  // 8-byte dtypes first, then 4-byte ones, each group in the caller's order:
  // with a header that is a multiple of 8 bytes long, every tensor then
  // starts at a multiple of its element size in the file.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dtype_size(tensors[a].second.dtype()) > dtype_size(tensors[b].second.dtype());
  });
  std::vector<std::pair<uint64_t, uint64_t>> offsets(tensors.size());
  uint64_t cursor = 0;
  Layout layout;
  for (size_t i : order) {
    offsets[i] = {cursor, cursor + tensors[i].second.nbytes()};
    cursor = offsets[i].second;
    layout.order.push_back(&tensors[i].second);
  }

  for (const auto& [k, v] : metadata)
    if (k == kChecksumKey || k.rfind(kChecksumKey + ".", 0) == 0)
      fail(op, ": '", path, "': metadata key '", k, "' is reserved for the file's checksums");
  // Every tensor's CRC-32C and the metadata's, under two keys: one bit
  // flipped in either key's name still leaves the other to say the file
  // carries checksums.
  json sums = json::object();
  for (const auto& [name, t] : tensors) sums[name] = hex8(crc32c(t.raw_data(), t.nbytes()));
  sums[kMetadataEntry] = hex8(metadata_crc(metadata));
  json meta = json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  meta[kChecksumKey] = "crc32c";
  json header = json::object();
  header["__metadata__"] = std::move(meta);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i].second;
    header[tensors[i].first] = {{"dtype", format_dtype(t.dtype())},
                                {"shape", t.shape()},
                                {"data_offsets", {offsets[i].first, offsets[i].second}}};
  }
  std::string text;
  try {
    header["__metadata__"][kChecksumsKey] = sums.dump();
    text = header.dump();
  } catch (const json::exception& e) {  // names and metadata must be valid UTF-8
    fail(op, ": '", path, "': a tensor name or metadata entry is not valid UTF-8 (", e.what(), ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();
  layout.head.resize(8);
  std::memcpy(layout.head.data(), &n, 8);
  layout.head += text;
  return layout;
}

// ---------- reading ----------

// Shape and data offsets of one tensor, as the header gives them.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

// A non-negative integer of a JSON header (shape entries, offsets).
bool as_uint(const json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  return false;
}

Entry parse_entry(const char* op, const std::string& file, const std::string& name, const json& v,
                  uint64_t data_size) {
  auto bad = [&](const auto&... why) { fail(op, ": '", file, "': tensor '", name, "' ", why...); };
  if (!v.is_object()) bad("is not an object of dtype, shape and data_offsets: ", v.dump());
  for (const auto& [key, value] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets") bad("has an unexpected field '", key, "'");
  if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    bad("needs the fields dtype, shape and data_offsets, has ", v.dump());

  Entry e;
  e.name = name;
  const json& dtype = v["dtype"];
  if (!dtype.is_string()) bad("has dtype ", dtype.dump(), ", not a string");
  if (!parse_dtype(dtype.get<std::string>(), e.dtype))
    bad("has dtype '", dtype.get<std::string>(), "'; smallgrad reads F32, F64 and I64");

  const json& shape = v["shape"];
  if (!shape.is_array()) bad("has shape ", shape.dump(), ", not a list");
  // numel * itemsize, refusing sizes that overflow 64 bits.
  uint64_t bytes = dtype_size(e.dtype);
  for (const json& d : shape) {
    uint64_t n = 0;
    if (!as_uint(d, n) || n > static_cast<uint64_t>(INT64_MAX))
      bad("has shape ", shape.dump(), ": sizes must be non-negative integers");
    e.shape.push_back(static_cast<int64_t>(n));
    if (n != 0 && bytes > UINT64_MAX / n) bad("has shape ", shape.dump(), ", too large");
    bytes *= n;
  }

  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !as_uint(off[0], e.begin) || !as_uint(off[1], e.end))
    bad("has data_offsets ", off.dump(), ", expected [begin, end] with non-negative integers");
  if (e.begin > e.end) bad("has data_offsets [", e.begin, ", ", e.end, "]: begin is after end");
  if (e.end > data_size)
    bad("has data_offsets [", e.begin, ", ", e.end, "] beyond the data section's ", data_size,
        " bytes (is the file truncated?)");
  if (e.end - e.begin != bytes)
    bad("of shape ", e.shape, " and dtype ", dtype.get<std::string>(), " needs ", bytes,
        " bytes, but its data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin);
  return e;
}

// Where a file's bytes come from: the file itself (load_safetensors) or a
// string in memory (parse_safetensors). read(offset, dst, n) copies bytes
// [offset, offset + n) into dst; the reader never asks past size.
struct Source {
  uint64_t size;
  std::function<bool(uint64_t offset, void* dst, uint64_t n)> read;
};

// Checks and reads a whole file; `op` and `path` name it in every error.
SafetensorsFile read_safetensors(const char* op, const std::string& path, const Source& source) {
  const uint64_t file_size = source.size;
  if (file_size < 8)
    fail(op, ": '", path, "' is ", file_size, " bytes, too short for the 8-byte header length (truncated?)");
  uint64_t header_size = 0;
  if (!source.read(0, &header_size, 8)) fail(op, ": '", path, "': reading the header length failed");
  if (header_size > file_size - 8)
    fail(op, ": '", path, "': the header length ", header_size, " runs past the end of the file (",
         file_size, " bytes; truncated, or not a safetensors file?)");
  std::string text(header_size, '\0');
  if (!source.read(8, text.data(), header_size)) fail(op, ": '", path, "': reading the header failed");
  // The JSON parser takes a NUL byte after a complete value for the end of
  // its input and ignores whatever follows: refuse NUL anywhere, as the
  // reference reader does, so no byte of the header goes unchecked.
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    fail(op, ": '", path, "': the header holds a NUL byte at file offset ", 8 + nul, " (not valid JSON)");
  const uint64_t data_start = 8 + header_size;
  const uint64_t data_size = file_size - data_start;

  // Parse, refusing repeated top-level names (the JSON parser would keep
  // the last one silently).
  std::set<std::string> keys;
  std::string repeated;
  json::parser_callback_t on_key = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && !keys.insert(parsed.get<std::string>()).second)
      repeated = parsed.get<std::string>();
    return true;
  };
  json header;
  try {
    header = json::parse(text, on_key);
  } catch (const json::exception& e) {
    fail(op, ": '", path, "': the header is not valid JSON: ", e.what());
  }
  if (!header.is_object()) fail(op, ": '", path, "': the header is ", header.type_name(), ", not a JSON object");
  if (!repeated.empty()) fail(op, ": '", path, "': the header names '", repeated, "' twice");

  SafetensorsFile out;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) fail(op, ": '", path, "': __metadata__ is ", value.dump(), ", not an object");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string())
          fail(op, ": '", path, "': metadata entry '", k, "' is ", v.dump(), "; metadata values are strings");
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(op, path, name, value, data_size));
  }

  // The tensors must tile the data section exactly: no overlaps, no gaps,
  // nothing after the last one (so the file holds nothing unaccounted for).
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
  uint64_t cursor = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : by_offset) {
    if (e->begin < cursor)
      fail(op, ": '", path, "': tensors '", previous->name, "' [", previous->begin, ", ", previous->end, ") and '",
           e->name, "' [", e->begin, ", ", e->end, ") overlap");
    if (e->begin > cursor)
      fail(op, ": '", path, "': bytes [", cursor, ", ", e->begin, ") of the data section belong to no tensor (before '",
           e->name, "')");
    cursor = e->end;
    previous = e;
  }
  if (cursor != data_size)
    fail(op, ": '", path, "': ", data_size - cursor, " trailing bytes after the last tensor's data (the data section is ",
         data_size, " bytes, the tensors cover ", cursor, ")");

  // The checksums, when the file carries them (a file from PyTorch or an
  // older smallgrad does not): all of them are parsed before any tensor is
  // read, and every tensor must have one.
  const bool has_key = out.metadata.count(kChecksumKey) > 0, has_sums = out.metadata.count(kChecksumsKey) > 0;
  std::map<std::string, uint32_t> sums;
  if (has_key || has_sums) {
    auto damaged = [&](const auto&... why) {
      fail(op, ": '", path, "': the checksums are damaged (", why..., "); the file cannot be trusted");
    };
    if (!has_key) damaged("metadata '", kChecksumsKey, "' without '", kChecksumKey, "'");
    if (!has_sums) damaged("metadata '", kChecksumKey, "' without '", kChecksumsKey, "'");
    if (out.metadata.at(kChecksumKey) != "crc32c")
      damaged("metadata '", kChecksumKey, "' is '", out.metadata.at(kChecksumKey), "', not 'crc32c'");
    json parsed;
    try {
      parsed = json::parse(out.metadata.at(kChecksumsKey));
    } catch (const json::exception&) {
      damaged("'", kChecksumsKey, "' is not JSON");
    }
    if (!parsed.is_object()) damaged("'", kChecksumsKey, "' is not a JSON object");
    for (const auto& [name, value] : parsed.items()) {
      uint32_t v = 0;
      if (!value.is_string() || !parse_hex8(value.get<std::string>(), v))
        damaged("the checksum of '", name, "' is ", value.dump(), ", not 8 hex digits");
      sums[name] = v;
    }
    if (!sums.count(kMetadataEntry)) damaged("no checksum of the metadata");
    for (const Entry& e : entries)
      if (!sums.count(e.name)) damaged("tensor '", e.name, "' has none");
    if (sums.size() != entries.size() + 1)
      for (const auto& [name, v] : sums)
        if (name != kMetadataEntry && !header.contains(name)) damaged("one is for '", name, "', which is not in the file");
    out.metadata.erase(kChecksumKey);
    out.metadata.erase(kChecksumsKey);
    if (const uint32_t got = metadata_crc(out.metadata); got != sums.at(kMetadataEntry))
      fail(op, ": '", path, "': the metadata fails its CRC-32C check (", hex8(got), ", recorded ",
           hex8(sums.at(kMetadataEntry)), "): the file is damaged");
    out.checksummed = true;
  }

  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, e.dtype);
    if (t.nbytes() > 0) {
      if (!source.read(data_start + e.begin, t.raw_data(), t.nbytes()))
        fail(op, ": '", path, "': reading tensor '", e.name, "' failed");
    }
    if (out.checksummed)
      if (const uint32_t got = crc32c(t.raw_data(), t.nbytes()); got != sums.at(e.name))
        fail(op, ": '", path, "': tensor '", e.name, "' fails its CRC-32C check (", hex8(got), ", recorded ",
             hex8(sums.at(e.name)), "): the file is damaged");
    out.tensors[e.name] = t;
  }
  return out;
}

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  static const Crc32cTables tables;
  const auto& t = tables.t;
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // little-endian (asserted above)
    w ^= crc;
    crc = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^ t[4][(w >> 24) & 0xff] ^
          t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
  }
  for (; n > 0; --n, ++p) crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xff];
  return ~crc;
}

void save_safetensors(const std::string& path, const nn::NamedTensors& tensors, const Metadata& metadata) {
  const char* op = "save_safetensors";
  const Layout layout = plan_file(path, tensors, metadata);
  // The temporary's name is unique to this process (its id) and to this
  // save (a process-wide counter), so saves from several threads, or
  // processes, to one path never share a temporary; O_EXCL skips a name a
  // crashed run left behind. The last rename wins.
  static std::atomic<uint64_t> saves{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(saves.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail(op, ": cannot create '", tmp, "' to write '", path, "': ", sys_error());
  // From here on a failure removes the temporary: the target is never touched.
  auto abandon = [&](const char* step) {
    const std::string why = sys_error();
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(op, ": ", step, " '", tmp, "' (for '", path, "') failed: ", why);
  };
  if (!write_all(fd, layout.head.data(), layout.head.size())) abandon("writing");
  for (const Tensor* t : layout.order)
    if (t->nbytes() > 0 && !write_all(fd, t->raw_data(), t->nbytes())) abandon("writing");
  if (::fsync(fd) != 0) abandon("flushing");
  if (::close(fd) != 0) {
    const std::string why = sys_error();
    ::unlink(tmp.c_str());
    fail(op, ": closing '", tmp, "' (for '", path, "') failed: ", why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = sys_error();
    ::unlink(tmp.c_str());
    fail(op, ": cannot rename '", tmp, "' over '", path, "': ", why);
  }
  // Make the rename itself durable. Best effort: the file is complete and in
  // place either way, and some file systems refuse fsync on a directory.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void save_safetensors(const std::string& path, const nn::StateDict& tensors, const Metadata& metadata) {
  save_safetensors(path, nn::NamedTensors(tensors.begin(), tensors.end()), metadata);
}

SafetensorsFile load_safetensors(const std::string& path) {
  const char* op = "load_safetensors";
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(op, ": cannot open '", path, "': ", sys_error());
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(op, ": '", path, "' is a directory, not a safetensors file");
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0) fail(op, ": cannot read '", path, "'");
  // Tensors are read straight into their own storage, never through a copy of the file.
  const Source file{static_cast<uint64_t>(end), [&](uint64_t offset, void* dst, uint64_t n) {
                      in.seekg(static_cast<std::streamoff>(offset));
                      in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
                      return static_cast<bool>(in);
                    }};
  return read_safetensors(op, path, file);
}

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& name) {
  const Source memory{bytes.size(), [&](uint64_t offset, void* dst, uint64_t n) {
                        std::memcpy(dst, bytes.data() + offset, n);
                        return true;
                      }};
  return read_safetensors("parse_safetensors", name, memory);
}

}  // namespace sg::checkpoint
