#include "checkpoint/names.hpp"

#include "core/error.hpp"

namespace sg::checkpoint {
namespace {

// The first "<from><digits>." at the start of name or after a '.', replaced
// by "<to><digits>.".
std::string replace_block(const std::string& name, const std::string& from, const std::string& to) {
  for (size_t at = 0; at < name.size();) {
    if (name.compare(at, from.size(), from) == 0) {
      size_t end = at + from.size();
      while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
      if (end > at + from.size() && end < name.size() && name[end] == '.')
        return name.substr(0, at) + to + name.substr(at + from.size());
    }
    const size_t dot = name.find('.', at);
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  return name;
}

nn::StateDict rename_all(const nn::StateDict& state, std::string (*rename)(const std::string&), const char* who) {
  nn::StateDict out;
  for (const auto& [name, t] : state) {
    const std::string renamed = rename(name);
    if (!out.emplace(renamed, t).second) fail(who, ": two names become '", renamed, "'");
  }
  return out;
}

}  // namespace

std::string to_d2l_name(const std::string& name) { return replace_block(name, "blocks.", "blks.block"); }
std::string from_d2l_name(const std::string& name) { return replace_block(name, "blks.block", "blocks."); }

nn::StateDict to_d2l_names(const nn::StateDict& state) { return rename_all(state, to_d2l_name, "to_d2l_names"); }
nn::StateDict from_d2l_names(const nn::StateDict& state) {
  return rename_all(state, from_d2l_name, "from_d2l_names");
}

}  // namespace sg::checkpoint
