// Threads and BLIS set-up (core/runtime.hpp).
//
// Thread count: one number for OpenMP loops and BLIS calls together. OpenMP
// gets it through omp_set_num_threads; BLIS gets it per call, as an explicit
// rntm_t built by the GEMM wrapper from num_threads() (core/kernels/gemm.cpp), so
// nothing depends on BLIS's own global thread setting.
//
// Kernel choice: BLIS 0.9 reads BLIS_ARCH_TYPE once, when it initialises, and
// without it picks its slow generic kernels on CPUs newer than it knows
// (several times slower; docs/results.md). So before BLIS's
// first call we set the variable, unless the user already has, and then
// initialise BLIS ourselves.
#include "core/runtime.hpp"

#include <blis.h>
#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "core/error.hpp"

namespace sg {

namespace {

// 0 until set_num_threads is called or the default is first asked for.
std::atomic<int> g_num_threads{0};

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

const char* automatic_kernel_name() {
  const char* type = automatic_arch_type();
  if (!type) return "generic";
  return type[0] == '0' ? "skx" : "zen3";
}

// What the user had in BLIS_ARCH_TYPE before we looked (empty if unset).
std::string g_user_arch_type;

}  // namespace

void set_num_threads(int n) {
  if (n < 1) fail("set_num_threads: need at least 1 thread, got ", n);
  g_num_threads.store(n);
  omp_set_num_threads(n);
}

int num_threads() {
  int n = g_num_threads.load();
  if (n > 0) return n;
  n = threads_from_env();
  if (n == 0) n = omp_get_num_procs();
  if (n < 1) n = 1;
  // Another thread may have called set_num_threads meanwhile: keep its value.
  int expected = 0;
  if (!g_num_threads.compare_exchange_strong(expected, n)) return expected;
  return n;
}

namespace detail {

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
