// Model files and training state (checkpoint/checkpoint.hpp), written and
// read by checkpoint/safetensors.cpp.
#include <algorithm>
#include <array>
#include <cmath>
#include <charconv>
#include <string>

#include "checkpoint/checkpoint.hpp"

namespace sg::checkpoint {

namespace {
const std::string kOptimizerPrefix = "optimizer.";
const std::string kOptimizerKey = "smallgrad.optimizer";
const std::string kGeneratorKey = "smallgrad.generator";

std::string encode_generator(const Generator& g) {
  std::string s;
  for (uint64_t word : g.state()) {
    if (!s.empty()) s += ' ';
    s += std::to_string(word);
  }
  return s;
}

std::array<uint64_t, 4> decode_generator(const std::string& path, const std::string& text) {
  auto bad = [&]() {
    fail("load_checkpoint: '", path, "': metadata '", kGeneratorKey, "' is \"", text,
         "\", expected four decimal 64-bit words, not all zero");
  };
  std::array<uint64_t, 4> state{};
  const char* p = text.data();
  const char* end = p + text.size();
  for (size_t i = 0; i < 4; ++i) {
    if (i > 0 && (p == end || *p++ != ' ')) bad();
    const auto [next, ec] = std::from_chars(p, end, state[i]);
    if (ec != std::errc() || next == p) bad();
    p = next;
  }
  if (p != end || state == std::array<uint64_t, 4>{}) bad();
  return state;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

void save(const std::string& path, const nn::Module& model, const optim::Optimizer* optimizer,
          const Metadata& metadata, const Generator* generator) {
  const char* op = "save_checkpoint";
  nn::NamedTensors tensors = model.named_state();  // a tied weight under each of its names
  for (const auto& [name, t] : tensors)
    if (starts_with(name, kOptimizerPrefix))
      fail(op, ": '", path, "': model parameter '", name, "' starts with '", kOptimizerPrefix,
           "', which is reserved for the optimizer's state");
  Metadata meta = metadata;
  for (const auto& [k, v] : metadata)
    if (starts_with(k, "smallgrad."))
      fail(op, ": '", path, "': metadata key '", k, "' starts with 'smallgrad.', which is reserved");
  if (optimizer) {
    for (const auto& [name, t] : optimizer->state_dict()) tensors.emplace_back(kOptimizerPrefix + name, t);
    meta[kOptimizerKey] = optimizer->name();
  }
  if (generator) meta[kGeneratorKey] = encode_generator(*generator);
  save_safetensors(path, tensors, meta);
}

void save_training_state(const std::string& path, const optim::Optimizer& optimizer, const Generator* generator,
                         const Metadata& metadata) {
  for (const auto& [k, v] : metadata)
    if (starts_with(k, "smallgrad."))
      fail("save_training_state: '", path, "': metadata key '", k, "' starts with 'smallgrad.', which is reserved");
  Metadata meta = metadata;
  meta[kOptimizerKey] = optimizer.name();
  if (generator) meta[kGeneratorKey] = encode_generator(*generator);
  save_safetensors(path, optimizer.state_dict(), meta);
}

Metadata load_training_state(const std::string& path, optim::Optimizer& optimizer, Generator* generator) {
  const char* op = "load_training_state";
  SafetensorsFile file = load_safetensors(path);
  auto saved = file.metadata.find(kOptimizerKey);
  if (saved == file.metadata.end())
    fail(op, ": '", path, "' holds no optimizer state (no metadata '", kOptimizerKey, "')");
  if (saved->second != optimizer.name())
    fail(op, ": '", path, "' holds ", saved->second, " optimizer state, not ", optimizer.name());
  try {
    optimizer.check_state_dict(file.tensors);
  } catch (const Error& e) {
    fail(op, ": '", path, "': ", e.what());
  }
  std::array<uint64_t, 4> generator_state{};
  if (generator) {
    auto it = file.metadata.find(kGeneratorKey);
    if (it == file.metadata.end())
      fail(op, ": '", path, "' holds no generator state (no metadata '", kGeneratorKey, "')");
    generator_state = decode_generator(path, it->second);
  }
  optimizer.load_state_dict(file.tensors);
  if (generator) generator->set_state(generator_state);
  return file.metadata;
}

Metadata load(const std::string& path, nn::Module& model, optim::Optimizer* optimizer, Generator* generator) {
  SafetensorsFile file = load_safetensors(path);
  nn::StateDict model_state, optimizer_state;
  for (auto& [name, t] : file.tensors) {
    if (starts_with(name, kOptimizerPrefix))
      optimizer_state[name.substr(kOptimizerPrefix.size())] = t;
    else
      model_state[name] = t;
  }
  // Check optimizer and generator state first: Module::load_state_dict
  // checks the model before copying anything, so once it returns, nothing
  // below can fail, and a mismatch anywhere leaves all three unchanged.
  auto rethrow = [&](const Error& e) -> void { fail("load_checkpoint: '", path, "': ", e.what()); };
  if (optimizer) {
    if (optimizer_state.empty())
      fail("load_checkpoint: '", path, "' holds no optimizer state (no '", kOptimizerPrefix, "*' tensors)");
    auto saved = file.metadata.find(kOptimizerKey);
    if (saved != file.metadata.end() && saved->second != optimizer->name())
      fail("load_checkpoint: '", path, "' holds ", saved->second, " optimizer state, not ", optimizer->name());
    try {
      optimizer->check_state_dict(optimizer_state);
    } catch (const Error& e) {
      rethrow(e);
    }
  }
  // A NaN or an infinity in a weight would load and then turn every output
  // into NaN (an accuracy of 0 that looks like a result): refuse it here.
  for (const auto& [name, t] : model_state) {
    if (!is_floating(t.dtype())) continue;
    const std::vector<double> v = t.to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        fail("load_checkpoint: '", path, "': tensor '", name, "' ", t.shape(), " holds ", v[i], " at element ", i,
             " (", std::count_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }),
             " of ", v.size(), " are not finite)");
  }
  std::array<uint64_t, 4> generator_state{};
  if (generator) {
    auto it = file.metadata.find(kGeneratorKey);
    if (it == file.metadata.end())
      fail("load_checkpoint: '", path, "' holds no generator state (no metadata '", kGeneratorKey, "')");
    generator_state = decode_generator(path, it->second);
  }
  try {
    model.load_state_dict(model_state);
  } catch (const Error& e) {
    rethrow(e);
  }
  if (optimizer) optimizer->load_state_dict(optimizer_state);
  if (generator) generator->set_state(generator_state);
  return file.metadata;
}

}  // namespace sg::checkpoint
