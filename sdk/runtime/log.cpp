// log.cpp — where the runtime's diagnostics go (pk_runtime_options.log, since ABI 1.2): the caller's callback or
// stderr, filtered by level; and the thread's current runtime for lines plugins log through pk_host_services.
#include <cstdio>

#include "runtime_internal.hpp"

namespace pk::rt {
namespace {
// The log of the runtime whose call into a plugin is running on this thread (LogScope); null outside.
thread_local const Log *t_plugin_log = nullptr;
}  // namespace

void write_stderr_line(int32_t level, const char *message) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  const char *name = level >= 0 && level <= PK_LOG_DEBUG ? names[level] : "debug";
  std::fprintf(stderr, "primkit [%s] %s\n", name, message ? message : "");
}

void Log::write(int32_t level, const char *message) const {
  if (!enabled(level)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (sink_ != nullptr)
    sink_(user_, level, message ? message : "");
  else
    write_stderr_line(level, message);
}

LogScope::LogScope(const Log &log) : previous_(t_plugin_log) {
  t_plugin_log = &log;
}
LogScope::~LogScope() {
  t_plugin_log = previous_;
}

const Log *plugin_log_of_this_thread() {
  return t_plugin_log;
}

pk_status host_out_of_memory(const char *function, const char *what, size_t bytes) {
  return set_error(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, -1, 0,
                   "%s: the host allocator (pk_runtime_options.host_alloc) returned NULL for %s (%zu bytes)", function,
                   what, bytes);
}

}  // namespace pk::rt
