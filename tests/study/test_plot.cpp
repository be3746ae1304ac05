// The examples' SVG plotter: well-formed output with the labels, legend,
// ticks and colour scale a student expects to see.
#include <catch2/catch.hpp>

#include <string>

#include "study/plot.hpp"

namespace {
size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("line_svg draws one polyline per series with axes labels and a legend", "[plot]") {
  sg::study::plot::LineOptions o;
  o.xlabel = "Row (position)";
  o.ylabel = "value <y>";
  const std::string svg = sg::study::plot::line_svg({{"Col 6", {0, 1, 2}, {0, 0.5, 1}}, {"Col 7", {0, 1, 2}, {1, 0, -1}}}, o);
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
  REQUIRE_THROWS_WITH(sg::study::plot::line_svg({{"bad", {0, 1}, {0}}}, {}), Catch::Contains("'bad'"));
}

TEST_CASE("heatmap_svg colours every cell and draws a colour scale", "[plot]") {
  sg::study::plot::HeatmapOptions o;
  o.xlabel = "Column (encoding dimension)";
  const std::string svg = sg::study::plot::heatmap_svg({{0, 0.5, 1}, {1, 0.5, 0}}, o);
  // 6 cells + 50 colour-bar bands + background + 2 frames
  CHECK(count(svg, "<rect") == 6 + 50 + 1 + 2);
  CHECK(svg.find("#f7fbff") != std::string::npos);  // the lowest value, lightest blue
  CHECK(svg.find("#08306b") != std::string::npos);  // the highest, darkest
  CHECK(svg.find(">Column (encoding dimension)<") != std::string::npos);
  REQUIRE_THROWS_WITH(sg::study::plot::heatmap_svg({{0, 1}, {0}}, o), Catch::Contains("different lengths"));
}

TEST_CASE("ticks are round numbers covering the range", "[plot]") {
  const auto t = sg::study::plot::detail::ticks(0, 59);
  REQUIRE(t.size() >= 3);
  CHECK(t.front() == 0);
  CHECK(t[1] == 20);  // about 5 ticks over 59: a step of 20, not 11.8
  CHECK(t.back() <= 59);
}

namespace {
// The number in attribute `name` of the first element that has it after `from`.
double attr_after(const std::string& s, const std::string& from, const std::string& name) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  const size_t a = s.find(' ' + name + "=\"", at);
  REQUIRE(a != std::string::npos);
  return std::stod(s.substr(a + name.size() + 3));
}
}  // namespace

TEST_CASE("line_svg puts the legend beside the axes, never over the data", "[plot]") {
  sg::study::plot::LineOptions o;
  o.title = "accuracy";
  o.width = 500;
  const std::string svg = sg::study::plot::line_svg({{"rotary positions", {0, 1}, {1, 1}}, {"b", {0, 1}, {0, 1}}}, o);
  // The axes' frame is the rect drawn unfilled in black; the legend starts right of it.
  const size_t frame = svg.rfind("<rect", svg.find("fill=\"none\" stroke=\"black\""));
  const double right = attr_after(svg.substr(frame), "<rect", "x") + attr_after(svg.substr(frame), "<rect", "width");
  CHECK(right > 100);
  CHECK(attr_after(svg, "<g class=\"legend\">", "x1") > right);
  CHECK(attr_after(svg, "<g class=\"legend\">", "x1") + 130 < 500);  // and inside the figure
  CHECK(svg.find(">accuracy<") != std::string::npos);
  // A lone series without a legend leaves the room to the axes.
  o.legend = false;
  CHECK(sg::study::plot::line_svg({{"x", {0, 1}, {0, 1}}}, o).find("class=\"legend\"") == std::string::npos);
}

TEST_CASE("line_svg shades a series' band and checks its length", "[plot]") {
  const std::string svg = sg::study::plot::line_svg({{"mean", {0, 1, 2}, {0.5, 0.6, 0.7}, {0.4, 0.5, 0.6}, {0.6, 0.7, 0.8}}}, {});
  CHECK(count(svg, "<polygon class=\"band\"") == 1);
  // 3 points along the top and 3 back along the bottom.
  const size_t p = svg.find("points=\"", svg.find("<polygon"));
  const std::string pts = svg.substr(p + 8, svg.find('"', p + 8) - p - 8);
  CHECK(count(pts, ",") == 6);
  REQUIRE_THROWS_WITH(sg::study::plot::line_svg({{"short", {0, 1}, {0, 1}, {0}, {1}}}, {}), Catch::Contains("'short'"));
}

TEST_CASE("line_svg draws real log axes: ticks at powers of the base, evenly spaced", "[plot]") {
  sg::study::plot::LineOptions o;
  o.log_x = o.log_y = true;
  o.log_base = 2;
  o.legend = false;
  const std::string svg = sg::study::plot::line_svg({{"t", {16, 64, 1024}, {1, 4, 32}}}, o);
  for (const char* t : {">16<", ">64<", ">1024<", ">1<", ">32<"}) CHECK(svg.find(t) != std::string::npos);
  CHECK(svg.find(">4.0<") == std::string::npos);
  // x ticks at 16, 32, 64: equal gaps on a log axis.
  auto tick_x = [&](const std::string& label) {
    const size_t at = svg.find(">" + label + "<");
    REQUIRE(at != std::string::npos);
    const size_t x = svg.rfind("<text x=\"", at);
    return std::stod(svg.substr(x + 9));
  };
  CHECK(tick_x("32") - tick_x("16") == Approx(tick_x("64") - tick_x("32")).epsilon(1e-3));
  REQUIRE_THROWS_WITH(sg::study::plot::line_svg({{"neg", {1, 2}, {1, -1}}}, o), Catch::Contains("positive"));
}

TEST_CASE("heatmap_svg: square cells, token labels, title, colour bar label, own range, grey NaN", "[plot]") {
  sg::study::plot::HeatmapOptions o;
  o.title = "block 1, head 0";
  o.colorbar_label = "attention weight";
  o.xticklabels = {"a", "b", "c", "<pad>"};
  o.yticklabels = {"a", "b"};
  const double nan = std::nan("");
  const std::string svg = sg::study::plot::heatmap_svg({{0.1, 0.2, 0.3, nan}, {0.3, 0.2, 0.1, nan}}, o);
  const size_t cell = svg.find("<rect x=", svg.find("</text>"));
  const double w = std::stod(svg.substr(svg.find("width=\"", cell) + 7)),
               h = std::stod(svg.substr(svg.find("height=\"", cell) + 8));
  CHECK(w == h);
  for (const char* t : {">block 1, head 0<", ">attention weight<", ">&lt;pad&gt;<", ">a<", ">b<"})
    CHECK(svg.find(t) != std::string::npos);
  CHECK(count(svg, "fill=\"url(#nan)\"") == 2);
  // The range is this map's own: 0.1 is the lightest colour, 0.3 the darkest.
  CHECK(count(svg, "fill=\"#f7fbff\"") >= 2);
  CHECK(count(svg, "fill=\"#08306b\"") >= 2);
  o.xticklabels = {"too few"};
  REQUIRE_THROWS_WITH(sg::study::plot::heatmap_svg({{0, 1}}, o), Catch::Contains("1 column labels for 2 columns"));
}

TEST_CASE("heatmap_svg stands column labels upright when they are wider than a cell", "[plot]") {
  sg::study::plot::HeatmapOptions o;
  o.width = 200, o.height = 400;  // 8 rows: cells of about 40 px
  const std::vector<std::vector<double>> rows(8, std::vector<double>{0.1, 0.2});
  // The <text> element that draws `label`.
  auto element = [](const std::string& svg, const std::string& label) {
    const size_t at = svg.find(">" + label + "<");
    REQUIRE(at != std::string::npos);
    const size_t start = svg.rfind("<text", at);
    return svg.substr(start, at - start);
  };
  o.xticklabels = {"a", "b"};
  CHECK(element(sg::study::plot::heatmap_svg(rows, o), "b").find("rotate(") == std::string::npos);
  o.xticklabels = {"a", "quatre-vingt-onze"};  // about 110 px
  CHECK(element(sg::study::plot::heatmap_svg(rows, o), "quatre-vingt-onze").find("rotate(-90") != std::string::npos);
}

TEST_CASE("grid_svg places figures side by side in one SVG", "[plot]") {
  sg::study::plot::LineOptions o;
  o.width = 300, o.height = 200;
  const std::string a = sg::study::plot::line_svg({{"a", {0, 1}, {0, 1}}}, o);
  const std::string g = sg::study::plot::grid_svg({a, a, a}, 2, "two by two");
  CHECK(g.rfind("<svg", 0) == 0);
  CHECK(count(g, "<svg") == 4);
  CHECK(count(g, "</svg>") == 4);
  CHECK(g.find("<svg x=\"300\" y=\"28\"") != std::string::npos);
  CHECK(g.find("<svg x=\"0\" y=\"228\"") != std::string::npos);
  CHECK(g.find("width=\"600\" height=\"428\"") != std::string::npos);
  REQUIRE_THROWS_WITH(sg::study::plot::grid_svg({"not svg"}, 1), Catch::Contains("not an <svg>"));
}
