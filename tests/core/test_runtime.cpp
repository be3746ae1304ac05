// The thread count is the process's: set_num_threads(n) governs every
// parallel region the library opens, from whichever thread, started before or
// after the call; the automatic default follows the machine's load.
#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/runtime.hpp"

#include "core/parallel.hpp"

namespace {

// The largest team a library parallel loop runs with, called on this thread.
int team_size_of_a_library_loop() {
  std::atomic<int> most{0};
  sg::parallel_for(1000, true, [&](int64_t) {
    const int n = omp_get_num_threads();
    int seen = most.load();
    while (n > seen && !most.compare_exchange_weak(seen, n)) {
    }
  });
  return most.load();
}

int on_new_thread(int (*f)()) {
  int result = 0;
  std::thread t([&] { result = f(); });
  t.join();
  return result;
}

struct RestoreThreads {
  bool automatic = sg::automatic_threads_in_use();
  int count = sg::num_threads();
  ~RestoreThreads() {
    if (automatic)
      sg::use_automatic_threads();
    else
      sg::set_num_threads(count);
  }
};

}  // namespace

TEST_CASE("set_num_threads governs library loops on every thread, started before or after", "[threads]") {
  RestoreThreads restore;
  // A thread that exists before the call, and sees it after.
  std::atomic<int> phase{0};
  int before_thread_result = 0;
  std::thread early([&] {
    while (phase.load() == 0) std::this_thread::yield();
    before_thread_result = team_size_of_a_library_loop();
  });
  sg::set_num_threads(1);
  phase = 1;
  early.join();
  REQUIRE(before_thread_result == 1);
  REQUIRE(on_new_thread(team_size_of_a_library_loop) == 1);
  REQUIRE(team_size_of_a_library_loop() == 1);

  sg::set_num_threads(2);
  REQUIRE(on_new_thread(team_size_of_a_library_loop) == 2);
  REQUIRE(team_size_of_a_library_loop() == 2);
  REQUIRE(on_new_thread([] { return sg::num_threads(); }) == 2);

  // Inside a parallel region a library loop stays on its thread: it opens no
  // region of its own (the nesting level stays the enclosing region's, 1).
  int deepest = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    sg::parallel_for(1000, true, [&](int64_t) { deepest = std::max(deepest, omp_get_level()); });
  }
  REQUIRE(deepest == 1);
}

TEST_CASE("set_num_threads refuses counts outside 1..kMaxThreads, naming the value", "[threads]") {
  RestoreThreads restore;
  REQUIRE_THROWS_WITH(sg::set_num_threads(0), Catch::Contains("set_num_threads") && Catch::Contains("got 0"));
  REQUIRE_THROWS_WITH(sg::set_num_threads(100000), Catch::Contains("got 100000"));
  REQUIRE_THROWS_WITH(sg::set_num_threads(-3), Catch::Contains("got -3"));
}

TEST_CASE("the automatic count leaves the cores other processes use", "[threads]") {
  using sg::detail::threads_for_load;
  REQUIRE(threads_for_load(0.0, 2) == 2);
  REQUIRE(threads_for_load(0.2, 2) == 2);   // a little background noise: both cores
  REQUIRE(threads_for_load(0.5, 2) == 1);   // half a core taken is enough to lose at the barriers
  REQUIRE(threads_for_load(1.0, 2) == 1);   // one busy process on two cores
  REQUIRE(threads_for_load(5.0, 2) == 1);   // never below one
  REQUIRE(threads_for_load(1.0, 8) == 7);
  REQUIRE(threads_for_load(0.0, 1) == 1);

  RestoreThreads restore;
  sg::set_num_threads(1);
  REQUIRE_FALSE(sg::automatic_threads_in_use());
  sg::use_automatic_threads();
  REQUIRE(sg::automatic_threads_in_use());
  const int n = sg::num_threads();
  REQUIRE(n >= 1);
  REQUIRE(n <= std::max(1, omp_get_num_procs()));
  // From another thread: the same process-wide setting.
  REQUIRE(on_new_thread([] { return sg::automatic_threads_in_use() ? 1 : 0; }) == 1);
}

TEST_CASE("ThreadCountGuard sets the calling thread's count only, and restores it", "[threads]") {
  RestoreThreads restore;
  sg::set_num_threads(2);
  {
    sg::ThreadCountGuard one(1);
    REQUIRE(sg::num_threads() == 1);
    REQUIRE(team_size_of_a_library_loop() == 1);
    REQUIRE(on_new_thread([] { return sg::num_threads(); }) == 2);  // other threads keep the process's count
    {
      sg::ThreadCountGuard three(3);
      REQUIRE(sg::num_threads() == 3);
    }
    REQUIRE(sg::num_threads() == 1);
  }
  REQUIRE(sg::num_threads() == 2);
  REQUIRE(team_size_of_a_library_loop() == 2);
  REQUIRE_THROWS_WITH(sg::ThreadCountGuard(0), Catch::Contains("ThreadCountGuard") && Catch::Contains("got 0"));
}
