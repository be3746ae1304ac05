// The load-time check of the CPU against the build's target (core/cpu.hpp).
//
// This file is compiled with the library's flags, so the target macros
// (__AVX2__, __AVX512F__...) say what the build uses. But the code that runs
// the check must itself run on any x86-64 CPU: every function on its path
// carries [[gnu::target("arch=x86-64")]] (plain x86-64: SSE2, no AVX), calls
// only libc, and uses no standard-library templates (their code would be
// compiled for the build's target). The constructor has priority 101, so it
// runs before the library's own static initialisers.
#include "core/cpu.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

// Functions on the check's path run on any x86-64 CPU, whatever the build's
// target (the one macro here: the attribute exists only for x86 targets).
#if defined(__x86_64__) || defined(__i386__)
#define SG_ANY_X86_CPU [[gnu::target("arch=x86-64")]]
#else
#define SG_ANY_X86_CPU
#endif

namespace sg {

namespace {

// The most extensions a build can name (the list in scan).
constexpr int kMaxFeatures = 32;

// The build's widest family, for the message.
constexpr const char* kTargetName =
#if defined(__AVX512F__)
    "AVX-512";
#elif defined(__AVX2__)
    "AVX2";
#elif defined(__AVX__)
    "AVX";
#elif defined(__SSE4_2__)
    "SSE4.2";
#elif defined(__x86_64__) || defined(__i386__)
    "x86-64";
#else
    "this";
#endif

// Appends s to the text in buf (capacity cap, always NUL-terminated).
SG_ANY_X86_CPU void append(char* buf, size_t cap, const char* s) {
  const size_t used = std::strlen(buf), add = std::strlen(s);
  const size_t n = used + add < cap ? add : cap - 1 - used;
  std::memcpy(buf + used, s, n);
  buf[used + n] = '\0';
}

// The message for `count` missing extensions, into buf.
SG_ANY_X86_CPU void mismatch_text(char* buf, size_t cap, const char* const* missing, int count) {
  buf[0] = '\0';
  append(buf, cap, "smallgrad: this libsmallgrad was compiled for ");
  append(buf, cap, kTargetName);
  append(buf, cap, " CPUs, but this CPU lacks ");
  for (int i = 0; i < count; ++i) {
    if (i) append(buf, cap, ", ");
    append(buf, cap, missing[i]);
  }
  append(buf, cap,
         ", so its kernels would stop on an illegal instruction. Rebuild smallgrad on this "
         "machine (the default SMALLGRAD_NATIVE=ON compiles for the CPU it builds on) or for an "
         "older target: cmake --preset avx2 (x86-64-v3) or --preset sse42 (x86-64-v2).");
}

#if defined(__x86_64__) || defined(__i386__)

// Adds name to out when listing all, or when the CPU lacks it.
SG_ANY_X86_CPU void note(const char** out, int& n, const char* name, bool present, bool all) {
  if ((all || !present) && n < kMaxFeatures) out[n++] = name;
}

// Writes to `out` the names of the build's extensions (all = true) or of
// those the CPU lacks (all = false); returns how many. The extensions are
// those GCC's -march options turn on beyond plain x86-64 and that
// __builtin_cpu_supports can test.
SG_ANY_X86_CPU int scan(const char** out, bool all) {
  __builtin_cpu_init();
  int n = 0;
#if defined(__SSE3__)
  note(out, n, "sse3", __builtin_cpu_supports("sse3"), all);
#endif
#if defined(__SSSE3__)
  note(out, n, "ssse3", __builtin_cpu_supports("ssse3"), all);
#endif
#if defined(__SSE4_1__)
  note(out, n, "sse4.1", __builtin_cpu_supports("sse4.1"), all);
#endif
#if defined(__SSE4_2__)
  note(out, n, "sse4.2", __builtin_cpu_supports("sse4.2"), all);
#endif
#if defined(__SSE4A__)
  note(out, n, "sse4a", __builtin_cpu_supports("sse4a"), all);
#endif
#if defined(__POPCNT__)
  note(out, n, "popcnt", __builtin_cpu_supports("popcnt"), all);
#endif
#if defined(__AVX__)
  note(out, n, "avx", __builtin_cpu_supports("avx"), all);
#endif
#if defined(__AVX2__)
  note(out, n, "avx2", __builtin_cpu_supports("avx2"), all);
#endif
#if defined(__FMA__)
  note(out, n, "fma", __builtin_cpu_supports("fma"), all);
#endif
#if defined(__F16C__)
  note(out, n, "f16c", __builtin_cpu_supports("f16c"), all);
#endif
#if defined(__BMI__)
  note(out, n, "bmi", __builtin_cpu_supports("bmi"), all);
#endif
#if defined(__BMI2__)
  note(out, n, "bmi2", __builtin_cpu_supports("bmi2"), all);
#endif
#if defined(__LZCNT__)
  note(out, n, "lzcnt", __builtin_cpu_supports("lzcnt"), all);
#endif
#if defined(__MOVBE__)
  note(out, n, "movbe", __builtin_cpu_supports("movbe"), all);
#endif
#if defined(__AVXVNNI__)
  note(out, n, "avxvnni", __builtin_cpu_supports("avxvnni"), all);
#endif
#if defined(__AVX512F__)
  note(out, n, "avx512f", __builtin_cpu_supports("avx512f"), all);
#endif
#if defined(__AVX512DQ__)
  note(out, n, "avx512dq", __builtin_cpu_supports("avx512dq"), all);
#endif
#if defined(__AVX512BW__)
  note(out, n, "avx512bw", __builtin_cpu_supports("avx512bw"), all);
#endif
#if defined(__AVX512VL__)
  note(out, n, "avx512vl", __builtin_cpu_supports("avx512vl"), all);
#endif
#if defined(__AVX512CD__)
  note(out, n, "avx512cd", __builtin_cpu_supports("avx512cd"), all);
#endif
#if defined(__AVX512VBMI__)
  note(out, n, "avx512vbmi", __builtin_cpu_supports("avx512vbmi"), all);
#endif
#if defined(__AVX512VBMI2__)
  note(out, n, "avx512vbmi2", __builtin_cpu_supports("avx512vbmi2"), all);
#endif
#if defined(__AVX512IFMA__)
  note(out, n, "avx512ifma", __builtin_cpu_supports("avx512ifma"), all);
#endif
#if defined(__AVX512VNNI__)
  note(out, n, "avx512vnni", __builtin_cpu_supports("avx512vnni"), all);
#endif
#if defined(__AVX512BITALG__)
  note(out, n, "avx512bitalg", __builtin_cpu_supports("avx512bitalg"), all);
#endif
#if defined(__AVX512VPOPCNTDQ__)
  note(out, n, "avx512vpopcntdq", __builtin_cpu_supports("avx512vpopcntdq"), all);
#endif
#if defined(__AVX512BF16__)
  note(out, n, "avx512bf16", __builtin_cpu_supports("avx512bf16"), all);
#endif
#if defined(__AVX512VP2INTERSECT__)
  note(out, n, "avx512vp2intersect", __builtin_cpu_supports("avx512vp2intersect"), all);
#endif
  return n;
}

[[gnu::constructor(101)]] SG_ANY_X86_CPU void check_cpu_at_load() {
  const char* missing[kMaxFeatures];
  const int count = scan(missing, false);
  if (count == 0) return;
  char text[1024];
  mismatch_text(text, sizeof text, missing, count);
  append(text, sizeof text, "\n");
  // write(2), not stdio: nothing of the C++ runtime is needed, and the
  // process ends right after. _Exit, not exit: exit would run destructors,
  // which are library code compiled for the build's target.
  const ssize_t written = write(STDERR_FILENO, text, std::strlen(text));
  (void)written;
  std::_Exit(1);
}

#else  // not x86: nothing to check (AArch64's NEON is part of the architecture)

int scan(const char**, bool) { return 0; }

#endif

std::vector<std::string> listed(bool all) {
  const char* names[kMaxFeatures];
  const int n = scan(names, all);
  return std::vector<std::string>(names, names + n);
}

}  // namespace

std::vector<std::string> build_cpu_features() { return listed(true); }

std::vector<std::string> missing_cpu_features() { return listed(false); }

// Set by CMakeLists.txt on this file alone, from the compiler's own answer.
#ifndef SMALLGRAD_BUILD_TARGET
#define SMALLGRAD_BUILD_TARGET "unknown"
#endif
std::string build_target() { return SMALLGRAD_BUILD_TARGET; }

namespace detail {

std::string cpu_mismatch_message(const std::vector<std::string>& missing) {
  std::vector<const char*> names;
  for (const std::string& m : missing) names.push_back(m.c_str());
  char text[1024];
  mismatch_text(text, sizeof text, names.data(), static_cast<int>(names.size()));
  return text;
}

}  // namespace detail

}  // namespace sg
