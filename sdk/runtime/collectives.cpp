// collectives.cpp — the collectives extension of libprimkit (primkit_collectives.h): engines loaded at run time,
// communicators, validation, the cross-rank argument check, staging through host memory, and each collective
// composed from the engine's transfers with the local reduction of collectives_reduce.cpp.
#include <dlfcn.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives_internal.hpp"

using namespace pk::rt;
using namespace pk::rt::coll;

namespace {

// --- engines ---------------------------------------------------------------------------------------------------

std::mutex g_engines_mu;
std::map<std::string, std::unique_ptr<Engine>> g_engines;

bool valid_engine_name(const char *name) {
  size_t n = std::strlen(name);
  if (n == 0 || n >= PK_COMM_ENGINE_NAME_CAPACITY) return false;
  for (size_t i = 0; i < n; ++i) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Engines live beside the backends: $PRIMKIT_PLUGIN_PATH's folders, then the install's plugin folder.
std::vector<std::string> engine_dirs() {
  std::vector<std::string> dirs;
  if (const char *list = std::getenv("PRIMKIT_PLUGIN_PATH")) {
    std::string s = list;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  std::string installed = install_plugin_dir();
  if (!installed.empty()) dirs.push_back(installed);
  return dirs;
}

void load_engine(Engine &e) {
  if (e.name == "nccl") {  // an engine in earlier increments; now the one place that loads NCCL is the cuda backend
    e.status = PK_ERROR_NOT_FOUND;
    e.reason =
        "NCCL is no engine: it carries the cuda backend's native collectives (engine \"native\", the default "
        "for a communicator on a cuda device)";
    return;
  }
  std::string file = "libprimkit_engine_" + e.name + ".so", searched;
  for (const auto &dir : engine_dirs()) {
    std::string path = dir + "/" + file;
    struct stat st;
    searched += (searched.empty() ? "" : ", ") + dir;
    if (stat(path.c_str(), &st) != 0) continue;
    // NODELETE: an engine registers exit handlers (MPI_Finalize) and its library's threads outlive any runtime.
    void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (lib == nullptr) {
      const char *why = dlerror();
      e.status = PK_ERROR_NOT_FOUND;
      e.reason = "cannot load " + path + ": " + (why ? why : "dlopen failed");
      return;
    }
    auto entry = reinterpret_cast<pk_engine_entry_fn>(dlsym(lib, PK_ENGINE_ENTRY_SYMBOL));
    char err[PK_MESSAGE_CAPACITY] = {0};
    const pk_engine_api *api = nullptr;
    pk_status st2 = entry ? entry(PK_ENGINE_INTERFACE_VERSION, &api, err) : PK_ERROR_PLUGIN;
    if (entry == nullptr) std::snprintf(err, sizeof err, "no entry symbol %s", PK_ENGINE_ENTRY_SYMBOL);
    if (st2 == PK_OK && (api == nullptr || api->struct_size < sizeof(pk_engine_api) || api->init == nullptr)) {
      st2 = PK_ERROR_PLUGIN;
      std::snprintf(err, sizeof err, "its function table is incomplete");
    }
    if (st2 == PK_OK) st2 = api->init(err);
    if (st2 != PK_OK) {
      e.status = PK_ERROR_NOT_FOUND;
      e.reason = path + ": " + err;
      return;
    }
    e.api = api;
    e.status = PK_OK;
    return;
  }
  e.status = PK_ERROR_NOT_FOUND;
  e.reason = file + " is in none of the plugin folders (" + searched +
             "); it is built when CMake finds the engine's library (e.g. PRIMKIT_WITH_MPI with Open MPI or MPICH)";
}

// What a call names: `name`, else $PRIMKIT_COLLECTIVES_ENGINE; nullptr when neither names anything.
const char *named_engine(const char *name) {
  if (name != nullptr && *name != '\0') return name;
  const char *env = std::getenv("PRIMKIT_COLLECTIVES_ENGINE");
  return env != nullptr && *env != '\0' ? env : nullptr;
}

bool is_native(const char *name) {
  return name != nullptr && std::strcmp(name, "native") == 0;
}

// The engine named `name` (NULL: $PRIMKIT_COLLECTIVES_ENGINE, else "mpi"), loaded and initialized once per process.
pk_status get_engine(const char *fn, const char *name, Engine **out) {
  if (name == nullptr) name = std::getenv("PRIMKIT_COLLECTIVES_ENGINE");
  if (name == nullptr || *name == '\0' || is_native(name)) name = "mpi";  // "native" is no engine: bootstrap with mpi
  if (!valid_engine_name(name)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "%s: engine name '%.40s' is not 1-15 characters of [a-z0-9_]", fn, name);
  }
  std::lock_guard<std::mutex> lock(g_engines_mu);
  auto &slot = g_engines[name];
  if (!slot) {
    slot = std::make_unique<Engine>();
    slot->name = name;
    load_engine(*slot);
  }
  if (slot->status != PK_OK) {
    return set_error(slot->status, PK_OP_NONE, -1, 0, "%s: collectives engine '%s' is unavailable: %s", fn, name,
                     slot->reason.c_str());
  }
  *out = slot.get();
  return PK_OK;
}

}  // namespace

namespace {

#define PK_CHECK_COMM(c)                                                                                              \
  do {                                                                                                                \
    if ((c) == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: comm is NULL", __func__); \
  } while (0)

pk_status make_comm(Device &device, Engine &engine, pk_engine_comm *ec, uint32_t flags, uint32_t timeout_ms,
                    pk_comm_t *out) {
  auto comm = std::make_unique<pk_comm_s>();
  comm->device = &device;
  comm->engine = &engine;
  comm->ec = ec;
  comm->rank = engine.api->comm_rank(ec);
  comm->size = engine.api->comm_size(ec);
  comm->flags = flags;
  comm->timeout_ms = timeout_ms ? timeout_ms : PK_COMM_DEFAULT_TIMEOUT_MS;
  *out = comm.release();
  return PK_OK;
}

}  // namespace

extern "C" {

pk_status pk_comm_engine_available(const char *name) {
  Engine *e = nullptr;
  if (name == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: name is NULL", __func__);
  if (is_native(name)) {
    Backend *b = nullptr;
    return find_native_backend(__func__, &b);
  }
  return get_engine(__func__, name, &e);
}

pk_status pk_comm_get_unique_id(const char *engine, pk_comm_unique_id *out) {
  if (out == nullptr || out->struct_size < sizeof(pk_comm_unique_id)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "%s: out is NULL or its struct_size is below %zu (PK_STRUCT_INIT it)", __func__,
                     sizeof(pk_comm_unique_id));
  }
  // Unnamed: native when a loaded backend offers native collectives (pk_comm_create's default on its devices).
  // Where the backend's library is absent (PK_ERROR_NOT_FOUND) an unnamed token falls back to the engine, as
  // pk_comm_create's default does.
  const char *name = named_engine(engine);
  const bool by_default = name == nullptr;
  if (by_default && native_backend_available()) name = "native";
  if (is_native(name)) {
    Backend *b = nullptr;
    if (pk_status st = find_native_backend(__func__, &b)) return st;
    std::memset(out->internal, 0, sizeof out->internal);
    pk_status st = b->api.comm_get_unique_id(b->context, out);
    if (st == PK_OK) {
      out->struct_size = sizeof(pk_comm_unique_id);
      std::memset(out->engine, 0, sizeof out->engine);
      std::snprintf(out->engine, sizeof out->engine, "native");
      return PK_OK;
    }
    if (!(by_default && st == PK_ERROR_NOT_FOUND)) return native_error(*b, st, __func__, "comm_get_unique_id");
    name = nullptr;
  }
  Engine *e = nullptr;
  if (pk_status st = get_engine(__func__, name, &e)) return st;
  char err[PK_MESSAGE_CAPACITY] = {0};
  std::memset(out->engine, 0, sizeof out->engine);
  std::snprintf(out->engine, sizeof out->engine, "%s", e->name.c_str());
  if (pk_status st = e->api->unique_id(out->internal, err)) {
    return set_error(st, PK_OP_NONE, -1, 0, "%s: engine '%s': %s", __func__, e->name.c_str(), err);
  }
  return PK_OK;
}

pk_status pk_comm_create(pk_device_t device, const pk_comm_options *options, pk_comm_t *out) {
  if (out == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: out is NULL", __func__);
  *out = nullptr;
  if (device == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: device is NULL", __func__);
  pk_comm_options o;
  PK_STRUCT_INIT(o);
  o.nranks = -1;
  o.rank = -1;
  if (options != nullptr) {
    if (options->struct_size < sizeof(pk_comm_options)) {
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                       "%s: options->struct_size %u is below %zu (PK_STRUCT_INIT it)", __func__, options->struct_size,
                       sizeof(pk_comm_options));
    }
    o = *options;
  }
  if (o.flags & ~uint32_t{PK_COMM_UNCHECKED}) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: options->flags 0x%x has unknown bits", __func__,
                     o.flags);
  }
  const char *engine_name = o.engine;
  if (o.unique_id != nullptr) {
    const pk_comm_unique_id &id = *o.unique_id;
    if (id.struct_size < sizeof(pk_comm_unique_id) || strnlen(id.engine, sizeof id.engine) == sizeof id.engine) {
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                       "%s: options->unique_id is not a token of pk_comm_get_unique_id", __func__);
    }
    if (engine_name != nullptr && std::strcmp(engine_name, id.engine) != 0) {
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                       "%s: options->engine '%s' differs from the engine '%s' that made the unique id", __func__,
                       engine_name, id.engine);
    }
    engine_name = id.engine;
    if (o.nranks < 0 || (o.nranks > 0 && (o.rank < 0 || o.rank >= o.nranks))) {
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                       "%s: with a unique id, nranks (%d) must be >= 0 and rank (%d) in 0..nranks-1", __func__,
                       o.nranks, o.rank);
    }
  }
  // Native collectives when named ("native"), or by default when the device's backend offers them.
  engine_name = named_engine(engine_name);
  const bool native = engine_name ? is_native(engine_name) : has_native_slots(device->backend->api);
  if (native && !has_native_slots(device->backend->api)) {
    return set_error(PK_ERROR_NOT_FOUND, PK_OP_NONE, -1, 0,
                     "%s: backend '%s' has no native collectives (its plugin leaves the native slots NULL); name an "
                     "engine such as \"mpi\" instead",
                     __func__, device->backend->info.name);
  }
  if (native && o.unique_id != nullptr && o.nranks < 1) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "%s: native collectives have no non-members: with a \"native\" unique id nranks (%d) must be "
                     ">= 1",
                     __func__, o.nranks);
  }
  bool use_engine = false;
  if (native && o.unique_id != nullptr)
    return create_native_comm(*device, o, nullptr, nullptr, false, &use_engine, out);
  const bool by_default = engine_name == nullptr;
  // The launcher's world is an engine's notion: a native communicator over it is bootstrapped through the engine
  // ($PRIMKIT_COLLECTIVES_ENGINE unless that names "native", else "mpi"), which hands rank 0's token to the others.
  if (native) engine_name = nullptr;
  Engine *e = nullptr;
  if (pk_status st = get_engine(__func__, engine_name, &e)) return st;
  char err[PK_MESSAGE_CAPACITY] = {0};
  pk_engine_comm *ec = nullptr;
  pk_status st = e->api->comm_create(o.unique_id ? o.unique_id->internal : nullptr, o.nranks, o.rank, &ec, err);
  if (st == PK_OK && native) {
    st = create_native_comm(*device, o, e, ec, by_default, &use_engine, out);
    if (st != PK_OK || !use_engine) return st;
    return make_comm(*device, *e, ec, o.flags, o.timeout_ms, out);
  }
  if (st != PK_OK) return set_error(st, PK_OP_NONE, -1, 0, "%s: engine '%s': %s", __func__, e->name.c_str(), err);
  if (ec == nullptr) return PK_OK;  // not a member (nranks 0)
  return make_comm(*device, *e, ec, o.flags, o.timeout_ms, out);
}

pk_status pk_comm_split(pk_comm_t comm, int32_t color, int32_t key, pk_comm_t *out) {
  PK_CHECK_COMM(comm);
  if (out == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: out is NULL", __func__);
  *out = nullptr;
  std::string why;
  if (comm->state(&why) != PK_OK) {
    return set_error(PK_ERROR_COMM_FAILED, PK_OP_NONE, -1, 0, "%s: the communicator failed earlier: %s", __func__,
                     why.c_str());
  }
  if (color < -1) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: color %d must be >= 0, or -1 to opt out",
                     __func__, color);
  }
  if (comm->native()) return split_native_comm(comm, color, key, out);
  char err[PK_MESSAGE_CAPACITY] = {0};
  pk_engine_comm *ec = nullptr;
  pk_status st = comm->engine->api->comm_split(comm->ec, color, key, &ec, err);
  if (st != PK_OK)
    return set_error(st, PK_OP_NONE, -1, 0, "%s: engine '%s': %s", __func__, comm->engine->name.c_str(), err);
  if (ec == nullptr) return PK_OK;
  return make_comm(*comm->device, *comm->engine, ec, comm->flags, comm->timeout_ms, out);
}

void pk_comm_destroy(pk_comm_t comm) {
  if (comm == nullptr) return;
  if (comm->native()) {
    destroy_native_comm(comm);
    return;
  }
  // A failed communicator whose transfers all finished (an abort between calls, a mismatch) is released normally.
  const bool healthy = !comm->abandoned.load();
  comm->engine->api->comm_destroy(comm->ec, healthy ? 1 : 0);
  if (!healthy) {
    // The engine may still write the scratch blocks of the failed call: they go with the leaked requests.
    for (auto &kv : comm->scratch) kv.second.release();
  }
  delete comm;
}

pk_status pk_comm_abort(pk_comm_t comm) {
  PK_CHECK_COMM(comm);
  comm->aborted.store(true);
  // The backend's calls in flight end with its own abort (the runtime does not poll them as it polls an engine's).
  if (comm->native()) {
    Backend &b = comm->backend();
    if (pk_status st = b.api.comm_abort(comm->bc)) return native_error(b, st, __func__, "comm_abort");
  }
  return PK_OK;
}

pk_status pk_comm_rank(pk_comm_t comm, int32_t *out) {
  PK_CHECK_COMM(comm);
  if (out == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: out is NULL", __func__);
  *out = comm->rank;
  return PK_OK;
}

pk_status pk_comm_size(pk_comm_t comm, int32_t *out) {
  PK_CHECK_COMM(comm);
  if (out == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: out is NULL", __func__);
  *out = comm->size;
  return PK_OK;
}

pk_device_t pk_comm_device(pk_comm_t comm) {
  return comm ? comm->device : nullptr;
}

const char *pk_comm_engine(pk_comm_t comm) {
  if (comm == nullptr) return "";
  return comm->engine ? comm->engine->name.c_str() : "native";
}

pk_status pk_comm_set_timeout(pk_comm_t comm, uint32_t timeout_ms) {
  PK_CHECK_COMM(comm);
  if (timeout_ms == 0) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: timeout_ms must be > 0", __func__);
  }
  comm->timeout_ms = timeout_ms;
  return PK_OK;
}

pk_status pk_comm_status(pk_comm_t comm) {
  PK_CHECK_COMM(comm);
  std::string why;
  pk_status st = comm->state(&why);
  if (st == PK_OK) return PK_OK;
  return set_error(st, PK_OP_NONE, -1, 0, "communicator failed: %s", why.c_str());
}

pk_status pk_comm_get_stats(pk_comm_t comm, pk_comm_stats *out) {
  PK_CHECK_COMM(comm);
  if (out == nullptr || out->struct_size < offsetof(pk_comm_stats, native_calls)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: out is NULL or its struct_size is too small",
                     __func__);
  }
  pk_comm_stats s;
  PK_STRUCT_INIT(s);
  s.calls = comm->calls;
  s.direct_calls = comm->direct_calls;
  s.staged_calls = comm->staged_calls;
  s.staged_bytes = comm->staged_bytes;
  s.native_calls = comm->native_calls;
  s.bytes_sent = comm->bytes_sent;
  uint32_t size = out->struct_size;
  std::memcpy(out, &s, std::min<size_t>(size, sizeof s));
  out->struct_size = size;
  return PK_OK;
}

}  // extern "C"
