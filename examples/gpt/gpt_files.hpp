#pragma once
// What train_gpt and sample_gpt share (examples/gpt/, the library
// examples_gpt): the corpus, the settings a checkpoint carries, and
// loading a checkpoint back into a model and its tokenizer.
//
// A checkpoint (ckpt.safetensors, sg::checkpoint) holds the model under
// nanoGPT's names, the AdamW state, the data generator, and metadata:
//   gpt.settings    JSON: the model's options and the training settings
//   gpt.tokenizer   JSON: the tokenizer (text/tokenizer.hpp)
//   gpt.corpus      the corpus's size in bytes and its FNV-1a hash, hex
//   gpt.iter        iterations done
//   gpt.history     JSON: every evaluation so far (losses, times, samples)
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/safetensors.hpp"
#include "nn/gpt.hpp"
#include "text/tokenizer.hpp"

namespace examples::gpt {

// The default corpus: the King James Bible as `bible Gen1:1-Rev22:21`
// (Debian's bible-kjv) prints it.
inline const char* kKjvCommand = "bible Gen1:1-Rev22:21";

struct Corpus {
  std::string text;
  std::string source;  // the file, or the command
};
// path "" reads the KJV; else the file's bytes. Throws for a missing,
// unreadable or empty file (naming the flag --text).
Corpus read_corpus(const std::string& path);
std::string corpus_id(const std::string& text);  // "<bytes>:<fnv1a hex>"

// What a run is, in one struct: the model and how it trains.
struct Settings {
  sg::nn::GPTOptions model;
  std::string tokenizer = "char";  // char or bpe
  int64_t bpe_vocab = 512;
  int64_t batch_size = 12;
  int64_t max_iters = 2000;
  double learning_rate = 1e-3, min_lr = 1e-4;
  int64_t warmup_iters = 100, lr_decay_iters = 2000;
  double weight_decay = 0.1, beta1 = 0.9, beta2 = 0.99, grad_clip = 1.0;
  int64_t eval_interval = 250, eval_iters = 20;
  uint64_t seed = 1337;
};
std::string settings_json(const Settings& s);
Settings settings_from_json(const std::string& json);  // throws naming a missing or bad entry
// The first setting that differs, as "--flag <a> in the checkpoint, <b> now"; "" when none does.
std::string settings_difference(const Settings& checkpoint, const Settings& now);

// One evaluation: nanoGPT's estimate_loss, and a sample from the model then.
struct Evaluation {
  int64_t iter = 0;
  double train_loss = 0, val_loss = 0, seconds = 0;  // seconds: training time so far
  std::string sample;
};
std::string history_json(const std::vector<Evaluation>& history);
std::vector<Evaluation> history_from_json(const std::string& json);

// A checkpoint's model (eval mode) and tokenizer, for sampling. Throws one
// line naming the file for a missing or damaged checkpoint.
struct Loaded {
  Settings settings;
  std::unique_ptr<sg::nn::GPT> model;
  std::unique_ptr<sg::text::Tokenizer> tokenizer;
  sg::checkpoint::Metadata metadata;
};
Loaded load_for_sampling(const std::string& path);

}  // namespace examples::gpt
