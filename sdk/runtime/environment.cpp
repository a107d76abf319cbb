// environment.cpp — reads the runtime's environment variables (environment.hpp), once per runtime.
#include "environment.hpp"

#include <cstdlib>
#include <cstring>

namespace pk::rt {
namespace {

bool is_off(const char *v) {
  return v != nullptr && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "no") == 0);
}

// PRIMKIT_LOG=N: lines of level N and the more severe ones; unset: errors and warnings.
bool read_log_level(int *max_level) {
  const char *v = std::getenv("PRIMKIT_LOG");
  if (v == nullptr) return false;
  *max_level = std::atoi(v);
  return true;
}

}  // namespace

Environment read_environment() {
  Environment env;
  if (const char *p = std::getenv("PRIMKIT_PLUGIN_PATH")) env.plugin_path = p;
  env.log_level_set = read_log_level(&env.log_max_level);
  env.plugin_probe = !is_off(std::getenv("PRIMKIT_PLUGIN_PROBE"));
  env.probe_cache = !is_off(std::getenv("PRIMKIT_PROBE_CACHE"));
  if (const char *t = std::getenv("PRIMKIT_PROBE_TIMEOUT"); t != nullptr && *t) {
    char *end = nullptr;
    const double s = std::strtod(t, &end);
    if (end != t && s > 0) env.probe_timeout_s = s;
  }
  if (const char *d = std::getenv("PRIMKIT_CACHE_DIR"); d && *d) {
    env.cache_dir = d;
  } else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') {
    env.cache_dir = std::string(x) + "/primkit";
  } else if (const char *h = std::getenv("HOME"); h && *h) {
    env.cache_dir = std::string(h) + "/.cache/primkit";
  }
  if (const char *p = std::getenv("PRIMKIT_PROBE_HELPER"); p && *p) env.probe_helper = p;
  return env;
}

int process_log_max_level() {
  static const int level = [] {
    int max_level = 1;
    read_log_level(&max_level);
    return max_level;
  }();
  return level;
}

}  // namespace pk::rt
