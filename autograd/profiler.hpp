#pragma once
// Where a training step's time goes, op by op. Off by default; one boolean
// test per op while off.
//
// While a ProfileGuard lives (any thread's ops; profile one thread at a time):
//   * forward: record() charges the time since the previous event to the op
//     that just computed its result. Code between two ops (a module's glue,
//     shape checks) is charged to the next op, so the forward is approximate
//     to a few microseconds per op.
//   * backward: each node's backward is timed on its own and charged to
//     "<op> backward"; summing gradients between nodes to "sum gradients".
//   * profile_mark(name) charges the time since the previous event to name:
//     for work that records nothing, such as an optimizer step.
//
//   sg::ProfileGuard profile;          // starts the clock
//   ... steps ...
//   for (const sg::OpProfile& p : sg::profile_report()) ...
//
// bench/train_step --profile prints such a table for the encoder.
#include <cstdint>
#include <string>
#include <vector>

namespace sg {

struct OpProfile {
  std::string name;
  int64_t calls = 0;
  double seconds = 0;
};

bool profiling();
// Charges the time since the last event to `what` (no-op while off).
void profile_mark(const char* what);
// Same, charged to "<op> backward".
void profile_mark_backward(const char* op);
// Totals since profiling started or was reset, largest first.
std::vector<OpProfile> profile_report();
void profile_reset();

class ProfileGuard {
 public:
  ProfileGuard();  // turns profiling on, resets the totals and the clock
  ~ProfileGuard();
  ProfileGuard(const ProfileGuard&) = delete;
  ProfileGuard& operator=(const ProfileGuard&) = delete;
};

}  // namespace sg
