// cli_common.hpp — helpers shared by the primkit subcommands (cli_common.cpp).
#pragma once

#include <string>
#include <vector>

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
// Subcommands in their own files; argv starts after the subcommand's name.
int cmd_new_backend(int argc, char **argv);  // cmd_new_backend.cpp
int cmd_run_model(int argc, char **argv);    // cmd_run_model.cpp
int cmd_conformance(int argc, char **argv);  // cmd_conformance.cpp
}  // namespace pk::cli
