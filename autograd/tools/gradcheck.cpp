#include "autograd/tools/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"

namespace sg {
namespace {

// L = sum(y * w) in double, y evaluated without recording a graph.
double projected(const std::function<Tensor()>& fn, const Tensor& w) {
  NoGradGuard no_grad;
  const Tensor y = fn();
  return kernel::sum(kernel::mul(y, w)).item<double>();
}

}  // namespace

GradcheckResult gradcheck_leaves(const std::function<Tensor()>& fn, const std::vector<Tensor>& leaves,
                                 const std::vector<std::string>& labels, const GradcheckOptions& opt) {
  GradcheckResult r;
  r.name = opt.name;
  r.atol = opt.atol;
  r.rtol = opt.rtol;
  r.labels = labels;
  r.per_input.resize(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    r.input_shapes.push_back(leaves[i].shape());
    if (r.labels.size() <= i) r.labels.push_back("input " + std::to_string(i));
    if (is_floating(leaves[i].dtype()) &&
        (leaves[i].dtype() != float64 || !leaves[i].is_leaf() || !leaves[i].requires_grad()))
      fail("gradcheck(", opt.name, "): ", r.labels[i], " of shape ", leaves[i].shape(),
           " must be a float64 leaf that requires grad");
    if (Tensor leaf = leaves[i]; is_floating(leaf.dtype())) leaf.set_grad(Tensor());  // fresh grads
  }

  const Tensor y = fn();
  if (!y.defined() || y.dtype() != float64)
    fail("gradcheck(", opt.name, "): fn returned ", y.defined() ? dtype_name(y.dtype()) : "nothing",
         "; it must compute in float64 from the inputs it is given");
  if (!y.requires_grad())
    fail("gradcheck(", opt.name, "): the output of shape ", y.shape(),
         " does not depend on any input through differentiable ops");
  Generator gen(opt.seed);
  const Tensor w = randn(y.shape(), gen, float64);
  backward(sum(mul(y, w)));

  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!is_floating(leaves[i].dtype())) continue;  // int64 inputs (ids, lengths) are not varied
    const int64_t n = leaves[i].numel();
    std::vector<int64_t> which(static_cast<size_t>(n));
    std::iota(which.begin(), which.end(), 0);
    if (n > opt.max_elements) {  // a seeded sample, without repeats
      for (int64_t k = 0; k < opt.max_elements; ++k)
        std::swap(which[static_cast<size_t>(k)], which[static_cast<size_t>(gen.randint(k, n))]);
      which.resize(static_cast<size_t>(opt.max_elements));
      std::sort(which.begin(), which.end());
    }
    const Tensor grad = leaves[i].grad();
    double* data = leaves[i].data<double>();
    for (int64_t j : which) {
      const double saved = data[j];
      data[j] = saved + opt.eps;
      const double plus = projected(fn, w);
      data[j] = saved - opt.eps;
      const double minus = projected(fn, w);
      data[j] = saved;
      const double numeric = (plus - minus) / (2 * opt.eps);
      const double analytic = grad.defined() ? grad.data<double>()[j] : 0.0;
      const double error = std::fabs(analytic - numeric);
      GradcheckLeafSummary& part = r.per_input[i];
      ++r.checked, ++part.checked;
      // NaN counts as the worst error (std::max would drop it).
      r.max_error = std::isnan(error) || error > r.max_error ? error : r.max_error;
      part.max_error = std::isnan(error) || error > part.max_error ? error : part.max_error;
      if (!(error <= opt.atol + opt.rtol * std::fabs(numeric))) {  // NaN fails too
        r.ok = false;
        ++r.failed, ++part.failed;
        if (static_cast<int>(r.mismatches.size()) < opt.max_reported)
          r.mismatches.push_back({i, j, unravel_index(j, leaves[i].shape()), analytic, numeric, error});
      }
    }
  }
  return r;
}

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& opt) {
  std::vector<Tensor> x;  // float64 copies of the floating inputs; int64 ones as given
  for (const Tensor& in : inputs)
    x.push_back(is_floating(in.dtype()) ? kernel::to(in, float64).set_requires_grad(true) : in);
  return gradcheck_leaves([&] { return fn(x); }, x, {}, opt);
}

std::string GradcheckResult::report() const {
  std::ostringstream os;
  if (ok) {
    os << "gradcheck passed for '" << name << "': " << checked << " elements of "
       << input_shapes.size() << " inputs, max error " << max_error;
    return os.str();
  }
  os << "gradcheck failed for '" << name << "': " << failed << " of " << checked
     << " elements differ (atol " << atol << ", rtol " << rtol << ")";
  size_t width = 5;
  for (const std::string& l : labels) width = std::max(width, l.size());
  for (size_t i = 0; i < per_input.size() && i < labels.size(); ++i) {
    const GradcheckLeafSummary& p = per_input[i];
    std::ostringstream shape;
    shape << input_shapes[i];
    os << "\n  " << (p.failed ? "FAIL " : "ok   ") << labels[i] << std::string(width - labels[i].size(), ' ') << " "
       << shape.str() << ": " << p.checked << " checked";
    if (p.checked) os << ", " << p.failed << " failed, worst error " << p.max_error;
  }
  if (!mismatches.empty()) os << "\n  first mismatches:";
  for (const auto& m : mismatches)
    os << "\n  " << labels[m.input] << " " << input_shapes[m.input] << ", element " << m.index << " "
       << m.coords << ": analytic " << m.analytic << ", numeric " << m.numeric << ", error "
       << m.error;
  if (failed > static_cast<int64_t>(mismatches.size()))
    os << "\n  ... and " << failed - static_cast<int64_t>(mismatches.size()) << " more";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const GradcheckResult& r) { return os << r.report(); }

}  // namespace sg
