// native_mpi_backend.cpp — a TEST plugin with native collectives: the real CPU plugin's table (loaded with dlopen)
// for memory, streams and ops, plus the native collective slots of pk_backend_api implemented on MPI called
// directly. MPI plays the part of a vendor's NCCL-like library here, so that CI drives the runtime's native path
// (pk_comm_stats.native_calls) on a machine without GPUs. Named "cpu-native-mpi".
//
// The data moves through MPI's own nonblocking collectives and point-to-point calls; the reductions are the
// runtime's rank-order fold (collectives_reduce.cpp, compiled in), applied to rows MPI gathered, so that results
// keep primkit_collectives.h's reduction contract bitwise. A launch waits for the stream's earlier work and then
// for the transfer on the calling thread (the CPU streams leave no way to enqueue a host callback): ordered as
// op_launch promises, only not asynchronous. Within a backend group, transfers are posted at launch and completed
// together at group_end, as NCCL does.
//
// Built twice: PK_NATIVE_PARTIAL leaves group_start and group_end NULL ("cpu-native-partial"), a table the runtime
// must refuse at load. Test hook: the extension "cpu_native_mpi_fail_kind" (void (*)(int32_t kind)) makes the next
// collective_launch of that PK_COLLECTIVE_* kind fail with PK_ERROR_DEVICE (-1: none); "cpu_native_mpi_set_unavailable"
// (void (*)(int32_t on)) makes comm_get_unique_id answer PK_ERROR_NOT_FOUND, as a backend whose library is absent.
#include <dlfcn.h>
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "collectives_internal.hpp"
#include "primkit/primkit.h"
#include "primkit/primkit_collectives.h"

#ifndef PK_NATIVE_NAME
#define PK_NATIVE_NAME "cpu-native-mpi"
#endif

namespace {

pk_backend_api g_api;
const pk_backend_api *g_real = nullptr;
pk_status g_status = PK_ERROR_NOT_FOUND;
char g_message[256] = {0};
std::atomic<int32_t> g_fail_kind{-1};
std::atomic<bool> g_unavailable{false};
constexpr uint8_t kIdMagic[4] = {'P', 'K', 'N', 'M'};
constexpr int kTag = 4242;
const char *const kKinds[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                              "reduce",     "all_to_all", "send",           "recv"};

// This plugin's own errors, reported by get_last_error before the CPU plugin's.
thread_local bool t_has_error = false;
thread_local pk_error_info t_error;

pk_status fail(pk_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
pk_status fail(pk_status st, const char *fmt, ...) {
  std::memset(&t_error, 0, sizeof t_error);
  t_error.struct_size = sizeof t_error;
  t_error.status = st;
  t_error.op_id = PK_OP_NONE;
  t_error.arg_index = -1;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(t_error.message, sizeof t_error.message, fmt, ap);
  va_end(ap);
  t_has_error = true;
  return st;
}

pk_status mpi_fail(int rc, const char *call) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return fail(PK_ERROR_COMM_FAILED, "%s failed: %s", call, text);
}

pk_status ensure_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return PK_OK;
  // Not bootstrapped by the runtime's engine (a unique id made in a process that has not used MPI yet): start MPI
  // as a vendor library would start its own runtime. Pinned, since MPI_Finalize then runs at exit.
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&ensure_mpi), &info) != 0) dlopen(info.dli_fname, RTLD_NOW | RTLD_NODELETE);
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Init_thread");
  std::atexit([] { MPI_Finalize(); });
  return PK_OK;
}

struct NComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::atomic<bool> aborted{false};
};

// One posted transfer: its requests, and what runs once they are done (a reduction of the gathered rows).
struct Pending {
  NComm *comm = nullptr;
  int32_t kind = 0;
  uint32_t timeout_ms = 0;
  std::vector<MPI_Request> requests;
  std::shared_ptr<std::vector<uint8_t>> rows;
  std::function<void()> after;
};

thread_local int t_group_depth = 0;
thread_local std::vector<Pending> t_pending;

pk_status complete(Pending &p) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(p.timeout_ms);
  for (uint64_t spins = 0;; ++spins) {
    int done = 0;
    int rc = MPI_Testall(static_cast<int>(p.requests.size()), p.requests.data(), &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Testall");
    if (done) break;
    // The requests are left pending: MPI cannot cancel a collective, and the communicator is failed from now on.
    if (p.comm->aborted.load()) {
      return fail(PK_ERROR_COMM_FAILED, "%s: the communicator was aborted (comm_abort)", kKinds[p.kind]);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return fail(PK_ERROR_TIMEOUT, "%s did not finish within %u ms", kKinds[p.kind], p.timeout_ms);
    }
    if (spins > 256) sched_yield();
  }
  if (p.after) p.after();
  return PK_OK;
}

uint8_t *host(const pk_tensor *t) {
  return t ? static_cast<uint8_t *>(t->data) + t->byte_offset : nullptr;
}

int64_t numel(const pk_tensor *t) {
  int64_t n = 1;
  for (int32_t i = 0; t && i < t->ndim; ++i) n *= t->shape[i];
  return t ? n : 0;
}

// Posts the MPI transfer of one collective; the reductions run in `after`, once the rows have arrived.
pk_status post(NComm &c, const pk_collective_desc &d, Pending &p) {
  const pk_tensor *any = d.send ? d.send : d.recv;
  const int32_t dtype = pk::meta::dtype_id(any->dtype);
  const uint64_t es = (any->dtype.bits / 8u) * any->dtype.lanes;
  const uint64_t sb = static_cast<uint64_t>(numel(d.send)) * es, rb = static_cast<uint64_t>(numel(d.recv)) * es;
  if (sb * static_cast<uint64_t>(c.size) > INT_MAX || rb > INT_MAX) {
    return fail(PK_UNIMPLEMENTED, "%s: %llu bytes is more than this test backend hands MPI in one call", kKinds[d.kind],
                static_cast<unsigned long long>(sb > rb ? sb : rb));
  }
  uint8_t *s = host(d.send), *r = host(d.recv);
  const int n = c.size;
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  auto rows = [&](uint64_t bytes) {
    p.rows = std::make_shared<std::vector<uint8_t>>(bytes * static_cast<uint64_t>(n) + 1);
    return p.rows->data();
  };
  switch (d.kind) {
    case PK_COLLECTIVE_ALL_REDUCE: {
      uint8_t *tmp = rows(sb);
      rc = MPI_Iallgather(s, static_cast<int>(sb), MPI_BYTE, tmp, static_cast<int>(sb), MPI_BYTE, c.comm, &req);
      const int64_t count = numel(d.send);
      p.after = [=] { pk::rt::coll::reduce_rows(dtype, d.reduce_op, tmp, sb, n, count, r); };
      break;
    }
    case PK_COLLECTIVE_REDUCE_SCATTER: {
      uint8_t *tmp = rows(rb);
      rc = MPI_Ialltoall(s, static_cast<int>(rb), MPI_BYTE, tmp, static_cast<int>(rb), MPI_BYTE, c.comm, &req);
      const int64_t count = numel(d.recv);
      p.after = [=] { pk::rt::coll::reduce_rows(dtype, d.reduce_op, tmp, rb, n, count, r); };
      break;
    }
    case PK_COLLECTIVE_REDUCE: {
      uint8_t *tmp = rows(sb);
      rc = MPI_Igather(s, static_cast<int>(sb), MPI_BYTE, tmp, static_cast<int>(sb), MPI_BYTE, d.peer, c.comm, &req);
      const int64_t count = numel(d.send);
      if (c.rank == d.peer) p.after = [=] { pk::rt::coll::reduce_rows(dtype, d.reduce_op, tmp, sb, n, count, r); };
      break;
    }
    case PK_COLLECTIVE_ALL_GATHER:
      if (s == r + static_cast<uint64_t>(c.rank) * sb) {
        rc = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_BYTE, r, static_cast<int>(sb), MPI_BYTE, c.comm, &req);
      } else {
        rc = MPI_Iallgather(s, static_cast<int>(sb), MPI_BYTE, r, static_cast<int>(sb), MPI_BYTE, c.comm, &req);
      }
      break;
    case PK_COLLECTIVE_BROADCAST:
      if (s != nullptr && s != r && rb) std::memcpy(r, s, rb);
      rc = MPI_Ibcast(r, static_cast<int>(rb), MPI_BYTE, d.peer, c.comm, &req);
      break;
    case PK_COLLECTIVE_ALL_TO_ALL: {
      const int each = static_cast<int>(sb / static_cast<uint64_t>(n));
      rc = MPI_Ialltoall(s, each, MPI_BYTE, r, each, MPI_BYTE, c.comm, &req);
      break;
    }
    case PK_COLLECTIVE_SEND:
      rc = MPI_Isend(s, static_cast<int>(sb), MPI_BYTE, d.peer, kTag, c.comm, &req);
      break;
    case PK_COLLECTIVE_RECV:
      rc = MPI_Irecv(r, static_cast<int>(rb), MPI_BYTE, d.peer, kTag, c.comm, &req);
      break;
    default:
      return fail(PK_ERROR_INVALID_ARGUMENT, "collective kind %d is unknown", d.kind);
  }
  if (rc != MPI_SUCCESS) return mpi_fail(rc, kKinds[d.kind]);
  p.requests.push_back(req);
  return PK_OK;
}

// --- the native slots ------------------------------------------------------------------------------------------

pk_status native_unique_id(pk_be_context *, pk_comm_unique_id *out) {
  t_has_error = false;
  if (g_unavailable.load()) {
    return fail(PK_ERROR_NOT_FOUND, "the vendor library is absent (cpu_native_mpi_set_unavailable)");
  }
  std::memset(out->internal, 0, sizeof out->internal);
  std::memcpy(out->internal, kIdMagic, sizeof kIdMagic);
  std::random_device rd;
  for (int i = 0; i < 4; ++i) {
    uint32_t v = rd();
    std::memcpy(out->internal + sizeof kIdMagic + 4 * i, &v, 4);
  }
  return PK_OK;
}

pk_status finish(MPI_Comm m, pk_be_comm **out) {
  if (m == MPI_COMM_NULL) {
    *out = nullptr;
    return PK_OK;
  }
  MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN);
  auto c = std::make_unique<NComm>();
  c->comm = m;
  MPI_Comm_rank(m, &c->rank);
  MPI_Comm_size(m, &c->size);
  *out = reinterpret_cast<pk_be_comm *>(c.release());
  return PK_OK;
}

// Like a vendor library without a launcher's help: every process of MPI's world joins (MPI_Comm_split by the
// token's hash), which is how the tests and the conformance stage use it.
pk_status native_comm_create(pk_be_context *, uint32_t, const pk_comm_unique_id *id, int32_t nranks, int32_t rank,
                             pk_be_comm **out) {
  t_has_error = false;
  if (pk_status st = ensure_mpi()) return st;
  if (std::memcmp(id->internal, kIdMagic, sizeof kIdMagic) != 0) {
    return fail(PK_ERROR_INVALID_ARGUMENT, "the unique id was not made by %s", PK_NATIVE_NAME);
  }
  uint32_t color = 0;
  for (size_t i = 0; i < PK_COMM_UNIQUE_ID_BYTES; ++i) color = color * 16777619u ^ id->internal[i];
  MPI_Comm m = MPI_COMM_NULL;
  int rc = MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color & 0x7fffffffu), rank, &m);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_split");
  int size = 0;
  MPI_Comm_size(m, &size);
  if (size != nranks) {
    MPI_Comm_free(&m);
    return fail(PK_ERROR_INVALID_ARGUMENT, "%d processes joined the unique id, but nranks is %d", size, nranks);
  }
  return finish(m, out);
}

pk_status native_comm_split(pk_be_comm *comm, int32_t color, int32_t key, pk_be_comm **out) {
  t_has_error = false;
  auto *c = reinterpret_cast<NComm *>(comm);
  MPI_Comm m = MPI_COMM_NULL;
  int rc = MPI_Comm_split(c->comm, color < 0 ? MPI_UNDEFINED : color, key, &m);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_split");
  return finish(m, out);
}

pk_status native_comm_destroy(pk_be_comm *comm) {
  t_has_error = false;
  auto *c = reinterpret_cast<NComm *>(comm);
  // After an abort or a timeout, requests may still be pending on it: MPI_Comm_free would wait for them.
  if (!c->aborted.load()) MPI_Comm_free(&c->comm);
  delete c;
  return PK_OK;
}

pk_status native_comm_abort(pk_be_comm *comm) {
  reinterpret_cast<NComm *>(comm)->aborted.store(true);
  return PK_OK;
}

pk_status native_collective_launch(pk_be_stream *stream, pk_be_comm *comm, const pk_collective_desc *desc) {
  t_has_error = false;
  auto *c = reinterpret_cast<NComm *>(comm);
  if (c->aborted.load()) return fail(PK_ERROR_COMM_FAILED, "the communicator was aborted (comm_abort)");
  int32_t planted = desc->kind;
  if (g_fail_kind.compare_exchange_strong(planted, -1)) {
    return fail(PK_ERROR_DEVICE, "%s: injected failure (cpu_native_mpi_fail_kind)", kKinds[desc->kind]);
  }
  // Ordered after the stream's earlier work; its sticky error comes back as the CPU plugin reports it.
  if (pk_status st = g_real->stream_synchronize(stream)) return st;
  Pending p;
  p.comm = c;
  p.kind = desc->kind;
  p.timeout_ms = desc->timeout_ms ? desc->timeout_ms : PK_COMM_DEFAULT_TIMEOUT_MS;
  if (pk_status st = post(*c, *desc, p)) return st;
  if (t_group_depth > 0) {
    t_pending.push_back(std::move(p));
    return PK_OK;
  }
  pk_status st = complete(p);
  if (st == PK_ERROR_TIMEOUT) c->aborted.store(true);  // its requests stay pending: never free the MPI comm
  return st;
}

[[maybe_unused]] pk_status native_group_start(pk_be_context *) {
  t_has_error = false;
  ++t_group_depth;
  return PK_OK;
}

[[maybe_unused]] pk_status native_group_end(pk_be_context *) {
  t_has_error = false;
  if (t_group_depth == 0) return fail(PK_ERROR_INVALID_ARGUMENT, "group_end without group_start");
  if (--t_group_depth > 0) return PK_OK;
  std::vector<Pending> pending;
  pending.swap(t_pending);
  pk_status first = PK_OK;
  pk_error_info first_error{};
  for (Pending &p : pending) {
    pk_status st = complete(p);
    if (st == PK_ERROR_TIMEOUT) p.comm->aborted.store(true);
    if (st != PK_OK && first == PK_OK) {
      first = st;
      first_error = t_error;
    }
  }
  if (first != PK_OK) {
    t_error = first_error;
    t_has_error = true;
  }
  return first;
}

// --- the CPU plugin's table, with this plugin's name, errors and extension ----------------------------------------

pk_status shim_get_info(pk_be_context *ctx, pk_backend_info *out) {
  pk_status st = g_real->get_info(ctx, out);
  if (st == PK_OK) std::snprintf(out->name, sizeof out->name, "%s", PK_NATIVE_NAME);
  return st;
}

pk_status shim_get_last_error(pk_be_context *ctx, pk_error_info *out) {
  if (!t_has_error) return g_real->get_last_error(ctx, out);
  const uint32_t size = out->struct_size;
  std::memcpy(out, &t_error, std::min<size_t>(size, sizeof t_error));
  out->struct_size = size;
  return PK_OK;
}

void fail_kind(int32_t kind) {
  g_fail_kind.store(kind);
}
void set_unavailable(int32_t on) {
  g_unavailable.store(on != 0);
}

pk_proc shim_get_proc_address(pk_be_context *ctx, const char *name) {
  if (std::strcmp(name, "cpu_native_mpi_fail_kind") == 0) return reinterpret_cast<pk_proc>(&fail_kind);
  if (std::strcmp(name, "cpu_native_mpi_set_unavailable") == 0) return reinterpret_cast<pk_proc>(&set_unavailable);
  return g_real->get_proc_address ? g_real->get_proc_address(ctx, name) : nullptr;
}

}  // namespace

extern "C" PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                                const pk_backend_api **out_api, char *message,
                                                size_t message_capacity) {
  static std::once_flag once;
  std::call_once(once, [&] {
    void *lib = dlopen(PK_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    auto entry = lib ? reinterpret_cast<pk_backend_entry_fn>(dlsym(lib, PK_BACKEND_ENTRY_SYMBOL)) : nullptr;
    if (entry == nullptr) {
      std::snprintf(g_message, sizeof g_message, "cannot load %s: %s", PK_CPU_PLUGIN, lib ? "no entry" : dlerror());
      return;
    }
    uint32_t v = 0;
    g_status = entry(host, &v, &g_real, g_message, sizeof g_message);
    if (g_status != PK_OK) return;
    g_api = *g_real;
    g_api.struct_size = sizeof(pk_backend_api);
    g_api.get_info = shim_get_info;
    g_api.get_last_error = shim_get_last_error;
    g_api.get_proc_address = shim_get_proc_address;
    g_api.comm_get_unique_id = native_unique_id;
    g_api.comm_create = native_comm_create;
    g_api.comm_split = native_comm_split;
    g_api.comm_destroy = native_comm_destroy;
    g_api.comm_abort = native_comm_abort;
    g_api.collective_launch = native_collective_launch;
#ifndef PK_NATIVE_PARTIAL
    g_api.group_start = native_group_start;
    g_api.group_end = native_group_end;
#endif
  });
  if (g_status != PK_OK) {
    if (message && message_capacity) std::snprintf(message, message_capacity, "%s", g_message);
    return g_status;
  }
  *chosen_version = g_api.abi_version;
  *out_api = &g_api;
  return PK_OK;
}
