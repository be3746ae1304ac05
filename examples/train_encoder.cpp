// Trains a tiny self-attention encoder on synthetic sequence tasks and
// answers the question Dive into Deep Learning's section leaves open: does a
// self-attention encoder need positions, and do learned encodings beat
// fixed sinusoidal ones?
//
//   train_encoder                       one run (task shift, sinusoidal)
//   train_encoder --compare             none, sinusoidal, learned, relative and
//                                       rotary positions on every task, several
//                                       seeds: table and plots; then the same
//                                       with the causal mask (and ALiBi) on
//                                       the causal tasks
//   train_encoder --causal              one run with the causal mask
//   train_encoder --load out/x/checkpoint.safetensors   evaluate a saved model
//   train_encoder --report out/compare  rewrite a folder's report.html from its files
//
// The tasks and the training loop are in study/encoder_training.hpp.
//
// Every output is staged and moved into place only when the run (or the
// whole comparison) completes; a failed or interrupted run leaves the output
// folder as it found it (examples/cli.hpp).
#include "checkpoint/checkpoint.hpp"
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <sstream>

#include "cli11.hpp"
#include "study/encoder_training.hpp"
#include "study/plot.hpp"
#include "study/position_properties.hpp"
#include "study/report.hpp"

namespace {

using sg::study::Config;
using sg::study::Result;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The whole-number settings, with the bounds the flags and a checkpoint's
// metadata are both held to.
struct IntSetting {
  const char* key;  // metadata key; the flag is "--" + key with '_' as '-'
  int64_t Config::*member;
  int64_t lo, hi;
  const char* help;
};
const IntSetting kIntSettings[] = {
    {"vocab", &Config::vocab, 3, 100000, "token ids (0 pads, 1.. are symbols)"},
    {"hidden", &Config::hidden, 2, 65536, "model width"},
    {"heads", &Config::heads, 1, 1024, "attention heads (must divide --hidden)"},
    {"ffn", &Config::ffn, 1, 1 << 20, "feed-forward width"},
    {"blocks", &Config::blocks, 1, 1024, "encoder blocks, at least 1 (a model without blocks has no attention to study)"},
    {"max_distance", &Config::max_distance, 1, 100000, "relative positions only: offsets clipped to +-this"},
    {"min_len", &Config::min_len, 1, 100000, "shortest training sequence"},
    {"max_len", &Config::max_len, 1, 100000, "longest training sequence"},
    {"eval_min_len", &Config::eval_min_len, 1, 100000,
     "shortest sequence of the longer-lengths evaluation (above --max-len)"},
    {"eval_max_len", &Config::eval_max_len, 1, 100000, "longest sequence of the longer-lengths evaluation"},
    {"shift", &Config::shift, 1, 100000, "task shift only: label[t] = x[t - shift], less than --max-len"},
    {"back", &Config::back, 1, 100000, "task recall only: label[t] = x[t - back], less than --max-len"},
};

std::string flag_of(const std::string& key) {
  std::string f = "--" + key;
  for (char& ch : f) ch = ch == '_' ? '-' : ch;
  return f;
}

// The config as checkpoint metadata, and back: a saved model can be rebuilt.
sg::checkpoint::Metadata to_metadata(const Config& c) {
  sg::checkpoint::Metadata m = {{"task", c.task},
                        {"positional", sg::nn::positional_name(c.positional)},
                        {"relative_values", c.relative_values ? "1" : "0"},
                        {"pre_norm", c.pre_norm ? "1" : "0"},
                        {"causal", c.causal ? "1" : "0"},
                        {"seed", std::to_string(c.seed)}};
  for (const IntSetting& s : kIntSettings) m[s.key] = std::to_string(c.*s.member);
  return m;
}

// Every value is checked as the flags are: whole numbers in the flags'
// bounds (blocks may be 0: older versions wrote such models), names from the
// known sets, lengths consistent with each other.
Config from_metadata(const sg::checkpoint::Metadata& m, const std::string& path) {
  auto bad = [&](const std::string& key, const std::string& value, const std::string& why) -> std::runtime_error {
    return std::runtime_error("checkpoint '" + path + "': metadata '" + key + "' is \"" + value + "\": " + why);
  };
  auto get = [&](const std::string& k) {
    auto it = m.find(k);
    if (it == m.end())
      throw std::runtime_error("checkpoint '" + path + "' has no '" + k +
                               "' in its metadata (not written by train_encoder?)");
    return it->second;
  };
  auto whole = [&](const std::string& key, int64_t lo, int64_t hi) {
    const std::string v = get(key);
    int64_t x = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || p != v.data() + v.size() || ec == std::errc::invalid_argument)
      throw bad(key, v, "not a whole number");
    if (ec == std::errc::result_out_of_range || x < lo || x > hi)
      throw bad(key, v, "out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    return x;
  };
  auto boolean = [&](const std::string& key) {
    const std::string v = get(key);
    if (v != "0" && v != "1") throw bad(key, v, "neither 0 nor 1");
    return v == "1";
  };
  Config c;
  c.task = get("task");
  const auto& tasks = sg::study::task_names();
  if (std::find(tasks.begin(), tasks.end(), c.task) == tasks.end())
    throw bad("task", c.task, "not a task of this program (shift, sort, reverse, count, tally, recall)");
  try {
    c.positional = sg::nn::parse_positional(get("positional"));
  } catch (const sg::Error&) {
    throw bad("positional", get("positional"), "not an encoding (none, sinusoidal, learned, relative, rotary, alibi)");
  }
  for (const IntSetting& s : kIntSettings) {
    // Checkpoints written before max_distance or back existed have none: the default then.
    if ((std::string(s.key) == "max_distance" || std::string(s.key) == "back") && !m.count(s.key)) continue;
    c.*s.member = whole(s.key, std::string(s.key) == "blocks" ? 0 : s.lo, s.hi);
  }
  if (m.count("relative_values")) c.relative_values = boolean("relative_values");
  if (m.count("pre_norm")) c.pre_norm = boolean("pre_norm");
  if (m.count("causal")) c.causal = boolean("causal");
  const std::string seed = get("seed");
  const auto [p, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), c.seed);
  if (seed.empty() || p != seed.data() + seed.size() || ec != std::errc()) throw bad("seed", seed, "not a seed");
  try {
    sg::study::check_config(c);
  } catch (const sg::Error& e) {
    throw std::runtime_error("checkpoint '" + path + "': inconsistent metadata: " + e.what());
  }
  return c;
}

// One live line on a terminal (rewritten in place), a line per report otherwise.
sg::study::Progress progress_line(const std::string& label) {
  const bool tty = isatty(2);
  return [label, tty](int64_t step, int64_t steps, double loss, double acc, double tps, double left) {
    std::fprintf(stderr, "%s%s step %lld/%lld  loss %.4f  acc %.3f  %.0f tokens/s  %.0f s left%s",
                 tty ? "\r" : "", label.c_str(), static_cast<long long>(step), static_cast<long long>(steps),
                 loss, acc, tps, left, tty ? "   " : "\n");
    if (tty && step == steps) std::fprintf(stderr, "\n");
  };
}

// file:///... of a path, to paste into a browser.
std::string file_url(const std::string& path) {
  return "file://" + std::filesystem::absolute(path).lexically_normal().string();
}

// Attention is recorded before training, at 1/8 and 1/2 of the steps, and
// at the end (0, 100, 400, 800 for 800 steps), so the report shows it form.
std::vector<int64_t> record_steps(int64_t steps) {
  std::vector<int64_t> at = {0, steps / 8, steps / 2, steps};
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

// The settings of a run as a Markdown table (settings.md, the report's first section).
std::string settings_md(const Config& c, const std::vector<std::pair<std::string, std::string>>& extra) {
  std::ostringstream o;
  o << "| setting | value |\n|---|---|\n";
  for (const auto& [k, v] : extra) o << "| " << k << " | " << v << " |\n";
  for (const IntSetting& s : kIntSettings) o << "| " << flag_of(s.key) << " | " << c.*s.member << " |\n";
  o << "| --steps | " << c.steps << " |\n| --batch | " << c.batch << " |\n| --lr | " << c.lr << " |\n| --schedule | "
    << c.schedule << " |\n| --warmup | " << c.warmup << " |\n| --min-lr | " << c.min_lr << " |\n| --weight-decay | "
    << c.weight_decay << " |\n| --clip | " << c.clip << " |\n| --dropout | " << c.dropout << " |\n| --pre-norm | "
    << (c.pre_norm ? "yes" : "no") << " |\n| causal mask | " << (c.causal ? "yes" : "no") << " |\n| --eval-every | " << c.eval_every << " |\n| attention recorded at steps | ";
  for (size_t i = 0; i < c.record_attention_at.size(); ++i) o << (i ? ", " : "") << c.record_attention_at[i];
  o << " |\n| threads | " << sg::num_threads() << " |\n";
  return o.str();
}

// d2l's show_heatmaps: every head (columns) of every block (rows) over the
// longest example sequence, at the last recorded step, its tokens on the axes.
std::string heads_svg(const sg::study::AttentionRecord& rec, const Config& c, const std::string& title) {
  if (rec.snapshots.empty()) sg::fail("train_encoder: no attention was recorded to plot");
  const auto& snap = rec.snapshots.back();
  const int64_t T = rec.examples.ids.shape()[1];
  const std::vector<int64_t> lens = rec.examples.valid_lens.to_vector<int64_t>();
  const int64_t seq = std::max_element(lens.begin(), lens.end()) - lens.begin(), len = lens[static_cast<size_t>(seq)];
  const std::vector<int64_t> ids = rec.examples.ids.to_vector<int64_t>();
  std::vector<std::string> tokens;
  for (int64_t t = 0; t < len; ++t) tokens.push_back(std::to_string(ids[static_cast<size_t>(seq * T + t)]));
  std::vector<std::string> maps;
  for (size_t b = 0; b < snap.blocks.size(); ++b)
    for (int64_t h = 0; h < c.heads; ++h) {
      std::vector<std::vector<double>> rows(static_cast<size_t>(len));
      for (int64_t q = 0; q < len; ++q)
        for (int64_t k = 0; k < len; ++k)
          rows[static_cast<size_t>(q)].push_back(snap.blocks[b][static_cast<size_t>(((seq * c.heads + h) * T + q) * T + k)]);
      sg::study::plot::HeatmapOptions ho;
      ho.title = "block " + std::to_string(b) + ", head " + std::to_string(h);
      ho.xlabel = "key token";
      ho.ylabel = "query token";
      ho.colorbar_label = "attention weight";
      ho.xticklabels = ho.yticklabels = tokens;
      ho.width = 300, ho.height = 270;
      maps.push_back(sg::study::plot::heatmap_svg(rows, ho));
    }
  return sg::study::plot::grid_svg(maps, static_cast<int>(std::min<int64_t>(c.heads, 4)),
                            title + ": attention at step " + std::to_string(snap.step) + ", sequence " +
                                std::to_string(seq) + " (length " + std::to_string(len) + ")");
}

// The similarity of an encoding's position vectors (position_properties.hpp);
// none has none to show (positions.md says so).
std::string positions_heatmap(const sg::study::PositionView& v, const Config& c) {
  sg::study::plot::HeatmapOptions ho;
  ho.title = v.what;
  ho.xlabel = "position j";
  ho.ylabel = "position i";
  ho.colorbar_label = c.positional == sg::nn::Positional::relative ? "cosine similarity to offset 0" : "cosine similarity";
  ho.width = 330, ho.height = 300;
  return sg::study::plot::heatmap_svg(v.similarity, ho);
}

// A single run's curves: the loss of every step with the evaluations' and
// the accuracies, side by side (as d2l's Animator shows them).
std::string run_curves_svg(const Result& r, const std::string& title) {
  sg::study::plot::Series step_loss{"training batch", {0.0}, {r.curve.at(0).loss}};
  for (size_t i = 0; i < r.step_loss.size(); ++i)
    step_loss.x.push_back(static_cast<double>(i + 1)), step_loss.y.push_back(r.step_loss[i]);
  sg::study::plot::Series train{"training batch", {}, {}}, eval{"evaluation set", {}, {}};
  for (const auto& p : r.curve) {
    train.x.push_back(static_cast<double>(p.step)), train.y.push_back(p.train_acc);
    eval.x.push_back(static_cast<double>(p.step)), eval.y.push_back(p.eval_acc);
  }
  sg::study::plot::LineOptions lo;
  lo.title = "loss";
  lo.xlabel = "step";
  lo.ylabel = "cross-entropy (training batch)";
  lo.width = 420;
  lo.legend = false;  // one line, named by its axis
  const std::string loss = sg::study::plot::line_svg({step_loss}, lo);
  lo.legend = true;
  lo.width = 520;
  lo.title = "accuracy";
  lo.ylabel = "accuracy (training lengths)";
  lo.has_ymin = lo.has_ymax = true;
  return sg::study::plot::grid_svg({loss, sg::study::plot::line_svg({train, eval}, lo)}, 2, title);
}

std::string curve_csv(const Result& r) {
  std::ostringstream f;
  f << "step,loss,train_batch_accuracy,eval_accuracy,grad_norm,first_block_grad_norm\n";
  for (const auto& p : r.curve)
    f << p.step << ',' << p.loss << ',' << p.train_acc << ',' << p.eval_acc << ',' << p.grad_norm << ','
      << p.first_block_grad_norm << '\n';
  return f.str();
}

int run_one(Config c, const std::string& out_root) {
  const std::string name = (c.causal ? "causal_" : "") + c.task + "_" + sg::nn::positional_name(c.positional) +
                           "_seed" + std::to_string(c.seed);
  // The folder is checked before training; the files move in when all are written.
  examples::Outputs out(out_root + "/" + name, "--out");
  const char* files[] = {"settings.md", "results.md", "curve.csv", "curve.svg", "attention.svg", "attention.json", "positions.md",
                         "positions.svg", "checkpoint.safetensors", "report.html"};
  for (const char* f : files) out.expect(f);
  c.record_attention_at = record_steps(c.steps);
  // First, so that the report knows every later file as this run's.
  out.write("settings.md", settings_md(c, {{"task", c.task}, {"positional", sg::nn::positional_name(c.positional)},
                                           {"--seed", std::to_string(c.seed)}}));
  sg::manual_seed(c.seed);
  sg::study::Model model(c);
  std::cout << "training " << name << ": " << model.parameter_count() << " parameters, "
            << (sg::automatic_threads_in_use() ? "automatic threads (now " + std::to_string(sg::num_threads()) + ")"
                                                : std::to_string(sg::num_threads()) + " threads")
            << (sg::study::data_parallel_threads(c) > 1 ? " (data-parallel steps)" : "") << ", lengths " << c.min_len << ".." << c.max_len << "\n";
  const Result r = sg::study::train(model, c, progress_line(name), &examples::g_stop);
  const std::string title = c.task + ", " + sg::nn::positional_name(c.positional) + (c.causal ? ", causal" : "") +
                            ", seed " + std::to_string(c.seed);
  out.write("results.md", "| task | positional | seed | accuracy, training lengths " + std::to_string(c.min_len) + "-" +
                              std::to_string(c.max_len) + " | accuracy, longer " + std::to_string(c.eval_min_len) + "-" +
                              std::to_string(c.eval_max_len) + " | of which positions " + std::to_string(c.max_len + 1) +
                              "-" + std::to_string(c.eval_max_len) +
                              " | steps to 95% | seconds |\n|---|---|---|---|---|---|---|---|\n| " + c.task + " | " +
                              sg::nn::positional_name(c.positional) + " | " + std::to_string(c.seed) + " | " +
                              fmt("%.3f", r.acc_train_lengths) + " | " + fmt("%.3f", r.acc_longer) + " | " +
                              fmt("%.3f", r.acc_past_train) + " | " +
                              (r.steps_to_95 < 0 ? std::string("never") : std::to_string(r.steps_to_95)) + " | " +
                              fmt("%.1f", r.seconds) + " |\n");
  out.write("curve.csv", curve_csv(r));
  out.write("curve.svg", run_curves_svg(r, title));
  out.write("attention.svg", heads_svg(r.attention, c, title));
  out.write("attention.json", sg::study::report::attention_json(
                                  {{c.task, sg::nn::positional_name(c.positional), c.seed, c.heads, r.attention}}));
  const sg::study::PositionView view = sg::study::view_positions(model, c, r.acc_longer);
  out.write("positions.md", sg::study::properties_table({{c.task, view}}));
  if (!view.similarity.empty()) out.write("positions.svg", positions_heatmap(view, c));
  sg::checkpoint::save(out.stage("checkpoint.safetensors"), model, nullptr, to_metadata(c));
  out.commit();
  const std::string report = sg::study::report::write_report(out.dir(), "train_encoder: " + title);
  std::cout << "accuracy on training lengths " << fmt("%.3f", r.acc_train_lengths) << ", on longer lengths ("
            << c.eval_min_len << ".." << c.eval_max_len << ") " << fmt("%.3f", r.acc_longer)
            << ", on their positions past the training length (" << c.max_len + 1 << ".." << c.eval_max_len << ") "
            << fmt("%.3f", r.acc_past_train) << ", steps to 95% "
            << (r.steps_to_95 < 0 ? std::string("never") : std::to_string(r.steps_to_95)) << ", "
            << fmt("%.1f", r.seconds) << " s\nwrote " << out.dir()
            << "/{settings.md,results.md,curve.csv,curve.svg,attention.svg,attention.json,positions.md,"
               "positions.svg (not for none),checkpoint.safetensors}\nreport: "
            << report << "  (open it in a browser: " << file_url(report) << ")\n";
  return 0;
}

int evaluate_checkpoint(const std::string& path) {
  const sg::checkpoint::SafetensorsFile file = sg::checkpoint::load_safetensors(path);
  const Config c = from_metadata(file.metadata, path);
  sg::study::Model model(c);
  sg::checkpoint::load(path, model);
  const double a = sg::study::evaluate(model, sg::study::make_eval_set(c, c.min_len, c.max_len, 1));
  const sg::study::EvalSet longer = sg::study::make_eval_set(c, c.eval_min_len, c.eval_max_len, 2);
  const double b = sg::study::evaluate(model, longer);
  const double past = sg::study::evaluate_positions(model, longer).from(c.max_len);
  std::cout << path << ": task " << c.task << ", positional " << sg::nn::positional_name(c.positional)
            << (c.causal ? ", causal mask" : "") << "\naccuracy on training lengths " << fmt("%.3f", a)
            << ", on longer lengths " << fmt("%.3f", b) << ", on their positions past the training length ("
            << c.max_len + 1 << ".." << c.eval_max_len << ") " << fmt("%.3f", past) << "\n";
  return 0;
}

struct Stats {
  double mean = 0, spread = 0;  // spread: sample standard deviation (0 for one value)
};
Stats stats(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  if (v.size() > 1) {
    for (double x : v) s.spread += (x - s.mean) * (x - s.mean);
    s.spread = std::sqrt(s.spread / static_cast<double>(v.size() - 1));
  }
  return s;
}

std::string duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%ld s", s);
  else
    std::snprintf(buf, sizeof buf, "%ld min %02ld s", s / 60, s % 60);
  return buf;
}

// Overall progress of --compare: runs done of N, elapsed, an estimate of the
// time left (from the steps done so far, over every run in flight). On a
// terminal one line rewritten in place, with each finished run's result
// above it; otherwise a plain line per run. Runs side by side report from
// their own threads: every call takes a lock.
class CompareProgress {
 public:
  // steps[k - 1]: the training steps of run k.
  explicit CompareProgress(std::vector<int64_t> steps)
      : runs_(static_cast<int64_t>(steps.size())), steps_(std::move(steps)), tty_(isatty(2)),
        step_of_(steps_.size(), 0) {}
  // During run k (1-based), at `step`.
  void at(int64_t k, const std::string& label, int64_t step) {
    std::lock_guard<std::mutex> lock(mu_);
    step_of_[static_cast<size_t>(k - 1)] = step;
    if (!tty_) return;
    std::fprintf(stderr, "\r[run %lld/%lld] %-33s step %lld/%lld  %s elapsed, about %s left   ",
                 static_cast<long long>(k), static_cast<long long>(runs_), label.c_str(),
                 static_cast<long long>(step), static_cast<long long>(steps_[static_cast<size_t>(k - 1)]),
                 duration(elapsed()).c_str(),
                 duration(left()).c_str());
    std::fflush(stderr);
  }
  void finished(int64_t k, const std::string& label, const Result& r) {
    std::lock_guard<std::mutex> lock(mu_);
    step_of_[static_cast<size_t>(k - 1)] = steps_[static_cast<size_t>(k - 1)];
    const std::string to95 = r.steps_to_95 < 0 ? "never" : "at step " + std::to_string(r.steps_to_95);
    std::fprintf(stderr, "%s[run %lld/%lld] %-33s acc %.3f  longer %.3f  past %.3f  95%% %s  %.1f s;  %s elapsed, about %s left%s\n",
                 tty_ ? "\r" : "", static_cast<long long>(k), static_cast<long long>(runs_), label.c_str(),
                 r.acc_train_lengths, r.acc_longer, r.acc_past_train, to95.c_str(),
                 r.seconds, duration(elapsed()).c_str(), duration(left()).c_str(), tty_ ? "   " : "");
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  double left() const {
    double done = 0, total = 0;
    for (int64_t s : step_of_) done += static_cast<double>(s);
    for (int64_t s : steps_) total += static_cast<double>(s);
    return done > 0 ? elapsed() / done * (total - done) : 0;
  }
  int64_t runs_;
  std::vector<int64_t> steps_;
  bool tty_;
  std::mutex mu_;
  std::vector<int64_t> step_of_;  // steps done by each run
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Every Dropout of `m` draws from `gen` (the default generator otherwise).
void use_generator_for_dropout(sg::nn::Module& m, const std::shared_ptr<sg::Generator>& gen) {
  if (auto* d = dynamic_cast<sg::nn::Dropout*>(&m)) d->generator = gen;
  for (const auto& [name, child] : m.named_children()) use_generator_for_dropout(*child, gen);
}

// One training of --compare, and what is kept of it.
struct CompareJob {
  Config c;
  std::string label;
  bool keep_model = false;  // the first seed of each task and encoding: its positions are drawn
  Result r;
  std::unique_ptr<sg::study::Model> model;  // built before training; kept after it if keep_model
};

// Runs the trainings side by side, each on one thread of its own
// (sg::ThreadCountGuard(1)), as many at once as the library's thread count
// (the free cores, or --threads): independent trainings are the parallelism,
// and a small model's step gains little from more threads. Every model is
// built first, in job order, on this thread, from the default generator
// seeded with its seed, and its dropouts then draw from a copy of that
// generator where construction left it: each training draws exactly what it
// drew when the runs went one after another on the default generator, so the
// results are the same bits however many run at once. They land in job
// order. The first error stops the others and is rethrown once all have stopped.
// Every study's runs go into one pool, so that no core waits for the last
// run of one study before the next study starts; the runs with the most
// steps start first, so that the last to finish is a short one.
void run_side_by_side(const std::vector<CompareJob*>& jobs) {
  std::vector<int64_t> steps;
  for (CompareJob* job : jobs) {
    sg::manual_seed(job->c.seed);
    job->model = std::make_unique<sg::study::Model>(job->c);
    use_generator_for_dropout(*job->model, std::make_shared<sg::Generator>(sg::default_generator()));
    steps.push_back(job->c.steps);
  }
  CompareProgress progress(steps);
  std::vector<size_t> order(jobs.size());  // the order runs start in
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps[a] > steps[b]; });
  std::atomic<size_t> next{0};
  std::exception_ptr error;  // the first to fail, in time: the others stop because of it
  std::mutex error_mu;
  std::atomic<bool> failed{false};
  auto worker = [&] {
    sg::ThreadCountGuard one_thread(1);
    for (size_t n; !failed && (n = next++) < jobs.size();) {
      const size_t i = order[n];
      CompareJob& job = *jobs[i];
      const int64_t k = static_cast<int64_t>(i) + 1;
      try {
        progress.at(k, job.label, 0);
        job.r = sg::study::train(
            *job.model, job.c,
            [&](int64_t step, int64_t, double, double, double, double) {
              if (failed) sg::fail("stopped: another run failed");
              progress.at(k, job.label, step);
            },
            &examples::g_stop);
        progress.finished(k, job.label, job.r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!failed.exchange(true)) error = std::current_exception();
      }
      if (!job.keep_model) job.model.reset();
    }
  };
  const size_t side_by_side = std::min<size_t>(jobs.size(), static_cast<size_t>(sg::num_threads()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < side_by_side; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

// One study: every kind of positions on every task, `seeds` seeds each,
// written to <out_root>/<folder>/ (the encoder's in compare/, the causal
// one, base.causal, in compare_causal/, with the same files). Its folder is
// checked and its runs listed first (plan_study); the runs of every study
// then train in one pool (run_side_by_side); then each study writes its
// files (write_study). Nothing is written until every run is done: an
// interrupted comparison leaves the last complete tables, CSVs and plots as
// they were.
struct CompareStudy {
  Config base;
  std::vector<std::string> tasks;
  std::vector<sg::nn::Positional> kinds;
  int64_t seeds = 1;
  std::unique_ptr<examples::Outputs> out;
  std::vector<CompareJob> jobs;  // task by task, kind by kind, seed by seed
};

CompareStudy plan_study(Config base, const std::vector<std::string>& tasks,
                        const std::vector<sg::nn::Positional>& kinds, int64_t seeds, const std::string& out_root,
                        const std::string& folder) {
  auto out = std::make_unique<examples::Outputs>(out_root + "/" + folder, "--out");
  for (const char* f : {"settings.md", "results.md", "results.csv", "accuracy_by_position.csv", "attention.json",
                        "positions.md", "report.html"})
    out->expect(f);
  base.record_attention_at = record_steps(base.steps);
  {
    std::string task_list, kind_list;
    for (const auto& t : tasks) task_list += (task_list.empty() ? "" : ", ") + t;
    for (auto k : kinds) kind_list += (kind_list.empty() ? "" : ", ") + std::string(sg::nn::positional_name(k));
    // First, so that the report knows every later file as this comparison's.
    out->write("settings.md", settings_md(base, {{"--tasks", task_list}, {"--positionals", kind_list},
                                                 {"--seeds", std::to_string(seeds) + " (from --seed " +
                                                                 std::to_string(base.seed) + ")"}}));
  }
  std::vector<CompareJob> jobs;
  for (const std::string& task : tasks)
    for (sg::nn::Positional kind : kinds)
      for (int64_t s = 0; s < seeds; ++s) {
        CompareJob job;
        job.c = base;
        job.c.task = task;
        job.c.positional = kind;
        job.c.seed = base.seed + static_cast<uint64_t>(s);
        job.label = std::string(base.causal ? "causal " : "") + task + "/" + sg::nn::positional_name(kind) +
                    "/seed" + std::to_string(job.c.seed);
        job.keep_model = s == 0;
        jobs.push_back(std::move(job));
      }
  return {base, tasks, kinds, seeds, std::move(out), std::move(jobs)};
}

// The study's files, from its finished runs. Returns the path of its report.html.
std::string write_study(CompareStudy& study) {
  const Config& base = study.base;
  const std::vector<std::string>& tasks = study.tasks;
  const std::vector<sg::nn::Positional>& kinds = study.kinds;
  const int64_t seeds = study.seeds;
  examples::Outputs& out = *study.out;
  std::vector<CompareJob>& jobs = study.jobs;
  std::vector<sg::study::report::RunAttention> recorded;
  std::vector<std::pair<std::string, sg::study::PositionView>> views;
  std::ostringstream csv;
  csv << "task,positional,seed,acc_train_lengths,acc_longer,steps_to_95,seconds,acc_past_train\n";
  std::ostringstream by_position_csv;  // accuracy at each position of the longer sequences
  by_position_csv << "task,positional,seed,position,accuracy\n";
  const std::string past = std::to_string(base.max_len + 1) + "-" + std::to_string(base.eval_max_len);
  const std::string mask = base.causal ? ", causal" : "";
  std::ostringstream table;
  table << "| task | positional | accuracy, training lengths " << base.min_len << "-" << base.max_len
        << " | accuracy, longer " << base.eval_min_len << "-" << base.eval_max_len << " | of which positions "
        << past << " | steps to 95% | seconds |\n|---|---|---|---|---|---|---|\n";
  std::vector<std::pair<std::string, std::string>> plots;  // (file name, SVG)
  size_t run = 0;
  for (const std::string& task : tasks) {
    std::vector<sg::study::plot::Series> curves, by_position;
    std::vector<std::string> position_maps;
    for (sg::nn::Positional kind : kinds) {
      std::vector<double> acc, longer, past_train, secs, reached;
      // The mean over seeds, with a band from the lowest to the highest seed.
      sg::study::plot::Series mean_curve{sg::nn::positional_name(kind), {}, {}};
      sg::study::plot::Series mean_by_position{sg::nn::positional_name(kind), {}, {}};
      for (int64_t s = 0; s < seeds; ++s) {
        const CompareJob& job = jobs[run++];
        const Config& c = job.c;
        const Result& r = job.r;
        csv << task << ',' << sg::nn::positional_name(kind) << ',' << c.seed << ',' << r.acc_train_lengths << ','
            << r.acc_longer << ',' << r.steps_to_95 << ',' << r.seconds << ',' << r.acc_past_train << '\n';
        for (size_t t = 0; t < r.acc_by_position.size(); ++t) {
          by_position_csv << task << ',' << sg::nn::positional_name(kind) << ',' << c.seed << ',' << t + 1 << ','
                          << r.acc_by_position[t] << '\n';
          if (s == 0) {
            mean_by_position.x.push_back(static_cast<double>(t + 1)), mean_by_position.y.push_back(0);
            mean_by_position.lo.push_back(r.acc_by_position[t]), mean_by_position.hi.push_back(r.acc_by_position[t]);
          }
          mean_by_position.y[t] += r.acc_by_position[t] / static_cast<double>(seeds);
          mean_by_position.lo[t] = std::min(mean_by_position.lo[t], r.acc_by_position[t]);
          mean_by_position.hi[t] = std::max(mean_by_position.hi[t], r.acc_by_position[t]);
        }
        acc.push_back(r.acc_train_lengths);
        longer.push_back(r.acc_longer);
        past_train.push_back(r.acc_past_train);
        secs.push_back(r.seconds);
        if (r.steps_to_95 >= 0) reached.push_back(static_cast<double>(r.steps_to_95));
        for (size_t i = 0; i < r.curve.size(); ++i) {
          const double y = r.curve[i].eval_acc;
          if (s == 0) {
            mean_curve.x.push_back(static_cast<double>(r.curve[i].step)), mean_curve.y.push_back(0);
            mean_curve.lo.push_back(y), mean_curve.hi.push_back(y);
          }
          mean_curve.y[i] += y / static_cast<double>(seeds);
          mean_curve.lo[i] = std::min(mean_curve.lo[i], y), mean_curve.hi[i] = std::max(mean_curve.hi[i], y);
        }
        recorded.push_back({task, sg::nn::positional_name(kind), c.seed, c.heads, r.attention});
        if (s == 0) {  // every head of the first seed, and its positions
          plots.emplace_back("attention_" + task + "_" + sg::nn::positional_name(kind) + ".svg",
                             heads_svg(r.attention, c, task + ", " + sg::nn::positional_name(kind) + mask +
                                                           ", seed " + std::to_string(c.seed)));
          views.emplace_back(task, sg::study::view_positions(*job.model, c, r.acc_longer));
          if (!views.back().second.similarity.empty()) position_maps.push_back(positions_heatmap(views.back().second, c));
        }
      }
      curves.push_back(mean_curve);
      by_position.push_back(mean_by_position);
      const Stats a = stats(acc), l = stats(longer), p = stats(past_train), t = stats(secs);
      const std::string to95 = reached.empty() ? "never"
                               : fmt("%.0f", stats(reached).mean) +
                                     (reached.size() < static_cast<size_t>(seeds)
                                          ? " (" + std::to_string(reached.size()) + "/" + std::to_string(seeds) + " seeds)"
                                          : "");
      table << "| " << task << " | " << sg::nn::positional_name(kind) << " | " << fmt("%.3f", a.mean) << " ± "
            << fmt("%.3f", a.spread) << " | " << fmt("%.3f", l.mean) << " ± " << fmt("%.3f", l.spread) << " | "
            << fmt("%.3f", p.mean) << " ± " << fmt("%.3f", p.spread) << " | " << to95 << " | " << fmt("%.1f", t.mean)
            << " |\n";
    }
    const std::string over_seeds =
        seeds > 1 ? " (mean of " + std::to_string(seeds) + " seeds; band: lowest to highest)" : " (1 seed)";
    sg::study::plot::LineOptions lo;
    lo.title = "task: " + task + mask + over_seeds;
    lo.xlabel = "step";
    lo.ylabel = "accuracy (training lengths)";
    lo.has_ymin = lo.has_ymax = true;
    lo.width = 720, lo.height = 320;
    plots.emplace_back("curves_" + task + ".svg", sg::study::plot::line_svg(curves, lo));
    sg::study::plot::LineOptions po = lo;
    po.title = task + mask + ": accuracy per position, lengths " + std::to_string(base.eval_min_len) + "-" +
               std::to_string(base.eval_max_len) + " (trained on " + std::to_string(base.min_len) + "-" +
               std::to_string(base.max_len) + "; " +
               (seeds > 1 ? std::to_string(seeds) + " seeds, band: lowest to highest)" : "1 seed)");
    po.xlabel = "position";
    po.ylabel = "accuracy at the position";
    plots.emplace_back("accuracy_by_position_" + task + ".svg", sg::study::plot::line_svg(by_position, po));
    if (!position_maps.empty())
      plots.emplace_back("positions_" + task + ".svg",
                         sg::study::plot::grid_svg(position_maps, 3, "positions after training on " + task + mask +
                                                                  ": similarity of position i and position j"));
  }
  for (const auto& [name, svg] : plots) out.write(name, svg);
  out.write("results.csv", csv.str());
  out.write("accuracy_by_position.csv", by_position_csv.str());
  out.write("results.md", table.str());
  out.write("attention.json", sg::study::report::attention_json(recorded));
  out.write("positions.md", sg::study::properties_table(views));
  out.commit();
  const std::string report =
      sg::study::report::write_report(out.dir(), base.causal ? "train_encoder --compare, with the causal mask" : "train_encoder --compare");
  std::cout << "\n" << (base.causal ? "with the causal mask:\n" : "") << table.str()
            << "\n(mean ± standard deviation over " << seeds << (seeds == 1 ? " seed, " : " seeds, ") << base.steps
            << " steps each)\nwrote " << out.dir()
            << "/results.md, results.csv, accuracy_by_position.csv, curves_<task>.svg, accuracy_by_position_<task>.svg, "
               "attention_<task>_<encoding>.svg, positions_<task>.svg, positions.md, attention.json, settings.md\nreport: "
            << report << "  (open it in a browser: " << file_url(report) << ")\n";
  return report;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train a tiny self-attention encoder on synthetic sequence tasks (one run), or compare positional\n"
      "encodings over tasks and seeds (--compare), or evaluate a saved checkpoint (--load)."};
  examples::describe_defaults(app);
  Config c;
  std::string positional = "sinusoidal", out = "out", load;
  bool do_compare = false;
  std::vector<std::string> tasks = {"shift", "sort", "count"};
  std::vector<std::string> positionals = {"none", "sinusoidal", "learned", "relative", "rotary"};
  // The causal study adds ALiBi, which the papers on causal models compare.
  std::vector<std::string> causal_positionals = {"none", "sinusoidal", "learned", "relative", "rotary", "alibi"};
  std::vector<std::string> causal_tasks = sg::study::causal_task_names();
  std::vector<std::string> studies = {"encoder", "causal"};
  int64_t seeds = 3, seed = 0;
  // The causal study trains shorter by default, to keep the whole --compare
  // within a few minutes on 2 cores (docs/results.md has the timing).
  int64_t causal_steps = 300;
  int threads = 0;
  const std::vector<std::string> kinds = {"none", "sinusoidal", "learned", "relative", "rotary", "alibi"};
  std::vector<CLI::Option*> training;  // every flag that shapes training: meaningless with --load

  CLI::Option* compare_opt = app.add_flag("--compare", do_compare,
                                          "train every encoding of --positionals on every task of --tasks, "
                                          "--seeds seeds each, and the same with the causal mask on "
                                          "--causal-tasks; writes <out>/compare/ and <out>/compare_causal/");
  std::string report_dir;
  CLI::Option* report_opt =
      app.add_option("--report", report_dir,
                     "rewrite FOLDER/report.html from the files in FOLDER (an earlier run's or --compare's "
                     "output, with any tables added since); trains nothing")
          ->check(CLI::ExistingDirectory);
  CLI::Option* load_opt =
      app.add_option("--load", load, "evaluate a checkpoint written by an earlier run (writes nothing)")
          ->check(CLI::ExistingFile);
  app.add_option("--out", out,
                 "output folder: a run writes <out>/<task>_<encoding>_seed<seed>/ (causal_<task>_... with "
                 "--causal), --compare <out>/compare/ and <out>/compare_causal/")
      ->check(examples::folder());
  CLI::Option* task_opt = app.add_option("--task", c.task, "one run: shift, sort, reverse, count, tally or recall "
                                                           "(with --causal: shift, tally or recall)")
                              ->check(CLI::IsMember(sg::study::task_names()));
  CLI::Option* positional_opt =
      app.add_option("--positional", positional, "one run: none, sinusoidal, learned, relative, rotary or alibi")
          ->check(CLI::IsMember(kinds));
  CLI::Option* causal_opt =
      app.add_flag("--causal", c.causal, "one run with the causal mask: each token attends to itself and the "
                                         "tokens before it only");
  CLI::Option* tasks_opt = app.add_option("--tasks", tasks, "--compare: tasks, comma-separated")
                               ->delimiter(',')
                               ->check(CLI::IsMember(sg::study::task_names()));
  CLI::Option* positionals_opt =
      app.add_option("--positionals", positionals,
                     "--compare: encodings, comma-separated, for both studies (default: the first five for the "
                     "encoder, all six with the causal mask)")
          ->delimiter(',')
          ->check(CLI::IsMember(kinds));
  CLI::Option* causal_tasks_opt =
      app.add_option("--causal-tasks", causal_tasks, "--compare: tasks of the causal study, comma-separated")
          ->delimiter(',')
          ->check(CLI::IsMember(sg::study::causal_task_names()));
  CLI::Option* studies_opt =
      app.add_option("--studies", studies,
                     "--compare: encoder (no mask, --tasks), causal (the causal mask, --causal-tasks) or both")
          ->delimiter(',')
          ->check(CLI::IsMember({"encoder", "causal"}));
  CLI::Option* seeds_opt =
      app.add_option("--seeds", seeds, "--compare: seeds per task and encoding (--seed, --seed + 1, ...)")
          ->check(examples::whole(1, 100));
  CLI::Option* causal_steps_opt =
      app.add_option("--causal-steps", causal_steps,
                     "training steps of --compare's causal study (default: --steps if given, else 300)")
          ->check(examples::whole(1, 10000000));
  training.insert(training.end(), {compare_opt, task_opt, positional_opt, causal_opt, tasks_opt, positionals_opt,
                                   causal_tasks_opt, studies_opt, causal_steps_opt, seeds_opt});
  std::map<std::string, CLI::Option*> int_opts;
  for (const IntSetting& s : kIntSettings) {
    int_opts[s.key] = app.add_option(flag_of(s.key), c.*s.member, s.help)->check(examples::whole(s.lo, s.hi));
    training.push_back(int_opts[s.key]);
  }
  CLI::Option* relative_values_opt =
      app.add_option("--relative-values", c.relative_values,
                     "relative positions only: 1 adds Shaw et al.'s second table (on the values), 0 keys only")
          ->check(examples::whole(0, 1));
  const double inf = std::numeric_limits<double>::infinity();
  training.push_back(relative_values_opt);
  training.push_back(app.add_flag("--pre-norm", c.pre_norm, "pre-norm blocks (layer norm before attention and FFN)"));
  CLI::Option* steps_opt = app.add_option("--steps", c.steps, "training steps")->check(examples::whole(1, 10000000));
  training.push_back(steps_opt);
  training.push_back(app.add_option("--batch", c.batch, "sequences per batch")->check(examples::whole(1, 65536)));
  training.push_back(app.add_option("--dropout", c.dropout, "dropout probability")->check(examples::number(0, true, 0.99)));
  training.push_back(app.add_option("--lr", c.lr, "peak learning rate (AdamW)")->check(examples::number(0, false, 10)));
  CLI::Option* min_lr_opt = app.add_option("--min-lr", c.min_lr, "cosine schedule only: final learning rate")
                                ->check(examples::number(0, true, 10));
  training.push_back(min_lr_opt);
  training.push_back(app.add_option("--schedule", c.schedule, "cosine (linear warm-up, cosine decay) or constant")
                         ->check(CLI::IsMember({"cosine", "constant"})));
  CLI::Option* warmup_opt =
      app.add_option("--warmup", c.warmup, "cosine schedule only: warm-up steps")->check(examples::whole(0, 10000000));
  training.push_back(warmup_opt);
  training.push_back(app.add_option("--weight-decay", c.weight_decay, "AdamW weight decay")
                         ->check(examples::number(0, true, inf)));
  training.push_back(app.add_option("--clip", c.clip, "global gradient-norm clip (0: off)")
                         ->check(examples::number(0, true, inf)));
  training.push_back(app.add_option("--eval-every", c.eval_every, "steps between evaluations")
                         ->check(examples::whole(1, 10000000)));
  training.push_back(app.add_option("--seed", seed, "random seed (model, data)")
                         ->check(examples::whole(0, std::numeric_limits<int64_t>::max())));
  examples::add_threads_flag(app, threads);
  // Contradictions CLI11 reports itself, naming both flags.
  CLI::Option* out_opt = app.get_option("--out");
  load_opt->excludes(out_opt);
  for (CLI::Option* o : training) load_opt->excludes(o), report_opt->excludes(o);
  report_opt->excludes(out_opt);
  report_opt->excludes(load_opt);
  for (CLI::Option* o : {tasks_opt, positionals_opt, causal_tasks_opt, studies_opt, causal_steps_opt, seeds_opt})
    o->needs(compare_opt);
  for (CLI::Option* o : {task_opt, positional_opt, causal_opt}) o->excludes(compare_opt);

  return examples::run(app, argc, argv, [&]() -> int {
    examples::apply_threads(threads);
    if (!load.empty()) return evaluate_checkpoint(load);
    if (!report_dir.empty()) {
      const std::string path = sg::study::report::write_report(
          report_dir, "train_encoder: " + std::filesystem::absolute(report_dir).lexically_normal().filename().string());
      std::cout << "report: " << path << "  (open it in a browser: " << file_url(path) << ")\n";
      return 0;
    }
    c.seed = static_cast<uint64_t>(seed);
    c.positional = sg::nn::parse_positional(positional);
    // The runs: (causal mask?, tasks, kinds) per study.
    struct Study {
      bool causal;
      std::vector<std::string> tasks, kinds;
    };
    std::vector<Study> plan;
    if (!do_compare) {
      plan.push_back({c.causal, {c.task}, {positional}});
    } else {
      if (contains(studies, "encoder")) plan.push_back({false, tasks, positionals});
      if (contains(studies, "causal"))
        plan.push_back({true, causal_tasks, positionals_opt->count() ? positionals : causal_positionals});
    }
    // Flags that apply to one task or encoding only must meet it.
    std::vector<std::string> run_tasks, run_kinds;
    for (const Study& st : plan) {
      run_tasks.insert(run_tasks.end(), st.tasks.begin(), st.tasks.end());
      run_kinds.insert(run_kinds.end(), st.kinds.begin(), st.kinds.end());
    }
    if (int_opts["shift"]->count() && !contains(run_tasks, "shift"))
      throw examples::UsageError("--shift applies to the shift task only, and no run here is one");
    if (int_opts["back"]->count() && !contains(run_tasks, "recall"))
      throw examples::UsageError("--back applies to the recall task only, and no run here is one");
    if ((int_opts["max_distance"]->count() || relative_values_opt->count()) && !contains(run_kinds, "relative"))
      throw examples::UsageError(std::string(int_opts["max_distance"]->count() ? "--max-distance" : "--relative-values") +
                                 " applies to relative positions only, and no run here uses them");
    if (c.schedule == "constant" && (min_lr_opt->count() || (warmup_opt->count() && c.warmup > 0)))
      throw examples::UsageError(std::string(min_lr_opt->count() ? "--min-lr" : "--warmup") +
                                 " applies to the cosine schedule only, not --schedule constant");
    if (c.min_lr > c.lr)
      throw examples::UsageError("--min-lr " + fmt("%g", c.min_lr) + " is above the peak --lr " + fmt("%g", c.lr));
    if (c.max_len < c.min_len)
      throw examples::UsageError("--max-len " + std::to_string(c.max_len) + " is below --min-len " +
                                 std::to_string(c.min_len));
    if (c.eval_max_len < c.eval_min_len)
      throw examples::UsageError("--eval-max-len " + std::to_string(c.eval_max_len) + " is below --eval-min-len " +
                                 std::to_string(c.eval_min_len));
    if (c.eval_min_len <= c.max_len)
      throw examples::UsageError("--eval-min-len " + std::to_string(c.eval_min_len) + " must be above --max-len " +
                                 std::to_string(c.max_len) +
                                 ": the longer-lengths accuracy is for lengths never trained on");
    // The rest (--heads dividing --hidden, rotary's even head width, --shift
    // below --max-len) is checked by building the model(s): usage errors too.
    try {
      for (const Study& st : plan)
        for (const std::string& t : st.tasks)
          for (const std::string& k : st.kinds) {
            Config probe = c;
            probe.task = t;
            probe.positional = sg::nn::parse_positional(k);
            probe.causal = st.causal;
            sg::study::check_config(probe);
            sg::study::Model model(probe);
          }
    } catch (const sg::Error& e) {
      std::string what = e.what();
      if (what.rfind("train_encoder: ", 0) == 0) what.erase(0, 15);
      throw examples::UsageError(what);
    }
    if (!do_compare) return run_one(c, out);
    std::vector<CompareStudy> studies_run;
    for (const Study& st : plan) {
      Config base = c;
      base.causal = st.causal;
      if (st.causal && (causal_steps_opt->count() || !steps_opt->count())) base.steps = causal_steps;
      std::vector<sg::nn::Positional> compared;
      for (const std::string& p : st.kinds) compared.push_back(sg::nn::parse_positional(p));
      studies_run.push_back(plan_study(base, st.tasks, compared, seeds, out, st.causal ? "compare_causal" : "compare"));
    }
    std::vector<CompareJob*> pool;
    for (CompareStudy& study : studies_run)
      for (CompareJob& job : study.jobs) pool.push_back(&job);
    run_side_by_side(pool);
    std::vector<std::string> reports;
    for (CompareStudy& study : studies_run) reports.push_back(write_study(study));
    if (reports.size() > 1) {  // the first study's report last: the page to open first
      std::cout << "\nreports, one per study (open them in a browser):\n";
      for (size_t i = reports.size(); i-- > 0;)
        std::cout << "report: " << reports[i] << "  (" << file_url(reports[i]) << ")\n";
    }
    return 0;
  });
}
