#include "text/cmudict.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "core/error.hpp"

namespace sg::text {

bool is_vowel(const std::string& phone) {
  static const std::set<std::string> vowels = {"aa", "ae", "ah", "ao", "aw", "ax", "ay", "eh",
                                               "er", "ey", "ih", "iy", "ow", "oy", "uh", "uw"};
  return vowels.count(phone) != 0;
}

namespace {

// One line's reader: `at` moves through it; every failure names the file and line.
struct LineReader {
  const std::string& line;
  const std::string& name;
  size_t number;
  size_t at = 0;

  [[noreturn]] void bad(const std::string& what) const {
    const std::string shown = line.size() > 80 ? line.substr(0, 80) + "..." : line;
    sg::fail("read_cmudict: ", name, ":", number, ": ", what, " in '", shown, "'");
  }
  void expect(char c) {
    if (at >= line.size() || line[at] != c) bad(std::string("expected '") + c + "' at column " + std::to_string(at + 1));
    ++at;
  }
  void spaces() {
    while (at < line.size() && line[at] == ' ') ++at;
  }
  // Up to (not including) the next space or parenthesis.
  std::string atom() {
    const size_t from = at;
    while (at < line.size() && line[at] != ' ' && line[at] != '(' && line[at] != ')') ++at;
    return line.substr(from, at - from);
  }
};

Pronunciation parse_entry(const std::string& line, const std::string& name, size_t number, bool stress) {
  LineReader r{line, name, number};
  r.expect('(');
  r.expect('"');
  const size_t close = line.find('"', r.at);
  if (close == std::string::npos) r.bad("no closing quote after the word");
  Pronunciation p;
  p.word = line.substr(r.at, close - r.at);
  if (p.word.empty()) r.bad("an empty word");
  for (char& ch : p.word) {
    const auto u = static_cast<unsigned char>(ch);
    if (u <= ' ' || u >= 127) r.bad("the word has a byte " + std::to_string(u) + " outside printable ASCII");
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  r.at = close + 1;
  r.expect(' ');
  if (r.atom().empty()) r.bad("no part of speech");
  r.expect(' ');
  r.expect('(');  // the syllables
  for (r.spaces(); r.at < line.size() && line[r.at] == '('; r.spaces()) {
    r.expect('(');
    r.expect('(');
    std::vector<std::string> phones;
    for (r.spaces(); r.at < line.size() && line[r.at] != ')'; r.spaces()) {
      std::string phone = r.atom();
      if (phone.empty()) r.bad("expected a phone at column " + std::to_string(r.at + 1));
      phones.push_back(std::move(phone));
    }
    r.expect(')');
    r.spaces();
    const std::string level = r.atom();
    if (level.empty() || level.find_first_not_of("0123456789") != std::string::npos)
      r.bad("the syllable's stress '" + level + "' is not a digit");
    r.expect(')');
    for (std::string& phone : phones) p.phones.push_back(stress && is_vowel(phone) ? phone + level : phone);
  }
  r.expect(')');
  r.expect(')');
  while (r.at < line.size() && (line[r.at] == ' ' || line[r.at] == '\r')) ++r.at;
  if (r.at != line.size()) r.bad("text after the entry at column " + std::to_string(r.at + 1));
  if (p.phones.empty()) r.bad("no phones");
  return p;
}

}  // namespace

std::vector<Pronunciation> parse_cmudict(const std::string& text, const std::string& name, bool stress) {
  std::vector<Pronunciation> entries;
  std::set<std::pair<std::string, Tokens>> seen;
  std::istringstream in(text);
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line == "MNCL")) continue;
    Pronunciation p = parse_entry(line, name, number, stress);
    if (seen.insert({p.word, p.phones}).second) entries.push_back(std::move(p));
  }
  return entries;
}

std::vector<Pronunciation> read_cmudict(const std::string& path, bool stress) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    sg::fail("read_cmudict: cannot read '", path, "'", path == kCmudictPath ? " (install Debian's festlex-cmu)" : "");
  std::ostringstream text;
  text << f.rdbuf();
  std::vector<Pronunciation> entries = parse_cmudict(text.str(), path, stress);
  if (entries.empty()) sg::fail("read_cmudict: '", path, "' holds no entry");
  return entries;
}

}  // namespace sg::text
