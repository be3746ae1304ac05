// core/parallel.hpp: an exception thrown by a parallel_for body, on any
// thread of the team, reaches the caller (the first one thrown, its type and
// message intact) instead of ending the process through std::terminate.
#include <catch2/catch.hpp>
#include <omp.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"
#include "core/runtime.hpp"

#include "core/parallel.hpp"

using Catch::Contains;

TEST_CASE("parallel_for passes an sg::Error thrown on one iteration to the caller", "[threads][parallel]") {
  const sg::ThreadCountGuard two(2);
  const int64_t n = 100, bad = 73;  // static schedule: iteration 73 runs on the second thread
  std::atomic<int> team{0}, thread_of_bad{-1};
  std::vector<std::atomic<int>> ran(static_cast<size_t>(n));
  auto body = [&](int64_t i) {
    team = omp_get_num_threads();
    ran[static_cast<size_t>(i)] = 1;
    if (i == bad) {
      thread_of_bad = omp_get_thread_num();
      sg::fail("parallel_for test: iteration ", i, " of ", n, " refused");
    }
  };
  REQUIRE_THROWS_MATCHES(sg::parallel_for(n, true, body), sg::Error,
                         Catch::Matchers::Message("parallel_for test: iteration 73 of 100 refused"));
  REQUIRE(team == 2);
  REQUIRE(thread_of_bad == 1);  // thrown off the calling thread, where an uncaught exception terminates
  REQUIRE(ran[static_cast<size_t>(bad)] == 1);

  // The team is usable afterwards, and every iteration of a clean loop runs once.
  std::atomic<int64_t> total{0};
  sg::parallel_for(n, true, [&](int64_t i) { total += i; });
  REQUIRE(total == n * (n - 1) / 2);
}

TEST_CASE("parallel_for rethrows one of many exceptions with its own type, in parallel and serially",
          "[threads][parallel]") {
  const sg::ThreadCountGuard two(2);
  for (bool parallel : {true, false}) {
    INFO("parallel " << parallel);
    // Every iteration throws: the caller gets exactly one of them, whole.
    REQUIRE_THROWS_WITH(sg::parallel_for(64, parallel, [](int64_t i) { sg::fail("iteration ", i, " failed"); }),
                        Contains("iteration ") && Contains(" failed"));
    // Not only sg::Error: any exception keeps its type.
    REQUIRE_THROWS_AS(sg::parallel_for(64, parallel, [](int64_t i) {
                        if (i % 2) throw std::out_of_range("odd");
                      }),
                      std::out_of_range);
  }
}
