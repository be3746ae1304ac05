// Spelling to pronunciation on real data: d2l's encoder-decoder Transformer
// (section 11.7) trained on the CMU pronouncing dictionary that Debian's
// festlex-cmu ships (about 106,000 entries), letters in, phones out, and
// scored on words it has never seen: word error rate and phone error rate,
// greedy and beam search, example pronunciations, the cross-attention of
// letters against phones, and report.html.
//
//   pronounce                          the default run (about ten minutes on 2 cores)
//   pronounce --say "smallgrad gradient"
//                                      the same, then these words pronounced
//   pronounce --max-words 3000 --steps 300
//                                      a quick run on a sample of the words
//
// The same split, as split.tsv in the output folder, is what
// scripts/pronounce_torch.py trains PyTorch's model on, for the side by
// side comparison. The study is in study/pronunciation.hpp.
#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include "cli.hpp"
#include "study/pronunciation.hpp"
#include "study/report.hpp"
#include "study/settings.hpp"

namespace {

using sg::study::PronunciationConfig;

// A word as a file name's part: its letters and digits, '_' for anything else.
std::string file_part(const std::string& word) {
  std::string s = word;
  for (char& ch : s)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))) ch = '_';
  return s;
}

// --say's words, lower-cased, each checked against the model's letters and length.
std::vector<std::string> say_words(const std::string& say, const sg::study::PronunciationData& d, int64_t num_steps) {
  std::vector<std::string> words;
  std::istringstream in(say);
  for (std::string w; in >> w;) {
    for (char& ch : w)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    for (char ch : w)
      if (!d.letters->contains(std::string(1, ch)))
        throw examples::UsageError("--say: '" + w + "' has '" + std::string(1, ch) +
                                   "', not among the letters the model was trained on");
    if (static_cast<int64_t>(w.size()) > num_steps - 1)
      throw examples::UsageError("--say: '" + w + "' has " + std::to_string(w.size()) + " letters, more than the model's " +
                                 std::to_string(num_steps - 1));
    words.push_back(w);
  }
  if (words.empty()) throw examples::UsageError("--say names no word");
  return words;
}

// Two test words of 7 to 10 letters, a third and two thirds through the
// alphabet: the attention figures'.
std::vector<std::string> figure_words(const sg::study::PronunciationData& d) {
  std::vector<std::string> mid;
  for (const std::string& w : d.test_words)
    if (w.size() >= 7 && w.size() <= 10) mid.push_back(w);
  if (mid.empty()) mid = d.test_words;
  std::vector<std::string> shown = {mid[mid.size() / 3]};
  if (mid.size() > 1 && mid[2 * mid.size() / 3] != shown[0]) shown.push_back(mid[2 * mid.size() / 3]);
  return shown;
}

int run(PronunciationConfig c, const std::string& out_dir, const std::string& say) {
  examples::Outputs out(out_dir, "--out");
  const sg::study::PronunciationData d = sg::study::make_pronunciation_data(c);
  if (c.num_steps == 0) c.num_steps = sg::study::pronunciation_steps(d);
  const std::vector<std::string> said = say.empty() ? std::vector<std::string>{} : say_words(say, d, c.num_steps);
  const std::vector<std::string> shown = figure_words(d);
  for (const char* f : {"settings.md", "results.md", "words.md", "curve.svg", "curve.csv", "split.tsv"})
    out.expect(f);
  for (const std::string& w : shown) out.expect("attention_cross_" + file_part(w) + ".svg");
  sg::manual_seed(c.seed);
  auto model = sg::study::make_translator(c, d.letters->size(), d.phones->size());
  int64_t parameters = 0;
  for (const sg::Tensor& p : model->parameters()) parameters += p.numel();
  out.write("settings.md", sg::study::pronunciation_settings_md(c, d, parameters));
  out.write("split.tsv", sg::study::split_tsv(d));
  std::cout << "training on " << d.train_words.size() << " words (" << d.train_batch.size() << " pronunciations), "
            << d.test_words.size() << " held out for the test, " << d.dev_words.size()
            << " for the curve; encoder-decoder " << c.blocks << "+" << c.blocks << " blocks, width " << c.hidden
            << ", " << parameters << " parameters" << std::endl;
  const auto progress = examples::seq2seq_progress("dev words right");

  const sg::study::TranslationResult r = sg::study::train_pronunciation(*model, c, d, progress, &examples::g_stop);
  const std::vector<sg::study::PronunciationRow> rows = sg::study::evaluate_pronunciation(*model, c, d, &examples::g_stop);
  // The training words' scores, on as many as there are test words (at most), spread over them.
  std::vector<std::string> sample;
  const size_t n = std::min(d.train_words.size(), d.test_words.size());
  for (size_t i = 0; i < n; ++i) sample.push_back(d.train_words[i * d.train_words.size() / n]);
  const sg::study::PronunciationScores train_scores =
      sg::study::score_words(d, sample, sg::study::pronounce(*model, c, d, sample, sg::study::Search::greedy, &examples::g_stop));
  const std::string results = sg::study::pronunciation_results_md(rows, c, d, train_scores);
  std::string examples = sg::study::pronunciation_examples_md(*model, c, d, rows[0]);
  if (!said.empty()) examples += "\nWords asked for with --say:\n\n" + sg::study::pronunciations_md(*model, c, d, said);
  out.write("results.md", results);
  out.write("words.md", examples);
  out.write("curve.svg", sg::study::translation_curve_svg(r, "Training: spelling to pronunciation (CMU dictionary)"));
  out.write("curve.csv", sg::study::translation_curve_csv(r));
  for (const std::string& w : shown)
    out.write("attention_cross_" + file_part(w) + ".svg", sg::study::pronunciation_attention_svg(*model, c, d, w, true));
  out.commit();
  const std::string report = sg::study::report::write_report(out.dir(), "pronounce: spelling to pronunciation");
  std::cout << "\ntrained " << c.steps << " steps in " << sg::study::fmt("%.1f", r.seconds) << " s\n\n"
            << results << "\n";
  // The first test words of the examples' table, as a taste of it.
  std::vector<std::string> taste;
  for (size_t i = 0; i < 8 && i < d.test_words.size(); ++i)
    taste.push_back(d.test_words[i * d.test_words.size() / 8]);
  std::cout << "Some test words:\n\n" << sg::study::pronunciations_md(*model, c, d, taste);
  if (!said.empty()) std::cout << "\n" << sg::study::pronunciations_md(*model, c, d, said);
  std::cout << "\nwrote " << out.dir() << "/ (every table in words.md)\nreport: " << report << "  ("
            << sg::study::file_url(report) << ")\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{
      "Train d2l's encoder-decoder Transformer to pronounce words (letters to phones) on the CMU pronouncing\n"
      "dictionary, and score it on words held out from training."};
  PronunciationConfig c;
  std::string out = "out/pronounce", positional = "sinusoidal", say;
  int64_t seed = 0, split_seed = 0;
  int threads = 0;
  flags.text("--dict", c.dict, "the dictionary, in Festival's lexicon format (festlex-cmu's)");
  flags.folder("--out", out, "output folder");
  flags.flag("--stress", c.stress, "vowels carry their syllable's stress (aa1, ax0)");
  flags.whole("--max-words", c.max_words, "only a seeded sample of this many words (0: every word)", 0, 10000000);
  flags.number("--test-fraction", c.test_fraction, "fraction of the words held out for the test", 0, false, 0.9);
  flags.number("--dev-fraction", c.dev_fraction, "fraction of the words held out for the training curve", 0, false, 0.5);
  flags.whole("--eval-words", c.eval_words, "dev words decoded at each evaluation", 1, 10000000);
  examples::seq2seq_flags(flags, c, "pronunciations");
  flags.choice("--positional", positional, "kind of positions", sg::nn::positional_names());
  flags.whole("--eval-every", c.eval_every, "steps between decodings of the dev words", 1, 10000000);
  flags.whole("--seed", seed, "random seed (weights, dropout, batch order)", 0, std::numeric_limits<int64_t>::max());
  flags.whole("--split-seed", split_seed, "which words are held out", 0, std::numeric_limits<int64_t>::max());
  flags.text("--say", say, "words to pronounce after training, separated by spaces (\"smallgrad gradient\")");
  flags.threads(threads);
  return examples::run(flags, argc, argv, [&]() -> int {
    examples::apply_threads(threads);
    c.seed = static_cast<uint64_t>(seed);
    c.split_seed = static_cast<uint64_t>(split_seed);
    c.positional = sg::nn::parse_positional(positional);
    if (c.min_lr > c.lr)
      throw examples::UsageError("--min-lr " + sg::study::fmt("%g", c.min_lr) + " is above the peak --lr " +
                                 sg::study::fmt("%g", c.lr));
    if (c.test_fraction + c.dev_fraction >= 1)
      throw examples::UsageError("--test-fraction " + sg::study::fmt("%g", c.test_fraction) + " and --dev-fraction " +
                                 sg::study::fmt("%g", c.dev_fraction) + " leave no word for training");
    try {
      sg::study::check_config(c);
    } catch (const sg::Error& e) {
      throw examples::UsageError(e.what());
    }
    return run(c, out, say);
  });
}
