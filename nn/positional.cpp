#include "nn/positional.hpp"

#include <cmath>
#include <cstdlib>

#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/shape.hpp"
#include "core/kernels.hpp"
#include "nn/init.hpp"

namespace sg::nn {

namespace {

template <class Encoding>
std::shared_ptr<AddedPositions> make(int64_t num_hiddens, double dropout, int64_t max_len) {
  return std::make_shared<Encoding>(num_hiddens, dropout, max_len);
}

}  // namespace

const std::vector<PositionalKind>& positional_kinds() {
  static const std::vector<PositionalKind> kinds = {
      {Positional::none, "none", PositionsAct::nowhere, "no positions: attention sees a bag of tokens", nullptr},
      {Positional::sinusoidal, "sinusoidal", PositionsAct::embeddings,
       "fixed sines and cosines added to the embeddings (d2l, Vaswani et al.)", make<PositionalEncoding>},
      {Positional::learned, "learned", PositionsAct::embeddings,
       "a trained vector per position added to the embeddings", make<LearnedPositionalEncoding>},
      {Positional::relative, "relative", PositionsAct::attention,
       "a trained vector per clipped offset j - i in the scores (Shaw et al.)", nullptr},
      {Positional::rotary, "rotary", PositionsAct::attention,
       "queries and keys rotated by their positions (RoPE, Su et al.)", nullptr},
      {Positional::alibi, "alibi", PositionsAct::attention,
       "a fixed penalty on the scores growing with |i - j| (ALiBi, Press et al.)", nullptr},
  };
  return kinds;
}

const PositionalKind& positional_kind(Positional p) {
  const auto& kinds = positional_kinds();
  const auto i = static_cast<size_t>(p);
  if (i >= kinds.size() || kinds[i].kind != p)
    fail("positional_kind: not a kind of positions (", static_cast<int>(p), ")");
  return kinds[i];
}

const char* positional_name(Positional p) { return positional_kind(p).name; }

std::vector<std::string> positional_names() {
  std::vector<std::string> names;
  for (const PositionalKind& k : positional_kinds()) names.push_back(k.name);
  return names;
}

Positional parse_positional(const std::string& name) {
  std::string known;
  for (const PositionalKind& k : positional_kinds()) {
    if (name == k.name) return k.kind;
    known += known.empty() ? k.name : std::string(", ") + k.name;
  }
  fail("positional encoding '", name, "' is not one of ", known);
}

bool in_attention(Positional p) { return positional_kind(p).acts == PositionsAct::attention; }

std::vector<double> alibi_slopes(int64_t num_heads) {
  if (num_heads <= 0) fail("alibi_slopes: num_heads must be positive, got ", num_heads);
  std::vector<double> m(static_cast<size_t>(num_heads));
  for (int64_t h = 1; h <= num_heads; ++h)
    m[static_cast<size_t>(h - 1)] = std::exp2(-8.0 * static_cast<double>(h) / static_cast<double>(num_heads));
  return m;
}

Tensor alibi_bias(int64_t heads, int64_t queries, int64_t keys, DType dtype, int64_t offset) {
  const std::vector<double> m = alibi_slopes(heads);
  std::vector<double> bias(static_cast<size_t>(heads * queries * keys));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < queries; ++i)
      for (int64_t j = 0; j < keys; ++j)
        bias[static_cast<size_t>((h * queries + i) * keys + j)] =
            -m[static_cast<size_t>(h)] * static_cast<double>(std::abs(offset + i - j));
  return from_vector(bias, {heads, queries, keys}, dtype);
}

namespace {

// P: (1, max_len, d) -> X + P[:, offset:offset+T, :] for X: (B, T, d), then dropout.
Tensor add_positions(const char* who, const Tensor& X, const Tensor& P, int64_t offset,
                     const Dropout& dropout, DropoutKeys* keys) {
  // BEGIN ASSIGNMENT 6: add_positions: X + P[:, offset:offset+T, :] for X (B, T, d), checked, then dropout
  const int64_t max_len = P.shape()[1], d = P.shape()[2];
  if (X.dim() != 3 || X.shape()[2] != d)
    fail(who, ": input of shape ", X.shape(), " must be (batch, steps, ", d, ")");
  const int64_t steps = X.shape()[1];
  if (offset < 0 || offset + steps > max_len)
    fail(who, ": positions [", offset, ", ", offset + steps, ") for input ", X.shape(),
         " exceed max_len ", max_len);
  return dropout.forward(X + slice(P, 1, offset, offset + steps), keys);
  // END ASSIGNMENT 6
}

}  // namespace

Tensor AddedPositions::forward(const Tensor& X, int64_t offset, DropoutKeys* keys) const {
  return add_positions(who_, X, P, offset, *dropout, keys);
}

void AddedPositions::set_table(const Tensor& table) {
  const bool two_d = table.dim() == 2 && table.shape() == Shape{max_len, num_hiddens};
  if (!(table.shape() == P.shape() || two_d) || !is_floating(table.dtype()))
    fail(who_, "::set_table: the table must be floating (1, ", max_len, ", ", num_hiddens, ") or (", max_len, ", ",
         num_hiddens, "), got ", table.dtype(), " ", table.shape());
  const std::vector<double> v = table.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) fail(who_, "::set_table: element ", i, " of the table ", table.shape(), " is ", v[i]);
  Tensor dst = P;
  kernel::copy_(dst, kernel::to(kernel::reshape(table, P.shape()), P.dtype()));
  P.bump_version();
}

PositionalEncoding::PositionalEncoding(int64_t d, double p, int64_t len)
    : AddedPositions("PositionalEncoding", d, len) {
  if (d <= 0 || d % 2 != 0)
    fail("PositionalEncoding: num_hiddens must be positive and even (sin/cos pairs), got ", d);
  if (len <= 0) fail("PositionalEncoding: max_len must be positive, got ", len);
  Tensor table = empty({1, len, d});
  float* t = table.data<float>();
  // BEGIN ASSIGNMENT 6: PositionalEncoding's table: the sinusoidal encoding, P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(the same)
  for (int64_t i = 0; i < len; ++i)
    for (int64_t j = 0; j < d / 2; ++j) {
      // Computed in double, then rounded once: matches d2l's float32 table to rounding.
      const double angle = static_cast<double>(i) / std::pow(10000.0, 2.0 * static_cast<double>(j) / static_cast<double>(d));
      t[i * d + 2 * j] = static_cast<float>(std::sin(angle));
      t[i * d + 2 * j + 1] = static_cast<float>(std::cos(angle));
    }
  // END ASSIGNMENT 6
  P = register_buffer("P", table);
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
}

LearnedPositionalEncoding::LearnedPositionalEncoding(int64_t d, double p, int64_t len)
    : AddedPositions("LearnedPositionalEncoding", d, len) {
  if (d <= 0 || len <= 0)
    fail("LearnedPositionalEncoding: num_hiddens ", d, " and max_len ", len, " must be positive");
  P = register_parameter("P", init::normal({1, len, d}, 0.0, 0.02));
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
}

}  // namespace sg::nn
