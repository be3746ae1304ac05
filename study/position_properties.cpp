// What study/position_properties.hpp declares.
#include "study/position_properties.hpp"

#include "autograd/engine.hpp"
#include "autograd/ops/rope.hpp"

#include <cmath>
#include <cstdio>

namespace sg::study {

namespace detail {

using Rows = std::vector<std::vector<double>>;

std::string fmt(const char* f, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

Rows rows_of(const sg::Tensor& t, int64_t n, int64_t d) { // the first n rows of a (.., rows, d) tensor
  const std::vector<float> v = t.to_vector<float>();
  Rows r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[static_cast<size_t>(i)].assign(v.begin() + i * d, v.begin() + (i + 1) * d);
  return r;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) s += a[k] * b[k];
  return s;
}

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = std::sqrt(dot(a, a) * dot(b, b));
  return n > 0 ? dot(a, b) / n : 0.0;
}

double max_abs(const Rows& r) {
  double m = 0;
  for (const auto& row : r)
    for (double v : row) m = std::max(m, std::fabs(v));
  return m;
}

double max_diff(const Rows& a, const Rows& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < a[i].size(); ++k) m = std::max(m, std::fabs(a[i][k] - b[i][k]));
  return m;
}

// rope applied to a vector of ones at positions 0..n-1: (n, head_dim).
Rows rotations(int64_t n, int64_t head_dim) {
  sg::NoGradGuard no_grad;
  return rows_of(sg::rope(sg::ones({1, n, head_dim})), n, head_dim);
}

// The vectors an encoding gives (absolute: one per position; relative: one
// per offset, row r for offset r - max_distance); empty for none.
Rows vectors(const Model& m, const Config& c) {
  const int64_t n = c.positions(), d = c.hidden;
  // Every encoding added to the embeddings has its table P (positional_kinds()).
  if (m.encoder->pos_encoding) return rows_of(m.encoder->pos_encoding->P, n, d);
  switch (c.positional) {
    case sg::nn::Positional::rotary: return rotations(n, d / c.heads);
    case sg::nn::Positional::relative: {
      const sg::Tensor& a = m.encoder->blocks.at(0)->attention->relative_keys;
      return rows_of(a, a.shape()[0], a.shape()[1]);
    }
    default: return {};
  }
}

}  // namespace detail

PositionView view_positions(const Model& model, const Config& c, double acc_longer) {
  using namespace detail;
  PositionView v;
  v.encoding = sg::nn::positional_name(c.positional);
  const int64_t n = c.positions();
  const Rows V = vectors(model, c);
  // One vector per position (relative has one per offset).
  const bool absolute = sg::nn::positional_kind(c.positional).acts == sg::nn::PositionsAct::embeddings ||
                        c.positional == sg::nn::Positional::rotary;
  const std::string lengths = std::to_string(c.eval_min_len) + "-" + std::to_string(c.eval_max_len);
  v.longer = fmt("accuracy %.3f", acc_longer) + " on lengths " + lengths + " (trained on " +
             std::to_string(c.min_len) + "-" + std::to_string(c.max_len) + ")";
  if (c.positional == sg::nn::Positional::learned && c.eval_max_len > c.max_len)
    v.longer += "; rows " + std::to_string(c.max_len) + "-" + std::to_string(n - 1) + " never trained";
  if (V.empty()) {
    v.what = "no position vectors";
    v.unique = "no: no position code at all";
    v.consistent = v.bounded = "n/a: no code";
    v.deterministic = "n/a: no code";
    return v;
  }
  // The similarity matrix.
  v.similarity.assign(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(n)));
  const int64_t k = c.max_distance;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      v.similarity[static_cast<size_t>(i)][static_cast<size_t>(j)] =
          absolute ? cosine(V[static_cast<size_t>(i)], V[static_cast<size_t>(j)])
                   : cosine(V[static_cast<size_t>(std::clamp(j - i, -k, k) + k)], V[static_cast<size_t>(k)]);
  v.what = c.positional == sg::nn::Positional::rotary     ? "rotary: effective kernel (R_i u).(R_j u)"
           : c.positional == sg::nn::Positional::relative ? "relative: a_(j-i) against a_0, block 0"
                                                          : v.encoding + ": P_i against P_j";
  // 1. A unique code per position: the closest two positions' vectors.
  if (absolute) {
    double closest = INFINITY, mean_norm = 0;
    for (int64_t i = 0; i < n; ++i) {
      mean_norm += std::sqrt(dot(V[static_cast<size_t>(i)], V[static_cast<size_t>(i)])) / static_cast<double>(n);
      for (int64_t j = i + 1; j < n; ++j) {
        double s = 0;
        for (size_t q = 0; q < V[0].size(); ++q) {
          const double e = V[static_cast<size_t>(i)][q] - V[static_cast<size_t>(j)][q];
          s += e * e;
        }
        closest = std::min(closest, std::sqrt(s));
      }
    }
    const double rel = mean_norm > 0 ? closest / mean_norm : 0;
    v.unique = (rel > 1e-3 ? "yes" : "no") + fmt(": the closest two of the %.0f positions differ by ", static_cast<double>(n)) +
               fmt("%.3f of a vector's norm", rel);
  } else {
    v.unique = "no: one vector per offset j-i (clipped at +-" + std::to_string(k) + "), none per position";
  }
  // 2. Consistent distances: the similarity at a fixed distance j - i, over i.
  double spread = 0;
  for (int64_t dist = 1; dist < n; ++dist) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i + dist < n; ++i) {
      const double s = v.similarity[static_cast<size_t>(i)][static_cast<size_t>(i + dist)];
      lo = std::min(lo, s), hi = std::max(hi, s);
    }
    spread = std::max(spread, hi - lo);
  }
  v.consistent = (spread < 1e-3 ? "yes" : "no") + fmt(": similarity at a fixed distance varies by up to %.3f", spread);
  // 4. Bounded: the largest value far past the training lengths, where there is a far.
  if (c.positional == sg::nn::Positional::sinusoidal) {
    sg::nn::PositionalEncoding far(c.hidden, 0.0, 10000);
    v.bounded = fmt("yes: largest abs(P) %.3f over 10000 positions", max_abs(rows_of(far.P, 10000, c.hidden)));
  } else if (c.positional == sg::nn::Positional::rotary) {
    const int64_t dh = c.hidden / c.heads;
    const Rows r = rotations(10000, dh);
    double worst = 0;
    for (const auto& row : r) worst = std::max(worst, std::fabs(std::sqrt(dot(row, row) / static_cast<double>(dh)) - 1));
    v.bounded = fmt("yes: rotations keep norms (off by at most %.1e) over 10000 positions", worst);
  } else if (c.positional == sg::nn::Positional::learned) {
    v.bounded = fmt("only within its table: largest abs(P) %.3f, ", max_abs(V)) + "no vector past position " + std::to_string(n - 1);
  } else {
    v.bounded = fmt("yes: offsets are clipped, largest abs(a) %.3f", max_abs(V));
  }
  // 5. Deterministic: the encoding of two freshly built models, other seeds.
  sg::manual_seed(1001);
  const Model first(c);
  sg::manual_seed(1002);
  const Model second(c);
  const double diff = max_diff(vectors(first, c), vectors(second, c));
  v.deterministic = diff == 0 ? "yes: identical for two seeds"
                              : fmt("no: two seeds differ by up to %.3f before training", diff);
  return v;
}

std::string properties_table(const std::vector<std::pair<std::string, PositionView>>& rows) {
  std::string t =
      "| task | encoding | 1. unique code per position | 2. distances consistent across lengths | "
      "3. generalises to longer sequences | 4. bounded | 5. deterministic |\n|---|---|---|---|---|---|---|\n";
  for (const auto& [task, v] : rows)
    t += "| " + task + " | " + v.encoding + " | " + v.unique + " | " + v.consistent + " | " + v.longer + " | " +
         v.bounded + " | " + v.deterministic + " |\n";
  return t;
}

}  // namespace sg::study
