// autograd/ops/compare.cpp: eq, ne, lt, le, gt, ge give masks of 1 and 0 in
// the operands' dtype, broadcast, never require grad, and check scalars.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/ops/compare.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

using Catch::Contains;
using sg::Tensor;

TEST_CASE("comparisons give masks in the operands' dtype, against naive loops", "[autograd][compare]") {
  const std::vector<double> a = {-1, 0, 2, 2, 5, 3}, b = {2, 0, 5};  // a (2, 3), b (3) broadcast
  using Cmp = std::function<bool(double, double)>;
  const std::vector<std::tuple<std::string, std::function<Tensor(const Tensor&, const Tensor&)>,
                               std::function<Tensor(const Tensor&, double)>, Cmp>>
      ops = {
          {"eq", [](auto& x, auto& y) { return sg::eq(x, y); }, [](auto& x, double s) { return sg::eq(x, s); },
           [](double x, double y) { return x == y; }},
          {"ne", [](auto& x, auto& y) { return sg::ne(x, y); }, [](auto& x, double s) { return sg::ne(x, s); },
           [](double x, double y) { return x != y; }},
          {"lt", [](auto& x, auto& y) { return sg::lt(x, y); }, [](auto& x, double s) { return sg::lt(x, s); },
           [](double x, double y) { return x < y; }},
          {"le", [](auto& x, auto& y) { return sg::le(x, y); }, [](auto& x, double s) { return sg::le(x, s); },
           [](double x, double y) { return x <= y; }},
          {"gt", [](auto& x, auto& y) { return sg::gt(x, y); }, [](auto& x, double s) { return sg::gt(x, s); },
           [](double x, double y) { return x > y; }},
          {"ge", [](auto& x, auto& y) { return sg::ge(x, y); }, [](auto& x, double s) { return sg::ge(x, s); },
           [](double x, double y) { return x >= y; }},
      };
  for (sg::DType dtype : {sg::int64, sg::float32, sg::float64}) {
    Tensor ta = sg::from_vector(a, {2, 3}, dtype), tb = sg::from_vector(b, {3}, dtype);
    if (dtype != sg::int64) ta.set_requires_grad(true);
    for (const auto& [name, tensor_op, scalar_op, cmp] : ops) {
      INFO(name << " on " << dtype);
      const Tensor m = tensor_op(ta, tb), ms = scalar_op(ta, 2);
      REQUIRE(m.shape() == sg::Shape{2, 3});
      REQUIRE(m.dtype() == dtype);
      REQUIRE_FALSE(m.requires_grad());
      REQUIRE(ms.dtype() == dtype);
      const std::vector<double> got = m.to_vector<double>(), got_s = ms.to_vector<double>();
      for (size_t i = 0; i < a.size(); ++i) {
        CHECK(got[i] == (cmp(a[i], b[i % 3]) ? 1.0 : 0.0));
        CHECK(got_s[i] == (cmp(a[i], 2) ? 1.0 : 0.0));
      }
    }
  }
}

TEST_CASE("comparisons refuse mismatched operands and fractional int64 scalars", "[autograd][compare]") {
  const Tensor lens = sg::from_vector(std::vector<double>{1, 2, 3}, {3}, sg::int64);
  REQUIRE_THROWS_WITH(sg::lt(lens, 2.5), Contains("lt: an int64 tensor of shape (3) compared with 2.5") &&
                                             Contains("not a whole number"));
  REQUIRE_THROWS_WITH(sg::eq(lens, sg::ones({3})), Contains("eq"));
  REQUIRE_THROWS_WITH(sg::ge(lens, sg::zeros({2}, sg::int64)), Contains("ge: cannot broadcast (3) with (2)"));
}
