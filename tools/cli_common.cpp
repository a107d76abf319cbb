// cli_common.cpp — helpers shared by the primkit subcommands (declared in cli_common.hpp).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli_common.hpp"
#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

namespace pk::cli {

std::string last_error_message() {
  pk_error_info e;
  e.struct_size = sizeof(e);
  pk_get_last_error(&e);
  return e.message;
}

pk_runtime_t open_runtime(uint32_t flags) {
  pk_runtime_options opts;
  PK_STRUCT_INIT(opts);
  opts.flags = flags;
  pk_runtime_t rt = nullptr;
  if (pk_runtime_create(&opts, &rt) != PK_OK) {
    std::fprintf(stderr, "primkit: cannot create the runtime: %s\n", last_error_message().c_str());
    std::exit(2);
  }
  return rt;
}

bool looks_like_path(const std::string &name_or_path) {
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() > 3 && name_or_path.compare(name_or_path.size() - 3, 3, ".so") == 0);
}

// A runtime for one backend named on the command line: with a plugin path, discovery is off, so the installed
// plugin of the same name cannot clash with the one asked for.
pk_runtime_t open_runtime_for(const std::string &name_or_path) {
  return open_runtime(looks_like_path(name_or_path) ? PK_RUNTIME_NO_DISCOVERY : 0);
}

pk_backend_t resolve_backend(pk_runtime_t rt, const std::string &name_or_path) {
  pk_backend_t b = nullptr;
  if (looks_like_path(name_or_path)) {
    if (pk_runtime_load_plugin(rt, name_or_path.c_str(), &b) == PK_OK) return b;
    // Already discovered under the same name? Then the explicit path shadows nothing: report clearly.
    std::fprintf(stderr, "primkit: %s\n", last_error_message().c_str());
    return nullptr;
  }
  if (pk_runtime_find_backend(rt, name_or_path.c_str(), &b) == PK_OK) return b;
  std::fprintf(stderr, "primkit: no backend named '%s' was found", name_or_path.c_str());
  const char *errors = pk_runtime_load_errors(rt);
  if (errors && *errors)
    std::fprintf(stderr, "; plugins that failed to load:\n%s", errors);
  else
    std::fprintf(stderr, " (searched $PRIMKIT_PLUGIN_PATH and the install's plugin folder)\n");
  return nullptr;
}

StdoutToStderr::StdoutToStderr() {
  std::fflush(stdout);
  saved_ = dup(1);
  if (saved_ >= 0) dup2(2, 1);
}

void StdoutToStderr::restore() {
  if (saved_ < 0) return;
  std::fflush(stdout);  // what plugins buffered in stdio goes to stderr too
  dup2(saved_, 1);
  close(saved_);
  saved_ = -1;
}

// "primkit info" for the info subcommand: the names from the top app down.
std::string command_path(const CLI::App &command) {
  std::string path = command.get_name();
  for (const CLI::App *up = command.get_parent(); up != nullptr; up = up->get_parent())
    path = up->get_name() + " " + path;
  return path;
}

const CLI::Validator &seed_validator() {
  static const CLI::Validator seed(
      [](std::string &value) -> std::string {
        if (!value.empty() && value[0] != '-') return {};  // the conversion to uint64_t checks the rest
        return "a seed is a whole number from 0 to 2^64-1, not '" + value + "'";
      },
      "");
  return seed;
}

int usage_error(const CLI::App &command, const std::string &message) {
  const std::string path = command_path(command);
  std::fprintf(stderr, "%s: %s\nRun '%s --help' for the options.\n", path.c_str(), message.c_str(), path.c_str());
  return kUsageError;
}

std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace pk::cli
