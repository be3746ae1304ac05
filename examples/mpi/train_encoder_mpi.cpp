// Trains train_encoder's encoder data-parallel across processes, over MPI
// (docs/distributed.md):
//
//   mpirun -np 2 build/release/examples/train_encoder_mpi --task sort --steps 200 --out out/mpi
//   mpirun -np 4 --hostfile hosts build/release/examples/train_encoder_mpi ...   (several machines)
//
// Every rank builds the same model from the same seed and generates the same
// global batch each step (--batch sequences) from the same data generator;
// it runs only its shard of the batch (consecutive sequences), on --threads
// threads, and the gradients are summed over the ranks by MPI_Allreduce
// before every rank steps the same optimizer. So the run follows the
// one-process run with the same global batch (`--threads 1` without mpirun,
// or train_encoder), up to floating-point rounding. Rank 0 alone prints and
// writes <out>/curve.csv and <out>/model.safetensors.
//
// Built only with MPI (CMake option SMALLGRAD_MPI, Debian's libopenmpi-dev).
// An error on any rank ends every rank (MPI_Abort) with status 1 (2 for
// usage errors).
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../cli.hpp"
#include "core/random.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"
#include "distributed/mpi_data_parallel.hpp"
#include "checkpoint/checkpoint.hpp"
#include "study/encoder_training.hpp"
#include "nn/positional.hpp"

namespace {

using sg::study::Config;

std::string curve_csv(const sg::study::Result& r) {
  std::ostringstream f;
  f.precision(12);
  f << "step,loss,train_batch_accuracy,eval_accuracy,grad_norm\n";
  for (const auto& p : r.curve)
    f << p.step << ',' << p.loss << ',' << p.train_acc << ',' << p.eval_acc << ',' << p.grad_norm << '\n';
  return f.str();
}

int train_distributed(Config c, int threads, bool float64, const std::string& out_dir) {
  sg::distributed::MpiDataParallel* dp_ptr = nullptr;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::unique_ptr<examples::Outputs> out;
  if (rank == 0) {
    out = std::make_unique<examples::Outputs>(out_dir, "--out");
    out->expect("curve.csv");
    out->expect("model.safetensors");
  }
  sg::manual_seed(c.seed);  // the same initial parameters on every rank
  sg::study::Model model(c);
  if (float64) model.to(sg::float64);
  sg::distributed::MpiDataParallel dp(model.parameters(), MPI_COMM_WORLD, threads);
  dp_ptr = &dp;
  if (rank == 0)
    std::cout << "training " << c.task << " " << sg::nn::positional_name(c.positional) << " on " << ranks
              << " rank(s) x " << threads << " thread(s): " << model.parameter_count() << " parameters ("
              << dp.values_per_step() << " gradient values summed per step), global batch " << c.batch << "\n";
  // A step: this rank's shard of the global batch, summed over the ranks;
  // the accuracy counts are summed with them.
  const sg::study::StepFn step = [&](const sg::study::Model& m, const sg::study::Batch& b, bool count_right) {
    sg::study::StepOutcome done;
    const int64_t labelled = sg::study::labelled_count(b.labels);
    std::vector<int64_t> right(static_cast<size_t>(threads), 0);
    done.loss = dp_ptr->backward(b.ids.shape()[0], [&](const sg::parallel::MicroBatch& mb) {
      return sg::study::micro_batch_loss(m, b, mb, labelled,
                                            count_right ? &right[static_cast<size_t>(mb.index)] : nullptr);
    });
    if (count_right) {
      std::vector<double> counts = {0.0};
      for (int64_t r : right) counts[0] += static_cast<double>(r);
      sg::distributed::allreduce_sum(counts, MPI_COMM_WORLD);
      done.right = static_cast<int64_t>(counts[0]);
      done.labelled = sg::study::labelled_count(b.scored);
    }
    return done;
  };
  const sg::study::Progress progress = [&](int64_t s, int64_t steps, double loss, double acc, double tps, double) {
    if (rank == 0)
      std::printf("step %lld/%lld  loss %.6f  acc %.3f  %.0f tokens/s\n", static_cast<long long>(s),
                  static_cast<long long>(steps), loss, acc, tps * ranks);
    std::fflush(stdout);
  };
  const sg::study::Result r = sg::study::train(model, c, progress, &examples::g_stop, step);
  if (rank == 0) {
    out->write("curve.csv", curve_csv(r));
    sg::checkpoint::save(out->stage("model.safetensors"), model);
    out->commit();
    std::printf("accuracy on training lengths %.3f, on longer lengths %.3f, %.1f s\nwrote %s/{curve.csv,model.safetensors}\n",
                r.acc_train_lengths, r.acc_longer, r.seconds, out->dir().c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  // Only the main thread calls MPI; the workers compute.
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  examples::Flags flags{"Train the encoder of train_encoder data-parallel over MPI ranks (mpirun -np N ...)."};
  Config c;
  std::string positional = "sinusoidal", out = "out/mpi";
  int threads = 1;
  int64_t seed = 0;
  bool float64 = false;
  flags.choice("--task", c.task, "the synthetic task to learn", sg::study::task_names());
  flags.choice("--positional", positional, "how the model is told where each token is",
               sg::nn::positional_names());
  flags.whole("--steps", c.steps, "training steps", 1, 10000000);
  flags.whole("--batch", c.batch, "global batch: sequences per step over all ranks", 1, 65536);
  flags.whole("--eval-every", c.eval_every, "steps between evaluations", 1, 10000000);
  flags.number("--dropout", c.dropout, "dropout probability", 0, true, 0.99);
  flags.whole("--seed", seed, "random seed (model, data)", 0, 1000000000);
  flags.whole("--threads", threads, "threads per rank", 1, sg::kMaxThreads);
  flags.flag("--float64", float64,
             "train in float64: runs on any number of ranks then agree to many digits (in float32 "
             "the rounding of the sums' order grows over the steps)");
  flags.folder("--out", out, "rank 0 writes <out>/curve.csv and <out>/model.safetensors");
  const int status = examples::run(flags, argc, argv, [&]() -> int {
    c.seed = static_cast<uint64_t>(seed);
    c.positional = sg::nn::parse_positional(positional);
    sg::set_num_threads(threads);
    return train_distributed(c, threads, float64, out);
  });
  // A rank that failed cannot leave the others waiting in MPI_Allreduce.
  if (status != 0 && ranks > 1) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
  return status;
}
