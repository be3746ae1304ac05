// The build's CPU target: the load-time check's view of it (core/cpu.hpp),
// the GEMM tile chosen for it (core/kernels/gemm_tile.cpp), and that tile's
// every height and width against a naive loop.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cpu.hpp"
#include "core/kernels/gemm.hpp"

#include "core/kernels.hpp"
#include "core/kernels/gemm_tile.hpp"
#include "test_util.hpp"

using Catch::Matchers::Contains;

namespace {

bool has(const std::vector<std::string>& list, const std::string& name) {
  for (const std::string& s : list)
    if (s == name) return true;
  return false;
}

}  // namespace

TEST_CASE("the CPU runs every extension the library was built for", "[cpu]") {
  // The load-time check would have ended this process otherwise; this asks
  // the same question again through the public function.
  const auto built = sg::build_cpu_features();
  std::string list;
  for (const auto& f : built) list += f + " ";
  INFO("built for: " << list);
  REQUIRE(sg::missing_cpu_features().empty());
#if defined(__x86_64__)
  // Whatever the build's -march, every extension it names is a real one the
  // CPU reports, and the wider ones come with what they build on.
  if (has(built, "avx512f")) REQUIRE(has(built, "avx2"));
  if (has(built, "avx2")) REQUIRE((has(built, "avx") && has(built, "sse4.2")));
  for (const auto& f : built) REQUIRE(!f.empty());
#else
  REQUIRE(built.empty());  // nothing is checked on other architectures
#endif
}

// The compiler's own name for the build's target, which the study's settings
// print and its checked-in tables are found by. The cpu-* test presets run
// this program against a library built for another CPU (LD_LIBRARY_PATH)
// and say which in SMALLGRAD_EXPECT_TARGET: this is where a library found
// elsewhere (the release build's own) would show.
TEST_CASE("the library names the CPU target it was compiled for", "[cpu]") {
  const std::string target = sg::build_target();
  INFO("build_target: " << target);
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)  // (g++ for ARM may name no -mtune)
  REQUIRE(target.rfind("-march=", 0) == 0);
  REQUIRE(target.find(" -mtune=") != std::string::npos);
#endif
  if (const char* expected = std::getenv("SMALLGRAD_EXPECT_TARGET")) {
    INFO("SMALLGRAD_EXPECT_TARGET: " << expected);
    REQUIRE(target.rfind(std::string(expected) + " ", 0) == 0);
  }
}

TEST_CASE("a CPU lacking the build's extensions gets a message naming them and the fix", "[cpu]") {
  const std::string text = sg::detail::cpu_mismatch_message({"avx2", "fma"});
  REQUIRE_THAT(text, Contains("smallgrad: this libsmallgrad was compiled for ") &&
                         Contains("but this CPU lacks avx2, fma,") &&
                         Contains("illegal instruction") && Contains("--preset avx2") &&
                         Contains("--preset sse42") && Contains("SMALLGRAD_NATIVE=ON"));
  REQUIRE(text.find('\n') == std::string::npos);  // one line
}

TEST_CASE("the GEMM tile is the one for the build's widest vectors", "[cpu][gemm]") {
  const auto built = sg::build_cpu_features();
  const std::string tile = sg::kernel::tile::target();
  INFO("tile: " << tile);
  REQUIRE(sg::kernel::tile::tuned());
#if defined(__x86_64__)
  if (has(built, "avx512f"))
    REQUIRE_THAT(tile, Contains("AVX-512: 512-bit vectors, float tiles of 8 x 32"));
  else if (has(built, "avx2") && has(built, "fma"))
    REQUIRE_THAT(tile, Contains("AVX2+FMA: 256-bit vectors, float tiles of 6 x 16"));
  else
    REQUIRE_THAT(tile, Contains("SSE: 128-bit vectors, float tiles of 4 x 8"));
#elif defined(__aarch64__)
  REQUIRE_THAT(tile, Contains("NEON: 128-bit vectors, float tiles of 8 x 8"));
#endif
}

TEMPLATE_TEST_CASE("gemm: every tile height and panel width of this build's tile", "[gemm][cpu]",
                   float, double) {
  using T = TestType;
  // m from 1 to 33 passes through every row count the tiles take (R, 8, 4,
  // 2, 1 for R = 4 to 16); n covers one and two vectors of 2, 4, 8 and 16
  // values, each edge +-1; k = 20 takes the tiny path where n fits a panel,
  // k = 40 the general one.
  for (int64_t k : {20, 40})
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33})
      for (int64_t m = 1; m <= 33; ++m)
        for (int t = 0; t < 4; ++t) {
          const bool ta = t & 1, tb = t & 2;
          const auto a = test_util::uniform_values<T>({m * k}, -1, 1, 7 + m);
          const auto b = test_util::uniform_values<T>({k * n}, -1, 1, 11 + n);
          std::vector<T> c(static_cast<size_t>(m * n), T(0.5));
          sg::kernel::gemm<T>(ta, tb, m, n, k, T(1), a.data(), ta ? m : k, b.data(), tb ? k : n,
                              T(2), c.data(), n);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double want = 1.0, mag = 1.0;  // 2 * 0.5
              for (int64_t p = 0; p < k; ++p) {
                const double x = ta ? a[p * m + i] : a[i * k + p];
                const double y = tb ? b[j * k + p] : b[p * n + j];
                want += x * y;
                mag += std::abs(x * y);
              }
              const double got = c[i * n + j];
              const double tol = (std::is_same_v<T, float> ? 1e-5 : 1e-13) * mag;
              if (!(std::abs(got - want) <= tol)) {
                INFO("m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb
                          << " element (" << i << ", " << j << "): got " << got << ", want " << want);
                REQUIRE(std::abs(got - want) <= tol);
              }
            }
        }
}
