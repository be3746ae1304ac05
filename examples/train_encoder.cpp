// Trains a tiny self-attention encoder on synthetic sequence tasks and
// answers the question Dive into Deep Learning's section leaves open: does a
// self-attention encoder need positions, and do learned encodings beat
// fixed sinusoidal ones?
//
//   train_encoder                       one run (task shift, sinusoidal)
//   train_encoder --compare             none, sinusoidal, learned, relative and
//                                       rotary positions on every task, several
//                                       seeds: table and plots
//   train_encoder --load out/x/checkpoint.safetensors   evaluate a saved model
//
// The tasks and the training loop are in nn/encoder_training.hpp.
#include <CLI/CLI.hpp>
#include <smallgrad.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "nn/encoder_training.hpp"
#include "nn/plot.hpp"

namespace {

using sg::training::Config;
using sg::training::Result;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The config as checkpoint metadata, and back: a saved model can be rebuilt.
sg::nn::Metadata to_metadata(const Config& c) {
  return {{"task", c.task},
          {"positional", sg::nn::positional_name(c.positional)},
          {"vocab", std::to_string(c.vocab)},
          {"hidden", std::to_string(c.hidden)},
          {"heads", std::to_string(c.heads)},
          {"ffn", std::to_string(c.ffn)},
          {"blocks", std::to_string(c.blocks)},
          {"max_distance", std::to_string(c.max_distance)},
          {"relative_values", c.relative_values ? "1" : "0"},
          {"pre_norm", c.pre_norm ? "1" : "0"},
          {"min_len", std::to_string(c.min_len)},
          {"max_len", std::to_string(c.max_len)},
          {"eval_min_len", std::to_string(c.eval_min_len)},
          {"eval_max_len", std::to_string(c.eval_max_len)},
          {"shift", std::to_string(c.shift)},
          {"seed", std::to_string(c.seed)}};
}

Config from_metadata(const sg::nn::Metadata& m, const std::string& path) {
  auto get = [&](const std::string& k) {
    auto it = m.find(k);
    if (it == m.end()) sg::fail("train_encoder: checkpoint ", path, " has no '", k, "' in its metadata");
    return it->second;
  };
  Config c;
  c.task = get("task");
  c.positional = sg::nn::parse_positional(get("positional"));
  c.vocab = std::stoll(get("vocab"));
  c.hidden = std::stoll(get("hidden"));
  c.heads = std::stoll(get("heads"));
  c.ffn = std::stoll(get("ffn"));
  c.blocks = std::stoll(get("blocks"));
  // Checkpoints written before these options existed have neither: the defaults then.
  if (m.count("max_distance")) c.max_distance = std::stoll(get("max_distance"));
  if (m.count("relative_values")) c.relative_values = get("relative_values") == "1";
  if (m.count("pre_norm")) c.pre_norm = get("pre_norm") == "1";
  c.min_len = std::stoll(get("min_len"));
  c.max_len = std::stoll(get("max_len"));
  c.eval_min_len = std::stoll(get("eval_min_len"));
  c.eval_max_len = std::stoll(get("eval_max_len"));
  c.shift = std::stoll(get("shift"));
  c.seed = std::stoull(get("seed"));
  return c;
}

// One live line on a terminal (rewritten in place), a line per report otherwise.
sg::training::Progress progress_line(const std::string& label) {
  const bool tty = isatty(2);
  return [label, tty](int64_t step, int64_t steps, double loss, double acc, double tps, double left) {
    std::fprintf(stderr, "%s%s step %lld/%lld  loss %.4f  acc %.3f  %.0f tokens/s  %.0f s left%s",
                 tty ? "\r" : "", label.c_str(), static_cast<long long>(step), static_cast<long long>(steps),
                 loss, acc, tps, left, tty ? "   " : "\n");
    if (tty && step == steps) std::fprintf(stderr, "\n");
  };
}

// Head 0 of the last block's attention over the first evaluation sequence,
// cut to its valid length: (len, len).
std::vector<std::vector<double>> attention_map(sg::training::Model& model, const Config& c) {
  const sg::training::EvalSet set = sg::training::make_eval_set(c, c.min_len, c.max_len, 1);
  const sg::training::Batch& b = set.batches[0];
  {
    sg::NoGradGuard no_grad;
    model.eval();
    model.forward(b.ids, b.valid_lens);
  }
  const sg::Tensor w = model.encoder->attention_weights().back();  // (B, heads, T, T)
  const int64_t T = w.shape()[2], len = b.valid_lens.to_vector<int64_t>()[0];
  const std::vector<float> v = w.to_vector<float>();
  std::vector<std::vector<double>> rows(static_cast<size_t>(len));
  for (int64_t q = 0; q < len; ++q)
    for (int64_t k = 0; k < len; ++k) rows[static_cast<size_t>(q)].push_back(v[static_cast<size_t>(q * T + k)]);
  return rows;
}

void write_curve_csv(const std::string& path, const Result& r) {
  std::ofstream f(path);
  f << "step,loss,train_batch_accuracy,eval_accuracy,grad_norm,first_block_grad_norm\n";
  for (const auto& p : r.curve)
    f << p.step << ',' << p.loss << ',' << p.train_acc << ',' << p.eval_acc << ',' << p.grad_norm << ','
      << p.first_block_grad_norm << '\n';
  if (!f) sg::fail("train_encoder: cannot write ", path);
}

int run_one(Config c, const std::string& out_root) {
  sg::manual_seed(c.seed);
  sg::training::Model model(c);
  const std::string name = c.task + "_" + sg::nn::positional_name(c.positional) + "_seed" + std::to_string(c.seed);
  const std::string dir = out_root + "/" + name;
  std::filesystem::create_directories(dir);
  std::cout << "training " << name << ": " << model.parameter_count() << " parameters, " << sg::num_threads()
            << " threads, lengths " << c.min_len << ".." << c.max_len << "\n";
  const Result r = sg::training::train(model, c, progress_line(name));
  write_curve_csv(dir + "/curve.csv", r);
  sg::plot::LineOptions lo;
  lo.title = c.task + ", " + sg::nn::positional_name(c.positional);
  lo.xlabel = "step";
  lo.ylabel = "accuracy";
  lo.has_ymin = lo.has_ymax = true;
  sg::plot::Series s{"eval accuracy", {}, {}};
  for (const auto& p : r.curve) s.x.push_back(static_cast<double>(p.step)), s.y.push_back(p.eval_acc);
  sg::plot::write_file(dir + "/curve.svg", sg::plot::line_svg({s}, lo));
  sg::plot::HeatmapOptions ho;
  ho.xlabel = "Key position";
  ho.ylabel = "Query position";
  ho.has_range = true;
  sg::plot::write_file(dir + "/attention.svg", sg::plot::heatmap_svg(attention_map(model, c), ho));
  sg::nn::save_checkpoint(dir + "/checkpoint.safetensors", model, nullptr, to_metadata(c));
  std::cout << "accuracy on training lengths " << fmt("%.3f", r.acc_train_lengths) << ", on longer lengths ("
            << c.eval_min_len << ".." << c.eval_max_len << ") " << fmt("%.3f", r.acc_longer) << ", steps to 95% "
            << (r.steps_to_95 < 0 ? std::string("never") : std::to_string(r.steps_to_95)) << ", "
            << fmt("%.1f", r.seconds) << " s\nwrote " << dir << "/{curve.csv,curve.svg,attention.svg,checkpoint.safetensors}\n";
  return 0;
}

int evaluate_checkpoint(const std::string& path) {
  const sg::nn::SafetensorsFile file = sg::nn::load_safetensors(path);
  const Config c = from_metadata(file.metadata, path);
  sg::training::Model model(c);
  sg::nn::load_checkpoint(path, model);
  const double a = sg::training::evaluate(model, sg::training::make_eval_set(c, c.min_len, c.max_len, 1));
  const double b = sg::training::evaluate(model, sg::training::make_eval_set(c, c.eval_min_len, c.eval_max_len, 2));
  std::cout << path << ": task " << c.task << ", positional " << sg::nn::positional_name(c.positional)
            << "\naccuracy on training lengths " << fmt("%.3f", a) << ", on longer lengths " << fmt("%.3f", b) << "\n";
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

int compare(Config base, const std::vector<std::string>& tasks, const std::vector<sg::nn::Positional>& kinds,
            int64_t seeds, const std::string& out_root) {
  const std::string dir = out_root + "/compare";
  std::filesystem::create_directories(dir);
  std::ofstream csv(dir + "/results.csv");
  csv << "task,positional,seed,acc_train_lengths,acc_longer,steps_to_95,seconds\n";
  std::ostringstream table;
  table << "| task | positional | accuracy, training lengths " << base.min_len << "-" << base.max_len
        << " | accuracy, longer " << base.eval_min_len << "-" << base.eval_max_len
        << " | steps to 95% | seconds |\n|---|---|---|---|---|---|\n";
  for (const std::string& task : tasks) {
    std::vector<sg::plot::Series> curves;
    for (sg::nn::Positional kind : kinds) {
      std::vector<double> acc, longer, secs, reached;
      sg::plot::Series mean_curve{sg::nn::positional_name(kind), {}, {}};
      for (int64_t s = 0; s < seeds; ++s) {
        Config c = base;
        c.task = task;
        c.positional = kind;
        c.seed = base.seed + static_cast<uint64_t>(s);
        sg::manual_seed(c.seed);
        sg::training::Model model(c);
        const std::string label = task + "/" + sg::nn::positional_name(kind) + "/seed" + std::to_string(c.seed);
        const Result r = sg::training::train(model, c);
        std::fprintf(stderr, "%-28s acc %.3f  longer %.3f  95%% at %s  %.1f s\n", label.c_str(), r.acc_train_lengths,
                     r.acc_longer, r.steps_to_95 < 0 ? "never" : std::to_string(r.steps_to_95).c_str(), r.seconds);
        csv << task << ',' << sg::nn::positional_name(kind) << ',' << c.seed << ',' << r.acc_train_lengths << ','
            << r.acc_longer << ',' << r.steps_to_95 << ',' << r.seconds << '\n';
        acc.push_back(r.acc_train_lengths);
        longer.push_back(r.acc_longer);
        secs.push_back(r.seconds);
        if (r.steps_to_95 >= 0) reached.push_back(static_cast<double>(r.steps_to_95));
        for (size_t i = 0; i < r.curve.size(); ++i) {
          if (s == 0) mean_curve.x.push_back(static_cast<double>(r.curve[i].step)), mean_curve.y.push_back(0);
          mean_curve.y[i] += r.curve[i].eval_acc / static_cast<double>(seeds);
        }
        if (s == 0) {  // attention of one sample, first seed
          sg::plot::HeatmapOptions ho;
          ho.title = task + ", " + sg::nn::positional_name(kind);
          ho.xlabel = "Key position";
          ho.ylabel = "Query position";
          ho.has_range = true;
          sg::plot::write_file(dir + "/attention_" + task + "_" + sg::nn::positional_name(kind) + ".svg",
                           sg::plot::heatmap_svg(attention_map(model, c), ho));
        }
      }
      curves.push_back(mean_curve);
      const Stats a = stats(acc), l = stats(longer), t = stats(secs);
      const std::string to95 = reached.empty() ? "never"
                               : fmt("%.0f", stats(reached).mean) +
                                     (reached.size() < static_cast<size_t>(seeds)
                                          ? " (" + std::to_string(reached.size()) + "/" + std::to_string(seeds) + " seeds)"
                                          : "");
      table << "| " << task << " | " << sg::nn::positional_name(kind) << " | " << fmt("%.3f", a.mean) << " ± "
            << fmt("%.3f", a.spread) << " | " << fmt("%.3f", l.mean) << " ± " << fmt("%.3f", l.spread) << " | "
            << to95 << " | " << fmt("%.1f", t.mean) << " |\n";
    }
    sg::plot::LineOptions lo;
    lo.title = "task: " + task + " (mean of " + std::to_string(seeds) + " seeds)";
    lo.xlabel = "step";
    lo.ylabel = "accuracy (training lengths)";
    lo.has_ymin = lo.has_ymax = true;
    sg::plot::write_file(dir + "/curves_" + task + ".svg", sg::plot::line_svg(curves, lo));
  }
  std::ofstream md(dir + "/results.md");
  md << table.str();
  if (!md || !csv) sg::fail("train_encoder: cannot write the results in ", dir);
  std::cout << "\n" << table.str() << "\n(mean ± standard deviation over " << seeds << " seeds, " << base.steps
            << " steps each)\nwrote " << dir << "/results.md, results.csv, curves_<task>.svg, attention_<task>_<encoding>.svg\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a tiny self-attention encoder on synthetic tasks; compare positional encodings."};
  Config c;
  std::string positional = "sinusoidal", out = "out", load;
  bool do_compare = false;
  std::vector<std::string> tasks = {"shift", "sort", "count"};
  std::vector<std::string> positionals = {"none", "sinusoidal", "learned", "relative", "rotary"};
  int64_t seeds = 3;
  int threads = 0;
  app.add_option("--task", c.task, "shift, sort, reverse or count")->check(CLI::IsMember(sg::training::task_names()));
  const std::vector<std::string> kinds = {"none", "sinusoidal", "learned", "relative", "rotary"};
  app.add_option("--positional", positional, "none, sinusoidal, learned, relative or rotary")
      ->check(CLI::IsMember(kinds));
  app.add_option("--max-distance", c.max_distance, "relative positions: offsets clipped to +-this")
      ->check(CLI::Range(1, 100000));
  app.add_option("--relative-values", c.relative_values,
                 "relative positions: also a table added to the values (Shaw et al.), 1 or 0 (keys only)");
  app.add_flag("--pre-norm", c.pre_norm, "pre-norm blocks (layer norm before attention and FFN)");
  app.add_flag("--compare", do_compare, "train every encoding on every task over several seeds");
  app.add_option("--tasks", tasks, "tasks for --compare")->delimiter(',')->check(CLI::IsMember(sg::training::task_names()));
  app.add_option("--positionals", positionals, "encodings for --compare")->delimiter(',')->check(CLI::IsMember(kinds));
  app.add_option("--seeds", seeds, "seeds per (task, encoding) for --compare")->check(CLI::Range(1, 100));
  app.add_option("--steps", c.steps, "training steps")->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  app.add_option("--batch", c.batch, "sequences per batch")->check(CLI::Range(1, 65536));
  app.add_option("--vocab", c.vocab, "token ids (0 pads, 1.. are symbols)")->check(CLI::Range(3, 100000));
  app.add_option("--hidden", c.hidden, "model width")->check(CLI::Range(2, 65536));
  app.add_option("--heads", c.heads, "attention heads (must divide --hidden)")->check(CLI::Range(1, 1024));
  app.add_option("--ffn", c.ffn, "feed-forward width")->check(CLI::Range(1, 1 << 20));
  app.add_option("--blocks", c.blocks, "encoder blocks")->check(CLI::Range(0, 1024));
  app.add_option("--dropout", c.dropout, "dropout probability")->check(CLI::Range(0.0, 0.99));
  app.add_option("--lr", c.lr, "peak learning rate (AdamW)")->check(CLI::PositiveNumber);
  app.add_option("--min-lr", c.min_lr, "final learning rate of the cosine schedule")->check(CLI::NonNegativeNumber);
  app.add_option("--schedule", c.schedule, "cosine (linear warm-up, cosine decay) or constant")
      ->check(CLI::IsMember({"cosine", "constant"}));
  app.add_option("--warmup", c.warmup, "warm-up steps")->check(CLI::NonNegativeNumber);
  app.add_option("--weight-decay", c.weight_decay, "AdamW weight decay")->check(CLI::NonNegativeNumber);
  app.add_option("--clip", c.clip, "global gradient-norm clip (0: off)")->check(CLI::NonNegativeNumber);
  app.add_option("--min-len", c.min_len, "shortest training sequence")->check(CLI::Range(1, 100000));
  app.add_option("--max-len", c.max_len, "longest training sequence")->check(CLI::Range(1, 100000));
  app.add_option("--eval-min-len", c.eval_min_len, "shortest longer-than-training evaluation sequence")->check(CLI::Range(1, 100000));
  app.add_option("--eval-max-len", c.eval_max_len, "longest evaluation sequence")->check(CLI::Range(1, 100000));
  app.add_option("--shift", c.shift, "k of the shift task")->check(CLI::Range(1, 100000));
  app.add_option("--eval-every", c.eval_every, "steps between evaluations")->check(CLI::Range(1, 10000000));
  app.add_option("--seed", c.seed, "random seed (model, data)");
  app.add_option("--threads", threads, "threads (default: all cores)")->check(CLI::Range(1, 1024));
  app.add_option("--out", out, "output folder");
  app.add_option("--load", load, "evaluate a checkpoint written by an earlier run")->check(CLI::ExistingFile);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << e.what() << "\n\n" << app.help();
    return 2;
  }
  try {  // flags that parse but do not fit together (--heads 3 --hidden 64) are usage errors too
    c.positional = sg::nn::parse_positional(positional);
    sg::training::check_config(c);
    sg::training::Model probe(c);
  } catch (const sg::Error& e) {
    std::cerr << "error: " << e.what() << "\n\n" << app.help();
    return 2;
  }
  try {
    if (threads) sg::set_num_threads(threads);
    if (!load.empty()) return evaluate_checkpoint(load);
    std::vector<sg::nn::Positional> compared;
    for (const std::string& p : positionals) compared.push_back(sg::nn::parse_positional(p));
    return do_compare ? compare(c, tasks, compared, seeds, out) : run_one(c, out);
  } catch (const sg::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
