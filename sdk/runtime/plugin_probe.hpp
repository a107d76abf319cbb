// plugin_probe.hpp — discovery's child-process probe of plugins and its on-disk cache (plugin_probe.cpp).
// Internal to sdk/runtime.
#pragma once

#include <string>
#include <vector>

namespace pk::rt {

struct ProbeVerdict {
  bool safe = true;    // false: loading it in-process would abort, exit, crash or hang the host
  std::string reason;  // why it is not safe, e.g. "probe: killed by SIGABRT during open"
};

// True unless PRIMKIT_PLUGIN_PROBE is "0" or "off" (then discovery loads in-process, as before 1.1).
bool probe_enabled();

// One verdict per path, in order. Verdicts come from the cache when the file is unchanged (same path, size,
// mtime and content hash); the rest are probed in child processes, all at once, each under the timeout
// ($PRIMKIT_PROBE_TIMEOUT seconds, default 10), and cached. A plugin that cannot be probed (no probe helper,
// the spawn failed) is judged safe: the probe protects the host, it must not lose it a working backend.
std::vector<ProbeVerdict> probe_plugins(const std::vector<std::string> &paths);

}  // namespace pk::rt
