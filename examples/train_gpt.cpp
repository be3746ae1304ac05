// A GPT that reads a real book: a decoder-only language model (nn/gpt.hpp)
// trained on the King James Bible, character by character, then sampled.
// The defaults are nanoGPT's "baby GPT" (4 layers, 4 heads, width 128,
// context 64, batch 12, 2,000 iterations, AdamW 1e-3 with 100 warmup
// iterations and cosine decay to 1e-4, beta2 0.99, weight decay 0.1 on the
// matrices, gradient clipping at 1, dropout 0), so the two can be run side
// by side on the same text (docs/results.md, "A GPT on a real book").
//
//   train_gpt                               the KJV, characters, the defaults
//   train_gpt --text FILE                   any UTF-8 file
//   train_gpt --tokenizer bpe --vocab 512   byte-level BPE trained on the corpus
//   train_gpt --resume                      continue the run in out/gpt
//                                           (same flags), bit for bit
//   sample_gpt --prompt "And God said"      sample from the checkpoint
//
// Data as nanoGPT's shakespeare_char: the whole text encoded, the first 90%
// of its tokens train and the last 10% validate; each batch takes
// batch-size windows of block-size + 1 tokens at random offsets of a split.
// Evaluation as nanoGPT's estimate_loss: every eval-interval iterations (and
// at the end) the mean loss over eval-iters random batches of each split,
// and a checkpoint. Outputs in --out: model.safetensors (the weights alone
// under nanoGPT's names, with the settings and the tokenizer as metadata),
// train_state.safetensors (AdamW's state, the generator, the history: what
// --resume needs beside the weights), log.csv, samples.md and report.html.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "core/runtime.hpp"
#include "checkpoint/checkpoint.hpp"
#include "cli.hpp"
#include "decoding/sampling.hpp"
#include "gpt/gpt_files.hpp"
#include "gpt/gpt_report.hpp"
#include "optim/optim.hpp"
#include "parallel/data_parallel.hpp"
#include "text/bpe.hpp"
#include "text/char_tokenizer.hpp"

namespace {

using examples::UsageError;
using examples::gpt::Evaluation;
using examples::gpt::Settings;

// Random windows of a split: x the tokens at [i, i + T), y those at [i + 1, i + T + 1).
struct Batch {
  sg::Tensor x, y;  // (B, T) int64 each
};

Batch get_batch(const std::vector<int64_t>& data, int64_t batch, int64_t block, sg::Generator& gen) {
  std::vector<int64_t> x(static_cast<size_t>(batch * block)), y(x.size());
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t i = gen.randint(0, static_cast<int64_t>(data.size()) - block);
    for (int64_t t = 0; t < block; ++t) {
      x[static_cast<size_t>(b * block + t)] = data[static_cast<size_t>(i + t)];
      y[static_cast<size_t>(b * block + t)] = data[static_cast<size_t>(i + t + 1)];
    }
  }
  return {sg::from_vector(x, {batch, block}), sg::from_vector(y, {batch, block})};
}

// Mean loss over the whole batch: logits (B, T, V) against y (B, T).
sg::Tensor batch_loss(const sg::nn::GPT& model, const sg::Tensor& x, const sg::Tensor& y,
                      sg::nn::DropoutKeys* keys = nullptr) {
  return sg::cross_entropy(model.forward(x, keys), y);
}

// Every dropout of the model draws from `gen`: the one stream a checkpoint saves.
void share_generator(const sg::nn::GPT& model, const std::shared_ptr<sg::Generator>& gen) {
  const auto& t = *model.transformer;
  t.drop->generator = gen;
  for (const auto& block : t.h->blocks) {
    block->attn->attn_dropout->generator = gen;
    block->attn->resid_dropout->generator = gen;
    block->mlp->dropout->generator = gen;
  }
}

// A sample as sample_gpt's defaults draw it (temperature 0.8, top-k 200),
// from its own generator: sampling leaves the training stream alone.
// A stop signal ends it within a token.
std::string sample_text(sg::nn::GPT& model, const sg::text::Tokenizer& tok, const std::vector<int64_t>& prompt,
                        int64_t tokens, uint64_t seed) {
  sg::Generator gen(seed);
  const bool was_training = model.is_training();
  model.eval();
  const std::vector<int64_t> ids = sg::decoding::generate(
      model, prompt, {.max_new_tokens = tokens, .temperature = 0.8, .top_k = 200}, gen,
      [](int64_t) { examples::check_stop(); });
  model.train(was_training);
  return tok.decode(ids);
}

struct Run {
  Settings s;
  std::string text_path, out_dir = "out/gpt", prompt = "\n";
  bool resume = false;
  int64_t sample_tokens = 500;
  int64_t stop_at = 0;  // 0: at max_iters
  bool warmup_given = false;
};

int train(const Run& run) {
  Settings s = run.s;
  if (s.lr_decay_iters == 0) s.lr_decay_iters = s.max_iters;
  // The default warmup (nanoGPT's 100) shortens to fit a shorter run, so
  // --max-iters alone runs for any count; a --warmup-iters given must fit.
  if (!run.warmup_given) s.warmup_iters = std::min(s.warmup_iters, s.lr_decay_iters);
  if (s.warmup_iters > s.lr_decay_iters)
    throw UsageError("--warmup-iters " + std::to_string(s.warmup_iters) + " must not exceed --lr-decay-iters " +
                     std::to_string(s.lr_decay_iters));
  if (s.min_lr > s.learning_rate) throw UsageError("--min-lr must not exceed --lr");
  if (run.stop_at > 0 && (run.stop_at % s.eval_interval != 0 || run.stop_at >= s.max_iters))
    throw UsageError("--stop-at " + std::to_string(run.stop_at) + " must be a multiple of --eval-interval " +
                     std::to_string(s.eval_interval) + " below --max-iters " + std::to_string(s.max_iters) +
                     " (a checkpoint is written at every evaluation)");
  using examples::gpt::kModelFile;
  using examples::gpt::kOldCheckpoint;
  using examples::gpt::kStateFile;
  examples::Outputs out(run.out_dir, "--out");
  for (const char* f : {kModelFile, kStateFile, "log.csv", "samples.md", "report.html"}) out.expect(f);
  const std::string model_file = out.path(kModelFile), state_file = out.path(kStateFile),
                    old_file = out.path(kOldCheckpoint);
  if (!run.resume)
    for (const std::string& f : {model_file, state_file, old_file})
      if (std::filesystem::exists(f))
        throw UsageError("--out '" + run.out_dir + "' holds a checkpoint already (" +
                         std::filesystem::path(f).filename().string() +
                         "): add --resume to continue it, or choose another --out");

  const examples::gpt::Corpus corpus = examples::gpt::read_corpus(run.text_path);
  std::unique_ptr<sg::text::Tokenizer> tok;
  if (s.tokenizer == "char") {
    try {
      tok = std::make_unique<sg::text::CharTokenizer>(sg::text::CharTokenizer::train(corpus.text));
    } catch (const sg::Error& e) {
      sg::fail("--text '", corpus.source, "': ", e.what(), "; --tokenizer bpe reads any bytes");
    }
  } else {
    tok = std::make_unique<sg::text::BpeTokenizer>(sg::text::BpeTokenizer::train(corpus.text, s.bpe_vocab));
  }
  const std::vector<int64_t> ids = tok->encode(corpus.text);
  const auto n = static_cast<int64_t>(ids.size()), n_train = static_cast<int64_t>(static_cast<double>(n) * 0.9);
  const std::vector<int64_t> train_ids(ids.begin(), ids.begin() + n_train), val_ids(ids.begin() + n_train, ids.end());
  if (n - n_train <= s.model.block_size)
    sg::fail("--text '", corpus.source, "': ", n, " tokens, so the validation split (the last 10%) has ", n - n_train,
             "; it must be longer than the context, --block-size ", s.model.block_size);
  s.model.vocab_size = tok->vocab_size();
  const std::vector<int64_t> prompt = tok->encode(run.prompt);
  if (prompt.empty()) throw UsageError("--prompt is empty");

  sg::manual_seed(s.seed);
  sg::nn::GPT model(s.model);
  auto gen = std::make_shared<sg::Generator>(s.seed);  // batches, evaluation batches and dropout
  share_generator(model, gen);
  sg::optim::AdamW opt(model.parameters(), {.lr = s.learning_rate, .beta1 = s.beta1, .beta2 = s.beta2,
                                            .weight_decay = s.weight_decay, .decay_vectors = false});
  const auto schedule = sg::optim::warmup_cosine_schedule(s.learning_rate, s.warmup_iters, s.lr_decay_iters, s.min_lr);
  std::vector<Evaluation> history;
  int64_t start = 0;
  double trained_seconds = 0;
  if (run.resume) {
    // The new layout (model.safetensors + train_state.safetensors), or an
    // older smallgrad's single ckpt.safetensors.
    const bool old_layout = !std::filesystem::exists(model_file) && std::filesystem::exists(old_file);
    const std::string weights = old_layout ? old_file : model_file, state = old_layout ? old_file : state_file;
    for (const std::string& f : {weights, state})
      if (!std::filesystem::exists(f)) throw UsageError("--resume: there is no '" + f + "' to continue");
    const sg::checkpoint::Metadata m = sg::checkpoint::load_safetensors(weights).metadata;
    const sg::checkpoint::Metadata t = old_layout ? m : sg::checkpoint::load_safetensors(state).metadata;
    for (const char* key : {"gpt.settings", "gpt.tokenizer", "gpt.corpus", "gpt.iter"})
      if (!m.count(key)) sg::fail("'", weights, "' is not a train_gpt model: its metadata has no ", key);
    for (const char* key : {"gpt.corpus", "gpt.iter", "gpt.history"})
      if (!t.count(key)) sg::fail("'", state, "' is not a train_gpt training state: its metadata has no ", key);
    if (m.at("gpt.iter") != t.at("gpt.iter"))
      sg::fail("--resume: '", weights, "' is at iteration ", m.at("gpt.iter"), " but '", state, "' at ",
               t.at("gpt.iter"), " (a run killed while saving): sample from the model, or train again in another --out");
    const std::string diff =
        examples::gpt::settings_difference(examples::gpt::settings_from_json(m.at("gpt.settings")), s);
    if (!diff.empty()) throw UsageError("--resume: the checkpoint was trained with other settings: " + diff);
    if (m.at("gpt.corpus") != examples::gpt::corpus_id(corpus.text))
      sg::fail("--resume: the checkpoint was trained on another text (", m.at("gpt.corpus"),
               " bytes:hash, now ", examples::gpt::corpus_id(corpus.text), ")");
    if (m.at("gpt.tokenizer") != tok->to_json())
      sg::fail("--resume: the checkpoint's tokenizer differs from the one this text and these flags give");
    if (old_layout) {
      sg::checkpoint::load(old_file, model, &opt, gen.get());
    } else {
      sg::checkpoint::load(model_file, model);
      sg::checkpoint::load_training_state(state_file, opt, gen.get());
    }
    start = std::stoll(m.at("gpt.iter"));
    history = examples::gpt::history_from_json(t.at("gpt.history"));
    if (!history.empty()) trained_seconds = history.back().seconds;
    std::cout << "resuming '" << weights << "' at iteration " << start
              << (old_layout ? " (an older smallgrad's single file: its next save writes " + std::string(kModelFile) +
                                   " and " + kStateFile + " and removes it)"
                             : "")
              << std::endl;
  }
  std::cout << "corpus: " << corpus.source << ", " << corpus.text.size() << " bytes, " << n << " " << tok->kind()
            << " tokens (vocabulary " << tok->vocab_size() << "): " << n_train << " train, " << n - n_train
            << " validation" << std::endl;
  std::cout << "GPT: " << s.model.n_layer << " layers, " << s.model.n_head << " heads, width " << s.model.n_embd
            << ", context " << s.model.block_size << ", " << sg::nn::positional_name(s.model.positional)
            << " positions, " << model.parameter_count() << " parameters; batch " << s.batch_size << ", "
            << s.max_iters << " iterations, " << sg::num_threads() << " thread(s)" << std::endl;

  const int threads = static_cast<int>(std::min<int64_t>(sg::num_threads(), s.batch_size));
  std::unique_ptr<sg::parallel::DataParallel> dp;
  if (threads > 1) dp = std::make_unique<sg::parallel::DataParallel>(model.parameters(), threads);
  std::optional<sg::ThreadCountGuard> one_thread;  // with data-parallel steps the workers are the parallelism
  if (dp) one_thread.emplace(1);

  auto evaluate = [&](int64_t iter) {
    sg::NoGradGuard no_grad;
    model.eval();
    Evaluation e;
    e.iter = iter;
    for (int split = 0; split < 2; ++split) {
      double sum = 0;
      for (int64_t k = 0; k < s.eval_iters; ++k) {
        examples::check_stop();
        const Batch b = get_batch(split == 0 ? train_ids : val_ids, s.batch_size, s.model.block_size, *gen);
        sum += batch_loss(model, b.x, b.y).item<double>();
      }
      (split == 0 ? e.train_loss : e.val_loss) = sum / static_cast<double>(s.eval_iters);
    }
    e.seconds = trained_seconds;
    e.sample = sample_text(model, *tok, prompt, 200, s.seed);
    model.train();
    return e;
  };
  std::string saved_note;  // what a stop leaves: the last save
  auto save = [&](int64_t iter) {
    const std::string corpus_id = examples::gpt::corpus_id(corpus.text), at = std::to_string(iter);
    examples::gpt::save_run(run.out_dir, model,
                            {{"gpt.settings", examples::gpt::settings_json(s)},
                             {"gpt.tokenizer", tok->to_json()},
                             {"gpt.corpus", corpus_id},
                             {"gpt.iter", at}},
                            opt, *gen,
                            {{"gpt.corpus", corpus_id}, {"gpt.iter", at}, {"gpt.history", examples::gpt::history_json(history)}});
    // The new files hold all an older smallgrad's single file did.
    if (std::filesystem::exists(old_file)) std::filesystem::remove(old_file);
    saved_note = "the model and training state at iteration " + at + " kept in " + run.out_dir +
                 (iter < s.max_iters ? " (--resume continues from there)" : "");
    examples::set_stop_note(saved_note);
  };

  const bool tty = isatty(2);
  model.train();
  double last_loss = NAN;
  for (int64_t iter = start;; ++iter) {
    const bool resumed_here = run.resume && iter == start;
    if ((iter % s.eval_interval == 0 || iter == s.max_iters) && !resumed_here) {
      history.push_back(evaluate(iter));
      const Evaluation& e = history.back();
      std::fprintf(stdout, "%sstep %lld: train loss %.4f, val loss %.4f\n", tty ? "\r\033[K" : "",
                   static_cast<long long>(iter), e.train_loss, e.val_loss);
      std::fflush(stdout);
      save(iter);
    }
    if (iter >= s.max_iters || (run.stop_at > 0 && iter == run.stop_at)) break;
    examples::check_stop();
    const auto t0 = std::chrono::steady_clock::now();
    opt.set_lr(schedule(iter));
    const Batch b = get_batch(train_ids, s.batch_size, s.model.block_size, *gen);
    opt.zero_grad();
    if (dp) {
      const int64_t B = s.batch_size;
      last_loss = dp->backward(B, [&](const sg::parallel::MicroBatch& m) {
        const sg::Tensor x = sg::slice(b.x, 0, m.first, m.first + m.count), y = sg::slice(b.y, 0, m.first, m.first + m.count);
        return batch_loss(model, x, y, m.dropout_keys) * (static_cast<double>(m.count) / static_cast<double>(B));
      });
    } else {
      const sg::Tensor loss = batch_loss(model, b.x, b.y);
      sg::backward(loss);
      last_loss = loss.item<double>();
    }
    if (s.grad_clip > 0) sg::optim::clip_grad_norm(opt.params(), s.grad_clip);
    opt.step();
    trained_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (tty) {
      const int64_t done = iter + 1 - start;
      const double per = trained_seconds / static_cast<double>(std::max<int64_t>(done, 1));
      std::fprintf(stderr, "\r\033[Kiter %lld/%lld  loss %.4f  lr %.2e  %.1f ms/iter  %.0f s left",
                   static_cast<long long>(iter + 1), static_cast<long long>(s.max_iters), last_loss,
                   schedule(iter), per * 1e3, per * static_cast<double>(s.max_iters - iter - 1));
    }
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  model.eval();  // the final sample and the report's attention: no dropout
  const Evaluation& last = history.back();
  std::cout << (last.iter == s.max_iters ? "final" : "stopped") << ": train loss " << last.train_loss << ", val loss "
            << last.val_loss << " after " << last.iter << " of " << s.max_iters << " iterations; " << trained_seconds
            << " s of training (" << 1e3 * trained_seconds / static_cast<double>(std::max<int64_t>(last.iter, 1))
            << " ms/iter)" << std::endl;
  examples::set_stop_note(saved_note + "; the final sample was cut, and log.csv, samples.md and report.html "
                                       "were not written");
  const std::string sample = sample_text(model, *tok, prompt, run.sample_tokens, s.seed);
  std::cout << "sample (temperature 0.8, top-k 200, seed " << s.seed << "):\n" << sample << std::endl;

  std::ostringstream csv;
  csv << "iter,train_loss,val_loss,seconds\n";
  for (const Evaluation& e : history) csv << e.iter << "," << e.train_loss << "," << e.val_loss << "," << e.seconds << "\n";
  out.write("log.csv", csv.str());
  out.write("samples.md", examples::gpt::samples_md(history, run.prompt, sample, s.seed));
  out.write("report.html", examples::gpt::report_html(model, *tok, s, corpus.source, history, sample));
  out.commit();
  std::cout << "report: file://" << std::filesystem::absolute(out.path("report.html")).string() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{
      "Trains a GPT (a decoder-only Transformer) on a real text, by default the King James Bible character by "
      "character with nanoGPT's baby configuration, then samples from it."};
  Run run;
  Settings& s = run.s;
  s.lr_decay_iters = 0;
  std::string positional = "learned";
  bool untied = false;
  int threads = 0;
  flags.text("--text", run.text_path, "the UTF-8 text to learn (default: the KJV, as 'bible Gen1:1-Rev22:21' prints it)");
  flags.choice("--tokenizer", s.tokenizer, "char: every distinct character a token; bpe: byte-level BPE", {"char", "bpe"});
  flags.whole("--vocab", s.bpe_vocab, "bpe: the vocabulary size to train (256 bytes plus merges)", 256, 65536);
  flags.whole("--block-size", s.model.block_size, "context length in tokens", 1, 4096);
  flags.whole("--batch-size", s.batch_size, "sequences per iteration", 1, 4096);
  flags.whole("--n-layer", s.model.n_layer, "blocks", 1, 64);
  flags.whole("--n-head", s.model.n_head, "attention heads (must divide --n-embd)", 1, 64);
  flags.whole("--n-embd", s.model.n_embd, "width", 1, 4096);
  flags.number("--dropout", s.model.dropout, "dropout probability", 0, true, 0.99);
  flags.flag("--bias", s.model.bias, "biases in the Linears and LayerNorms");
  flags.flag("--untied", untied, "a language head of its own, not tied to the token embedding");
  flags.choice("--positional", positional, "positions: learned (GPT-2), sinusoidal, none, rotary or alibi",
               {"learned", "sinusoidal", "none", "rotary", "alibi"});
  flags.whole("--max-iters", s.max_iters, "training iterations", 1, 100000000);
  flags.number("--lr", s.learning_rate, "peak learning rate", 0, false, 10);
  flags.number("--min-lr", s.min_lr, "learning rate at the end of the cosine decay", 0, true, 10);
  flags.whole("--warmup-iters", s.warmup_iters, "linear warmup iterations (not given: 100, or --lr-decay-iters when fewer)", 0, 100000000);
  flags.whole("--lr-decay-iters", s.lr_decay_iters, "iterations of the cosine decay (0: --max-iters)", 0, 100000000);
  flags.number("--weight-decay", s.weight_decay, "AdamW's decay, on matrices and embeddings only", 0, true, 10);
  flags.number("--beta1", s.beta1, "AdamW's beta1", 0, true, 0.999999);
  flags.number("--beta2", s.beta2, "AdamW's beta2", 0, true, 0.999999);
  flags.number("--grad-clip", s.grad_clip, "clip the gradients' global norm to this (0: no clipping)", 0, true, 1e9);
  flags.whole("--eval-interval", s.eval_interval, "evaluate (and checkpoint) every this many iterations", 1, 100000000);
  flags.whole("--eval-iters", s.eval_iters, "batches per split in an evaluation", 1, 100000);
  int64_t seed = 1337;
  flags.whole("--seed", seed, "seeds the weights, the batches and the samples", 0, INT64_MAX);
  flags.text("--prompt", run.prompt, "the samples' prompt");
  flags.whole("--sample-tokens", run.sample_tokens, "tokens in the final sample", 0, 100000);
  flags.folder("--out", run.out_dir, "output folder");
  flags.flag("--resume", run.resume, "continue the checkpoint in --out (give the same flags)");
  flags.whole("--stop-at", run.stop_at, "stop after this iteration (a multiple of --eval-interval), to --resume later; 0: at --max-iters", 0, 100000000);
  flags.threads(threads);
  return examples::run(flags, argc, argv, [&] {
    run.warmup_given = flags.given("--warmup-iters");
    s.model.tie_weights = !untied;
    s.model.positional = sg::nn::parse_positional(positional);
    s.seed = static_cast<uint64_t>(seed);
    if (s.model.n_embd % s.model.n_head != 0)
      throw UsageError("--n-head " + std::to_string(s.model.n_head) + " must divide --n-embd " +
                       std::to_string(s.model.n_embd));
    examples::apply_threads(threads);
    return train(run);
  });
}
