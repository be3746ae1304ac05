#include "gpt/gpt_report.hpp"

#include <algorithm>
#include <sstream>

#include "autograd/engine.hpp"
#include "study/plot.hpp"

namespace examples::gpt {
namespace {

namespace plot = sg::study::plot;

// A token as a heatmap label: visible whitespace, at most 6 characters.
std::string label(const std::string& token) {
  std::string out;
  for (char c : token) out += c == '\n' ? std::string("\\n") : c == ' ' ? std::string("\xe2\x90\xa3") : std::string(1, c);
  return out.size() > 12 ? out.substr(0, 12) : out;
}

}  // namespace

std::string samples_md(const std::vector<Evaluation>& history, const std::string& prompt,
                       const std::string& final_sample, uint64_t seed) {
  std::ostringstream o;
  o << "# What the model wrote\n\nEach sample continues the prompt (" << plot::detail::esc(label(prompt))
    << ") at temperature 0.8, top-k 200, seed " << seed << ".\n\n";
  for (const Evaluation& e : history)
    o << "## Iteration " << e.iter << " (train loss " << e.train_loss << ", val loss " << e.val_loss << ")\n\n```\n"
      << e.sample << "\n```\n\n";
  o << "## The final sample\n\n```\n" << final_sample << "\n```\n";
  return o.str();
}

std::string report_html(const sg::nn::GPT& model, const sg::text::Tokenizer& tok, const Settings& s,
                        const std::string& corpus_source, const std::vector<Evaluation>& history,
                        const std::string& final_sample) {
  std::ostringstream o;
  o << "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>train_gpt</title><style>"
       "body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#222}"
       "pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap;border-left:3px solid #89b}"
       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
       ".head{display:none}.head.on{display:block}select{margin-right:1em}"
       "</style></head><body>\n<h1>A GPT on "
    << plot::detail::esc(corpus_source == kKjvCommand ? "the King James Bible (" + corpus_source + ")" : corpus_source)
    << "</h1>\n";
  o << "<h2>Settings</h2><table>";
  auto row = [&](const std::string& k, const std::string& v) { o << "<tr><th>" << k << "</th><td>" << v << "</td></tr>"; };
  row("tokens", std::string(tok.kind()) + ", vocabulary " + std::to_string(tok.vocab_size()));
  row("model", std::to_string(s.model.n_layer) + " layers, " + std::to_string(s.model.n_head) + " heads, width " +
                   std::to_string(s.model.n_embd) + ", context " + std::to_string(s.model.block_size) + ", " +
                   sg::nn::positional_name(s.model.positional) + " positions, " +
                   std::to_string(model.parameter_count()) + " parameters");
  row("training", std::to_string(s.max_iters) + " iterations of batch " + std::to_string(s.batch_size) +
                      ", AdamW lr " + plot::detail::num(s.learning_rate) + " (warmup " +
                      std::to_string(s.warmup_iters) + ", cosine to " + plot::detail::num(s.min_lr) + ")");
  o << "</table>\n";

  plot::Series train{"train", {}, {}, {}, {}}, val{"validation", {}, {}, {}, {}};
  for (const Evaluation& e : history) {
    train.x.push_back(static_cast<double>(e.iter)), train.y.push_back(e.train_loss);
    val.x.push_back(static_cast<double>(e.iter)), val.y.push_back(e.val_loss);
  }
  o << "<h2>Loss</h2><p>The mean cross-entropy (nats per token) over " << s.eval_iters
    << " random batches of each split at each evaluation.</p>\n"
    << plot::line_svg({train, val}, {.title = "Loss", .xlabel = "iteration", .ylabel = "loss"}) << "\n";

  o << "<h2>Samples during training</h2><p>Temperature 0.8, top-k 200, seed " << s.seed << ".</p>\n";
  for (const Evaluation& e : history)
    o << "<h3>Iteration " << e.iter << "</h3><pre>" << plot::detail::esc(e.sample) << "</pre>\n";
  o << "<h3>The final sample</h3><pre>" << plot::detail::esc(final_sample) << "</pre>\n";

  // The explorer: the final sample's first tokens read by the trained model.
  const std::vector<int64_t> sample_ids = tok.encode(final_sample);
  const auto shown = std::min<int64_t>(static_cast<int64_t>(sample_ids.size()), std::min<int64_t>(s.model.block_size, 32));
  const std::vector<int64_t> ids(sample_ids.begin(), sample_ids.begin() + shown);
  std::vector<std::string> tokens;
  for (int64_t id : ids) tokens.push_back(label(tok.decode({id})));
  std::vector<sg::Tensor> weights;
  {
    sg::NoGradGuard no_grad;
    model.forward(sg::from_vector(ids, {1, static_cast<int64_t>(ids.size())}), nullptr, &weights);
  }
  const int64_t T = static_cast<int64_t>(ids.size());
  o << "<h2>Attention explorer</h2><p>The first " << T
    << " tokens of the final sample, read by the trained model: row i is the token at position i, its weights "
       "over positions 0..i (causal: nothing after it).</p>\n<label>block <select id=\"blk\">";
  for (int64_t b = 0; b < s.model.n_layer; ++b) o << "<option>" << b << "</option>";
  o << "</select></label><label>head <select id=\"hd\">";
  for (int64_t h = 0; h < s.model.n_head; ++h) o << "<option>" << h << "</option>";
  o << "</select></label>\n";
  for (int64_t b = 0; b < s.model.n_layer; ++b)
    for (int64_t h = 0; h < s.model.n_head; ++h) {
      const std::vector<float> w = weights[static_cast<size_t>(b)].to_vector<float>();
      std::vector<std::vector<double>> grid(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(T)));
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) grid[i][j] = w[static_cast<size_t>((h * T + i) * T + j)];
      o << "<div class=\"head" << (b == 0 && h == 0 ? " on" : "") << "\" id=\"b" << b << "h" << h << "\">"
        << plot::heatmap_svg(grid, {.title = "block " + std::to_string(b) + ", head " + std::to_string(h),
                                    .xlabel = "key position",
                                    .ylabel = "query position",
                                    .colorbar_label = "weight",
                                    .width = 720,
                                    .height = 720,
                                    .has_range = true,
                                    .vmin = 0,
                                    .vmax = 1,
                                    .xticklabels = tokens,
                                    .yticklabels = tokens})
        << "</div>\n";
    }
  o << "<script>function show(){document.querySelectorAll('.head').forEach(e=>e.classList.remove('on'));"
       "document.getElementById('b'+blk.value+'h'+hd.value).classList.add('on');}"
       "blk.onchange=show;hd.onchange=show;</script>\n</body></html>\n";
  return o.str();
}

}  // namespace examples::gpt
