#pragma once
// The translation study (examples/translate_numbers.cpp): d2l's
// encoder-decoder Transformer (section 11.7) trained to translate whole
// numbers written in English words into French words (study/number_words.hpp),
// scored on numbers held out from training, decoded greedily and by beam
// search, each with the key/value cache (every token at its own position)
// and with d2l's position-0 decoding (nn::DecodingMode::d2l), so that the
// cost of d2l's defect is one line of a table.
//
// Exact match is the headline: a translation is right or it is not, and
// BLEU with d2l's k = 2 is high long before it is right ("quatre - vingt -
// un" for "quatre - vingt - onze" scores 0.83).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/safetensors.hpp"  // Metadata
#include "nn/encoder_decoder.hpp"
#include "study/number_words.hpp"
#include "study/run_pool.hpp"  // Progress, progress_line
#include "text/seq2seq_data.hpp"
#include "text/vocab.hpp"

namespace sg::study {

// The model and training settings every encoder-decoder study shares (the
// number translation here, pronunciation in study/pronunciation.hpp).
struct Seq2SeqConfig {
  nn::Positional positional = nn::Positional::sinusoidal;
  int64_t hidden = 64, ffn = 128, heads = 4, blocks = 2;  // blocks: of the encoder and of the decoder each
  double dropout = 0.1;
  bool pre_norm = false;
  int64_t max_distance = 8;  // relative positions: offsets clipped to +-max_distance
  // Source and target length, <eos> included: the longest French has 9
  // tokens up to 999, 19 up to 999,999 (longest_french).
  int64_t num_steps = 12;
  double test_fraction = 0.2;
  uint64_t split_seed = 0;  // which pairs are held out: the same for every training seed
  uint64_t seed = 0;        // the model's initial weights, dropout, the batches' order
  int64_t steps = 2000, batch = 64, warmup = 100;
  double lr = 3e-3, min_lr = 1e-4, weight_decay = 0.01, clip = 1.0;
  int64_t eval_every = 100;  // steps between greedy decodings of the held-out pairs
  int64_t beam = 4;          // beam width of the beam-search rows
};

struct TranslationConfig : Seq2SeqConfig {
  // The numbers 0..max_number. Up to 999 the split is split_numbers' (a
  // test_fraction of them held out, all others trained on); past it,
  // split_by_length's (per digit length, up to test_cap held out and
  // train_cap trained on), and num_steps must hold the longest French.
  int64_t max_number = 999;
  int64_t test_cap = 500, train_cap = 20000;
};

// Throws sg::Error, naming `study` and the setting, for a model or training
// setting out of its bounds.
void check_seq2seq_config(const Seq2SeqConfig& c, const char* study);

// Throws sg::Error naming the setting for a value the model or data cannot take.
void check_config(const TranslationConfig& c);

// The most tokens of a French number in 0..max_number (9 for 999, 19 for 999,999).
int64_t longest_french(int64_t max_number);

// The pairs, the vocabularies (built from the training pairs only, as d2l
// builds them from its training text) and the padded tensors.
struct TranslationData {
  NumberPairs train, test;
  std::shared_ptr<text::Vocab> src_vocab, tgt_vocab;
  text::Seq2SeqBatch train_batch, test_batch;
};
TranslationData make_translation_data(const TranslationConfig& c);

// The encoder-decoder for the data's vocabularies (weights from the default generator).
std::unique_ptr<nn::EncoderDecoder> make_translator(const TranslationConfig& c, const TranslationData& d);
// The same for vocabularies of the given sizes, for any study's settings.
std::unique_ptr<nn::EncoderDecoder> make_translator(const Seq2SeqConfig& c, int64_t src_vocab_size,
                                                    int64_t tgt_vocab_size);

enum class Search { greedy, beam };

// ---- metrics: each pair a prediction and its reference, in tokens ----

// The fraction of pairs whose prediction equals the reference token for token.
double exact_match(const std::vector<text::Tokens>& preds, const std::vector<text::Tokens>& refs);
// Tokens right at their position, over the longer of the two lengths, summed
// over pairs: sum_i #{t : pred_i[t] = ref_i[t]} / sum_i max(|pred_i|, |ref_i|).
// A missing or extra token counts as wrong, so a prediction shifted by one
// token scores low. 0 when every sequence is empty.
double token_accuracy(const std::vector<text::Tokens>& preds, const std::vector<text::Tokens>& refs);

// Exact match per digit length of the numbers (index 1..6; 0 unused),
// and how many numbers of each length there are.
struct LengthScores {
  std::vector<double> exact = std::vector<double>(7, 0.0);
  std::vector<int64_t> count = std::vector<int64_t>(7, 0);
};
LengthScores exact_by_length(const std::vector<int64_t>& numbers, const std::vector<text::Tokens>& preds,
                             const std::vector<text::Tokens>& refs);

struct Scores {
  double exact = 0, token_accuracy = 0;
  double bleu2 = 0;  // the mean over pairs of d2l's bleu(pred, ref, k = 2)
  double bleu4 = 0;  // corpus BLEU-4
};
Scores score(const std::vector<text::Tokens>& preds, const std::vector<text::Tokens>& refs);

// ---- decoding ----


// The translations of every source of `b`, as target tokens (without <bos> and <eos>).
std::vector<text::Tokens> translate(const nn::EncoderDecoder& model, const TranslationData& d,
                                    const text::Seq2SeqBatch& b, Search search, nn::DecodingMode mode,
                                    int64_t beam = 4);
// The same with the target vocabulary given (any study's data), each
// output at most max_len tokens with <eos> (0: as many as b's labels have
// steps).
// A set `stop` ends a beam search before its next step (throws).
std::vector<text::Tokens> translate(const nn::EncoderDecoder& model, const text::Vocab& tgt_vocab,
                                    const text::Seq2SeqBatch& b, Search search, nn::DecodingMode mode,
                                    int64_t beam = 4, int64_t max_len = 0, const std::atomic<bool>* stop = nullptr);

// ---- keeping a trained model (translate_numbers --save DIR, --load DIR) ----

// A model folder holds three files:
//   model.safetensors   the weights under d2l's Seq2Seq names (a state_dict
//                       d2l's Seq2Seq loads with strict=True for sinusoidal,
//                       post-norm models); metadata: "model" =
//                       "translate_numbers" and every setting of
//                       TranslationConfig (translator_metadata)
//   source_vocab.txt    the source vocabulary, one token per line in id order
//   target_vocab.txt    the target vocabulary, the same way
inline const char* const kTranslatorFiles[3] = {"model.safetensors", "source_vocab.txt", "target_vocab.txt"};
checkpoint::Metadata translator_metadata(const TranslationConfig& c);
// Writes the folder's three files, each to path_for(its name) (a staging
// name the caller renames into place, or dir + "/" + name).
void save_translator(const nn::EncoderDecoder& model, const TranslationConfig& c, const text::Vocab& src_vocab,
                     const text::Vocab& tgt_vocab, const std::function<std::string(const std::string&)>& path_for);

struct Translator {
  TranslationConfig config;  // the model's settings, as saved
  std::shared_ptr<text::Vocab> src_vocab, tgt_vocab;
  std::unique_ptr<nn::EncoderDecoder> model;  // in eval mode
};
// Reads a folder save_translator wrote. A missing or damaged file, a
// setting out of its bounds, a vocabulary without the special tokens, or
// weights that do not fit the settings and vocabularies throw sg::Error
// naming the file and what is wrong; nothing is half loaded.
Translator load_translator(const std::string& dir);

// One source sentence's translation (target tokens, without <bos> and
// <eos>). Throws naming the token for a token outside the source
// vocabulary, and for a sentence longer than the model's num_steps - 1.
text::Tokens translate_sentence(const Translator& t, const text::Tokens& source, Search search, int64_t beam = 4,
                                nn::DecodingMode mode = nn::DecodingMode::cached);

// ---- training ----

struct TranslationPoint {
  int64_t step;
  double loss;   // the training batch's sequence_loss (step 0: before any update)
  double exact;  // greedy, cached decoding of the held-out numbers
};

struct TranslationResult {
  std::vector<double> step_loss;  // every step 1..steps
  std::vector<TranslationPoint> curve;
  double seconds = 0;  // the training steps and the evaluations along the way
};

// AdamW with linear warm-up and cosine decay, global-norm clipping, d2l's
// Seq2Seq loss with teacher forcing; batches of the training pairs drawn
// epoch by epoch in a shuffled order (from sg::Generator(c.seed)). Leaves
// the model in eval mode. Throws sg::Error at the next step once *stop is true.
TranslationResult train_translation(nn::EncoderDecoder& model, const TranslationConfig& c, const TranslationData& d,
                                    const Progress& progress = nullptr, const std::atomic<bool>* stop = nullptr);

// The same loop for any study's pairs: `train` holds every training pair,
// `pad` is the target vocabulary's <pad>, and held_out_exact() (called with
// the model in eval mode, at step 0, every eval_every steps and at the end)
// gives the curve's held-out exact match. trim: each batch is cut to its
// longest pair (text::trim_padding), the same loss with less work when
// most pairs are far shorter than num_steps.
TranslationResult train_seq2seq(nn::EncoderDecoder& model, const Seq2SeqConfig& c, const text::Seq2SeqBatch& train,
                                int64_t pad, const std::function<double()>& held_out_exact, bool trim,
                                const Progress& progress = nullptr, const std::atomic<bool>* stop = nullptr);

// One row of the table: a search and a decoding mode on the held-out numbers.
struct DecodingRow {
  Search search;
  nn::DecodingMode mode;
  std::vector<text::Tokens> preds;
  Scores scores;
  double seconds = 0;
};
// Greedy and beam search, each cached and in d2l's mode. A set `stop` ends
// it between them (throws).
std::vector<DecodingRow> evaluate_decodings(const nn::EncoderDecoder& model, const TranslationConfig& c,
                                            const TranslationData& d, const std::atomic<bool>* stop = nullptr);

// ---- what the program writes ----

// "greedy" / "beam 4"; "cached (position t)" / "d2l (position 0)".
std::string search_name(Search s, int64_t beam);
std::string mode_name(nn::DecodingMode m);

// results.md: one row per decoding, a line on what d2l's decoding costs,
// and exact match per digit length for each decoding.
std::string results_md(const std::vector<DecodingRow>& rows, const TranslationConfig& c, const TranslationData& d,
                       double train_exact);
// A table of the numbers' translations (any numbers of the task's range):
// reference and each decoding's translation, each number marked held out or trained.
std::string translations_md(const nn::EncoderDecoder& model, const TranslationConfig& c, const TranslationData& d,
                            const std::vector<int64_t>& numbers);
// examples.md: translations_md of held-out numbers with tricky French
// (tricky_held_out), of the numbers the issue names (tricky_numbers, held out
// or not), and of every held-out number greedy search gets wrong.
std::string examples_md(const nn::EncoderDecoder& model, const TranslationConfig& c, const TranslationData& d);
// settings.md; `positions` and `seeds`, when given, in place of c's (a comparison's).
std::string translation_settings_md(const TranslationConfig& c, const TranslationData& d,
                                    const std::string& positions = "", const std::string& seeds = "");
// curve.svg: the training loss and the held-out exact match against step.
std::string translation_curve_svg(const TranslationResult& r, const std::string& title);
// curve.csv: step, training batch loss, held-out exact match, one row per evaluation.
std::string translation_curve_csv(const TranslationResult& r);
// The decoder's attention while it writes its greedy translation of `number`
// (teacher-forced on that translation): cross-attention (its tokens against
// the source's) or causal self-attention (against its own), every block
// (rows) and head (columns).
std::string attention_svg(const nn::EncoderDecoder& model, const TranslationConfig& c, const TranslationData& d,
                          int64_t number, bool cross);

// The axis labels and title of decoder_attention_svg.
struct AttentionLabels {
  std::string source;   // cross-attention's x axis ("English (source)")
  std::string read;     // self-attention's x axis ("French read so far")
  std::string written;  // the y axis ("French token written")
  std::string title;
};
// The same figure for any study: the decoder teacher-forced on `pred` (its
// output for the one source of `b`, whose tokens without <eos> are
// `source`), every block (rows) and head (columns).
std::string decoder_attention_svg(const nn::EncoderDecoder& model, const text::Seq2SeqBatch& b,
                                  const text::Tokens& source, const text::Vocab& tgt_vocab, const text::Tokens& pred,
                                  bool cross, const AttentionLabels& labels);

// The numbers with tricky French the example translations show: 71, 80,
// 81, 91, 200, 201, 280, 391, ..., 21,000, 80,000, 200,000 (examples_md
// shows those within the run's range).
const std::vector<int64_t>& tricky_numbers();
// Up to `count` of the held-out numbers with tricky French, spread over the
// range: those ending in 00 or 01 above 100 ("deux cents", "cent un"), in 21,
// 31, ..., 71 ("et"), or in 70..99 (soixante-dix, quatre-vingt(s)).
std::vector<int64_t> tricky_held_out(const TranslationData& d, size_t count);

// ---- --compare: kinds of positions side by side ----

struct TranslationJob {
  TranslationConfig c;
  std::string label;
  TranslationResult r;
  std::vector<DecodingRow> rows;  // evaluate_decodings after training
};
// Each job trains its own model on one thread, as many side by side as
// sg::num_threads(); models are built in job order on this thread from the
// default generator seeded with the job's seed (and each job's dropout
// draws from its own copy of it), so the results do not depend on how many
// run at once. A line per finished run on stderr. The first error stops the
// others and is rethrown.
void run_translations(std::vector<TranslationJob>& jobs, const TranslationData& d, const std::atomic<bool>* stop);
// The comparison's table: per kind, mean ± sample standard deviation over seeds.
std::string compare_md(const std::vector<TranslationJob>& jobs);
// The mean held-out exact match over training, one line per kind.
std::string compare_curve_svg(const std::vector<TranslationJob>& jobs);

}  // namespace sg::study
