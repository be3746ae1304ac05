// What study/settings.hpp declares.
#include "study/settings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "core/cpu.hpp"
#include "core/kernels/gemm_tile.hpp"
#include "core/runtime.hpp"

namespace sg::study {

const std::vector<IntSetting>& int_settings() {
  static const std::vector<IntSetting> settings = {
      {"vocab", &Config::vocab, 3, 100000, "token ids (0 pads, 1.. are symbols)"},
      {"hidden", &Config::hidden, 2, 65536, "model width"},
      {"heads", &Config::heads, 1, 1024, "attention heads (must divide --hidden)"},
      {"ffn", &Config::ffn, 1, 1 << 20, "feed-forward width"},
      {"blocks", &Config::blocks, 1, 1024, "encoder blocks, at least 1 (a model without blocks has no attention to study)"},
      {"max_distance", &Config::max_distance, 1, 100000, "relative positions only: offsets clipped to +-this"},
      {"min_len", &Config::min_len, 1, 100000, "shortest training sequence"},
      {"max_len", &Config::max_len, 1, 100000, "longest training sequence"},
      {"eval_min_len", &Config::eval_min_len, 1, 100000,
       "shortest sequence of the longer-lengths evaluation (above --max-len)"},
      {"eval_max_len", &Config::eval_max_len, 1, 100000, "longest sequence of the longer-lengths evaluation"},
      {"shift", &Config::shift, 1, 100000, "task shift only: label[t] = x[t - shift], less than --max-len"},
      {"back", &Config::back, 1, 100000, "task recall only: label[t] = x[t - back], less than --max-len"},
  };
  return settings;
}

std::string flag_of(const std::string& key) {
  std::string f = "--" + key;
  for (char& ch : f) ch = ch == '_' ? '-' : ch;
  return f;
}

checkpoint::Metadata to_metadata(const Config& c) {
  checkpoint::Metadata m = {{"task", c.task},
                            {"positional", nn::positional_name(c.positional)},
                            {"relative_values", c.relative_values ? "1" : "0"},
                            {"pre_norm", c.pre_norm ? "1" : "0"},
                            {"causal", c.causal ? "1" : "0"},
                            {"seed", std::to_string(c.seed)}};
  for (const IntSetting& s : int_settings()) m[s.key] = std::to_string(c.*s.member);
  return m;
}

Config from_metadata(const checkpoint::Metadata& m, const std::string& path) {
  auto bad = [&](const std::string& key, const std::string& value, const std::string& why) -> std::runtime_error {
    return std::runtime_error("checkpoint '" + path + "': metadata '" + key + "' is \"" + value + "\": " + why);
  };
  auto get = [&](const std::string& k) {
    auto it = m.find(k);
    if (it == m.end())
      throw std::runtime_error("checkpoint '" + path + "' has no '" + k +
                               "' in its metadata (not written by train_encoder?)");
    return it->second;
  };
  auto whole = [&](const std::string& key, int64_t lo, int64_t hi) {
    const std::string v = get(key);
    int64_t x = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || p != v.data() + v.size() || ec == std::errc::invalid_argument)
      throw bad(key, v, "not a whole number");
    if (ec == std::errc::result_out_of_range || x < lo || x > hi)
      throw bad(key, v, "out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    return x;
  };
  auto boolean = [&](const std::string& key) {
    const std::string v = get(key);
    if (v != "0" && v != "1") throw bad(key, v, "neither 0 nor 1");
    return v == "1";
  };
  Config c;
  c.task = get("task");
  const auto& tasks = task_names();
  if (std::find(tasks.begin(), tasks.end(), c.task) == tasks.end())
    throw bad("task", c.task, "not a task of this program (shift, sort, reverse, count, tally, recall)");
  try {
    c.positional = nn::parse_positional(get("positional"));
  } catch (const sg::Error&) {
    throw bad("positional", get("positional"), "not an encoding (" + join_names(nn::positional_names()) + ")");
  }
  for (const IntSetting& s : int_settings()) {
    // Checkpoints written before max_distance or back existed have none: the default then.
    if ((std::string(s.key) == "max_distance" || std::string(s.key) == "back") && !m.count(s.key)) continue;
    c.*s.member = whole(s.key, std::string(s.key) == "blocks" ? 0 : s.lo, s.hi);
  }
  if (m.count("relative_values")) c.relative_values = boolean("relative_values");
  if (m.count("pre_norm")) c.pre_norm = boolean("pre_norm");
  if (m.count("causal")) c.causal = boolean("causal");
  const std::string seed = get("seed");
  const auto [p, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), c.seed);
  if (seed.empty() || p != seed.data() + seed.size() || ec != std::errc()) throw bad("seed", seed, "not a seed");
  try {
    check_config(c);
  } catch (const sg::Error& e) {
    throw std::runtime_error("checkpoint '" + path + "': inconsistent metadata: " + e.what());
  }
  return c;
}

std::vector<int64_t> record_steps(int64_t steps) {
  std::vector<int64_t> at = {0, steps / 8, steps / 2, steps};
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

std::string settings_md(const Config& c, const std::vector<std::pair<std::string, std::string>>& extra) {
  std::ostringstream o;
  o << "| setting | value |\n|---|---|\n";
  for (const auto& [k, v] : extra) o << "| " << k << " | " << v << " |\n";
  for (const IntSetting& s : int_settings()) o << "| " << flag_of(s.key) << " | " << c.*s.member << " |\n";
  o << "| --steps | " << c.steps << " |\n| --batch | " << c.batch << " |\n| --lr | " << c.lr << " |\n| --schedule | "
    << c.schedule << " |\n| --warmup | " << c.warmup << " |\n| --min-lr | " << c.min_lr << " |\n| --weight-decay | "
    << c.weight_decay << " |\n| --clip | " << c.clip << " |\n| --dropout | " << c.dropout << " |\n| --pre-norm | "
    << (c.pre_norm ? "yes" : "no") << " |\n| causal mask | " << (c.causal ? "yes" : "no") << " |\n| --eval-every | " << c.eval_every << " |\n| attention recorded at steps | ";
  for (size_t i = 0; i < c.record_attention_at.size(); ++i) o << (i ? ", " : "") << c.record_attention_at[i];
  // The vector width (and the compiler's target) changes the order of some
  // float sums, and so the last digits of the results: the build that made
  // them is part of the settings, "AVX2+FMA: ... (-march=znver3 -mtune=znver3)".
  o << " |\n| threads | " << sg::num_threads() << " |\n| built for | " << sg::kernel::tile::target() << " ("
    << sg::build_target() << ") |\n";
  return o.str();
}

Stats stats(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  if (v.size() > 1) {
    for (double x : v) s.spread += (x - s.mean) * (x - s.mean);
    s.spread = std::sqrt(s.spread / static_cast<double>(v.size() - 1));
  }
  return s;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string file_url(const std::string& path) {
  return "file://" + std::filesystem::absolute(path).lexically_normal().string();
}

std::string join_names(const std::vector<std::string>& names, const char* last) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 < names.size() ? ", " : last) + names[i];
  return s;
}

}  // namespace sg::study
