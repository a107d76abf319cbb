// probe_main.cpp — primkit-plugin-probe, the child process discovery runs before it loads a plugin into the
// host (see plugin_probe.cpp). It does what the runtime's loader does to a plugin (dlopen, entry, open,
// get_info, device_count, device_get_props, close, dlclose), so that a plugin which aborts, exits, crashes or
// hangs in any of these does it here, where it costs a child process instead of the host.
//
// Protocol: argv[1] is the plugin's path; before each step the probe writes "stage NAME\n" to fd 3, and
// "done\n" when it got through (a step that returns an error also ends with "done": the plugin behaved, and the
// in-process load reports that error with its full message). The parent reads fd 3; the last stage names where
// a probe that never said "done" died. This program links nothing of PrimKit but its header, so that a broken
// libprimkit cannot be mistaken for a broken plugin.
#include <dlfcn.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include "primkit/primkit.h"

namespace {

constexpr int kReportFd = 3;

void report(const std::string &line) {
  std::string s = line + "\n";
  const char *p = s.data();
  size_t left = s.size();
  while (left > 0) {
    ssize_t n = write(kReportFd, p, left);
    if (n <= 0) return;  // the parent is gone: nothing left to tell
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void stage(const char *name) {
  report(std::string("stage ") + name);
}

void host_log(int32_t, const char *message) {
  // stderr is the parent's pipe: its last lines go into the verdict of a probe that dies.
  std::fprintf(stderr, "%s\n", message ? message : "");
}

const pk_host_services k_host = {sizeof(pk_host_services), PK_ABI_VERSION, host_log};

// Runs the steps; returns when the plugin refused or failed one (a clean outcome) or when all passed.
void probe(const char *path) {
  stage("dlopen");
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return;
  auto entry = reinterpret_cast<pk_backend_entry_fn>(dlsym(lib, PK_BACKEND_ENTRY_SYMBOL));
  if (entry == nullptr) return;
  stage("entry");
  uint32_t chosen = 0;
  const pk_backend_api *table = nullptr;
  char message[PK_MESSAGE_CAPACITY] = {0};
  if (entry(&k_host, &chosen, &table, message, sizeof(message)) != PK_OK || table == nullptr) return;
  // Only the slots every table has, and only if the table is long enough to hold them: the in-process
  // loader refuses a shorter one with a message, so there is nothing to learn here.
  if (table->struct_size < offsetof(pk_backend_api, get_last_error) + sizeof(void *)) return;
  pk_backend_api api;
  std::memset(&api, 0, sizeof(api));
  std::memcpy(&api, table, table->struct_size < sizeof(api) ? table->struct_size : sizeof(api));
  if (api.open == nullptr || api.close == nullptr || api.get_info == nullptr || api.get_last_error == nullptr) return;
  stage("open");
  pk_be_context *ctx = nullptr;
  if (api.open(&k_host, &ctx) != PK_OK || ctx == nullptr) return;
  stage("get_info");
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  if (api.get_info(ctx, &info) == PK_OK) {
    uint32_t count = 0;
    stage("device_count");
    if (api.device_count == nullptr || api.device_count(ctx, &count) == PK_OK) {
      if (count == 0) {
        stage("get_last_error");
        pk_error_info e;
        PK_STRUCT_INIT(e);
        api.get_last_error(ctx, &e);
      }
      if (api.device_get_props != nullptr) {
        stage("device_get_props");
        for (uint32_t i = 0; i < count; ++i) {
          pk_device_props props;
          PK_STRUCT_INIT(props);
          if (api.device_get_props(ctx, i, &props) != PK_OK) break;
        }
      }
    }
  }
  // The host closes and unloads the plugin when it destroys the runtime: a crash there would take the host
  // down at exit, so it is probed too.
  stage("close");
  api.close(ctx);
  stage("dlclose");
  dlclose(lib);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: primkit-plugin-probe PLUGIN.so (run by libprimkit's discovery, fd 3 = report)\n");
    return 2;
  }
  probe(argv[1]);
  report("done");
  // _exit: the plugin is unloaded already, and nothing of this process needs flushing; a plugin that left
  // something behind (an atexit handler of a library it pulled in) is not the probe's business.
  _exit(0);
}
