#pragma once
// For a program that declares its flags with CLI11 itself (train_encoder:
// flags that exclude or need each other, lists, a table of settings), the
// pieces examples::Flags is made of: the same validators, help and main
// guard (examples/cli.hpp says what they do; examples/cli.cpp has them).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>

#include "cli.hpp"

namespace examples {

// A whole number in [lo, hi]: "'abc' is not a whole number", "0 is out of range 1..10000000".
CLI::Validator whole(int64_t lo, int64_t hi);
// A number x with lo < x (or lo <= x when `lo_included`) and x <= hi.
CLI::Validator number(double lo, bool lo_included, double hi);
// A folder name: anything but empty (an empty --out would write into /).
CLI::Validator folder();

// Help: descriptions in a wide column and every default shown.
void describe_defaults(CLI::App& app);

// --threads: 0 (the default) leaves the library's automatic count.
void add_threads_flag(CLI::App& app, int& threads);

// Parses the flags, runs body() and turns every way it can end into an exit
// status: 0 (or what body returns), 2 for usage errors, 1 for everything else.
int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

}  // namespace examples
