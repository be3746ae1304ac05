// Reduction kernels timed: the sums (rows, columns, whole tensor, sum_to as
// a bias gradient), softmax and log-softmax rows, and layer norm forward and
// backward, in float32.
//
//   build/release/bench/reduce [--threads N] [--reps R]
//
// Prints one line per case: its shape and the median milliseconds of R
// timed runs (after one warm-up). Comparing two builds (docs/results.md,
// "Accurate sums"): run both binaries in alternation and take the median
// of each round's ratios.
#include <smallgrad.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "flags.hpp"

namespace {

int usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--threads N] [--reps R]\n"
               "  --threads N  threads (default: smallgrad's default)\n"
               "  --reps R     timed runs per case; the median is printed (default 15)\n",
               prog);
  return 2;
}

double median_ms(int reps, const std::function<void()>& run) {
  run();  // warm-up
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, reps = 15;
  if (!bench::whole_flags(argc, argv, {{"--threads", &threads}, {"--reps", &reps}}, 999999)) return usage(argv[0]);
  if (threads) sg::set_num_threads(threads);
  namespace k = sg::kernel;
  using sg::Tensor;
  sg::Generator gen(1);
  auto line = [&](const char* name, const sg::Shape& shape, const std::function<void()>& run) {
    std::ostringstream s;
    s << shape;
    std::printf("%-28s %-14s %9.4f ms\n", name, s.str().c_str(), median_ms(reps, run));
    std::fflush(stdout);
  };
  std::printf("threads %d, median of %d runs\n", sg::num_threads(), reps);

  const Tensor rows_long = sg::randn({4, 1000000}, gen);
  line("sum rows (axis 1)", rows_long.shape(), [&] { k::sum(rows_long, 1); });
  const Tensor rows = sg::randn({4096, 256}, gen);
  line("sum rows (axis 1)", rows.shape(), [&] { k::sum(rows, 1); });
  const Tensor mnist = sg::randn({60000, 784}, gen);
  line("mean columns (axis 0)", mnist.shape(), [&] { k::mean(mnist, 0); });
  const Tensor bias_g = sg::randn({65536, 64}, gen);
  line("sum_to (bias gradient)", bias_g.shape(), [&] { k::sum_to(bias_g, {64}); });
  const Tensor small_g = sg::randn({1024, 64}, gen);
  line("sum_to (bias gradient)", small_g.shape(), [&] { k::sum_to(small_g, {64}); });
  const Tensor whole = sg::randn({1 << 22}, gen);
  line("sum (whole tensor)", whole.shape(), [&] { k::sum(whole); });
  const Tensor scores = sg::randn({4096, 256}, gen);
  line("softmax rows", scores.shape(), [&] { k::softmax(scores); });
  line("log_softmax rows", scores.shape(), [&] { k::log_softmax(scores); });
  const Tensor vocab = sg::randn({256, 32000}, gen);
  line("log_softmax rows", vocab.shape(), [&] { k::log_softmax(vocab); });
  const Tensor ln_x = sg::randn({8192, 64}, gen).set_requires_grad(true);
  const Tensor gamma = sg::ones({64}).set_requires_grad(true), beta = sg::zeros({64}).set_requires_grad(true);
  const Tensor ln_g = sg::randn({8192, 64}, gen);
  line("layer_norm forward", ln_x.shape(), [&] {
    sg::NoGradGuard no_grad;
    sg::layer_norm(ln_x, gamma, beta);
  });
  line("layer_norm forward+backward", ln_x.shape(), [&] {
    sg::grad(sg::layer_norm(ln_x, gamma, beta), {ln_x, gamma, beta}, ln_g);
  });
  return 0;
}
