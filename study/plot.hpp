#pragma once
// A small SVG plotter for the examples: line plots with axes (linear or
// log), ticks, labels, bands and a legend beside the axes; heatmaps of square
// cells with labelled rows and columns and a labelled colour bar; grids of
// figures. In the look of Dive into Deep Learning's figures. Dependency-free and
// part of the study library (study/plot.cpp), so examples and coursework can use it;
// tests/study/test_plot.cpp checks its output.

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace sg::study::plot {

struct Series {
  std::string name;
  std::vector<double> x, y;
  // Optional band around the line (e.g. the lowest and highest value over
  // seeds): either empty or as long as x; drawn shaded under the line.
  std::vector<double> lo, hi;
};

struct LineOptions {
  std::string title, xlabel, ylabel;
  int width = 640, height = 280;     // the whole figure, legend included
  bool has_ymin = false, has_ymax = false;  // fixed y range (e.g. accuracy in [0, 1])
  double ymin = 0, ymax = 1;
  // Logarithmic axes: ticks at the powers of log_base, labelled with their
  // values; every value on a log axis must be positive.
  bool log_x = false, log_y = false;
  double log_base = 10;
  // The legend sits outside the axes, to their right, so it never covers a
  // curve; false draws none (a lone series needs no legend).
  bool legend = true;
};

struct HeatmapOptions {
  std::string title, xlabel, ylabel;
  std::string colorbar_label;        // what the colours mean, beside the colour bar
  int width = 360, height = 420;     // at most this; cells are square, so one side may be shorter
  bool has_range = false;  // fixed colour range; else this map's own min and max
  double vmin = 0, vmax = 1;
  // Labels of the columns and rows (e.g. the tokens of a sequence), one per
  // column or row; empty: their indices. NaN cells are drawn grey and
  // hatched (e.g. padding).
  std::vector<std::string> xticklabels, yticklabels;
};

namespace detail {

std::string esc(const std::string& s);

std::string num(double v);

// About `target` round tick values (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int target = 5);

// Matplotlib's "Blues": light for low values, dark blue for high.
std::string blues(double f);

const char* palette(size_t i);

// Solid, dashed, dotted, dash-dot in turn: lines that lie on top of each
// other can still be told apart.
const char* dashes(size_t i);

void header(std::ostringstream& o, double w, double h);

void text(std::ostringstream& o, double x, double y, const std::string& s,
          const char* anchor = "middle", double rotate = 0, int size = 11);

// Rough width of s in pixels at font size 11 (DejaVu Sans averages ~6.5 px a character).
double text_width(const std::string& s, double size = 11);

// One axis: data value -> [0, 1] along it, and its ticks (value, label).
struct Axis {
  double lo, hi;
  bool log;
  double base;
  double frac(double v) const {
    const double t = log ? std::log(v) / std::log(base) : v;
    return (t - lo) / (hi - lo);
  }
  std::vector<std::pair<double, std::string>> tick_list() const {
    std::vector<std::pair<double, std::string>> t;
    if (!log) {
      for (double v : ticks(lo, hi)) t.push_back({v, num(v)});
      return t;
    }
    // Whole exponents; every other one when there would be more than 8.
    const double first = std::ceil(lo - 1e-9), last = std::floor(hi + 1e-9);
    const int every = last - first > 8 ? static_cast<int>(std::ceil((last - first) / 8)) : 1;
    for (double e = first; e <= last; e += every) t.push_back({std::pow(base, e), num(std::pow(base, e))});
    return t;
  }
};

// The range [lo, hi] of the data on an axis (in log units for a log axis).
Axis make_axis(double lo, double hi, bool log, double base, bool pad);

}  // namespace detail

// Lines of y against x, one per series (with a shaded band where the series
// has one), and a legend naming them beside the axes.
std::string line_svg(const std::vector<Series>& series, const LineOptions& opt);

// rows[i][j] as a grid of square cells (row 0 at the top), with a labelled
// colour bar. The colour range is the map's own min and max unless fixed.
std::string heatmap_svg(const std::vector<std::vector<double>>& rows, const HeatmapOptions& opt);

// Figures side by side, `columns` to a row (as matplotlib's subplots): each
// SVG nested at its place, with an optional title over all of them.
std::string grid_svg(const std::vector<std::string>& figures, int columns, const std::string& title = "");

// Writes text to path, whole or not at all: into "<path>.tmp-<pid>-<n>"
// (n counts calls, so threads never share a temporary), then renamed over
// path. Throws naming the path and the reason when it cannot; the previous
// file at path, if any, is then left as it was.
void write_file(const std::string& path, const std::string& contents);

}  // namespace sg::study::plot
