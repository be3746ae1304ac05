#pragma once
// Data-parallel training steps on one machine: one batch, split into
// micro-batches of consecutive examples, each run forward and backward on a
// thread of its own with its own graph; the micro-batches' gradients summed
// in a fixed order (micro-batch 0, 1, 2, ...) and added into the
// parameters' .grad, as one backward() of the whole batch would. The
// optimizer then steps once, as usual.
//
//   sg::parallel::DataParallel dp(model.parameters());    // sg::num_threads() workers
//   sg::ThreadCountGuard one_thread(1);              // the rest of the step on this thread
//   opt.zero_grad();
//   const double loss = dp.backward(batch, [&](const sg::parallel::MicroBatch& m) {
//     const sg::Tensor logits = model.forward(sg::slice(ids, 0, m.first, m.first + m.count), m.dropout_keys);
//     // this micro-batch's share of the batch's mean loss
//     return sg::cross_entropy(logits, sg::slice(labels, 0, m.first, m.first + m.count)) *
//            (double(m.count) / double(batch));
//   });
//   opt.step();
//
// Why: each op of a small model's step does a few microseconds of work, and
// parallelising inside each op pays a parallel region's start and barrier
// hundreds of times per step. Here each worker runs its micro-batch's whole
// forward and backward on one thread (its ops never start a parallel
// region: sg::ThreadCountGuard(1)), and the threads meet once per step.
//
// What equals what:
//   * loss and gradients are the whole batch's up to floating-point rounding
//     (summed in another order), for any number of threads;
//   * the same thread count gives the same bits on every run: the split
//     and the order of the sums depend on the thread count only, never on
//     timing;
//   * dropout masks are the whole batch's when the step's function passes
//     m.dropout_keys down to the model's forward (nn/basic.hpp, DropoutKeys):
//     a function of the example, not of the thread that ran it, and the
//     generators advance exactly as in the whole batch's forward. (Without
//     them each micro-batch draws keys of its own: masks still, but not the
//     whole batch's.)
//
// The rest of the step (optimizer, clipping, evaluation) belongs on one
// thread too, as above: after every OpenMP parallel region libgomp's idle
// threads spin for milliseconds (GOMP_SPINCOUNT) on the cores the workers
// need next; one Adam step on two threads made the medium benchmark's
// data-parallel step use 2.5 times the CPU time (docs/results.md,
// "Data-parallel steps"). The sum of the gradients runs on one thread.
//
// Threads: the workers are started once, by the constructor, and wait
// between steps. The step's function runs on every worker at once: it may
// read shared state (the model's parameters, the batch) and must not write
// any (no optimizer step, no in-place change of shared tensors) — the
// contract of docs/architecture.md, "Thread safety". Not safe: two
// backward() calls on one DataParallel at once.
// The op profiler (autograd/profiler.hpp) times one thread: backward()
// refuses to run while it is on.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/tensor.hpp"

namespace sg::nn {
struct DropoutKeys;  // nn/basic.hpp
}

namespace sg::parallel {

// Examples [first, first + count) of the batch, the index-th of `of` micro-batches.
struct MicroBatch {
  int index = 0, of = 1;
  int64_t first = 0, count = 0;
  // During a step: this micro-batch's dropout keys, to pass to the model's
  // forward (the whole batch's keys, its examples); null in split()'s list.
  nn::DropoutKeys* dropout_keys = nullptr;
};

// Builds a micro-batch's graph and returns its share of the batch's loss: a
// scalar, such that the shares of all micro-batches add up to the whole
// batch's loss (for a mean over the batch: the micro-batch's sum divided by
// the whole batch's count).
using MicroBatchLoss = std::function<Tensor(const MicroBatch&)>;

class DataParallel {
 public:
  // parameters: the leaves whose gradients are summed (model.parameters()).
  // threads: workers, 1 .. kMaxThreads; 0 takes sg::num_threads() now.
  explicit DataParallel(std::vector<Tensor> parameters, int threads = 0);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Splits examples [0, batch) into min(threads, batch) micro-batches of
  // consecutive examples (sizes differing by at most one, larger first), runs
  // loss_of on each, on its own thread, then backward of each share; adds
  // the sum of the micro-batches' gradients into each parameter's .grad.
  // Returns the sum of the shares (in micro-batch order): the batch's loss.
  // If any micro-batch throws, no .grad changes and the first error (in
  // micro-batch order) is rethrown.
  double backward(int64_t batch, const MicroBatchLoss& loss_of);

  // The same step, the summed gradients returned (one per parameter,
  // undefined where none flowed) instead of added into .grad, and the loss
  // in *loss. The micro-batches are examples [first_example, first_example +
  // batch) of a larger batch (their MicroBatch::first counts from
  // first_example), whose dropout masks they take: a process of a
  // distributed step (docs/distributed.md) runs its shard of the global batch
  // this way, then sums the gradients across processes.
  std::vector<Tensor> gradients(int64_t batch, const MicroBatchLoss& loss_of, double* loss,
                                int64_t first_example = 0);

  int threads() const { return threads_; }
  // The micro-batches backward(batch, ...) runs.
  std::vector<MicroBatch> split(int64_t batch) const;

 private:
  void work(int worker);  // a worker thread's loop
  void run_micro_batch(size_t i);

  std::vector<Tensor> params_;
  int threads_;
  std::vector<std::thread> workers_;  // threads_ - 1 of them; the caller runs micro-batch 0

  // The step in flight, handed to the workers under mu_.
  std::mutex mu_;
  std::condition_variable start_, done_;
  uint64_t generation_ = 0;  // steps started
  int pending_ = 0;          // workers still running this step
  bool stopping_ = false;
  const MicroBatchLoss* loss_of_ = nullptr;
  std::vector<MicroBatch> batches_;
  bool anomaly_ = false;  // the caller's anomaly mode, for every worker
  std::vector<std::vector<Tensor>> grads_;  // per micro-batch, one per parameter
  std::vector<double> losses_;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace sg::parallel
