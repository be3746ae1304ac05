#pragma once
// The study's figures of one run, as SVG (study/plot.hpp) or CSV text.
#include <string>

#include "study/encoder_training.hpp"
#include "study/position_properties.hpp"

namespace sg::study {

// d2l's show_heatmaps: every head (columns) of every block (rows) over the
// longest example sequence, at the last recorded step, its tokens on the axes.
std::string heads_svg(const AttentionRecord& rec, const Config& c, const std::string& title);

// The similarity of an encoding's position vectors (position_properties.hpp);
// none has none to show (positions.md says so).
std::string positions_heatmap(const PositionView& v, const Config& c);

// A single run's curves: the loss of every step with the evaluations' and
// the accuracies, side by side (as d2l's Animator shows them).
std::string run_curves_svg(const Result& r, const std::string& title);

// curve.csv: one row per evaluation.
std::string curve_csv(const Result& r);

}  // namespace sg::study
