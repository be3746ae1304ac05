#include "text/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "text/bpe.hpp"
#include "text/char_tokenizer.hpp"

namespace sg::text {

std::unique_ptr<Tokenizer> tokenizer_from_json(const std::string& json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
    const std::string kind = j.at("kind").get<std::string>();
    if (kind == "char") {
      const auto chars = j.at("characters").get<std::vector<uint32_t>>();
      return std::make_unique<CharTokenizer>(std::vector<char32_t>(chars.begin(), chars.end()));
    }
    if (kind == "bpe")
      return std::make_unique<BpeTokenizer>(j.at("merges").get<std::vector<std::pair<int64_t, int64_t>>>());
    fail("tokenizer_from_json: unknown kind '", kind, "' (char or bpe)");
  } catch (const nlohmann::json::exception& e) {
    fail("tokenizer_from_json: not a saved tokenizer: ", e.what());
  }
}

}  // namespace sg::text
