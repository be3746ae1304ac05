// Data-parallel steps across MPI ranks (distributed/mpi_data_parallel.hpp).
#include "distributed/mpi_data_parallel.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/kernels.hpp"
#include "autograd/ops/shape.hpp"
#include "core/tensor.hpp"

namespace sg::distributed {

Shard shard_of(int64_t global_batch, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks) fail("shard_of: rank ", rank, " of ", ranks, " ranks");
  if (global_batch < 1) fail("shard_of: global batch of ", global_batch, " examples (need at least 1)");
  const int64_t base = global_batch / ranks, extra = global_batch % ranks;
  return {.first = rank * base + std::min<int64_t>(rank, extra), .count = base + (rank < extra ? 1 : 0)};
}

void allreduce_sum(std::vector<double>& values, MPI_Comm comm) {
  if (values.empty()) return;
  if (MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM, comm) !=
      MPI_SUCCESS)
    fail("allreduce_sum: MPI_Allreduce of ", values.size(), " values failed");
}

MpiDataParallel::MpiDataParallel(std::vector<Tensor> parameters, MPI_Comm comm, int threads)
    : params_(parameters), comm_(comm), local_(std::move(parameters), threads) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) fail("MpiDataParallel: MPI is not initialised (call MPI_Init first)");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &ranks_);
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].dtype() != float32 && params_[i].dtype() != float64)
      fail("MpiDataParallel: parameter ", i, " is ", params_[i].dtype(), "; gradients are summed as float32 or float64");
  // Every rank must hold the same parameters: the same count and sizes.
  std::vector<double> sizes = {static_cast<double>(params_.size()), static_cast<double>(values_per_step())};
  std::vector<double> mine = sizes;
  MPI_Allreduce(MPI_IN_PLACE, sizes.data(), 2, MPI_DOUBLE, MPI_MAX, comm_);
  if (sizes != mine)
    fail("MpiDataParallel: rank ", rank_, " has ", mine[0], " parameters of ", mine[1],
         " values, another rank ", sizes[0], " of ", sizes[1], ": every rank needs the same model");
}

int64_t MpiDataParallel::values_per_step() const {
  int64_t n = 0;
  for (const Tensor& p : params_) n += p.numel();
  return n;
}

double MpiDataParallel::backward(int64_t global_batch, const parallel::MicroBatchLoss& loss_of) {
  const Shard shard = shard_of(global_batch, rank_, ranks_);
  double loss = 0;
  std::vector<Tensor> grads(params_.size());
  if (shard.count > 0) grads = local_.gradients(shard.count, loss_of, &loss, shard.first);
  // One buffer for every gradient, in the parameters' dtype (float32 halves
  // the bytes on the wire), one MPI_Allreduce; the loss in a second, tiny one.
  const bool single = std::all_of(params_.begin(), params_.end(), [](const Tensor& p) { return p.dtype() == float32; });
  const DType wire = single ? float32 : float64;
  const int64_t n = values_per_step();
  Tensor buffer = zeros({n}, wire);
  int64_t at = 0;
  for (size_t p = 0; p < params_.size(); ++p) {
    const int64_t size = params_[p].numel();
    if (grads[p].defined()) {
      Tensor part = slice(buffer, 0, at, at + size);  // a view into buffer
      kernel::copy_(part, kernel::reshape(grads[p].dtype() == wire ? grads[p] : kernel::to(grads[p], wire), {size}));
    }
    at += size;
  }
  void* data = single ? static_cast<void*>(buffer.data<float>()) : static_cast<void*>(buffer.data<double>());
  if (n > 0 && MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), single ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM,
                             comm_) != MPI_SUCCESS)
    fail("MpiDataParallel: MPI_Allreduce of ", n, " gradient values failed");
  std::vector<double> total = {loss};
  allreduce_sum(total, comm_);
  at = 0;
  for (size_t p = 0; p < params_.size(); ++p) {
    const int64_t size = params_[p].numel();
    const Tensor part = kernel::reshape(slice(buffer, 0, at, at + size), params_[p].shape());
    at += size;
    const Tensor g = clone(params_[p].dtype() == wire ? part : kernel::to(part, params_[p].dtype()));
    Tensor current = params_[p].grad();
    if (current.defined())
      kernel::add_(current, g);
    else
      params_[p].set_grad(g);
  }
  return total[0];
}

}  // namespace sg::distributed
