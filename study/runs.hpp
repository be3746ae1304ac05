#pragma once
// One run of the study, as train_encoder makes it: its folder's name, its
// files' contents, the lines it prints, and a saved run evaluated again. The
// program writes the files (staged, moved into place together); this
// computes what goes into them.
#include <string>
#include <utility>
#include <vector>

#include "study/encoder_training.hpp"

namespace sg::study {

// A file of a run or a comparison: (name in its folder, contents).
using File = std::pair<std::string, std::string>;

// The folder of a run: [causal_]<task>_<encoding>_seed<seed>.
std::string run_name(const Config& c);
// "<task>, <encoding>[, causal], seed <seed>": the run's figures' and report's title.
std::string run_title(const Config& c);
// Every file a run writes, settings.md first (report.html by the report itself).
const std::vector<std::string>& run_file_names();
// settings.md of a run: written first, so that the report knows every later
// file as this run's.
std::string run_settings_md(const Config& c);
// "training <name>: <n> parameters, <threads>, lengths <min>..<max>\n"
std::string run_start_line(const std::string& name, const Model& model, const Config& c);
// The files of a finished run, in the order they are written: results.md,
// curve.csv, curve.svg, attention.svg, attention.json, positions.md and
// positions.svg (not for an encoding without position vectors). Not
// settings.md (written before training) or the checkpoint (saved by
// sg::checkpoint::save with to_metadata(c)).
std::vector<File> run_files(const Model& model, const Config& c, const Result& r);
// The lines printed at the end of a run: its accuracies, the files written
// to `dir`, and its report.
std::string run_summary(const Config& c, const Result& r, const std::string& dir, const std::string& report);

// A checkpoint written by a run, rebuilt from its metadata and evaluated on
// the training and the longer lengths again: the lines to print.
std::string evaluate_checkpoint(const std::string& path);

// The runs of one study: the causal mask or not, its tasks and kinds of positions.
struct StudyPlan {
  bool causal;
  std::vector<std::string> tasks, kinds;
};
// Checks what flags alone cannot (--heads dividing --hidden, rotary's even
// head width, --shift below --max-len) by checking the config of every run
// of the plan and building its model; throws sg::Error.
void check_plan(const Config& c, const std::vector<StudyPlan>& plan);

}  // namespace sg::study
