#pragma once
// A small SVG plotter for the examples: line plots with axes, ticks, labels
// and a legend, and heatmaps with a colour scale, in the look of Dive into
// Deep Learning's figures. Header-only and dependency-free, so every example
// can include it; tests/test_plot.cpp checks its output.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sg::plot {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

struct LineOptions {
  std::string title, xlabel, ylabel;
  int width = 600, height = 260;
  bool has_ymin = false, has_ymax = false;  // fixed y range (e.g. accuracy in [0, 1])
  double ymin = 0, ymax = 1;
};

struct HeatmapOptions {
  std::string title, xlabel, ylabel;
  int width = 360, height = 420;
  bool has_range = false;  // fixed colour range; else the data's min and max
  double vmin = 0, vmax = 1;
};

namespace detail {

inline std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", std::fabs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

// About `target` round tick values (1, 2 or 5 times a power of ten) covering [lo, hi].
inline std::vector<double> ticks(double lo, double hi, int target = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) { step = m * mag; break; }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
  return t;
}

// Matplotlib's "Blues": light for low values, dark blue for high.
inline std::string blues(double f) {
  static const int stops[9][3] = {{247, 251, 255}, {222, 235, 247}, {198, 219, 239},
                                  {158, 202, 225}, {107, 174, 214}, {66, 146, 198},
                                  {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
  f = std::clamp(std::isfinite(f) ? f : 0.0, 0.0, 1.0) * 8;
  const int i = std::min(7, static_cast<int>(f));
  const double t = f - i;
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x",
                static_cast<int>(stops[i][0] + t * (stops[i + 1][0] - stops[i][0])),
                static_cast<int>(stops[i][1] + t * (stops[i + 1][1] - stops[i][1])),
                static_cast<int>(stops[i][2] + t * (stops[i + 1][2] - stops[i][2])));
  return buf;
}

inline const char* palette(size_t i) {  // matplotlib's default colour cycle
  static const char* c[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return c[i % 10];
}

inline void header(std::ostringstream& o, int w, int h) {
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
    << "\" viewBox=\"0 0 " << w << ' ' << h << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

inline void text(std::ostringstream& o, double x, double y, const std::string& s,
                 const char* anchor = "middle", double rotate = 0, int size = 11) {
  o << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" text-anchor=\"" << anchor
    << "\" font-size=\"" << size << "\"";
  if (rotate != 0) o << " transform=\"rotate(" << rotate << ' ' << num(x) << ' ' << num(y) << ")\"";
  o << '>' << esc(s) << "</text>\n";
}

}  // namespace detail

// Lines of y against x, one per series, with a legend naming them.
inline std::string line_svg(const std::vector<Series>& series, const LineOptions& opt) {
  using namespace detail;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& s : series) {
    if (s.x.size() != s.y.size()) throw std::invalid_argument("line_svg: series '" + s.name + "' has x and y of different lengths");
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
        x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]), y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (opt.has_ymin) y0 = opt.ymin;
  if (opt.has_ymax) y1 = opt.ymax;
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > y0)) y0 -= 0.5, y1 += 0.5;
  const double pad = (y1 - y0) * 0.05;
  if (!opt.has_ymin) y0 -= pad;
  if (!opt.has_ymax) y1 += pad;
  const double left = 60, right = 20, top = opt.title.empty() ? 15 : 30, bottom = 45;
  const double pw = opt.width - left - right, ph = opt.height - top - bottom;
  auto X = [&](double v) { return left + (v - x0) / (x1 - x0) * pw; };
  auto Y = [&](double v) { return top + (1 - (v - y0) / (y1 - y0)) * ph; };
  std::ostringstream o;
  header(o, opt.width, opt.height);
  if (!opt.title.empty()) text(o, left + pw / 2, 18, opt.title, "middle", 0, 13);
  for (double t : ticks(x0, x1)) {
    o << "<line x1=\"" << num(X(t)) << "\" y1=\"" << num(top) << "\" x2=\"" << num(X(t)) << "\" y2=\"" << num(top + ph) << "\" stroke=\"#e5e5e5\"/>\n";
    text(o, X(t), top + ph + 15, num(t));
  }
  for (double t : ticks(y0, y1)) {
    o << "<line x1=\"" << num(left) << "\" y1=\"" << num(Y(t)) << "\" x2=\"" << num(left + pw) << "\" y2=\"" << num(Y(t)) << "\" stroke=\"#e5e5e5\"/>\n";
    text(o, left - 6, Y(t) + 4, num(t), "end");
  }
  o << "<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\"" << num(pw) << "\" height=\"" << num(ph) << "\" fill=\"none\" stroke=\"black\"/>\n";
  text(o, left + pw / 2, opt.height - 8, opt.xlabel);
  text(o, 16, top + ph / 2, opt.ylabel, "middle", -90);
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    std::ostringstream pts;
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i])) pts << num(X(s.x[i])) << ',' << num(Y(std::clamp(s.y[i], y0, y1))) << ' ';
    o << "<polyline fill=\"none\" stroke=\"" << palette(k) << "\" stroke-width=\"1.6\"" << (k % 4 == 1 ? " stroke-dasharray=\"6 3\"" : k % 4 == 2 ? " stroke-dasharray=\"2 2\"" : k % 4 == 3 ? " stroke-dasharray=\"8 3 2 3\"" : "") << " points=\"" << pts.str() << "\"/>\n";
  }
  // Legend, top right inside the axes.
  const double lw = 20 + 7.0 * [&] { size_t m = 0; for (auto& s : series) m = std::max(m, s.name.size()); return static_cast<double>(m); }();
  double ly = top + 8;
  if (!series.empty())
    o << "<rect x=\"" << num(left + pw - lw - 36) << "\" y=\"" << num(top + 4) << "\" width=\"" << num(lw + 32) << "\" height=\"" << num(16.0 * series.size() + 6) << "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#cccccc\"/>\n";
  for (size_t k = 0; k < series.size(); ++k, ly += 16) {
    o << "<line x1=\"" << num(left + pw - lw - 30) << "\" y1=\"" << num(ly + 5) << "\" x2=\"" << num(left + pw - lw - 8) << "\" y2=\"" << num(ly + 5) << "\" stroke=\"" << palette(k) << "\" stroke-width=\"1.6\"" << (k % 4 == 1 ? " stroke-dasharray=\"6 3\"" : k % 4 == 2 ? " stroke-dasharray=\"2 2\"" : k % 4 == 3 ? " stroke-dasharray=\"8 3 2 3\"" : "") << "/>\n";
    text(o, left + pw - lw - 2, ly + 9, series[k].name, "start");
  }
  o << "</svg>\n";
  return o.str();
}

// rows[i][j] as a grid of coloured cells (row 0 at the top), with a colour bar.
inline std::string heatmap_svg(const std::vector<std::vector<double>>& rows, const HeatmapOptions& opt) {
  using namespace detail;
  const size_t nr = rows.size(), nc = nr ? rows[0].size() : 0;
  for (const auto& r : rows)
    if (r.size() != nc) throw std::invalid_argument("heatmap_svg: rows of different lengths");
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& r : rows)
    for (double v : r)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (opt.has_range) lo = opt.vmin, hi = opt.vmax;
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (!(hi > lo)) hi = lo + 1;
  const double left = 55, right = 70, top = opt.title.empty() ? 12 : 30, bottom = 45;
  const double pw = opt.width - left - right, ph = opt.height - top - bottom;
  const double cw = nc ? pw / nc : pw, ch = nr ? ph / nr : ph;
  std::ostringstream o;
  header(o, opt.width, opt.height);
  if (!opt.title.empty()) text(o, left + pw / 2, 18, opt.title, "middle", 0, 13);
  for (size_t i = 0; i < nr; ++i)
    for (size_t j = 0; j < nc; ++j)
      o << "<rect x=\"" << num(left + j * cw) << "\" y=\"" << num(top + i * ch) << "\" width=\"" << num(cw + 0.3) << "\" height=\"" << num(ch + 0.3) << "\" fill=\"" << blues((rows[i][j] - lo) / (hi - lo)) << "\"/>\n";
  o << "<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\"" << num(pw) << "\" height=\"" << num(ph) << "\" fill=\"none\" stroke=\"black\"/>\n";
  // Integer ticks at cell centres.
  for (double t : ticks(0, std::max<double>(nc, 1) - 1))
    if (t == std::floor(t) && t < nc) text(o, left + (t + 0.5) * cw, top + ph + 15, num(t));
  for (double t : ticks(0, std::max<double>(nr, 1) - 1))
    if (t == std::floor(t) && t < nr) text(o, left - 6, top + (t + 0.5) * ch + 4, num(t), "end");
  text(o, left + pw / 2, opt.height - 8, opt.xlabel);
  text(o, 14, top + ph / 2, opt.ylabel, "middle", -90);
  // Colour bar: 50 bands from hi (top) to lo (bottom), with ticks.
  const double bx = left + pw + 14, bw = 14;
  for (int k = 0; k < 50; ++k)
    o << "<rect x=\"" << num(bx) << "\" y=\"" << num(top + ph * k / 50.0) << "\" width=\"" << num(bw) << "\" height=\"" << num(ph / 50.0 + 0.3) << "\" fill=\"" << blues(1 - (k + 0.5) / 50.0) << "\"/>\n";
  o << "<rect x=\"" << num(bx) << "\" y=\"" << num(top) << "\" width=\"" << num(bw) << "\" height=\"" << num(ph) << "\" fill=\"none\" stroke=\"black\"/>\n";
  for (double t : ticks(lo, hi, 4))
    text(o, bx + bw + 4, top + (1 - (t - lo) / (hi - lo)) * ph + 4, num(t), "start");
  o << "</svg>\n";
  return o.str();
}

// Writes text to path, whole or not at all: into "<path>.tmp-<pid>-<n>"
// (n counts calls, so threads never share a temporary), then renamed over
// path. Throws naming the path and the reason when it cannot; the previous
// file at path, if any, is then left as it was.
inline void write_file(const std::string& path, const std::string& contents) {
  static std::atomic<unsigned long> calls{0};
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(calls++);
  auto failed = [&](const char* what) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("plot: cannot write '" + path + "' (" + what + ": " + why + ")");
  };
  errno = 0;
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) failed("creating the temporary file");
    if (!(f << contents) || !f.flush()) failed("writing");
    f.close();
    if (f.fail()) failed("closing");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) failed("renaming into place");
}

}  // namespace sg::plot
