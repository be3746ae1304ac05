// The cost of a Hessian-vector product over a model's parameters against
// one gradient, on the same model and batch.
//
//   build/release/bench/hvp_params [--threads N] [--batch N] [--in N] [--hidden N] [--reps R]
//
// The model: Linear(in, hidden) -> tanh -> Linear(hidden, hidden) -> tanh ->
// Linear(hidden, 1), float32, mean squared error against a fixed target.
//   gradient  loss = f(), sg::grad(loss, params): one forward, one backward;
//   hvp       sg::hvp(loss, params, v) (autograd/tools/functional.hpp): one
//             forward, a recorded backward (create_graph), then a backward
//             through that backward.
// Each repetition runs both, one right after the other; the medians of
// their times and of each repetition's ratio hvp / gradient (the two
// measured a few milliseconds apart, so a change in machine load moves both
// alike) are printed, then
// one RESULT line in the format of bench/torch_hvp_params.py (the same model,
// values and timing in PyTorch; bench/compare_hvp_params.sh runs both side
// by side). loss and vhv (v . H v) are checksums: they agree with PyTorch's
// to float32 rounding.
#include <smallgrad.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "autograd/tools/functional.hpp"
#include "flags.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Element k of a tensor of `salt`: scale * sin(0.37 k + salt), the formula
// the PyTorch script uses too.
sg::Tensor filled(const sg::Shape& shape, double salt, double scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = static_cast<float>(scale * std::sin(0.37 * static_cast<double>(k) + salt));
  return sg::from_vector(v, shape);
}

struct Net : sg::nn::Module {
  std::shared_ptr<sg::nn::Linear> fc1, fc2, fc3;
  Net(int64_t in, int64_t hidden) {
    fc1 = register_module("fc1", std::make_shared<sg::nn::Linear>(in, hidden));
    fc2 = register_module("fc2", std::make_shared<sg::nn::Linear>(hidden, hidden));
    fc3 = register_module("fc3", std::make_shared<sg::nn::Linear>(hidden, 1));
  }
  sg::Tensor forward(const sg::Tensor& x) const {
    return fc3->forward(sg::tanh(fc2->forward(sg::tanh(fc1->forward(x)))));
  }
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, batch = 256, in = 64, hidden = 256, reps = 20;
  if (!bench::whole_flags(argc, argv, {{"--threads", &threads}, {"--batch", &batch}, {"--in", &in},
                                       {"--hidden", &hidden}, {"--reps", &reps}}, 100000)) {
    std::fprintf(stderr,
                 "usage: %s [--threads N] [--batch N] [--in N] [--hidden N] [--reps R]\n"
                 "  --threads N  threads (default: smallgrad's default, all cores)\n"
                 "  --batch N    rows of the batch (default 256)\n"
                 "  --in N       input features (default 64)\n"
                 "  --hidden N   hidden width of both hidden layers (default 256)\n"
                 "  --reps R     timed repetitions of each; medians are reported (default 20)\n",
                 argv[0]);
    return 2;
  }
  try {
    if (threads > 0) sg::set_num_threads(threads);
    Net net(in, hidden);
    const std::vector<sg::Tensor> params = net.parameters();
    std::vector<sg::Tensor> v;
    double salt = 1;
    for (const sg::Tensor& p : params) {  // weights and biases scaled by 1/sqrt(fan_in), as PyTorch's init
      const double fan_in = static_cast<double>(p.dim() == 2 ? p.shape()[1] : p.shape()[0]);
      sg::Tensor handle = p;
      sg::kernel::copy_(handle, filled(p.shape(), salt, 1 / std::sqrt(fan_in)));
      v.push_back(filled(p.shape(), salt + 0.5, 1.0));
      salt += 1;
    }
    const sg::Tensor x = filled({batch, in}, 0.1, 1.0), y = filled({batch, 1}, 0.2, 0.5);
    const auto loss = [&] { return sg::nn::mse_loss(net.forward(x), y); };

    std::vector<double> grad_ms, hvp_ms, ratios;  // ratios: each repetition's hvp / gradient
    double loss_value = 0, vhv = 0;
    for (int r = 0; r < reps + 1; ++r) {  // the first repetition warms up, untimed
      auto t0 = Clock::now();
      const sg::Tensor l = loss();
      const sg::Grads g = sg::grad(l, params);
      const double gt = ms_since(t0);
      t0 = Clock::now();
      const std::vector<sg::Tensor> hv = sg::hvp(loss, params, v);
      const double ht = ms_since(t0);
      if (r > 0) grad_ms.push_back(gt), hvp_ms.push_back(ht), ratios.push_back(ht / gt);
      loss_value = l.item<double>();
      vhv = 0;
      for (size_t i = 0; i < v.size(); ++i) vhv += sg::kernel::to(sg::kernel::sum(sg::kernel::mul(hv[i], v[i])), sg::float64).item<double>();
    }
    const double gm = median(grad_ms), hm = median(hvp_ms), ratio = median(ratios);
    std::printf("smallgrad: %lld parameters, batch %d, %d thread(s), %d reps\n",
                static_cast<long long>(net.parameter_count()), batch, sg::num_threads(), reps);
    std::printf("gradient %.3f ms, hvp %.3f ms, hvp / gradient %.2f\n", gm, hm, ratio);
    std::printf("RESULT impl=smallgrad grad_ms=%.4f hvp_ms=%.4f ratio=%.3f loss=%.6g vhv=%.6g\n", gm, hm, ratio,
                loss_value, vhv);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hvp_params: %s\n", e.what());
    return 1;
  }
}
