// planted_bug_engine.cpp — a planted-bug collectives engine: the MPI engine with exactly one defect, so that the
// conformance suite's collectives stage can show it catches a wrong collective (the backends' planted bugs cannot:
// the runtime and the engine do the collectives, the backend only holds the memory).
//
// Compiled with -DPK_PLANTED_ENGINE_BUG=<name> into libprimkit_engine_bug_<name>.so, outside the plugin folder;
// selected with PRIMKIT_PLUGIN_PATH=<that folder> PRIMKIT_COLLECTIVES_ENGINE=bug_<name>. It copies nothing of the
// MPI engine: it dlopens the real one (path fixed at build time in PK_INNER_ENGINE_PATH) and hands the runtime its
// function table with start/test/abandon wrapped, so that a finished transfer can be altered before the runtime
// sees it. The defect stays inside the receive buffer the runtime handed over.
//
// The defects (PK_PLANTED_ENGINE_BUG):
//   gather_flip   on rank 0, an all-gather of 4-byte units (f32, i32 elements) delivers the last element of the
//                 last rank's block with its lowest bit flipped (1 ulp for f32, +-1 for i32); 8-byte units (the
//                 runtime's call headers, f64, i64, c64) and 1- and 2-byte units are untouched.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "collective_engine.h"

#define PK_STR2(x) #x
#define PK_STR(x) PK_STR2(x)

namespace {

const pk_engine_api *g_inner = nullptr;
pk_engine_api g_api;

// The runtime's request handle: the inner engine's request and the transfer it moves (whose buffers and count
// arrays the runtime keeps alive until the request completes).
struct Wrapped {
  pk_engine_request *inner;
  pk_engine_transfer transfer;
  int32_t rank;
  int32_t size;
};

bool planted_here(const Wrapped &w) {
  return std::strcmp(PK_STR(PK_PLANTED_ENGINE_BUG), "gather_flip") == 0 && w.rank == 0 && w.size >= 2 &&
         w.transfer.unit_bytes == 4 &&
         (w.transfer.kind == PK_TRANSFER_ALLGATHER || w.transfer.kind == PK_TRANSFER_ALLGATHERV);
}

// Applies the defect to a finished transfer.
void plant(const Wrapped &w) {
  if (!planted_here(w) || w.transfer.recv == nullptr) return;
  const pk_engine_transfer &t = w.transfer;
  const int32_t last = w.size - 1;
  int64_t count = t.count, first = static_cast<int64_t>(last) * t.count;
  if (t.kind == PK_TRANSFER_ALLGATHERV) {
    count = t.recv_counts[last];
    first = t.recv_displs[last];
  }
  if (count <= 0) return;
  uint8_t *element = static_cast<uint8_t *>(t.recv) + (first + count - 1) * 4;
  element[0] ^= 1u;  // little-endian: the lowest bit of the unit
}

pk_status wrapped_start(pk_engine_comm *comm, const pk_engine_transfer *t, pk_engine_request **out, char *err) {
  pk_engine_request *inner = nullptr;
  const pk_status st = g_inner->start(comm, t, &inner, err);
  if (st != PK_OK) return st;
  Wrapped w{inner, *t, g_inner->comm_rank(comm), g_inner->comm_size(comm)};
  if (inner == nullptr) {  // finished at once: the runtime will not test it
    plant(w);
    *out = nullptr;
    return PK_OK;
  }
  *out = reinterpret_cast<pk_engine_request *>(new Wrapped(w));
  return PK_OK;
}

pk_status wrapped_test(pk_engine_request *request, char *err) {
  Wrapped *w = reinterpret_cast<Wrapped *>(request);
  const pk_status st = g_inner->test(w->inner, err);
  if (st == PK_NOT_READY) return st;
  if (st == PK_OK) plant(*w);
  delete w;
  return st;
}

void wrapped_abandon(pk_engine_request *request) {
  Wrapped *w = reinterpret_cast<Wrapped *>(request);
  g_inner->abandon(w->inner);
  delete w;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) pk_status pk_collective_engine_entry(uint32_t host_version,
                                                                                       const pk_engine_api **out,
                                                                                       char *err) {
  void *lib = dlopen(PK_INNER_ENGINE_PATH, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (lib == nullptr) {
    std::snprintf(err, PK_MESSAGE_CAPACITY, "planted-bug engine: cannot load %s: %s", PK_INNER_ENGINE_PATH, dlerror());
    return PK_ERROR_NOT_FOUND;
  }
  auto entry = reinterpret_cast<pk_engine_entry_fn>(dlsym(lib, PK_ENGINE_ENTRY_SYMBOL));
  if (entry == nullptr) {
    std::snprintf(err, PK_MESSAGE_CAPACITY, "planted-bug engine: %s has no %s", PK_INNER_ENGINE_PATH,
                  PK_ENGINE_ENTRY_SYMBOL);
    return PK_ERROR_NOT_FOUND;
  }
  if (pk_status st = entry(host_version, &g_inner, err)) return st;
  g_api = *g_inner;
  g_api.name = "bug_" PK_STR(PK_PLANTED_ENGINE_BUG);
  g_api.start = wrapped_start;
  g_api.test = wrapped_test;
  g_api.abandon = wrapped_abandon;
  *out = &g_api;
  return PK_OK;
}
