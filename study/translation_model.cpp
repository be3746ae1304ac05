// What study/translation.hpp declares for keeping a trained model: the
// folder translate_numbers --save writes and --load reads, and the
// translation of one sentence.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autograd/engine.hpp"
#include "checkpoint/checkpoint.hpp"
#include "core/error.hpp"
#include "decoding/search.hpp"
#include "study/settings.hpp"  // fmt
#include "study/translation.hpp"

namespace sg::study {

namespace {

const char* const kModelName = "translate_numbers";

// The settings a model folder keeps, with the bounds a loaded value must
// meet (the program's flags' bounds).
struct WholeSetting {
  const char* key;
  int64_t TranslationConfig::*member;
  int64_t lo, hi;
};
const WholeSetting kWhole[] = {
    {"max_number", &TranslationConfig::max_number, 9, kNumberWordsMax},
    {"test_cap", &TranslationConfig::test_cap, 1, kNumberWordsMax},
    {"train_cap", &TranslationConfig::train_cap, 1, kNumberWordsMax},
    {"hidden", &TranslationConfig::hidden, 2, 4096},     {"ffn", &TranslationConfig::ffn, 1, 65536},
    {"heads", &TranslationConfig::heads, 1, 64},         {"blocks", &TranslationConfig::blocks, 1, 64},
    {"max_distance", &TranslationConfig::max_distance, 1, 4096},
    {"num_steps", &TranslationConfig::num_steps, 2, 4096}, {"steps", &TranslationConfig::steps, 1, 10000000},
    {"batch", &TranslationConfig::batch, 1, 65536},      {"warmup", &TranslationConfig::warmup, 0, 10000000},
    {"beam", &TranslationConfig::beam, 1, 64},
};
struct RealSetting {
  const char* key;
  double TranslationConfig::*member;
};
const RealSetting kReal[] = {
    {"dropout", &TranslationConfig::dropout}, {"test_fraction", &TranslationConfig::test_fraction},
    {"lr", &TranslationConfig::lr},           {"min_lr", &TranslationConfig::min_lr},
    {"weight_decay", &TranslationConfig::weight_decay}, {"clip", &TranslationConfig::clip},
};

std::string vocab_text(const text::Vocab& v) {
  std::string s;
  for (const std::string& t : v.idx_to_token()) s += t + "\n";
  return s;
}

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream f(path, std::ios::binary);
  f << contents;
  f.close();
  if (!f) sg::fail("save_translator: could not write '", path, "'");
}

std::string crc_hex(const std::string& text) {
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(checkpoint::crc32c(text.data(), text.size())));
  return hex;
}

// `crc`: the file's CRC-32C as the weights' metadata records it, "" for a
// folder saved before it did (read unchecked).
std::shared_ptr<text::Vocab> read_vocab(const std::string& path, const std::string& crc) {
  std::ifstream f(path, std::ios::binary);
  if (!f) sg::fail("load_translator: cannot read '", path, "'");
  std::stringstream whole;
  whole << f.rdbuf();
  const std::string text = whole.str();
  if (!crc.empty() && crc_hex(text) != crc)
    sg::fail("load_translator: '", path, "' fails its CRC-32C check (", crc_hex(text), ", recorded ", crc,
             "): the file is damaged");
  std::istringstream lines(text);
  text::Tokens tokens;
  for (std::string line; std::getline(lines, line);) tokens.push_back(line);
  try {
    auto v = std::make_shared<text::Vocab>(text::Vocab::from_tokens(tokens));
    v->pad(), v->bos(), v->eos();  // each throws when missing
    return v;
  } catch (const sg::Error& e) {
    sg::fail("load_translator: '", path, "': ", e.what());
  }
}

}  // namespace

checkpoint::Metadata translator_metadata(const TranslationConfig& c) {
  checkpoint::Metadata m;
  m["model"] = kModelName;
  m["positional"] = nn::positional_name(c.positional);
  m["pre_norm"] = c.pre_norm ? "1" : "0";
  m["split_seed"] = std::to_string(c.split_seed);
  m["seed"] = std::to_string(c.seed);
  for (const WholeSetting& s : kWhole) m[s.key] = std::to_string(c.*s.member);
  for (const RealSetting& s : kReal) m[s.key] = fmt("%.17g", c.*s.member);
  return m;
}

void save_translator(const nn::EncoderDecoder& model, const TranslationConfig& c, const text::Vocab& src_vocab,
                     const text::Vocab& tgt_vocab, const std::function<std::string(const std::string&)>& path_for) {
  if (model.encoder->options.vocab_size != src_vocab.size() || model.decoder->options.vocab_size != tgt_vocab.size())
    sg::fail("save_translator: the model's vocabularies (", model.encoder->options.vocab_size, ", ",
             model.decoder->options.vocab_size, ") are not the given ones (", src_vocab.size(), ", ", tgt_vocab.size(),
             ")");
  // The vocabularies are text files: their CRC-32C rides in the weights'
  // metadata, which the weights file's own checksum covers.
  const std::string src_text = vocab_text(src_vocab), tgt_text = vocab_text(tgt_vocab);
  checkpoint::Metadata m = translator_metadata(c);
  m[std::string(kTranslatorFiles[1]) + ".crc32c"] = crc_hex(src_text);
  m[std::string(kTranslatorFiles[2]) + ".crc32c"] = crc_hex(tgt_text);
  checkpoint::save(path_for(kTranslatorFiles[0]), model, nullptr, m);
  write_file(path_for(kTranslatorFiles[1]), src_text);
  write_file(path_for(kTranslatorFiles[2]), tgt_text);
}

Translator load_translator(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) sg::fail("load_translator: '", dir, "' is not a folder");
  const std::string weights = dir + "/" + kTranslatorFiles[0];
  const checkpoint::Metadata m = checkpoint::load_safetensors(weights).metadata;
  auto get = [&](const std::string& key) -> const std::string& {
    const auto it = m.find(key);
    if (it == m.end())
      sg::fail("load_translator: '", weights, "' has no '", key, "' in its metadata (not written by --save?)");
    return it->second;
  };
  auto bad = [&](const std::string& key, const std::string& why) {
    sg::fail("load_translator: '", weights, "': metadata '", key, "' is \"", get(key), "\": ", why);
  };
  if (get("model") != kModelName) bad("model", std::string("not ") + kModelName);
  Translator t;
  TranslationConfig& c = t.config;
  try {
    c.positional = nn::parse_positional(get("positional"));
  } catch (const sg::Error& e) {
    bad("positional", e.what());
  }
  if (get("pre_norm") != "0" && get("pre_norm") != "1") bad("pre_norm", "neither 0 nor 1");
  c.pre_norm = get("pre_norm") == "1";
  for (const char* key : {"split_seed", "seed"}) {
    const std::string& v = get(key);
    uint64_t x = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size()) bad(key, "not a whole number");
    (std::string(key) == "seed" ? c.seed : c.split_seed) = x;
  }
  for (const WholeSetting& s : kWhole) {
    const std::string& v = get(s.key);
    int64_t x = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size()) bad(s.key, "not a whole number");
    if (x < s.lo || x > s.hi) bad(s.key, "out of range " + std::to_string(s.lo) + ".." + std::to_string(s.hi));
    c.*s.member = x;
  }
  for (const RealSetting& s : kReal) {
    const std::string& v = get(s.key);
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x)) bad(s.key, "not a finite number");
    c.*s.member = x;
  }
  try {
    check_config(c);
  } catch (const sg::Error& e) {
    sg::fail("load_translator: '", weights, "': ", e.what());
  }
  auto recorded = [&](const char* file) {
    const auto it = m.find(std::string(file) + ".crc32c");
    return it == m.end() ? std::string() : it->second;
  };
  t.src_vocab = read_vocab(dir + "/" + kTranslatorFiles[1], recorded(kTranslatorFiles[1]));
  t.tgt_vocab = read_vocab(dir + "/" + kTranslatorFiles[2], recorded(kTranslatorFiles[2]));
  t.model = make_translator(c, t.src_vocab->size(), t.tgt_vocab->size());
  checkpoint::load(weights, *t.model);  // every name, shape and value checked before anything is copied
  t.model->eval();
  return t;
}

text::Tokens translate_sentence(const Translator& t, const text::Tokens& source, Search search, int64_t beam,
                                nn::DecodingMode mode) {
  const int64_t most = t.config.num_steps - 1;  // <eos> ends the source
  if (static_cast<int64_t>(source.size()) > most)
    sg::fail("translate_sentence: the source has ", source.size(), " tokens, more than the model's ", most,
             " (num_steps ", t.config.num_steps, " with <eos>)");
  std::vector<int64_t> ids;
  for (const std::string& token : source) {
    if (!t.src_vocab->contains(token))
      sg::fail("translate_sentence: '", token, "' is not in the source vocabulary (", t.src_vocab->size(),
               " tokens)");
    ids.push_back(t.src_vocab->id(token));
  }
  ids.push_back(t.src_vocab->eos());
  const int64_t n = static_cast<int64_t>(ids.size());
  NoGradGuard no_grad;
  decoding::SearchOptions o;
  o.bos = t.tgt_vocab->bos(), o.eos = t.tgt_vocab->eos(), o.pad = t.tgt_vocab->pad();
  o.max_len = t.config.num_steps;
  o.beam_width = beam;
  o.mode = mode;
  const Tensor src = from_vector(ids, {1, n}), lens = from_vector(std::vector<int64_t>{n}, {1});
  const decoding::Hypothesis h = search == Search::greedy ? decoding::greedy(*t.model, src, lens, o)[0]
                                                          : decoding::beam_search(*t.model, src, lens, o)[0];
  return t.tgt_vocab->tokens(h.tokens);
}

}  // namespace sg::study
