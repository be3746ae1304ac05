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
//   train_encoder --load out/x/model.safetensors   evaluate a saved model
//   train_encoder --report out/compare  rewrite a folder's report.html from its files
//
// The study itself is the library smallgrad::study (study/): the tasks and
// the training loop (study/encoder_training.hpp), a run's files
// (study/runs.hpp), a comparison's (study/compare.hpp) and the pool that
// trains its runs side by side (study/run_pool.hpp). This program reads the
// flags, calls the study and writes its outputs.
//
// Every output is staged and moved into place only when the run (or the
// whole comparison) completes; a failed or interrupted run leaves the output
// folder as it found it (examples/cli.hpp).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>

#include "checkpoint/checkpoint.hpp"
#include "cli11.hpp"
#include "study/compare.hpp"
#include "study/report.hpp"
#include "study/run_pool.hpp"
#include "study/runs.hpp"
#include "study/settings.hpp"

namespace {

using sg::study::Config;

int run_one(Config c, const std::string& out_root) {
  const std::string name = sg::study::run_name(c);
  // The folder is checked before training; the files move in when all are written.
  examples::Outputs out(out_root + "/" + name, "--out");
  for (const std::string& f : sg::study::run_file_names()) out.expect(f);
  c.record_attention_at = sg::study::record_steps(c.steps);
  out.write("settings.md", sg::study::run_settings_md(c));
  sg::manual_seed(c.seed);
  sg::study::Model model(c);
  std::cout << sg::study::run_start_line(name, model, c);
  const sg::study::Result r = sg::study::train(model, c, sg::study::progress_line(name), &examples::g_stop);
  for (const auto& [file, contents] : sg::study::run_files(model, c, r)) out.write(file, contents);
  sg::checkpoint::save(out.stage("model.safetensors"), model, nullptr, sg::study::to_metadata(c));
  out.commit();
  const std::string report = sg::study::report::write_report(out.dir(), "train_encoder: " + sg::study::run_title(c));
  std::cout << sg::study::run_summary(c, r, out.dir(), report);
  return 0;
}

// Every study of the plan: its folder checked and its settings.md written
// first, the runs of all of them trained in one pool (so that no core waits
// for the last run of one study before the next starts), then each study's
// files and report.
int compare(const std::vector<sg::study::StudyPlan>& plan, const Config& c, bool steps_given, int64_t causal_steps,
            bool causal_steps_given, int64_t seeds, const std::string& out_root) {
  std::vector<sg::study::Comparison> comparisons;
  std::vector<std::unique_ptr<examples::Outputs>> outs;
  for (const sg::study::StudyPlan& st : plan) {
    Config base = c;
    base.causal = st.causal;
    if (st.causal && (causal_steps_given || !steps_given)) base.steps = causal_steps;
    std::vector<sg::nn::Positional> kinds;
    for (const std::string& k : st.kinds) kinds.push_back(sg::nn::parse_positional(k));
    outs.push_back(std::make_unique<examples::Outputs>(out_root + "/" + sg::study::comparison_folder(base), "--out"));
    for (const std::string& f : sg::study::comparison_file_names()) outs.back()->expect(f);
    comparisons.push_back(sg::study::plan_comparison(base, st.tasks, kinds, seeds));
    outs.back()->write("settings.md", sg::study::comparison_settings_md(comparisons.back()));
  }
  std::vector<sg::study::Job*> pool;
  for (sg::study::Comparison& cmp : comparisons)
    for (sg::study::Job& job : cmp.jobs) pool.push_back(&job);
  sg::study::run_side_by_side(pool, &examples::g_stop);
  std::vector<std::string> reports;
  for (size_t i = 0; i < comparisons.size(); ++i) {
    examples::Outputs& out = *outs[i];
    const sg::study::ComparisonFiles files = sg::study::comparison_files(comparisons[i]);
    for (const auto& [file, contents] : files.files) out.write(file, contents);
    out.commit();
    reports.push_back(sg::study::report::write_report(out.dir(), sg::study::comparison_title(comparisons[i])));
    std::cout << sg::study::comparison_summary(comparisons[i], files.table, out.dir(), reports.back());
  }
  if (reports.size() > 1) {  // the first study's report last: the page to open first
    std::cout << "\nreports, one per study (open them in a browser):\n";
    for (size_t i = reports.size(); i-- > 0;)
      std::cout << "report: " << reports[i] << "  (" << sg::study::file_url(reports[i]) << ")\n";
  }
  return 0;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// "five" for 5: the help's count of default kinds.
std::string in_words(size_t n) {
  const char* words[] = {"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
  return n < std::size(words) ? words[n] : std::to_string(n);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train a tiny self-attention encoder on synthetic sequence tasks (one run), or compare positional\n"
      "encodings over tasks and seeds (--compare), or evaluate a saved checkpoint (--load)."};
  examples::describe_defaults(app);
  {  // the kinds of positions, one line each, from their table
    std::string kinds_help = "Kinds of positions (--positional, --positionals):";
    for (const sg::nn::PositionalKind& k : sg::nn::positional_kinds())
      kinds_help += "\n  " + (k.name + std::string(12, ' ')).substr(0, 12) + k.help;
    app.footer(kinds_help);
  }
  Config c;
  std::string positional = "sinusoidal", out = "out", load;
  bool do_compare = false;
  std::vector<std::string> tasks = {"shift", "sort", "count"};
  // The kinds of positions (positional_kinds(), nn/positional.hpp); by
  // default all but ALiBi without the mask, all with it (study/compare.hpp).
  const std::vector<std::string> kinds = sg::nn::positional_names();
  std::vector<std::string> positionals = sg::study::default_kinds(false);
  const std::vector<std::string> causal_positionals = sg::study::default_kinds(true);
  std::vector<std::string> causal_tasks = sg::study::causal_task_names();
  std::vector<std::string> studies = {"encoder", "causal"};
  int64_t seeds = 3, seed = 0;
  // The causal study trains shorter by default, to keep the whole --compare
  // within a few minutes on 2 cores (docs/results.md has the timing).
  int64_t causal_steps = 300;
  int threads = 0;
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
      app.add_option("--positional", positional, "one run: " + sg::study::join_names(kinds, " or "))
          ->check(CLI::IsMember(kinds));
  CLI::Option* causal_opt =
      app.add_flag("--causal", c.causal, "one run with the causal mask: each token attends to itself and the "
                                         "tokens before it only");
  CLI::Option* tasks_opt = app.add_option("--tasks", tasks, "--compare: tasks, comma-separated")
                               ->delimiter(',')
                               ->check(CLI::IsMember(sg::study::task_names()));
  CLI::Option* positionals_opt =
      app.add_option("--positionals", positionals,
                     "--compare: encodings, comma-separated, for both studies (default: the first " +
                         in_words(positionals.size()) + " for the encoder, all " + in_words(causal_positionals.size()) +
                         " with the causal mask)")
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
  for (const sg::study::IntSetting& s : sg::study::int_settings()) {
    int_opts[s.key] = app.add_option(sg::study::flag_of(s.key), c.*s.member, s.help)->check(examples::whole(s.lo, s.hi));
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
    if (!load.empty()) {
      std::cout << sg::study::evaluate_checkpoint(load);
      return 0;
    }
    if (!report_dir.empty()) {
      const std::string path = sg::study::report::write_report(
          report_dir, "train_encoder: " + std::filesystem::absolute(report_dir).lexically_normal().filename().string());
      std::cout << "report: " << path << "  (open it in a browser: " << sg::study::file_url(path) << ")\n";
      return 0;
    }
    c.seed = static_cast<uint64_t>(seed);
    c.positional = sg::nn::parse_positional(positional);
    // The runs: (causal mask?, tasks, kinds) per study.
    std::vector<sg::study::StudyPlan> plan;
    if (!do_compare) {
      plan.push_back({c.causal, {c.task}, {positional}});
    } else {
      if (contains(studies, "encoder")) plan.push_back({false, tasks, positionals});
      if (contains(studies, "causal"))
        plan.push_back({true, causal_tasks, positionals_opt->count() ? positionals : causal_positionals});
    }
    // Flags that apply to one task or encoding only must meet it.
    std::vector<std::string> run_tasks, run_kinds;
    for (const sg::study::StudyPlan& st : plan) {
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
      throw examples::UsageError("--min-lr " + sg::study::fmt("%g", c.min_lr) + " is above the peak --lr " +
                                 sg::study::fmt("%g", c.lr));
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
      sg::study::check_plan(c, plan);
    } catch (const sg::Error& e) {
      std::string what = e.what();
      if (what.rfind("train_encoder: ", 0) == 0) what.erase(0, 15);
      throw examples::UsageError(what);
    }
    if (!do_compare) return run_one(c, out);
    return compare(plan, c, steps_opt->count() > 0, causal_steps, causal_steps_opt->count() > 0, seeds, out);
  });
}
