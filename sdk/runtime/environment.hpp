// environment.hpp — the runtime's environment variables, read once per runtime (environment.cpp). Internal to
// sdk/runtime. Every PRIMKIT_* variable of the project is listed in docs/environment.md.
#pragma once

#include <string>

namespace pk::rt {

struct Environment {
  std::string plugin_path;      // PRIMKIT_PLUGIN_PATH: ':'-separated folders discovery scans
  bool log_level_set = false;   // PRIMKIT_LOG is set ...
  int log_max_level = 1;        // ... to this level (0 error .. 3 debug): lines up to it reach the log
  bool plugin_probe = true;     // PRIMKIT_PLUGIN_PROBE: false for "0", "off" or "no"
  bool probe_cache = true;      // PRIMKIT_PROBE_CACHE: false for "0", "off" or "no"
  double probe_timeout_s = 10;  // PRIMKIT_PROBE_TIMEOUT: seconds, when a positive number
  std::string cache_dir;        // PRIMKIT_CACHE_DIR, else $XDG_CACHE_HOME/primkit, else ~/.cache/primkit
  std::string probe_helper;     // PRIMKIT_PROBE_HELPER; empty: the helper next to libprimkit
};

// Reads the variables now. pk_runtime_create calls it once, so that a runtime behaves the same for its whole
// life and no launch pays for getenv.
Environment read_environment();

// The process-wide PRIMKIT_LOG, read on first use: the level of log lines that reach stderr when no runtime is
// known (a plugin logging from a thread of its own, outside any call of a runtime).
int process_log_max_level();

}  // namespace pk::rt
