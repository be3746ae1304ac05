#include "autograd/tools/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "autograd/engine.hpp"
#include "autograd/ops/arithmetic.hpp"
#include "autograd/ops/reduce.hpp"
#include "core/kernels.hpp"
#include "core/random.hpp"

namespace sg {
namespace {

// y evaluated without recording a graph, as a copy: fn may return a view
// of an input (reshape), which the next perturbation would change.
Tensor evaluate(const std::function<Tensor()>& fn) {
  NoGradGuard no_grad;
  return clone(fn());
}

// NaN counts as the largest (std::max would drop it).
double worse(double a, double b) { return std::isnan(b) || b > a ? b : a; }

}  // namespace

GradcheckResult gradcheck_leaves(const std::function<Tensor()>& fn, const std::vector<Tensor>& leaves,
                                 const std::vector<std::string>& labels, const GradcheckOptions& opt) {
  GradcheckResult r;
  r.name = opt.name;
  r.atol = opt.atol;
  r.rtol = opt.rtol;
  r.labels = labels;
  r.per_input.resize(leaves.size());
  std::vector<Tensor> varied;  // the floating leaves, in order
  for (size_t i = 0; i < leaves.size(); ++i) {
    r.input_shapes.push_back(leaves[i].shape());
    if (r.labels.size() <= i) r.labels.push_back("input " + std::to_string(i));
    if (is_floating(leaves[i].dtype()) &&
        (leaves[i].dtype() != float64 || !leaves[i].is_leaf() || !leaves[i].requires_grad()))
      fail("gradcheck(", opt.name, "): ", r.labels[i], " of shape ", leaves[i].shape(),
           " must be a float64 leaf that requires grad");
    if (is_floating(leaves[i].dtype())) varied.push_back(leaves[i]);
  }

  const Tensor y = fn();
  if (!y.defined() || y.dtype() != float64)
    fail("gradcheck(", opt.name, "): fn returned ", y.defined() ? dtype_name(y.dtype()) : "nothing",
         "; it must compute in float64 from the inputs it is given");
  if (!y.requires_grad())
    fail("gradcheck(", opt.name, "): the output of shape ", y.shape(),
         " does not depend on any input through differentiable ops");
  r.output_shape = y.shape();
  const int64_t outputs = y.numel();
  r.projected = outputs > opt.max_outputs;
  Generator gen(opt.seed);
  Tensor w;  // the projection's weights, |w| summing to 1
  if (r.projected) {
    w = randn(y.shape(), gen, float64);
    kernel::scale_(w, 1.0 / kernel::sum(kernel::abs(w)).item<double>());
  }

  // The elements compared: all, or a seeded sample without repeats.
  std::vector<std::vector<int64_t>> which(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!is_floating(leaves[i].dtype())) continue;  // int64 inputs (ids, lengths) are not varied
    const int64_t n = leaves[i].numel();
    which[i].resize(static_cast<size_t>(n));
    std::iota(which[i].begin(), which[i].end(), 0);
    if (n > opt.max_elements) {
      for (int64_t k = 0; k < opt.max_elements; ++k)
        std::swap(which[i][static_cast<size_t>(k)], which[i][static_cast<size_t>(gen.randint(k, n))]);
      which[i].resize(static_cast<size_t>(opt.max_elements));
      std::sort(which[i].begin(), which[i].end());
    }
  }

  // Analytic: one backward pass per output element (a one-hot gradient), or
  // one with w. analytic[i][s * rows + k] = d y_k / d (element s of leaf i).
  const int64_t rows = r.projected ? 1 : outputs;
  std::vector<std::vector<double>> analytic(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) analytic[i].assign(which[i].size() * static_cast<size_t>(rows), 0.0);
  for (int64_t k = 0; k < rows && !varied.empty(); ++k) {
    Tensor seed = w;
    if (!r.projected) {
      seed = zeros(y.shape(), float64);
      seed.data<double>()[k] = 1;
    }
    const Grads g = grad(y, varied, seed, k + 1 < rows);
    for (size_t i = 0, v = 0; i < leaves.size(); ++i) {
      if (!is_floating(leaves[i].dtype())) continue;
      const Tensor& gi = g[v++];
      if (!gi.defined()) continue;  // no gradient flows: 0
      const double* gp = gi.data<double>();
      for (size_t s = 0; s < which[i].size(); ++s)
        analytic[i][s * static_cast<size_t>(rows) + static_cast<size_t>(k)] = gp[which[i][s]];
    }
  }

  for (size_t i = 0; i < leaves.size(); ++i) {
    if (which[i].empty()) continue;  // int64, or empty
    double* data = leaves[i].data<double>();
    GradcheckLeafSummary& part = r.per_input[i];
    for (size_t s = 0; s < which[i].size(); ++s) {
      const int64_t j = which[i][s];
      const double saved = data[j];
      data[j] = saved + opt.eps;
      const Tensor plus = evaluate(fn);
      data[j] = saved - opt.eps;
      const Tensor minus = evaluate(fn);
      data[j] = saved;
      const double *yp = plus.data<double>(), *ym = minus.data<double>();
      // The worst output element for this input element: the largest error
      // past its tolerance (NaN first), and the largest error.
      bool bad = false;
      double worst_excess = -1, worst_error = 0, a_bad = 0, n_bad = 0;
      int64_t k_bad = 0;
      auto compare = [&](int64_t k, double a, double num, double tol) {
        const double error = std::fabs(a - num);
        worst_error = worse(worst_error, error);
        if (error <= tol) return;  // NaN fails
        const double excess = std::isnan(error) ? std::numeric_limits<double>::infinity() : error - tol;
        if (!bad || excess > worst_excess) worst_excess = excess, a_bad = a, n_bad = num, k_bad = k;
        bad = true;
      };
      if (!r.projected) {
        for (int64_t k = 0; k < outputs; ++k) {
          const double num = (yp[k] - ym[k]) / (2 * opt.eps);
          compare(k, analytic[i][s * static_cast<size_t>(rows) + static_cast<size_t>(k)], num,
                  opt.atol + opt.rtol * std::fabs(num));
        }
      } else {
        const double* wp = w.data<double>();
        double num = 0, tol = 0;
        for (int64_t k = 0; k < outputs; ++k) {
          const double nk = (yp[k] - ym[k]) / (2 * opt.eps);
          num += wp[k] * nk;
          tol += std::fabs(wp[k]) * (opt.atol + opt.rtol * std::fabs(nk));
        }
        compare(-1, analytic[i][s], num, tol);
      }
      ++r.checked, ++part.checked;
      r.max_error = worse(r.max_error, worst_error);
      part.max_error = worse(part.max_error, worst_error);
      if (bad) {
        r.ok = false;
        ++r.failed, ++part.failed;
        if (static_cast<int>(r.mismatches.size()) < opt.max_reported)
          r.mismatches.push_back({i, j, unravel_index(j, leaves[i].shape()), a_bad, n_bad, std::fabs(a_bad - n_bad),
                                  k_bad, k_bad >= 0 ? unravel_index(k_bad, y.shape()) : Shape{}});
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
    if (projected) os << " (output " << output_shape << " projected on random weights)";
    return os.str();
  }
  os << "gradcheck failed for '" << name << "': " << failed << " of " << checked
     << " elements differ (atol " << atol << ", rtol " << rtol << ")";
  if (projected)
    os << "; the output " << output_shape << " has more elements than max_outputs, so each"
       << " derivative is of its projection on random weights w, sum |w| = 1";
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
  for (const auto& m : mismatches) {
    os << "\n  " << labels[m.input] << " " << input_shapes[m.input] << ", element " << m.index << " "
       << m.coords << ": analytic " << m.analytic << ", numeric " << m.numeric << ", error "
       << m.error;
    if (m.output < 0)
      os << " (of the output " << output_shape << " projected on random weights)";
    else if (!output_shape.empty())
      os << " (output element " << m.output << " " << m.output_coords << ")";
  }
  if (failed > static_cast<int64_t>(mismatches.size()))
    os << "\n  ... and " << failed - static_cast<int64_t>(mismatches.size()) << " more";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const GradcheckResult& r) { return os << r.report(); }

}  // namespace sg
