// autograd/profiler.cpp: the op profiler charges forward and backward per op.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <unistd.h>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "autograd/ops/unary.hpp"
#include "autograd/profiler.hpp"
#include "core/tensor.hpp"

using Catch::Contains;
using sg::Grads;
using sg::Tensor;

TEST_CASE("the profiler charges each op's forward and backward, and nothing while off", "[autograd]") {
  const Tensor x = sg::ones({4, 4}, sg::float64).set_requires_grad();
  sg::backward(sg::sum(sg::exp(x) * x));  // profiler off: nothing recorded
  REQUIRE_FALSE(sg::profiling());
  {
    sg::ProfileGuard profile;
    REQUIRE(sg::profiling());
    REQUIRE(sg::profile_report().empty());
    for (int i = 0; i < 3; ++i) sg::backward(sg::sum(sg::exp(x) * x));
    sg::profile_mark("after");
    std::map<std::string, int64_t> calls;
    double total = 0;
    for (const sg::OpProfile& p : sg::profile_report()) {
      calls[p.name] = p.calls;
      REQUIRE(p.seconds >= 0);
      total += p.seconds;
    }
    REQUIRE(total > 0);
    for (const char* op : {"exp", "mul", "sum", "exp backward", "mul backward", "sum backward"}) {
      INFO(op);
      REQUIRE(calls[op] == 3);
    }
    REQUIRE(calls["after"] == 1);
  }
  REQUIRE_FALSE(sg::profiling());
}
