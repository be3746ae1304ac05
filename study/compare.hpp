#pragma once
// A comparison (train_encoder --compare): every kind of positions on every
// task, `seeds` seeds each, with or without the causal mask, and its files:
// the table (results.md, results.csv), accuracy per position, the curves,
// every head's attention, the positions' properties. The program checks the
// comparison's folder and writes settings.md first (plan_comparison), runs
// the jobs of every comparison in one pool (run_pool.hpp), then writes each
// comparison's files (comparison_files) and report. Nothing but settings.md
// is written until every run is done: an interrupted comparison leaves the
// last complete tables, CSVs and plots as they were.
#include <string>
#include <vector>

#include "study/encoder_training.hpp"
#include "study/run_pool.hpp"
#include "study/runs.hpp"

namespace sg::study {

// The kinds of positions a study compares by default: all of them with the
// causal mask; without it all but ALiBi, which the papers on causal models
// compare (it is there for --positional and --positionals).
std::vector<std::string> default_kinds(bool causal);

struct Comparison {
  Config base;
  std::vector<std::string> tasks;
  std::vector<nn::Positional> kinds;
  int64_t seeds = 1;
  std::vector<Job> jobs;  // task by task, kind by kind, seed by seed
};

// Its folder: compare/, or compare_causal/ with the causal mask.
std::string comparison_folder(const Config& base);
// The files checked before any work (the plots' names depend on the tasks).
const std::vector<std::string>& comparison_file_names();
// The runs of a comparison, seeds base.seed, base.seed + 1, ...; attention
// recorded at record_steps(base.steps).
Comparison plan_comparison(Config base, const std::vector<std::string>& tasks,
                           const std::vector<nn::Positional>& kinds, int64_t seeds);
// settings.md: written first, so that the report knows every later file as
// this comparison's.
std::string comparison_settings_md(const Comparison& cmp);

// The files of a comparison whose jobs are done, in the order they are
// written; `table` is results.md's, which the summary prints.
struct ComparisonFiles {
  std::vector<File> files;
  std::string table;
};
ComparisonFiles comparison_files(const Comparison& cmp);
// The report's title.
std::string comparison_title(const Comparison& cmp);
// What is printed when a comparison's files are in place.
std::string comparison_summary(const Comparison& cmp, const std::string& table, const std::string& dir,
                               const std::string& report);

}  // namespace sg::study
