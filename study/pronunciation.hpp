#pragma once
// The pronunciation study (examples/pronounce.cpp): d2l's encoder-decoder
// Transformer (section 11.7) trained on the CMU pronouncing dictionary
// (text/cmudict.hpp) to spell words out as phones, letters in, phones out
// ("grapheme to phoneme"), and scored on words it has never seen.
//
// The split is by word, from a seeded hash of its spelling: every
// pronunciation of a word (its variants) lands in the same set, and the
// same words are held out on every run and machine. A held-out word counts
// as right when the prediction is any of its pronunciations; its phone
// errors are the edit distance to the nearest one. The same split, written
// to split.tsv, is what scripts/pronounce_torch.py trains PyTorch on.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "study/translation.hpp"  // Seq2SeqConfig, Search, TranslationResult, train_seq2seq
#include "text/cmudict.hpp"

namespace sg::study {

struct PronunciationConfig : Seq2SeqConfig {
  PronunciationConfig();  // the example's defaults: sized for about ten minutes on 2 cores
  std::string dict = text::kCmudictPath;
  bool stress = false;         // vowels carry their syllable's stress digit (aa1, ax0)
  double dev_fraction = 0.01;  // of the words, held out for the training curve (test_fraction: for the scores)
  int64_t max_words = 0;       // > 0: only this many words (a seeded sample), for quick runs
  int64_t eval_words = 500;    // the dev words the curve decodes at each evaluation
};

// Throws sg::Error naming the setting for a value the model or data cannot take.
void check_config(const PronunciationConfig& c);

enum class WordSet { train, dev, test };
const char* word_set_name(WordSet s);  // "train", "dev", "test"
// Where the split puts `word`: a hash of its bytes and split_seed, read as a
// fraction u in [0, 1): test below test_fraction, dev below test_fraction +
// dev_fraction, train above.
WordSet word_set(const std::string& word, uint64_t split_seed, double test_fraction, double dev_fraction);

struct PronunciationData {
  std::map<std::string, std::vector<text::Tokens>> pronunciations;  // every word kept: its variants
  std::vector<std::string> train_words, dev_words, test_words;       // each sorted
  std::shared_ptr<text::Vocab> letters, phones;  // from the training words' pairs only
  text::Seq2SeqBatch train_batch;                // one row per training pair (word, variant)
  int64_t longest_word = 0, longest_pronunciation = 0;
};
// Reads c.dict, splits it, builds the vocabularies and the training pairs.
// num_steps of 0 in c is not allowed here: pronunciation_steps gives the
// one that fits the dictionary.
PronunciationData make_pronunciation_data(const PronunciationConfig& c);
// The num_steps every word and pronunciation of the data fits with its <eos>.
int64_t pronunciation_steps(const PronunciationData& d);

// A word as the model reads it: its letters ("cat" -> {c, a, t}).
text::Tokens letters_of(const std::string& word);

// The pronunciations of `words` (each of at most num_steps - 1 letters; a
// letter outside the vocabulary reads as <unk>), decoded greedily or by
// beam search, batched by length. A set `stop` ends it between batches (throws).
std::vector<text::Tokens> pronounce(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                                    const PronunciationData& d, const std::vector<std::string>& words, Search search,
                                    const std::atomic<bool>* stop = nullptr);

struct PronunciationScores {
  int64_t words = 0;
  double wer = 0;  // the fraction of words whose prediction is none of their pronunciations
  // Phone error rate: over the words, the edit distances to each word's
  // nearest pronunciation, summed, over those pronunciations' phones, summed.
  double per = 0;
};
// Throws when the counts differ, a word has no pronunciation, or there are no words.
PronunciationScores score_pronunciations(const std::vector<text::Tokens>& preds,
                                         const std::vector<std::vector<text::Tokens>>& refs);
// score_pronunciations of `words` against the data's pronunciations.
PronunciationScores score_words(const PronunciationData& d, const std::vector<std::string>& words,
                                const std::vector<text::Tokens>& preds);

// Trains as train_seq2seq does, batches trimmed to their longest word; the
// curve's exact match is 1 - WER of greedy decoding on c.eval_words dev
// words spread over the dev set.
TranslationResult train_pronunciation(nn::EncoderDecoder& model, const PronunciationConfig& c,
                                      const PronunciationData& d, const Progress& progress = nullptr,
                                      const std::atomic<bool>* stop = nullptr);

struct PronunciationRow {
  Search search;
  std::vector<text::Tokens> preds;  // of d.test_words
  PronunciationScores scores;
  double seconds = 0;
};
// Greedy and beam search on the test words; `stop` as pronounce's.
std::vector<PronunciationRow> evaluate_pronunciation(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                                                     const PronunciationData& d,
                                                     const std::atomic<bool>* stop = nullptr);

// ---- what the program writes ----

std::string pronunciation_settings_md(const PronunciationConfig& c, const PronunciationData& d, int64_t parameters);
// The table of WER and PER per search, and WER by the word's length.
std::string pronunciation_results_md(const std::vector<PronunciationRow>& rows, const PronunciationConfig& c,
                                     const PronunciationData& d, const PronunciationScores& train_sample);
// A table of words: their set, pronunciations, greedy and beam predictions.
std::string pronunciations_md(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                              const PronunciationData& d, const std::vector<std::string>& words);
// words.md: test words spread over the set, and test words greedy search gets wrong.
std::string pronunciation_examples_md(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                                      const PronunciationData& d, const PronunciationRow& greedy);
// split.tsv: word, set, pronunciation (phones joined by spaces), a line per
// pair, words sorted: what scripts/pronounce_torch.py reads.
std::string split_tsv(const PronunciationData& d);
// The decoder's cross-attention (phones written against letters read) or
// self-attention while it pronounces `word` greedily, every block and head.
std::string pronunciation_attention_svg(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                                        const PronunciationData& d, const std::string& word, bool cross);

}  // namespace sg::study
