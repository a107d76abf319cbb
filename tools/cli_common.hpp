// cli_common.hpp — helpers shared by the primkit subcommands (cli_common.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

namespace pk::cli {
std::string last_error_message();
// Creates a runtime with discovery; exits with a message on failure.
pk_runtime_t open_runtime(uint32_t flags);
// True when the command-line word names a plugin file (a path or a .so) rather than a backend.
bool looks_like_path(const std::string &name_or_path);
// A runtime for one backend named on the command line: discovery is off for a plugin path.
pk_runtime_t open_runtime_for(const std::string &name_or_path);
// A backend by name (discovered) or by plugin path (loaded); nullptr after printing why.
pk_backend_t resolve_backend(pk_runtime_t rt, const std::string &name_or_path);
// While alive, what is written to stdout (fd 1) goes to stderr, for a command whose stdout is a document (JSON):
// a plugin's stray printf must not corrupt it. restore() points fd 1 back at the real stdout for the writer.
class StdoutToStderr {
 public:
  StdoutToStderr();
  ~StdoutToStderr() { restore(); }
  StdoutToStderr(const StdoutToStderr &) = delete;
  StdoutToStderr &operator=(const StdoutToStderr &) = delete;
  void restore();

 private:
  int saved_ = -1;
};
// `s` as a JSON string literal, quotes included.
std::string json_string(const std::string &s);
// The exit status of a command line the parser rejected (unknown flag or subcommand, bad or missing value).
constexpr int kUsageError = 2;
// Reports a problem with the command line that the parser could not see (a value that is well-formed but
// wrong, e.g. an unknown dtype name) the way the parser's own errors are reported, and returns kUsageError.
int usage_error(const CLI::App &command, const std::string &message);

// Accepts a seed: a whole number from 0 to 2^64-1 (without it a negative number would wrap around).
const CLI::Validator &seed_validator();

// Each subcommand lives in its own file: it adds itself and its options to `app` and returns itself with what
// runs it, called once the command line parsed (the options it registered hold their values by then) and
// returning the exit status.
struct Subcommand {
  CLI::App *command = nullptr;
  std::function<int()> run;
};
Subcommand add_list_command(CLI::App &app);         // cmd_list.cpp
Subcommand add_info_command(CLI::App &app);         // cmd_info.cpp
Subcommand add_conformance_command(CLI::App &app);  // cmd_conformance.cpp
Subcommand add_new_backend_command(CLI::App &app);  // cmd_new_backend.cpp
Subcommand add_run_model_command(CLI::App &app);    // cmd_run_model.cpp
}  // namespace pk::cli
