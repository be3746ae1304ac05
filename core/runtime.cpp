// Threads and BLIS set-up (core/runtime.hpp).
//
// Thread count: one number for the process, for OpenMP loops and BLIS calls
// together. Every parallel region of the library passes num_threads() to
// OpenMP explicitly (core/parallel.hpp, core/kernels/gemm*.cpp), and BLIS gets
// it per call as an explicit rntm_t, so the count holds on every thread of the
// process: omp_set_num_threads alone would set only the calling thread's value.
//
// The default adapts to the machine's load. libgomp's threads spin for about
// 3 ms (GOMP_SPINCOUNT 300000) before they sleep, and every region waits for
// all of its threads at a barrier: when another process holds a core, a
// second thread of ours is descheduled in the middle of a region, the first
// spins at the barrier for its time slice, and a run is 3 to 10 times slower
// than on one thread (docs/results.md, "Threads"). libgomp reads
// OMP_WAIT_POLICY when it loads, before any of our code runs, so the library
// cannot turn the spinning off; it avoids it instead: unless the user fixed
// the count, num_threads() is the number of cores that other processes leave
// free, measured every 100 ms from /proc/stat (all CPU time) minus our own
// CPU time, over the busiest of the last five intervals. With nothing else
// running that is every core; with one busy process on two cores it is one,
// and the workers fall asleep. Results do not depend on the count (no
// kernel of ours splits a sum by thread; only BLIS, for products with n and
// k both over 1024, may reassociate), so they do not change with the load.
//
// Kernel choice: BLIS 0.9 reads BLIS_ARCH_TYPE once, when it initialises, and
// without it picks its slow generic kernels on CPUs newer than it knows
// (several times slower; docs/results.md). So before BLIS's
// first call we set the variable, unless the user already has, and then
// initialise BLIS ourselves.
#include "core/runtime.hpp"

#include <blis.h>
#include <omp.h>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/error.hpp"

namespace sg {

namespace {

// The count fixed by set_num_threads or OMP_NUM_THREADS; 0: automatic.
std::atomic<int> g_fixed_threads{0};
// The automatic count in force (0 until first asked for).
std::atomic<int> g_auto_threads{0};
// This thread's own count (ThreadCountGuard); 0: the process's.
thread_local int t_thread_count = 0;

// OMP_NUM_THREADS may be a list ("4,2" for nested levels): its first entry
// counts. Returns 0 when unset or unreadable.
int threads_from_env() {
  const char* s = std::getenv("OMP_NUM_THREADS");
  if (!s || !*s) return 0;
  char* end = nullptr;
  long n = std::strtol(s, &end, 10);
  if (end == s || n < 1 || n > 1 << 16) return 0;
  return static_cast<int>(n);
}

// BLIS_ARCH_TYPE indices (BLIS 0.9's arch_t enum): 0 = skx, 6 = zen3, as
// bli_arch_string(0) and (6) confirm on Debian's BLIS 0.9.0. The test "BLIS
// runs the kernels the CPU supports" checks the choice took effect.
// Returns the value for BLIS_ARCH_TYPE, or nullptr to leave BLIS's own choice.
const char* automatic_arch_type() {
#if defined(__x86_64__) || defined(__i386__)
  // The skx kernels use AVX-512 F, DQ, BW and VL instructions.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return "0";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "6";
#endif
  return nullptr;
}

// Off x86, smallgrad sets nothing and BLIS's own detection stands (on
// aarch64 it knows the NEON cores: cortexa57, cortexa53, thunderx2,
// firestorm): then the expected set is BLIS's choice.
std::string automatic_kernel_name() {
#if defined(__x86_64__) || defined(__i386__)
  const char* type = automatic_arch_type();
  if (!type) return "generic";
  return type[0] == '0' ? "skx" : "zen3";
#else
  return bli_arch_string(bli_arch_query_id());
#endif
}

// ---- the automatic count ----

using Clock = std::chrono::steady_clock;
constexpr auto kRefreshEvery = std::chrono::milliseconds(100);

// CPU time of the whole machine that was not idle, in seconds (user, nice,
// system, irq, softirq and steal of /proc/stat's first line); < 0 if unreadable.
double machine_busy_seconds() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long v[8] = {};
  const int got = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                              &v[4], &v[5], &v[6], &v[7]);
  std::fclose(f);
  if (got < 4) return -1;
  static const double tick = [] {
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? 1.0 / static_cast<double>(hz) : 0.01;
  }();
  const unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];  // not idle (3), iowait (4)
  return static_cast<double>(busy) * tick;
}

double process_cpu_seconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Tasks running on the machine right now, from /proc/loadavg ("0.5 0.3 0.2
// 3/250 1234": 3 running); 0 if unreadable. Only for the first choice, before
// there is an interval to measure over.
int running_tasks() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return 0;
  double a = 0, b = 0, c = 0;
  int running = 0, total = 0;
  const int got = std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total);
  std::fclose(f);
  return got == 5 ? running : 0;
}

int cores() {
  static const int n = std::max(1, omp_get_num_procs());
  return n;
}


// The count follows the busiest of the last kWindows intervals: it drops as
// soon as another process takes a core, and rises again only when the core
// has stayed free for all of them (a compiler between two files frees a
// core for a moment; a second thread started then would stall at once).
constexpr int kWindows = 5;

struct LoadWatch {
  std::mutex mutex;
  Clock::time_point last{};
  double machine = 0, own = 0;  // machine_busy_seconds and process_cpu_seconds at `last`
  double others[kWindows] = {};  // other processes' cores, the last kWindows intervals
  int next_window = 0;
  std::atomic<int64_t> next_ns{0};  // steady-clock time of the next measurement
};
LoadWatch g_watch;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

int automatic_threads() {
  const int current = g_auto_threads.load(std::memory_order_relaxed);
  if (cores() == 1) return 1;
  if (current > 0 && now_ns() < g_watch.next_ns.load(std::memory_order_relaxed)) return current;
  std::unique_lock<std::mutex> lock(g_watch.mutex, std::try_to_lock);
  if (!lock.owns_lock()) return current > 0 ? current : 1;  // another thread is measuring
  const Clock::time_point now = Clock::now();
  const double machine = machine_busy_seconds(), own = process_cpu_seconds();
  int n = current;
  if (machine < 0) {
    n = cores();  // no /proc: every core, as OpenMP would
  } else if (current == 0) {
    const double others = std::max(0, running_tasks() - 1);  // minus this thread
    std::fill(std::begin(g_watch.others), std::end(g_watch.others), others);
    n = detail::threads_for_load(others, cores());
  } else {
    const double wall = std::chrono::duration<double>(now - g_watch.last).count();
    g_watch.others[g_watch.next_window] = std::max(0.0, (machine - g_watch.machine) - (own - g_watch.own)) / wall;
    g_watch.next_window = (g_watch.next_window + 1) % kWindows;
    n = detail::threads_for_load(*std::max_element(std::begin(g_watch.others), std::end(g_watch.others)), cores());
  }
  g_watch.last = now;
  g_watch.machine = machine;
  g_watch.own = own;
  g_watch.next_ns.store(now_ns() + std::chrono::nanoseconds(kRefreshEvery).count(), std::memory_order_relaxed);
  g_auto_threads.store(n, std::memory_order_relaxed);
  return n;
}

// What the user had in BLIS_ARCH_TYPE before we looked (empty if unset).
std::string g_user_arch_type;

}  // namespace

void set_num_threads(int n) {
  if (n < 1 || n > kMaxThreads)
    fail("set_num_threads: need 1 to ", kMaxThreads, " threads, got ", n);
  g_fixed_threads.store(n);
  omp_set_num_threads(n);  // for the caller's own `omp parallel` regions
}

void use_automatic_threads() {
  automatic_threads_in_use();  // OMP_NUM_THREADS read (once) before, so it cannot fix the count after
  g_fixed_threads.store(0);
}

bool automatic_threads_in_use() {
  static std::once_flag env_once;
  std::call_once(env_once, [] {
    // OMP_NUM_THREADS fixes the count, as set_num_threads does (unless
    // set_num_threads came first).
    int expected = 0;
    if (const int n = threads_from_env(); n > 0) g_fixed_threads.compare_exchange_strong(expected, n);
  });
  return g_fixed_threads.load(std::memory_order_relaxed) == 0;
}

ThreadCountGuard::ThreadCountGuard(int n) : previous_(t_thread_count) {
  if (n < 1 || n > kMaxThreads)
    fail("ThreadCountGuard: need 1 to ", kMaxThreads, " threads, got ", n);
  t_thread_count = n;
}

ThreadCountGuard::~ThreadCountGuard() { t_thread_count = previous_; }

int num_threads() {
  if (t_thread_count > 0) return t_thread_count;
  if (!automatic_threads_in_use()) return g_fixed_threads.load(std::memory_order_relaxed);
  return automatic_threads();
}

namespace detail {

int threads_for_load(double others, int cores) {
  // The free cores, rounded down unless nearly whole: 0.3 core of another
  // process already makes a second thread lose more at its barriers than it gains.
  const double free_cores = static_cast<double>(cores) - others;
  return std::clamp(static_cast<int>(std::floor(free_cores + 0.3)), 1, std::max(1, cores));
}

void ensure_blis() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* user = std::getenv("BLIS_ARCH_TYPE"); user && *user) {
      g_user_arch_type = user;
    } else if (const char* type = automatic_arch_type()) {
      setenv("BLIS_ARCH_TYPE", type, /*overwrite=*/0);
    }
    // Must come before any query: bli_arch_query_id() on an uninitialised
    // BLIS with BLIS_ARCH_TYPE set aborts the process.
    bli_init();
  });
}

}  // namespace detail

std::string blis_kernels() {
  detail::ensure_blis();
  return bli_arch_string(bli_arch_query_id());
}

std::string expected_blis_kernels() {
  detail::ensure_blis();
  if (!g_user_arch_type.empty()) {
    // The user chose: BLIS uses that index (it rejects invalid ones itself).
    char* end = nullptr;
    long id = std::strtol(g_user_arch_type.c_str(), &end, 10);
    if (end != g_user_arch_type.c_str() && id >= 0 && id < BLIS_NUM_ARCHS)
      return bli_arch_string(static_cast<arch_t>(id));
  }
  return automatic_kernel_name();
}

}  // namespace sg
