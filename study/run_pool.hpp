#pragma once
// Running the study's trainings: a live progress line for one run, and the
// pool that runs a comparison's trainings side by side.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "study/encoder_training.hpp"

namespace sg::study {

// One live line on stderr when it is a terminal (rewritten in place), a line
// per report otherwise.
Progress progress_line(const std::string& label);

// One training of a comparison, and what is kept of it.
struct Job {
  Config c;
  std::string label;
  bool keep_model = false;  // the first seed of each task and encoding: its positions are drawn
  Result r;
  std::unique_ptr<Model> model;  // built before training; kept after it if keep_model
};

// Runs the trainings side by side, each on one thread of its own
// (sg::ThreadCountGuard(1)), as many at once as the library's thread count
// (the free cores, or --threads): independent trainings are the parallelism,
// and a small model's step gains little from more threads. Every model is
// built first, in job order, on this thread, from the default generator
// seeded with its seed, and its dropouts then draw from a copy of that
// generator where construction left it: each training draws exactly what it
// drew when the runs went one after another on the default generator, so the
// results are the same bits however many run at once. They land in job
// order. The first error stops the others and is rethrown once all have
// stopped; so does `stop` becoming true (a signal handler sets it).
// The runs with the most steps start first, so that the last to finish is a
// short one. Progress goes to stderr: on a terminal one line rewritten in
// place (runs done of N, elapsed, an estimate of the time left) with each
// finished run's result above it, otherwise a plain line per finished run.
void run_side_by_side(const std::vector<Job*>& jobs, const std::atomic<bool>* stop);

// Every Dropout of `m` draws from `gen` (the default generator otherwise).
void use_generator_for_dropout(nn::Module& m, const std::shared_ptr<Generator>& gen);

// The pool both studies run on: run(i, failed) for each i of `order`, in
// that order, on up to num_threads() threads at once, each thread's ops on
// one thread (ThreadCountGuard(1)). The first exception, in time, sets
// `failed` (a run in progress should stop when it sees it; no new run
// starts) and is rethrown once every thread has stopped.
void run_pool(const std::vector<size_t>& order, const std::function<void(size_t i, const std::atomic<bool>& failed)>& run);

}  // namespace sg::study
