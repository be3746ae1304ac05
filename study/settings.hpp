#pragma once
// A run's settings as the study writes and reads them: the whole-number
// settings with their bounds (the programs' flags and a checkpoint's
// metadata are both held to them), the config as checkpoint metadata and
// back, and settings.md (the report's first section).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/safetensors.hpp"
#include "study/encoder_training.hpp"

namespace sg::study {

struct IntSetting {
  const char* key;  // metadata key; the flag is "--" + key with '_' as '-'
  int64_t Config::*member;
  int64_t lo, hi;
  const char* help;
};
const std::vector<IntSetting>& int_settings();

// "--max-distance" for "max_distance".
std::string flag_of(const std::string& key);

// The config as checkpoint metadata, and back: a saved model can be rebuilt.
checkpoint::Metadata to_metadata(const Config& c);
// Every value is checked as the flags are: whole numbers in the flags'
// bounds (blocks may be 0: older versions wrote such models), names from the
// known sets, lengths consistent with each other. Throws std::runtime_error
// naming `path`, the key and the value.
Config from_metadata(const checkpoint::Metadata& m, const std::string& path);

// Attention is recorded before training, at 1/8 and 1/2 of the steps, and
// at the end (0, 100, 400, 800 for 800 steps), so the report shows it form.
std::vector<int64_t> record_steps(int64_t steps);

// The settings of a run as a Markdown table (settings.md, the report's
// first section): `extra` rows first, then every setting of `c`.
std::string settings_md(const Config& c, const std::vector<std::pair<std::string, std::string>>& extra);

// printf of one number: fmt("%.3f", 0.5) = "0.500".
std::string fmt(const char* f, double v);

// The mean of a study's values over seeds, and their spread: the sample
// standard deviation (0 for one value).
struct Stats {
  double mean = 0, spread = 0;
};
Stats stats(const std::vector<double>& v);

// file:///... of a path, to paste into a browser.
std::string file_url(const std::string& path);

// "a, b or c" (with last = " or "): names as prose.
std::string join_names(const std::vector<std::string>& names, const char* last = ", ");

}  // namespace sg::study
