// safetensors files and training checkpoints (checkpoint/checkpoint.hpp): round
// trips, hand-built files, every malformed-file error, failed saves that
// must leave the old file alone, a resumed run that must match the
// uninterrupted one bit for bit, and interop with PyTorch and NumPy
// (tests/fixtures/make_checkpoint_fixture.py and check_cpp_checkpoint.py).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/dropout.hpp"
#include "autograd/ops/matmul.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/unary.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "checkpoint/checkpoint.hpp"
#include "nn/module.hpp"
#include "optim/optim.hpp"
#include "test_util.hpp"

using namespace sg;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
using test_util::TempDir;
using test_util::read_bytes;
using test_util::write_bytes;

namespace {

// A safetensors file from a header text (used as is, unpadded) and data bytes.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}
template <class T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// Same dtype, shape and bytes (so NaN payloads and -0.0 count too).
bool identical(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// The interop tensors: the formulas of tests/fixtures/make_checkpoint_fixture.py
// (PyTorch) and check_cpp_checkpoint.py (NumPy), written again in C++.
nn::NamedTensors interop_tensors() {
  std::vector<float> weight(12), bias(4);
  std::vector<double> scale(4);
  for (int i = 0; i < 12; ++i) weight[i] = (static_cast<float>(i) - 5.5f) / 4.0f;
  for (int i = 0; i < 4; ++i) bias[i] = 1.0f + static_cast<float>(i) * 0x1p-23f;
  for (int i = 0; i < 4; ++i) scale[i] = 1.0 + i * 0x1p-40;
  return {{"model.layers.0.weight", from_vector(weight, {3, 4})},
          {"model.layers.0.bias", from_vector(bias, {4})},
          {"model.scale", from_vector(scale, {2, 2})},
          {"model.pi", scalar(std::numbers::pi, float64)},
          {"ids", from_vector(std::vector<int64_t>{-3, -2, -1, 0, 1, (int64_t{1} << 40) + 1}, {2, 3})},
          {"step", scalar(7, int64)},
          {"empty", zeros({0, 5})}};
}

// ---- a tiny model: names with dots come from the submodule ----
struct TinyLinear : nn::Module {
  Tensor weight, bias;
  TinyLinear(int64_t in, int64_t out, Generator& gen) {
    weight = register_parameter("weight", randn({out, in}, gen, float32, 0, 0.5));
    bias = register_parameter("bias", zeros({out}));
  }
};

struct TinyNet : nn::Module {
  std::shared_ptr<TinyLinear> fc;
  Tensor scale;
  TinyNet(int64_t in, int64_t out, uint64_t seed) {
    Generator gen(seed);
    fc = register_module("fc", std::make_shared<TinyLinear>(in, out, gen));
    scale = register_parameter("scale", ones({out}));
  }
  // x: (B, in) -> (B, out)
  Tensor forward(const Tensor& x) const { return (matmul(x, fc->weight, false, true) + fc->bias) * scale; }
};

// Training steps that use everything a resumed run must restore: the model,
// the optimizer's buffers and step counts, the schedule's step, clipping, and
// the generator (data and dropout masks).
void train(TinyNet& model, optim::Optimizer& opt, Generator& gen, int steps) {
  const optim::Schedule lr = optim::warmup_cosine_schedule(0.05, 3, 20, 0.005);
  for (int s = 0; s < steps; ++s) {
    const Tensor x = randn({8, 3}, gen), y = randn({8, 4}, gen);
    opt.zero_grad();
    const Tensor h = dropout(model.forward(x), 0.25, true, gen);
    backward(mean(pow(h - y, 2)));
    optim::clip_grad_norm(opt.params(), 0.5);
    opt.set_lr(lr(opt.step_count()));
    opt.step();
  }
}

std::map<std::string, std::vector<double>> snapshot(const nn::StateDict& state) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, t] : state) out[name] = t.to_vector<double>();
  return out;
}

}  // namespace

TEST_CASE("safetensors round trip keeps names, dtypes, shapes and every bit", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("all.safetensors");
  const double inf = std::numeric_limits<double>::infinity();
  const nn::NamedTensors tensors = {
      {"float32.matrix", from_vector(std::vector<float>{1.5f, -0.0f, 3.25e-39f, 1e30f, -7.0f, 0.1f}, {2, 3})},
      {"float64.vector", from_vector(std::vector<double>{-0.0, inf, -inf, 5e-324, 0.1}, {5})},
      {"int64.vector", from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1, 0,
                                                         std::numeric_limits<int64_t>::max()},
                                   {4})},
      {"scalar.f64", scalar(-2.5, float64)},
      {"scalar.i64", scalar(42, int64)},
      {"scalar.f32", scalar(0.1)},
      {"empty.f32", zeros({0, 3})},
      {"empty.i64", zeros({0}, int64)},
  };
  const checkpoint::Metadata metadata = {{"epoch", "3"}, {"note", "unicode \xc3\xa9 and \"quotes\""}};
  checkpoint::save_safetensors(path, tensors, metadata);

  const checkpoint::SafetensorsFile file = checkpoint::load_safetensors(path);
  CHECK(file.metadata == metadata);
  REQUIRE(file.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    INFO(name);
    REQUIRE(file.tensors.count(name) == 1);
    CHECK(identical(file.tensors.at(name), t));
  }
  // The header is padded so the data section starts at a multiple of 8.
  const std::string bytes = read_bytes(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
  CHECK((bytes[8 + n - 1] == '}' || bytes[8 + n - 1] == ' '));
  CHECK(dir.names() == std::vector<std::string>{"all.safetensors"});  // no temporary left

  // A StateDict saves the same way, and an empty file is valid.
  checkpoint::save_safetensors(path, nn::StateDict{{"a", ones({2})}});
  CHECK(identical(checkpoint::load_safetensors(path).tensors.at("a"), ones({2})));
  checkpoint::save_safetensors(path, nn::NamedTensors{});
  CHECK(checkpoint::load_safetensors(path).tensors.empty());
}

TEST_CASE("load_safetensors reads a hand-built file", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("hand.safetensors");
  // Unpadded header, tensors listed out of data order, metadata last.
  const std::string header =
      R"({"b.x":{"dtype":"F64","shape":[2],"data_offsets":[8,24]},)"
      R"("a":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("c":{"dtype":"F32","shape":[1,2],"data_offsets":[24,32]},"__metadata__":{"k":"v"}})";
  write_bytes(path, safetensors_bytes(header, bytes_of(std::vector<int64_t>{-9}) +
                                                  bytes_of(std::vector<double>{0.25, -1e300}) +
                                                  bytes_of(std::vector<float>{2.5f, -3.0f})));
  const checkpoint::SafetensorsFile f = checkpoint::load_safetensors(path);
  CHECK(f.metadata == checkpoint::Metadata{{"k", "v"}});
  CHECK(f.tensors.at("a").shape() == Shape{});
  CHECK(f.tensors.at("a").item<int64_t>() == -9);
  CHECK(f.tensors.at("b.x").dtype() == float64);
  CHECK(f.tensors.at("b.x").to_vector<double>() == std::vector<double>{0.25, -1e300});
  CHECK(f.tensors.at("c").shape() == Shape{1, 2});
  CHECK(f.tensors.at("c").to_vector<float>() == std::vector<float>{2.5f, -3.0f});
}

TEST_CASE("load_safetensors rejects malformed files, naming the file and the tensor", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  const std::string where = "load_safetensors: '" + path + "'";
  auto load_bytes = [&](const std::string& bytes) {
    write_bytes(path, bytes);
    return checkpoint::load_safetensors(path);
  };
  const std::string w = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  const std::string data24(24, '\0');
  REQUIRE_NOTHROW(load_bytes(safetensors_bytes(w, data24)));

  SECTION("missing or truncated") {
    REQUIRE_THROWS_WITH(checkpoint::load_safetensors(dir.file("nope.safetensors")),
                        "load_safetensors: cannot open '" + dir.file("nope.safetensors") +
                            "': No such file or directory");
    REQUIRE_THROWS_WITH(checkpoint::load_safetensors(dir.path.string()),
                        "load_safetensors: '" + dir.path.string() + "' is a directory, not a safetensors file");
    REQUIRE_THROWS_WITH(load_bytes(std::string("\x10\0\0\0\0", 5)),
                        where + " is 5 bytes, too short for the 8-byte header length (truncated?)");
    const std::string good = safetensors_bytes(w, data24);
    REQUIRE_THROWS_WITH(load_bytes(good.substr(0, 8 + w.size() - 3)),
                        where + ": the header length " + std::to_string(w.size()) +
                            " runs past the end of the file (" + std::to_string(8 + w.size() - 3) +
                            " bytes; truncated, or not a safetensors file?)");
    REQUIRE_THROWS_WITH(load_bytes(good.substr(0, good.size() - 4)),
                        where + ": tensor 'w' has data_offsets [0, 24] beyond the data section's 20 bytes "
                                "(is the file truncated?)");
  }
  SECTION("corrupted header") {
    std::string bad = safetensors_bytes(w, data24);
    bad[8 + 5] = '#';  // inside the first key
    REQUIRE_THROWS_WITH(load_bytes(bad), Contains(where + ": the header is not valid JSON: "));
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes("[1,2]   ", "")),
                        where + ": the header is array, not a JSON object");
  }
  SECTION("wrong dtype string") {
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes(
                            R"({"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}})", std::string(12, '\0'))),
                        where + ": tensor 'w' has dtype 'F16'; smallgrad reads F32, F64 and I64");
  }
  SECTION("shape and data size disagree") {
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes(
                            R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", std::string(20, '\0'))),
                        where + ": tensor 'w' of shape (2, 3) and dtype F32 needs 24 bytes, but its "
                                "data_offsets [0, 20] hold 20");
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes(
                            R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,24]}})", data24)),
                        where + ": tensor 'w' has shape [2,-3]: sizes must be non-negative integers");
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[6]}})", data24)),
                        Contains(where + ": tensor 'w' needs the fields dtype, shape and data_offsets"));
  }
  SECTION("overlapping, gaps and trailing bytes") {
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                                     std::string(12, '\0'))),
                        where + ": tensors 'a' [0, 8) and 'b' [4, 12) overlap");
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                                     R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                                     std::string(12, '\0'))),
                        where + ": bytes [4, 8) of the data section belong to no tensor (before 'b')");
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes(w, data24 + "junk")),
                        where + ": 4 trailing bytes after the last tensor's data (the data section is 28 bytes, "
                                "the tensors cover 24)");
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                                     R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                                     std::string(8, '\0'))),
                        where + ": the header names 'a' twice");
  }
  SECTION("metadata values are strings") {
    REQUIRE_THROWS_WITH(load_bytes(safetensors_bytes(R"({"__metadata__":{"epoch":3}})", "")),
                        where + ": metadata entry 'epoch' is 3; metadata values are strings");
  }
}

TEST_CASE("save_safetensors rejects bad names", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("x.safetensors");
  const std::string where = "save_safetensors: '" + path + "'";
  REQUIRE_THROWS_WITH(checkpoint::save_safetensors(path, nn::NamedTensors{{"a", ones({1})}, {"a", ones({2})}}),
                      where + ": two tensors are named 'a'");
  REQUIRE_THROWS_WITH(checkpoint::save_safetensors(path, nn::NamedTensors{{"", ones({1})}}),
                      where + ": a tensor has an empty name");
  REQUIRE_THROWS_WITH(checkpoint::save_safetensors(path, nn::NamedTensors{{"__metadata__", ones({1})}}),
                      where + ": '__metadata__' is reserved for the metadata, not a tensor name");
  REQUIRE_THROWS_WITH(checkpoint::save_safetensors(path, nn::NamedTensors{{"bad\xff", ones({1})}}),
                      Contains(where + ": a tensor name or metadata entry is not valid UTF-8"));
  CHECK(dir.names().empty());
}

TEST_CASE("a failed save leaves the previous checkpoint byte-identical", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  TinyNet model(3, 4, 1);
  checkpoint::save(path, model);
  const std::string before = read_bytes(path);
  REQUIRE(before.size() > 8);

  // Failing before anything is written: a duplicate name, a reserved metadata key.
  REQUIRE_THROWS(checkpoint::save_safetensors(path, nn::NamedTensors{{"a", ones({1})}, {"a", ones({1})}}));
  REQUIRE_THROWS_WITH(checkpoint::save(path, model, nullptr, {{"smallgrad.optimizer", "x"}}),
                      "save_checkpoint: '" + path +
                          "': metadata key 'smallgrad.optimizer' starts with 'smallgrad.', which is reserved");
  CHECK(read_bytes(path) == before);

  // The temporary file cannot be created: the parent is a regular file.
  // (Tests run as root, so a read-only directory would not stop a write.)
  write_bytes(dir.file("plain_file"), "x");
  const std::string under_file = dir.file("plain_file") + "/model.safetensors";
  REQUIRE_THROWS_WITH(checkpoint::save(under_file, model),
                      Contains("save_safetensors: cannot create '" + under_file + ".tmp-") &&
                          Contains("Not a directory"));

  // The rename fails: the target is a non-empty directory. The temporary is
  // written completely, then removed, and the directory is untouched.
  fs::create_directories(dir.path / "taken.safetensors");
  write_bytes(dir.file("taken.safetensors/inside"), "keep");
  REQUIRE_THROWS_WITH(checkpoint::save(dir.file("taken.safetensors"), model),
                      Contains("save_safetensors: cannot rename '" + dir.file("taken.safetensors") + ".tmp-"));
  CHECK(read_bytes(dir.file("taken.safetensors/inside")) == "keep");

  CHECK(read_bytes(path) == before);
  CHECK(dir.names() == std::vector<std::string>{"model.safetensors", "plain_file", "taken.safetensors"});
}

TEST_CASE("load_checkpoint on a mismatch names the tensor and leaves model and optimizer unchanged",
          "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  Generator gen(5);
  TinyNet saved(3, 4, 1);
  optim::Adam saved_opt(saved.parameters(), {.lr = 0.01});
  train(saved, saved_opt, gen, 2);
  checkpoint::save(path, saved, &saved_opt, {{"epoch", "1"}}, &gen);

  TinyNet model(3, 4, 2);
  optim::Adam opt(model.parameters(), {.lr = 0.01});
  Generator model_gen(9);
  train(model, opt, model_gen, 1);
  const auto model_before = snapshot(model.state_dict());
  const auto opt_before = snapshot(opt.state_dict());
  const auto gen_before = model_gen.state();
  auto unchanged = [&] {
    CHECK(snapshot(model.state_dict()) == model_before);
    CHECK(snapshot(opt.state_dict()) == opt_before);
    CHECK(model_gen.state() == gen_before);
  };
  const std::string where = "load_checkpoint: '" + path + "'";

  SECTION("a model of another shape") {
    TinyNet wide(3, 5, 3);
    const auto wide_before = snapshot(wide.state_dict());
    REQUIRE_THROWS_WITH(checkpoint::load(path, wide),
                        where + ": load_state_dict: 'scale' has shape (4) in the state, (5) in the model");
    CHECK(snapshot(wide.state_dict()) == wide_before);
  }
  SECTION("the model fits but the optimizer does not: neither changes") {
    // An optimizer over two of the three parameters (scale, fc.weight, fc.bias).
    optim::Adam two({model.fc->weight, model.fc->bias}, {.lr = 0.01});
    const auto two_before = snapshot(two.state_dict());
    REQUIRE_THROWS_WITH(checkpoint::load(path, model, &two),
                        where + ": Adam.load_state_dict: 'exp_avg.0' has shape (4) in the state, parameter 0 "
                                "has shape (4, 3)");
    CHECK(snapshot(two.state_dict()) == two_before);
    unchanged();
  }
  SECTION("another optimizer type") {
    optim::AdamW adamw(model.parameters(), {.lr = 0.01});
    REQUIRE_THROWS_WITH(checkpoint::load(path, model, &adamw),
                        where + " holds Adam optimizer state, not AdamW");
    unchanged();
  }
  SECTION("a truncated checkpoint") {
    const std::string bytes = read_bytes(path);
    write_bytes(path, bytes.substr(0, bytes.size() - 1));
    REQUIRE_THROWS_WITH(checkpoint::load(path, model, &opt, &model_gen),
                        Contains("load_safetensors: '" + path + "': tensor '") &&
                            Contains("(is the file truncated?)"));
    unchanged();
  }
  SECTION("no optimizer or generator state in the file") {
    checkpoint::save(path, saved);
    REQUIRE_THROWS_WITH(checkpoint::load(path, model, &opt),
                        where + " holds no optimizer state (no 'optimizer.*' tensors)");
    REQUIRE_THROWS_WITH(checkpoint::load(path, model, nullptr, &model_gen),
                        where + " holds no generator state (no metadata 'smallgrad.generator')");
    unchanged();
  }
  SECTION("weights alone load without the optimizer") {
    const checkpoint::Metadata meta = checkpoint::load(path, model);
    CHECK(meta.at("epoch") == "1");
    CHECK(meta.at("smallgrad.optimizer") == "Adam");
    CHECK(snapshot(model.state_dict()) == snapshot(saved.state_dict()));
    CHECK(snapshot(opt.state_dict()) == opt_before);
  }
}

TEST_CASE("resuming from a checkpoint continues exactly as the uninterrupted run", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("resume.safetensors");
  auto params_of = [](const TinyNet& m) {
    std::vector<std::vector<float>> out;
    for (const Tensor& p : m.parameters()) out.push_back(p.to_vector<float>());
    return out;
  };
  auto check = [&](auto make_opt) {
    // Uninterrupted: 4 steps, a checkpoint, 4 more.
    TinyNet model(3, 4, 1);
    auto opt = make_opt(model.parameters());
    Generator gen(42);
    train(model, opt, gen, 4);
    checkpoint::save(path, model, &opt, {{"epoch", "1"}}, &gen);
    train(model, opt, gen, 4);

    // Resumed: another initialisation, optimizer and generator, all overwritten by the checkpoint.
    TinyNet resumed(3, 4, 99);
    auto resumed_opt = make_opt(resumed.parameters());
    Generator resumed_gen(7);
    const checkpoint::Metadata meta = checkpoint::load(path, resumed, &resumed_opt, &resumed_gen);
    CHECK(meta.at("epoch") == "1");
    CHECK(resumed_opt.step_count() == 4);
    train(resumed, resumed_opt, resumed_gen, 4);

    CHECK(params_of(resumed) == params_of(model));  // bit for bit
    CHECK(resumed_gen.state() == gen.state());
    CHECK(resumed_opt.lr() == opt.lr());
  };
  check([](std::vector<Tensor> ps) { return optim::Adam(std::move(ps), {.lr = 0.05}); });
  check([](std::vector<Tensor> ps) { return optim::AdamW(std::move(ps), {.lr = 0.05, .weight_decay = 0.1}); });
  check([](std::vector<Tensor> ps) {
    return optim::SGD(std::move(ps), {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
  });
}

TEST_CASE("a checkpoint written from PyTorch loads with identical values", "[checkpoint]") {
  // tests/fixtures/make_checkpoint_fixture.py wrote this file with PyTorch.
  const checkpoint::SafetensorsFile f = checkpoint::load_safetensors(std::string(SMALLGRAD_FIXTURES) + "/torch_checkpoint.safetensors");
  CHECK(f.metadata.at("format") == "pt");
  const nn::NamedTensors want = interop_tensors();
  REQUIRE(f.tensors.size() == want.size());
  for (const auto& [name, t] : want) {
    INFO(name << ": got " << (f.tensors.count(name) ? to_string(f.tensors.at(name)) : "nothing") << ", expected "
              << t);
    REQUIRE(f.tensors.count(name) == 1);
    CHECK(identical(f.tensors.at(name), t));
  }
}

TEST_CASE("a checkpoint written here reads in Python with identical values", "[checkpoint]") {
  // Checked by hand with tests/fixtures/check_cpp_checkpoint.py (json and
  // NumPy only); see tests/README.md.
  nn::NamedTensors tensors = interop_tensors();
  std::vector<float> thirds32(5);
  std::vector<double> thirds64(5);
  for (int i = 0; i < 5; ++i) thirds32[i] = static_cast<float>(i) / 3.0f, thirds64[i] = i / 3.0;
  tensors.emplace_back("thirds.f32", from_vector(thirds32, {5}));
  tensors.emplace_back("thirds.f64", from_vector(thirds64, {5}));
  const std::string path = (fs::temp_directory_path() / "smallgrad_cpp_checkpoint.safetensors").string();
  checkpoint::save_safetensors(path, tensors, {{"producer", "smallgrad tests/checkpoint/test_checkpoint.cpp"}});

  const checkpoint::SafetensorsFile f = checkpoint::load_safetensors(path);
  for (const auto& [name, t] : tensors) {
    INFO(name);
    CHECK(identical(f.tensors.at(name), t));
  }
}

TEST_CASE("a file without checksums loads unchecked, one with half of them is refused", "[checkpoint][checksum]") {
  TempDir dir;
  // PyTorch's writer, through tests/fixtures/make_checkpoint_fixture.py: no checksums.
  const checkpoint::SafetensorsFile torch =
      checkpoint::load_safetensors(std::string(SMALLGRAD_FIXTURES) + "/torch_checkpoint.safetensors");
  CHECK_FALSE(torch.checksummed);
  CHECK(torch.metadata.at("format") == "pt");

  const std::string w = R"("w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::string one = std::string("\0\0\x80\x3f", 4);  // 1.0f
  auto file = [&](const std::string& meta) {
    return safetensors_bytes("{" + (meta.empty() ? "" : R"("__metadata__":{)" + meta + "},") + w + "}", one);
  };
  CHECK_FALSE(checkpoint::parse_safetensors(file(""), "plain").checksummed);
  CHECK_FALSE(checkpoint::parse_safetensors(file(R"("k":"v")"), "plain").checksummed);
  const std::string sums = R"("checksum.crc32c":"{\"w\":\")" +
                           [&] {
                             char h[9];
                             std::snprintf(h, sizeof h, "%08x", checkpoint::crc32c(one.data(), 4));
                             return std::string(h);
                           }() +
                           R"(\",\"__metadata__\":\"00000000\"}")";
  CHECK(checkpoint::parse_safetensors(file(R"("checksum":"crc32c",)" + sums), "both").checksummed);
  REQUIRE_THROWS_WITH(checkpoint::parse_safetensors(file(sums), "half"),
                      Contains("'half': the checksums are damaged (metadata 'checksum.crc32c' without 'checksum')"));
  REQUIRE_THROWS_WITH(checkpoint::parse_safetensors(file(R"("checksum":"crc32c")"), "half"),
                      Contains("the checksums are damaged (metadata 'checksum' without 'checksum.crc32c')"));
  REQUIRE_THROWS_WITH(checkpoint::save_safetensors(dir.file("reserved.safetensors"), nn::NamedTensors{}, {{"checksum", "x"}}),
                      Contains("metadata key 'checksum' is reserved for the file's checksums"));
  REQUIRE_THROWS_WITH(
      checkpoint::save_safetensors(dir.file("reserved.safetensors"), nn::NamedTensors{}, {{"checksum.sha", "x"}}),
      Contains("metadata key 'checksum.sha' is reserved"));
}
