// How one self-attention layer's cost grows with sequence length and hidden
// size: the O(n^2 d) attention against the O(n d^2) projections of the
// complexity table in Dive into Deep Learning's section on self-attention,
// and the sequence length at which the first overtakes the second here.
//
//   build/release/bench/attention_scaling [--threads N] [--reps N] [--out DIR]
//
// For hidden sizes H = 64, 128, 256 and sequence lengths T = 16 ... 1024
// (powers of two), it times forward + backward (float32, median of --reps
// runs after one warm-up run) of three things on the same N = 4096 tokens,
// batch = N / T sequences of length T, so that times per token compare
// across T, each (T, H) in a fresh child process (measure_in_child says why):
//   layer        sg::nn::MultiHeadAttention(H, H / 32 heads, no dropout, no
//                bias) on X = queries = keys = values, full valid_lens
//                (every mask computed, nothing masked);
//   projections  its four Linear layers alone: W_q, W_k, W_v on X, W_o on
//                another (B, T, H) input;
//   attention    the core alone on (B, T, H) tensors q, k, v, as the
//                layer runs it: head_pool(masked_softmax(head_scores(q, k),
//                scale 1/sqrt(32)), v), each head read in place.
// The head dimension is fixed at 32, so there are 2, 4 and 8 heads. Every
// input requires grad, as a layer inside a network does, so backward
// computes the gradients of both inputs and weights. The two parts are the
// whole layer but for the gradient sum where x's three uses meet.
//
// FLOPs (multiply-adds count 2), forward:
//   projections  4 * 2 N H^2        four (N, H) x (H, H) products
//   attention    2 * 2 N T H        q k^T and weights x v, over all heads
// forward + backward = 3 * forward (backward is twice forward). Equal FLOPs
// when 4 N T H = 8 N H^2, i.e. T = 2 H: the theoretical crossover.
//
// Prints one row per (T, H): milliseconds of each, the attention core's
// share of the layer's time, and the GFLOP/s of each; then, per H, the
// measured crossover (the attention core first slower than the
// projections, interpolated on log T and log time between the two lengths
// around it) next to T = 2 H. Writes DIR/attention_scaling.csv (the same
// numbers) and DIR/attention_scaling.svg (microseconds per token against T,
// both on log2 axes; DIR defaults to the current directory).
#include <smallgrad.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "study/plot.hpp"

namespace {

constexpr int64_t kTokens = 4096, kHeadDim = 32;
const int64_t kSeqs[] = {16, 32, 64, 128, 256, 512, 1024};
const int64_t kHiddens[] = {64, 128, 256};

struct Row {
  int64_t seq, hidden, heads, batch;
  double layer_ms, projections_ms, attention_ms;
  double projection_flops, attention_flops;  // forward + backward
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double gflops(double flops, double ms) { return flops / (ms * 1e-3) / 1e9; }

// Median ms of each step, run in turns (one run of each per repetition) so
// that a slow spell on a shared machine hits all three alike. clear() drops
// the gradients left by the previous run, outside the timed region.
std::vector<double> time_in_turns(const std::vector<std::function<void()>>& steps,
                                  const std::function<void()>& clear, int reps) {
  std::vector<std::vector<double>> ms(steps.size());
  for (int r = -1; r < reps; ++r)  // r = -1: warm-up (allocator cache, BLIS buffers)
    for (size_t s = 0; s < steps.size(); ++s) {
      clear();
      const auto t0 = std::chrono::steady_clock::now();
      steps[s]();
      const double elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 0) ms[s].push_back(elapsed);
    }
  std::vector<double> out;
  for (const auto& m : ms) out.push_back(median(m));
  return out;
}

Row measure(int64_t seq, int64_t hidden, int reps) {
  const int64_t heads = hidden / kHeadDim, batch = kTokens / seq;  // every T divides 4096
  sg::manual_seed(0);
  sg::nn::MultiHeadAttention layer(hidden, heads, 0.0);
  sg::Generator gen(1);
  const sg::Shape tokens{batch, seq, hidden};
  sg::Tensor x = sg::randn(tokens, gen).set_requires_grad();
  sg::Tensor merged = sg::randn(tokens, gen).set_requires_grad();  // W_o's input
  sg::Tensor q = sg::randn(tokens, gen).set_requires_grad();
  sg::Tensor k = sg::randn(tokens, gen).set_requires_grad();
  sg::Tensor v = sg::randn(tokens, gen).set_requires_grad();
  const sg::Tensor seed_tokens = sg::randn(tokens, gen);
  const sg::Tensor lens = sg::full({batch}, static_cast<double>(seq), sg::int64);
  const sg::Tensor lens_heads = sg::full({batch * heads}, static_cast<double>(seq), sg::int64);
  const double scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));

  auto whole_layer = [&] { sg::backward(layer.forward(x, x, x, lens), seed_tokens); };
  auto projections = [&] {
    sg::backward(layer.W_q->forward(x), seed_tokens);
    sg::backward(layer.W_k->forward(x), seed_tokens);
    sg::backward(layer.W_v->forward(x), seed_tokens);
    sg::backward(layer.W_o->forward(merged), seed_tokens);
  };
  auto attention = [&] {
    const sg::Tensor weights = sg::masked_softmax(sg::head_scores(q, k, heads), lens_heads, false, scale);
    sg::backward(sg::head_pool(weights, v, heads), seed_tokens);
  };
  auto clear = [&] {
    layer.zero_grad();
    for (sg::Tensor t : {x, merged, q, k, v}) t.set_grad(sg::Tensor());
  };
  const std::vector<double> ms = time_in_turns({whole_layer, projections, attention}, clear, reps);

  const double n = static_cast<double>(kTokens), h = static_cast<double>(hidden), t = static_cast<double>(seq);
  return {seq, hidden, heads, batch, ms[0], ms[1], ms[2], 3 * 4 * 2 * n * h * h, 3 * 2 * 2 * n * t * h};
}

// measure() in a child process, its Row read back through a pipe. The
// library's allocator cache is process-wide, capped at 1 GiB and never
// trimmed: in one process the blocks of the shapes measured before fill it,
// and at T = 1024, H = 256 every run then takes its 128 MiB score tensors
// fresh from the system and pays first-touch page faults (the attention
// core measured five times slower). A fresh process per shape holds only that
// shape's blocks, as a training run of that shape would. The parent has
// started no OpenMP threads, so forking it is safe.
Row measure_in_child(int64_t seq, int64_t hidden, int reps) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    int status = 1;
    try {
      const Row r = measure(seq, hidden, reps);
      if (write(fds[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r)) status = 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "attention_scaling: %s\n", e.what());
    }
    std::_Exit(status);
  }
  close(fds[1]);
  Row r{};
  const ssize_t got = read(fds[0], &r, sizeof r);  // one write of fewer than PIPE_BUF bytes: all or nothing
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("the measurement of seq " + std::to_string(seq) + ", hidden " + std::to_string(hidden) +
                             " failed");
  return r;
}

// The crossover of one hidden size's rows (ascending seq): where log(attention
// / projections) first turns positive, interpolated linearly in log T. Empty
// when attention stays below the projections; seq[0] when it starts above.
std::optional<double> crossover(const std::vector<Row>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const double r1 = std::log(rows[i].attention_ms / rows[i].projections_ms);
    if (r1 <= 0) continue;
    if (i == 0) return static_cast<double>(rows[0].seq);
    const double r0 = std::log(rows[i - 1].attention_ms / rows[i - 1].projections_ms);
    const double l0 = std::log(static_cast<double>(rows[i - 1].seq)), l1 = std::log(static_cast<double>(rows[i].seq));
    return std::exp(l0 + (l1 - l0) * r0 / (r0 - r1));
  }
  return std::nullopt;
}

double us_per_token(double ms) { return ms * 1e3 / kTokens; }

std::string csv(const std::vector<Row>& rows) {
  std::ostringstream o;
  o << "seq,hidden,heads,batch,tokens,layer_ms,projections_ms,attention_ms,attention_share,"
       "projection_gflop,attention_gflop,layer_gflops,projections_gflops,attention_gflops\n";
  for (const Row& r : rows)
    o << r.seq << ',' << r.hidden << ',' << r.heads << ',' << r.batch << ',' << kTokens << ',' << r.layer_ms << ','
      << r.projections_ms << ',' << r.attention_ms << ',' << r.attention_ms / r.layer_ms << ','
      << r.projection_flops / 1e9 << ',' << r.attention_flops / 1e9 << ','
      << gflops(r.projection_flops + r.attention_flops, r.layer_ms) << ','
      << gflops(r.projection_flops, r.projections_ms) << ',' << gflops(r.attention_flops, r.attention_ms) << '\n';
  return o.str();
}

// Microseconds per token against T, both on log axes. Per hidden size: the
// projections, the attention core, and a short vertical stroke at the
// measured crossover (where the two lines meet).
std::string svg(const std::vector<std::vector<Row>>& by_hidden, int threads) {
  std::vector<sg::study::plot::Series> series;
  for (const auto& rows : by_hidden) {
    const std::string h = "H=" + std::to_string(rows[0].hidden);
    sg::study::plot::Series proj{"projections " + h, {}, {}}, attn{"attention core " + h, {}, {}};
    for (const Row& r : rows) {
      const double x = static_cast<double>(r.seq);
      proj.x.push_back(x), proj.y.push_back(us_per_token(r.projections_ms));
      attn.x.push_back(x), attn.y.push_back(us_per_token(r.attention_ms));
    }
    series.push_back(proj);
    series.push_back(attn);
  }
  for (const auto& rows : by_hidden) {
    const std::optional<double> t = crossover(rows);
    if (!t) continue;
    // The projections' time at the crossover, interpolated in log T and log time.
    const double x = std::log2(*t);
    size_t i = 1;
    while (i + 1 < rows.size() && std::log2(static_cast<double>(rows[i].seq)) < x) ++i;
    const double x0 = std::log2(static_cast<double>(rows[i - 1].seq)), x1 = std::log2(static_cast<double>(rows[i].seq));
    const double y0 = std::log2(us_per_token(rows[i - 1].projections_ms)), y1 = std::log2(us_per_token(rows[i].projections_ms));
    const double y = std::exp2(y0 + (y1 - y0) * (x - x0) / (x1 - x0));
    char name[64];
    std::snprintf(name, sizeof name, "crossover H=%lld: T = %.0f", static_cast<long long>(rows[0].hidden), *t);
    series.push_back({name, {*t, *t}, {y / 1.6, y * 1.6}});
  }
  sg::study::plot::LineOptions opt;
  opt.title = "One attention layer, forward + backward, " + std::to_string(kTokens) + " tokens, " +
              std::to_string(threads) + (threads == 1 ? " thread" : " threads") + " (theory: crossover at T = 2H)";
  opt.xlabel = "sequence length T (log scale)";
  opt.ylabel = "microseconds per token (log scale)";
  opt.width = 900, opt.height = 480;
  opt.log_x = opt.log_y = true;
  opt.log_base = 2;
  return sg::study::plot::line_svg(series, opt);
}

// The rows of a CSV written by csv(), grouped by hidden size as measured.
std::vector<std::vector<Row>> read_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read '" + path + "'");
  std::string line;
  std::getline(f, line);  // the header
  std::vector<std::vector<Row>> by_hidden;
  for (int n = 2; std::getline(f, line); ++n) {
    std::vector<double> v;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) v.push_back(std::strtod(cell.c_str(), nullptr));
    if (v.size() != 14) throw std::runtime_error("'" + path + "' line " + std::to_string(n) + " has " +
                                                 std::to_string(v.size()) + " fields, not 14");
    const Row r{static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]), static_cast<int64_t>(v[2]),
                static_cast<int64_t>(v[3]), v[5], v[6], v[7], v[9] * 1e9, v[10] * 1e9};
    if (by_hidden.empty() || by_hidden.back()[0].hidden != r.hidden) by_hidden.emplace_back();
    by_hidden.back().push_back(r);
  }
  if (by_hidden.empty()) throw std::runtime_error("'" + path + "' has no rows");
  return by_hidden;
}

// Usage on stdout for --help (status 0), on stderr for a bad flag (status 2).
int usage(const char* argv0, int status) {
  std::fprintf(status ? stderr : stdout,
               "usage: %s [--threads N] [--reps N] [--out DIR]\n"
               "       %s --replot DIR/attention_scaling.csv [--threads N]   (redraw the SVG of earlier measurements,\n"
               "       N the thread count they were measured with)\n",
               argv0, argv0);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, reps = 7;
  std::string out = ".", replot;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      return usage(argv[0], 0);
    }
    if (i + 1 >= argc) return usage(argv[0], 2);
    const char* v = argv[++i];
    if (arg == "--threads" || arg == "--reps") {
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (*end != '\0' || n < 1) return usage(argv[0], 2);
      (arg == "--threads" ? threads : reps) = static_cast<int>(n);
    } else if (arg == "--out" && *v != '\0') {
      out = v;
    } else if (arg == "--replot" && *v != '\0') {
      replot = v;
    } else {
      return usage(argv[0], 2);
    }
  }
  try {
    if (!replot.empty()) {
      const std::string svg_path = std::filesystem::path(replot).replace_extension(".svg").string();
      sg::study::plot::write_file(svg_path, svg(read_csv(replot), threads ? threads : 1));
      std::printf("wrote %s from %s\n", svg_path.c_str(), replot.c_str());
      return 0;
    }
    if (threads) sg::set_num_threads(threads);
    std::printf("MultiHeadAttention forward + backward, float32, %lld tokens (batch * seq), head dim %lld, "
                "%d threads, median of %d\n",
                static_cast<long long>(kTokens), static_cast<long long>(kHeadDim), sg::num_threads(), reps);
    std::printf("%5s %6s %5s %5s %10s %10s %10s %7s %9s %9s %9s\n", "seq", "hidden", "heads", "batch", "layer ms",
                "proj ms", "attn ms", "attn %", "layer GF", "proj GF", "attn GF");
    std::vector<std::vector<Row>> by_hidden;
    std::vector<Row> all;
    for (int64_t hidden : kHiddens) {
      by_hidden.emplace_back();
      for (int64_t seq : kSeqs) {
        const Row r = measure_in_child(seq, hidden, reps);
        std::printf("%5lld %6lld %5lld %5lld %10.3f %10.3f %10.3f %6.1f%% %9.1f %9.1f %9.1f\n",
                    static_cast<long long>(r.seq), static_cast<long long>(r.hidden), static_cast<long long>(r.heads),
                    static_cast<long long>(r.batch), r.layer_ms, r.projections_ms, r.attention_ms,
                    100 * r.attention_ms / r.layer_ms, gflops(r.projection_flops + r.attention_flops, r.layer_ms),
                    gflops(r.projection_flops, r.projections_ms), gflops(r.attention_flops, r.attention_ms));
        std::fflush(stdout);
        by_hidden.back().push_back(r);
        all.push_back(r);
      }
    }
    for (const auto& rows : by_hidden) {
      const std::optional<double> t = crossover(rows);
      const long long h = rows[0].hidden;
      if (!t)
        std::printf("crossover H=%lld: the attention core stays below the projections up to seq %lld", h,
                    static_cast<long long>(rows.back().seq));
      else if (*t == static_cast<double>(rows[0].seq))
        std::printf("crossover H=%lld: the attention core already exceeds the projections at seq %lld", h,
                    static_cast<long long>(rows[0].seq));
      else
        std::printf("crossover H=%lld: the attention core exceeds the projections at seq ≈ %.0f", h, *t);
      std::printf(" (theory, equal FLOPs 4NTH = 8NH^2: T = 2H = %lld)\n", 2 * h);
    }
    std::filesystem::create_directories(out);
    const std::filesystem::path dir(out);
    sg::study::plot::write_file((dir / "attention_scaling.csv").string(), csv(all));
    sg::study::plot::write_file((dir / "attention_scaling.svg").string(), svg(by_hidden, sg::num_threads()));
    std::printf("wrote %s and %s\n", (dir / "attention_scaling.csv").c_str(), (dir / "attention_scaling.svg").c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attention_scaling: %s\n", e.what());
    return 1;
  }
  return 0;
}
