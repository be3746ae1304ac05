#pragma once
// gradcheck: compares the gradients backward() computes with central
// differences, in float64. Check your own op or layer in three lines:
//
//   auto fn = [](const std::vector<sg::Tensor>& in) { return my_op(in[0], in[1]); };
//   sg::GradcheckResult r = sg::gradcheck(fn, {sg::randn({3, 4}), sg::randn({4})});
//   std::cout << r;  // in a Catch2 test: REQUIRE(r) prints this report on failure
//
// How it works: every floating input is copied to float64 with requires_grad.
// For each input element x_j (or a seeded random sample of them, for large
// inputs) and each output element y_k, the analytic derivative dy_k/dx_j
// (one backward pass per output element) is compared with the central
// difference (y_k(x + eps) - y_k(x - eps)) / (2 eps): the input element
// fails when |analytic - numeric| > atol + rtol * |numeric| for some k.
// A scalar output (a loss) is compared as it is, in its own units, and so
// is every number the report prints. An output of more than max_outputs
// elements is instead projected on fixed random weights w with sum |w| = 1
// (one backward pass in all): the test is then on sum_k w_k dy_k/dx_j,
// against the tolerance sum_k |w_k| (atol + rtol * |numeric_k|), the
// weighted mean of the elements' own; an error in one output element
// counts only with its weight there.
// `fn` must be deterministic (dropout off) and build its result from its
// inputs only in float64 (a module must be converted to float64 first).
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace sg {

struct GradcheckOptions {
  std::string name = "fn";           // the op or module, for the report
  double eps = 1e-6;                 // central-difference step
  double atol = 1e-6;
  double rtol = 1e-5;
  int64_t max_elements = 2000;       // per input; above this a random sample is checked
  int64_t max_outputs = 256;         // above this the output is projected on random weights
  uint64_t seed = 0;                 // for the output weights w and the sample
  int max_reported = 5;              // mismatches listed in the report
};

struct GradcheckMismatch {
  size_t input;      // which input (its label is labels[input])
  int64_t index;     // flat element index in it
  Shape coords;      // the same index per axis
  double analytic, numeric, error;  // of d output / d input element, the worst output element's
  int64_t output = 0;  // the output element (flat index); -1 when the output was projected
  Shape output_coords;
};

// One input or parameter's part of a check.
struct GradcheckLeafSummary {
  int64_t checked = 0, failed = 0;
  double max_error = 0;
};

struct GradcheckResult {
  bool ok = true;
  std::string name;
  int64_t checked = 0;  // elements compared
  int64_t failed = 0;   // elements outside tolerance
  double max_error = 0;  // the largest |analytic - numeric| over the compared derivatives
  double atol = 0, rtol = 0;
  Shape output_shape;
  bool projected = false;  // the output had more than max_outputs elements
  std::vector<Shape> input_shapes;
  std::vector<std::string> labels;  // "input 0", ... or a parameter's name
  std::vector<GradcheckLeafSummary> per_input;  // one per input / parameter, as labels
  std::vector<GradcheckMismatch> mismatches;  // the first few
  // Passed: one line. Failed: a line per input or parameter (label, shape,
  // elements checked, failed, worst error), so the wrong one shows at a
  // glance, then the first mismatching elements.
  std::string report() const;
  explicit operator bool() const { return ok; }
};
std::ostream& operator<<(std::ostream& os, const GradcheckResult& r);

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

// The general form: checks fn() against every tensor in `leaves`, which must
// already be float64 leaves that require grad (a module's parameters after
// module.to(float64), say); they are perturbed in place and restored.
// labels name them in the report. nn::gradcheck_module builds on this.
GradcheckResult gradcheck_leaves(const std::function<Tensor()>& fn, const std::vector<Tensor>& leaves,
                                 const std::vector<std::string>& labels,
                                 const GradcheckOptions& options = {});

}  // namespace sg
