// plugin_loader.cpp — discovery, dlopen, ABI negotiation and the checks that keep a broken plugin's failure
// contained to a clear error.
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "collectives_internal.hpp"
#include "plugin_probe.hpp"
#include "runtime_internal.hpp"

namespace pk::rt {
namespace {

// pk_host_services.log: a plugin's line goes to the log of the runtime calling into it on this thread; from a
// thread of the plugin's own, to stderr under the process's $PRIMKIT_LOG (default: errors and warnings, as a
// library must not chatter on stderr).
void host_log(int32_t level, const char *message) {
  if (level < 0 || level > PK_LOG_DEBUG) level = PK_LOG_DEBUG;
  if (const Log *log = plugin_log_of_this_thread()) {
    log->write(level, message);
  } else if (level <= process_log_max_level()) {
    write_stderr_line(level, message);
  }
}

const pk_host_services k_host_services = {sizeof(pk_host_services), PK_ABI_VERSION, host_log};

// More devices than any machine has: a plugin reporting more is refused.
constexpr uint32_t k_max_devices = 4096;

// The slots every plugin must fill; everything after them may be NULL.
constexpr size_t k_required_api_bytes = offsetof(pk_backend_api, get_last_error) + sizeof(void *);

bool is_plugin_file(const char *name) {
  size_t n = std::strlen(name);
  static const char prefix[] = "libprimkit_backend_";
  return n > sizeof(prefix) + 2 && std::strncmp(name, prefix, sizeof(prefix) - 1) == 0 &&
         std::strcmp(name + n - 3, ".so") == 0;
}

bool valid_backend_name(const char *name, size_t capacity) {
  size_t n = strnlen(name, capacity);
  if (n == 0 || n == capacity) return false;
  for (size_t i = 0; i < n; ++i) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

}  // namespace

std::string install_plugin_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&pk_runtime_create), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string lib = info.dli_fname;
  size_t slash = lib.rfind('/');
  std::string dir = slash == std::string::npos ? std::string(".") : lib.substr(0, slash);
  return dir + "/primkit";
}

pk_status load_plugin(Runtime &rt, const std::string &path, Backend **out) {
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char *why = dlerror();
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0, "cannot load plugin %s: %s", path.c_str(),
                     why ? why : "dlopen failed");
  }
  HostPtr<pk_backend_s> backend = rt.make<pk_backend_s>();
  if (backend == nullptr) {
    dlclose(lib);
    return host_out_of_memory("pk_runtime_load_plugin", "a backend", sizeof(pk_backend_s));
  }
  backend->runtime = &rt;
  backend->library = lib;
  backend->path = path;
  dlerror();
  auto entry = reinterpret_cast<pk_backend_entry_fn>(dlsym(lib, PK_BACKEND_ENTRY_SYMBOL));
  if (entry == nullptr) {
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0,
                     "plugin %s is not a PrimKit backend: it does not export the entry symbol %s", path.c_str(),
                     PK_BACKEND_ENTRY_SYMBOL);
  }
  uint32_t chosen = 0;
  const pk_backend_api *table = nullptr;
  char message[PK_MESSAGE_CAPACITY] = {0};
  pk_status st = entry(&k_host_services, &chosen, &table, message, sizeof(message));
  message[sizeof(message) - 1] = '\0';
  if (st != PK_OK) {
    return set_error(st == PK_ERROR_ABI_MISMATCH ? PK_ERROR_ABI_MISMATCH : PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0,
                     "plugin %s refused ABI %u.%u (%s): %s", path.c_str(), PK_ABI_VERSION_MAJOR, PK_ABI_VERSION_MINOR,
                     pk_status_name(st), message[0] ? message : "no reason given");
  }
  if (PK_VERSION_MAJOR(chosen) != PK_ABI_VERSION_MAJOR || chosen > PK_ABI_VERSION) {
    return set_error(PK_ERROR_ABI_MISMATCH, PK_OP_NONE, -1, 0,
                     "plugin %s chose ABI %u.%u, but this runtime speaks %u.%u (same major, minor <= %u)", path.c_str(),
                     PK_VERSION_MAJOR(chosen), PK_VERSION_MINOR(chosen), PK_ABI_VERSION_MAJOR, PK_ABI_VERSION_MINOR,
                     PK_ABI_VERSION_MINOR);
  }
  if (table == nullptr || table->struct_size < k_required_api_bytes) {
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0,
                     "plugin %s returned %s function table (struct_size %u, at least %zu needed)", path.c_str(),
                     table ? "a truncated" : "no", table ? table->struct_size : 0u, k_required_api_bytes);
  }
  // Copy the plugin's table into this build's layout: slots an older minor does not have stay NULL, and so does a
  // slot that struct_size cuts through (half a pointer would be called as a function).
  size_t api_bytes = std::min<size_t>(table->struct_size, sizeof(pk_backend_api));
  api_bytes -= (api_bytes - offsetof(pk_backend_api, open)) % sizeof(void *);  // >= k_required_api_bytes
  std::memcpy(&backend->api, table, api_bytes);
  backend->api.struct_size = sizeof(pk_backend_api);
  backend->abi_version = chosen;
  const pk_backend_api &api = backend->api;
  if (api.open == nullptr || api.close == nullptr || api.get_info == nullptr || api.get_last_error == nullptr) {
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0,
                     "plugin %s leaves a required slot NULL (open, close, get_info and get_last_error are "
                     "required)",
                     path.c_str());
  }
  // The native collective slots are all or none (primkit.h): a backend that fills some of them would have the
  // runtime call a NULL slot half-way through a communicator's life.
  if (const char *missing = coll::partial_native_slot(api)) {
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0,
                     "plugin %s fills some native collective slots but leaves %s NULL: comm_get_unique_id, "
                     "comm_create, comm_split, comm_destroy, comm_abort, collective_launch, group_start and group_end "
                     "are all set or all NULL",
                     path.c_str(), missing);
  }
  st = api.open(&k_host_services, &backend->context);
  if (st != PK_OK || backend->context == nullptr) {
    backend->context = nullptr;
    return forward_backend_error(*backend, st == PK_OK ? PK_ERROR_PLUGIN : st, PK_OP_NONE, "failed to open",
                                 path.c_str());
  }
  backend->info.struct_size = sizeof(backend->info);
  st = api.get_info(backend->context, &backend->info);
  if (st != PK_OK) return forward_backend_error(*backend, st, PK_OP_NONE, "get_info failed");
  if (!valid_backend_name(backend->info.name, sizeof(backend->info.name))) {
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0,
                     "plugin %s reports an invalid backend name (need 1-63 chars of [a-z0-9_-])", path.c_str());
  }
  backend->info.vendor[sizeof(backend->info.vendor) - 1] = '\0';
  for (const auto &other : rt.backends) {
    if (std::strcmp(other->info.name, backend->info.name) == 0) {
      return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0, "plugin %s: a backend named '%s' is already loaded from %s",
                       path.c_str(), backend->info.name, other->path.c_str());
    }
  }
  uint32_t count = 0;
  if (api.device_count != nullptr) {
    st = api.device_count(backend->context, &count);
    if (st != PK_OK) return forward_backend_error(*backend, st, PK_OP_NONE, "device_count failed");
  }
  // Every device costs the host a record and an allocator: a count no machine has is the plugin's garbage, not
  // a reason to allocate billions of them (fuzz_plugin: 0x7f7f7f7f devices exhausted the host's memory).
  if (count > k_max_devices) {
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0, "plugin %s reports %u devices; at most %u are supported",
                     path.c_str(), count, k_max_devices);
  }
  if (count == 0) {
    // The ABI asks a backend with no device to say why in its last-error record (no driver, no GPU, ...).
    pk_error_info e;
    PK_STRUCT_INIT(e);
    if (api.get_last_error != nullptr && api.get_last_error(backend->context, &e) == PK_OK) {
      e.message[sizeof(e.message) - 1] = '\0';
      backend->no_device_reason = e.message;
    }
    if (backend->no_device_reason.empty())
      backend->no_device_reason = "the backend reports no device and gives no reason";
  }
  for (uint32_t i = 0; i < count; ++i) {
    HostPtr<pk_device_s> dev = rt.make<pk_device_s>();
    if (dev == nullptr) return host_out_of_memory("pk_runtime_load_plugin", "a device", sizeof(pk_device_s));
    dev->backend = backend.get();
    dev->index = i;
    dev->validation_key = next_generation();
    dev->props.struct_size = sizeof(dev->props);
    if (api.device_get_props == nullptr) {
      return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0,
                       "plugin %s reports %u devices but leaves device_get_props NULL", path.c_str(), count);
    }
    st = api.device_get_props(backend->context, i, &dev->props);
    if (st != PK_OK) return forward_backend_error(*backend, st, PK_OP_NONE, "device_get_props failed");
    dev->props.name[sizeof(dev->props.name) - 1] = '\0';
    dev->props.device_id = static_cast<int32_t>(i);
    if (dev->props.alignment == 0) dev->props.alignment = 64;
    dev->allocator = rt.make<CachingAllocator>(*dev);
    if (dev->allocator == nullptr) {
      return host_out_of_memory("pk_runtime_load_plugin", "a device's allocator cache", sizeof(CachingAllocator));
    }
    backend->devices.push_back(std::move(dev));
  }
  if (coll::has_native_slots(api)) coll::native_backend_loaded(backend.get());
  *out = backend.get();
  rt.backends.push_back(std::move(backend));
  return PK_OK;
}

void discover_plugins(Runtime &rt, const char *extra_path) {
  std::vector<std::string> dirs;
  auto split = [&](const char *list) {
    if (list == nullptr) return;
    std::string s = list;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  };
  split(extra_path);
  split(rt.env.plugin_path.c_str());
  std::string installed = install_plugin_dir();
  if (!installed.empty()) dirs.push_back(installed);
  // First every candidate, in load order, so that the probes of all the plugins not in the cache run at once:
  // a cold discovery then costs the slowest probe, not their sum.
  std::vector<std::string> seen_files, paths, stems;
  for (const auto &dir : dirs) {
    DIR *d = opendir(dir.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> names;
    while (dirent *e = readdir(d)) {
      if (is_plugin_file(e->d_name)) names.push_back(e->d_name);
    }
    closedir(d);
    std::sort(names.begin(), names.end());  // deterministic load order
    for (const auto &name : names) {
      std::string path = dir + "/" + name;
      char real[4096];
      std::string key = realpath(path.c_str(), real) ? std::string(real) : path;
      if (std::find(seen_files.begin(), seen_files.end(), key) != seen_files.end()) continue;
      seen_files.push_back(key);
      std::string stem = name.substr(std::strlen("libprimkit_backend_"));
      paths.push_back(path);
      stems.push_back(stem.substr(0, stem.size() - 3));
    }
  }
  const ProbeLog log_info = [&rt](const std::string &line) { rt.log.write(PK_LOG_INFO, line); };
  std::vector<ProbeVerdict> verdicts =
      rt.env.plugin_probe ? probe_plugins(paths, rt.env, log_info) : std::vector<ProbeVerdict>(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    // The same backend found again in a later folder is shadowed by the first one, like PATH.
    bool shadowed = false;
    for (const auto &b : rt.backends) shadowed = shadowed || stems[i] == b->info.name;
    if (shadowed) continue;
    if (!verdicts[i].safe) {
      // Never in-process: it would take the host down. pk_runtime_load_plugin with the path still loads it.
      const std::string why = "plugin " + paths[i] + " was not loaded: " + verdicts[i].reason;
      rt.log.write(PK_LOG_INFO, why);
      rt.load_errors += why + '\n';
      continue;
    }
    Backend *loaded = nullptr;
    if (load_plugin(rt, paths[i], &loaded) != PK_OK) {
      pk_error_info e;
      e.struct_size = sizeof(e);
      pk_get_last_error(&e);
      rt.log.write(PK_LOG_INFO, std::string("discovery: ") + e.message);
      rt.load_errors += e.message;
      rt.load_errors += '\n';
    } else {
      rt.log.write(PK_LOG_INFO, "discovery: loaded backend '" + std::string(loaded->info.name) + "' from " + paths[i]);
    }
  }
  clear_error();
}

}  // namespace pk::rt

pk_backend_s::~pk_backend_s() {
  pk::rt::coll::native_backend_gone(this);
  devices.clear();
  if (context != nullptr && api.close != nullptr) api.close(context);
  if (library != nullptr) dlclose(library);
}
