// The positions panel: similarity of position vectors and the five
// properties, measured on models against values worked out independently.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/random.hpp"
#include "study/position_properties.hpp"
#include "nn/positional.hpp"

namespace {
sg::study::Config config(sg::nn::Positional kind) {
  sg::study::Config c;
  c.positional = kind;
  c.hidden = 16, c.heads = 2, c.ffn = 16, c.blocks = 1;
  return c;
}
}  // namespace

TEST_CASE("sinusoidal positions: unique, consistent, bounded, deterministic", "[positions]") {
  const auto c = config(sg::nn::Positional::sinusoidal);
  sg::manual_seed(0);
  const sg::study::Model m(c);
  const auto v = sg::study::view_positions(m, c, 0.5);
  REQUIRE(v.similarity.size() == static_cast<size_t>(c.positions()));
  CHECK(v.similarity[3][3] == Approx(1.0));
  // P_i . P_j = sum_k cos((i - j) w_k) over the d/2 frequencies w_k = 10000^(-2k/d): norm d/2.
  double want = 0;
  for (int k = 0; k < 8; ++k) want += std::cos(2.0 * std::pow(10000.0, -2.0 * k / 16)) / 8;
  CHECK(v.similarity[1][3] == Approx(want).margin(1e-5));
  CHECK(v.unique.rfind("yes", 0) == 0);
  CHECK(v.consistent.rfind("yes", 0) == 0);
  CHECK(v.bounded.rfind("yes: largest abs(P) 1.000", 0) == 0);
  CHECK(v.deterministic.rfind("yes", 0) == 0);
  CHECK(v.longer.find("accuracy 0.500 on lengths 13-16") != std::string::npos);
}

TEST_CASE("learned positions: not deterministic, distances inconsistent, rows past training named", "[positions]") {
  const auto c = config(sg::nn::Positional::learned);
  sg::manual_seed(0);
  const sg::study::Model m(c);
  const auto v = sg::study::view_positions(m, c, 0.1);
  CHECK(v.deterministic.rfind("no", 0) == 0);
  CHECK(v.consistent.rfind("no", 0) == 0);
  CHECK(v.unique.rfind("yes", 0) == 0);  // random vectors in 16 dimensions differ
  CHECK(v.longer.find("rows 12-15 never trained") != std::string::npos);
}

TEST_CASE("rotary positions: the kernel is cos of the offset times each frequency, averaged", "[positions]") {
  const auto c = config(sg::nn::Positional::rotary);
  sg::manual_seed(0);
  const sg::study::Model m(c);
  const auto v = sg::study::view_positions(m, c, 1.0);
  const int dh = 8;  // hidden 16 / 2 heads
  for (int i : {0, 5})
    for (int j : {2, 9}) {
      double want = 0;
      for (int k = 0; k < dh / 2; ++k) want += std::cos((i - j) * std::pow(10000.0, -2.0 * k / dh)) / (dh / 2);
      CHECK(v.similarity[static_cast<size_t>(i)][static_cast<size_t>(j)] == Approx(want).margin(1e-5));
    }
  CHECK(v.consistent.rfind("yes", 0) == 0);
  CHECK(v.deterministic.rfind("yes", 0) == 0);
  CHECK(v.bounded.rfind("yes", 0) == 0);
}

TEST_CASE("relative and none: no code per position", "[positions]") {
  for (auto kind : {sg::nn::Positional::relative, sg::nn::Positional::none}) {
    const auto c = config(kind);
    sg::manual_seed(0);
    const sg::study::Model m(c);
    const auto v = sg::study::view_positions(m, c, 0.2);
    CHECK(v.unique.rfind("no", 0) == 0);
    if (kind == sg::nn::Positional::none) {
      CHECK(v.similarity.empty());
    } else {
      CHECK(v.consistent.rfind("yes", 0) == 0);  // a function of j - i only
      CHECK(v.deterministic.rfind("no", 0) == 0);
      CHECK(v.similarity[0][0] == Approx(1.0));
    }
  }
}

TEST_CASE("properties_table: a header and one row per view", "[positions]") {
  sg::study::PositionView v;
  v.encoding = "sinusoidal";
  v.unique = "yes", v.consistent = "yes", v.longer = "acc", v.bounded = "yes", v.deterministic = "yes";
  const std::string t = sg::study::properties_table({{"shift", v}, {"sort", v}});
  CHECK(t.find("| shift | sinusoidal | yes | yes | acc | yes | yes |\n") != std::string::npos);
  CHECK(t.find("| sort | sinusoidal |") != std::string::npos);
  CHECK(t.find("5. deterministic") != std::string::npos);
}
