#pragma once
// Data-parallel steps across processes, over MPI (docs/distributed.md): the
// same step as parallel::DataParallel, with the gradients also summed over the
// processes (ranks) of an MPI communicator by MPI_Allreduce. Built only with
// MPI (the CMake option SMALLGRAD_MPI and Debian's libopenmpi-dev): a
// separate library, smallgrad::mpi; nothing else in smallgrad needs MPI.
//
//   MPI_Init(&argc, &argv);
//   sg::distributed::MpiDataParallel dp(model.parameters());  // MPI_COMM_WORLD
//   ...every rank builds the same model from the same seed, and each step
//   the same global batch (or at least the rows of its shard)...
//   opt.zero_grad();
//   double loss = dp.backward(global_batch, loss_of);  // loss_of as for parallel::DataParallel
//   opt.step();                                         // the same update on every rank
//
// Each rank runs its shard of the global batch (consecutive examples,
// shard_of) as micro-batches on its own threads; loss_of receives global
// example numbers, so dropout masks are those of the whole global batch in
// one process. Then one MPI_Allreduce sums every parameter's gradient (all
// packed into one buffer) and the loss over the ranks, and every rank adds
// the same sum into its .grad: the ranks' parameters stay identical as long
// as each starts from the same values and steps the same optimizer.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "parallel/data_parallel.hpp"

namespace sg::distributed {

// Examples [first, first + count) of a global batch: rank `rank` of `ranks`'s
// share (sizes differ by at most one, larger first; count may be 0 when the
// batch has fewer examples than there are ranks).
struct Shard {
  int64_t first = 0, count = 0;
};
Shard shard_of(int64_t global_batch, int rank, int ranks);

// Sums `values` element by element over the ranks of comm, in place, on every rank.
void allreduce_sum(std::vector<double>& values, MPI_Comm comm);

class MpiDataParallel {
 public:
  // parameters: every rank's model's, in the same order. threads: this
  // rank's workers (0: sg::num_threads()).
  explicit MpiDataParallel(std::vector<Tensor> parameters, MPI_Comm comm = MPI_COMM_WORLD, int threads = 0);

  // One step's forward and backward over a global batch: this rank's shard
  // on its threads, the gradients summed over all ranks and added into
  // .grad on every rank. Returns the global batch's loss (the sum of every
  // micro-batch's share on every rank). Every rank must call it, with the
  // same global_batch; an error on one rank leaves the others waiting in
  // MPI, so a program ends with MPI_Abort on any error (the example does).
  double backward(int64_t global_batch, const parallel::MicroBatchLoss& loss_of);

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  MPI_Comm comm() const { return comm_; }
  // Parameter values communicated per step: the number of gradient values summed.
  int64_t values_per_step() const;

 private:
  std::vector<Tensor> params_;
  MPI_Comm comm_;
  int rank_ = 0, ranks_ = 1;
  parallel::DataParallel local_;
};

}  // namespace sg::distributed
