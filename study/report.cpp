// What study/report.hpp declares.
#include "study/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sg::study::report {

std::string attention_json(const std::vector<RunAttention>& runs) {
  std::ostringstream o;
  o << "{\"scale\": 1000, \"runs\": [";
  for (size_t r = 0; r < runs.size(); ++r) {
    const RunAttention& run = runs[r];
    const auto& ex = run.record.examples;
    const int64_t B = ex.ids.shape()[0], T = ex.ids.shape()[1];
    const std::vector<int64_t> ids = ex.ids.to_vector<int64_t>(), labels = ex.labels.to_vector<int64_t>(),
                               lens = ex.valid_lens.to_vector<int64_t>();
    const size_t blocks = run.record.snapshots.empty() ? 0 : run.record.snapshots[0].blocks.size();
    o << (r ? ",\n" : "\n") << "{\"task\": \"" << run.task << "\", \"encoding\": \"" << run.encoding
      << "\", \"seed\": " << run.seed << ", \"blocks\": " << blocks << ", \"heads\": " << run.heads << ", \"T\": " << T
      << ", \"sequences\": [";
    for (int64_t b = 0; b < B; ++b) {
      o << (b ? ", " : "") << "{\"tokens\": [";
      for (int64_t t = 0; t < T; ++t) o << (t ? "," : "") << ids[static_cast<size_t>(b * T + t)];
      o << "], \"labels\": [";
      for (int64_t t = 0; t < T; ++t) o << (t ? "," : "") << labels[static_cast<size_t>(b * T + t)];
      o << "], \"valid_len\": " << lens[static_cast<size_t>(b)] << "}";
    }
    o << "], \"snapshots\": [";
    for (size_t s = 0; s < run.record.snapshots.size(); ++s) {
      const auto& snap = run.record.snapshots[s];
      o << (s ? ",\n" : "\n") << "{\"step\": " << snap.step << ", \"weights\": [";
      for (size_t k = 0; k < snap.blocks.size(); ++k) {
        const auto& w = snap.blocks[k];
        if (static_cast<int64_t>(w.size()) != B * run.heads * T * T)
          throw std::invalid_argument("attention_json: block " + std::to_string(k) + " of step " +
                                      std::to_string(snap.step) + " has " + std::to_string(w.size()) +
                                      " weights, not B*heads*T*T = " + std::to_string(B * run.heads * T * T));
        o << (k ? ",\n" : "") << "[";
        for (size_t i = 0; i < w.size(); ++i) o << (i ? "," : "") << std::lround(static_cast<double>(w[i]) * 1000);
        o << "]";
      }
      o << "]}";
    }
    o << "]}";
  }
  o << "\n]}\n";
  return o.str();
}

namespace detail {

using sg::study::plot::detail::esc;

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("report: cannot read '" + p.string() + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s)
    if (c == sep) out.emplace_back();
    else out.back() += c;
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Markdown: tables become <table>s, other non-empty lines paragraphs.
std::string markdown(const std::string& md) {
  std::ostringstream o;
  bool in_table = false, header = false;
  for (const std::string& raw : split(md, '\n')) {
    const std::string line = trim(raw);
    if (!line.empty() && line[0] == '|') {
      std::vector<std::string> cells = split(line.substr(1, line.size() - (line.back() == '|' ? 2 : 1)), '|');
      if (!in_table) o << "<table>\n", in_table = header = true;
      if (std::all_of(line.begin(), line.end(), [](char c) { return c == '|' || c == '-' || c == ':' || c == ' '; })) {
        header = false;  // the separator row
        continue;
      }
      o << "<tr>";
      for (const auto& c : cells) o << (header ? "<th>" : "<td>") << esc(trim(c)) << (header ? "</th>" : "</td>");
      o << "</tr>\n";
      continue;
    }
    if (in_table) o << "</table>\n", in_table = false;
    if (!line.empty()) o << "<p>" << esc(line) << "</p>\n";
  }
  if (in_table) o << "</table>\n";
  return o.str();
}

std::string csv_table(const std::string& csv) {
  std::ostringstream o;
  o << "<table class=\"data\">\n";
  bool first = true;
  for (const std::string& line : split(csv, '\n')) {
    if (trim(line).empty()) continue;
    o << "<tr>";
    for (const auto& c : split(trim(line), ',')) o << (first ? "<th>" : "<td>") << esc(c) << (first ? "</th>" : "</td>");
    o << "</tr>\n";
    first = false;
  }
  o << "</table>\n";
  return o.str();
}

bool starts(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// The explorer: plain JavaScript over the JSON in #attention-data.
const char* explorer_js() {
  return R"JS(
(function () {
  const el = document.getElementById('attention-data');
  if (!el) return;
  const data = JSON.parse(el.textContent);
  const runs = data.runs, scale = data.scale;
  const $ = (id) => document.getElementById(id);
  const controls = ['task', 'encoding', 'seed', 'step', 'sequence', 'block', 'head'];
  const uniq = (xs) => xs.filter((x, i) => xs.indexOf(x) === i);
  function fill(id, values, labels) {
    const s = $('x-' + id), old = s.value;
    s.innerHTML = '';
    values.forEach((v, i) => {
      const o = document.createElement('option');
      o.value = String(v);
      o.textContent = labels ? labels[i] : String(v);
      s.appendChild(o);
    });
    if (values.map(String).includes(old)) s.value = old;
  }
  function run() {
    const t = $('x-task').value, e = $('x-encoding').value, s = $('x-seed').value;
    return runs.find((r) => r.task === t && r.encoding === e && String(r.seed) === s) ||
           runs.find((r) => r.task === t && r.encoding === e) || runs.find((r) => r.task === t) || runs[0];
  }
  function refill() {
    fill('task', uniq(runs.map((r) => r.task)));
    const t = $('x-task').value;
    fill('encoding', uniq(runs.filter((r) => r.task === t).map((r) => r.encoding)));
    const e = $('x-encoding').value;
    fill('seed', uniq(runs.filter((r) => r.task === t && r.encoding === e).map((r) => r.seed)));
    const r = run();
    fill('step', r.snapshots.map((s, i) => i), r.snapshots.map((s) => 'step ' + s.step));
    fill('sequence', r.sequences.map((s, i) => i),
         r.sequences.map((s, i) => 'sequence ' + i + ' (length ' + s.valid_len + ')'));
    fill('block', [...Array(r.blocks).keys()]);
    fill('head', [...Array(r.heads).keys()]);
  }
  // The (T, T) weights of one head: w[q][k].
  function matrix(r, step, seq, block, head) {
    const T = r.T, flat = r.snapshots[step].weights[block], base = ((seq * r.heads) + head) * T * T;
    const m = [];
    for (let q = 0; q < T; q++) {
      const row = [];
      for (let k = 0; k < T; k++) row.push(flat[base + q * T + k] / scale);
      m.push(row);
    }
    return m;
  }
  const stops = [[247,251,255],[222,235,247],[198,219,239],[158,202,225],[107,174,214],[66,146,198],[33,113,181],[8,81,156],[8,48,107]];
  function blues(f) {
    f = Math.min(1, Math.max(0, isFinite(f) ? f : 0)) * 8;
    const i = Math.min(7, Math.floor(f)), t = f - i;
    return 'rgb(' + [0, 1, 2].map((c) => Math.round(stops[i][c] + t * (stops[i + 1][c] - stops[i][c]))).join(',') + ')';
  }
  const tok = (v) => (v === 0 ? 'pad' : String(v));
  // One heatmap as SVG: square cells, tokens on both axes (when `labels`),
  // padding hatched grey, colours over [lo, hi].
  function heatmap(m, seq, cell, labels, lo, hi, cls) {
    const T = m.length, len = seq.valid_len, left = labels ? 44 : 4, top = 4, size = T * cell;
    const bottom = labels ? 36 : 4;
    let s = '<svg xmlns="http://www.w3.org/2000/svg" class="' + cls + '" width="' + (left + size + (labels ? 70 : 4)) +
            '" height="' + (top + size + bottom) + '" font-size="11" font-family="DejaVu Sans, Arial, sans-serif">';
    s += '<defs><pattern id="pad-' + cls + '" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">' +
         '<rect width="6" height="6" fill="#dddddd"/><line x1="0" y1="0" x2="0" y2="6" stroke="#aaaaaa" stroke-width="2"/></pattern></defs>';
    for (let q = 0; q < T; q++)
      for (let k = 0; k < T; k++) {
        const pad = q >= len || k >= len, v = m[q][k];
        s += '<rect class="cell" data-q="' + q + '" data-k="' + k + '" data-v="' + v + '"' + (pad ? ' data-pad="1"' : '') +
             ' x="' + (left + k * cell) + '" y="' + (top + q * cell) + '" width="' + (cell + 0.3) + '" height="' + (cell + 0.3) +
             '" fill="' + (pad ? 'url(#pad-' + cls + ')' : blues((v - lo) / (hi - lo))) + '"><title>query ' + q + ' (' +
             tok(seq.tokens[q]) + '), key ' + k + ' (' + tok(seq.tokens[k]) + '): ' + v.toFixed(3) +
             (pad ? ', padding' : '') + '</title></rect>';
      }
    s += '<rect x="' + left + '" y="' + top + '" width="' + size + '" height="' + size + '" fill="none" stroke="black"/>';
    if (labels) {
      for (let t = 0; t < T; t++) {
        const c = t >= len ? '#999999' : 'black';
        s += '<text x="' + (left + (t + 0.5) * cell) + '" y="' + (top + size + 13) + '" text-anchor="middle" fill="' + c + '">' + tok(seq.tokens[t]) + '</text>';
        s += '<text x="' + (left - 5) + '" y="' + (top + (t + 0.5) * cell + 4) + '" text-anchor="end" fill="' + c + '">' + tok(seq.tokens[t]) + '</text>';
      }
      s += '<text x="' + (left + size / 2) + '" y="' + (top + size + 30) + '" text-anchor="middle">key token</text>';
      s += '<text x="10" y="' + (top + size / 2) + '" text-anchor="middle" transform="rotate(-90 10 ' + (top + size / 2) + ')">query token</text>';
      const bx = left + size + 10;
      for (let i = 0; i < 50; i++)
        s += '<rect x="' + bx + '" y="' + (top + size * i / 50) + '" width="12" height="' + (size / 50 + 0.3) + '" fill="' + blues(1 - (i + 0.5) / 50) + '"/>';
      s += '<rect x="' + bx + '" y="' + top + '" width="12" height="' + size + '" fill="none" stroke="black"/>';
      s += '<text x="' + (bx + 15) + '" y="' + (top + 9) + '">' + hi.toFixed(2) + '</text>';
      s += '<text x="' + (bx + 15) + '" y="' + (top + size) + '">' + lo.toFixed(2) + '</text>';
      s += '<text x="' + (bx + 52) + '" y="' + (top + size / 2) + '" text-anchor="middle" transform="rotate(-90 ' + (bx + 52) + ' ' + (top + size / 2) + ')">attention weight</text>';
    }
    return s + '</svg>';
  }
  // The colour range: 0..1, or this map's own over its valid cells.
  function range(m, len) {
    if (!$('x-own').checked) return [0, 1];
    let lo = Infinity, hi = -Infinity;
    for (let q = 0; q < len; q++) for (let k = 0; k < len; k++) lo = Math.min(lo, m[q][k]), hi = Math.max(hi, m[q][k]);
    return hi > lo ? [lo, hi] : [lo, lo + 1];
  }
  function draw() {
    const r = run(), step = +$('x-step').value, seq = +$('x-sequence').value, block = +$('x-block').value,
          head = +$('x-head').value, sq = r.sequences[seq];
    const m = matrix(r, step, seq, block, head), [lo, hi] = range(m, sq.valid_len);
    const cell = Math.max(16, Math.min(34, Math.floor(420 / r.T)));
    $('x-title').textContent = r.task + ', ' + r.encoding + ', seed ' + r.seed + ', step ' + r.snapshots[step].step +
        ': block ' + block + ', head ' + head + ', sequence ' + seq;
    $('x-map').innerHTML = heatmap(m, sq, cell, true, lo, hi, 'main');
    $('x-sequence-text').textContent = 'tokens: ' + sq.tokens.slice(0, sq.valid_len).join(' ') + '   labels: ' +
        sq.labels.slice(0, sq.valid_len).join(' ') + '   (length ' + sq.valid_len + ' of ' + r.T + ': ' +
        (r.T - sq.valid_len) + ' padding positions, hatched)';
    // The grid: every head (columns) of every block (rows).
    let g = '<table class="grid"><tr><th></th>';
    for (let h = 0; h < r.heads; h++) g += '<th>head ' + h + '</th>';
    g += '</tr>';
    for (let b = 0; b < r.blocks; b++) {
      g += '<tr><th>block ' + b + '</th>';
      for (let h = 0; h < r.heads; h++) {
        const mm = matrix(r, step, seq, b, h), [l, u] = range(mm, sq.valid_len);
        g += '<td class="' + (b === block && h === head ? 'picked' : '') + '" data-block="' + b + '" data-head="' + h + '">' +
             heatmap(mm, sq, Math.max(5, Math.floor(120 / r.T)), false, l, u, 'g' + b + '_' + h) + '</td>';
      }
      g += '</tr>';
    }
    $('x-grid').innerHTML = g + '</table>';
    // The picked head at every recorded step: the pattern forming.
    let f = '<table class="grid"><tr>';
    r.snapshots.forEach((snap) => { f += '<th>step ' + snap.step + '</th>'; });
    f += '</tr><tr>';
    r.snapshots.forEach((snap, i) => {
      const mm = matrix(r, i, seq, block, head), [l, u] = range(mm, sq.valid_len);
      f += '<td class="' + (i === step ? 'picked' : '') + '" data-step="' + i + '">' +
           heatmap(mm, sq, Math.max(5, Math.floor(120 / r.T)), false, l, u, 's' + i) + '</td>';
    });
    $('x-steps').innerHTML = f + '</tr></table>';
    document.querySelectorAll('#x-steps td[data-step]').forEach((td) => td.addEventListener('click', () => {
      $('x-step').value = td.dataset.step;
      draw();
    }));
    document.querySelectorAll('#x-grid td[data-block]').forEach((td) => td.addEventListener('click', () => {
      $('x-block').value = td.dataset.block;
      $('x-head').value = td.dataset.head;
      draw();
    }));
  }
  controls.forEach((c) => $('x-' + c).addEventListener('change', () => {
    if (['task', 'encoding', 'seed'].includes(c)) refill();
    draw();
  }));
  $('x-own').addEventListener('change', draw);
  refill();
  // First the trained model, on the longest example sequence.
  const r0 = run();
  $('x-step').value = String(r0.snapshots.length - 1);
  $('x-sequence').value = String(r0.sequences.reduce((best, s, i) => (s.valid_len > r0.sequences[best].valid_len ? i : best), 0));
  draw();
})();
)JS";
}

const char* style() {
  return R"CSS(
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 24px auto; max-width: 1240px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 34px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f6fa; }
table.data { font-size: 12px; }
.figures { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.explorer-controls label { margin-right: 12px; white-space: nowrap; }
#x-title { font-weight: bold; margin: 10px 0 4px; }
#x-sequence-text { font-family: monospace; font-size: 12px; margin: 4px 0 8px; white-space: pre; }
table.grid { border-collapse: separate; border-spacing: 2px; }
table.grid td { padding: 2px; cursor: pointer; border: 2px solid transparent; line-height: 0; }
table.grid td.picked { border-color: #d62728; }
table.grid th { background: none; border: none; font-weight: normal; font-size: 12px; }
.note { color: #555; font-size: 13px; }
)CSS";
}

}  // namespace detail

std::string build_report(const std::string& folder, const std::string& title) {
  using namespace detail;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw std::runtime_error("report: '" + folder + "' is not a folder");
  const fs::path settings = fs::path(folder) / "settings.md";
  const bool has_settings = fs::exists(settings, ec);
  const auto since = has_settings ? fs::last_write_time(settings) : fs::file_time_type::min();
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n.empty() || n[0] == '.' || n == "report.html") continue;
    if (fs::last_write_time(e.path()) < since) continue;  // an earlier run's
    names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  auto ext = [](const std::string& n, const std::string& e) {
    return n.size() > e.size() && n.compare(n.size() - e.size(), e.size(), e) == 0;
  };
  auto file = [&](const std::string& n) { return read(fs::path(folder) / n); };
  auto figure = [&](const std::string& n) {
    return "<figure id=\"fig-" + esc(n) + "\">" + file(n) + "<figcaption class=\"note\">" + esc(n) + "</figcaption></figure>\n";
  };
  std::vector<std::string> tables, curves, positions, attention_svgs, others, csvs;
  bool has_attention = false;
  for (const std::string& n : names) {
    if (n == "settings.md") continue;
    if (ext(n, ".md")) (starts(n, "positions") ? positions : tables).push_back(n);
    else if (ext(n, ".svg") && (starts(n, "curve"))) curves.push_back(n);
    else if (ext(n, ".svg") && starts(n, "positions")) positions.push_back(n);
    else if (ext(n, ".svg") && starts(n, "attention")) attention_svgs.push_back(n);
    else if (ext(n, ".svg")) others.push_back(n);
    else if (ext(n, ".csv")) csvs.push_back(n);
    else if (n == "attention.json") has_attention = true;
  }
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << esc(title) << "</title>\n<style>"
    << style() << "</style></head>\n<body>\n<h1>" << esc(title) << "</h1>\n<p class=\"note\">The outputs of "
    << esc(fs::absolute(folder).lexically_normal().string())
    << ", in one page (every figure and number below is read from the files in that folder).</p>\n"
    << "<nav><a href=\"#settings\">settings</a><a href=\"#results\">results</a><a href=\"#curves\">curves</a>"
    << "<a href=\"#attention\">attention</a><a href=\"#positions\">positions</a><a href=\"#files\">data files</a></nav>\n";
  o << "<h2 id=\"settings\">Settings</h2>\n" << (has_settings ? markdown(file("settings.md")) : "<p class=\"note\">no settings.md</p>\n");
  o << "<h2 id=\"results\">Results</h2>\n";
  for (const std::string& n : tables) o << "<h3>" << esc(n) << "</h3>\n" << markdown(file(n));
  if (tables.empty()) o << "<p class=\"note\">no results tables in this folder</p>\n";
  o << "<h2 id=\"curves\">Learning curves</h2>\n<div class=\"figures\">\n";
  for (const std::string& n : curves) o << figure(n);
  o << "</div>\n<h2 id=\"attention\">Attention</h2>\n";
  if (has_attention) {
    o << "<p class=\"note\">Pick a run, a training step, an example sequence, a block and a head: the map shows how "
         "much each query token (row) attends to each key token (column). Padding positions are hatched. Click a "
         "map in the grid to pick its block and head.</p>\n<div class=\"explorer-controls\">\n";
    for (const char* c : {"task", "encoding", "seed", "step", "sequence", "block", "head"})
      o << "<label>" << c << " <select id=\"x-" << c << "\"></select></label>\n";
    o << "<label><input type=\"checkbox\" id=\"x-own\" checked> colours over this map's own range</label>\n</div>\n"
      << "<div id=\"x-title\"></div><div id=\"x-sequence-text\"></div>\n<div class=\"figures\"><div id=\"x-map\"></div>\n"
      << "<div><h3>Every head of every block</h3>\n<div id=\"x-grid\"></div>\n"
      << "<h3>This head through training</h3>\n<div id=\"x-steps\"></div></div></div>\n";
  } else if (attention_svgs.empty()) {
    o << "<p class=\"note\">no attention.json in this folder</p>\n";
  }
  if (!attention_svgs.empty()) {  // open when they are all the attention there is
    o << "<details" << (has_attention ? "" : " open") << "><summary>attention figures (" << attention_svgs.size() << ")</summary><div class=\"figures\">\n";
    for (const std::string& n : attention_svgs) o << figure(n);
    o << "</div></details>\n";
  }
  o << "<h2 id=\"positions\">Positions</h2>\n";
  for (const std::string& n : positions) o << (ext(n, ".md") ? "<h3>" + esc(n) + "</h3>\n" + markdown(file(n)) : figure(n));
  if (positions.empty()) o << "<p class=\"note\">no positions files in this folder</p>\n";
  if (!others.empty()) {
    o << "<h2 id=\"figures\">Other figures</h2>\n<div class=\"figures\">\n";
    for (const std::string& n : others) o << figure(n);
    o << "</div>\n";
  }
  o << "<h2 id=\"files\">Data files</h2>\n";
  for (const std::string& n : csvs) o << "<details><summary>" << esc(n) << "</summary>" << csv_table(file(n)) << "</details>\n";
  if (has_attention) {
    std::string json = file("attention.json");
    // JSON inside <script>: "</" must not close the element.
    for (size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 2)) json.replace(at, 2, "<\\/");
    o << "<script type=\"application/json\" id=\"attention-data\">" << json << "</script>\n<script>" << explorer_js()
      << "</script>\n";
  }
  o << "</body></html>\n";
  return o.str();
}

std::string write_report(const std::string& folder, const std::string& title) {
  const std::string path = folder + "/report.html";
  sg::study::plot::write_file(path, build_report(folder, title));
  return path;
}

}  // namespace sg::study::report
