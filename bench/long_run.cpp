// Long run: trains the tiny encoder for many steps and watches resident
// memory, which must stay flat once the first steps have sized every
// buffer (graphs freed after backward, the caching allocator reusing blocks).
//
//   build/release/bench/long_run [--steps N] [--threads N] [--report-every N] [--warmup N]
//                                [--max-growth PERCENT]
//
// The model and data are train_encoder's (study/encoder_training.hpp):
// vocab 16, batch 64, sequences of 4 to 16 tokens padded to 16, 64 hiddens,
// 4 heads, FFN 128, 2 blocks, dropout 0.1, AdamW with warm-up and cosine
// decay, gradient clipping; every report also evaluates (no-grad, eval mode)
// on 256 fixed sequences. Resident memory is read from /proc/self/statm
// after --warmup steps (the baseline), every --report-every steps and at the
// end. Exits with status 1 when the end is more than --max-growth percent
// (default 5) above the baseline, or when graph nodes outlive a step.
#include <smallgrad.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "study/encoder_training.hpp"

namespace {

// Prints the usage to `out` and returns `status` (0 for --help, 2 for a bad flag).
int usage(const char* prog, FILE* out = stderr, int status = 2) {
  std::fprintf(out,
               "usage: %s [--steps N] [--threads N] [--report-every N] [--warmup N] [--max-growth PERCENT]\n"
               "  --steps N           training steps (default 20000)\n"
               "  --threads N         threads (default 1: the tiny encoder is fastest on one)\n"
               "  --report-every N    steps between memory reports (default 1000)\n"
               "  --warmup N          steps before the baseline is taken (default 200)\n"
               "  --max-growth P      allowed growth over the baseline, percent (default 5)\n",
               prog);
  return status;
}

long positive(const char* s) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  return (end != s && *end == '\0' && v >= 1) ? v : 0;
}

// Resident set size in MiB: the second field of /proc/self/statm, in pages.
double resident_mib() {
  long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  long steps = 20000, threads = 1, every = 1000, warmup = 200, max_growth = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    long* target = arg == "--steps" ? &steps
                   : arg == "--threads" ? &threads
                   : arg == "--report-every" ? &every
                   : arg == "--warmup" ? &warmup
                   : arg == "--max-growth" ? &max_growth
                                           : nullptr;
    if (arg == "--help" || arg == "-h") return usage(argv[0], stdout, 0);
    if (!target || i + 1 == argc || !(*target = positive(argv[++i]))) return usage(argv[0]);
  }
  if (warmup >= steps) {
    std::fprintf(stderr, "long_run: --warmup %ld must be below --steps %ld\n", warmup, steps);
    return 2;
  }
  sg::set_num_threads(static_cast<int>(threads));

  sg::study::Config c;
  c.min_len = 4;
  c.max_len = 16;
  c.dropout = 0.1;
  c.steps = steps;
  sg::manual_seed(0);
  sg::study::Model model(c);
  sg::optim::AdamW opt(model.parameters(), {.lr = c.lr, .weight_decay = c.weight_decay});
  const auto schedule = sg::optim::warmup_cosine_schedule(c.lr, c.warmup, c.steps, c.min_lr);
  const sg::study::EvalSet eval_set = sg::study::make_eval_set(c, c.min_len, c.max_len, 1);
  sg::Generator data(1);
  const int64_t nodes_before = sg::Node::live_count();

  std::printf("long_run: %ld steps of the tiny encoder (batch %lld, seq %lld, hidden %lld, heads %lld, ffn %lld, "
              "%lld blocks), %d thread(s)\n",
              steps, static_cast<long long>(c.batch), static_cast<long long>(c.max_len),
              static_cast<long long>(c.hidden), static_cast<long long>(c.heads), static_cast<long long>(c.ffn),
              static_cast<long long>(c.blocks), sg::num_threads());
  std::printf("before training: resident %.2f MiB\n", resident_mib());
  std::fflush(stdout);

  double baseline = 0, last_loss = 0;
  int64_t leaked_nodes = 0;
  const auto start = std::chrono::steady_clock::now();
  auto at_baseline = start;
  for (long step = 1; step <= steps; ++step) {
    const sg::study::Batch b = sg::study::make_batch(c, c.batch, c.min_len, c.max_len, data);
    {
      const sg::Tensor loss = sg::cross_entropy(model.forward(b.ids, b.valid_lens), b.labels, sg::study::kIgnore);
      opt.zero_grad();
      sg::backward(loss);
      sg::optim::clip_grad_norm(model.parameters(), c.clip);
      opt.set_lr(schedule(opt.step_count()));
      opt.step();
      last_loss = loss.item<double>();
    }
    leaked_nodes = std::max(leaked_nodes, sg::Node::live_count() - nodes_before);
    if (step == warmup) {
      baseline = resident_mib();
      at_baseline = std::chrono::steady_clock::now();
      std::printf("step %6ld (after warm-up): resident %.2f MiB (the baseline), loss %.4f\n", step, baseline,
                  last_loss);
    } else if (step % every == 0 || step == steps) {
      const double accuracy = sg::study::evaluate(model, eval_set);
      const double rss = resident_mib();
      const double per_step =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / static_cast<double>(step);
      char vs_baseline[64] = "";
      if (step > warmup)
        std::snprintf(vs_baseline, sizeof vs_baseline, " (%+.2f%% over the baseline)", 100 * (rss - baseline) / baseline);
      std::printf("step %6ld: resident %.2f MiB%s, loss %.4f, accuracy %.3f, %.1f ms/step\n", step, rss,
                  vs_baseline, last_loss, accuracy, per_step * 1e3);
    }
    std::fflush(stdout);
  }
  const double end_rss = resident_mib();
  const double growth = 100 * (end_rss - baseline) / baseline;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - at_baseline).count();
  std::printf("end: resident %.2f MiB at step %ld, %+.2f%% over the baseline %.2f MiB at step %ld "
              "(%.3f MiB per 1000 steps); graph nodes alive after a step: %lld; %.0f s after warm-up\n",
              end_rss, steps, growth, baseline, warmup,
              (end_rss - baseline) / static_cast<double>(steps - warmup) * 1000,
              static_cast<long long>(leaked_nodes), seconds);
  if (leaked_nodes > 0 || growth > static_cast<double>(max_growth)) {
    std::printf("long_run: FAILED (memory grew more than %ld%%, or nodes outlived a step)\n", max_growth);
    return 1;
  }
  std::printf("long_run: ok, resident memory stayed within %ld%% of the baseline\n", max_growth);
  return 0;
}
