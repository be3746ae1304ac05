// What study/pronunciation.hpp declares: the split, the data, decoding,
// the scores, training and the files the program writes.
#include "study/pronunciation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "core/error.hpp"
#include "study/settings.hpp"  // fmt
#include "text/edit_distance.hpp"

namespace sg::study {

PronunciationConfig::PronunciationConfig() {
  // Wider and deeper than the number translation's d2l size: a dictionary
  // of 100,000 words is a harder task than a thousand numbers.
  hidden = 128, ffn = 512, heads = 4, blocks = 3;
  dropout = 0.1;
  num_steps = 0;  // 0: the longest word or pronunciation with <eos> (pronunciation_steps)
  test_fraction = 0.1;
  steps = 6000, batch = 128, warmup = 300;
  lr = 1.5e-3, min_lr = 1e-5, weight_decay = 0.01, clip = 1.0;
  eval_every = 500;
  beam = 4;
}

void check_config(const PronunciationConfig& c) {
  Seq2SeqConfig s = c;
  if (s.num_steps == 0) s.num_steps = 2;  // filled in from the data
  check_seq2seq_config(s, "pronunciation");
  if (!(c.test_fraction > 0 && c.dev_fraction > 0 && c.test_fraction + c.dev_fraction < 1))
    sg::fail("pronunciation: test_fraction ", c.test_fraction, " and dev_fraction ", c.dev_fraction,
             " need to be above 0 with a sum below 1");
  if (c.max_words < 0) sg::fail("pronunciation: max_words is ", c.max_words, ", expected 0 (every word) or more");
  if (c.eval_words < 1) sg::fail("pronunciation: eval_words is ", c.eval_words, ", expected at least 1");
}

const char* word_set_name(WordSet s) {
  return s == WordSet::train ? "train" : s == WordSet::dev ? "dev" : "test";
}

namespace {

// FNV-1a over the word's bytes, then splitmix64's finaliser with the seed:
// the same value on every machine and compiler (std::hash is neither).
uint64_t word_hash(const std::string& word, uint64_t seed) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : word) h = (h ^ ch) * 1099511628211ull;
  uint64_t z = h + seed * 0x9E3779B97F4A7C15ull + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

std::string joined(const text::Tokens& t) { return t.empty() ? "(nothing)" : text::join(t); }

std::string percent(double x) { return fmt("%.1f%%", 100 * x); }

}  // namespace

WordSet word_set(const std::string& word, uint64_t split_seed, double test_fraction, double dev_fraction) {
  const double u = unit(word_hash(word, split_seed));
  return u < test_fraction ? WordSet::test : u < test_fraction + dev_fraction ? WordSet::dev : WordSet::train;
}

text::Tokens letters_of(const std::string& word) {
  text::Tokens t;
  for (char ch : word) t.push_back(std::string(1, ch));
  return t;
}

PronunciationData make_pronunciation_data(const PronunciationConfig& c) {
  check_config(c);
  PronunciationData d;
  for (text::Pronunciation& p : text::read_cmudict(c.dict, c.stress))
    d.pronunciations[p.word].push_back(std::move(p.phones));
  if (c.max_words > 0 && static_cast<size_t>(c.max_words) < d.pronunciations.size()) {
    // A seeded sample, by a second hash so that it does not bias the split.
    std::vector<std::pair<uint64_t, std::string>> ranked;
    for (const auto& [word, prons] : d.pronunciations) ranked.push_back({word_hash(word, ~c.split_seed), word});
    std::sort(ranked.begin(), ranked.end());
    std::map<std::string, std::vector<text::Tokens>> kept;
    for (size_t i = 0; i < static_cast<size_t>(c.max_words); ++i)
      kept[ranked[i].second] = std::move(d.pronunciations[ranked[i].second]);
    d.pronunciations = std::move(kept);
  }
  std::vector<text::Tokens> src, tgt;
  for (const auto& [word, prons] : d.pronunciations) {
    d.longest_word = std::max(d.longest_word, static_cast<int64_t>(word.size()));
    for (const text::Tokens& p : prons) d.longest_pronunciation = std::max(d.longest_pronunciation, static_cast<int64_t>(p.size()));
    switch (word_set(word, c.split_seed, c.test_fraction, c.dev_fraction)) {
      case WordSet::test: d.test_words.push_back(word); break;
      case WordSet::dev: d.dev_words.push_back(word); break;
      case WordSet::train:
        d.train_words.push_back(word);
        for (const text::Tokens& p : prons) src.push_back(letters_of(word)), tgt.push_back(p);
        break;
    }
  }
  if (d.train_words.empty() || d.dev_words.empty() || d.test_words.empty())
    sg::fail("pronunciation: ", d.pronunciations.size(), " words split into ", d.train_words.size(), " training, ",
             d.dev_words.size(), " dev and ", d.test_words.size(), " test words: every set needs one (more words?)");
  d.letters = std::make_shared<text::Vocab>(src);
  d.phones = std::make_shared<text::Vocab>(tgt);
  const int64_t steps = c.num_steps > 0 ? c.num_steps : pronunciation_steps(d);
  if (steps < pronunciation_steps(d))
    sg::fail("pronunciation: num_steps ", c.num_steps, " is too short for the longest word (", d.longest_word,
             " letters) or pronunciation (", d.longest_pronunciation, " phones) with <eos>: ", pronunciation_steps(d));
  d.train_batch = text::build_batch(src, tgt, *d.letters, *d.phones, steps);
  return d;
}

int64_t pronunciation_steps(const PronunciationData& d) {
  return std::max(d.longest_word, d.longest_pronunciation) + 1;
}

namespace {

int64_t steps_of(const PronunciationConfig& c, const PronunciationData& d) {
  return c.num_steps > 0 ? c.num_steps : pronunciation_steps(d);
}

}  // namespace

std::vector<text::Tokens> pronounce(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                                    const PronunciationData& d, const std::vector<std::string>& words, Search search,
                                    const std::atomic<bool>* stop) {
  const int64_t T = steps_of(c, d);
  for (const std::string& w : words)
    if (w.empty() || static_cast<int64_t>(w.size()) >= T)
      sg::fail("pronounce: '", w, "' has ", w.size(), " letters, expected 1..", T - 1, " (num_steps ", T,
               " with <eos>)");
  // Shortest first, in chunks: a chunk decodes until its longest output ends.
  std::vector<size_t> order(words.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return words[a].size() < words[b].size(); });
  constexpr size_t kChunk = 512;
  std::vector<text::Tokens> out(words.size());
  for (size_t at = 0; at < order.size(); at += kChunk) {
    if (stop && stop->load()) sg::fail("pronounce: stopped after ", at, " of ", order.size(), " words");
    std::vector<text::Tokens> src, tgt;
    for (size_t i = at; i < std::min(order.size(), at + kChunk); ++i)
      src.push_back(letters_of(words[order[i]])), tgt.push_back({});
    const text::Seq2SeqBatch b = text::trim_padding(text::build_batch(src, tgt, *d.letters, *d.phones, T));
    const std::vector<text::Tokens> preds =
        translate(model, *d.phones, b, search, nn::DecodingMode::cached, c.beam, T, stop);
    for (size_t i = at; i < std::min(order.size(), at + kChunk); ++i) out[order[i]] = preds[i - at];
  }
  return out;
}

PronunciationScores score_pronunciations(const std::vector<text::Tokens>& preds,
                                         const std::vector<std::vector<text::Tokens>>& refs) {
  if (preds.size() != refs.size())
    sg::fail("score_pronunciations: ", preds.size(), " predictions for ", refs.size(), " words");
  if (preds.empty()) sg::fail("score_pronunciations: no words");
  PronunciationScores s;
  s.words = static_cast<int64_t>(preds.size());
  int64_t wrong = 0, errors = 0, phones = 0;
  for (size_t i = 0; i < preds.size(); ++i) {
    if (refs[i].empty()) sg::fail("score_pronunciations: word ", i, " has no pronunciation");
    int64_t best = std::numeric_limits<int64_t>::max(), best_len = 0;
    for (const text::Tokens& r : refs[i]) {  // the nearest; of equal distances, the first
      const int64_t e = text::edit_distance(preds[i], r);
      if (e < best) best = e, best_len = static_cast<int64_t>(r.size());
    }
    wrong += best != 0;
    errors += best, phones += best_len;
  }
  s.wer = static_cast<double>(wrong) / static_cast<double>(s.words);
  s.per = phones ? static_cast<double>(errors) / static_cast<double>(phones) : 0.0;
  return s;
}

PronunciationScores score_words(const PronunciationData& d, const std::vector<std::string>& words,
                                const std::vector<text::Tokens>& preds) {
  std::vector<std::vector<text::Tokens>> refs;
  for (const std::string& w : words) {
    const auto it = d.pronunciations.find(w);
    if (it == d.pronunciations.end()) sg::fail("score_words: '", w, "' is not in the dictionary");
    refs.push_back(it->second);
  }
  return score_pronunciations(preds, refs);
}

TranslationResult train_pronunciation(nn::EncoderDecoder& model, const PronunciationConfig& c,
                                      const PronunciationData& d, const Progress& progress,
                                      const std::atomic<bool>* stop) {
  check_config(c);
  Seq2SeqConfig s = c;
  s.num_steps = steps_of(c, d);
  // eval_words of the dev words, spread evenly over them (they are sorted: the first ones would all start with a).
  const size_t n = std::min(static_cast<size_t>(c.eval_words), d.dev_words.size());
  std::vector<std::string> dev;
  for (size_t i = 0; i < n; ++i) dev.push_back(d.dev_words[i * d.dev_words.size() / n]);
  const auto dev_exact = [&] { return 1 - score_words(d, dev, pronounce(model, c, d, dev, Search::greedy, stop)).wer; };
  return train_seq2seq(model, s, d.train_batch, d.phones->pad(), dev_exact, true, progress, stop);
}

std::vector<PronunciationRow> evaluate_pronunciation(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                                                     const PronunciationData& d, const std::atomic<bool>* stop) {
  std::vector<PronunciationRow> rows;
  for (Search s : {Search::greedy, Search::beam}) {
    PronunciationRow row{s, {}, {}, 0};
    const auto start = std::chrono::steady_clock::now();
    row.preds = pronounce(model, c, d, d.test_words, s, stop);
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    row.scores = score_words(d, d.test_words, row.preds);
    rows.push_back(std::move(row));
  }
  return rows;
}

// ---- files ----

std::string pronunciation_settings_md(const PronunciationConfig& c, const PronunciationData& d, int64_t parameters) {
  std::ostringstream o;
  o << "| setting | value |\n|---|---|\n"
    << "| task | spelling to pronunciation (grapheme to phoneme), " << c.dict << " |\n"
    << "| words: training / dev / test | " << d.train_words.size() << " / " << d.dev_words.size() << " / "
    << d.test_words.size() << " (by a hash of the word, split seed " << c.split_seed << "; test fraction "
    << c.test_fraction << ", dev fraction " << c.dev_fraction
    << (c.max_words > 0 ? ", a sample of " + std::to_string(c.max_words) + " words" : std::string()) << ") |\n"
    << "| training pairs (a word's variants each) | " << d.train_batch.size() << " |\n"
    << "| vocabularies (letters / phones) | " << d.letters->size() << " / " << d.phones->size() << " tokens"
    << (c.stress ? ", vowels with stress" : ", no stress") << " |\n"
    << "| model | encoder-decoder, " << c.blocks << " + " << c.blocks << " blocks, width " << c.hidden << ", FFN "
    << c.ffn << ", " << c.heads << " heads, " << (c.pre_norm ? "pre-norm" : "post-norm") << ", " << parameters
    << " parameters |\n"
    << "| positions | " << nn::positional_name(c.positional) << " |\n"
    << "| dropout | " << c.dropout << " |\n"
    << "| num_steps | " << steps_of(c, d) << " (longest word " << d.longest_word << " letters, pronunciation "
    << d.longest_pronunciation << " phones) |\n"
    << "| optimiser | AdamW, lr " << c.lr << " (warm-up " << c.warmup << " steps, cosine to " << c.min_lr
    << "), weight decay " << c.weight_decay << ", clip " << c.clip << " |\n"
    << "| steps x batch | " << c.steps << " x " << c.batch << " (each batch cut to its longest word) |\n"
    << "| seed | " << c.seed << " |\n"
    << "| beam width | " << c.beam << " |\n";
  return o.str();
}

std::string pronunciation_results_md(const std::vector<PronunciationRow>& rows, const PronunciationConfig& c,
                                     const PronunciationData& d, const PronunciationScores& train_sample) {
  std::ostringstream o;
  o << "Test words: " << d.test_words.size()
    << ", never seen in training. A word is right when the prediction is any of its pronunciations; phone "
       "errors count against the nearest one.\n\n"
    << "| search | word error rate | phone error rate | seconds |\n|---|---|---|---|\n";
  for (const PronunciationRow& r : rows)
    o << "| " << search_name(r.search, c.beam) << " | " << percent(r.scores.wer) << " | " << percent(r.scores.per)
      << " | " << fmt("%.1f", r.seconds) << " |\n";
  o << "\nTraining words (" << train_sample.words << " of them, greedy): word error rate " << percent(train_sample.wer)
    << ", phone error rate " << percent(train_sample.per) << ".\n\n";
  // WER by the word's letters.
  const std::vector<std::pair<size_t, size_t>> groups = {{1, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 100}};
  auto group_name = [](std::pair<size_t, size_t> g) {
    return g.second == 100 ? std::to_string(g.first) + "+" : std::to_string(g.first) + "-" + std::to_string(g.second);
  };
  o << "Word error rate by the word's letters (test words of that length):\n\n| search |";
  std::string rule = "|---|";
  for (const auto& g : groups) {
    int64_t n = 0;
    for (const std::string& w : d.test_words) n += w.size() >= g.first && w.size() <= g.second;
    o << " " << group_name(g) << " (" << n << ") |", rule += "---|";
  }
  o << "\n" << rule << "\n";
  for (const PronunciationRow& r : rows) {
    o << "| " << search_name(r.search, c.beam) << " |";
    for (const auto& g : groups) {
      std::vector<text::Tokens> preds;
      std::vector<std::string> words;
      for (size_t i = 0; i < d.test_words.size(); ++i)
        if (d.test_words[i].size() >= g.first && d.test_words[i].size() <= g.second)
          words.push_back(d.test_words[i]), preds.push_back(r.preds[i]);
      o << " " << (words.empty() ? std::string("-") : percent(score_words(d, words, preds).wer)) << " |";
    }
    o << "\n";
  }
  return o.str();
}

std::string pronunciations_md(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                              const PronunciationData& d, const std::vector<std::string>& words) {
  if (words.empty()) return "(none)\n";
  const std::vector<text::Tokens> greedy = pronounce(model, c, d, words, Search::greedy);
  const std::vector<text::Tokens> beam = pronounce(model, c, d, words, Search::beam);
  std::ostringstream o;
  o << "| word | set | pronunciation (dictionary) | greedy | " << search_name(Search::beam, c.beam)
    << " |\n|---|---|---|---|---|\n";
  for (size_t i = 0; i < words.size(); ++i) {
    const auto it = d.pronunciations.find(words[i]);
    std::string refs = "(not in the dictionary)", set = "-";
    if (it != d.pronunciations.end()) {
      refs.clear();
      for (const text::Tokens& r : it->second) refs += (refs.empty() ? "" : " / ") + joined(r);
      set = word_set_name(word_set(words[i], c.split_seed, c.test_fraction, c.dev_fraction));
    }
    auto mark = [&](const text::Tokens& pred) {  // ✗: none of the dictionary's pronunciations
      const bool known = it != d.pronunciations.end();
      return joined(pred) + (known && std::find(it->second.begin(), it->second.end(), pred) == it->second.end() ? " ✗" : "");
    };
    o << "| " << words[i] << " | " << set << " | " << refs << " | " << mark(greedy[i]) << " | " << mark(beam[i])
      << " |\n";
  }
  return o.str();
}

std::string pronunciation_examples_md(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                                      const PronunciationData& d, const PronunciationRow& greedy) {
  constexpr size_t kShown = 30;  // tables a reader can still look through
  std::vector<std::string> spread, wrong;
  for (size_t i = 0; i < kShown && i < d.test_words.size(); ++i)
    spread.push_back(d.test_words[i * d.test_words.size() / std::min(kShown, d.test_words.size())]);
  std::vector<std::string> all_wrong;
  for (size_t i = 0; i < d.test_words.size(); ++i) {
    const std::vector<text::Tokens>& refs = d.pronunciations.at(d.test_words[i]);
    if (std::find(refs.begin(), refs.end(), greedy.preds[i]) == refs.end()) all_wrong.push_back(d.test_words[i]);
  }
  for (size_t i = 0; i < kShown && i < all_wrong.size(); ++i)
    wrong.push_back(all_wrong[i * all_wrong.size() / std::min(kShown, all_wrong.size())]);
  return "Pronunciations (✗: none of the dictionary's; phones as Festival's CMU lexicon writes them). Test words "
         "spread over the alphabet:\n\n" +
         pronunciations_md(model, c, d, spread) + "\nTest words greedy search gets wrong (" +
         std::to_string(wrong.size()) + " of " + std::to_string(all_wrong.size()) + ", spread over the alphabet):\n\n" +
         pronunciations_md(model, c, d, wrong);
}

std::string split_tsv(const PronunciationData& d) {
  std::ostringstream o;
  o << "word\tset\tpronunciation\n";
  for (const auto& [word, prons] : d.pronunciations) {
    const char* set = std::binary_search(d.test_words.begin(), d.test_words.end(), word) ? "test"
                      : std::binary_search(d.dev_words.begin(), d.dev_words.end(), word) ? "dev"
                                                                                           : "train";
    for (const text::Tokens& p : prons) o << word << '\t' << set << '\t' << text::join(p) << '\n';
  }
  return o.str();
}

std::string pronunciation_attention_svg(const nn::EncoderDecoder& model, const PronunciationConfig& c,
                                        const PronunciationData& d, const std::string& word, bool cross) {
  const text::Tokens pred = pronounce(model, c, d, {word}, Search::greedy).at(0);
  const text::Seq2SeqBatch b = text::build_batch({letters_of(word)}, {pred}, *d.letters, *d.phones, steps_of(c, d));
  const AttentionLabels labels{"letters (source)", "phones written so far", "phone written",
                               std::string(cross ? "Cross-attention" : "Decoder self-attention (causal)") +
                                   " while pronouncing '" + word + "' (" + joined(pred) +
                                   "): blocks in rows, heads in columns"};
  return decoder_attention_svg(model, b, letters_of(word), *d.phones, pred, cross, labels);
}

}  // namespace sg::study
