// study/translation.hpp: the metrics against values worked out by hand, the
// data and its split, the held-out numbers picked for the examples, the
// settings' checks, a few training steps that lower the loss, and a kept
// model's folder (save, load, damage).
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/random.hpp"
#include "checkpoint/checkpoint.hpp"
#include "study/translation.hpp"
#include "text/bleu.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "test_util.hpp"

using Catch::Contains;
using T = sg::text::Tokens;

namespace {
std::vector<T> one(const T& t) { return std::vector<T>(1, t); }  // a list of one sentence
}  // namespace

TEST_CASE("exact match and token accuracy, by hand", "[translation]") {
  // Pair 1 right; pair 2 one token of three right (a missing one counts as
  // wrong); pair 3 an empty prediction against one token.
  const std::vector<T> preds = {{"a", "b", "c"}, {"a", "x"}, {}};
  const std::vector<T> refs = {{"a", "b", "c"}, {"a", "b", "c"}, {"d"}};
  CHECK(sg::study::exact_match(preds, refs) == Approx(1.0 / 3));
  CHECK(sg::study::token_accuracy(preds, refs) == Approx(4.0 / 7));  // (3 + 1 + 0) / (3 + 3 + 1)
  // A prediction shifted by one token: nothing at its place; the extra token counts.
  CHECK(sg::study::token_accuracy(one({"x", "a", "b"}), one({"a", "b"})) == 0.0);
  CHECK(sg::study::token_accuracy(one({"a", "b", "z"}), one({"a", "b"})) == Approx(2.0 / 3));
  CHECK(sg::study::exact_match(one({"a", "b", "z"}), one({"a", "b"})) == 0.0);
  CHECK(sg::study::token_accuracy(one({}), one({})) == 0.0);
  CHECK(sg::study::exact_match(one({}), one({})) == 1.0);
}

TEST_CASE("translation scores: perfect, and d2l's BLEU averaged", "[translation]") {
  const std::vector<T> refs = {{"deux", "cent", "quatre", "-", "vingts"}, {"cent", "soixante", "et", "onze"}};
  const sg::study::Scores perfect = sg::study::score(refs, refs);
  CHECK(perfect.exact == 1.0);
  CHECK(perfect.token_accuracy == 1.0);
  CHECK(perfect.bleu2 == Approx(1.0));
  CHECK(perfect.bleu4 == Approx(1.0));
  // "quatre - vingt - un" for "quatre - vingt - onze": 4 of 5 unigrams and 3 of 4
  // bigrams match, same length: d2l's k = 2 gives (4/5)^(1/2) (3/4)^(1/4).
  const std::vector<T> pred = one({"quatre", "-", "vingt", "-", "un"}), ref = one({"quatre", "-", "vingt", "-", "onze"});
  const sg::study::Scores s = sg::study::score(pred, ref);
  CHECK(s.exact == 0.0);
  CHECK(s.token_accuracy == Approx(0.8));
  CHECK(s.bleu2 == Approx(std::sqrt(0.8) * std::pow(0.75, 0.25)));
  CHECK(s.bleu4 == Approx(sg::text::corpus_bleu(pred, ref, 4)));
}

TEST_CASE("translation metrics reject mismatched lists", "[translation]") {
  CHECK_THROWS_WITH(sg::study::exact_match(one({"a"}), {}), Contains("exact_match: 1 predictions for 0 references"));
  CHECK_THROWS_WITH(sg::study::token_accuracy({}, std::vector<T>(2, T{"a"})),
                    Contains("token_accuracy: 0 predictions for 2 references"));
  CHECK_THROWS_WITH(sg::study::exact_match({}, {}), Contains("exact_match: no pairs"));
}

TEST_CASE("translation data: the split, the vocabularies, the tensors", "[translation]") {
  const sg::study::TranslationConfig c;
  const sg::study::TranslationData d = sg::study::make_translation_data(c);
  CHECK(d.train.numbers.size() == 800);
  CHECK(d.test.numbers.size() == 200);
  for (int64_t n : d.test.numbers) CHECK_FALSE(std::binary_search(d.train.numbers.begin(), d.train.numbers.end(), n));
  CHECK(d.train_batch.src.shape() == sg::Shape{800, c.num_steps});
  CHECK(d.test_batch.labels.shape() == sg::Shape{200, c.num_steps});
  // Every held-out French word was seen in training (none becomes <unk>).
  for (const T& f : d.test.french)
    for (const std::string& w : f) CHECK(d.tgt_vocab->contains(w));
  // The longest French number, with <eos>, fits num_steps: no label is truncated.
  for (int64_t len : d.train_batch.tgt_valid_lens.to_vector<int64_t>()) CHECK(len < c.num_steps);
}

TEST_CASE("held-out numbers with tricky French", "[translation]") {
  const sg::study::TranslationData d = sg::study::make_translation_data({});
  const std::vector<int64_t> all = sg::study::tricky_held_out(d, 1000), some = sg::study::tricky_held_out(d, 5);
  REQUIRE(all.size() > 5);
  CHECK(some.size() == 5);
  for (int64_t n : all) {
    INFO("n = " << n);
    CHECK(std::binary_search(d.test.numbers.begin(), d.test.numbers.end(), n));
    const int64_t last = n % 100;
    CHECK(((n > 100 && last <= 1) || last >= 70 || (last % 10 == 1 && last >= 21)));
  }
  for (int64_t n : some) CHECK(std::find(all.begin(), all.end(), n) != all.end());
  CHECK(std::is_sorted(some.begin(), some.end()));
}

TEST_CASE("translation settings the model cannot take", "[translation]") {
  sg::study::TranslationConfig c;
  c.hidden = 10, c.heads = 4;
  CHECK_THROWS_WITH(sg::study::check_config(c), Contains("hidden 10 is not a multiple of heads 4"));
  c.hidden = 12, c.heads = 4, c.positional = sg::nn::Positional::rotary;
  CHECK_THROWS_WITH(sg::study::check_config(c), Contains("rotary positions need an even head width"));
  c = {};
  c.min_lr = 1, c.lr = 0.1;
  CHECK_THROWS_WITH(sg::study::check_config(c), Contains("min_lr 1"));
}

TEST_CASE("a few training steps lower the loss and translate every held-out number", "[translation]") {
  sg::study::TranslationConfig c;
  c.hidden = 16, c.ffn = 32, c.heads = 2, c.blocks = 1, c.steps = 30, c.batch = 32, c.warmup = 5, c.eval_every = 30;
  const sg::study::TranslationData d = sg::study::make_translation_data(c);
  sg::manual_seed(0);
  const auto model = sg::study::make_translator(c, d);
  const sg::study::TranslationResult r = sg::study::train_translation(*model, c, d);
  REQUIRE(r.step_loss.size() == 30);
  REQUIRE(r.curve.size() == 2);  // step 0 and the last
  CHECK(r.step_loss.back() < 0.8 * r.curve.front().loss);
  CHECK_FALSE(model->is_training());
  const auto rows = sg::study::evaluate_decodings(*model, c, d);
  REQUIRE(rows.size() == 4);
  for (const auto& row : rows) {
    CHECK(row.preds.size() == d.test.numbers.size());
    for (const T& p : row.preds) CHECK(static_cast<int64_t>(p.size()) <= c.num_steps);
    CHECK(row.scores.exact == sg::study::exact_match(row.preds, d.test.french));
  }
}

TEST_CASE("a kept translator loads back whole and translates as before", "[translation][checkpoint]") {
  sg::study::TranslationConfig c;
  c.hidden = 16, c.ffn = 24, c.heads = 2, c.blocks = 1, c.dropout = 0.25, c.lr = 0.002, c.seed = 7, c.beam = 3;
  const sg::study::TranslationData d = sg::study::make_translation_data(c);
  sg::manual_seed(3);
  const auto model = sg::study::make_translator(c, d);
  model->eval();
  test_util::TempDir dir;
  const std::string folder = dir.path.string();
  sg::study::save_translator(*model, c, *d.src_vocab, *d.tgt_vocab,
                             [&](const std::string& name) { return folder + "/" + name; });
  const sg::study::Translator t = sg::study::load_translator(folder);
  CHECK(sg::study::translator_metadata(t.config) == sg::study::translator_metadata(c));
  CHECK(t.src_vocab->idx_to_token() == d.src_vocab->idx_to_token());
  CHECK(t.tgt_vocab->idx_to_token() == d.tgt_vocab->idx_to_token());
  CHECK_FALSE(t.model->is_training());
  const sg::nn::StateDict a = model->state_dict(), b = t.model->state_dict();
  REQUIRE(a.size() == b.size());
  for (const auto& [name, x] : a) {
    INFO(name);
    REQUIRE(b.count(name) == 1);
    CHECK(x.to_vector<double>() == b.at(name).to_vector<double>());
  }
  // One sentence at a time, greedy and beam, as the batch's translations.
  for (sg::study::Search s : {sg::study::Search::greedy, sg::study::Search::beam}) {
    const std::vector<T> batch = sg::study::translate(*model, d, d.test_batch, s, sg::nn::DecodingMode::cached, 3);
    for (size_t i = 0; i < 5; ++i) {
      INFO(d.test.numbers[i]);
      CHECK(sg::study::translate_sentence(t, d.test.english[i], s, 3) == batch[i]);
    }
  }
  CHECK_THROWS_WITH(sg::study::translate_sentence(t, {"seventy", "-", "zillion"}, sg::study::Search::greedy),
                    Contains("'zillion' is not in the source vocabulary"));
  CHECK_THROWS_WITH(sg::study::translate_sentence(t, T(12, "one"), sg::study::Search::greedy),
                    Contains("the source has 12 tokens, more than the model's 11"));
}

TEST_CASE("a damaged or mismatched translator folder is refused, naming the file", "[translation][checkpoint]") {
  sg::study::TranslationConfig c;
  c.hidden = 8, c.ffn = 8, c.heads = 2, c.blocks = 1;
  const sg::study::TranslationData d = sg::study::make_translation_data(c);
  const auto model = sg::study::make_translator(c, d);
  auto fresh = [&](const test_util::TempDir& dir) {
    sg::study::save_translator(*model, c, *d.src_vocab, *d.tgt_vocab,
                               [&](const std::string& name) { return dir.path.string() + "/" + name; });
    return dir.path.string();
  };
  auto write = [](const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; };
  {
    test_util::TempDir dir;
    const std::string f = fresh(dir);
    std::filesystem::resize_file(f + "/model.safetensors", std::filesystem::file_size(f + "/model.safetensors") - 9);
    CHECK_THROWS_WITH(sg::study::load_translator(f), Contains(f + "/model.safetensors"));
  }
  {
    test_util::TempDir dir;
    const std::string f = fresh(dir);
    std::string vocab;
    for (const std::string& tok : d.tgt_vocab->idx_to_token()) vocab += tok + "\n";
    // The vocabularies' checksums (in the weights' metadata) refuse any change.
    write(f + "/target_vocab.txt", vocab + "extra\n");
    CHECK_THROWS_WITH(sg::study::load_translator(f),
                      Contains(f + "/target_vocab.txt' fails its CRC-32C check") && Contains("the file is damaged"));
  }
  {
    // A folder saved before the vocabularies had checksums: the checks behind them.
    test_util::TempDir dir;
    const std::string f = fresh(dir);
    sg::checkpoint::save(f + "/model.safetensors", *model, nullptr, sg::study::translator_metadata(c));
    std::string vocab;
    for (const std::string& tok : d.tgt_vocab->idx_to_token()) vocab += tok + "\n";
    REQUIRE_NOTHROW(sg::study::load_translator(f));
    write(f + "/target_vocab.txt", vocab + "extra\n");  // one token more than the weights
    CHECK_THROWS_WITH(sg::study::load_translator(f), Contains("model.safetensors") && Contains("has shape"));
    write(f + "/target_vocab.txt", vocab + "<eos>\n");
    CHECK_THROWS_WITH(sg::study::load_translator(f), Contains("target_vocab.txt") && Contains("'<eos>' is given twice"));
    std::filesystem::remove(f + "/source_vocab.txt");
    CHECK_THROWS_WITH(sg::study::load_translator(f), Contains("cannot read '" + f + "/source_vocab.txt'"));
  }
  CHECK_THROWS_WITH(sg::study::load_translator("/nonexistent/folder"), Contains("'/nonexistent/folder' is not a folder"));
}

TEST_CASE("the whole range: held out by digit length, every French word seen, num_steps checked", "[translation]") {
  CHECK(sg::study::longest_french(999) == 9);      // quatre - vingt - dix - sept after "x cent"
  CHECK(sg::study::longest_french(999999) == 19);  // 997,997 and the like
  sg::study::TranslationConfig c;
  c.max_number = 999999, c.test_cap = 300, c.train_cap = 3000;
  CHECK_THROWS_WITH(sg::study::make_translation_data(c), Contains("too many for num_steps 12"));
  c.num_steps = 20;
  const sg::study::TranslationData d = sg::study::make_translation_data(c);
  const sg::study::LengthScores counts = sg::study::exact_by_length(d.test.numbers, d.test.french, d.test.french);
  CHECK(counts.count == std::vector<int64_t>{0, 2, 18, 180, 300, 300, 300});
  CHECK(counts.exact == std::vector<double>{0, 1, 1, 1, 1, 1, 1});
  CHECK(d.train.numbers.size() == 8 + 72 + 720 + 3000 * 3);
  for (const T& f : d.test.french)
    for (const std::string& w : f) CHECK(d.tgt_vocab->contains(w));
  CHECK(d.tgt_vocab->contains("mille"));
  CHECK_FALSE(d.tgt_vocab->contains("milles"));
  // Exact match per length, by hand: of the two 1-digit numbers one wrong.
  std::vector<T> preds = d.test.french;
  preds[0] = {"faux"};
  const sg::study::LengthScores s = sg::study::exact_by_length(d.test.numbers, preds, d.test.french);
  CHECK(s.exact[1] == 0.5);
  CHECK(s.exact[6] == 1.0);
}
