// The examples' SVG plotter: well-formed output with the labels, legend,
// ticks and colour scale a student expects to see.
#include <catch2/catch.hpp>

#include <string>

#include "nn/plot.hpp"

namespace {
size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("line_svg draws one polyline per series with axes labels and a legend", "[plot]") {
  sg::plot::LineOptions o;
  o.xlabel = "Row (position)";
  o.ylabel = "value <y>";
  const std::string svg = sg::plot::line_svg({{"Col 6", {0, 1, 2}, {0, 0.5, 1}}, {"Col 7", {0, 1, 2}, {1, 0, -1}}}, o);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "<polyline") == 2);
  CHECK(svg.find(">Col 6<") != std::string::npos);
  CHECK(svg.find(">Col 7<") != std::string::npos);
  CHECK(svg.find(">Row (position)<") != std::string::npos);
  CHECK(svg.find("value &lt;y&gt;") != std::string::npos);  // escaped
  CHECK(svg.find(">-1<") != std::string::npos);             // a y tick
  CHECK(count(svg, "<text") == count(svg, "</text>"));
}

TEST_CASE("line_svg rejects series whose x and y differ in length", "[plot]") {
  REQUIRE_THROWS_WITH(sg::plot::line_svg({{"bad", {0, 1}, {0}}}, {}), Catch::Contains("'bad'"));
}

TEST_CASE("heatmap_svg colours every cell and draws a colour scale", "[plot]") {
  sg::plot::HeatmapOptions o;
  o.xlabel = "Column (encoding dimension)";
  const std::string svg = sg::plot::heatmap_svg({{0, 0.5, 1}, {1, 0.5, 0}}, o);
  // 6 cells + 50 colour-bar bands + background + 2 frames
  CHECK(count(svg, "<rect") == 6 + 50 + 1 + 2);
  CHECK(svg.find("#f7fbff") != std::string::npos);  // the lowest value, lightest blue
  CHECK(svg.find("#08306b") != std::string::npos);  // the highest, darkest
  CHECK(svg.find(">Column (encoding dimension)<") != std::string::npos);
  REQUIRE_THROWS_WITH(sg::plot::heatmap_svg({{0, 1}, {0}}, o), Catch::Contains("different lengths"));
}

TEST_CASE("ticks are round numbers covering the range", "[plot]") {
  const auto t = sg::plot::detail::ticks(0, 59);
  REQUIRE(t.size() >= 3);
  CHECK(t.front() == 0);
  CHECK(t[1] == 20);  // about 5 ticks over 59: a step of 20, not 11.8
  CHECK(t.back() <= 59);
}
