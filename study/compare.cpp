// What study/compare.hpp declares.
#include "study/compare.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "study/figures.hpp"
#include "study/plot.hpp"
#include "study/position_properties.hpp"
#include "study/report.hpp"
#include "study/settings.hpp"

namespace sg::study {

std::vector<std::string> default_kinds(bool causal) {
  std::vector<std::string> kinds;
  for (const nn::PositionalKind& k : nn::positional_kinds())
    if (causal || k.kind != nn::Positional::alibi) kinds.push_back(k.name);
  return kinds;
}

std::string comparison_folder(const Config& base) { return base.causal ? "compare_causal" : "compare"; }

const std::vector<std::string>& comparison_file_names() {
  static const std::vector<std::string> names = {"settings.md",    "results.md",   "results.csv", "accuracy_by_position.csv",
                                                 "attention.json", "positions.md", "report.html"};
  return names;
}

Comparison plan_comparison(Config base, const std::vector<std::string>& tasks,
                           const std::vector<nn::Positional>& kinds, int64_t seeds) {
  base.record_attention_at = record_steps(base.steps);
  std::vector<Job> jobs;
  for (const std::string& task : tasks)
    for (nn::Positional kind : kinds)
      for (int64_t s = 0; s < seeds; ++s) {
        Job job;
        job.c = base;
        job.c.task = task;
        job.c.positional = kind;
        job.c.seed = base.seed + static_cast<uint64_t>(s);
        job.label = std::string(base.causal ? "causal " : "") + task + "/" + nn::positional_name(kind) + "/seed" +
                    std::to_string(job.c.seed);
        job.keep_model = s == 0;
        jobs.push_back(std::move(job));
      }
  return {base, tasks, kinds, seeds, std::move(jobs)};
}

std::string comparison_settings_md(const Comparison& cmp) {
  std::vector<std::string> kind_names;
  for (nn::Positional k : cmp.kinds) kind_names.push_back(nn::positional_name(k));
  return settings_md(cmp.base, {{"--tasks", join_names(cmp.tasks)},
                                {"--positionals", join_names(kind_names)},
                                {"--seeds", std::to_string(cmp.seeds) + " (from --seed " +
                                                std::to_string(cmp.base.seed) + ")"}});
}

namespace {

// Adds y at index i of the seeds' mean (with the band from the lowest to the
// highest seed); the first seed makes the point at x.
void add_to_mean(plot::Series& mean, size_t i, double x, double y, bool first, int64_t seeds) {
  if (first) mean.x.push_back(x), mean.y.push_back(0), mean.lo.push_back(y), mean.hi.push_back(y);
  mean.y[i] += y / static_cast<double>(seeds);
  mean.lo[i] = std::min(mean.lo[i], y), mean.hi[i] = std::max(mean.hi[i], y);
}

}  // namespace

ComparisonFiles comparison_files(const Comparison& cmp) {
  const Config& base = cmp.base;
  const int64_t seeds = cmp.seeds;
  std::vector<report::RunAttention> recorded;
  std::vector<std::pair<std::string, PositionView>> views;
  std::ostringstream csv;
  csv << "task,positional,seed,acc_train_lengths,acc_longer,steps_to_95,seconds,acc_past_train,chance\n";
  std::ostringstream by_position_csv;  // accuracy at each position of the longer sequences
  by_position_csv << "task,positional,seed,position,accuracy\n";
  const std::string past = std::to_string(base.max_len + 1) + "-" + std::to_string(base.eval_max_len);
  const std::string mask = base.causal ? ", causal" : "";
  std::ostringstream table;
  table << "| task | positional | chance | accuracy, training lengths " << base.min_len << "-" << base.max_len
        << " | accuracy, longer " << base.eval_min_len << "-" << base.eval_max_len << " | of which positions "
        << past << " | steps to 95% | seconds |\n|---|---|---|---|---|---|---|---|\n";
  std::vector<File> plots;
  size_t run = 0;
  for (const std::string& task : cmp.tasks) {
    std::vector<plot::Series> curves, by_position;
    std::vector<std::string> position_maps;
    for (nn::Positional kind : cmp.kinds) {
      const std::string name = nn::positional_name(kind);
      std::vector<double> acc, longer, past_train, secs, reached;
      double chance = 0;  // the same evaluation set for every kind and seed of a task
      // The mean over seeds, with a band from the lowest to the highest seed.
      plot::Series mean_curve{name, {}, {}, {}, {}};
      plot::Series mean_by_position{name, {}, {}, {}, {}};
      for (int64_t s = 0; s < seeds; ++s) {
        const Job& job = cmp.jobs[run++];
        const Config& c = job.c;
        const Result& r = job.r;
        csv << task << ',' << name << ',' << c.seed << ',' << r.acc_train_lengths << ',' << r.acc_longer << ','
            << r.steps_to_95 << ',' << r.seconds << ',' << r.acc_past_train << ',' << r.chance << '\n';
        // Positions no sequence labels (the first of shift and recall) have
        // no accuracy: left out, the same ones for every seed.
        for (size_t t = 0, i = 0; t < r.acc_by_position.size(); ++t) {
          if (std::isnan(r.acc_by_position[t])) continue;
          by_position_csv << task << ',' << name << ',' << c.seed << ',' << t + 1 << ',' << r.acc_by_position[t]
                          << '\n';
          add_to_mean(mean_by_position, i++, static_cast<double>(t + 1), r.acc_by_position[t], s == 0, seeds);
        }
        chance = r.chance;
        acc.push_back(r.acc_train_lengths);
        longer.push_back(r.acc_longer);
        past_train.push_back(r.acc_past_train);
        secs.push_back(r.seconds);
        if (r.steps_to_95 >= 0) reached.push_back(static_cast<double>(r.steps_to_95));
        for (size_t i = 0; i < r.curve.size(); ++i)
          add_to_mean(mean_curve, i, static_cast<double>(r.curve[i].step), r.curve[i].eval_acc, s == 0, seeds);
        recorded.push_back({task, name, c.seed, c.heads, r.attention});
        if (s == 0) {  // every head of the first seed, and its positions
          plots.emplace_back("attention_" + task + "_" + name + ".svg",
                             heads_svg(r.attention, c, task + ", " + name + mask + ", seed " + std::to_string(c.seed)));
          views.emplace_back(task, view_positions(*job.model, c, r.acc_longer));
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
      table << "| " << task << " | " << name << " | " << fmt("%.3f", chance) << " | " << fmt("%.3f", a.mean) << " ± " << fmt("%.3f", a.spread)
            << " | " << fmt("%.3f", l.mean) << " ± " << fmt("%.3f", l.spread) << " | " << fmt("%.3f", p.mean)
            << " ± " << fmt("%.3f", p.spread) << " | " << to95 << " | " << fmt("%.1f", t.mean) << " |\n";
    }
    const std::string over_seeds =
        seeds > 1 ? " (mean of " + std::to_string(seeds) + " seeds; band: lowest to highest)" : " (1 seed)";
    plot::LineOptions lo;
    lo.title = "task: " + task + mask + over_seeds;
    lo.xlabel = "step";
    lo.ylabel = "accuracy (training lengths)";
    lo.has_ymin = lo.has_ymax = true;
    lo.width = 720, lo.height = 320;
    plots.emplace_back("curves_" + task + ".svg", plot::line_svg(curves, lo));
    plot::LineOptions po = lo;
    po.title = task + mask + ": accuracy per position, lengths " + std::to_string(base.eval_min_len) + "-" +
               std::to_string(base.eval_max_len) + " (trained on " + std::to_string(base.min_len) + "-" +
               std::to_string(base.max_len) + "; " +
               (seeds > 1 ? std::to_string(seeds) + " seeds, band: lowest to highest)" : "1 seed)");
    po.xlabel = "position";
    po.ylabel = "accuracy at the position";
    plots.emplace_back("accuracy_by_position_" + task + ".svg", plot::line_svg(by_position, po));
    if (!position_maps.empty())
      plots.emplace_back("positions_" + task + ".svg",
                         plot::grid_svg(position_maps, 3, "positions after training on " + task + mask +
                                                              ": similarity of position i and position j"));
  }
  ComparisonFiles out{std::move(plots), table.str()};
  out.files.emplace_back("results.csv", csv.str());
  out.files.emplace_back("accuracy_by_position.csv", by_position_csv.str());
  out.files.emplace_back("results.md", out.table);
  out.files.emplace_back("attention.json", report::attention_json(recorded));
  out.files.emplace_back("positions.md", properties_table(views));
  return out;
}

std::string comparison_title(const Comparison& cmp) {
  return cmp.base.causal ? "train_encoder --compare, with the causal mask" : "train_encoder --compare";
}

std::string comparison_summary(const Comparison& cmp, const std::string& table, const std::string& dir,
                               const std::string& report) {
  std::ostringstream o;
  o << "\n" << (cmp.base.causal ? "with the causal mask:\n" : "") << table << "\n(mean ± standard deviation over "
    << cmp.seeds << (cmp.seeds == 1 ? " seed, " : " seeds, ") << cmp.base.steps << " steps each)\nwrote " << dir
    << "/results.md, results.csv, accuracy_by_position.csv, curves_<task>.svg, accuracy_by_position_<task>.svg, "
       "attention_<task>_<encoding>.svg, positions_<task>.svg, positions.md, attention.json, settings.md\nreport: "
    << report << "  (open it in a browser: " << file_url(report) << ")\n";
  return o.str();
}

}  // namespace sg::study
