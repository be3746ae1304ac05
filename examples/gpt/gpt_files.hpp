#pragma once
// What train_gpt and sample_gpt share (examples/gpt/, the library
// examples_gpt): the corpus, the settings a model file carries, and
// loading a model back with its tokenizer.
//
// A run's files in its --out (docs/gpt.md):
//   model.safetensors        the weights alone, under nanoGPT's names (any
//                            safetensors reader loads it; nanoGPT's GPT with
//                            strict=True), and metadata:
//     gpt.settings           JSON: the model's options and the training settings
//     gpt.tokenizer          JSON: the tokenizer (text/tokenizer.hpp)
//     gpt.corpus             the corpus's size in bytes and its FNV-1a hash, hex
//     gpt.iter               iterations done
//   train_state.safetensors  what --resume needs beside the weights: AdamW's
//                            state, the data generator (sg::checkpoint's
//                            training state), gpt.iter, gpt.corpus and
//     gpt.history            JSON: every evaluation so far (losses, times, samples)
// An older smallgrad wrote one ckpt.safetensors holding both (the AdamW
// state as "optimizer.*" tensors); sample_gpt and --resume still read it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/safetensors.hpp"
#include "core/random.hpp"
#include "nn/gpt.hpp"
#include "optim/optim.hpp"
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

inline const char* kModelFile = "model.safetensors";
inline const char* kStateFile = "train_state.safetensors";
inline const char* kOldCheckpoint = "ckpt.safetensors";  // an older smallgrad's single file

// The model file `load` names: a file as it is, or a folder's
// model.safetensors (its ckpt.safetensors when only an older smallgrad's is
// there). Throws naming `flag` when there is none.
std::string find_model(const std::string& load, const std::string& flag);

// Writes a run's model.safetensors and train_state.safetensors into dir:
// both are written in full under temporary names first, then renamed one
// right after the other, so a stop between evaluations never leaves them
// apart (a kill between the two renames does, and --resume then says so).
void save_run(const std::string& dir, const sg::nn::Module& model, const sg::checkpoint::Metadata& model_metadata,
              const sg::optim::Optimizer& optimizer, const sg::Generator& generator,
              const sg::checkpoint::Metadata& state_metadata);

}  // namespace examples::gpt
