#pragma once
// Threads and BLIS set-up: the one place that decides how many threads
// OpenMP loops and BLIS calls use, and which BLIS kernels run.
#include <cstdint>
#include <string>

namespace sg {

// Sets the thread count for OpenMP loops and for BLIS together. Default:
// OMP_NUM_THREADS if set, else every core. BLIS never threads inside an
// OpenMP loop (those calls get a one-thread BLIS runtime).
void set_num_threads(int n);
int num_threads();

// Name of the BLIS kernel set in use ("skx", "zen3", "haswell", "generic"...).
// BLIS 0.9 does not recognise recent CPUs and falls back to slow generic
// kernels; unless BLIS_ARCH_TYPE is set, smallgrad picks the fastest kernels
// the CPU supports (AVX-512 -> skx, AVX2+FMA -> zen3) before BLIS's first call.
std::string blis_kernels();
// The kernel set this CPU should use by the rule above ("skx", "zen3" or
// "generic"); when the user has set BLIS_ARCH_TYPE, the set they asked for.
std::string expected_blis_kernels();

namespace detail {
// Picks BLIS's kernels (the rule above) and initialises BLIS, once per
// process. Every call into BLIS goes after it: the kernel choice is read
// only when BLIS initialises.
void ensure_blis();
}  // namespace detail

// Size thresholds below which a loop stays on one thread: starting an OpenMP
// region costs microseconds, more than a small loop's arithmetic.
inline constexpr int64_t kParallelElementwise = 1 << 15;  // elements
inline constexpr int64_t kParallelRows = 64;             // rows of a row-wise kernel

}  // namespace sg
