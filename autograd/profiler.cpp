// The op profiler: a clock and a table of totals keyed by name.
#include "autograd/profiler.hpp"

#include <algorithm>
#include <chrono>
#include <unordered_map>

namespace sg {
namespace {

using Clock = std::chrono::steady_clock;

bool g_on = false;
Clock::time_point g_last;

std::unordered_map<std::string, OpProfile>& table() {
  static std::unordered_map<std::string, OpProfile> t;
  return t;
}

void charge(std::string name) {
  const Clock::time_point now = Clock::now();
  OpProfile& p = table()[name];
  if (p.name.empty()) p.name = std::move(name);
  p.calls += 1;
  p.seconds += std::chrono::duration<double>(now - g_last).count();
  g_last = Clock::now();  // the bookkeeping above is charged to no one
}

}  // namespace

bool profiling() { return g_on; }

void profile_mark(const char* what) {
  if (g_on) charge(what);
}

void profile_mark_backward(const char* op) {
  if (g_on) charge(std::string(op) + " backward");
}

std::vector<OpProfile> profile_report() {
  std::vector<OpProfile> out;
  for (const auto& [name, p] : table()) out.push_back(p);
  std::sort(out.begin(), out.end(), [](const OpProfile& a, const OpProfile& b) { return a.seconds > b.seconds; });
  return out;
}

void profile_reset() {
  table().clear();
  g_last = Clock::now();
}

ProfileGuard::ProfileGuard() {
  profile_reset();
  g_on = true;
}

ProfileGuard::~ProfileGuard() { g_on = false; }

}  // namespace sg
