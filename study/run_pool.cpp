// What study/run_pool.hpp declares.
#include "study/run_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "core/runtime.hpp"

namespace sg::study {

Progress progress_line(const std::string& label) {
  const bool tty = isatty(2);
  return [label, tty](int64_t step, int64_t steps, double loss, double acc, double tps, double left) {
    std::fprintf(stderr, "%s%s step %lld/%lld  loss %.4f  acc %.3f  %.0f tokens/s  %.0f s left%s",
                 tty ? "\r" : "", label.c_str(), static_cast<long long>(step), static_cast<long long>(steps),
                 loss, acc, tps, left, tty ? "   " : "\n");
    if (tty && step == steps) std::fprintf(stderr, "\n");
  };
}

namespace {

std::string duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%ld s", s);
  else
    std::snprintf(buf, sizeof buf, "%ld min %02ld s", s / 60, s % 60);
  return buf;
}

// Overall progress of a comparison: runs done of N, elapsed, an estimate of
// the time left (from the steps done so far, over every run in flight). On a
// terminal one line rewritten in place, with each finished run's result
// above it; otherwise a plain line per run. Runs side by side report from
// their own threads: every call takes a lock.
class PoolProgress {
 public:
  // steps[k - 1]: the training steps of run k.
  explicit PoolProgress(std::vector<int64_t> steps)
      : runs_(static_cast<int64_t>(steps.size())), steps_(std::move(steps)), tty_(isatty(2)),
        step_of_(steps_.size(), 0) {}
  // During run k (1-based), at `step`.
  void at(int64_t k, const std::string& label, int64_t step) {
    std::lock_guard<std::mutex> lock(mu_);
    step_of_[static_cast<size_t>(k - 1)] = step;
    if (!tty_) return;
    std::fprintf(stderr, "\r[run %lld/%lld] %-33s step %lld/%lld  %s elapsed, about %s left   ",
                 static_cast<long long>(k), static_cast<long long>(runs_), label.c_str(),
                 static_cast<long long>(step), static_cast<long long>(steps_[static_cast<size_t>(k - 1)]),
                 duration(elapsed()).c_str(),
                 duration(left()).c_str());
    std::fflush(stderr);
  }
  void finished(int64_t k, const std::string& label, const Result& r) {
    std::lock_guard<std::mutex> lock(mu_);
    step_of_[static_cast<size_t>(k - 1)] = steps_[static_cast<size_t>(k - 1)];
    const std::string to95 = r.steps_to_95 < 0 ? "never" : "at step " + std::to_string(r.steps_to_95);
    std::fprintf(stderr, "%s[run %lld/%lld] %-33s acc %.3f  longer %.3f  past %.3f  95%% %s  %.1f s;  %s elapsed, about %s left%s\n",
                 tty_ ? "\r" : "", static_cast<long long>(k), static_cast<long long>(runs_), label.c_str(),
                 r.acc_train_lengths, r.acc_longer, r.acc_past_train, to95.c_str(),
                 r.seconds, duration(elapsed()).c_str(), duration(left()).c_str(), tty_ ? "   " : "");
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  double left() const {
    double done = 0, total = 0;
    for (int64_t s : step_of_) done += static_cast<double>(s);
    for (int64_t s : steps_) total += static_cast<double>(s);
    return done > 0 ? elapsed() / done * (total - done) : 0;
  }
  int64_t runs_;
  std::vector<int64_t> steps_;
  bool tty_;
  std::mutex mu_;
  std::vector<int64_t> step_of_;  // steps done by each run
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

void use_generator_for_dropout(nn::Module& m, const std::shared_ptr<Generator>& gen) {
  if (auto* d = dynamic_cast<nn::Dropout*>(&m)) d->generator = gen;
  for (const auto& [name, child] : m.named_children()) use_generator_for_dropout(*child, gen);
}

void run_pool(const std::vector<size_t>& order, const std::function<void(size_t i, const std::atomic<bool>& failed)>& run) {
  std::atomic<size_t> next{0};
  std::exception_ptr error;  // the first to fail, in time: the others stop because of it
  std::mutex error_mu;
  std::atomic<bool> failed{false};
  auto worker = [&] {
    ThreadCountGuard one_thread(1);
    for (size_t n; !failed && (n = next++) < order.size();) {
      try {
        run(order[n], failed);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  const size_t side_by_side = std::min<size_t>(order.size(), static_cast<size_t>(num_threads()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < side_by_side; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

void run_side_by_side(const std::vector<Job*>& jobs, const std::atomic<bool>* stop) {
  std::vector<int64_t> steps;
  for (Job* job : jobs) {
    manual_seed(job->c.seed);
    job->model = std::make_unique<Model>(job->c);
    use_generator_for_dropout(*job->model, std::make_shared<Generator>(default_generator()));
    steps.push_back(job->c.steps);
  }
  PoolProgress progress(steps);
  std::vector<size_t> order(jobs.size());  // the order runs start in
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps[a] > steps[b]; });
  run_pool(order, [&](size_t i, const std::atomic<bool>& failed) {
    Job& job = *jobs[i];
    const int64_t k = static_cast<int64_t>(i) + 1;
    progress.at(k, job.label, 0);
    job.r = train(
        *job.model, job.c,
        [&](int64_t step, int64_t, double, double, double, double) {
          if (failed) fail("stopped: another run failed");
          progress.at(k, job.label, step);
        },
        stop);
    progress.finished(k, job.label, job.r);
    if (!job.keep_model) job.model.reset();
  });
}

}  // namespace sg::study
