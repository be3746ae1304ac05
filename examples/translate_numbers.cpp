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
//
// The study is in study/translation.hpp; this program reads the flags,
// calls it and writes its outputs (staged: a failed or interrupted run
// leaves the output folder as it found it).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <iostream>
#include <limits>
#include <sstream>

#include "cli.hpp"
#include "study/report.hpp"
#include "study/settings.hpp"
#include "study/translation.hpp"

namespace {

using sg::study::TranslationConfig;

int run_one(const TranslationConfig& c, const std::string& out_dir) {
  examples::Outputs out(out_dir, "--out");
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
  const auto model = sg::study::make_translator(c, d);
  int64_t parameters = 0;
  for (const sg::Tensor& p : model->parameters()) parameters += p.numel();
  std::cout << "training " << d.train.numbers.size() << " numbers, " << d.test.numbers.size()
            << " held out; encoder-decoder " << c.blocks << "+" << c.blocks << " blocks, width " << c.hidden << ", "
            << sg::nn::positional_name(c.positional) << " positions, " << parameters << " parameters" << std::endl;
  const bool tty = isatty(2);
  auto progress = [tty](int64_t step, int64_t steps, double loss, double exact, double, double left) {
    std::fprintf(stderr, "%sstep %lld/%lld  loss %.4f  held-out exact match %.3f  %.0f s left%s", tty ? "\r" : "",
                 static_cast<long long>(step), static_cast<long long>(steps), loss, exact, left,
                 tty && step < steps ? "   " : "\n");
  };
  const sg::study::TranslationResult r = sg::study::train_translation(*model, c, d, progress, &examples::g_stop);
  const std::vector<sg::study::DecodingRow> rows = sg::study::evaluate_decodings(*model, c, d);
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
  out.commit();
  const std::string report = sg::study::report::write_report(out.dir(), "translate_numbers: English to French");
  std::cout << "\ntrained " << c.steps << " steps in " << sg::study::fmt("%.1f", r.seconds) << " s\n\n"
            << results << "\n" << examples << "\nwrote " << out.dir() << "/\nreport: " << report << "  ("
            << sg::study::file_url(report) << ")\n";
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
  const double inf = std::numeric_limits<double>::infinity();
  flags.folder("--out", out, "output folder (--compare: its results go in <out>/compare)");
  flags.choice("--positional", positional, "kind of positions (one run)", sg::nn::positional_names());
  flags.flag("--compare", do_compare, "train every kind of --positionals, --seeds seeds each, side by side");
  flags.text("--positionals", positionals, "--compare: kinds of positions, comma-separated");
  flags.whole("--seeds", seeds, "--compare: seeds per kind (--seed, --seed + 1, ...)", 1, 100);
  flags.whole("--steps", c.steps, "training steps", 1, 10000000);
  flags.whole("--batch", c.batch, "sentence pairs per batch", 1, 65536);
  flags.number("--lr", c.lr, "peak learning rate (AdamW)", 0, false, 10);
  flags.number("--min-lr", c.min_lr, "final learning rate of the cosine decay", 0, true, 10);
  flags.whole("--warmup", c.warmup, "warm-up steps", 0, 10000000);
  flags.number("--dropout", c.dropout, "dropout probability", 0, true, 0.99);
  flags.number("--weight-decay", c.weight_decay, "AdamW weight decay", 0, true, inf);
  flags.whole("--hidden", c.hidden, "model width", 2, 4096);
  flags.whole("--ffn", c.ffn, "width of the position-wise FFN", 1, 65536);
  flags.whole("--heads", c.heads, "attention heads", 1, 64);
  flags.whole("--blocks", c.blocks, "blocks of the encoder, and of the decoder", 1, 64);
  flags.flag("--pre-norm", c.pre_norm, "pre-norm blocks (layer norm before attention and FFN)");
  flags.whole("--beam", c.beam, "beam width of the beam-search rows", 1, 64);
  flags.number("--test-fraction", c.test_fraction, "fraction of the numbers held out", 0, false, 0.9);
  flags.whole("--eval-every", c.eval_every, "steps between decodings of the held-out numbers", 1, 10000000);
  flags.whole("--seed", seed, "random seed (weights, dropout, batch order)", 0, std::numeric_limits<int64_t>::max());
  flags.threads(threads);
  return examples::run(flags, argc, argv, [&]() -> int {
    examples::apply_threads(threads);
    c.seed = static_cast<uint64_t>(seed);
    c.positional = sg::nn::parse_positional(positional);
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
      return run_one(c, out);
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
