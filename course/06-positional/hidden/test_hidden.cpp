// Hidden tests of assignment 6: the sinusoidal table against sin and cos in
// long double, the rows added at an offset, the learned table's gradient
// against sums written out here for a random output gradient, the bounds,
// and dropout after the addition.
#include <catch2/catch.hpp>

#include "autograd/engine.hpp"
#include "core/tensor.hpp"
#include "nn/positional.hpp"
#include "hidden_util.hpp"

using namespace hidden;
using Catch::Contains;

namespace {

using LD = long double;

LD table(int64_t i, int64_t col, int64_t d) {
  const int64_t j = col / 2;
  const LD angle = static_cast<LD>(i) / std::pow(10000.0L, 2.0L * static_cast<LD>(j) / static_cast<LD>(d));
  return col % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

}  // namespace

TEST_CASE("6.1 the sinusoidal table is sin and cos of i / 10000^(2j/d)", "[a6][a6.1]") {
  for (const auto& [d, len] : std::vector<std::pair<int64_t, int64_t>>{{8, 50}, {32, 200}, {2, 7}}) {
    INFO("num_hiddens " << d << " max_len " << len);
    sg::nn::PositionalEncoding pe(d, 0.0, len);
    std::vector<double> want;
    for (int64_t i = 0; i < len; ++i)
      for (int64_t c = 0; c < d; ++c) want.push_back(static_cast<double>(table(i, c, d)));
    test_util::check_values<float>(pe.P, {1, len, d}, want, 1e-6, 2e-6);
  }
}

TEST_CASE("6.2 forward adds the table's rows from the offset on", "[a6][a6.2]") {
  const int64_t d = 6, len = 12;
  sg::nn::PositionalEncoding pe(d, 0.0, len);
  pe.eval();
  for (int64_t offset : {0, 3, 7}) {
    const int64_t steps = len - offset < 5 ? len - offset : 5;
    INFO("offset " << offset << " steps " << steps);
    const Shape s{2, steps, d};
    const std::vector<double> x = randoms(s, 60 + static_cast<uint64_t>(offset));
    std::vector<double> want(x.size());
    for (int64_t k = 0; k < count(s); ++k) {
      const int64_t t = (k / d) % steps, c = k % d;
      want[static_cast<size_t>(k)] = static_cast<double>(static_cast<float>(x[static_cast<size_t>(k)])) +
                                     static_cast<double>(static_cast<float>(table(offset + t, c, d)));
    }
    test_util::check_values<float>(pe.forward(tensor(x, s, sg::float32), offset), s, want, 1e-6, 1e-6);
  }
  // The whole table (offset 0, T = max_len) is allowed.
  CHECK_NOTHROW(pe.forward(sg::zeros({1, len, d}), 0));
}

TEST_CASE("6.3 the learned table's gradient is g summed over the batch at the used rows", "[a6][a6.3]") {
  for (sg::DType dt : {sg::float32, sg::float64}) {
    const int64_t d = 4, len = 9, steps = 3, offset = 5;
    sg::nn::LearnedPositionalEncoding pe(d, 0.0, len);
    pe.to(dt);
    const Shape s{2, steps, d};
    Tensor x = tensor(randoms(s, 70), s, dt).set_requires_grad();
    const std::vector<double> g = randoms(s, 71);
    sg::backward(pe.forward(x, offset), tensor(g, s, dt));
    std::vector<double> want(static_cast<size_t>(len * d), 0.0);
    for (int64_t k = 0; k < count(s); ++k)
      want[static_cast<size_t>((offset + (k / d) % steps) * d + k % d)] += g[static_cast<size_t>(k)];
    if (dt == sg::float32) {
      test_util::check_values<float>(pe.P.grad(), {1, len, d}, want, 1e-6, 1e-6);
      test_util::check_values<float>(x.grad(), s, g, 1e-6, 1e-6);
    } else {
      test_util::check_values<double>(pe.P.grad(), {1, len, d}, want, 1e-14, 1e-14);
      test_util::check_values<double>(x.grad(), s, g, 0, 0);
    }
  }
}

TEST_CASE("6.4 positions past max_len or a wrong width are refused", "[a6][a6.4]") {
  sg::nn::PositionalEncoding pe(4, 0.0, 10);
  sg::nn::LearnedPositionalEncoding learned(4, 0.0, 10);
  CHECK_THROWS_WITH(pe.forward(sg::zeros({1, 4, 4}), 7), Contains("max_len 10"));
  CHECK_THROWS_WITH(learned.forward(sg::zeros({1, 11, 4})), Contains("max_len 10"));
  CHECK_THROWS_AS(pe.forward(sg::zeros({1, 2, 4}), -1), sg::Error);
  CHECK_THROWS_AS(pe.forward(sg::zeros({1, 2, 5})), sg::Error);
  CHECK_THROWS_AS(learned.forward(sg::zeros({2, 4})), sg::Error);
  CHECK_NOTHROW(pe.forward(sg::zeros({1, 4, 4}), 6));
  CHECK_NOTHROW(learned.forward(sg::zeros({3, 10, 4})));
}

TEST_CASE("6.5 dropout follows the addition in training and not in eval", "[a6][a6.5]") {
  sg::nn::PositionalEncoding pe(8, 0.5, 16);
  const Shape s{4, 16, 8};
  const Tensor x = tensor(randoms(s, 80), s, sg::float32);
  pe.eval();
  const auto clean = pe.forward(x).to_vector<float>();
  pe.train();
  const auto dropped = pe.forward(x).to_vector<float>();
  int64_t zeros = 0;
  for (size_t k = 0; k < clean.size(); ++k) {
    if (dropped[k] == 0.0f) {
      ++zeros;
      continue;
    }
    INFO("element " << k);
    REQUIRE(std::fabs(dropped[k] - 2 * clean[k]) <= 1e-5 * (1 + std::fabs(clean[k])));
  }
  // 512 elements dropped with probability 1/2: between 150 and 362 dropped with near certainty.
  CHECK(zeros > 150);
  CHECK(zeros < 362);
}

TEST_CASE("6.6 in eval mode both encodings add exactly on every call and train() turns dropout back on", "[a6][a6.6]") {
  const int64_t d = 6, len = 12, offset = 3;
  const Shape s{3, 7, d};
  for (sg::DType dt : {sg::float32, sg::float64}) {
    sg::nn::PositionalEncoding sinusoidal(d, 0.5, len);
    sg::nn::LearnedPositionalEncoding learned(d, 0.5, len);
    sinusoidal.to(dt);
    learned.to(dt);
    const std::vector<double> xv = randoms(s, 660);
    const Tensor x = tensor(xv, s, dt);
    for (int which = 0; which < 2; ++which) {
      sg::nn::AddedPositions& pe = which == 0 ? static_cast<sg::nn::AddedPositions&>(sinusoidal) : learned;
      INFO((which == 0 ? "PositionalEncoding" : "LearnedPositionalEncoding") << " in " << (dt == sg::float32 ? "float32" : "float64"));
      // The rows [offset, offset + 7) of the table, from its own values.
      const auto P = sg::kernel::to(pe.P, sg::float64).to_vector<double>();
      std::vector<double> want(xv.size());
      for (int64_t k = 0; k < count(s); ++k) {
        const double xk = dt == sg::float32 ? static_cast<double>(static_cast<float>(xv[static_cast<size_t>(k)]))
                                            : xv[static_cast<size_t>(k)];
        want[static_cast<size_t>(k)] = xk + P[static_cast<size_t>((offset + (k / d) % 7) * d + k % d)];
      }
      pe.eval();
      for (int call = 0; call < 2; ++call) {
        INFO("eval, call " << call + 1);
        const Tensor out = sg::kernel::to(pe.forward(x, offset), sg::float64);
        test_util::check_values<double>(out, s, want, 1e-6, 1e-6);
      }
      pe.train();
      const auto dropped = sg::kernel::to(pe.forward(x, offset), sg::float64).to_vector<double>();
      int64_t zeros = 0;
      for (size_t k = 0; k < dropped.size(); ++k) {
        if (dropped[k] == 0.0) {
          ++zeros;
          continue;
        }
        INFO("training again, element " << k);
        REQUIRE(std::fabs(dropped[k] - 2 * want[k]) <= 1e-5 * (1 + std::fabs(want[k])));
      }
      // 126 elements dropped with probability 1/2: between 30 and 96 with near certainty.
      CHECK(zeros > 30);
      CHECK(zeros < 96);
    }
  }
}

TEST_CASE("6.7 an input changed in place between forward and backward gives the version error or the forward's gradient",
          "[a6][a6.7]") {
  sg::nn::LearnedPositionalEncoding learned(4, 0.0, 9);
  sg::nn::PositionalEncoding sinusoidal(4, 0.0, 9);
  learned.to(sg::float64);
  sinusoidal.to(sg::float64);
  const Shape s{2, 3, 4};
  check_inplace_change("LearnedPositionalEncoding at offset 5", [&](const Inputs& in) { return learned.forward(in[0], 5); },
                       {randoms(s, 670)}, {s}, 671);
  check_inplace_change("PositionalEncoding at offset 2", [&](const Inputs& in) { return sinusoidal.forward(in[0], 2); },
                       {randoms(s, 672)}, {s}, 673);
}
