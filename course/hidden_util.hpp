#pragma once
// Helpers of the hidden tests (course/NN-name/hidden/), on top of the public
// tests' tests/test_util.hpp. The grader copies this file from the kit, never
// from a student's tree.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/tools/gradcheck.hpp"
#include "autograd/tools/gradgradcheck.hpp"
#include "core/kernels.hpp"
#include "core/tensor.hpp"
#include "test_util.hpp"

namespace hidden {

using sg::Shape;
using sg::Tensor;
using Inputs = std::vector<Tensor>;
using test_util::count;

// Seeded N(0, 1) values from the standard library, independent of sg's generator.
inline std::vector<double> randoms(const Shape& s, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(static_cast<size_t>(count(s)));
  for (auto& x : v) x = d(rng);
  return v;
}

// A tensor of dtype `dtype` holding v.
inline Tensor tensor(const std::vector<double>& v, const Shape& s, sg::DType dtype) {
  return sg::kernel::to(sg::from_vector(v, s, sg::float64), dtype);
}

// The gradients of inputs (leaves of `dtype`) when `fn`'s output receives
// the output gradient `g` (never all ones: a backward that ignores its
// incoming gradient must not pass).
inline std::vector<Tensor> grads_of(const std::function<Tensor(const Inputs&)>& fn,
                                    const std::vector<std::vector<double>>& values, const std::vector<Shape>& shapes,
                                    const std::vector<double>& g, sg::DType dtype) {
  Inputs in;
  for (size_t i = 0; i < values.size(); ++i) in.push_back(tensor(values[i], shapes[i], dtype).set_requires_grad());
  const Tensor out = fn(in);
  REQUIRE(static_cast<size_t>(out.numel()) == g.size());
  sg::backward(out, tensor(g, out.shape(), dtype));
  std::vector<Tensor> grads;
  for (const Tensor& t : in) grads.push_back(t.grad());
  return grads;
}

// Element `flat` of the broadcast result `out`, mapped to its element of
// `in` (both shapes aligned at the right, size-1 axes repeated).
inline int64_t broadcast_source(int64_t flat, const Shape& out, const Shape& in) {
  const auto idx = test_util::unravel(flat, out);
  int64_t src = 0;
  const size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) src = src * in[k] + (in[k] == 1 ? 0 : idx[lead + k]);
  return src;
}

// Tolerances for values computed in T against long double references.
template <class T>
constexpr double rel_tol() { return std::is_same_v<T, float> ? 2e-5 : 1e-12; }
template <class T>
constexpr double abs_tol() { return std::is_same_v<T, float> ? 2e-6 : 1e-13; }

// sg::gradcheck in float64 (its output weights are random, never all ones),
// required to pass on every element.
inline void gradcheck(const std::string& name, const std::function<Tensor(const Inputs&)>& fn, const Inputs& in,
                      sg::GradcheckOptions o = {}) {
  test_util::check_gradient(name, fn, in, o);
}

// sg::gradgradcheck of fn at `in` (float64, requiring grad): fn's second
// derivatives equal to central differences of its first ones.
inline void check_gradgrad(const std::string& name, const sg::GradcheckFn& fn, const Inputs& in) {
  sg::GradcheckOptions o;
  o.name = name;
  const sg::GradcheckResult r = sg::gradgradcheck(fn, in, o);
  INFO(r.report());
  REQUIRE(r);
  REQUIRE(r.checked > 0);
}

// The create_graph form of fn's backward (the branch it takes with
// recording on): sg::grad with create_graph gives every input's gradient a
// history (recorded in the inputs and in g, which requires grad), and
// sg::gradgradcheck finds its derivatives, in the inputs and in g, equal to
// central differences of the first-order form (recording off). A backward
// whose create_graph form computes with the kernels (no history) or differs
// from its first-order form fails. Float64.
inline void check_create_graph_form(const std::string& name, const std::function<Tensor(const Inputs&)>& fn,
                                    const Inputs& values, uint64_t seed) {
  INFO(name << ": the create_graph form of its backward");
  Inputs in;
  for (const Tensor& v : values) in.push_back(sg::kernel::to(v, sg::float64).set_requires_grad());
  const Tensor out = fn(in);
  const Tensor g = tensor(randoms(out.shape(), seed), out.shape(), sg::float64).set_requires_grad();
  const sg::Grads first = sg::grad(out, in, g, sg::BackwardOptions{false, true});
  for (size_t i = 0; i < in.size(); ++i) {
    INFO("the gradient of input " << i << " must have a history: recorded in the inputs and in g");
    REQUIRE(first[i].defined());
    REQUIRE(first[i].requires_grad());
  }
  check_gradgrad(name, fn, in);
}

// An input changed in place between the forward and backward(): for each
// input k in turn, out = fn(inputs), then input k += a random delta (under
// NoGradGuard, as an optimizer step would), then backward(out, g). Either
// the engine refuses (the op saved input k: its version check throws
// "modified by an in-place operation"), or every gradient equals the one
// without the change: a backward must use what the forward saw (its saved
// tensors), never an input read again, which would give a gradient of values
// the forward did not see. Float64; `want` comes from the same fn on fresh
// inputs, whose values the other hidden tests check.
inline void check_inplace_change(const std::string& name, const std::function<Tensor(const Inputs&)>& fn,
                                 const std::vector<std::vector<double>>& values, const std::vector<Shape>& shapes,
                                 uint64_t seed) {
  auto leaves = [&] {
    Inputs in;
    for (size_t i = 0; i < values.size(); ++i)
      in.push_back(tensor(values[i], shapes[i], sg::float64).set_requires_grad());
    return in;
  };
  Inputs fresh = leaves();
  const Tensor fresh_out = fn(fresh);
  const std::vector<double> g = randoms(fresh_out.shape(), seed);
  sg::backward(fresh_out, tensor(g, fresh_out.shape(), sg::float64));
  for (size_t k = 0; k < values.size(); ++k) {
    INFO(name << ": input " << k << " of shape " << test_util::shape_str(shapes[k])
              << " changed in place between the forward and backward()");
    Inputs in = leaves();
    const Tensor out = fn(in);
    {
      sg::NoGradGuard no_grad;
      std::vector<double> delta = randoms(shapes[k], seed + 1 + k);
      for (double& d : delta) d = 0.5 + std::fabs(d);  // every element moves, away from 0 for divisors
      sg::kernel::add_(in[k], tensor(delta, shapes[k], sg::float64));
    }
    std::string refused;
    try {
      sg::backward(out, tensor(g, out.shape(), sg::float64));
    } catch (const sg::Error& e) {
      refused = e.what();
    }
    if (!refused.empty()) {
      CHECK_THAT(refused, Catch::Contains("modified by an in-place operation"));
      continue;
    }
    for (size_t i = 0; i < in.size(); ++i) {
      INFO("the gradient of input " << i);
      REQUIRE(in[i].grad().defined() == fresh[i].grad().defined());
      if (fresh[i].grad().defined())
        test_util::check_values<double>(in[i].grad(), shapes[i], fresh[i].grad().to_vector<double>(), 1e-12, 1e-13);
    }
  }
}

}  // namespace hidden
