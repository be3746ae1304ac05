#pragma once
// What every example program shares, written once (examples/cli.cpp,
// compiled once into the library examples_cli that every example links):
//
//   * Flags: an example's flags, each declared in one line with its bounds
//     or its choices. Errors a student can read: the error on one line
//     naming the flag, then one line pointing at --help (not the whole
//     help); whole numbers and numbers checked with readable bounds; an
//     unknown flag answered with the nearest known one; --help showing every
//     flag's description and default. Underneath is CLI11, which only
//     examples/cli.cpp compiles: a program that declares its flags here
//     does not generate CLI11's code again. (train_encoder, whose flags
//     exclude and need each other, uses CLI11 itself: examples/cli11.hpp.)
//   * one main guard, run(): every exception ends as one line "error: ..."
//     on stderr, exit status 2 for usage errors and 1 for everything else;
//     SIGINT, SIGTERM and SIGHUP stop long loops at their next step (exit 1,
//     nothing half-written, one line saying what was kept), SIGPIPE is
//     ignored, so no program ends on a signal;
//   * Outputs: the files of a run written under temporary names and moved
//     into place together at the end, after the output folder was checked
//     before any work, so a failed or interrupted run leaves the folder as
//     it found it.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace sg::study {
struct Seq2SeqConfig;
}

namespace examples {

// Flags that parse but do not fit together (or with a checkpoint): exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- signals ----

// Becomes true when SIGINT, SIGTERM or SIGHUP arrives (run() sets the
// handlers up); long loops stop at their next step.
extern std::atomic<bool> g_stop;

// Thrown where a long loop notices a stop signal: "stopped by SIGTERM".
struct Stopped : std::runtime_error {
  Stopped();
};
void check_stop();  // throws Stopped once a stop signal has arrived

// What a stopped run leaves behind, for run()'s message after "stopped by
// SIGINT; " ("the model at iteration 2000 kept in out/gpt; the final sample
// was cut"). Until a program says otherwise it is "no output was written or
// changed", which Outputs makes true; a program that writes anything
// outside Outputs (a checkpoint during training, text on stdout) says so.
void set_stop_note(const std::string& note);

// ---- flags ----

// A program's flags: each call adds one, bound to a variable that holds its
// default (shown by --help) and receives the value given.
//
//   examples::Flags flags{"What the program does."};
//   int64_t steps = 300;
//   flags.whole("--steps", steps, "training steps", 1, 1000000);
//   return examples::run(flags, argc, argv, [&] { return train(steps); });
class Flags {
 public:
  explicit Flags(const std::string& description);
  ~Flags();
  Flags(const Flags&) = delete;
  Flags& operator=(const Flags&) = delete;

  // A whole number in lo..hi: "'abc' is not a whole number", "0 is out of range (expected 1..100)".
  void whole(const std::string& name, int64_t& value, const std::string& help, int64_t lo, int64_t hi);
  void whole(const std::string& name, int& value, const std::string& help, int lo, int hi);
  // A number x with lo < x (or lo <= x when `lo_included`) and x <= hi (hi may be infinity).
  void number(const std::string& name, double& value, const std::string& help, double lo, bool lo_included,
              double hi);
  // Any text.
  void text(const std::string& name, std::string& value, const std::string& help);
  // One of `choices`.
  void choice(const std::string& name, std::string& value, const std::string& help,
              const std::vector<std::string>& choices);
  // A folder name: anything but empty (an empty --out would write into /).
  void folder(const std::string& name, std::string& value, const std::string& help);
  // On when given (no value).
  void flag(const std::string& name, bool& value, const std::string& help);
  // --threads: 0 (the default) leaves the library's automatic count; the
  // body calls apply_threads(threads).
  void threads(int& threads);

  // Whether the flag was on the command line (its default otherwise).
  bool given(const std::string& name) const;

  CLI::App& app();  // the CLI11 parser underneath, for run()

 private:
  std::unique_ptr<CLI::App> app_;
};

// Parses the flags, runs body() and turns every way it can end into an exit
// status: 0 (or what body returns), 2 for usage errors, 1 for everything else.
int run(Flags& flags, int argc, char** argv, const std::function<int()>& body);

// --threads N sets the library's count; 0 leaves the automatic one.
void apply_threads(int threads);

// The model and training flags both encoder-decoder examples take
// (translate_numbers, pronounce), bound to c's fields: --steps, --batch,
// --lr, --min-lr, --warmup, --dropout, --weight-decay, --hidden, --ffn,
// --heads, --blocks, --pre-norm, --beam. `pairs` names a batch's items in
// --batch's help ("sentence pairs").
void seq2seq_flags(Flags& flags, sg::study::Seq2SeqConfig& c, const std::string& pairs);

// The encoder-decoder examples' training line on stderr, "step 300/2000
// loss 0.4213  <score> 0.512  41 s left": rewritten in place on a
// terminal, a line per report otherwise. `score` names the held-out score
// ("held-out exact match").
std::function<void(int64_t, int64_t, double, double, double, double)> seq2seq_progress(const std::string& score);

// ---- outputs ----

// The files of one run, staged in their folder under temporary names and
// renamed into place together by commit(); the destructor removes whatever
// was not committed. The constructor checks the folder before any work:
// it must be (or become) a writable folder. `flag` names it in errors.
class Outputs {
 public:
  Outputs(std::string dir, const std::string& flag);
  Outputs(const Outputs&) = delete;
  Outputs& operator=(const Outputs&) = delete;
  ~Outputs();

  const std::string& dir() const { return dir_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // The constructor also removes the temporaries that killed runs left in
  // the folder (those of processes that no longer run), saying so.
  // Checks, before any work, that `name` can be replaced: nothing there, or a regular file.
  void expect(const std::string& name) const;
  // The temporary name to write `name` under (for writers of their own,
  // such as sg::checkpoint::save); commit() moves it into place.
  std::string stage(const std::string& name);
  void write(const std::string& name, const std::string& contents);
  // Moves every staged file into place (unless a stop signal came first).
  void commit();

 private:
  std::string dir_;
  std::vector<std::filesystem::path> created_;  // folders this made, outermost last
  bool committed_ = false;
  std::vector<std::pair<std::string, std::string>> staged_;  // (temporary, final)
};

}  // namespace examples
