// study/pronunciation.hpp: the split by word (seeded, the same every run,
// a word's variants together), the data built from a small dictionary in
// Festival's format, word and phone error rates against values worked out
// by hand, trimmed batches giving the same loss, and a few training steps.
#include <catch2/catch.hpp>

#include "autograd/engine.hpp"
#include "core/random.hpp"
#include "nn/loss.hpp"
#include "study/pronunciation.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

using Catch::Contains;
using T = sg::text::Tokens;
using sg::study::PronunciationConfig;

namespace {

// A dictionary of `count` made-up words in Festival's format: each letter
// says one phone; every seventh word has a second pronunciation (its last
// phone doubled). Returns its path.
std::string write_dict(const std::string& name, int count) {
  const std::string letters = "abdeiklmnostu";
  const std::map<char, std::string> phone = {{'a', "aa"}, {'b', "b"}, {'d', "d"}, {'e', "eh"}, {'i', "ih"},
                                             {'k', "k"},  {'l', "l"}, {'m', "m"}, {'n', "n"},  {'o', "ow"},
                                             {'s', "s"},  {'t', "t"}, {'u', "uw"}};
  std::mt19937 gen(11);
  std::set<std::string> words;
  while (static_cast<int>(words.size()) < count) {
    std::string w(2 + gen() % 6, 'a');
    for (char& ch : w) ch = letters[gen() % letters.size()];
    words.insert(w);
  }
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream f(path);
  f << "MNCL\n";
  int i = 0;
  for (const std::string& w : words) {
    std::string phones;
    for (char ch : w) phones += (phones.empty() ? "" : " ") + phone.at(ch);
    f << "(\"" << w << "\" nil (((" << phones << ") 1)))\n";
    if (++i % 7 == 0) f << "(\"" << w << "\" v (((" << phones << " " << phone.at(w.back()) << ") 0)))\n";
  }
  return path;
}

PronunciationConfig small(const std::string& dict) {
  PronunciationConfig c;
  c.dict = dict;
  c.hidden = 32, c.ffn = 64, c.heads = 2, c.blocks = 1;
  c.dropout = 0;
  c.test_fraction = 0.1, c.dev_fraction = 0.05;
  c.steps = 40, c.batch = 32, c.warmup = 5, c.eval_every = 20, c.eval_words = 20;
  c.lr = 1e-2;
  return c;
}

}  // namespace

TEST_CASE("word_set: a seeded hash of the word, the same every time, fractions as asked", "[pronunciation]") {
  using sg::study::WordSet;
  int test = 0, dev = 0, changed = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const std::string w = "w" + std::to_string(i);
    const WordSet s = sg::study::word_set(w, 0, 0.1, 0.05);
    CHECK(s == sg::study::word_set(w, 0, 0.1, 0.05));
    test += s == WordSet::test, dev += s == WordSet::dev;
    changed += s != sg::study::word_set(w, 1, 0.1, 0.05);
  }
  // Binomial spreads: 3 standard deviations are about 0.006 and 0.005 of n.
  CHECK(std::abs(test / double(n) - 0.1) < 0.01);
  CHECK(std::abs(dev / double(n) - 0.05) < 0.008);
  CHECK(changed > n / 10);  // another split seed, another split
  CHECK(std::string(sg::study::word_set_name(WordSet::dev)) == "dev");
}

TEST_CASE("pronunciation data: split by word, variants together, vocabularies from training words only",
          "[pronunciation]") {
  const std::string dict = write_dict("smallgrad_g2p_data.out", 700);
  PronunciationConfig c = small(dict);
  const sg::study::PronunciationData d = sg::study::make_pronunciation_data(c);
  CHECK(d.pronunciations.size() == 700);
  CHECK(d.train_words.size() + d.dev_words.size() + d.test_words.size() == 700);
  CHECK(std::is_sorted(d.test_words.begin(), d.test_words.end()));
  int64_t pairs = 0;
  for (const std::string& w : d.train_words) {
    CHECK(sg::study::word_set(w, 0, 0.1, 0.05) == sg::study::WordSet::train);
    pairs += static_cast<int64_t>(d.pronunciations.at(w).size());  // every variant of a training word
  }
  for (const std::string& w : d.test_words) CHECK(sg::study::word_set(w, 0, 0.1, 0.05) == sg::study::WordSet::test);
  CHECK(d.train_batch.size() == pairs);
  CHECK(pairs > static_cast<int64_t>(d.train_words.size()));  // some words have two
  CHECK(d.longest_word == 7);
  CHECK(d.longest_pronunciation == 8);
  CHECK(sg::study::pronunciation_steps(d) == 9);
  CHECK(d.train_batch.src.size(1) == 9);
  // split.tsv: a line per pair, its set as word_set says.
  std::istringstream tsv(sg::study::split_tsv(d));
  std::string line;
  std::getline(tsv, line);
  CHECK(line == "word\tset\tpronunciation");
  int64_t lines = 0, all_pairs = 0;
  for (const auto& [w, prons] : d.pronunciations) all_pairs += static_cast<int64_t>(prons.size());
  while (std::getline(tsv, line)) {
    ++lines;
    const std::string word = line.substr(0, line.find('\t'));
    const std::string set = line.substr(line.find('\t') + 1, line.rfind('\t') - line.find('\t') - 1);
    CHECK(set == sg::study::word_set_name(sg::study::word_set(word, 0, 0.1, 0.05)));
  }
  CHECK(lines == all_pairs);
  // A seeded sample of the words.
  c.max_words = 300;
  const sg::study::PronunciationData sample = sg::study::make_pronunciation_data(c);
  CHECK(sample.pronunciations.size() == 300);
  CHECK(sg::study::make_pronunciation_data(c).test_words == sample.test_words);
  // Too few words to fill every set.
  c.max_words = 3;
  REQUIRE_THROWS_WITH(sg::study::make_pronunciation_data(c), Contains("pronunciation") && Contains("every set needs one"));
  c.max_words = 0;
  c.num_steps = 5;
  REQUIRE_THROWS_WITH(sg::study::make_pronunciation_data(c), Contains("num_steps 5") && Contains("7 letters"));
  c.num_steps = 0;
  c.test_fraction = 0.6, c.dev_fraction = 0.5;
  REQUIRE_THROWS_WITH(sg::study::make_pronunciation_data(c), Contains("test_fraction 0.6") && Contains("dev_fraction 0.5"));
  c = small("/nonexistent/dict.out");
  REQUIRE_THROWS_WITH(sg::study::make_pronunciation_data(c), Contains("/nonexistent/dict.out"));
  std::filesystem::remove(dict);
}

TEST_CASE("word and phone error rates, by hand", "[pronunciation]") {
  // Word 1 matches its second pronunciation: right, 0 errors against its 3 phones.
  // Word 2: one substitution against its nearer pronunciation (4 phones), 3 against the other.
  // Word 3: nothing predicted, 2 phones: 2 errors.
  const std::vector<T> preds = {{"l", "iy", "d"}, {"k", "ae", "t", "z"}, {}};
  const std::vector<std::vector<T>> refs = {{{"l", "eh", "d"}, {"l", "iy", "d"}},
                                            {{"b", "ih", "g", "s"}, {"k", "ae", "t", "s"}},
                                            {{"ey", "t"}}};
  const sg::study::PronunciationScores s = sg::study::score_pronunciations(preds, refs);
  CHECK(s.words == 3);
  CHECK(s.wer == Approx(2.0 / 3).epsilon(1e-15));
  CHECK(s.per == Approx((0.0 + 1 + 2) / (3 + 4 + 2)).epsilon(1e-15));
  REQUIRE_THROWS_WITH(sg::study::score_pronunciations({{"a"}}, {}), Contains("1 predictions for 0 words"));
  REQUIRE_THROWS_WITH(sg::study::score_pronunciations({}, {}), Contains("no words"));
  REQUIRE_THROWS_WITH(sg::study::score_pronunciations({{"a"}}, {{}}), Contains("word 0 has no pronunciation"));
}

TEST_CASE("a batch trimmed to its longest pair gives the same loss", "[pronunciation]") {
  const std::string dict = write_dict("smallgrad_g2p_trim.out", 200);
  PronunciationConfig c = small(dict);
  const sg::study::PronunciationData d = sg::study::make_pronunciation_data(c);
  c.num_steps = sg::study::pronunciation_steps(d);
  sg::manual_seed(3);
  auto model = sg::study::make_translator(c, d.letters->size(), d.phones->size());
  model->eval();
  // The shortest pairs: their longest is well under num_steps.
  std::vector<int64_t> rows;
  const std::vector<int64_t> lens = d.train_batch.src_valid_lens.to_vector<int64_t>();
  for (int64_t i = 0; i < d.train_batch.size() && rows.size() < 16; ++i)
    if (lens[static_cast<size_t>(i)] <= 4) rows.push_back(i);
  REQUIRE(rows.size() == 16);
  const sg::text::Seq2SeqBatch full = sg::text::select_rows(d.train_batch, rows);
  const sg::text::Seq2SeqBatch cut = sg::text::trim_padding(full);
  CHECK(cut.src.size(1) == 4);
  CHECK(cut.src.size(1) < full.src.size(1));
  sg::NoGradGuard no_grad;
  const int64_t pad = d.phones->pad();
  const double a = sg::nn::sequence_loss(model->forward(full.src, full.dec_input, full.src_valid_lens), full.labels, pad).item<double>();
  const double b = sg::nn::sequence_loss(model->forward(cut.src, cut.dec_input, cut.src_valid_lens), cut.labels, pad).item<double>();
  CHECK(std::isfinite(a));
  CHECK(std::abs(a - b) <= 1e-5 * std::abs(a));
  std::filesystem::remove(dict);
}

TEST_CASE("a few training steps lower the loss and every test word gets a pronunciation", "[pronunciation]") {
  const std::string dict = write_dict("smallgrad_g2p_train.out", 600);
  PronunciationConfig c = small(dict);
  const sg::study::PronunciationData d = sg::study::make_pronunciation_data(c);
  c.num_steps = sg::study::pronunciation_steps(d);
  sg::manual_seed(1);
  auto model = sg::study::make_translator(c, d.letters->size(), d.phones->size());
  const sg::study::TranslationResult r = sg::study::train_pronunciation(*model, c, d);
  REQUIRE(r.step_loss.size() == 40);
  CHECK(r.curve.size() == 3);  // steps 0, 20, 40
  // The last ten batches' mean loss against the loss before training (one
  // batch's loss is too noisy to compare alone).
  double last = 0;
  for (size_t i = 30; i < 40; ++i) last += r.step_loss[i] / 10;
  INFO("loss before " << r.curve.front().loss << ", last ten batches " << last);
  CHECK(last < 0.8 * r.curve.front().loss);
  const std::vector<sg::study::PronunciationRow> rows = sg::study::evaluate_pronunciation(*model, c, d);
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) {
    CHECK(row.preds.size() == d.test_words.size());
    CHECK(row.scores.words == static_cast<int64_t>(d.test_words.size()));
    CHECK((row.scores.wer >= 0 && row.scores.wer <= 1));
    CHECK(row.scores.per >= 0);
  }
  // pronounce keeps the words' order whatever their lengths.
  const std::vector<std::string> words = {d.test_words[0], "ab", d.test_words[0]};
  const std::vector<T> out = sg::study::pronounce(*model, c, d, words, sg::study::Search::greedy);
  CHECK(out[0] == out[2]);
  CHECK(out[0] == rows[0].preds[0]);
  REQUIRE_THROWS_WITH(sg::study::pronounce(*model, c, d, {"abcdeabcdeab"}, sg::study::Search::greedy),
                      Contains("pronounce: 'abcdeabcdeab' has 12 letters"));
  // The report's files.
  CHECK_THAT(sg::study::pronunciation_results_md(rows, c, d, rows[0].scores), Contains("| greedy |") && Contains("| beam 4 |"));
  CHECK_THAT(sg::study::pronunciation_attention_svg(*model, c, d, d.test_words[0], true), Contains("<svg") && Contains("letters (source)"));
  std::filesystem::remove(dict);
}
