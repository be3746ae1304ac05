// What study/plot.hpp declares.
#include "study/plot.hpp"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace sg::study::plot {

namespace detail {

std::string esc(const std::string& s) {
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

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", std::fabs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

std::vector<double> ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) { step = m * mag; break; }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
  return t;
}

std::string blues(double f) {
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

const char* palette(size_t i) { // matplotlib's default colour cycle
  static const char* c[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return c[i % 10];
}

const char* dashes(size_t i) {
  static const char* d[] = {"", " stroke-dasharray=\"7 3\"", " stroke-dasharray=\"2 2\"", " stroke-dasharray=\"9 3 2 3\""};
  return d[i % 4];
}

void header(std::ostringstream& o, double w, double h) {
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(w) << "\" height=\"" << num(h)
    << "\" viewBox=\"0 0 " << num(w) << ' ' << num(h) << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

void text(std::ostringstream& o, double x, double y, const std::string& s,
          const char* anchor, double rotate, int size) {
  o << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" text-anchor=\"" << anchor
    << "\" font-size=\"" << size << "\"";
  if (rotate != 0) o << " transform=\"rotate(" << rotate << ' ' << num(x) << ' ' << num(y) << ")\"";
  o << '>' << esc(s) << "</text>\n";
}

double text_width(const std::string& s, double size) {
  size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;  // UTF-8: count characters, not bytes
  return static_cast<double>(chars) * size * 0.6;
}

Axis make_axis(double lo, double hi, bool log, double base, bool pad) {
  if (log) lo = std::log(lo) / std::log(base), hi = std::log(hi) / std::log(base);
  if (!(hi > lo)) lo -= 0.5, hi += 0.5;
  if (pad) {
    const double p = (hi - lo) * 0.05;
    lo -= p, hi += p;
  }
  return {lo, hi, log, base};
}

}  // namespace detail

std::string line_svg(const std::vector<Series>& series, const LineOptions& opt) {
  using namespace detail;
  if (opt.log_x || opt.log_y)
    if (!(opt.log_base > 1)) throw std::invalid_argument("line_svg: log_base " + num(opt.log_base) + " must be above 1");
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& s : series) {
    if (s.x.size() != s.y.size()) throw std::invalid_argument("line_svg: series '" + s.name + "' has x and y of different lengths");
    if ((!s.lo.empty() && s.lo.size() != s.x.size()) || s.lo.size() != s.hi.size())
      throw std::invalid_argument("line_svg: series '" + s.name + "' has a band (lo " + std::to_string(s.lo.size()) +
                                  ", hi " + std::to_string(s.hi.size()) + " values) not as long as x (" +
                                  std::to_string(s.x.size()) + ")");
    auto take = [&](double x, double y) {
      if (!std::isfinite(x) || !std::isfinite(y)) return;
      if ((opt.log_x && x <= 0) || (opt.log_y && y <= 0))
        throw std::invalid_argument("line_svg: series '" + s.name + "' has the point (" + num(x) + ", " + num(y) +
                                    ") on a log axis, where values must be positive");
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    };
    for (size_t i = 0; i < s.x.size(); ++i) {
      take(s.x[i], s.y[i]);
      if (!s.lo.empty()) take(s.x[i], s.lo[i]), take(s.x[i], s.hi[i]);
    }
  }
  if (!std::isfinite(x0)) x0 = 1, x1 = 2, y0 = 1, y1 = 2;
  if (opt.has_ymin) y0 = opt.ymin;
  if (opt.has_ymax) y1 = opt.ymax;
  const Axis ax = make_axis(x0, x1, opt.log_x, opt.log_base, false);
  Axis ay = make_axis(y0, y1, opt.log_y, opt.log_base, false);
  if (!opt.has_ymin || !opt.has_ymax) {  // room above and below the data, not past a fixed end
    const double p = (ay.hi - ay.lo) * 0.05;
    if (!opt.has_ymin) ay.lo -= p;
    if (!opt.has_ymax) ay.hi += p;
  }
  const bool legend = opt.legend && !series.empty();
  double lw = 0;
  if (legend) {
    for (const auto& s : series) lw = std::max(lw, text_width(s.name));
    lw += 40;
  }
  const double left = 62, right = 14 + lw, top = opt.title.empty() ? 15 : 32, bottom = 42;
  const double pw = opt.width - left - right, ph = opt.height - top - bottom;
  if (pw < 40 || ph < 40)
    throw std::invalid_argument("line_svg: a figure of " + std::to_string(opt.width) + " x " + std::to_string(opt.height) +
                                " leaves no room for the axes beside the legend");
  auto X = [&](double v) { return left + ax.frac(v) * pw; };
  auto Y = [&](double v) { return top + (1 - std::clamp(ay.frac(v), 0.0, 1.0)) * ph; };
  std::ostringstream o;
  header(o, opt.width, opt.height);
  if (!opt.title.empty()) text(o, left + pw / 2, 20, opt.title, "middle", 0, 13);
  for (const auto& [v, label] : ax.tick_list()) {
    o << "<line x1=\"" << num(X(v)) << "\" y1=\"" << num(top) << "\" x2=\"" << num(X(v)) << "\" y2=\"" << num(top + ph) << "\" stroke=\"#e5e5e5\"/>\n";
    text(o, X(v), top + ph + 15, label);
  }
  for (const auto& [v, label] : ay.tick_list()) {
    o << "<line x1=\"" << num(left) << "\" y1=\"" << num(Y(v)) << "\" x2=\"" << num(left + pw) << "\" y2=\"" << num(Y(v)) << "\" stroke=\"#e5e5e5\"/>\n";
    text(o, left - 6, Y(v) + 4, label, "end");
  }
  o << "<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\"" << num(pw) << "\" height=\"" << num(ph) << "\" fill=\"none\" stroke=\"black\"/>\n";
  text(o, left + pw / 2, opt.height - 8, opt.xlabel);
  text(o, 16, top + ph / 2, opt.ylabel, "middle", -90);
  auto point = [&](double x, double y) { return num(X(x)) + ',' + num(Y(y)) + ' '; };
  for (size_t k = 0; k < series.size(); ++k) {  // bands first, under every line
    const auto& s = series[k];
    if (s.lo.empty()) continue;
    std::string pts;
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.hi[i])) pts += point(s.x[i], s.hi[i]);
    for (size_t i = s.x.size(); i-- > 0;)
      if (std::isfinite(s.x[i]) && std::isfinite(s.lo[i])) pts += point(s.x[i], s.lo[i]);
    o << "<polygon class=\"band\" fill=\"" << palette(k) << "\" fill-opacity=\"0.18\" stroke=\"none\" points=\"" << pts << "\"/>\n";
  }
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    std::string pts;
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) pts += point(s.x[i], s.y[i]);
    o << "<polyline fill=\"none\" stroke=\"" << palette(k) << "\" stroke-width=\"1.7\"" << dashes(k) << " points=\"" << pts << "\"/>\n";
  }
  if (legend) {
    const double lx = left + pw + 12;
    double ly = top + 4;
    o << "<g class=\"legend\">\n";
    for (size_t k = 0; k < series.size(); ++k, ly += 17) {
      o << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly + 5) << "\" x2=\"" << num(lx + 26) << "\" y2=\"" << num(ly + 5)
        << "\" stroke=\"" << palette(k) << "\" stroke-width=\"1.7\"" << dashes(k) << "/>\n";
      text(o, lx + 32, ly + 9, series[k].name, "start");
    }
    o << "</g>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string heatmap_svg(const std::vector<std::vector<double>>& rows, const HeatmapOptions& opt) {
  using namespace detail;
  const size_t nr = rows.size(), nc = nr ? rows[0].size() : 0;
  for (const auto& r : rows)
    if (r.size() != nc) throw std::invalid_argument("heatmap_svg: rows of different lengths");
  if (!opt.xticklabels.empty() && opt.xticklabels.size() != nc)
    throw std::invalid_argument("heatmap_svg: " + std::to_string(opt.xticklabels.size()) + " column labels for " +
                                std::to_string(nc) + " columns");
  if (!opt.yticklabels.empty() && opt.yticklabels.size() != nr)
    throw std::invalid_argument("heatmap_svg: " + std::to_string(opt.yticklabels.size()) + " row labels for " +
                                std::to_string(nr) + " rows");
  if (opt.has_range && !(opt.vmax > opt.vmin))
    throw std::invalid_argument("heatmap_svg: colour range [" + num(opt.vmin) + ", " + num(opt.vmax) + "] is empty");
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& r : rows)
    for (double v : r)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (opt.has_range) lo = opt.vmin, hi = opt.vmax;
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (!(hi > lo)) hi = lo + 1;
  double label_w = 0;
  for (const auto& l : opt.yticklabels) label_w = std::max(label_w, text_width(l));
  const double left = std::max(48.0, label_w + 30), right = 78, top = opt.title.empty() ? 12 : 32;
  double bottom = 44;
  auto cell_size = [&] {
    return std::min(nc ? (opt.width - left - right) / nc : 1e9, nr ? (opt.height - top - bottom) / nr : 1e9);
  };
  double cell = cell_size();
  // Column labels wider than a cell (words, not indices) stand upright, reading upwards.
  double xlabel_w = 0;
  for (const auto& l : opt.xticklabels) xlabel_w = std::max(xlabel_w, text_width(l));
  const bool upright = xlabel_w > cell - 2;
  if (upright) bottom += xlabel_w - 6, cell = cell_size();
  if (!(cell > 0)) throw std::invalid_argument("heatmap_svg: a figure of " + std::to_string(opt.width) + " x " +
                                               std::to_string(opt.height) + " leaves no room for the cells");
  const double pw = cell * static_cast<double>(nc), ph = cell * static_cast<double>(nr);
  // Wide enough for the title, however few the cells.
  const double width = std::max(left + pw + right, text_width(opt.title, 13) + 16), height = top + ph + bottom;
  std::ostringstream o;
  header(o, width, height);
  if (!opt.title.empty()) text(o, width / 2, 20, opt.title, "middle", 0, 13);
  bool hatch = false;
  for (const auto& r : rows)
    for (double v : r) hatch = hatch || !std::isfinite(v);
  if (hatch)
    o << "<defs><pattern id=\"nan\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
         "<rect width=\"6\" height=\"6\" fill=\"#dddddd\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#aaaaaa\" stroke-width=\"2\"/>"
         "</pattern></defs>\n";
  for (size_t i = 0; i < nr; ++i)
    for (size_t j = 0; j < nc; ++j) {
      const double v = rows[i][j];
      o << "<rect x=\"" << num(left + j * cell) << "\" y=\"" << num(top + i * cell) << "\" width=\"" << num(cell + 0.3)
        << "\" height=\"" << num(cell + 0.3) << "\" fill=\"" << (std::isfinite(v) ? blues((v - lo) / (hi - lo)) : "url(#nan)")
        << "\"/>\n";
    }
  o << "<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\"" << num(pw) << "\" height=\"" << num(ph) << "\" fill=\"none\" stroke=\"black\"/>\n";
  // Labels at cell centres: every one when given (or when they fit), else round indices.
  auto labels = [&](size_t n, const std::vector<std::string>& given, bool x) {
    const bool all = !given.empty() || cell >= 14;
    for (size_t t = 0; t < n; ++t) {
      if (!all) {
        const auto tk = ticks(0, static_cast<double>(n) - 1);
        if (std::find(tk.begin(), tk.end(), static_cast<double>(t)) == tk.end()) continue;
      }
      const std::string s = given.empty() ? std::to_string(t) : given[t];
      if (x && upright) text(o, left + (t + 0.5) * cell + 4, top + ph + 6, s, "end", -90);
      else if (x) text(o, left + (t + 0.5) * cell, top + ph + 15, s);
      else text(o, left - 6, top + (t + 0.5) * cell + 4, s, "end");
    }
  };
  labels(nc, opt.xticklabels, true);
  labels(nr, opt.yticklabels, false);
  text(o, left + pw / 2, height - 8, opt.xlabel);
  text(o, 14, top + ph / 2, opt.ylabel, "middle", -90);
  // Colour bar: 50 bands from hi (top) to lo (bottom), ticks, and its label.
  const double bx = left + pw + 12, bw = 12;
  for (int k = 0; k < 50; ++k)
    o << "<rect x=\"" << num(bx) << "\" y=\"" << num(top + ph * k / 50.0) << "\" width=\"" << num(bw) << "\" height=\"" << num(ph / 50.0 + 0.3) << "\" fill=\"" << blues(1 - (k + 0.5) / 50.0) << "\"/>\n";
  o << "<rect x=\"" << num(bx) << "\" y=\"" << num(top) << "\" width=\"" << num(bw) << "\" height=\"" << num(ph) << "\" fill=\"none\" stroke=\"black\"/>\n";
  for (double t : ticks(lo, hi, 4))
    text(o, bx + bw + 4, top + (1 - (t - lo) / (hi - lo)) * ph + 4, num(t), "start");
  if (!opt.colorbar_label.empty()) text(o, left + pw + right - 8, top + ph / 2, opt.colorbar_label, "middle", -90);
  o << "</svg>\n";
  return o.str();
}

std::string grid_svg(const std::vector<std::string>& figures, int columns, const std::string& title) {
  using namespace detail;
  if (columns < 1) throw std::invalid_argument("grid_svg: columns " + std::to_string(columns) + " must be at least 1");
  auto attr = [](const std::string& svg, const std::string& name) {
    const size_t at = svg.find(' ' + name + "=\"");
    if (svg.rfind("<svg", 0) != 0 || at == std::string::npos || at > svg.find('>'))
      throw std::invalid_argument("grid_svg: a figure is not an <svg> with a " + name);
    return std::stod(svg.substr(at + name.size() + 3));
  };
  std::vector<double> col_w(static_cast<size_t>(columns), 0), row_h((figures.size() + columns - 1) / columns, 0);
  for (size_t i = 0; i < figures.size(); ++i) {
    col_w[i % columns] = std::max(col_w[i % columns], attr(figures[i], "width"));
    row_h[i / columns] = std::max(row_h[i / columns], attr(figures[i], "height"));
  }
  const double top = title.empty() ? 0 : 28;
  double w = 0, h = top;
  for (double c : col_w) w += c;
  for (double r : row_h) h += r;
  std::ostringstream o;
  header(o, w, h);
  if (!title.empty()) text(o, w / 2, 20, title, "middle", 0, 14);
  for (size_t i = 0; i < figures.size(); ++i) {
    double x = 0, y = top;
    for (size_t c = 0; c < i % columns; ++c) x += col_w[c];
    for (size_t r = 0; r < i / columns; ++r) y += row_h[r];
    o << "<svg x=\"" << num(x) << "\" y=\"" << num(y) << '"' << figures[i].substr(4);  // "<svg" + " x=.. y=.." + the rest
  }
  o << "</svg>\n";
  return o.str();
}

void write_file(const std::string& path, const std::string& contents) {
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

}  // namespace sg::study::plot
