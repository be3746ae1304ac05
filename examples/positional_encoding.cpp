// The positional-encoding study of Dive into Deep Learning's section
// "Self-Attention and Positional Encoding", retold in C++:
//   1. columns 6 to 9 of the sinusoidal table P against position (a line plot),
//   2. the whole of P as a heatmap,
//   3. the binary representations of 0 to 7 (the analogy the section draws),
//   4. the relative-position property, checked numerically: for any offset
//      delta, a fixed 2x2 rotation maps (P[i, 2j], P[i, 2j+1]) to
//      (P[i+delta, 2j], P[i+delta, 2j+1]) for every position i.
// Run: build/release/examples/positional_encoding [--out DIR]
#include <smallgrad.hpp>

#include <cmath>
#include <iostream>
#include <string>

#include "cli.hpp"
#include "study/plot.hpp"

namespace {

int study(const std::string& out_dir) {
  // Checked before any work; the plots move in together at the end.
  examples::Outputs out(out_dir, "--out");
  out.expect("columns.svg");
  out.expect("heatmap.svg");

  const int64_t encoding_dim = 32, num_steps = 60;
  sg::nn::PositionalEncoding pos_encoding(encoding_dim, 0.0);
  pos_encoding.eval();
  const sg::Tensor X = pos_encoding.forward(sg::zeros({1, num_steps, encoding_dim}));
  sg::nn::check_shape(X, {1, num_steps, encoding_dim}, "encoded zeros");
  const std::vector<float> P = X.to_vector<float>();  // zeros + P = the first num_steps rows of P
  auto p = [&](int64_t i, int64_t j) { return static_cast<double>(P[static_cast<size_t>(i * encoding_dim + j)]); };

  // 1. Columns 6..9 against position: lower columns oscillate faster.
  std::vector<sg::study::plot::Series> cols;
  for (int64_t c = 6; c < 10; ++c) {
    sg::study::plot::Series s{"Col " + std::to_string(c), {}, {}};
    for (int64_t i = 0; i < num_steps; ++i) s.x.push_back(static_cast<double>(i)), s.y.push_back(p(i, c));
    cols.push_back(s);
  }
  sg::study::plot::LineOptions lo;
  lo.title = "Sinusoidal encoding: columns 6-9 against position";
  lo.xlabel = "Row (position)";
  lo.ylabel = "P[i, j]";
  out.write("columns.svg", sg::study::plot::line_svg(cols, lo));

  // 2. The whole table as a heatmap.
  std::vector<std::vector<double>> rows(static_cast<size_t>(num_steps));
  for (int64_t i = 0; i < num_steps; ++i)
    for (int64_t j = 0; j < encoding_dim; ++j) rows[static_cast<size_t>(i)].push_back(p(i, j));
  sg::study::plot::HeatmapOptions ho;
  ho.title = "Sinusoidal encoding P, " + std::to_string(num_steps) + " positions x " + std::to_string(encoding_dim) +
             " dimensions";
  ho.xlabel = "Column (encoding dimension)";
  ho.ylabel = "Row (position)";
  ho.colorbar_label = "P[i, j]";
  ho.width = 440, ho.height = 640;
  out.write("heatmap.svg", sg::study::plot::heatmap_svg(rows, ho));

  // 3. Binary: the lowest bit flips every number, higher bits ever more slowly,
  // as the frequencies fall along P's columns.
  for (int i = 0; i < 8; ++i)
    std::cout << i << " in binary is " << ((i >> 2) & 1) << ((i >> 1) & 1) << (i & 1) << "\n";

  // 4. Relative positions: with w_j = 1 / 10000^(2j/d),
  //   [ cos(d w)  sin(d w)] [P[i, 2j]  ]   [P[i+d, 2j]  ]
  //   [-sin(d w)  cos(d w)] [P[i, 2j+1]] = [P[i+d, 2j+1]]
  // a projection that depends on the offset delta only, not on i.
  std::cout << "\nrelative-position property (max |rotated - shifted| over all i, j):\n";
  for (int64_t delta : {1, 2, 5, 10, 20}) {
    double worst = 0;
    for (int64_t i = 0; i + delta < num_steps; ++i)
      for (int64_t j = 0; j < encoding_dim / 2; ++j) {
        const double w = 1.0 / std::pow(10000.0, 2.0 * static_cast<double>(j) / encoding_dim);
        const double c = std::cos(static_cast<double>(delta) * w), s = std::sin(static_cast<double>(delta) * w);
        const double a = p(i, 2 * j), b = p(i, 2 * j + 1);
        worst = std::max({worst, std::fabs(c * a + s * b - p(i + delta, 2 * j)),
                          std::fabs(-s * a + c * b - p(i + delta, 2 * j + 1))});
      }
    std::cout << "  delta " << delta << ": " << worst << "\n";
  }
  out.commit();
  std::cout << "\nwrote " << out_dir << "/columns.svg and " << out_dir << "/heatmap.svg\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::Flags flags{"Dive into Deep Learning's positional-encoding figures (columns of P, P as a heatmap) and\n"
                        "a numerical check of the relative-position property."};
  std::string out = "out/positional_encoding";
  flags.folder("--out", out, "output folder for columns.svg and heatmap.svg");
  return examples::run(flags, argc, argv, [&] { return study(out); });
}
