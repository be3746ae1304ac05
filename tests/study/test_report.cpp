// The HTML report: built from a folder's files only (every table, figure and
// data file there, none of an earlier run), with the recorded attention as
// JSON the explorer reads. The page in a browser: tests/report_browser.py.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "study/report.hpp"

namespace {
namespace fs = std::filesystem;

struct Folder {
  fs::path dir = fs::temp_directory_path() / ("smallgrad_report_" + std::to_string(::getpid()));
  Folder() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Folder() { fs::remove_all(dir); }
  void put(const std::string& name, const std::string& text) const { std::ofstream(dir / name) << text; }
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

sg::study::AttentionRecord tiny_record() {
  sg::study::AttentionRecord r;
  r.examples.ids = sg::from_vector(std::vector<int64_t>{3, 5, 0}, {1, 3});
  r.examples.labels = sg::from_vector(std::vector<int64_t>{0, 3, -100}, {1, 3});
  r.examples.valid_lens = sg::from_vector(std::vector<int64_t>{2}, {1});
  // 1 sequence, 2 heads, T = 3: head 0 attends to itself, head 1 evenly.
  std::vector<float> w = {1, 0, 0, 0, 1, 0, 0.5f, 0.5f, 0, 0.5f, 0.5f, 0, 0.5f, 0.5f, 0, 0.5f, 0.5f, 0};
  r.snapshots.push_back({0, {w}});
  r.snapshots.push_back({10, {w}});
  return r;
}
}  // namespace

TEST_CASE("attention_json writes tokens, lengths and every weight in thousandths", "[report]") {
  const std::string j = sg::study::report::attention_json({{"shift", "rotary", 7, 2, tiny_record()}});
  CHECK(j.find("\"scale\": 1000") != std::string::npos);
  CHECK(j.find("\"task\": \"shift\", \"encoding\": \"rotary\", \"seed\": 7, \"blocks\": 1, \"heads\": 2, \"T\": 3") !=
        std::string::npos);
  CHECK(j.find("\"tokens\": [3,5,0], \"labels\": [0,3,-100], \"valid_len\": 2") != std::string::npos);
  CHECK(j.find("[1000,0,0,0,1000,0,500,500,0,500,500,0,500,500,0,500,500,0]") != std::string::npos);
  CHECK(j.find("\"step\": 10") != std::string::npos);
  sg::study::AttentionRecord bad = tiny_record();
  bad.snapshots[1].blocks[0].pop_back();
  REQUIRE_THROWS_WITH(sg::study::report::attention_json({{"shift", "rotary", 7, 2, bad}}),
                      Catch::Contains("block 0 of step 10 has 17 weights"));
}

TEST_CASE("the report shows every table, figure and data file of its folder, none of an earlier run", "[report]") {
  Folder f;
  f.put("stale.md", "| stale-table-cell | x |\n|---|---|\n| 1 | 2 |\n");
  fs::last_write_time(f.dir / "stale.md", fs::file_time_type::clock::now() - std::chrono::hours(1));
  f.put("settings.md", "| setting | value |\n|---|---|\n| --steps | 42 |\n");
  f.put("results.md", "| task | accuracy |\n|---|---|\n| shift | 0.987 |\n");
  f.put("causal_study.md", "A study added by another program.\n\n| mask | accuracy |\n|---|---|\n| causal | 0.5 |\n");
  f.put("results.csv", "task,accuracy\nshift,0.987\n");
  f.put("curves_shift.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><title>the curve</title></svg>\n");
  f.put("positions.md", "| task | encoding | 1. unique |\n|---|---|---|\n| shift | learned | yes |\n");
  f.put("attention.json", sg::study::report::attention_json({{"shift", "rotary", 7, 2, tiny_record()}}));
  const std::string html = sg::study::report::build_report(f.dir.string(), "a <test> run");
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("<title>a &lt;test&gt; run</title>") != std::string::npos);
  CHECK(html.find("<td>--steps</td><td>42</td>") != std::string::npos);
  CHECK(html.find("<td>shift</td><td>0.987</td>") != std::string::npos);   // results.md (and the CSV)
  CHECK(html.find("<td>causal</td><td>0.5</td>") != std::string::npos);    // a table the report code never heard of
  CHECK(html.find("<p>A study added by another program.</p>") != std::string::npos);
  CHECK(html.find("<title>the curve</title>") != std::string::npos);       // the SVG inline
  CHECK(html.find("<td>learned</td><td>yes</td>") != std::string::npos);
  CHECK(html.find("stale") == std::string::npos);  // stale.md left out
  CHECK(html.find("id=\"attention-data\"") != std::string::npos);
  CHECK(html.find("id=\"x-head\"") != std::string::npos);
  CHECK(count(html, "<table") == count(html, "</table>"));
  // Nothing from the network: no http(s) address anywhere but the SVG namespace.
  CHECK(count(html, "http") == count(html, "http://www.w3.org/2000/svg"));
  // Written whole, next to the files.
  CHECK(sg::study::report::write_report(f.dir.string(), "t") == f.dir.string() + "/report.html");
  CHECK(fs::file_size(f.dir / "report.html") > 1000);
  REQUIRE_THROWS_WITH(sg::study::report::build_report((f.dir / "nope").string(), "t"), Catch::Contains("is not a folder"));
}
