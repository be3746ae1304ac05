// What study/translation.hpp declares for the program's files (tables,
// figures) and for --compare's pool of trainings side by side.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>

#include "autograd/engine.hpp"
#include "core/error.hpp"
#include "core/runtime.hpp"
#include "study/plot.hpp"
#include "study/run_pool.hpp"  // run_pool, use_generator_for_dropout
#include "study/settings.hpp"  // fmt, stats
#include "study/translation.hpp"

namespace sg::study {

namespace {

// "quatre - vingt - un" as written: "quatre-vingt-un".
std::string written(const text::Tokens& tokens) {
  std::string s = text::join(tokens);
  for (size_t at; (at = s.find(" - ")) != std::string::npos;) s.replace(at, 3, "-");
  return s.empty() ? "(nothing)" : s;
}

std::string percent(double x) { return fmt("%.1f%%", 100 * x); }

const DecodingRow& row_of(const std::vector<DecodingRow>& rows, Search s, nn::DecodingMode m) {
  for (const DecodingRow& r : rows)
    if (r.search == s && r.mode == m) return r;
  sg::fail("translation: no row for ", search_name(s, 0), ", ", mode_name(m));
}

}  // namespace

std::string results_md(const std::vector<DecodingRow>& rows, const TranslationConfig& c, const TranslationData& d,
                       double train_exact) {
  std::ostringstream o;
  o << "Held-out numbers: " << d.test.numbers.size() << " of " << c.max_number + 1
    << ", never seen in training. Exact match is the headline: the whole French number, token for token.\n\n";
  o << "| search | decoding | exact match | token accuracy | BLEU (d2l, k=2) | corpus BLEU-4 | seconds |\n"
    << "|---|---|---|---|---|---|---|\n";
  for (const DecodingRow& r : rows)
    o << "| " << search_name(r.search, c.beam) << " | " << mode_name(r.mode) << " | " << percent(r.scores.exact)
      << " | " << percent(r.scores.token_accuracy) << " | " << fmt("%.3f", r.scores.bleu2) << " | "
      << fmt("%.3f", r.scores.bleu4) << " | " << fmt("%.2f", r.seconds) << " |\n";
  o << "\n";
  for (Search s : {Search::greedy, Search::beam}) {
    const double cached = row_of(rows, s, nn::DecodingMode::cached).scores.exact;
    const double d2l = row_of(rows, s, nn::DecodingMode::d2l).scores.exact;
    o << "d2l's position-0 decoding, " << search_name(s, c.beam) << ": exact match " << percent(d2l)
      << " against " << percent(cached) << " with every token at its own position ("
      << fmt("%+.1f", 100 * (d2l - cached)) << " points).\n\n";
  }
  o << "Training numbers, greedy, cached: exact match " << percent(train_exact) << ".\n\n";
  o << "Exact match by the number's digits (held-out numbers of that length):\n\n| search | decoding |";
  const LengthScores counts = exact_by_length(d.test.numbers, d.test.french, d.test.french);
  std::string rule = "|---|---|";
  for (size_t len = 1; len <= 6; ++len)
    if (counts.count[len]) o << " " << len << " (" << counts.count[len] << ") |", rule += "---|";
  o << "\n" << rule << "\n";
  for (const DecodingRow& r : rows) {
    const LengthScores s = exact_by_length(d.test.numbers, r.preds, d.test.french);
    o << "| " << search_name(r.search, c.beam) << " | " << mode_name(r.mode) << " |";
    for (size_t len = 1; len <= 6; ++len)
      if (counts.count[len]) o << " " << percent(s.exact[len]) << " |";
    o << "\n";
  }
  return o.str();
}

std::string translations_md(const nn::EncoderDecoder& model, const TranslationConfig& c, const TranslationData& d,
                            const std::vector<int64_t>& numbers) {
  if (numbers.empty()) return "(none)\n";
  const NumberPairs p = number_pairs(numbers);
  const text::Seq2SeqBatch b = text::build_batch(p.english, p.french, *d.src_vocab, *d.tgt_vocab, c.num_steps);
  const auto greedy = translate(model, d, b, Search::greedy, nn::DecodingMode::cached);
  const auto beam = translate(model, d, b, Search::beam, nn::DecodingMode::cached, c.beam);
  const auto d2l = translate(model, d, b, Search::greedy, nn::DecodingMode::d2l);
  auto cell = [&](const text::Tokens& pred, size_t i) { return written(pred) + (pred == p.french[i] ? "" : " ✗"); };
  std::ostringstream o;
  o << "| number | set | English | French (reference) | greedy | " << search_name(Search::beam, c.beam)
    << " | greedy, d2l position 0 |\n|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < numbers.size(); ++i) {
    const bool held_out = std::binary_search(d.test.numbers.begin(), d.test.numbers.end(), numbers[i]);
    const bool trained = std::binary_search(d.train.numbers.begin(), d.train.numbers.end(), numbers[i]);
    o << "| " << numbers[i] << " | " << (held_out ? "test" : trained ? "train" : "unseen") << " | " << written(p.english[i])
      << " | " << written(p.french[i]) << " | " << cell(greedy[i], i) << " | " << cell(beam[i], i) << " | "
      << cell(d2l[i], i) << " |\n";
  }
  return o.str();
}

std::string examples_md(const nn::EncoderDecoder& model, const TranslationConfig& c, const TranslationData& d) {
  const std::vector<text::Tokens> greedy = translate(model, d, d.test_batch, Search::greedy, nn::DecodingMode::cached);
  std::vector<int64_t> wrong;
  for (size_t i = 0; i < greedy.size(); ++i)
    if (greedy[i] != d.test.french[i]) wrong.push_back(d.test.numbers[i]);
  constexpr size_t kShownWrong = 60;  // a table a reader can still look through
  std::vector<int64_t> shown = wrong;
  if (wrong.size() > kShownWrong) {
    shown.clear();
    for (size_t i = 0; i < kShownWrong; ++i) shown.push_back(wrong[i * wrong.size() / kShownWrong]);
  }
  std::vector<int64_t> in_range;
  for (int64_t n : tricky_numbers())
    if (n <= c.max_number) in_range.push_back(n);
  return "Translations (✗: not the reference; set: test, a held-out number never seen in training; train; or unseen, past 999 a number neither trained on nor held out). Held-out numbers with tricky "
         "French:\n\n" +
         translations_md(model, c, d, tricky_held_out(d, 12)) +
         "\nThe numbers with tricky French, in whichever set:\n\n" +
         translations_md(model, c, d, in_range) + "\nThe held-out numbers greedy search gets wrong (" +
         std::to_string(wrong.size()) + " of " + std::to_string(greedy.size()) +
         (wrong.size() > kShownWrong ? ", " + std::to_string(kShownWrong) + " of them spread over the range" : "") +
         "):\n\n" + translations_md(model, c, d, shown);
}

std::string translation_settings_md(const TranslationConfig& c, const TranslationData& d, const std::string& positions,
                                    const std::string& seeds) {
  std::ostringstream o;
  o << "| setting | value |\n|---|---|\n"
    << "| task | English number words to French, 0.." << c.max_number << " |\n"
    << "| training / held-out numbers | " << d.train.numbers.size() << " / " << d.test.numbers.size()
    << " (split seed " << c.split_seed << ") |\n"
    << "| vocabularies (source / target) | " << d.src_vocab->size() << " / " << d.tgt_vocab->size() << " tokens |\n"
    << "| model | encoder-decoder, " << c.blocks << " + " << c.blocks << " blocks, width " << c.hidden << ", FFN "
    << c.ffn << ", " << c.heads << " heads, " << (c.pre_norm ? "pre-norm" : "post-norm") << " |\n"
    << "| positions | "
    << (!positions.empty() ? positions
                           : nn::positional_name(c.positional) +
                                 (c.positional == nn::Positional::relative
                                      ? ", max distance " + std::to_string(c.max_distance)
                                      : std::string()))
    << " |\n"
    << "| dropout | " << c.dropout << " |\n"
    << "| num_steps | " << c.num_steps << " |\n"
    << "| optimiser | AdamW, lr " << c.lr << " (warm-up " << c.warmup << " steps, cosine to " << c.min_lr
    << "), weight decay " << c.weight_decay << ", clip " << c.clip << " |\n"
    << "| steps x batch | " << c.steps << " x " << c.batch << " |\n"
    << "| seed | " << (seeds.empty() ? std::to_string(c.seed) : seeds) << " |\n"
    << "| beam width | " << c.beam << " |\n";
  return o.str();
}

std::string translation_curve_svg(const TranslationResult& r, const std::string& title) {
  plot::Series loss{"training batch", {}, {}, {}, {}}, exact{"held-out exact match", {}, {}, {}, {}};
  for (size_t i = 0; i < r.step_loss.size(); ++i)
    loss.x.push_back(static_cast<double>(i + 1)), loss.y.push_back(r.step_loss[i]);
  for (const TranslationPoint& p : r.curve) exact.x.push_back(static_cast<double>(p.step)), exact.y.push_back(p.exact);
  plot::LineOptions lo;
  lo.title = "loss";
  lo.xlabel = "step";
  lo.ylabel = "sequence loss (training batch)";
  lo.width = 420;
  lo.legend = false;
  lo.log_y = true;
  const std::string left = plot::line_svg({loss}, lo);
  lo.log_y = false;
  lo.title = "held-out exact match (greedy)";
  lo.ylabel = "exact match";
  lo.has_ymin = lo.has_ymax = true;
  return plot::grid_svg({left, plot::line_svg({exact}, lo)}, 2, title);
}

std::string translation_curve_csv(const TranslationResult& r) {
  std::ostringstream o;
  o << "step,loss,held_out_exact_match\n";
  for (const TranslationPoint& p : r.curve) o << p.step << ',' << p.loss << ',' << p.exact << '\n';
  return o.str();
}

std::string attention_svg(const nn::EncoderDecoder& model, const TranslationConfig& c, const TranslationData& d,
                          int64_t number, bool cross) {
  const NumberPairs p = number_pairs({number});
  const text::Seq2SeqBatch b = text::build_batch(p.english, p.french, *d.src_vocab, *d.tgt_vocab, c.num_steps);
  const text::Tokens pred = translate(model, d, b, Search::greedy, nn::DecodingMode::cached).at(0);
  const AttentionLabels labels{"English (source)", "French read so far", "French token written",
                               std::string(cross ? "Cross-attention" : "Decoder self-attention (causal)") +
                                   " while writing " + std::to_string(number) + " (" + written(p.english[0]) +
                                   " -> " + written(pred) + "): blocks in rows, heads in columns"};
  return decoder_attention_svg(model, b, p.english[0], *d.tgt_vocab, pred, cross, labels);
}

std::string decoder_attention_svg(const nn::EncoderDecoder& model, const text::Seq2SeqBatch& b,
                                  const text::Tokens& source, const text::Vocab& tgt_vocab, const text::Tokens& pred,
                                  bool cross, const AttentionLabels& labels) {
  NoGradGuard no_grad;
  if (b.size() != 1) sg::fail("decoder_attention_svg: a batch of ", b.size(), " sources, expected 1");
  const int64_t num_steps = model.decoder->options.max_len;
  // The decoder reads <bos> and its output, and writes the output and <eos>.
  text::Tokens in = {text::kBos}, out = pred;
  in.insert(in.end(), pred.begin(), pred.end());
  out.push_back(text::kEos);
  // An output that ran to max_len without <eos> (an untrained model): as much as the table of positions holds.
  in.resize(std::min<size_t>(in.size(), static_cast<size_t>(num_steps)));
  out.resize(in.size());
  const int64_t T = static_cast<int64_t>(in.size());
  const Tensor dec_input = from_vector(tgt_vocab.ids(in), {1, T});
  nn::DecoderAttentionWeights w;
  model.forward(b.src, dec_input, b.src_valid_lens, nullptr, &w);
  const int64_t S = b.src.size(1), src_len = b.src_valid_lens.to_vector<int64_t>()[0];
  text::Tokens src = source;
  src.push_back(text::kEos);
  src.resize(static_cast<size_t>(src_len));
  const std::vector<Tensor>& blocks = cross ? w.cross : w.self;
  const int64_t K = cross ? S : T, shown = cross ? src_len : T, heads = model.decoder->options.num_heads;
  std::vector<std::string> maps;
  for (size_t blk = 0; blk < blocks.size(); ++blk) {
    const std::vector<float> a = blocks[blk].to_vector<float>();  // (1, heads, T, K)
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<std::vector<double>> rows(static_cast<size_t>(T));
      for (int64_t q = 0; q < T; ++q)
        for (int64_t k = 0; k < shown; ++k) rows[static_cast<size_t>(q)].push_back(a[static_cast<size_t>((h * T + q) * K + k)]);
      plot::HeatmapOptions ho;
      ho.title = "block " + std::to_string(blk) + ", head " + std::to_string(h);
      ho.xlabel = cross ? labels.source : labels.read;
      ho.ylabel = labels.written;
      ho.colorbar_label = "attention weight";
      ho.has_range = true;
      ho.xticklabels = cross ? src : in;
      ho.yticklabels = out;
      ho.width = 270, ho.height = 330;
      maps.push_back(plot::heatmap_svg(rows, ho));
    }
  }
  return plot::grid_svg(maps, static_cast<int>(heads), labels.title);
}

void run_translations(std::vector<TranslationJob>& jobs, const TranslationData& d, const std::atomic<bool>* stop) {
  std::vector<std::unique_ptr<nn::EncoderDecoder>> models;
  for (TranslationJob& job : jobs) {
    manual_seed(job.c.seed);
    models.push_back(make_translator(job.c, d));
    use_generator_for_dropout(*models.back(), std::make_shared<Generator>(default_generator()));
  }
  std::atomic<size_t> done{0};
  std::mutex print_mu;
  const auto start = std::chrono::steady_clock::now();
  std::vector<size_t> order(jobs.size());  // in job order
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  run_pool(order, [&](size_t i, const std::atomic<bool>& failed) {
    TranslationJob& job = jobs[i];
    auto check = [&](int64_t, int64_t, double, double, double, double) {
      if (failed) sg::fail("stopped: another run failed");
    };
    job.r = train_translation(*models[i], job.c, d, check, stop);
    job.rows = evaluate_decodings(*models[i], job.c, d, stop);
    models[i].reset();
    std::lock_guard<std::mutex> lock(print_mu);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "[run %zu/%zu] %-22s exact %.3f (greedy)  %.1f s;  %.0f s elapsed\n", ++done, jobs.size(),
                 job.label.c_str(), job.rows[0].scores.exact, job.r.seconds, elapsed);
  });
}

namespace {

// The jobs' kinds of positions, in their first order.
std::vector<nn::Positional> kinds_of(const std::vector<TranslationJob>& jobs) {
  std::vector<nn::Positional> kinds;
  for (const TranslationJob& j : jobs)
    if (std::find(kinds.begin(), kinds.end(), j.c.positional) == kinds.end()) kinds.push_back(j.c.positional);
  return kinds;
}

}  // namespace

std::string compare_md(const std::vector<TranslationJob>& jobs) {
  if (jobs.empty()) sg::fail("compare_md: no runs");
  const int64_t beam = jobs[0].c.beam;
  std::ostringstream o;
  o << "Held-out numbers, mean ± sample standard deviation over seeds (in points of percent for the "
       "percentages). Greedy and beam search with the key/value cache; the last exact-match column is greedy "
       "with d2l's position-0 decoding.\n\n"
    << "| positions | seeds | exact match, greedy | exact match, " << search_name(Search::beam, beam)
    << " | token accuracy, greedy | corpus BLEU-4, greedy | exact match, d2l position 0 | training seconds |\n"
    << "|---|---|---|---|---|---|---|---|\n";
  for (nn::Positional k : kinds_of(jobs)) {
    std::vector<double> greedy, beamed, tokens, bleu4, d2l, seconds;
    for (const TranslationJob& j : jobs) {
      if (j.c.positional != k) continue;
      greedy.push_back(100 * row_of(j.rows, Search::greedy, nn::DecodingMode::cached).scores.exact);
      beamed.push_back(100 * row_of(j.rows, Search::beam, nn::DecodingMode::cached).scores.exact);
      tokens.push_back(100 * row_of(j.rows, Search::greedy, nn::DecodingMode::cached).scores.token_accuracy);
      bleu4.push_back(row_of(j.rows, Search::greedy, nn::DecodingMode::cached).scores.bleu4);
      d2l.push_back(100 * row_of(j.rows, Search::greedy, nn::DecodingMode::d2l).scores.exact);
      seconds.push_back(j.r.seconds);
    }
    auto pm = [](const std::vector<double>& v, const char* f) {
      const Stats s = stats(v);
      return fmt(f, s.mean) + " ± " + fmt(f, s.spread);
    };
    o << "| " << nn::positional_name(k) << " | " << greedy.size() << " | " << pm(greedy, "%.1f%%") << " | "
      << pm(beamed, "%.1f%%") << " | " << pm(tokens, "%.1f%%") << " | " << pm(bleu4, "%.3f") << " | "
      << pm(d2l, "%.1f%%") << " | " << fmt("%.0f", stats(seconds).mean) << " |\n";
  }
  return o.str();
}

std::string compare_curve_svg(const std::vector<TranslationJob>& jobs) {
  std::vector<plot::Series> lines;
  for (nn::Positional k : kinds_of(jobs)) {
    plot::Series s{nn::positional_name(k), {}, {}, {}, {}};
    int64_t seeds = 0;
    for (const TranslationJob& j : jobs) {
      if (j.c.positional != k) continue;
      for (size_t i = 0; i < j.r.curve.size(); ++i) {
        const double y = j.r.curve[i].exact;
        if (seeds == 0) s.x.push_back(static_cast<double>(j.r.curve[i].step)), s.y.push_back(0), s.lo.push_back(y), s.hi.push_back(y);
        if (i < s.y.size()) s.y[i] += y, s.lo[i] = std::min(s.lo[i], y), s.hi[i] = std::max(s.hi[i], y);
      }
      ++seeds;
    }
    for (double& y : s.y) y /= static_cast<double>(seeds);
    lines.push_back(s);
  }
  plot::LineOptions lo;
  lo.title = "Held-out exact match (greedy) during training: mean over seeds, band from lowest to highest";
  lo.xlabel = "step";
  lo.ylabel = "exact match";
  lo.width = 720, lo.height = 320;
  lo.has_ymin = lo.has_ymax = true;
  return plot::line_svg(lines, lo);
}

}  // namespace sg::study
