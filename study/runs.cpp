// What study/runs.hpp declares.
#include "study/runs.hpp"

#include <sstream>

#include "checkpoint/checkpoint.hpp"
#include "core/runtime.hpp"
#include "study/figures.hpp"
#include "study/position_properties.hpp"
#include "study/report.hpp"
#include "study/settings.hpp"

namespace sg::study {

std::string run_name(const Config& c) {
  return (c.causal ? "causal_" : "") + c.task + "_" + nn::positional_name(c.positional) + "_seed" +
         std::to_string(c.seed);
}

std::string run_title(const Config& c) {
  return c.task + ", " + nn::positional_name(c.positional) + (c.causal ? ", causal" : "") + ", seed " +
         std::to_string(c.seed);
}

const std::vector<std::string>& run_file_names() {
  static const std::vector<std::string> names = {
      "settings.md",   "results.md",   "curve.csv",     "curve.svg",    "attention.svg",
      "attention.json", "positions.md", "positions.svg", "model.safetensors", "report.html"};
  return names;
}

std::string run_settings_md(const Config& c) {
  return settings_md(c, {{"task", c.task}, {"positional", nn::positional_name(c.positional)},
                         {"--seed", std::to_string(c.seed)}});
}

std::string run_start_line(const std::string& name, const Model& model, const Config& c) {
  std::ostringstream o;
  o << "training " << name << ": " << model.parameter_count() << " parameters, "
    << (automatic_threads_in_use() ? "automatic threads (now " + std::to_string(num_threads()) + ")"
                                   : std::to_string(num_threads()) + " threads")
    << (data_parallel_threads(c) > 1 ? " (data-parallel steps)" : "") << ", lengths " << c.min_len << ".."
    << c.max_len << "\n";
  return o.str();
}

std::vector<File> run_files(const Model& model, const Config& c, const Result& r) {
  const std::string title = run_title(c);
  std::vector<File> files;
  files.emplace_back("results.md",
                     "| task | positional | seed | chance | accuracy, training lengths " + std::to_string(c.min_len) + "-" +
                         std::to_string(c.max_len) + " | accuracy, longer " + std::to_string(c.eval_min_len) + "-" +
                         std::to_string(c.eval_max_len) + " | of which positions " + std::to_string(c.max_len + 1) +
                         "-" + std::to_string(c.eval_max_len) +
                         " | steps to 95% | seconds |\n|---|---|---|---|---|---|---|---|---|\n| " + c.task + " | " +
                         nn::positional_name(c.positional) + " | " + std::to_string(c.seed) + " | " +
                         fmt("%.3f", r.chance) + " | " +
                         fmt("%.3f", r.acc_train_lengths) + " | " + fmt("%.3f", r.acc_longer) + " | " +
                         fmt("%.3f", r.acc_past_train) + " | " +
                         (r.steps_to_95 < 0 ? std::string("never") : std::to_string(r.steps_to_95)) + " | " +
                         fmt("%.1f", r.seconds) + " |\n");
  files.emplace_back("curve.csv", curve_csv(r));
  files.emplace_back("curve.svg", run_curves_svg(r, title));
  files.emplace_back("attention.svg", heads_svg(r.attention, c, title));
  files.emplace_back("attention.json", report::attention_json(
                                           {{c.task, nn::positional_name(c.positional), c.seed, c.heads, r.attention}}));
  const PositionView view = view_positions(model, c, r.acc_longer);
  files.emplace_back("positions.md", properties_table({{c.task, view}}));
  if (!view.similarity.empty()) files.emplace_back("positions.svg", positions_heatmap(view, c));
  return files;
}

std::string run_summary(const Config& c, const Result& r, const std::string& dir, const std::string& report) {
  std::ostringstream o;
  o << "accuracy on training lengths " << fmt("%.3f", r.acc_train_lengths) << " (chance "
    << fmt("%.3f", r.chance) << "), on longer lengths ("
    << c.eval_min_len << ".." << c.eval_max_len << ") " << fmt("%.3f", r.acc_longer)
    << ", on their positions past the training length (" << c.max_len + 1 << ".." << c.eval_max_len << ") "
    << fmt("%.3f", r.acc_past_train) << ", steps to 95% "
    << (r.steps_to_95 < 0 ? std::string("never") : std::to_string(r.steps_to_95)) << ", "
    << fmt("%.1f", r.seconds) << " s\nwrote " << dir
    << "/{settings.md,results.md,curve.csv,curve.svg,attention.svg,attention.json,positions.md,"
       "positions.svg (not for none),model.safetensors}\nreport: "
    << report << "  (open it in a browser: " << file_url(report) << ")\n";
  return o.str();
}

std::string evaluate_checkpoint(const std::string& path) {
  const checkpoint::SafetensorsFile file = checkpoint::load_safetensors(path);
  const Config c = from_metadata(file.metadata, path);
  Model model(c);
  checkpoint::load(path, model);
  const double a = evaluate(model, make_eval_set(c, c.min_len, c.max_len, 1));
  const EvalSet longer = make_eval_set(c, c.eval_min_len, c.eval_max_len, 2);
  const double b = evaluate(model, longer);
  const double past = evaluate_positions(model, longer).from(c.max_len);
  std::ostringstream o;
  o << path << ": task " << c.task << ", positional " << nn::positional_name(c.positional)
    << (c.causal ? ", causal mask" : "") << "\naccuracy on training lengths " << fmt("%.3f", a)
    << ", on longer lengths " << fmt("%.3f", b) << ", on their positions past the training length ("
    << c.max_len + 1 << ".." << c.eval_max_len << ") " << fmt("%.3f", past) << "\n";
  return o.str();
}

void check_plan(const Config& c, const std::vector<StudyPlan>& plan) {
  for (const StudyPlan& st : plan)
    for (const std::string& t : st.tasks)
      for (const std::string& k : st.kinds) {
        Config probe = c;
        probe.task = t;
        probe.positional = nn::parse_positional(k);
        probe.causal = st.causal;
        check_config(probe);
        Model model(probe);
      }
}

}  // namespace sg::study
