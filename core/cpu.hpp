#pragma once
// The CPU the library was built for, checked against the CPU it runs on.
//
// smallgrad compiles for one target (-march=native by default, or a preset's
// -march=x86-64-v3 / -v2): its kernels then use that target's instructions
// (AVX-512, AVX2, FMA...) everywhere, without a run-time choice. A copy built
// for one CPU and run on an older one would die on an illegal instruction
// (SIGILL) somewhere in the first kernel. So when the library is loaded,
// before any of its other code runs, it compares the extensions it was
// compiled for with what the CPU reports (x86: cpuid, through GCC's
// __builtin_cpu_supports); if any is missing it prints one line to stderr
// naming them and how to rebuild, and the process ends with status 1. It
// cannot throw instead: nothing can catch an exception at load time, and any
// library code run after it could be the illegal instruction. On AArch64 the
// build's vectors (NEON) are part of the architecture and nothing is checked.
#include <string>
#include <vector>

namespace sg {

// The instruction-set extensions this build was compiled to use, by GCC's
// names ("ssse3", "sse4.2", "avx2", "fma", "avx512f", ...): empty for a
// baseline x86-64 build and on other architectures.
std::vector<std::string> build_cpu_features();

// The CPU target the library was compiled for, as the compiler resolved
// its flags: "-march=znver3 -mtune=znver3" for -march=native on a Zen 3,
// "-march=x86-64-v3 -mtune=generic" for the avx2 preset's x86-64-v3
// ("unknown" when the compiler would not say). Two builds with the same
// vectors but another -march or -mtune may round some sums otherwise:
// the study's tables are checked in per build (tests/check_study_table.cmake).
std::string build_target();

// Those of build_cpu_features() this CPU lacks. Always empty in a running
// program: the check at load ends the process before main otherwise.
std::vector<std::string> missing_cpu_features();

namespace detail {
// The line the load-time check prints for a CPU lacking `missing` (a list of
// build features): names them, the build's target and the fix.
std::string cpu_mismatch_message(const std::vector<std::string>& missing);
}  // namespace detail

}  // namespace sg
