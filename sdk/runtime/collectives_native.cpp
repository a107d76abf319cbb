// collectives_native.cpp — communicators of a backend that fills the native collective slots of pk_backend_api (an
// NCCL-like library of the vendor's): the registry of such backends, creation (from a unique id, or from the
// launcher's world through a bootstrap engine), split, destroy, and the small exchanges that carry the cross-rank
// checks over the backend's own collectives. The collectives themselves are in collectives_ops.cpp (run_native).
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives_internal.hpp"

using namespace pk::rt;

namespace pk::rt::coll {
namespace {

// Live backends with native collectives, in load order. Never destroyed: a runtime may still be destroyed (and
// unregister its backends) during static destruction at exit.
std::mutex &g_native_mu = *new std::mutex;
std::vector<Backend *> &g_native = *new std::vector<Backend *>;

struct SlotName {
  const char *name;
  bool set;
};

std::vector<SlotName> native_slots(const pk_backend_api &api) {
  return {{"comm_get_unique_id", api.comm_get_unique_id != nullptr},
          {"comm_create", api.comm_create != nullptr},
          {"comm_split", api.comm_split != nullptr},
          {"comm_destroy", api.comm_destroy != nullptr},
          {"comm_abort", api.comm_abort != nullptr},
          {"collective_launch", api.collective_launch != nullptr},
          {"group_start", api.group_start != nullptr},
          {"group_end", api.group_end != nullptr}};
}

uint64_t align_up(uint64_t n) {
  return (n + 255) & ~uint64_t{255};
}

pk_tensor byte_tensor(const Device &dev, void *mem, uint64_t capacity, uint64_t offset, const int64_t *shape) {
  pk_tensor t{};
  t.struct_size = sizeof t;
  t.data = mem;
  t.byte_offset = offset;
  t.storage_bytes = capacity;
  t.device_type = dev.props.device_type;
  t.device_id = static_cast<int32_t>(dev.index);
  t.dtype = pk::meta::dtype_desc(PK_DTYPE_U8);
  t.ndim = 1;
  t.shape = shape;
  return t;
}

// Broadcasts `bytes` from rank 0 of the engine communicator, waiting up to timeout_ms.
pk_status engine_bcast(Engine &e, pk_engine_comm *ec, void *data, uint64_t bytes, uint32_t timeout_ms,
                       std::string *why) {
  pk_engine_transfer t{};
  t.kind = PK_TRANSFER_BCAST;
  t.unit_bytes = 1;
  t.recv = data;
  t.count = static_cast<int64_t>(bytes);
  t.peer = 0;
  char err[PK_MESSAGE_CAPACITY] = {0};
  pk_engine_request *req = nullptr;
  pk_status st = e.api->start(ec, &t, &req, err);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (st == PK_OK) {
    if ((st = e.api->test(req, err)) != PK_NOT_READY) break;
    st = PK_OK;
    if (std::chrono::steady_clock::now() > deadline) {
      e.api->abandon(req);
      std::snprintf(err, sizeof err, "the bootstrap broadcast did not finish within %u ms", timeout_ms);
      st = PK_ERROR_TIMEOUT;
      break;
    }
    sched_yield();
  }
  if (st != PK_OK) *why = err;
  return st;
}

// The rest of a native communicator, once the backend made its handle.
pk_status finish_native_comm(Device &device, pk_be_comm *bc, int32_t rank, int32_t size, uint32_t flags,
                             uint32_t timeout_ms, pk_comm_t *out) {
  auto comm = std::make_unique<pk_comm_s>();
  comm->device = &device;
  comm->bc = bc;
  comm->rank = rank;
  comm->size = size;
  comm->flags = flags;
  comm->timeout_ms = timeout_ms ? timeout_ms : PK_COMM_DEFAULT_TIMEOUT_MS;
  if (pk_status st = create_stream(device, &comm->check_stream)) {
    device.backend->api.comm_destroy(bc);
    return st;
  }
  *out = comm.release();
  return PK_OK;
}

}  // namespace

bool has_native_slots(const pk_backend_api &api) {
  for (const SlotName &s : native_slots(api))
    if (!s.set) return false;
  return true;
}

const char *partial_native_slot(const pk_backend_api &api) {
  const std::vector<SlotName> slots = native_slots(api);
  const bool any = std::any_of(slots.begin(), slots.end(), [](const SlotName &s) { return s.set; });
  if (!any) return nullptr;
  for (const SlotName &s : slots)
    if (!s.set) return s.name;
  return nullptr;
}

void native_backend_loaded(Backend *backend) {
  std::lock_guard<std::mutex> lock(g_native_mu);
  g_native.push_back(backend);
}

void native_backend_gone(Backend *backend) {
  std::lock_guard<std::mutex> lock(g_native_mu);
  g_native.erase(std::remove(g_native.begin(), g_native.end(), backend), g_native.end());
}

pk_status find_native_backend(const char *fn, Backend **out) {
  std::lock_guard<std::mutex> lock(g_native_mu);
  if (g_native.empty()) {
    return set_error(PK_ERROR_NOT_FOUND, PK_OP_NONE, -1, 0,
                     "%s: native collectives are unavailable: no loaded backend fills the native collective slots "
                     "(name an engine such as \"mpi\" instead)",
                     fn);
  }
  // A token carries no backend name (the backend owns all of its bytes): with two kinds of native backends loaded,
  // which one would have to read it is ambiguous.
  for (Backend *b : g_native) {
    if (std::strcmp(b->info.name, g_native[0]->info.name) != 0) {
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                       "%s: backends '%s' and '%s' both offer native collectives, so a \"native\" token would be "
                       "ambiguous; load only one of them in this process, or name an engine",
                       fn, g_native[0]->info.name, b->info.name);
    }
  }
  *out = g_native[0];
  return PK_OK;
}

bool native_backend_available() {
  std::lock_guard<std::mutex> lock(g_native_mu);
  return !g_native.empty();
}

pk_status native_error(const Backend &backend, pk_status status, const char *what, const char *slot,
                       uint32_t timeout_ms) {
  pk_error_info be;
  std::memset(&be, 0, sizeof be);
  be.struct_size = sizeof be;
  be.arg_index = -1;
  if (backend.api.get_last_error == nullptr || backend.api.get_last_error(backend.context, &be) != PK_OK) {
    std::snprintf(be.message, sizeof be.message, "(the backend gave no details)");
  }
  be.message[sizeof be.message - 1] = '\0';
  pk_status reported = status;
  if (status <= PK_OK || status > PK_ERROR_COMM_FAILED || status == PK_NOT_READY) reported = PK_ERROR_PLUGIN;
  // A timeout reads as the engine path's does, naming the call and its timeout first.
  if (reported == PK_ERROR_TIMEOUT && timeout_ms != 0) {
    return set_error(reported, PK_OP_NONE, -1, be.vendor_code,
                     "%s: did not finish within %u ms: backend '%s' native %s reported: %s (the communicator is now "
                     "failed)",
                     what, timeout_ms, backend.info.name, slot, be.message);
  }
  return set_error(reported, PK_OP_NONE, -1, be.vendor_code, "%s: backend '%s' native %s failed: %s%s", what,
                   backend.info.name, slot, be.message,
                   reported != status ? " (the backend returned a status code outside the ABI)" : "");
}

pk_status run_native_exchanges(std::vector<NativeExchange> &xs, const char *what) {
  if (xs.empty()) return PK_OK;
  Backend &b = xs[0].comm->backend();
  // Each exchange's place in its communicator's check buffer: [send | recv], 256-byte aligned.
  std::map<pk_comm_s *, uint64_t> used;
  std::vector<uint64_t> offsets(xs.size());
  std::vector<int64_t> send_shape(xs.size()), recv_shape(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    NativeExchange &x = xs[i];
    const bool gathers = x.kind == PK_COLLECTIVE_ALL_GATHER;
    send_shape[i] = x.kind == PK_COLLECTIVE_RECV ? 0 : static_cast<int64_t>(x.bytes);
    recv_shape[i] = x.kind == PK_COLLECTIVE_SEND ? 0 : static_cast<int64_t>(x.bytes * (gathers ? x.comm->size : 1));
    offsets[i] = used[x.comm];
    used[x.comm] += align_up(static_cast<uint64_t>(send_shape[i])) + align_up(static_cast<uint64_t>(recv_shape[i]));
  }
  auto fail_all = [&](pk_status st) {
    pk_error_info e;
    PK_STRUCT_INIT(e);
    pk_get_last_error(&e);
    for (auto &kv : used) kv.first->fail(st, e.message);
    return st;
  };
  // The check buffer grows as needed; the previous one is idle (every exchange ends with a synchronize).
  for (auto &kv : used) {
    pk_comm_s &c = *kv.first;
    if (c.check_cap >= kv.second) continue;
    if (c.check_mem) b.api.mem_free(b.context, c.device->index, c.check_mem);
    c.check_mem = nullptr;
    c.check_cap = 0;
    if (pk_status st = b.api.mem_alloc(b.context, c.device->index, kv.second, &c.check_mem)) {
      return native_error(b, st, what, "mem_alloc (of the check buffer)");
    }
    c.check_cap = kv.second;
  }
  std::vector<pk_tensor> sends(xs.size()), recvs(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    NativeExchange &x = xs[i];
    pk_comm_s &c = *x.comm;
    const uint64_t send_at = offsets[i], recv_at = offsets[i] + align_up(static_cast<uint64_t>(send_shape[i]));
    sends[i] = byte_tensor(*c.device, c.check_mem, c.check_cap, send_at, &send_shape[i]);
    recvs[i] = byte_tensor(*c.device, c.check_mem, c.check_cap, recv_at, &recv_shape[i]);
    if (send_shape[i] > 0) {
      pk_status st = b.api.copy_host_to_device(c.check_stream->stream, c.check_mem, send_at, x.send, x.bytes);
      if (st != PK_OK) return fail_all(native_error(b, st, what, "copy_host_to_device (of a check)"));
    }
  }
  const bool grouped = xs.size() > 1;
  if (grouped) {
    if (pk_status st = b.api.group_start(b.context)) return fail_all(native_error(b, st, what, "group_start"));
  }
  pk_status launched = PK_OK;
  for (size_t i = 0; i < xs.size() && launched == PK_OK; ++i) {
    NativeExchange &x = xs[i];
    pk_collective_desc d;
    PK_STRUCT_INIT(d);
    d.kind = x.kind;
    d.reduce_op = -1;
    d.peer = x.kind == PK_COLLECTIVE_ALL_GATHER ? -1 : x.peer;
    d.send = x.kind == PK_COLLECTIVE_RECV ? nullptr : &sends[i];
    d.recv = x.kind == PK_COLLECTIVE_SEND ? nullptr : &recvs[i];
    d.timeout_ms = x.comm->timeout_ms.load();
    pk_status st = b.api.collective_launch(x.comm->check_stream->stream, x.comm->bc, &d);
    if (st != PK_OK) launched = native_error(b, st, what, "collective_launch (of a check)", x.comm->timeout_ms.load());
  }
  if (grouped) {
    pk_status st = b.api.group_end(b.context);
    if (st != PK_OK && launched == PK_OK) launched = native_error(b, st, what, "group_end");
  }
  if (launched != PK_OK) return fail_all(launched);
  for (size_t i = 0; i < xs.size(); ++i) {
    NativeExchange &x = xs[i];
    if (recv_shape[i] == 0) continue;
    pk_comm_s &c = *x.comm;
    pk_status st = b.api.copy_device_to_host(c.check_stream->stream, x.recv, c.check_mem, recvs[i].byte_offset,
                                             static_cast<uint64_t>(recv_shape[i]));
    if (st != PK_OK) return fail_all(native_error(b, st, what, "copy_device_to_host (of a check)"));
  }
  for (auto &kv : used) {
    pk_status st = b.api.stream_synchronize(kv.first->check_stream->stream);
    if (st != PK_OK) return fail_all(native_error(b, st, what, "stream_synchronize (of a check)"));
  }
  return PK_OK;
}

pk_status create_native_comm(Device &device, const pk_comm_options &o, Engine *bootstrap, pk_engine_comm *ec,
                             bool by_default, bool *use_engine, pk_comm_t *out) {
  *use_engine = false;
  Backend &b = *device.backend;
  pk_comm_unique_id id;
  PK_STRUCT_INIT(id);
  int32_t rank = o.rank, size = o.nranks;
  if (o.unique_id != nullptr) {
    id = *o.unique_id;
  } else {
    // The launcher's world: rank 0 of the bootstrap engine's world makes the token and broadcasts it. The status
    // travels with it, so that every rank fails (or succeeds) together.
    rank = bootstrap->api->comm_rank(ec);
    size = bootstrap->api->comm_size(ec);
    struct {
      int32_t status;
      char reason[PK_MESSAGE_CAPACITY];
      pk_comm_unique_id id;
    } msg;
    std::memset(&msg, 0, sizeof msg);
    if (rank == 0) {
      PK_STRUCT_INIT(msg.id);
      msg.status = b.api.comm_get_unique_id(b.context, &msg.id);
      if (msg.status != PK_OK) {
        native_error(b, msg.status, "pk_comm_create", "comm_get_unique_id");
        pk_error_info e;
        PK_STRUCT_INIT(e);
        pk_get_last_error(&e);
        std::snprintf(msg.reason, sizeof msg.reason, "%s", e.message);
      }
    }
    std::string why;
    pk_status st =
        engine_bcast(*bootstrap, ec, &msg, sizeof msg, o.timeout_ms ? o.timeout_ms : PK_COMM_DEFAULT_TIMEOUT_MS, &why);
    if (st != PK_OK) {
      bootstrap->api->comm_destroy(ec, 0);
      return set_error(st, PK_OP_NONE, -1, 0, "pk_comm_create: engine '%s' (bootstrapping native collectives): %s",
                       bootstrap->name.c_str(), why.c_str());
    }
    msg.reason[sizeof msg.reason - 1] = '\0';
    // Native by default only: where the vendor's library is absent (it says PK_ERROR_NOT_FOUND on rank 0), every
    // rank keeps the engine's communicator instead, as if no native collectives were offered.
    if (msg.status == PK_ERROR_NOT_FOUND && by_default) {
      *use_engine = true;
      return PK_OK;
    }
    bootstrap->api->comm_destroy(ec, 1);
    if (msg.status != PK_OK) {
      return set_error(msg.status, PK_OP_NONE, -1, 0, "%s%s", msg.reason, rank == 0 ? "" : " (on rank 0)");
    }
    id = msg.id;
  }
  std::snprintf(id.engine, sizeof id.engine, "native");
  pk_be_comm *bc = nullptr;
  if (pk_status st = b.api.comm_create(b.context, device.index, &id, size, rank, &bc)) {
    return native_error(b, st, "pk_comm_create", "comm_create");
  }
  if (bc == nullptr) {
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0,
                     "pk_comm_create: backend '%s' native comm_create returned PK_OK but no communicator", b.info.name);
  }
  pk_comm_t comm = nullptr;
  if (pk_status st = finish_native_comm(device, bc, rank, size, o.flags, o.timeout_ms, &comm)) return st;
  if (o.unique_id != nullptr && comm->checked()) {
    // The members agree on nranks and hold distinct ranks: each one's claim lands at the place the backend gave it.
    int32_t mine[2] = {rank, size};
    std::vector<int32_t> all(2 * static_cast<size_t>(size));
    std::vector<NativeExchange> xs(1);
    xs[0].comm = comm;
    xs[0].send = mine;
    xs[0].recv = all.data();
    xs[0].bytes = sizeof mine;
    if (pk_status st = run_native_exchanges(xs, "pk_comm_create")) {
      destroy_native_comm(comm);
      return st;
    }
    for (int32_t r = 0; r < size; ++r) {
      if (all[2 * static_cast<size_t>(r)] != r || all[2 * static_cast<size_t>(r) + 1] != size) {
        destroy_native_comm(comm);
        return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                         "pk_comm_create: %d processes joined the unique id, and member %d claims rank %d of %d: every "
                         "member must pass the same nranks and a distinct rank below it",
                         size, r, all[2 * static_cast<size_t>(r)], all[2 * static_cast<size_t>(r) + 1]);
      }
    }
  }
  *out = comm;
  return PK_OK;
}

pk_status split_native_comm(pk_comm_t comm, int32_t color, int32_t key, pk_comm_t *out) {
  Backend &b = comm->backend();
  // The slot returns only the handle: the new rank and size follow from every rank's (color, key), exchanged first
  // (ordered by key, then by the rank in `comm`, as pk_comm_split promises).
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(2 * static_cast<size_t>(comm->size));
  std::vector<NativeExchange> xs(1);
  xs[0].comm = comm;
  xs[0].send = mine;
  xs[0].recv = all.data();
  xs[0].bytes = sizeof mine;
  if (pk_status st = run_native_exchanges(xs, "pk_comm_split")) return st;
  std::vector<std::pair<int32_t, int32_t>> members;  // (key, old rank) of this color
  for (int32_t r = 0; r < comm->size; ++r) {
    if (color >= 0 && all[2 * static_cast<size_t>(r)] == color)
      members.emplace_back(all[2 * static_cast<size_t>(r) + 1], r);
  }
  std::sort(members.begin(), members.end());
  pk_be_comm *bc = nullptr;
  if (pk_status st = b.api.comm_split(comm->bc, color, key, &bc))
    return native_error(b, st, "pk_comm_split", "comm_split");
  if (color < 0) {
    if (bc != nullptr) b.api.comm_destroy(bc);
    return PK_OK;
  }
  if (bc == nullptr) {
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0,
                     "pk_comm_split: backend '%s' native comm_split returned no communicator for color %d", b.info.name,
                     color);
  }
  int32_t new_rank = 0;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].second == comm->rank) new_rank = static_cast<int32_t>(i);
  return finish_native_comm(*comm->device, bc, new_rank, static_cast<int32_t>(members.size()), comm->flags,
                            comm->timeout_ms, out);
}

void destroy_native_comm(pk_comm_t comm) {
  Backend &b = comm->backend();
  b.api.comm_destroy(comm->bc);
  // After a failed call the backend may still use the check buffer (a transfer given up): it is leaked then.
  std::string why;
  if (comm->check_mem != nullptr && comm->state(&why) == PK_OK) {
    b.api.mem_free(b.context, comm->device->index, comm->check_mem);
  }
  destroy_stream(comm->check_stream);
  delete comm;
}

}  // namespace pk::rt::coll
