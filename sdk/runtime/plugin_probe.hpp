// plugin_probe.hpp — discovery's child-process probe of plugins and its on-disk cache (plugin_probe.cpp).
// Internal to sdk/runtime.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "environment.hpp"

namespace pk::rt {

struct ProbeVerdict {
  bool safe = true;    // false: loading it in-process would abort, exit, crash or hang the host
  std::string reason;  // why it is not safe, e.g. "probe: killed by SIGABRT during open"
};

// Receives the probe's info lines (which plugin was probed, with what verdict; no probe helper).
using ProbeLog = std::function<void(const std::string &)>;

// One verdict per path, in order. Verdicts come from the cache when the file is unchanged (same path, size,
// mtime and content hash); the rest are probed in child processes, all at once, each under the timeout
// (env.probe_timeout_s, $PRIMKIT_PROBE_TIMEOUT), and cached in env.cache_dir unless env.probe_cache is off. A
// plugin that cannot be probed (no probe helper, the spawn failed) is judged safe: the probe protects the host,
// it must not lose it a working backend. The caller skips the probe when env.plugin_probe is off.
std::vector<ProbeVerdict> probe_plugins(const std::vector<std::string> &paths, const Environment &env,
                                        const ProbeLog &log_info);

}  // namespace pk::rt
