// The examples' flags, main guard and outputs (examples/cli.hpp), compiled
// once: CLI11 is header-only, and its code is generated here alone rather
// than in every example.
#include "cli11.hpp"
#include "study/translation.hpp"  // Seq2SeqConfig

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <regex>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "core/runtime.hpp"
#include "study/plot.hpp"

namespace examples {

// ---- signals ----

std::atomic<bool> g_stop{false};

namespace {

// The signal that asked the program to stop, 0 while none has.
volatile std::sig_atomic_t g_signal = 0;

const char* signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

}  // namespace

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  g_stop.store(true);
}

Stopped::Stopped() : std::runtime_error(std::string("stopped by ") + signal_name(g_signal)) {}

void check_stop() {
  if (g_stop.load()) throw Stopped();
}

namespace {
std::string g_stop_note;  // set_stop_note's, read by run() on the same (main) thread
}

void set_stop_note(const std::string& note) { g_stop_note = note; }

// ---- validators with readable messages ----

CLI::Validator whole(int64_t lo, int64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        int64_t v = 0;
        const char* end = s.data() + s.size();
        const auto [p, ec] = std::from_chars(s.data(), end, v);
        if (s.empty() || p != end) return "'" + s + "' is not a whole number (expected " + range + ")";
        if (ec == std::errc::result_out_of_range || v < lo || v > hi)
          return s + " is out of range (expected " + range + ")";
        return {};
      },
      range);
}

CLI::Validator number(double lo, bool lo_included, double hi) {
  char buf[96];
  if (std::isinf(hi))
    std::snprintf(buf, sizeof buf, "%s %g", lo_included ? "at least" : "above", lo);
  else
    std::snprintf(buf, sizeof buf, lo_included ? "%g..%g" : "above %g, at most %g", lo, hi);
  const std::string range = buf;
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || std::isnan(v) || errno == ERANGE)
          return "'" + s + "' is not a number (expected " + range + ")";
        if (v < lo || (!lo_included && v == lo) || v > hi) return s + " is out of range (expected " + range + ")";
        return {};
      },
      range);
}

CLI::Validator folder() {
  return CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "a folder name cannot be empty" : ""; },
                        "DIR");
}

// ---- help ----

namespace {

// Help lines as "--steps INT:1..10000000=800   description": the type and
// the default, without CLI11's lists of excluded and needed flags (the
// descriptions say what goes with what, and a wrong combination says so).
class Formatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string out;
    if (opt->get_type_size() != 0) {
      if (!opt->get_type_name().empty()) out += " " + get_label(opt->get_type_name());
      if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
      if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    }
    return out;
  }
};

}  // namespace

void describe_defaults(CLI::App& app) {
  app.option_defaults()->always_capture_default();
  app.formatter(std::make_shared<Formatter>());
  app.get_formatter()->column_width(34);
  app.set_help_flag("-h,--help", "print this help and exit");
}

void add_threads_flag(CLI::App& app, int& threads) {
  app.add_option("--threads", threads,
                 "threads; 0: automatic (the cores other programs leave free, measured as it runs)")
      ->check(whole(0, sg::kMaxThreads));
}

void seq2seq_flags(Flags& flags, sg::study::Seq2SeqConfig& c, const std::string& pairs) {
  const double inf = std::numeric_limits<double>::infinity();
  flags.whole("--steps", c.steps, "training steps", 1, 10000000);
  flags.whole("--batch", c.batch, pairs + " per batch", 1, 65536);
  flags.number("--lr", c.lr, "peak learning rate (AdamW)", 0, false, 10);
  flags.number("--min-lr", c.min_lr, "final learning rate of the cosine decay", 0, true, 10);
  flags.whole("--warmup", c.warmup, "warm-up steps", 0, 10000000);
  flags.number("--dropout", c.dropout, "dropout probability", 0, true, 0.99);
  flags.number("--weight-decay", c.weight_decay, "AdamW weight decay", 0, true, inf);
  flags.whole("--hidden", c.hidden, "model width", 2, 4096);
  flags.whole("--ffn", c.ffn, "width of the position-wise FFN", 1, 65536);
  flags.whole("--heads", c.heads, "attention heads", 1, 64);
  flags.whole("--blocks", c.blocks, "blocks of the encoder, and of the decoder", 1, 64);
  flags.flag("--pre-norm", c.pre_norm, "pre-norm blocks (layer norm before attention and FFN)");
  flags.whole("--beam", c.beam, "beam width of the beam-search rows", 1, 64);
}

std::function<void(int64_t, int64_t, double, double, double, double)> seq2seq_progress(const std::string& score) {
  const bool tty = isatty(2);
  return [tty, score](int64_t step, int64_t steps, double loss, double exact, double, double left) {
    std::fprintf(stderr, "%sstep %lld/%lld  loss %.4f  %s %.3f  %.0f s left%s", tty ? "\r" : "",
                 static_cast<long long>(step), static_cast<long long>(steps), loss, score.c_str(), exact, left,
                 tty && step < steps ? "   " : "\n");
  };
}

void apply_threads(int threads) {
  if (threads > 0) sg::set_num_threads(threads);
}

// ---- Flags ----

Flags::Flags(const std::string& description) : app_(std::make_unique<CLI::App>(description)) {
  describe_defaults(*app_);
}
Flags::~Flags() = default;

CLI::App& Flags::app() { return *app_; }

bool Flags::given(const std::string& name) const { return app_->count(name) > 0; }

void Flags::whole(const std::string& name, int64_t& value, const std::string& help, int64_t lo, int64_t hi) {
  app_->add_option(name, value, help)->check(examples::whole(lo, hi));
}
void Flags::whole(const std::string& name, int& value, const std::string& help, int lo, int hi) {
  app_->add_option(name, value, help)->check(examples::whole(lo, hi));
}
void Flags::number(const std::string& name, double& value, const std::string& help, double lo, bool lo_included,
                   double hi) {
  app_->add_option(name, value, help)->check(examples::number(lo, lo_included, hi));
}
void Flags::text(const std::string& name, std::string& value, const std::string& help) {
  app_->add_option(name, value, help);
}
void Flags::choice(const std::string& name, std::string& value, const std::string& help,
                   const std::vector<std::string>& choices) {
  app_->add_option(name, value, help)->check(CLI::IsMember(choices));
}
void Flags::folder(const std::string& name, std::string& value, const std::string& help) {
  app_->add_option(name, value, help)->check(examples::folder());
}
void Flags::flag(const std::string& name, bool& value, const std::string& help) { app_->add_flag(name, value, help); }
void Flags::threads(int& threads) { add_threads_flag(*app_, threads); }

// ---- the main guard ----

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "unknown flag --stpes (did you mean --steps?)" for what CLI11 could not place.
std::string explain_extras(const CLI::App& app, const std::vector<std::string>& extras) {
  for (const std::string& arg : extras) {
    if (arg.size() < 2 || arg[0] != '-') continue;
    const std::string flag = arg.substr(0, arg.find('='));
    std::string best;
    size_t best_d = 4;
    for (const CLI::Option* o : app.get_options()) {
      for (const std::string& l : o->get_lnames()) {
        const size_t d = edit_distance(flag, "--" + l);
        if (d < best_d) best_d = d, best = "--" + l;
      }
    }
    return "unknown flag " + flag + (best.empty() ? "" : " (did you mean " + best + "?)");
  }
  return "unexpected argument '" + extras.front() + "' (values follow their flags, as in --out DIR)";
}

// One line: newlines in a message (a multi-line sg::Error) become "; ".
std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (size_t i = 0; (i = s.find('\n', i)) != std::string::npos;) s.replace(i, 1, "; ");
  return s;
}

int usage_error(const CLI::App& app, const std::string& message) {
  std::cerr << app.get_name() << ": error: " << one_line(message) << "\n"
            << "Run '" << app.get_name() << " --help' for every flag and its default.\n";
  return 2;
}

}  // namespace

int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed pipe is a write error, not a death
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  app.name(std::filesystem::path(argv[0]).filename().string());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ExtrasError&) {
    return usage_error(app, explain_extras(app, app.remaining()));
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e.what());
  }
  try {
    const int status = body();
    if (g_stop.load()) throw Stopped();
    return status;
  } catch (const UsageError& e) {
    return usage_error(app, e.what());
  } catch (const std::bad_alloc&) {
    std::cerr << app.get_name() << ": error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    if (g_stop.load()) {  // Stopped, or the training loop's own stop
      std::cerr << "\n" << app.get_name() << ": stopped by " << signal_name(g_signal) << "; "
                << (g_stop_note.empty() ? "no output was written or changed" : g_stop_note) << "\n";
      return 1;
    }
    std::cerr << app.get_name() << ": error: " << one_line(e.what()) << "\n";
    return 1;
  } catch (...) {
    std::cerr << app.get_name() << ": error: an unknown exception\n";
    return 1;
  }
}

int run(Flags& flags, int argc, char** argv, const std::function<int()>& body) {
  return run(flags.app(), argc, argv, body);
}

// ---- outputs ----

namespace {

// The process id in the name of a temporary that smallgrad writes, 0 for any
// other name: "<name>.tmp-<pid>-<n>" (sg::checkpoint::save_safetensors),
// ".<name>.staged-<pid>" (Outputs::stage, examples::gpt::save_run), and the
// two together, and ".write-test-<pid>" (the probe below).
long temporary_owner(const std::string& name) {
  static const std::regex pattern(R"(^(?:\.write-test-(\d{1,9})|\..+\.staged-(\d{1,9})(?:\.tmp-\d+-\d+)?|.+\.tmp-(\d{1,9})-\d+)$)");
  std::smatch m;
  if (!std::regex_match(name, m, pattern)) return 0;
  for (int g = 1; g <= 3; ++g)
    if (m[g].matched) return std::stol(m[g].str());
  return 0;
}

// Removes from dir the temporaries of processes that no longer run (a run
// killed while it saved), saying so on stderr; names those it cannot
// remove. Another running process's temporaries are left alone.
void remove_stale_temporaries(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const long pid = temporary_owner(name);
    if (pid <= 0 || pid == ::getpid() || !entry.is_regular_file(ec)) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code rm;
    if (std::filesystem::remove(entry.path(), rm))
      std::cerr << "removed '" << entry.path().string() << "', a temporary file left by process " << pid
                << ", which no longer runs\n";
    else
      std::cerr << "warning: '" << entry.path().string() << "' is a temporary file left by process " << pid
                << ", which no longer runs; it cannot be removed (" << rm.message() << ")\n";
  }
}

}  // namespace

Outputs::Outputs(std::string dir, const std::string& flag) : dir_(std::move(dir)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // The folders this makes, outermost last, so that a run that fails removes them again.
  for (fs::path p = fs::absolute(dir_, ec); !p.empty() && !fs::exists(p, ec) && p != p.parent_path();
       p = p.parent_path())
    created_.push_back(p);
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_, ec))
    throw std::runtime_error(flag + " '" + dir_ + "': cannot make this folder (" +
                             (ec ? ec.message() : "a file of that name exists") + ")");
  const std::string probe = dir_ + "/.write-test-" + std::to_string(::getpid());
  std::ofstream f(probe);
  const bool ok = static_cast<bool>(f);
  const std::string why = std::strerror(errno);
  f.close();
  std::remove(probe.c_str());
  if (!ok) throw std::runtime_error(flag + " '" + dir_ + "': cannot write in this folder (" + why + ")");
  remove_stale_temporaries(dir_);
}

Outputs::~Outputs() {
  for (const auto& [tmp, path] : staged_) std::remove(tmp.c_str());
  std::error_code ec;
  if (!committed_)
    for (const auto& p : created_) std::filesystem::remove(p, ec);  // only while empty
}

void Outputs::expect(const std::string& name) const {
  std::error_code ec;
  const auto st = std::filesystem::symlink_status(path(name), ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw std::runtime_error("cannot write '" + path(name) + "': something other than a file is there");
}

std::string Outputs::stage(const std::string& name) {
  expect(name);
  const std::string tmp = path("." + name + ".staged-" + std::to_string(::getpid()));
  staged_.emplace_back(tmp, path(name));
  return tmp;
}

void Outputs::write(const std::string& name, const std::string& contents) {
  sg::study::plot::write_file(stage(name), contents);
}

void Outputs::commit() {
  check_stop();
  for (const auto& [tmp, path] : staged_)
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw std::runtime_error("cannot move '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  staged_.clear();
  committed_ = true;
  set_stop_note("every output had been written to " + dir_);
}

}  // namespace examples
