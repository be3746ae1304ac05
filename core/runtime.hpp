#pragma once
// Threads and BLIS set-up: the one place that decides how many threads
// OpenMP loops and BLIS calls use, and which BLIS kernels run.
#include <cstdint>
#include <string>

namespace sg {

// The thread count of the whole process, for every OpenMP loop of the
// library and every BLIS call together, whichever thread calls: set once,
// it holds for threads started before and after. BLIS never threads inside
// an OpenMP loop (those calls get a one-thread BLIS runtime).
//
// Default (automatic): OMP_NUM_THREADS if set; otherwise the cores that other
// processes leave free, measured every 100 ms over the last half second
// (every core on an idle machine, one of two while another program keeps a
// core busy), because OpenMP's
// threads spin-wait and a thread that has to share its core makes every
// parallel region wait for it. Results do not depend on the count (except
// through BLIS, for products with n and k both over 1024).
inline constexpr int kMaxThreads = 1024;
void set_num_threads(int n);      // 1 .. kMaxThreads; fixes the count
void use_automatic_threads();     // back to the automatic count, even with OMP_NUM_THREADS set
bool automatic_threads_in_use();  // false after set_num_threads or with OMP_NUM_THREADS
int num_threads();                // the count in force now: this thread's own, if set (below)

// This thread's own count, for the loops and BLIS calls it starts, while the
// guard lives (nested guards restore the previous count). A data-parallel
// step (parallel/data_parallel.hpp) runs each micro-batch on its own thread under
// ThreadCountGuard(1), so the ops inside it never start parallel regions:
// the parallelism is the micro-batches'. Other threads keep the process's
// count. Results do not depend on it, as for the process's count.
class ThreadCountGuard {
 public:
  explicit ThreadCountGuard(int n);  // 1 .. kMaxThreads
  ~ThreadCountGuard();
  ThreadCountGuard(const ThreadCountGuard&) = delete;
  ThreadCountGuard& operator=(const ThreadCountGuard&) = delete;

 private:
  int previous_;
};

// Name of the BLIS kernel set in use ("skx", "zen3", "haswell", "generic"...).
// BLIS 0.9 does not recognise recent CPUs and falls back to slow generic
// kernels; unless BLIS_ARCH_TYPE is set, smallgrad picks the fastest kernels
// the CPU supports (AVX-512 -> skx, AVX2+FMA -> zen3) before BLIS's first call.
std::string blis_kernels();
// The kernel set this CPU should use by the rule above ("skx", "zen3" or
// "generic" on x86; off x86 BLIS's own choice, which smallgrad leaves
// alone); when the user has set BLIS_ARCH_TYPE, the set they asked for.
std::string expected_blis_kernels();

namespace detail {
// The automatic count for `others` cores' worth of other processes' work on
// `cores` cores (at least 1).
int threads_for_load(double others, int cores);
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
