// Tensors (core/tensor.cpp, core/print.cpp): dtypes, creation, views,
// reshape, select, clone, detach, printing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"

using Catch::Contains;
using sg::Shape;
using sg::Tensor;

// ---------------------------------------------------------------- dtypes

TEST_CASE("dtype sizes, names and traits", "[core]") {
  CHECK(sg::dtype_size(sg::float32) == 4);
  CHECK(sg::dtype_size(sg::float64) == 8);
  CHECK(sg::dtype_size(sg::int64) == 8);
  CHECK(std::string(sg::dtype_name(sg::float32)) == "float32");
  CHECK(std::string(sg::dtype_name(sg::float64)) == "float64");
  CHECK(std::string(sg::dtype_name(sg::int64)) == "int64");
  std::ostringstream os;
  os << sg::float64 << ' ' << Shape{2, 3} << ' ' << Shape{} << ' ' << Shape{4};
  CHECK(os.str() == "float64 (2, 3) () (4)");
  CHECK(sg::is_floating(sg::float32));
  CHECK(sg::is_floating(sg::float64));
  CHECK_FALSE(sg::is_floating(sg::int64));
  STATIC_REQUIRE(sg::dtype_of<float> == sg::float32);
  STATIC_REQUIRE(sg::dtype_of<double> == sg::float64);
  STATIC_REQUIRE(sg::dtype_of<int64_t> == sg::int64);
}

// ---------------------------------------------------------------- creation

TEST_CASE("zeros, ones, full and scalar in every dtype", "[core]") {
  for (sg::DType dt : {sg::float32, sg::float64, sg::int64}) {
    INFO("dtype " << dt);
    Tensor z = sg::zeros({2, 3}, dt);
    CHECK(z.shape() == Shape{2, 3});
    CHECK(z.dtype() == dt);
    CHECK(z.dim() == 2);
    CHECK(z.numel() == 6);
    CHECK(z.nbytes() == 6 * sg::dtype_size(dt));
    CHECK(z.to_vector<double>() == std::vector<double>(6, 0.0));

    Tensor o = sg::ones({4}, dt);
    CHECK(o.to_vector<double>() == std::vector<double>(4, 1.0));

    Tensor f = sg::full({3, 1, 2}, -7, dt);
    CHECK(f.shape() == Shape{3, 1, 2});
    CHECK(f.to_vector<double>() == std::vector<double>(6, -7.0));

    Tensor s = sg::scalar(5, dt);
    CHECK(s.shape() == Shape{});
    CHECK(s.dim() == 0);
    CHECK(s.numel() == 1);
    CHECK(s.item() == 5.0);

    CHECK(sg::zeros_like(f).shape() == f.shape());
    CHECK(sg::zeros_like(f).dtype() == dt);
    CHECK(sg::ones_like(f).to_vector<double>() == std::vector<double>(6, 1.0));

    Tensor e = sg::zeros({2, 0, 3}, dt);
    CHECK(e.numel() == 0);
    CHECK(e.nbytes() == 0);
    CHECK(e.to_vector<double>().empty());
  }
  CHECK(sg::zeros({2}).dtype() == sg::float32);  // the default
  CHECK(sg::full({2}, 0.5).to_vector<float>() == std::vector<float>{0.5f, 0.5f});
  CHECK(sg::full({2}, 2.75, sg::int64).to_vector<int64_t>() == std::vector<int64_t>{2, 2});
  CHECK(sg::scalar(2.5).item<float>() == 2.5f);
  CHECK(sg::scalar(-3, sg::int64).item<int64_t>() == -3);
}

TEST_CASE("large creation goes through the parallel fill", "[core]") {
  const int64_t n = 3 * sg::kParallelElementwise + 17;
  Tensor t = sg::full({n}, 1.25, sg::float64);
  const double* p = t.data<double>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += p[i] != 1.25;
  CHECK(wrong == 0);
  Tensor o = sg::ones({n}, sg::int64);
  const int64_t* q = o.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) wrong += q[i] != 1;
  CHECK(wrong == 0);
}

TEST_CASE("negative dimensions are rejected", "[core]") {
  REQUIRE_THROWS_WITH(sg::empty({2, -1}), Contains("negative dimension") && Contains("(2, -1)"));
  REQUIRE_THROWS_WITH(sg::zeros({-3}), Contains("(-3)"));
}

TEST_CASE("arange: integer and float steps, negative steps, empty ranges", "[core]") {
  Tensor a = sg::arange(5);
  CHECK(a.dtype() == sg::int64);
  CHECK(a.shape() == Shape{5});
  CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});

  CHECK(sg::arange(2, 9, 3).to_vector<int64_t>() == std::vector<int64_t>{2, 5, 8});
  CHECK(sg::arange(5, 0, -2).to_vector<int64_t>() == std::vector<int64_t>{5, 3, 1});
  CHECK(sg::arange(4, sg::float32).to_vector<float>() == std::vector<float>{0, 1, 2, 3});

  Tensor q = sg::arange(0, 1, 0.25, sg::float32);
  CHECK(q.dtype() == sg::float32);
  CHECK(q.to_vector<float>() == std::vector<float>{0, 0.25f, 0.5f, 0.75f});

  Tensor t = sg::arange(0, 1, 0.1, sg::float64);  // 10 values as in numpy.arange
  REQUIRE(t.shape() == Shape{10});
  for (int i = 0; i < 10; ++i) CHECK(t.to_vector<double>()[i] == Approx(0.1 * i).margin(1e-15));

  Tensor h = sg::arange(-1, 1.1, 0.5, sg::float64);
  CHECK(h.to_vector<double>() == std::vector<double>{-1, -0.5, 0, 0.5, 1});
  Tensor d = sg::arange(5, 0, -1.5, sg::float64);
  CHECK(d.to_vector<double>() == std::vector<double>{5, 3.5, 2, 0.5});

  // Empty ranges give shape (0), never an error.
  CHECK(sg::arange(0).shape() == Shape{0});
  CHECK(sg::arange(3, 3).shape() == Shape{0});
  CHECK(sg::arange(5, 2).shape() == Shape{0});
  CHECK(sg::arange(0, 5, -1, sg::float32).shape() == Shape{0});
  CHECK(sg::arange(-4).shape() == Shape{0});

  REQUIRE_THROWS_WITH(sg::arange(0, 1, 0), Contains("arange") && Contains("step=0"));
  REQUIRE_THROWS_WITH(sg::arange(0, INFINITY, 1), Contains("arange"));
  REQUIRE_THROWS_WITH(sg::arange(NAN, 1, 1), Contains("arange"));
}

TEST_CASE("from_vector, tensor{} and to_vector", "[core]") {
  Tensor f = sg::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(f.dtype() == sg::float32);
  CHECK(f.shape() == Shape{2, 3});
  CHECK(f.data<float>()[4] == 5.0f);

  Tensor d = sg::from_vector(std::vector<double>{0.1, 0.2}, {2});
  CHECK(d.dtype() == sg::float64);
  CHECK(d.to_vector<double>() == std::vector<double>{0.1, 0.2});

  Tensor d32 = sg::from_vector(std::vector<double>{0.1, 0.2}, {1, 2}, sg::float32);
  CHECK(d32.dtype() == sg::float32);
  CHECK(d32.to_vector<float>() == std::vector<float>{0.1f, 0.2f});

  Tensor i = sg::from_vector(std::vector<int64_t>{-5, 7, int64_t{1} << 40}, {3});
  CHECK(i.dtype() == sg::int64);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{-5, 7, int64_t{1} << 40});
  CHECK(i.to_vector<double>() == std::vector<double>{-5, 7, 1099511627776.0});

  Tensor s = sg::from_vector(std::vector<float>{9}, {});
  CHECK(s.shape() == Shape{});
  CHECK(s.item() == 9.0);

  Tensor t = sg::tensor({1.5f, -2.f, 3.f});
  CHECK(t.dtype() == sg::float32);
  CHECK(t.shape() == Shape{3});
  CHECK(t.to_vector<float>() == std::vector<float>{1.5f, -2.f, 3.f});
  Tensor e = sg::tensor({});
  CHECK(e.shape() == Shape{0});
  CHECK(e.numel() == 0);

  REQUIRE_THROWS_WITH(sg::from_vector(std::vector<float>{1, 2, 3, 4, 5}, {2, 3}),
                      Contains("from_vector") && Contains("5 values") && Contains("(2, 3)") &&
                          Contains("6 elements"));
  REQUIRE_THROWS_WITH(sg::from_vector(std::vector<double>{1, 2}, {3}), Contains("(3)"));
}

TEST_CASE("an undefined tensor says so", "[core]") {
  Tensor t;
  CHECK_FALSE(t.defined());
  REQUIRE_THROWS_WITH(t.shape(), Contains("undefined tensor"));
  REQUIRE_THROWS_WITH(t.dtype(), Contains("undefined tensor"));
  CHECK(sg::to_string(t) == "tensor(undefined)");
}

TEST_CASE("size(axis) with negative axes, and its error", "[core]") {
  Tensor t = sg::zeros({2, 3, 4});
  CHECK(t.size(0) == 2);
  CHECK(t.size(2) == 4);
  CHECK(t.size(-1) == 4);
  CHECK(t.size(-3) == 2);
  REQUIRE_THROWS_WITH(t.size(3), Contains("size: axis 3 out of range") && Contains("(2, 3, 4)"));
  REQUIRE_THROWS_WITH(t.size(-4), Contains("axis -4") && Contains("(2, 3, 4)"));
  REQUIRE_THROWS_WITH(sg::scalar(1).size(0), Contains("()"));
}

TEST_CASE("data<T>() and item() errors name the shapes", "[core]") {
  Tensor f = sg::zeros({2, 3});
  REQUIRE_THROWS_WITH(f.data<double>(), Contains("data<float64>: tensor of shape (2, 3) has dtype float32"));
  REQUIRE_THROWS_WITH(f.data<int64_t>(), Contains("data<int64>") && Contains("float32"));
  Tensor i = sg::zeros({4}, sg::int64);
  REQUIRE_THROWS_WITH(i.data<float>(), Contains("data<float32>: tensor of shape (4) has dtype int64"));
  REQUIRE_NOTHROW(i.data<int64_t>());

  REQUIRE_THROWS_WITH(f.item(), Contains("item: tensor of shape (2, 3) has 6 elements, not 1"));
  REQUIRE_THROWS_WITH(sg::zeros({0}).item(), Contains("(0)") && Contains("0 elements"));
  CHECK(sg::full({1, 1, 1}, 4).item() == 4.0);
  CHECK(sg::full({1}, 7, sg::int64).item<int64_t>() == 7);
}

// ---------------------------------------------------------------- views

TEST_CASE("reshape is a view: writes through one are seen by the other", "[core]") {
  Tensor x = sg::arange(0, 12, 1, sg::float32);
  Tensor y = sg::kernel::reshape(x, {3, 4});
  CHECK(y.shape() == Shape{3, 4});
  CHECK(y.to_vector<float>() == x.to_vector<float>());
  CHECK(y.raw_data() == x.raw_data());

  y.data<float>()[5] = 42;  // y[1][1]
  CHECK(x.data<float>()[5] == 42);
  x.data<float>()[11] = -1;
  CHECK(y.data<float>()[2 * 4 + 3] == -1);

  Tensor z = sg::kernel::reshape(y, {2, 1, 6});
  z.data<float>()[0] = 100;
  CHECK(x.data<float>()[0] == 100);

  // Scalars and size-1 axes.
  Tensor s = sg::scalar(3);
  CHECK(sg::kernel::reshape(s, {1, 1}).shape() == Shape{1, 1});
  CHECK(sg::kernel::reshape(sg::zeros({1, 1, 1}), {}).shape() == Shape{});
  // Zero-sized.
  CHECK(sg::kernel::reshape(sg::zeros({0, 3}), {3, 0, 5}).shape() == Shape{3, 0, 5});
}

TEST_CASE("reshape infers one -1 axis", "[core]") {
  Tensor x = sg::arange(24, sg::float64);
  CHECK(sg::kernel::reshape(x, {-1, 4}).shape() == Shape{6, 4});
  CHECK(sg::kernel::reshape(x, {2, -1, 3}).shape() == Shape{2, 4, 3});
  CHECK(sg::kernel::reshape(x, {2, 3, 4, -1}).shape() == Shape{2, 3, 4, 1});
  CHECK(sg::kernel::reshape(sg::kernel::reshape(x, {4, 6}), {-1}).shape() == Shape{24});
  CHECK(sg::kernel::reshape(sg::scalar(1), {-1}).shape() == Shape{1});
  CHECK(sg::kernel::reshape(x, {-1, 4}).to_vector<double>() == x.to_vector<double>());
}

TEST_CASE("reshape errors name both shapes", "[core]") {
  Tensor x = sg::zeros({2, 3});
  REQUIRE_THROWS_WITH(sg::kernel::reshape(x, {4, 2}),
                      Contains("reshape: cannot reshape (2, 3) (6 elements) into (4, 2) (8 elements)"));
  REQUIRE_THROWS_WITH(sg::kernel::reshape(x, {-1, 4}),
                      Contains("reshape") && Contains("(2, 3)") && Contains("(-1, 4)"));
  REQUIRE_THROWS_WITH(sg::kernel::reshape(x, {-1, -1}),
                      Contains("reshape: more than one -1 in (-1, -1)") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::reshape(x, {-2, -3}),
                      Contains("reshape: negative size in (-2, -3)") && Contains("(2, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::reshape(x, {0, -1}), Contains("reshape") && Contains("(0, -1)"));
  REQUIRE_THROWS_WITH(sg::kernel::reshape(x, {}), Contains("(2, 3)") && Contains("()"));
}

TEST_CASE("select is a view of one entry along axis 0", "[core]") {
  Tensor x = sg::from_vector(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 2, 2});
  Tensor r = sg::kernel::select(x, 1);
  CHECK(r.shape() == Shape{2, 2});
  CHECK(r.to_vector<double>() == std::vector<double>{4, 5, 6, 7});
  r.data<double>()[3] = -7;
  CHECK(x.data<double>()[7] == -7);

  // Views of views keep adding their offsets.
  Tensor e = sg::kernel::select(sg::kernel::select(x, 2), 1);
  CHECK(e.shape() == Shape{2});
  CHECK(e.to_vector<double>() == std::vector<double>{10, 11});
  Tensor s = sg::kernel::select(e, 0);
  CHECK(s.shape() == Shape{});
  CHECK(s.item() == 10);
  Tensor rr = sg::kernel::reshape(sg::kernel::select(x, 2), {4});
  CHECK(rr.to_vector<double>() == std::vector<double>{8, 9, 10, 11});

  REQUIRE_THROWS_WITH(sg::kernel::select(x, 3), Contains("select: index 3 out of range") && Contains("(3, 2, 2)"));
  REQUIRE_THROWS_WITH(sg::kernel::select(x, -1), Contains("select") && Contains("-1") && Contains("(3, 2, 2)"));
  REQUIRE_THROWS_WITH(sg::kernel::select(sg::scalar(1), 0), Contains("select") && Contains("scalar"));
}

TEST_CASE("slice along axis 0 is a view", "[core]") {
  Tensor x = sg::arange(0, 12, 1, sg::int64);
  x = sg::kernel::reshape(x, {4, 3});
  Tensor s = sg::kernel::slice(x, 0, 1, 3);
  CHECK(s.shape() == Shape{2, 3});
  CHECK(s.to_vector<int64_t>() == std::vector<int64_t>{3, 4, 5, 6, 7, 8});
  s.data<int64_t>()[0] = 99;
  CHECK(x.data<int64_t>()[3] == 99);

  Tensor ss = sg::kernel::slice(s, 0, 1, 2);  // row 2 of x
  CHECK(ss.to_vector<int64_t>() == std::vector<int64_t>{6, 7, 8});
  ss.data<int64_t>()[2] = -8;
  CHECK(x.data<int64_t>()[8] == -8);

  CHECK(sg::kernel::slice(x, 0, 4, 4).shape() == Shape{0, 3});
  CHECK(sg::kernel::slice(x, 0, 0, 4).to_vector<int64_t>() == x.to_vector<int64_t>());
  CHECK(sg::kernel::slice(x, -2, 3, 4).to_vector<int64_t>() == std::vector<int64_t>{9, 10, 11});

  REQUIRE_THROWS_WITH(sg::kernel::slice(x, 0, 2, 5),
                      Contains("slice: range [2, 5) out of bounds for axis 0 of size 4 in shape (4, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::slice(x, 0, 3, 2), Contains("[3, 2)") && Contains("(4, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::slice(x, 0, -1, 2), Contains("[-1, 2)") && Contains("(4, 3)"));
  REQUIRE_THROWS_WITH(sg::kernel::slice(x, 2, 0, 1), Contains("slice: axis 2 out of range") && Contains("(4, 3)"));
}

TEST_CASE("clone is independent of its source", "[core]") {
  Tensor x = sg::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor c = sg::clone(x);
  CHECK(c.shape() == x.shape());
  CHECK(c.dtype() == x.dtype());
  CHECK(c.to_vector<float>() == x.to_vector<float>());
  CHECK(c.raw_data() != x.raw_data());
  c.data<float>()[0] = 50;
  CHECK(x.data<float>()[0] == 1);
  x.data<float>()[3] = -4;
  CHECK(c.data<float>()[3] == 4);

  // A clone of a view copies just the view.
  Tensor v = sg::kernel::select(x, 1);
  Tensor cv = sg::clone(v);
  CHECK(cv.shape() == Shape{2});
  CHECK(cv.to_vector<float>() == std::vector<float>{3, -4});
  CHECK(sg::clone(sg::zeros({0, 2}, sg::int64)).shape() == Shape{0, 2});

  // No graph or grad flag carries over.
  Tensor g = sg::ones({3}, sg::float64);
  g.set_requires_grad();
  Tensor cg = sg::clone(g);
  CHECK_FALSE(cg.requires_grad());
  CHECK(cg.is_leaf());
}

TEST_CASE("detach shares data but not the autograd state", "[core]") {
  Tensor x = sg::from_vector(std::vector<double>{1, 2, 3}, {3});
  x.set_requires_grad();
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK_FALSE(d.is_same(x));
  CHECK(d.shape() == x.shape());
  CHECK(d.raw_data() == x.raw_data());
  d.data<double>()[1] = 20;
  CHECK(x.data<double>()[1] == 20);
  CHECK(x.requires_grad());

  // A detached view keeps its offset.
  Tensor v = sg::kernel::select(sg::kernel::reshape(x, {3, 1}), 2).detach();
  CHECK(v.item() == 3);

  REQUIRE_THROWS_WITH(sg::zeros({2}, sg::int64).set_requires_grad(),
                      Contains("set_requires_grad") && Contains("int64") && Contains("(2)"));
}

// ---------------------------------------------------------------- printing

TEST_CASE("printing shows values, shape and dtype", "[core]") {
  Tensor x = sg::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6.5f}, {2, 3});
  CHECK(sg::to_string(x) ==
        "tensor([[1.0000, 2.0000, 3.0000],\n"
        "        [4.0000, 5.0000, 6.5000]], shape=(2, 3), dtype=float32)");
  std::ostringstream os;
  os << x;
  CHECK(os.str() == sg::to_string(x));

  CHECK(sg::to_string(sg::scalar(2.5, sg::float64)) == "tensor(2.5000, shape=(), dtype=float64)");
  CHECK(sg::to_string(sg::zeros({0})) == "tensor([], shape=(0), dtype=float32)");

  std::string s3 = sg::to_string(sg::zeros({2, 1, 2}, sg::float64));
  CHECK_THAT(s3, Contains("shape=(2, 1, 2)") && Contains("dtype=float64") && Contains("0.0000"));

  Tensor g = sg::ones({2});
  g.set_requires_grad();
  CHECK_THAT(sg::to_string(g), Contains("requires_grad"));
  CHECK_THAT(sg::to_string(sg::ones({2})), !Contains("requires_grad"));
}

TEST_CASE("printing int64, special values and very large or small numbers", "[core]") {
  Tensor i = sg::from_vector(std::vector<int64_t>{1, -2, 30}, {3});
  CHECK(sg::to_string(i) == "tensor([1, -2, 30], shape=(3), dtype=int64)");
  // Every digit of a large id survives (no round trip through double).
  Tensor big = sg::from_vector(std::vector<int64_t>{(int64_t{1} << 53) + 1, -((int64_t{1} << 62) + 3)}, {2});
  CHECK_THAT(sg::to_string(big), Contains("9007199254740993") && Contains("-4611686018427387907"));
  CHECK_THAT(sg::to_string(sg::full({1}, 1e6)), Contains("1.0000e+06"));
  CHECK_THAT(sg::to_string(sg::full({1}, 1e-6, sg::float64)), Contains("1.0000e-06"));
  Tensor special = sg::from_vector(std::vector<double>{NAN, INFINITY, -INFINITY}, {3});
  CHECK_THAT(sg::to_string(special), Contains("nan") && Contains("inf") && Contains("-inf"));
}

TEST_CASE("printing abbreviates tensors above 1000 elements", "[core]") {
  std::string exact = sg::to_string(sg::arange(1000));
  CHECK_THAT(exact, !Contains("..."));
  CHECK_THAT(exact, Contains(", 500, ") && Contains("shape=(1000)"));

  std::string s = sg::to_string(sg::arange(1001));
  CHECK_THAT(s, Contains("[0, 1, 2, ..., 998, 999, 1000]") && Contains("shape=(1001), dtype=int64"));
  CHECK_THAT(s, !Contains(", 500, "));

  // Both axes of a matrix are abbreviated; the first and last rows survive.
  std::string m = sg::to_string(sg::kernel::reshape(sg::arange(0, 1200, 1, sg::float32), {40, 30}));
  CHECK_THAT(m, Contains("[0.0000, 1.0000, 2.0000, ..., 27.0000, 28.0000, 29.0000]") &&
                    Contains("[1170.0000, 1171.0000, 1172.0000, ..., 1197.0000, 1198.0000, 1199.0000]") &&
                    Contains("shape=(40, 30)") && Contains("dtype=float32"));
  CHECK_THAT(m, !Contains("600.0000"));
  CHECK(m.size() < 1000);
}
