// nccl_collectives.cpp — the cuda backend's native collectives (the native slots of pk_backend_api) on NCCL, on the
// backend's own CUstreams and device pointers. NCCL is loaded with dlopen ("libnccl.so.2"), as libcuda is, so the
// plugin loads everywhere; where NCCL or a device is absent the slots say so (PK_ERROR_NOT_FOUND, with the reason),
// and the runtime's default then keeps the MPI engine (docs/collectives.md).
//
// NCCL's own declarations are restated here (the stable parts of nccl.h since 2.10): the project builds without the
// NCCL headers. What NCCL cannot reduce (i16, fp8 before NCCL 2.19 is not relied on, complex products and orders)
// is PK_UNIMPLEMENTED with the reason; moving data (gather, broadcast, all-to-all, send/recv) works for every dtype,
// as bytes.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "gpu_backend.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"
#include "primkit/primkit_collectives.h"

namespace pk::gpu {
namespace {

using pk::kit::fail;

// --- nccl.h, restated --------------------------------------------------------------------------------------------
using ncclResult_t = int;  // ncclSuccess = 0
constexpr ncclResult_t kNcclSuccess = 0, kNcclInvalidArgument = 4, kNcclInvalidUsage = 5;
struct ncclUniqueId {
  char internal[128];
};
static_assert(sizeof(ncclUniqueId) == PK_COMM_UNIQUE_ID_BYTES, "a pk token carries an ncclUniqueId whole");
using ncclComm_t = struct ncclComm *;
constexpr int kInt8 = 0, kUint8 = 1, kInt32 = 2, kInt64 = 4, kFloat16 = 6, kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9;
constexpr int kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4;
constexpr int kNoColor = -1;  // NCCL_SPLIT_NOCOLOR

struct Nccl {
  void *lib = nullptr;
  std::string why;  // empty when usable
  int version = 0;
  ncclResult_t (*GetVersion)(int *) = nullptr;
  const char *(*GetErrorString)(ncclResult_t) = nullptr;
  ncclResult_t (*GetUniqueId)(ncclUniqueId *) = nullptr;
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*CommSplit)(ncclComm_t, int, int, ncclComm_t *, void *) = nullptr;  // NCCL 2.18+
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*CommAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*CommCount)(ncclComm_t, int *) = nullptr;
  ncclResult_t (*AllReduce)(const void *, void *, size_t, int, int, ncclComm_t, void *) = nullptr;
  ncclResult_t (*AllGather)(const void *, void *, size_t, int, ncclComm_t, void *) = nullptr;
  ncclResult_t (*ReduceScatter)(const void *, void *, size_t, int, int, ncclComm_t, void *) = nullptr;
  ncclResult_t (*Broadcast)(const void *, void *, size_t, int, int, ncclComm_t, void *) = nullptr;
  ncclResult_t (*Reduce)(const void *, void *, size_t, int, int, int, ncclComm_t, void *) = nullptr;
  ncclResult_t (*Send)(const void *, size_t, int, int, ncclComm_t, void *) = nullptr;
  ncclResult_t (*Recv)(void *, size_t, int, int, ncclComm_t, void *) = nullptr;
  ncclResult_t (*GroupStart)() = nullptr;
  ncclResult_t (*GroupEnd)() = nullptr;
};

template <class F>
bool resolve(Nccl &n, F &slot, const char *name, bool required) {
  slot = reinterpret_cast<F>(dlsym(n.lib, name));
  if (slot == nullptr && required && n.why.empty()) n.why = std::string("libnccl.so.2 lacks ") + name;
  return slot != nullptr;
}

const Nccl &nccl() {
  static Nccl n = [] {
    Nccl l;
    l.lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (l.lib == nullptr) {
      const char *why = dlerror();
      l.why = std::string("libnccl.so.2 not found (") + (why ? why : "dlopen failed") + ")";
      return l;
    }
    resolve(l, l.GetVersion, "ncclGetVersion", true);
    resolve(l, l.GetErrorString, "ncclGetErrorString", true);
    resolve(l, l.GetUniqueId, "ncclGetUniqueId", true);
    resolve(l, l.CommInitRank, "ncclCommInitRank", true);
    resolve(l, l.CommSplit, "ncclCommSplit", false);
    resolve(l, l.CommDestroy, "ncclCommDestroy", true);
    resolve(l, l.CommAbort, "ncclCommAbort", true);
    resolve(l, l.CommCount, "ncclCommCount", true);
    resolve(l, l.AllReduce, "ncclAllReduce", true);
    resolve(l, l.AllGather, "ncclAllGather", true);
    resolve(l, l.ReduceScatter, "ncclReduceScatter", true);
    resolve(l, l.Broadcast, "ncclBroadcast", true);
    resolve(l, l.Reduce, "ncclReduce", true);
    resolve(l, l.Send, "ncclSend", true);
    resolve(l, l.Recv, "ncclRecv", true);
    resolve(l, l.GroupStart, "ncclGroupStart", true);
    resolve(l, l.GroupEnd, "ncclGroupEnd", true);
    if (l.why.empty() && l.GetVersion(&l.version) == kNcclSuccess && l.version < 21000) {
      l.why = "NCCL " + std::to_string(l.version) + " is older than 2.10 (no ncclAvg, no ncclSend/ncclRecv groups)";
    }
    return l;
  }();
  return n;
}

// PK_OK when NCCL and a device are there; otherwise PK_ERROR_NOT_FOUND saying which is missing.
pk_status available(pk_be_context *ctx) {
  const Nccl &n = nccl();
  if (!n.why.empty())
    return fail(PK_ERROR_NOT_FOUND, 0, -1, "cuda: native collectives (NCCL) unavailable: %s", n.why.c_str());
  if (executor_of(ctx).device_count() == 0) {
    return fail(PK_ERROR_NOT_FOUND, 0, -1,
                "cuda: native collectives (NCCL %d) unavailable: no CUDA driver or device in this process", n.version);
  }
  return PK_OK;
}

pk_status nccl_fail(ncclResult_t r, const char *call) {
  const pk_status st =
      r == kNcclInvalidArgument || r == kNcclInvalidUsage ? PK_ERROR_INVALID_ARGUMENT : PK_ERROR_COMM_FAILED;
  fail(st, 0, -1, "cuda: %s failed: %s (ncclResult %d)", call, nccl().GetErrorString(r), r);
  pk::kit::last_error().vendor_code = r;
  return st;
}

struct Comm {
  ncclComm_t comm = nullptr;
  pk_be_context *ctx = nullptr;
  uint32_t device = 0;
  std::atomic<bool> aborted{false};  // ncclCommAbort frees the communicator: destroy must not free it again
};

pk_status n_unique_id(pk_be_context *ctx, pk_comm_unique_id *out) {
  if (pk_status st = available(ctx)) return st;
  ncclUniqueId id;
  if (ncclResult_t r = nccl().GetUniqueId(&id)) return nccl_fail(r, "ncclGetUniqueId");
  std::memcpy(out->internal, id.internal, sizeof id.internal);
  return PK_OK;
}

pk_status n_comm_create(pk_be_context *ctx, uint32_t device, const pk_comm_unique_id *id, int32_t nranks, int32_t rank,
                        pk_be_comm **out) {
  if (pk_status st = available(ctx)) return st;
  if (pk_status st = executor_of(ctx).make_current(device)) return st;
  auto c = std::make_unique<Comm>();
  c->ctx = ctx;
  c->device = device;
  ncclUniqueId nid;
  std::memcpy(nid.internal, id->internal, sizeof nid.internal);
  if (ncclResult_t r = nccl().CommInitRank(&c->comm, nranks, nid, rank)) return nccl_fail(r, "ncclCommInitRank");
  *out = reinterpret_cast<pk_be_comm *>(c.release());
  return PK_OK;
}

pk_status n_comm_split(pk_be_comm *comm, int32_t color, int32_t key, pk_be_comm **out) {
  auto *c = reinterpret_cast<Comm *>(comm);
  if (nccl().CommSplit == nullptr) {
    return fail(PK_UNIMPLEMENTED, 0, -1, "cuda: NCCL %d has no ncclCommSplit (NCCL 2.18 or newer splits)",
                nccl().version);
  }
  if (pk_status st = executor_of(c->ctx).make_current(c->device)) return st;
  auto n = std::make_unique<Comm>();
  n->ctx = c->ctx;
  n->device = c->device;
  if (ncclResult_t r = nccl().CommSplit(c->comm, color < 0 ? kNoColor : color, key, &n->comm, nullptr))
    return nccl_fail(r, "ncclCommSplit");
  *out = n->comm ? reinterpret_cast<pk_be_comm *>(n.release()) : nullptr;
  return PK_OK;
}

pk_status n_comm_destroy(pk_be_comm *comm) {
  std::unique_ptr<Comm> c(reinterpret_cast<Comm *>(comm));
  if (c->aborted.load()) return PK_OK;
  if (ncclResult_t r = nccl().CommDestroy(c->comm)) return nccl_fail(r, "ncclCommDestroy");
  return PK_OK;
}

pk_status n_comm_abort(pk_be_comm *comm) {
  auto *c = reinterpret_cast<Comm *>(comm);
  if (c->aborted.exchange(true)) return PK_OK;
  if (ncclResult_t r = nccl().CommAbort(c->comm)) return nccl_fail(r, "ncclCommAbort");
  return PK_OK;
}

// NCCL's type and reduction for a PrimKit dtype and PK_REDUCE_*; false (with the reason) where NCCL has none.
// bool is one byte of 0 or 1: or is max and and is min. Complex sum and avg reduce the two parts as floats.
bool reduction_of(int32_t dtype, int32_t op, int *type, int *nop, int64_t *scale, const char **why) {
  static const int ops[] = {kSum, kProd, kMax, kMin, kAvg};
  *nop = ops[op];
  *scale = 1;
  switch (dtype) {
    case PK_DTYPE_BOOL:
      *type = kUint8;
      *nop = (op == PK_REDUCE_SUM || op == PK_REDUCE_MAX) ? kMax : kMin;
      return true;
    case PK_DTYPE_U8:
      *type = kUint8;
      return true;
    case PK_DTYPE_I8:
      *type = kInt8;
      return true;
    case PK_DTYPE_I32:
      *type = kInt32;
      return true;
    case PK_DTYPE_I64:
      *type = kInt64;
      return true;
    case PK_DTYPE_F16:
      *type = kFloat16;
      return true;
    case PK_DTYPE_BF16:
      *type = kBfloat16;
      return true;
    case PK_DTYPE_F32:
      *type = kFloat32;
      return true;
    case PK_DTYPE_F64:
      *type = kFloat64;
      return true;
    case PK_DTYPE_C64:
    case PK_DTYPE_C128:
      if (op != PK_REDUCE_SUM && op != PK_REDUCE_AVG) {
        *why = "NCCL reduces complex numbers only by sum and avg (as their two float parts)";
        return false;
      }
      *type = dtype == PK_DTYPE_C64 ? kFloat32 : kFloat64;
      *scale = 2;
      return true;
    default:
      *why = "NCCL has no reduction for this dtype (i16 and fp8 are not NCCL types this backend relies on)";
      return false;
  }
}

int64_t numel(const pk_tensor *t) {
  int64_t n = 1;
  for (int32_t i = 0; t && i < t->ndim; ++i) n *= t->shape[i];
  return t ? n : 0;
}
char *address(const pk_tensor *t) {
  return t ? static_cast<char *>(t->data) + t->byte_offset : nullptr;
}

pk_status n_collective_launch(pk_be_stream *stream, pk_be_comm *comm, const pk_collective_desc *d) {
  auto *c = reinterpret_cast<Comm *>(comm);
  if (pk_status st = stream_check(stream)) return st;
  if (c->aborted.load()) return fail(PK_ERROR_COMM_FAILED, 0, -1, "cuda: the NCCL communicator was aborted");
  if (pk_status st = executor_of(c->ctx).make_current(c->device)) return st;
  const Nccl &n = nccl();
  const pk_tensor *any = d->send ? d->send : d->recv;
  const int32_t dtype = pk::meta::dtype_id(any->dtype);
  const size_t es = pk::meta::dtype_size(dtype);
  const size_t send_bytes = static_cast<size_t>(numel(d->send)) * es,
               recv_bytes = static_cast<size_t>(numel(d->recv)) * es;
  char *s = address(d->send), *r = address(d->recv);
  void *cs = handle_of(stream);
  int type = kUint8, op = kSum;
  int64_t scale = 1;
  const char *why = "";
  const bool reduces =
      d->kind == PK_COLLECTIVE_ALL_REDUCE || d->kind == PK_COLLECTIVE_REDUCE_SCATTER || d->kind == PK_COLLECTIVE_REDUCE;
  if (reduces && !reduction_of(dtype, d->reduce_op, &type, &op, &scale, &why)) {
    return fail(PK_UNIMPLEMENTED, 0, -1, "cuda: reduction %d of %s: %s", d->reduce_op, pk::meta::dtype_name(dtype),
                why);
  }
  ncclResult_t res = kNcclSuccess;
  const char *call = "";
  switch (d->kind) {
    case PK_COLLECTIVE_ALL_REDUCE:
      call = "ncclAllReduce";
      res = n.AllReduce(s, r, static_cast<size_t>(numel(d->send) * scale), type, op, c->comm, cs);
      break;
    case PK_COLLECTIVE_REDUCE_SCATTER:
      call = "ncclReduceScatter";
      res = n.ReduceScatter(s, r, static_cast<size_t>(numel(d->recv) * scale), type, op, c->comm, cs);
      break;
    case PK_COLLECTIVE_REDUCE:
      call = "ncclReduce";  // recv is written on the root only; NCCL ignores recvbuff elsewhere
      res = n.Reduce(s, r ? r : s, static_cast<size_t>(numel(d->send) * scale), type, op, d->peer, c->comm, cs);
      break;
    case PK_COLLECTIVE_ALL_GATHER:
      call = "ncclAllGather";
      res = n.AllGather(s, r, send_bytes, kUint8, c->comm, cs);
      break;
    case PK_COLLECTIVE_BROADCAST:
      call = "ncclBroadcast";  // sendbuff is read on the root only
      res = n.Broadcast(s ? s : r, r, recv_bytes, kUint8, d->peer, c->comm, cs);
      break;
    case PK_COLLECTIVE_ALL_TO_ALL: {
      // NCCL has no all-to-all of its own: one send and one receive per peer in a group, as NCCL's docs show.
      call = "ncclSend/ncclRecv (all-to-all)";
      int nr = 1;
      if ((res = n.CommCount(c->comm, &nr)) != kNcclSuccess) break;
      const size_t chunk = send_bytes / static_cast<size_t>(nr);
      if ((res = n.GroupStart()) != kNcclSuccess) break;
      for (int p = 0; p < nr && res == kNcclSuccess; ++p) {
        res = n.Send(s + p * chunk, chunk, kUint8, p, c->comm, cs);
        if (res == kNcclSuccess) res = n.Recv(r + p * chunk, chunk, kUint8, p, c->comm, cs);
      }
      const ncclResult_t end = n.GroupEnd();
      if (res == kNcclSuccess) res = end;
      break;
    }
    case PK_COLLECTIVE_SEND:
      call = "ncclSend";
      res = n.Send(s, send_bytes, kUint8, d->peer, c->comm, cs);
      break;
    case PK_COLLECTIVE_RECV:
      call = "ncclRecv";
      res = n.Recv(r, recv_bytes, kUint8, d->peer, c->comm, cs);
      break;
    default:
      return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cuda: collective kind %d is unknown", d->kind);
  }
  if (res != kNcclSuccess) return nccl_fail(res, call);
  return PK_OK;
}

pk_status n_group_start(pk_be_context *) {
  if (!nccl().why.empty()) return fail(PK_ERROR_NOT_FOUND, 0, -1, "cuda: NCCL unavailable: %s", nccl().why.c_str());
  if (ncclResult_t r = nccl().GroupStart()) return nccl_fail(r, "ncclGroupStart");
  return PK_OK;
}

pk_status n_group_end(pk_be_context *) {
  if (!nccl().why.empty()) return fail(PK_ERROR_NOT_FOUND, 0, -1, "cuda: NCCL unavailable: %s", nccl().why.c_str());
  if (ncclResult_t r = nccl().GroupEnd()) return nccl_fail(r, "ncclGroupEnd");
  return PK_OK;
}

}  // namespace

void install_native_collectives(pk_backend_api &a) {
  a.comm_get_unique_id = pk::kit::guarded<n_unique_id>;
  a.comm_create = pk::kit::guarded<n_comm_create>;
  a.comm_split = pk::kit::guarded<n_comm_split>;
  a.comm_destroy = pk::kit::guarded<n_comm_destroy>;
  a.comm_abort = pk::kit::guarded<n_comm_abort>;
  a.collective_launch = pk::kit::guarded<n_collective_launch>;
  a.group_start = pk::kit::guarded<n_group_start>;
  a.group_end = pk::kit::guarded<n_group_end>;
}

}  // namespace pk::gpu
