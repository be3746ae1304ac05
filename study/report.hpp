#pragma once
// One self-contained HTML page for a run's output folder: its settings, every
// results table, the curves and other figures, the positions panel, and an
// attention explorer over every block and head of the recorded attention.
// The page is built from the folder's files only (nothing about a run is
// written into this code), so a table or figure another program adds to the
// folder appears in the report too:
//
//   settings.md                 the run's settings (a Markdown table)
//   *.md                        tables (results.md, positions.md, ...)
//   curve*.svg, curves_*.svg    learning curves
//   positions*.svg, positions.md  the positions panel
//   attention.json              the recorded attention (attention_json below)
//   attention_*.svg, other *.svg  figures
//   *.csv                       data, shown as tables under "Data files"
//
// Files older than settings.md are left out: they belong to an earlier run
// that wrote into the same folder. The page needs no network: the figures
// are inline SVG, the explorer a little plain JavaScript over inline JSON.
// Compiled in the study library (study/report.cpp), like study/plot.hpp.
#include <string>
#include <vector>

#include "study/encoder_training.hpp"
#include "study/plot.hpp"

namespace sg::study::report {

// The attention recorded in one training run, for attention_json.
struct RunAttention {
  std::string task, encoding;
  uint64_t seed = 0;
  int64_t heads = 0;
  sg::study::AttentionRecord record;
};

// The runs' recorded attention as JSON (the explorer's data):
//   {"scale": 1000, "runs": [{"task", "encoding", "seed", "blocks", "heads", "T",
//     "sequences": [{"tokens": [T ids, 0 = padding], "labels": [T], "valid_len"}],
//     "snapshots": [{"step", "weights": [per block: B*heads*T*T weights, (B, heads, T, T)
//                    row-major, in thousandths, rounded]}]}]}
// Thousandths as whole numbers keep a comparison's file small (a weight is
// shown to three decimals anyway).
std::string attention_json(const std::vector<RunAttention>& runs);

// The report of `folder` as one HTML page.
std::string build_report(const std::string& folder, const std::string& title);

// Writes folder/report.html (whole or not at all) and returns its path.
std::string write_report(const std::string& folder, const std::string& title);

}  // namespace sg::study::report
