// Data-parallel steps (parallel/data_parallel.hpp): persistent workers, one
// micro-batch each, gradients summed in micro-batch order.
#include "parallel/data_parallel.hpp"

#include <algorithm>
#include <utility>

#include "autograd/engine.hpp"
#include "autograd/profiler.hpp"
#include "core/error.hpp"
#include "core/kernels.hpp"
#include "core/runtime.hpp"
#include "nn/basic.hpp"

namespace sg::parallel {
namespace {

// A step's dropout keys, shared by its micro-batches: the k-th dropout call
// of each micro-batch takes the key the whole batch's k-th call would draw.
// The first micro-batch to get there draws it from the generator, the
// others read it; so the keys are drawn in call order, from the generators
// the whole batch's forward draws from, whichever thread comes first.
class StepKeys {
 public:
  uint64_t key(size_t k, Generator& gen) {
    std::lock_guard<std::mutex> lock(mu_);
    if (k == keys_.size()) keys_.emplace_back(&gen, gen.next_u64());  // first here: draw, in call order
    if (k > keys_.size() || keys_[k].first != &gen)
      fail("dropout: call ", k, " of a data-parallel micro-batch ",
           k > keys_.size() ? "came before the calls ahead of it had keys"
                            : "uses another generator than the same call of the first micro-batch",
           ": every micro-batch must run the same dropouts in the same order");
    return keys_[k].second;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<const Generator*, uint64_t>> keys_;
};

}  // namespace

DataParallel::DataParallel(std::vector<Tensor> parameters, int threads)
    : params_(std::move(parameters)), threads_(threads == 0 ? num_threads() : threads) {
  if (threads_ < 1 || threads_ > kMaxThreads)
    fail("DataParallel: need 0 (automatic) or 1 to ", kMaxThreads, " threads, got ", threads);
  for (size_t i = 0; i < params_.size(); ++i)
    if (!params_[i].defined() || !params_[i].is_leaf() || !params_[i].requires_grad())
      fail("DataParallel: parameter ", i, " is not a leaf tensor that requires grad");
  for (int w = 1; w < threads_; ++w) workers_.emplace_back([this, w] { work(w); });
}

DataParallel::~DataParallel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

std::vector<MicroBatch> DataParallel::split(int64_t batch) const {
  if (batch < 1) fail("DataParallel: batch of ", batch, " examples (need at least 1)");
  const int n = static_cast<int>(std::min<int64_t>(threads_, batch));
  std::vector<MicroBatch> out;
  int64_t first = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t count = batch / n + (i < batch % n ? 1 : 0);
    out.push_back({.index = i, .of = n, .first = first, .count = count});
    first += count;
  }
  return out;
}

// Micro-batch i on the calling thread: its forward and backward on one
// thread, the gradients kept apart (sg::grad), errors kept for the caller.
void DataParallel::run_micro_batch(size_t i) {
  try {
    ThreadCountGuard one_thread(1);
    AnomalyModeGuard anomaly(anomaly_);
    const MicroBatch& m = batches_[i];
    const Tensor loss = (*loss_of_)(m);
    if (!loss.defined())
      fail("DataParallel: the loss of micro-batch ", m.index, " (examples ", m.first, "..", m.first + m.count - 1,
           ") is an undefined tensor, not a scalar");
    if (loss.numel() != 1)
      fail("DataParallel: the loss of micro-batch ", m.index, " (examples ", m.first, "..", m.first + m.count - 1,
           ") has shape ", loss.shape(), ", not a scalar");
    losses_[i] = loss.item<double>();
    grads_[i] = loss.requires_grad() ? grad(loss, params_) : std::vector<Tensor>(params_.size());
  } catch (...) {
    errors_[i] = std::current_exception();
  }
}

void DataParallel::work(int worker) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    if (static_cast<size_t>(worker) < batches_.size()) run_micro_batch(static_cast<size_t>(worker));
    {
      std::lock_guard<std::mutex> lock(mu_);
      --pending_;
    }
    done_.notify_one();
  }
}

std::vector<Tensor> DataParallel::gradients(int64_t batch, const MicroBatchLoss& loss_of, double* loss,
                                            int64_t first_example) {
  if (!loss_of) fail("DataParallel: no loss function given");
  if (first_example < 0) fail("DataParallel: first example ", first_example, " is negative");
  if (profiling())
    fail("DataParallel: the op profiler is on (a ProfileGuard lives); it times the ops of one "
         "thread at a time and cannot run beside the workers: profile a whole-batch step instead");
  StepKeys keys;
  std::vector<nn::DropoutKeys> dropout_keys;  // one per micro-batch
  {
    std::lock_guard<std::mutex> lock(mu_);
    batches_ = split(batch);
    dropout_keys.resize(batches_.size());
    for (size_t i = 0; i < batches_.size(); ++i) {
      MicroBatch& m = batches_[i];
      m.first += first_example;
      dropout_keys[i] = {.first = m.first,
                         .count = m.count,
                         .key = [&keys](size_t k, Generator& gen) { return keys.key(k, gen); }};
      m.dropout_keys = &dropout_keys[i];
    }
    loss_of_ = &loss_of;
    anomaly_ = anomaly_mode();
    grads_.assign(batches_.size(), {});
    losses_.assign(batches_.size(), 0.0);
    errors_.assign(batches_.size(), nullptr);
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  run_micro_batch(0);
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);

  // Sums in micro-batch order, on this thread alone (see the header: an
  // OpenMP region here would leave spinning threads on the workers' cores).
  ThreadCountGuard one_thread(1);
  double total = 0;
  for (double l : losses_) total += l;
  if (loss) *loss = total;
  std::vector<Tensor> sums(params_.size());
  for (size_t p = 0; p < params_.size(); ++p)
    for (auto& g : grads_) {
      if (!g[p].defined()) continue;
      if (!sums[p].defined())
        sums[p] = g[p];  // sg::grad gives each gradient a buffer of its own
      else
        kernel::add_(sums[p], g[p]);
    }
  grads_.clear();
  return sums;
}

double DataParallel::backward(int64_t batch, const MicroBatchLoss& loss_of) {
  double loss = 0;
  const std::vector<Tensor> sums = gradients(batch, loss_of, &loss);
  ThreadCountGuard one_thread(1);
  for (size_t p = 0; p < params_.size(); ++p) {  // into .grad, as backward() adds into it
    if (!sums[p].defined()) continue;
    Tensor current = params_[p].grad();
    if (current.defined())
      kernel::add_(current, sums[p]);
    else
      params_[p].set_grad(sums[p]);
  }
  return loss;
}

}  // namespace sg::parallel
