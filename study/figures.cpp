// What study/figures.hpp declares.
#include "study/figures.hpp"

#include <algorithm>
#include <sstream>

#include "study/plot.hpp"

namespace sg::study {

std::string heads_svg(const AttentionRecord& rec, const Config& c, const std::string& title) {
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
      plot::HeatmapOptions ho;
      ho.title = "block " + std::to_string(b) + ", head " + std::to_string(h);
      ho.xlabel = "key token";
      ho.ylabel = "query token";
      ho.colorbar_label = "attention weight";
      ho.xticklabels = ho.yticklabels = tokens;
      ho.width = 300, ho.height = 270;
      maps.push_back(plot::heatmap_svg(rows, ho));
    }
  return plot::grid_svg(maps, static_cast<int>(std::min<int64_t>(c.heads, 4)),
                        title + ": attention at step " + std::to_string(snap.step) + ", sequence " +
                            std::to_string(seq) + " (length " + std::to_string(len) + ")");
}

std::string positions_heatmap(const PositionView& v, const Config& c) {
  plot::HeatmapOptions ho;
  ho.title = v.what;
  ho.xlabel = "position j";
  ho.ylabel = "position i";
  ho.colorbar_label = c.positional == nn::Positional::relative ? "cosine similarity to offset 0" : "cosine similarity";
  ho.width = 330, ho.height = 300;
  return plot::heatmap_svg(v.similarity, ho);
}

std::string run_curves_svg(const Result& r, const std::string& title) {
  plot::Series step_loss{"training batch", {0.0}, {r.curve.at(0).loss}, {}, {}};
  for (size_t i = 0; i < r.step_loss.size(); ++i)
    step_loss.x.push_back(static_cast<double>(i + 1)), step_loss.y.push_back(r.step_loss[i]);
  plot::Series train{"training batch", {}, {}, {}, {}}, eval{"evaluation set", {}, {}, {}, {}};
  for (const auto& p : r.curve) {
    train.x.push_back(static_cast<double>(p.step)), train.y.push_back(p.train_acc);
    eval.x.push_back(static_cast<double>(p.step)), eval.y.push_back(p.eval_acc);
  }
  plot::LineOptions lo;
  lo.title = "loss";
  lo.xlabel = "step";
  lo.ylabel = "cross-entropy (training batch)";
  lo.width = 420;
  lo.legend = false;  // one line, named by its axis
  const std::string loss = plot::line_svg({step_loss}, lo);
  lo.legend = true;
  lo.width = 520;
  lo.title = "accuracy";
  lo.ylabel = "accuracy (training lengths)";
  lo.has_ymin = lo.has_ymax = true;
  return plot::grid_svg({loss, plot::line_svg({train, eval}, lo)}, 2, title);
}

std::string curve_csv(const Result& r) {
  std::ostringstream f;
  f << "step,loss,train_batch_accuracy,eval_accuracy,grad_norm,first_block_grad_norm\n";
  for (const auto& p : r.curve)
    f << p.step << ',' << p.loss << ',' << p.train_acc << ',' << p.eval_acc << ',' << p.grad_norm << ','
      << p.first_block_grad_norm << '\n';
  return f.str();
}

}  // namespace sg::study
