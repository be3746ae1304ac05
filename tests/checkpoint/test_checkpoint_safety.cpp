// Checkpoints lose nothing (checkpoint/checkpoint.hpp), beyond what
// test_checkpoint.cpp covers:
//   * a save that fails part-way (a full disk, simulated with RLIMIT_FSIZE in
//     a forked child; a process killed mid-write; a temporary that cannot be
//     created) leaves the previous checkpoint byte-identical and loadable;
//   * a checkpoint truncated at every length, with any header byte
//     corrupted, with plausible but wrong header values, or that belongs to
//     another model is refused with a message naming the file, and model,
//     optimizer and generator stay exactly as they were.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/dropout.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/unary.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "nn/basic.hpp"
#include "checkpoint/checkpoint.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "optim/optim.hpp"
#include "nn/transformer.hpp"
#include "test_util.hpp"

using namespace sg;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
using test_util::TempDir;
using test_util::read_bytes;
using test_util::write_bytes;

namespace {

// Linear then LayerNorm: parameters "fc.weight", "fc.bias", "norm.weight", "norm.bias".
struct Small : nn::Module {
  std::shared_ptr<nn::Linear> fc;
  std::shared_ptr<nn::LayerNorm> norm;
  explicit Small(int64_t width = 4) {
    fc = register_module("fc", std::make_shared<nn::Linear>(3, width));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(width));
  }
  Tensor forward(const Tensor& x) const { return norm->forward(fc->forward(x)); }
};

// A few AdamW steps, so the optimizer has buffers and the generator has moved.
void train(Small& model, optim::Optimizer& opt, Generator& gen, int steps) {
  for (int s = 0; s < steps; ++s) {
    const Tensor x = randn({5, 3}, gen), y = randn({5, model.fc->out_features}, gen);
    opt.zero_grad();
    backward(mean(pow(dropout(model.forward(x), 0.2, true, gen) - y, 2)));
    opt.step();
  }
}

using Snapshot = std::map<std::string, std::vector<double>>;
Snapshot snapshot(const nn::StateDict& state) {
  Snapshot out;
  for (const auto& [name, t] : state) out[name] = t.to_vector<double>();
  return out;
}

// A model, its optimizer and generator, trained a little; `unchanged()`
// checks all three against their state when it was built.
struct Run {
  Small model;
  optim::AdamW opt;
  Generator gen;
  Snapshot model_before, opt_before;
  std::array<uint64_t, 4> gen_before;
  explicit Run(uint64_t seed) : opt(model.parameters(), {.lr = 0.01}), gen(seed) {
    train(model, opt, gen, 2);
    model_before = snapshot(model.state_dict());
    opt_before = snapshot(opt.state_dict());
    gen_before = gen.state();
  }
  bool unchanged() const {
    return snapshot(model.state_dict()) == model_before && snapshot(opt.state_dict()) == opt_before &&
           gen.state() == gen_before;
  }
};

// Runs `child` in a forked process and returns its wait status; what it
// writes to the fd it is given comes back in `message`. The child ends with
// _exit, so it runs no destructors or exit handlers of this process.
int in_child(const std::function<int(int fd)>& child, std::string& message) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    int code = 99;
    try {
      code = child(fds[1]);
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) message.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

void send(int fd, const std::string& s) { (void)!::write(fd, s.data(), s.size()); }

// Limits the size of any file this process writes to `bytes`.
bool limit_file_size(rlim_t bytes) {
  const rlimit limit{bytes, bytes};
  return ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
}

}  // namespace

TEST_CASE("a save that runs out of space leaves the previous checkpoint byte-identical", "[checkpoint][safety]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  Run old_run(1);
  checkpoint::save(path, old_run.model, &old_run.opt, {{"epoch", "1"}}, &old_run.gen);
  const std::string before = read_bytes(path);

  Run new_run(2);
  // The new checkpoint's size (written elsewhere): the limits below cut it
  // in the header, in the data, and one byte before its end.
  checkpoint::save(dir.file("sizing.safetensors"), new_run.model, &new_run.opt, {{"epoch", "2"}}, &new_run.gen);
  const rlim_t full = read_bytes(dir.file("sizing.safetensors")).size();
  fs::remove(dir.file("sizing.safetensors"));

  for (const rlim_t limit : {rlim_t{5}, rlim_t{100}, full / 2, full - 1}) {
    INFO("file size limit " << limit << " of " << full << " bytes");
    std::string message;
    // In the child, SIGXFSZ is ignored, so write() fails with EFBIG (as on a
    // full disk it fails with ENOSPC) and save_checkpoint must clean up.
    const int status = in_child(
        [&](int fd) {
          ::signal(SIGXFSZ, SIG_IGN);
          if (!limit_file_size(limit)) return 3;
          try {
            checkpoint::save(path, new_run.model, &new_run.opt, {{"epoch", "2"}}, &new_run.gen);
          } catch (const Error& e) {
            send(fd, e.what());
            return 0;
          }
          return 2;  // the save claimed success
        },
        message);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    CHECK_THAT(message, Contains("save_safetensors: writing '" + path + ".tmp-") &&
                            Contains("(for '" + path + "') failed: File too large"));
    CHECK(read_bytes(path) == before);
    CHECK(dir.names() == std::vector<std::string>{"model.safetensors"});  // the temporary is gone
  }

  // The old checkpoint still loads completely.
  Run loaded(3);
  CHECK(checkpoint::load(path, loaded.model, &loaded.opt, &loaded.gen).at("epoch") == "1");
  CHECK(snapshot(loaded.model.state_dict()) == old_run.model_before);
  CHECK(snapshot(loaded.opt.state_dict()) == old_run.opt_before);
  CHECK(loaded.gen.state() == old_run.gen_before);

  // With the limit lifted, the same save goes through.
  checkpoint::save(path, new_run.model, &new_run.opt, {{"epoch", "2"}}, &new_run.gen);
  CHECK(read_bytes(path).size() == full);
}

TEST_CASE("a process killed in the middle of a save leaves the previous checkpoint in place",
          "[checkpoint][safety]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  Run old_run(1), new_run(2);
  checkpoint::save(path, old_run.model, &old_run.opt, {}, &old_run.gen);
  const std::string before = read_bytes(path);

  // SIGXFSZ left at its default action kills the child inside write(): a
  // crash with half a file written, and no chance to clean up.
  std::string message;
  const int status = in_child(
      [&](int) {
        const rlimit no_core{0, 0};
        ::setrlimit(RLIMIT_CORE, &no_core);
        ::signal(SIGXFSZ, SIG_DFL);
        if (!limit_file_size(before.size() / 2)) return 3;
        checkpoint::save(path, new_run.model, &new_run.opt, {}, &new_run.gen);
        return 2;
      },
      message);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGXFSZ);

  CHECK(read_bytes(path) == before);
  // What the crash left behind is the temporary, never the target.
  const std::vector<std::string> names = dir.names();
  REQUIRE(names.size() == 2);
  CHECK(names[0] == "model.safetensors");
  CHECK(names[1].rfind("model.safetensors.tmp-", 0) == 0);
  CHECK(read_bytes(dir.file(names[1])).size() == before.size() / 2);
  Run loaded(3);
  REQUIRE_NOTHROW(checkpoint::load(path, loaded.model, &loaded.opt, &loaded.gen));
  CHECK(snapshot(loaded.model.state_dict()) == old_run.model_before);
}

TEST_CASE("a save whose temporary cannot be created leaves the previous checkpoint byte-identical",
          "[checkpoint][safety]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  Run run(1);
  checkpoint::save(path, run.model, &run.opt, {}, &run.gen);
  const std::string before = read_bytes(path);

  // Names a crashed save could have left (directories, so that nothing can
  // be written into them) are skipped: the temporary's name is unique per
  // save (process id and a counter) and created with O_EXCL.
  for (int k = 0; k < 4; ++k) fs::create_directories(path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(k));
  train(run.model, run.opt, run.gen, 1);
  checkpoint::save(path, run.model, &run.opt, {}, &run.gen);
  CHECK(read_bytes(path) != before);
  for (int k = 0; k < 4; ++k) CHECK(fs::is_directory(path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(k)));
  const std::string after = read_bytes(path);

  // The parent of the target is a regular file: the message names the path.
  const std::string under_file = path + "/model.safetensors";
  REQUIRE_THROWS_WITH(checkpoint::save(under_file, run.model),
                      Contains("cannot create '" + under_file + ".tmp-") && Contains("Not a directory"));
  CHECK(read_bytes(path) == after);
}

TEST_CASE("a checkpoint truncated at any length is refused and changes nothing", "[checkpoint][safety]") {
  TempDir dir;
  const std::string saved_path = dir.file("full.safetensors"), path = dir.file("cut.safetensors");
  Run saved(1);
  checkpoint::save(saved_path, saved.model, &saved.opt, {{"epoch", "1"}}, &saved.gen);
  const std::string bytes = read_bytes(saved_path);
  REQUIRE(bytes.size() > 500);

  Run run(2);
  int refused = 0;
  for (size_t length = 0; length < bytes.size(); ++length) {
    write_bytes(path, bytes.substr(0, length));
    std::string message;
    try {
      checkpoint::load(path, run.model, &run.opt, &run.gen);
    } catch (const Error& e) {
      message = e.what();
    }
    // One CHECK per failing length would flood the report; stop at the first.
    const bool ok = message.find("load_safetensors: '" + path + "'") == 0 &&
                    message.find("truncated") != std::string::npos && run.unchanged();
    if (!ok) {
      INFO("truncated to " << length << " of " << bytes.size() << " bytes: "
                           << (message.empty() ? "loaded without an error" : message));
      CHECK(ok);
      break;
    }
    ++refused;
  }
  CHECK(refused == static_cast<int>(bytes.size()));
  // The whole file loads, and then the state is the saved one.
  write_bytes(path, bytes);
  checkpoint::load(path, run.model, &run.opt, &run.gen);
  CHECK(snapshot(run.model.state_dict()) == saved.model_before);
}

TEST_CASE("a checkpoint with any header byte corrupted is refused and changes nothing", "[checkpoint][safety]") {
  TempDir dir;
  const std::string saved_path = dir.file("full.safetensors"), path = dir.file("bad.safetensors");
  Run saved(1);
  checkpoint::save(saved_path, saved.model, &saved.opt, {{"epoch", "1"}}, &saved.gen);
  const std::string bytes = read_bytes(saved_path);
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);

  // Corruptions that can never leave a valid file: any change to the 8-byte
  // header length (the JSON is then cut short or runs into the data, or the
  // data section no longer adds up), and a NUL byte anywhere in the JSON
  // (invalid outside a string, and a raw control character inside one).
  std::vector<std::pair<size_t, char>> corruptions;
  for (size_t i = 0; i < 8; ++i)
    for (const unsigned char x : {0x01, 0x80, 0xff}) corruptions.emplace_back(i, static_cast<char>(bytes[i] ^ x));
  for (size_t i = 8; i < 8 + header_size; ++i) corruptions.emplace_back(i, '\0');

  Run run(2);
  int refused = 0;
  for (const auto& [at, value] : corruptions) {
    std::string bad = bytes;
    bad[at] = value;
    write_bytes(path, bad);
    std::string message;
    try {
      checkpoint::load(path, run.model, &run.opt, &run.gen);
    } catch (const Error& e) {
      message = e.what();
    }
    const bool ok = message.find("load_safetensors: '" + path + "'") == 0 && run.unchanged();
    if (!ok) {
      INFO("byte " << at << " set to " << static_cast<int>(static_cast<unsigned char>(value)) << ": "
                   << (message.empty() ? "loaded without an error" : message));
      CHECK(ok);
      break;
    }
    ++refused;
  }
  CHECK(refused == static_cast<int>(corruptions.size()));
}

TEST_CASE("plausible but wrong header values are refused with a message naming what is wrong",
          "[checkpoint][safety]") {
  TempDir dir;
  const std::string path = dir.file("edited.safetensors");
  Run saved(1);
  checkpoint::save(path, saved.model, &saved.opt, {{"epoch", "1"}}, &saved.gen);
  const std::string checksummed = read_bytes(path);
  uint64_t header_size = 0;
  std::memcpy(&header_size, checksummed.data(), 8);
  // The checks behind the checksums, on the file as a writer without
  // checksums (PyTorch's) would leave it: the two checksum entries, last in
  // the metadata, blanked out with spaces (whitespace between JSON tokens).
  std::string bytes = checksummed;
  const size_t from = bytes.find(R"(,"checksum":"crc32c")"), to = bytes.find(R"(}"})", from);
  REQUIRE((from < 8 + header_size && to < 8 + header_size));
  bytes.replace(from, to + 2 - from, std::string(to + 2 - from, ' '));
  const std::string header = bytes.substr(8, header_size);
  write_bytes(path, bytes);
  REQUIRE_FALSE(checkpoint::load_safetensors(path).checksummed);

  // Each edit replaces one piece of the JSON by another of the same length,
  // so the file stays valid JSON with the same header length.
  struct Edit {
    std::string from, to;
    std::vector<std::string> expect;
  };
  const std::vector<Edit> edits = {
      {R"("fc.weight":{"dtype":"F32")", R"("fc.weight":{"dtype":"F16")", {"tensor 'fc.weight' has dtype 'F16'"}},
      {R"("fc.weight":{"dtype":"F32")", R"("fc.weight":{"dtype":"I64")", {"tensor 'fc.weight' of shape (4, 3)"}},
      {R"("shape":[4,3])", R"("shape":[4,4])", {"tensor 'fc.weight' of shape (4, 4)", "needs 64 bytes"}},
      {R"("shape":[4,3])", R"("shape":[3,4])", {"load_state_dict: 'fc.weight' has shape (3, 4)", "(4, 3)"}},
      {R"("fc.weight":)", R"("fc.weighs":)", {"load_state_dict: missing parameter 'fc.weight'"}},
      {R"("optimizer.exp_avg.0":)", R"("optimizer.exp_avg.9":)", {"AdamW.load_state_dict", "exp_avg.9"}},
      {R"("smallgrad.optimizer":"AdamW")", R"("smallgrad.optimizer":"AdamX")", {"holds AdamX optimizer state"}},
      {R"("smallgrad.generator":)", R"("smallgrad.generatoR":)", {"holds no generator state"}},
      // The generator's four words with the first space replaced.
      {"\"" + std::to_string(saved.gen_before[0]) + " ", "\"" + std::to_string(saved.gen_before[0]) + "x",
       {"metadata 'smallgrad.generator' is \"", "expected four decimal 64-bit words"}},
  };
  Run run(2);
  for (const Edit& e : edits) {
    INFO("edit " << e.from << " -> " << e.to);
    REQUIRE(e.from.size() == e.to.size());
    const size_t at = header.find(e.from);
    REQUIRE(at != std::string::npos);
    std::string bad = bytes;
    bad.replace(8 + at, e.from.size(), e.to);
    write_bytes(path, bad);
    // The message of the load's refusal ("" if it loaded).
    auto refusal = [&] {
      try {
        checkpoint::load(path, run.model, &run.opt, &run.gen);
      } catch (const Error& err) {
        return std::string(err.what());
      }
      return std::string();
    };
    std::string message = refusal();
    INFO("message: " << message);
    CHECK(message.find(path) != std::string::npos);
    for (const std::string& fragment : e.expect) CHECK(message.find(fragment) != std::string::npos);
    CHECK(run.unchanged());

    // With the checksums in place, the same edit is refused too: by the
    // format's checks, which come first, or by the checksums.
    std::string edited = checksummed;
    edited.replace(8 + checksummed.substr(8, header_size).find(e.from), e.from.size(), e.to);
    write_bytes(path, edited);
    message = refusal();
    INFO("with checksums: " << message);
    CHECK(message.find(path) != std::string::npos);
    CHECK(run.unchanged());
  }
}

TEST_CASE("a file that belongs to another model, or is no checkpoint, is refused and changes nothing",
          "[checkpoint][safety]") {
  TempDir dir;
  Run run(2);
  auto refused = [&](const std::string& path, const std::vector<std::string>& expect) {
    std::string message;
    try {
      checkpoint::load(path, run.model, &run.opt, &run.gen);
    } catch (const Error& e) {
      message = e.what();
    }
    INFO("message: " << message);
    CHECK(message.find(path) != std::string::npos);
    for (const std::string& fragment : expect) CHECK(message.find(fragment) != std::string::npos);
    CHECK(run.unchanged());
  };

  SECTION("a wider model of the same kind") {
    Small wide(6);
    optim::AdamW opt(wide.parameters(), {});
    Generator gen(4);
    checkpoint::save(dir.file("wide.safetensors"), wide, &opt, {}, &gen);
    refused(dir.file("wide.safetensors"), {"load_state_dict: 'fc.weight' has shape (6, 3) in the state, (4, 3)"});
    // Once trained, its optimizer state is shaped like its parameters, and is checked first.
    train(wide, opt, gen, 1);
    checkpoint::save(dir.file("wide.safetensors"), wide, &opt, {}, &gen);
    refused(dir.file("wide.safetensors"), {"AdamW.load_state_dict: 'exp_avg.0' has shape (6, 3)", "(4, 3)"});
  }
  SECTION("another architecture") {
    nn::TransformerEncoder other({.vocab_size = 5, .num_hiddens = 8, .ffn_num_hiddens = 8, .num_heads = 2,
                                  .num_blocks = 1, .dropout = 0});
    checkpoint::save(dir.file("encoder.safetensors"), other);
    refused(dir.file("encoder.safetensors"), {"holds no optimizer state"});
    std::string message;
    try {
      checkpoint::load(dir.file("encoder.safetensors"), run.model);
    } catch (const Error& e) {
      message = e.what();
    }
    CHECK_THAT(message, Contains("load_state_dict: missing parameter 'fc.weight' of shape (4, 3)"));
    CHECK(run.unchanged());
  }
  SECTION("a PyTorch fixture: valid safetensors, but no checkpoint of this model") {
    refused(std::string(SMALLGRAD_FIXTURES) + "/layer_norm.safetensors", {"holds no optimizer state"});
  }
  SECTION("a text file, an empty file, a directory, a missing file") {
    write_bytes(dir.file("notes.txt"), "these are not the weights you are looking for\n");
    refused(dir.file("notes.txt"), {"the header length", "runs past the end of the file"});
    write_bytes(dir.file("empty.safetensors"), "");
    refused(dir.file("empty.safetensors"), {"is 0 bytes, too short"});
    refused(dir.path.string(), {"is a directory"});
    refused(dir.file("missing.safetensors"), {"cannot open", "No such file or directory"});
  }
}

TEST_CASE("parse_safetensors reads from memory exactly what load_safetensors reads from a file",
          "[checkpoint][safety]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  Run run(1);
  checkpoint::save(path, run.model, &run.opt, {{"epoch", "1"}}, &run.gen);
  const std::string bytes = read_bytes(path);
  const checkpoint::SafetensorsFile from_file = checkpoint::load_safetensors(path);
  const checkpoint::SafetensorsFile from_memory = checkpoint::parse_safetensors(bytes, "in memory");
  CHECK(from_memory.metadata == from_file.metadata);
  REQUIRE(from_memory.tensors.size() == from_file.tensors.size());
  for (const auto& [name, t] : from_file.tensors) {
    INFO(name);
    REQUIRE(from_memory.tensors.count(name) == 1);
    const Tensor& m = from_memory.tensors.at(name);
    CHECK((m.dtype() == t.dtype() && m.shape() == t.shape() &&
           std::memcmp(m.raw_data(), t.raw_data(), t.nbytes()) == 0));
  }
  REQUIRE_THROWS_WITH(checkpoint::parse_safetensors(bytes.substr(0, bytes.size() - 1), "in memory"),
                      Contains("parse_safetensors: 'in memory': tensor '") && Contains("(is the file truncated?)"));
}

TEST_CASE("crc32c gives the published check values", "[checkpoint][checksum]") {
  // RFC 3720's check value and its test patterns (B.4): 32 zero bytes, 32 0xff bytes.
  CHECK(checkpoint::crc32c("123456789", 9) == 0xe3069283u);
  CHECK(checkpoint::crc32c(std::string(32, '\0').data(), 32) == 0x8a9136aau);
  CHECK(checkpoint::crc32c(std::string(32, '\xff').data(), 32) == 0x62a8ab43u);
  CHECK(checkpoint::crc32c("", 0) == 0u);
  // In pieces, continuing from the CRC so far, at every split point.
  const std::string text = "smallgrad checks every tensor it loads, byte for byte.";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    INFO("split at " << cut);
    CHECK(checkpoint::crc32c(text.data() + cut, text.size() - cut, checkpoint::crc32c(text.data(), cut)) ==
          checkpoint::crc32c(text.data(), text.size()));
  }
}

TEST_CASE("one flipped bit anywhere in a saved file is refused, naming the tensor and the file",
          "[checkpoint][safety][checksum]") {
  TempDir dir;
  const std::string saved_path = dir.file("saved.safetensors"), path = dir.file("flipped.safetensors");
  Run saved(1);
  checkpoint::save(saved_path, saved.model, &saved.opt, {{"epoch", "1"}, {"note", "the metadata is covered too"}},
                   &saved.gen);
  const std::string bytes = read_bytes(saved_path);
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  const checkpoint::SafetensorsFile intact = checkpoint::parse_safetensors(bytes, "intact");
  CHECK(intact.checksummed);
  CHECK(intact.metadata.count("checksum") == 0);  // the writer's metadata, without the checksums
  CHECK(intact.metadata.at("epoch") == "1");

  // Every bit of the file, header and data: each flip must be refused.
  int loaded = 0;
  for (size_t at = 0; at < bytes.size(); ++at)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = bytes;
      bad[at] = static_cast<char>(bad[at] ^ (1 << bit));
      try {
        checkpoint::parse_safetensors(bad, "flipped");
        if (++loaded <= 3) FAIL_CHECK("byte " << at << " bit " << bit << " flipped: loaded without an error");
      } catch (const Error&) {
      }
    }
  CHECK(loaded == 0);

  // A flip in a tensor's data names that tensor and the file, through
  // load_safetensors and checkpoint::load alike, and changes nothing.
  Run run(2);
  for (const auto& [name, t] : intact.tensors) {
    if (t.nbytes() == 0) continue;
    const std::string blob(static_cast<const char*>(t.raw_data()), t.nbytes());
    const size_t pos = bytes.find(blob, 8 + header_size);
    REQUIRE(pos != std::string::npos);
    if (bytes.find(blob, pos + 1) != std::string::npos) continue;  // the same bytes twice (step counts): not located
    std::string bad = bytes;
    bad[pos + t.nbytes() / 2] ^= 0x10;
    write_bytes(path, bad);
    INFO(name);
    REQUIRE_THROWS_WITH(checkpoint::load(path, run.model, &run.opt, &run.gen),
                        Contains("'" + path + "': tensor '" + name + "' fails its CRC-32C check") &&
                            Contains("the file is damaged"));
    CHECK(run.unchanged());
  }
}
