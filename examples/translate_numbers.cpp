// Dive into Deep Learning's Transformer (section 11.7), the whole of it: an
// encoder-decoder trained to translate numbers written in English words
// into French words ("seventy-one" -> "soixante et onze"), offline, on a
// task generated in code. Numbers held out from training are the test set.
//
//   translate_numbers                  one run: the table of exact match,
//                                      token accuracy and BLEU, greedy and
//                                      beam search, every token at its own
//                                      position against d2l's position-0
//                                      decoding; example translations; the
//                                      attention figures and report.html
//   translate_numbers --compare        the kinds of positions side by side,
//                                      --seeds seeds each: mean ± spread
//   translate_numbers --save DIR       one run, and the trained model kept in
//                                      DIR (weights, vocabularies, settings)
//   translate_numbers --load DIR --say "seventy-one"
//                                      a kept model translates (greedy, or
//                                      --search beam --beam 4); --say also
//                                      follows a training run
//
// The study is in study/translation.hpp; this program reads the flags,
// calls it and writes its outputs (staged: a failed or interrupted run
// leaves the output folder as it found it).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include "cli.hpp"
#include "cli11.hpp"  // Flags::app().count: whether --beam was given
#include "study/report.hpp"
#include "study/settings.hpp"
#include "study/translation.hpp"

namespace {

using sg::study::TranslationConfig;

// What a run does with its model besides the study's files.
struct Keep {
  std::string save_dir;  // --save: empty for none
  std::string say;       // --say: empty for none
  sg::study::Search search = sg::study::Search::greedy;
};

// --say's words as the model's source tokens; a word outside the source
// vocabulary, or too many, is the user's mistake (status 2).
sg::text::Tokens say_tokens(const sg::study::Translator& t, const std::string& say) {
  const sg::text::Tokens tokens = sg::study::number_tokens(say);
  if (tokens.empty()) throw examples::UsageError("--say is empty");
  for (const std::string& token : tokens)
    if (!t.src_vocab->contains(token))
      throw examples::UsageError("--say: '" + token + "' is not in the model's source vocabulary (" +
                                 std::to_string(t.src_vocab->size()) + " tokens, e.g. '" +
                                 t.src_vocab->token(t.src_vocab->size() - 1) + "')");
  if (static_cast<int64_t>(tokens.size()) > t.config.num_steps - 1)
    throw examples::UsageError("--say: " + std::to_string(tokens.size()) + " tokens, more than the model's " +
                               std::to_string(t.config.num_steps - 1));
  return tokens;
}

void say(const sg::study::Translator& t, const Keep& keep) {
  const sg::text::Tokens out = sg::study::translate_sentence(t, say_tokens(t, keep.say), keep.search, t.config.beam);
  std::cout << keep.say << " -> " << sg::study::written_form(out) << "  ("
            << sg::study::search_name(keep.search, t.config.beam) << ")\n";
}

int run_one(const TranslationConfig& c, const std::string& out_dir, const Keep& keep) {
  examples::Outputs out(out_dir, "--out");
  std::unique_ptr<examples::Outputs> saved;
  if (!keep.save_dir.empty()) {
    saved = std::make_unique<examples::Outputs>(keep.save_dir, "--save");
    for (const char* f : sg::study::kTranslatorFiles) saved->expect(f);
  }
  for (const char* f : {"settings.md", "results.md", "translations.md", "curve.svg", "curve.csv"}) out.expect(f);
  const sg::study::TranslationData d = sg::study::make_translation_data(c);
  // The attention figures: two held-out numbers with tricky French, the
  // longest, and the first with "et" or quatre-vingt(s) (71, 80, 81, 91 after the hundreds).
  const std::vector<int64_t> tricky = sg::study::tricky_held_out(d, 1000);
  std::vector<int64_t> shown;
  if (!tricky.empty())
    shown.push_back(*std::max_element(tricky.begin(), tricky.end(), [](int64_t a, int64_t b) {
      return sg::study::number_tokens(sg::study::french_words(a)).size() <
             sg::study::number_tokens(sg::study::french_words(b)).size();
    }));
  for (int64_t n : tricky)
    if (shown.size() < 2 && n != shown[0] && (n % 100 == 71 || n % 100 == 80 || n % 100 == 81 || n % 100 == 91))
      shown.push_back(n);
  for (int64_t n : shown)
    out.expect("cross_attention_" + std::to_string(n) + ".svg"), out.expect("self_attention_" + std::to_string(n) + ".svg");
  out.write("settings.md", sg::study::translation_settings_md(c, d));
  sg::manual_seed(c.seed);
  auto model = sg::study::make_translator(c, d);
  int64_t parameters = 0;
  for (const sg::Tensor& p : model->parameters()) parameters += p.numel();
  std::cout << "training " << d.train.numbers.size() << " numbers, " << d.test.numbers.size()
            << " held out; encoder-decoder " << c.blocks << "+" << c.blocks << " blocks, width " << c.hidden << ", "
            << sg::nn::positional_name(c.positional) << " positions, " << parameters << " parameters" << std::endl;
  const auto progress = examples::seq2seq_progress("held-out exact match");

  const sg::study::TranslationResult r = sg::study::train_translation(*model, c, d, progress, &examples::g_stop);
  const std::vector<sg::study::DecodingRow> rows = sg::study::evaluate_decodings(*model, c, d, &examples::g_stop);
  const double train_exact =
      sg::study::exact_match(sg::study::translate(*model, d, d.train_batch, sg::study::Search::greedy,
                                                  sg::nn::DecodingMode::cached),
                             d.train.french);
  const std::string results = sg::study::results_md(rows, c, d, train_exact);
  const std::string examples = sg::study::examples_md(*model, c, d);
  out.write("results.md", results);
  out.write("translations.md", examples);
  out.write("curve.svg", sg::study::translation_curve_svg(r, "Training: English to French number words"));
  out.write("curve.csv", sg::study::translation_curve_csv(r));
  for (int64_t n : shown) {
    out.write("cross_attention_" + std::to_string(n) + ".svg", sg::study::attention_svg(*model, c, d, n, true));
    out.write("self_attention_" + std::to_string(n) + ".svg", sg::study::attention_svg(*model, c, d, n, false));
  }
  if (saved)
    sg::study::save_translator(*model, c, *d.src_vocab, *d.tgt_vocab,
                               [&](const std::string& name) { return saved->stage(name); });
  out.commit();
  if (saved) saved->commit();
  const std::string report = sg::study::report::write_report(out.dir(), "translate_numbers: English to French");
  std::cout << "\ntrained " << c.steps << " steps in " << sg::study::fmt("%.1f", r.seconds) << " s\n\n"
            << results << "\n" << examples << "\nwrote " << out.dir() << "/\nreport: " << report << "  ("
            << sg::study::file_url(report) << ")\n";
  if (saved) std::cout << "model: " << saved->dir() << "/ (--load " << saved->dir() << " --say \"...\")\n";
  if (!keep.say.empty()) {
    sg::study::Translator t{c, d.src_vocab, d.tgt_vocab, nullptr};
    t.model.reset(model.release());
    say(t, keep);
  }
  return 0;
}

int compare(const TranslationConfig& c, const std::vector<sg::nn::Positional>& kinds, int64_t seeds,
            const std::string& out_dir) {
  examples::Outputs out(out_dir, "--out");
  for (const char* f : {"settings.md", "results.md", "curve.svg"}) out.expect(f);
  const sg::study::TranslationData d = sg::study::make_translation_data(c);
  std::vector<sg::study::TranslationJob> jobs;
  for (sg::nn::Positional k : kinds)
    for (int64_t s = 0; s < seeds; ++s) {
      TranslationConfig jc = c;
      jc.positional = k;
      jc.seed = c.seed + static_cast<uint64_t>(s);
      sg::study::check_config(jc);
      jobs.push_back({jc, std::string(sg::nn::positional_name(k)) + " seed " + std::to_string(jc.seed), {}, {}});
    }
  std::string kind_names, seed_names;
  for (sg::nn::Positional k : kinds) kind_names += (kind_names.empty() ? "" : ", ") + std::string(sg::nn::positional_name(k));
  for (int64_t s = 0; s < seeds; ++s) seed_names += (s ? ", " : "") + std::to_string(c.seed + static_cast<uint64_t>(s));
  out.write("settings.md", sg::study::translation_settings_md(c, d, kind_names, seed_names));
  const auto start = std::chrono::steady_clock::now();
  sg::study::run_translations(jobs, d, &examples::g_stop);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string table = sg::study::compare_md(jobs);
  out.write("results.md", table);
  out.write("curve.svg", sg::study::compare_curve_svg(jobs));
  out.commit();
  const std::string report = sg::study::report::write_report(out.dir(), "translate_numbers --compare");
  std::cout << "\n" << jobs.size() << " runs in " << sg::study::fmt("%.0f", seconds) << " s\n\n"
            << table << "\nwrote " << out.dir() << "/\nreport: " << report << "  (" << sg::study::file_url(report)
            << ")\n";
  return 0;
}

std::vector<sg::nn::Positional> parse_kinds(const std::string& list) {
  std::vector<sg::nn::Positional> kinds;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    try {
      kinds.push_back(sg::nn::parse_positional(name));
    } catch (const sg::Error& e) {
      throw examples::UsageError(std::string("--positionals: ") + e.what());
    }
  }
  if (kinds.empty()) throw examples::UsageError("--positionals names no kind of positions");
  return kinds;
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{
      "Train d2l's encoder-decoder Transformer to translate numbers in English words into French words,\n"
      "and score it on numbers held out from training (or compare kinds of positions: --compare)."};
  TranslationConfig c;
  const std::string all_kinds = "none,sinusoidal,learned,relative,rotary,alibi";
  std::string out = "out/translate", positional = "sinusoidal", positionals = all_kinds;
  int64_t seed = 0, seeds = 3;
  bool do_compare = false;
  int threads = 0;
  Keep keep;
  std::string load, search = "greedy";
  flags.folder("--out", out, "output folder (--compare: its results go in <out>/compare)");
  flags.choice("--positional", positional, "kind of positions (one run)", sg::nn::positional_names());
  flags.flag("--compare", do_compare, "train every kind of --positionals, --seeds seeds each, side by side");
  flags.text("--positionals", positionals, "--compare: kinds of positions, comma-separated");
  flags.whole("--seeds", seeds, "--compare: seeds per kind (--seed, --seed + 1, ...)", 1, 100);
  flags.whole("--max-number", c.max_number, "the numbers 0..N (up to 999999; past 999, held out by digit length)", 9,
              sg::study::kNumberWordsMax);
  flags.whole("--test-cap", c.test_cap, "past 999: at most this many held-out numbers per digit length", 1, 1000000);
  flags.whole("--train-cap", c.train_cap, "past 999: at most this many training numbers per digit length", 1, 1000000);
  examples::seq2seq_flags(flags, c, "sentence pairs");
  flags.number("--test-fraction", c.test_fraction, "fraction of the numbers held out", 0, false, 0.9);
  flags.whole("--eval-every", c.eval_every, "steps between decodings of the held-out numbers", 1, 10000000);
  flags.whole("--seed", seed, "random seed (weights, dropout, batch order)", 0, std::numeric_limits<int64_t>::max());
  flags.folder("--save", keep.save_dir, "one run: keep the trained model in this folder (weights, vocabularies, settings)");
  flags.folder("--load", load, "translate --say with a model kept by --save (no training)");
  flags.text("--say", keep.say, "words to translate after training, or with --load (\"seventy-one\")");
  flags.choice("--search", search, "--say's decoding (beam: --beam wide)", {"greedy", "beam"});
  flags.threads(threads);
  return examples::run(flags, argc, argv, [&]() -> int {
    examples::apply_threads(threads);
    keep.search = search == "beam" ? sg::study::Search::beam : sg::study::Search::greedy;
    if (!load.empty()) {
      if (keep.say.empty()) throw examples::UsageError("--load needs --say \"words to translate\"");
      if (do_compare || !keep.save_dir.empty())
        throw examples::UsageError(std::string(do_compare ? "--compare" : "--save") + " does not go with --load");
      sg::study::Translator t = sg::study::load_translator(load);
      if (flags.app().count("--beam")) t.config.beam = c.beam;
      say(t, keep);
      return 0;
    }
    if (do_compare && (!keep.save_dir.empty() || !keep.say.empty()))
      throw examples::UsageError(std::string(keep.say.empty() ? "--save" : "--say") + " applies to one run, not --compare");
    c.seed = static_cast<uint64_t>(seed);
    c.positional = sg::nn::parse_positional(positional);
    // Every French number and its <eos> (past 999 the default 12 is too short).
    c.num_steps = std::max<int64_t>(c.num_steps, sg::study::longest_french(c.max_number) + 1);
    if (c.min_lr > c.lr)
      throw examples::UsageError("--min-lr " + sg::study::fmt("%g", c.min_lr) + " is above the peak --lr " +
                                 sg::study::fmt("%g", c.lr));
    if (c.hidden % c.heads != 0)
      throw examples::UsageError("--hidden " + std::to_string(c.hidden) + " is not a multiple of --heads " +
                                 std::to_string(c.heads));
    if (!do_compare && (positionals != all_kinds || seeds != 3))
      throw examples::UsageError(std::string(seeds != 3 ? "--seeds" : "--positionals") + " applies to --compare only");
    if (!do_compare) {
      try {
        sg::study::check_config(c);
      } catch (const sg::Error& e) {
        throw examples::UsageError(e.what());
      }
      return run_one(c, out, keep);
    }
    const std::vector<sg::nn::Positional> kinds = parse_kinds(positionals);
    for (sg::nn::Positional k : kinds) {
      TranslationConfig kc = c;
      kc.positional = k;
      try {
        sg::study::check_config(kc);
      } catch (const sg::Error& e) {
        throw examples::UsageError(e.what());
      }
    }
    return compare(c, kinds, seeds, out + "/compare");
  });
}
