// The copying layout kernels (core/kernels/layout.cpp: permute, transpose,
// inner-axis slices, concat) against naive index mappings written here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"

#include "test_util.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;
using namespace test_util;

namespace {

// 0, 1, 2, ... as T: every element is distinct, so a misplaced one shows.
template <class T>
std::vector<T> iota_values(const Shape& s) {
  std::vector<T> v(static_cast<size_t>(count(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(i);
  return v;
}

// Permutes by the definition: out[i_0, ..., i_{r-1}] = in[j] with j[perm[k]] = i_k.
template <class T>
std::vector<T> naive_permute(const std::vector<T>& x, const Shape& in, const std::vector<int64_t>& perm, Shape& out) {
  out.assign(perm.size(), 0);
  for (size_t k = 0; k < perm.size(); ++k) out[k] = in[static_cast<size_t>(perm[k])];
  std::vector<T> r(x.size());
  for (int64_t f = 0; f < count(out); ++f) {
    const std::vector<int64_t> o = unravel(f, out);
    std::vector<int64_t> j(in.size());
    for (size_t k = 0; k < perm.size(); ++k) j[static_cast<size_t>(perm[k])] = o[k];
    r[static_cast<size_t>(f)] = x[static_cast<size_t>(ravel(j, in))];
  }
  return r;
}

template <class T>
std::vector<T> naive_slice(const std::vector<T>& x, const Shape& in, int64_t axis, int64_t start, int64_t end, Shape& out) {
  out = in;
  out[static_cast<size_t>(axis)] = end - start;
  std::vector<T> r(static_cast<size_t>(count(out)));
  for (int64_t f = 0; f < count(out); ++f) {
    std::vector<int64_t> idx = unravel(f, out);
    idx[static_cast<size_t>(axis)] += start;
    r[static_cast<size_t>(f)] = x[static_cast<size_t>(ravel(idx, in))];
  }
  return r;
}

// Concat by the definition: each output element comes from the piece whose
// range along `axis` holds its index there.
template <class T>
std::vector<T> naive_concat(const std::vector<std::vector<T>>& xs, const std::vector<Shape>& shapes, int64_t axis, Shape& out) {
  out = shapes[0];
  out[static_cast<size_t>(axis)] = 0;
  for (const Shape& s : shapes) out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  std::vector<T> r(static_cast<size_t>(count(out)));
  for (int64_t f = 0; f < count(out); ++f) {
    std::vector<int64_t> idx = unravel(f, out);
    size_t p = 0;
    while (idx[static_cast<size_t>(axis)] >= shapes[p][static_cast<size_t>(axis)])
      idx[static_cast<size_t>(axis)] -= shapes[p][static_cast<size_t>(axis)], ++p;
    r[static_cast<size_t>(f)] = xs[p][static_cast<size_t>(ravel(idx, shapes[p]))];
  }
  return r;
}

}  // namespace

// ---------------------------------------------------------------- permute, transpose

TEMPLATE_TEST_CASE("permute matches naive index mapping for every permutation of rank 0-4", "[core]", float, double,
                   int64_t) {
  using T = TestType;
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 3, 1, 5}, Shape{3, 0, 2}}) {
    const std::vector<T> x = iota_values<T>(shape);
    const Tensor t = make(x, shape);
    std::vector<int64_t> perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      INFO("shape " << shape << ", permutation " << Shape(perm));
      Shape out;
      const std::vector<T> want = naive_permute(x, shape, perm, out);
      const Tensor got = sg::kernel::permute(t, perm);
      check_exact<T>(got, out, want);
      if (t.numel() > 0) CHECK(got.raw_data() != t.raw_data());  // a copy
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // Negative axes count from the end.
  const Shape s = {2, 3, 4};
  const Tensor t = make(iota_values<T>(s), s);
  CHECK(sg::kernel::permute(t, {-1, 0, -2}).template to_vector<T>() == sg::kernel::permute(t, {2, 0, 1}).template to_vector<T>());
  // Permuting a view reads from its offset.
  Shape out;
  const std::vector<T> all = iota_values<T>({2, 3, 4});
  const Tensor v = sg::kernel::select(make(all, {2, 3, 4}), 1);
  check_exact<T>(sg::kernel::permute(v, {1, 0}), {4, 3},
                 naive_permute(std::vector<T>(all.begin() + 12, all.end()), {3, 4}, {1, 0}, out));
}

TEMPLATE_TEST_CASE("transpose swaps two axes, for every pair of rank 2-4", "[core]", float, double, int64_t) {
  using T = TestType;
  for (const Shape& shape : {Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 3, 4, 5}, Shape{1, 4, 1, 3}}) {
    const std::vector<T> x = iota_values<T>(shape);
    const Tensor t = make(x, shape);
    const auto rank = static_cast<int64_t>(shape.size());
    for (int64_t a = -rank; a < rank; ++a)
      for (int64_t b = -rank; b < rank; ++b) {
        INFO("shape " << shape << ", transpose(" << a << ", " << b << ")");
        std::vector<int64_t> perm(shape.size());
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[static_cast<size_t>((a + rank) % rank)], perm[static_cast<size_t>((b + rank) % rank)]);
        Shape out;
        const std::vector<T> want = naive_permute(x, shape, perm, out);
        check_exact<T>(sg::kernel::transpose(t, a, b), out, want);
      }
  }
}

TEMPLATE_TEST_CASE("permute on large tensors (the parallel path) and on 1 and 2 threads", "[core]", float, double,
                   int64_t) {
  using T = TestType;
  ThreadCount restore;
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{200, 300}, {1, 0}}, {{20, 30, 60}, {2, 0, 1}}, {{8, 16, 20, 16}, {0, 2, 1, 3}}, {{40000, 1}, {1, 0}}};
  for (const auto& [shape, perm] : cases) {
    INFO("shape " << shape << ", permutation " << Shape(perm));
    const std::vector<T> x = iota_values<T>(shape);
    const Tensor t = make(x, shape);
    Shape out;
    const std::vector<T> want = naive_permute(x, shape, perm, out);
    sg::set_num_threads(1);
    check_exact<T>(sg::kernel::permute(t, perm), out, want);
    sg::set_num_threads(2);
    check_exact<T>(sg::kernel::permute(t, perm), out, want);
  }
}

TEST_CASE("permute and transpose errors name the axes and the shape", "[core]") {
  const Tensor x = sg::zeros({2, 3});
  REQUIRE_THROWS_WITH(sg::kernel::permute(x, {0}), Contains("permute: 1 axes given for a tensor of shape (2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::permute(x, {0, 1, 2}), Contains("permute") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::permute(x, {0, 0}), Contains("permute: axis 0 repeated in (0, 0) for shape (2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::permute(x, {1, -1}), Contains("permute") && Contains("repeated") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::permute(x, {0, 2}), Contains("permute: axis 2 out of range for a tensor of shape (2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::transpose(x, 0, 2), Contains("transpose: axis 2 out of range") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::transpose(x, -3, 1), Contains("transpose: axis -3 out of range") && Contains("(2, 3)"));
}

// ---------------------------------------------------------------- slice

TEMPLATE_TEST_CASE("slice along inner axes copies the right elements", "[core]", float, double, int64_t) {
  using T = TestType;
  struct Case {
    Shape shape;
    int64_t axis, start, end;
  };
  const std::vector<Case> cases = {
      {{3, 4, 5}, 1, 1, 3}, {{3, 4, 5}, 2, 2, 5}, {{3, 4, 5}, -1, 0, 1}, {{3, 4, 5}, 1, 0, 4}, {{3, 4, 5}, 2, 3, 3},
      {{3, 4, 5}, -2, 3, 4}, {{2, 3}, 1, 1, 2},   {{4, 1, 6}, 2, 1, 5},  {{4, 1, 6}, 1, 0, 1}, {{2, 2, 2, 3}, 3, 1, 3},
      {{2, 2, 2, 3}, 2, 1, 2}, {{0, 4}, 1, 1, 3}};
  for (const Case& c : cases) {
    INFO("shape " << c.shape << ", axis " << c.axis << ", [" << c.start << ", " << c.end << ")");
    const std::vector<T> x = iota_values<T>(c.shape);
    const Tensor t = make(x, c.shape);
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
    Shape out;
    const std::vector<T> want = naive_slice(x, c.shape, axis, c.start, c.end, out);
    Tensor s = sg::kernel::slice(t, c.axis, c.start, c.end);
    check_exact<T>(s, out, want);
    // A copy: writing into it leaves the source alone.
    if (s.numel() > 0) {
      s.template data<T>()[0] = T(-1);
      CHECK(t.to_vector<T>() == x);
    }
  }
}

TEMPLATE_TEST_CASE("slice is a view when every axis before it has size 1", "[core]", float, double, int64_t) {
  using T = TestType;
  const std::vector<T> x = iota_values<T>({1, 4, 5});
  const Tensor t = make(x, {1, 4, 5});
  Shape out;
  Tensor s = sg::kernel::slice(t, 1, 1, 3);
  check_exact<T>(s, {1, 2, 5}, naive_slice(x, {1, 4, 5}, 1, 1, 3, out));
  s.template data<T>()[0] = T(-7);
  CHECK(t.template data<T>()[5] == T(-7));

  const Tensor u = make(iota_values<T>({1, 1, 6}), {1, 1, 6});
  Tensor su = sg::kernel::slice(u, 2, 2, 5);
  check_exact<T>(su, {1, 1, 3}, {T(2), T(3), T(4)});
  su.template data<T>()[2] = T(40);
  CHECK(u.template data<T>()[4] == T(40));
}

TEST_CASE("slice of a view reads from the view's offset", "[core]") {
  const std::vector<double> x = iota_values<double>({3, 4, 5});
  const Tensor t = sg::from_vector(x, {3, 4, 5});
  const Tensor v = sg::kernel::select(t, 2);  // (4, 5) starting at element 40
  Shape out;
  const std::vector<double> tail(x.begin() + 40, x.end());
  check_exact<double>(sg::kernel::slice(v, 1, 1, 4), {4, 3}, naive_slice(tail, {4, 5}, 1, 1, 4, out));
  check_exact<double>(sg::kernel::slice(sg::kernel::slice(t, 0, 1, 3), 2, 0, 2), {2, 4, 2},
                      naive_slice(std::vector<double>(x.begin() + 20, x.end()), {2, 4, 5}, 2, 0, 2, out));
}

TEMPLATE_TEST_CASE("slice on large tensors (the parallel path) and on 1 and 2 threads", "[core]", float, int64_t) {
  using T = TestType;
  ThreadCount restore;
  const Shape shape = {100, 700};
  const std::vector<T> x = iota_values<T>(shape);
  const Tensor t = make(x, shape);
  Shape out;
  const std::vector<T> want = naive_slice(x, shape, 1, 100, 500, out);
  sg::set_num_threads(1);
  check_exact<T>(sg::kernel::slice(t, 1, 100, 500), out, want);
  sg::set_num_threads(2);
  check_exact<T>(sg::kernel::slice(t, 1, 100, 500), out, want);
}

TEST_CASE("slice bounds errors name the range, axis and shape", "[core]") {
  const Tensor x = sg::zeros({3, 4, 5});
  REQUIRE_THROWS_WITH(sg::kernel::slice(x, 1, 2, 7),
                      Contains("slice: range [2, 7) out of bounds for axis 1 of size 4 in shape (3, 4, 5)"));
  REQUIRE_THROWS_WITH(sg::kernel::slice(x, -1, 0, 6),
                      Contains("slice: range [0, 6) out of bounds for axis 2 of size 5 in shape (3, 4, 5)"));
  REQUIRE_THROWS_WITH(sg::kernel::slice(x, 2, 4, 3), Contains("slice: range [4, 3)") && Contains("(3, 4, 5)"));
  REQUIRE_THROWS_WITH(sg::kernel::slice(x, 1, -1, 2), Contains("slice: range [-1, 2)") && Contains("(3, 4, 5)"));
  REQUIRE_THROWS_WITH(sg::kernel::slice(x, 3, 0, 1), Contains("slice: axis 3 out of range for a tensor of shape (3, 4, 5)"));
  REQUIRE_THROWS_WITH(sg::kernel::slice(x, -4, 0, 1), Contains("slice: axis -4 out of range") && Contains("(3, 4, 5)"));
  REQUIRE_THROWS_WITH(sg::kernel::slice(sg::scalar(1), 0, 0, 1), Contains("slice") && Contains("()"));
}

// ---------------------------------------------------------------- concat

TEMPLATE_TEST_CASE("concat along each axis matches a naive loop", "[core]", float, double, int64_t) {
  using T = TestType;
  struct Case {
    std::vector<Shape> shapes;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{{2, 3}, {2, 3}}, 0},
      {{{2, 3}, {2, 3}}, 1},
      {{{2, 3}, {4, 3}, {1, 3}}, 0},
      {{{2, 1}, {2, 4}, {2, 2}}, -1},
      {{{2, 1, 4}, {2, 3, 4}, {2, 2, 4}}, 1},
      {{{2, 3, 1}, {2, 3, 2}}, 2},
      {{{3, 2, 2}, {1, 2, 2}}, -3},
      {{{4}, {3}, {1}}, 0},
      {{{2, 0}, {2, 3}, {2, 0}}, 1},
      {{{2, 3}}, 1},
      {{{1, 2, 3, 4}, {1, 2, 1, 4}}, 2},
  };
  uint64_t seed = 7;
  for (const Case& c : cases) {
    INFO("axis " << c.axis << ", first shape " << c.shapes[0] << ", pieces " << c.shapes.size());
    std::vector<std::vector<T>> xs;
    std::vector<Tensor> ts;
    for (const Shape& s : c.shapes) {
      xs.push_back(uniform_values<T>(s, -100, 100, seed++));
      ts.push_back(make(xs.back(), s));
    }
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shapes[0].size()) : c.axis;
    Shape out;
    const std::vector<T> want = naive_concat(xs, c.shapes, axis, out);
    check_exact<T>(sg::kernel::concat(ts, c.axis), out, want);
  }
}

TEST_CASE("concat of views reads each from its offset", "[core]") {
  const std::vector<float> x = iota_values<float>({4, 2, 3});
  const Tensor t = sg::from_vector(x, {4, 2, 3});
  const Tensor a = sg::kernel::select(t, 3), b = sg::kernel::slice(t, 0, 1, 2);
  const Tensor c = sg::kernel::concat({a, sg::kernel::reshape(b, {2, 3})}, 1);
  CHECK(c.shape() == Shape{2, 6});
  CHECK(c.to_vector<float>() == std::vector<float>{18, 19, 20, 6, 7, 8, 21, 22, 23, 9, 10, 11});
}

TEST_CASE("concat errors name the shapes", "[core]") {
  const Tensor a = sg::zeros({2, 3}), b = sg::zeros({2, 4});
  REQUIRE_THROWS_WITH(sg::kernel::concat({a, b}, 0), Contains("concat: shape (2, 4) does not match (2, 3) outside axis 0"));
  REQUIRE_NOTHROW(sg::kernel::concat({a, b}, 1));
  REQUIRE_THROWS_WITH(sg::kernel::concat({a, sg::zeros({3})}, 0),
                      Contains("concat: shape (3) does not match (2, 3) outside axis 0"));
  REQUIRE_THROWS_WITH(sg::kernel::concat({a, sg::zeros({2, 3, 1})}, 1), Contains("concat") && Contains("(2, 3, 1)") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::concat({a, sg::zeros({2, 3}, sg::float64)}, 0),
                      Contains("concat: dtypes differ") && Contains("float32") && Contains("float64") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::concat({}, 0), Contains("concat: no tensors given"));
  REQUIRE_THROWS_WITH(sg::kernel::concat({a, a}, 2), Contains("concat: axis 2 out of range for a tensor of shape (2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::concat({sg::scalar(1), sg::scalar(2)}, 0), Contains("concat") && Contains("()"));
}
