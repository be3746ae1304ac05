#include "gpt/gpt_files.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "checkpoint/checkpoint.hpp"
#include "core/error.hpp"

namespace examples::gpt {

using nlohmann::ordered_json;

Corpus read_corpus(const std::string& path) {
  Corpus c;
  if (path.empty()) {
    c.source = kKjvCommand;
    FILE* pipe = ::popen((std::string(kKjvCommand) + " 2>/dev/null").c_str(), "r");
    if (pipe) {
      char buf[1 << 16];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) c.text.append(buf, n);
      const int status = ::pclose(pipe);
      if (status != 0) c.text.clear();
    }
    if (c.text.empty())
      sg::fail("the default corpus is the King James Bible as '", kKjvCommand,
               "' prints it, and that command gave nothing: install Debian's bible-kjv (apt-get install "
               "bible-kjv), or give a text with --text FILE");
    return c;
  }
  c.source = path;
  std::ifstream f(path, std::ios::binary);
  if (!f) sg::fail("--text '", path, "': cannot open it (no such file, or not readable)");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) sg::fail("--text '", path, "': cannot read it");
  c.text = ss.str();
  if (c.text.empty()) sg::fail("--text '", path, "': the file is empty");
  return c;
}

std::string corpus_id(const std::string& text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char b : text) h = (h ^ b) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::to_string(text.size()) + ":" + hex;
}

// Keys are the training program's flags, without the dashes, so a
// difference names the flag to fix.
std::string settings_json(const Settings& s) {
  ordered_json j;
  j["tokenizer"] = s.tokenizer;
  j["vocab"] = s.bpe_vocab;
  j["vocab-size"] = s.model.vocab_size;
  j["block-size"] = s.model.block_size;
  j["n-layer"] = s.model.n_layer;
  j["n-head"] = s.model.n_head;
  j["n-embd"] = s.model.n_embd;
  j["dropout"] = s.model.dropout;
  j["bias"] = s.model.bias;
  j["untied"] = !s.model.tie_weights;
  j["positional"] = sg::nn::positional_name(s.model.positional);
  j["batch-size"] = s.batch_size;
  j["max-iters"] = s.max_iters;
  j["lr"] = s.learning_rate;
  j["min-lr"] = s.min_lr;
  j["warmup-iters"] = s.warmup_iters;
  j["lr-decay-iters"] = s.lr_decay_iters;
  j["weight-decay"] = s.weight_decay;
  j["beta1"] = s.beta1;
  j["beta2"] = s.beta2;
  j["grad-clip"] = s.grad_clip;
  j["eval-interval"] = s.eval_interval;
  j["eval-iters"] = s.eval_iters;
  j["seed"] = s.seed;
  return j.dump();
}

Settings settings_from_json(const std::string& text) {
  Settings s;
  try {
    const ordered_json j = ordered_json::parse(text);
    s.tokenizer = j.at("tokenizer").get<std::string>();
    s.bpe_vocab = j.at("vocab").get<int64_t>();
    s.model.vocab_size = j.at("vocab-size").get<int64_t>();
    s.model.block_size = j.at("block-size").get<int64_t>();
    s.model.n_layer = j.at("n-layer").get<int64_t>();
    s.model.n_head = j.at("n-head").get<int64_t>();
    s.model.n_embd = j.at("n-embd").get<int64_t>();
    s.model.dropout = j.at("dropout").get<double>();
    s.model.bias = j.at("bias").get<bool>();
    s.model.tie_weights = !j.at("untied").get<bool>();
    s.model.positional = sg::nn::parse_positional(j.at("positional").get<std::string>());
    s.batch_size = j.at("batch-size").get<int64_t>();
    s.max_iters = j.at("max-iters").get<int64_t>();
    s.learning_rate = j.at("lr").get<double>();
    s.min_lr = j.at("min-lr").get<double>();
    s.warmup_iters = j.at("warmup-iters").get<int64_t>();
    s.lr_decay_iters = j.at("lr-decay-iters").get<int64_t>();
    s.weight_decay = j.at("weight-decay").get<double>();
    s.beta1 = j.at("beta1").get<double>();
    s.beta2 = j.at("beta2").get<double>();
    s.grad_clip = j.at("grad-clip").get<double>();
    s.eval_interval = j.at("eval-interval").get<int64_t>();
    s.eval_iters = j.at("eval-iters").get<int64_t>();
    s.seed = j.at("seed").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    sg::fail("the checkpoint's settings (gpt.settings) are damaged: ", e.what());
  }
  return s;
}

std::string settings_difference(const Settings& checkpoint, const Settings& now) {
  const ordered_json a = ordered_json::parse(settings_json(checkpoint)), b = ordered_json::parse(settings_json(now));
  for (const auto& [key, value] : a.items())
    if (b.at(key) != value) return "--" + key + " " + value.dump() + " in the checkpoint, " + b.at(key).dump() + " now";
  return "";
}

std::string history_json(const std::vector<Evaluation>& history) {
  ordered_json j = ordered_json::array();
  for (const Evaluation& e : history)
    j.push_back({{"iter", e.iter}, {"train_loss", e.train_loss}, {"val_loss", e.val_loss}, {"seconds", e.seconds},
                 {"sample", e.sample}});
  // A sample of BPE tokens may end inside a UTF-8 character: replaced, not refused.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<Evaluation> history_from_json(const std::string& text) {
  std::vector<Evaluation> out;
  try {
    for (const auto& e : ordered_json::parse(text))
      out.push_back({e.at("iter").get<int64_t>(), e.at("train_loss").get<double>(), e.at("val_loss").get<double>(),
                     e.at("seconds").get<double>(), e.at("sample").get<std::string>()});
  } catch (const nlohmann::json::exception& e) {
    sg::fail("the checkpoint's history (gpt.history) is damaged: ", e.what());
  }
  return out;
}

Loaded load_for_sampling(const std::string& path) {
  // The metadata first: it says which model to build.
  sg::checkpoint::SafetensorsFile file = sg::checkpoint::load_safetensors(path);
  Loaded l;
  for (const char* key : {"gpt.settings", "gpt.tokenizer"})
    if (!file.metadata.count(key))
      sg::fail("'", path, "' is not a train_gpt checkpoint: its metadata has no ", key);
  l.settings = settings_from_json(file.metadata.at("gpt.settings"));
  l.tokenizer = sg::text::tokenizer_from_json(file.metadata.at("gpt.tokenizer"));
  if (l.tokenizer->vocab_size() != l.settings.model.vocab_size)
    sg::fail("'", path, "': the tokenizer has ", l.tokenizer->vocab_size(), " tokens, the model ",
             l.settings.model.vocab_size);
  l.model = std::make_unique<sg::nn::GPT>(l.settings.model);
  l.metadata = sg::checkpoint::load(path, *l.model);
  l.model->eval();
  return l;
}

std::string find_model(const std::string& load, const std::string& flag) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(load)) {
    if (!fs::exists(load)) sg::fail(flag, " '", load, "': no such file or folder (run train_gpt first)");
    return load;
  }
  for (const char* name : {kModelFile, kOldCheckpoint})
    if (fs::exists(load + "/" + name)) return load + "/" + name;
  sg::fail(flag, " '", load, "': no model in this folder (no ", kModelFile, "; run train_gpt first)");
}

void save_run(const std::string& dir, const sg::nn::Module& model, const sg::checkpoint::Metadata& model_metadata,
              const sg::optim::Optimizer& optimizer, const sg::Generator& generator,
              const sg::checkpoint::Metadata& state_metadata) {
  const std::string suffix = ".staged-" + std::to_string(::getpid());
  struct Staged {
    std::string tmp, path;
    ~Staged() { std::remove(tmp.c_str()); }  // nothing once renamed
  };
  Staged state{dir + "/." + kStateFile + suffix, dir + "/" + kStateFile},
      weights{dir + "/." + kModelFile + suffix, dir + "/" + kModelFile};
  sg::checkpoint::save_training_state(state.tmp, optimizer, &generator, state_metadata);
  sg::checkpoint::save(weights.tmp, model, nullptr, model_metadata);
  for (const Staged* f : {&state, &weights})
    if (std::rename(f->tmp.c_str(), f->path.c_str()) != 0)
      sg::fail("cannot move '", f->tmp, "' to '", f->path, "': ", std::strerror(errno));
}

}  // namespace examples::gpt
