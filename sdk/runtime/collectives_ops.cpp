// collectives_ops.cpp — the collective calls of primkit_collectives.h: validation, the cross-rank argument check,
// host views of the tensors (direct or staged), each collective as rounds of engine transfers with the local
// rank-order reduction between them, timeouts and aborts, and groups.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "collectives_internal.hpp"

using namespace pk::rt;
using Clock = std::chrono::steady_clock;

namespace pk::rt::coll {
namespace {

// What every rank sends before data moves (unless PK_COMM_UNCHECKED): the call as this rank sees it.
struct WireHeader {
  char magic[4];
  int32_t kind;
  int32_t reduce_op;
  int32_t peer;
  int32_t dtype;
  int32_t ndim;
  int64_t shape[PK_MAX_RANK];
  uint64_t seq;
  int32_t rank;
  int32_t reserved[7];
};
static_assert(sizeof(WireHeader) == 128, "the header travels as 16 units of 8 bytes");
constexpr char kHeaderMagic[4] = {'P', 'K', 'C', '1'};
// Point-to-point headers travel on a tag per direction, so that a send's header always meets the matching receive's
// (a rank that both sends to and receives from one peer in a group posts both kinds).
constexpr int32_t kTagHeaderFromSender = 7301, kTagHeaderFromReceiver = 7303, kTagData = 7302;
// Per-rank payloads up to this size are all-reduced in one round (every rank gathers every row and reduces them
// all); above it, in two (reduce-scatter through all-to-all, then all-gather), which moves 2(n-1)/n of the data.
constexpr uint64_t kOneRoundBytes = 64 * 1024;
// A checked call's header travels in a fixed-size slot with room for this much data after it. Fixed, so that every
// rank sends the same size whatever its arguments (a size that followed them would turn a mismatch into a
// truncated or crossed message instead of the error the header check gives). A checked all-reduce, all-gather or
// broadcast whose data fits sends it in the slot: one exchange instead of the header's round trip followed by the
// data's.
constexpr uint64_t kSlotDataBytes = 4096;
constexpr uint64_t kSlotBytes = sizeof(WireHeader) + kSlotDataBytes;
static_assert(kSlotBytes % 8 == 0, "slots travel as units of 8 bytes");

struct Scratch {
  std::unique_ptr<uint8_t[]> data;
  uint64_t capacity = 0;
};

enum class After { nothing, check_headers, check_slots, reduce_into_recv, reduce_into_chunk };

struct Round {
  std::vector<pk_engine_transfer> transfers;
  After after = After::nothing;
};

// One call, from validation to completion.
struct Op {
  pk_comm_s *comm = nullptr;
  pk_stream_s *stream = nullptr;
  int32_t kind = 0, reduce_op = -1, peer = -1;
  bool has_send = false, has_recv = false;
  pk_tensor send{}, recv{};
  int64_t send_shape[PK_MAX_RANK] = {0}, recv_shape[PK_MAX_RANK] = {0};
  int32_t dtype = 0;
  uint32_t esize = 0;
  int64_t send_numel = 0, recv_numel = 0;
  bool staged = false;
  uint8_t *hsend = nullptr, *hrecv = nullptr;  // host views
  Scratch stage_send, stage_recv, tmp, chunk;
  Scratch slot, slots;        // a checked collective's own slot and every rank's (kSlotBytes each)
  bool data_in_slot = false;  // a small all-reduce, all-gather or broadcast whose data travels in the slots
  WireHeader mine{};
  std::vector<WireHeader> theirs;
  std::vector<int64_t> counts_a, displs_a, counts_b, displs_b;  // transfer arrays (alive until done)
  std::vector<Round> rounds;
  pk_status status = PK_OK;
  std::string error;  // the message of the first failure
};

// Sets the thread's last error to "<collective>: <reason>" and keeps the first such message in the op.
pk_status fail_op(Op &op, pk_status status, int32_t arg, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
pk_status fail_op(Op &op, pk_status status, int32_t arg, const char *fmt, ...) {
  char text[PK_MESSAGE_CAPACITY];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  set_error(status, PK_OP_NONE, arg, 0, "%s: %s", kind_name(op.kind), text);
  if (op.error.empty()) op.error = std::string(kind_name(op.kind)) + ": " + text;
  return status;
}

int64_t numel_of(const pk_tensor &t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

std::string type_text(int32_t dtype, int32_t ndim, const int64_t *shape) {
  std::string s = pk::meta::dtype_name(dtype);
  s += '[';
  for (int32_t i = 0; i < ndim; ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + ']';
}

// "<collective>: send" / "<collective>: recv", made once: formatting it on every call cost as much as the rest of
// the validation of a small call, and it is read only when a check fails.
const char *argument_label(int32_t kind, bool recv) {
  static const std::vector<std::string> labels = [] {
    std::vector<std::string> v;
    for (int32_t k = 0; k <= PK_COLLECTIVE_COUNT; ++k)  // kind_name's "collective" for an unknown kind, last
      for (const char *arg : {"send", "recv"}) v.push_back(std::string(kind_name(k)) + ": " + arg);
    return v;
  }();
  const int32_t k = kind >= 0 && kind < PK_COLLECTIVE_COUNT ? kind : PK_COLLECTIVE_COUNT;
  return labels[static_cast<size_t>(k) * 2 + (recv ? 1 : 0)].c_str();
}

// One tensor argument: a well-formed, dense view on the communicator's device, inside its storage.
pk_status check_tensor(Op &op, const pk_tensor &t, const char *name, int32_t arg, bool output) {
  Device &dev = *op.comm->device;
  pk::meta::TensorType type;
  pk::meta::Diag diag;
  if (t.struct_size < sizeof(pk_tensor)) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, arg, "%s: struct_size %u is smaller than pk_tensor (%zu)", name,
                   t.struct_size, sizeof(pk_tensor));
  }
  if (!pk::meta::tensor_type(t, type, nullptr, arg, diag)) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s", name, diag.message);
  }
  if (t.device_type != dev.props.device_type || t.device_id != static_cast<int32_t>(dev.index)) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, arg,
                   "%s: tensor is on device (%d, %d) but the communicator runs on '%s' device %u (%d, %u)", name,
                   t.device_type, t.device_id, dev.backend->info.name, dev.index, dev.props.device_type, dev.index);
  }
  if ((t.flags & PK_TENSOR_FLAG_HOST_VISIBLE) && !dev.host_visible()) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, arg,
                   "%s: tensor is flagged HOST_VISIBLE but '%s' device %u has no unified memory; copy it into a buffer",
                   name, dev.backend->info.name, dev.index);
  }
  if (output && (t.flags & PK_TENSOR_FLAG_READ_ONLY)) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, arg, "%s: tensor is READ_ONLY but the collective writes it", name);
  }
  if (t.strides != nullptr) {
    int64_t expect = 1;
    for (int32_t i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] > 1 && t.strides[i] != expect) {
        return fail_op(op, PK_ERROR_INVALID_ARGUMENT, arg,
                       "%s: collectives take dense row-major tensors, but axis %d has stride %lld (expected %lld)",
                       name, i, static_cast<long long>(t.strides[i]), static_cast<long long>(expect));
      }
      expect *= t.shape[i];
    }
  }
  if (!pk::meta::check_tensor_placement(t, argument_label(op.kind, std::strcmp(name, "recv") == 0), arg, diag))
    return set_error_from_diag(diag, PK_OP_NONE);
  uint64_t lo = 0, hi = 0, start = 0, bytes = 0;
  pk::meta::byte_extent(t, lo, hi);
  if (hi > t.storage_bytes) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, arg, "%s: the view reaches byte %llu but storage_bytes is %llu", name,
                   static_cast<unsigned long long>(hi), static_cast<unsigned long long>(t.storage_bytes));
  }
  if (lo != hi && dev.find_buffer(t.data, &start, &bytes) && (hi > bytes || start > bytes - hi)) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, arg,
                   "%s: the view reaches byte %llu past its data pointer, beyond its buffer of %llu bytes", name,
                   static_cast<unsigned long long>(hi), static_cast<unsigned long long>(bytes - start));
  }
  return PK_OK;
}

// The bytes a dense tensor occupies, as [begin, end) of its storage handle.
bool same_storage(const pk_tensor &a, const pk_tensor &b) {
  return a.data == b.data;
}
bool overlaps(const pk_tensor &a, uint64_t a_bytes, const pk_tensor &b, uint64_t b_bytes) {
  if (!same_storage(a, b) || a_bytes == 0 || b_bytes == 0) return false;
  return a.byte_offset < b.byte_offset + b_bytes && b.byte_offset < a.byte_offset + a_bytes;
}

// Everything checkable on this rank alone; fills op's sizes.
pk_status validate(Op &op) {
  pk_comm_s &comm = *op.comm;
  std::string why;
  if (comm.state(&why) != PK_OK) {
    return fail_op(op, PK_ERROR_COMM_FAILED, -1, "the communicator failed earlier: %s", why.c_str());
  }
  if (op.stream == nullptr) return fail_op(op, PK_ERROR_INVALID_ARGUMENT, -1, "stream is NULL");
  if (op.stream->device != comm.device) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, -1,
                   "the stream runs on '%s' device %u, but the communicator on '%s' device %u",
                   op.stream->device->backend->info.name, op.stream->device->index, comm.device->backend->info.name,
                   comm.device->index);
  }
  const bool reduces =
      op.kind == PK_COLLECTIVE_ALL_REDUCE || op.kind == PK_COLLECTIVE_REDUCE_SCATTER || op.kind == PK_COLLECTIVE_REDUCE;
  const bool rooted = op.kind == PK_COLLECTIVE_BROADCAST || op.kind == PK_COLLECTIVE_REDUCE;
  const bool p2p = op.kind == PK_COLLECTIVE_SEND || op.kind == PK_COLLECTIVE_RECV;
  if ((rooted || p2p) && (op.peer < 0 || op.peer >= comm.size)) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, -1, "%s %d is outside 0..%d (the communicator has %d ranks)",
                   rooted ? "root" : "peer", op.peer, comm.size - 1, comm.size);
  }
  const bool is_root = rooted && op.peer == comm.rank;
  // Which tensors this rank needs: broadcast reads send on the root only, reduce writes recv on the root only.
  const bool need_send = op.kind != PK_COLLECTIVE_RECV && (op.kind != PK_COLLECTIVE_BROADCAST || is_root);
  const bool need_recv = op.kind != PK_COLLECTIVE_SEND && (op.kind != PK_COLLECTIVE_REDUCE || is_root);
  if (need_send && !op.has_send) return fail_op(op, PK_ERROR_INVALID_ARGUMENT, 0, "send is NULL");
  if (need_recv && !op.has_recv) return fail_op(op, PK_ERROR_INVALID_ARGUMENT, 1, "recv is NULL");
  op.has_send = need_send;
  op.has_recv = need_recv;
  if (op.has_send) {
    if (pk_status st = check_tensor(op, op.send, "send", 0, false)) return st;
  }
  if (op.has_recv) {
    if (pk_status st = check_tensor(op, op.recv, "recv", 1, true)) return st;
  }
  const pk_tensor &any = op.has_send ? op.send : op.recv;
  op.dtype = pk::meta::dtype_id(any.dtype);
  op.esize = static_cast<uint32_t>(pk::meta::dtype_size(op.dtype));
  if (op.has_send && op.has_recv && pk::meta::dtype_id(op.recv.dtype) != op.dtype) {
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, 1, "recv: dtype %s differs from send's %s",
                   pk::meta::dtype_name(pk::meta::dtype_id(op.recv.dtype)), pk::meta::dtype_name(op.dtype));
  }
  if (reduces) {
    const char *why_not = "";
    if (!reduce_supported(op.dtype, op.reduce_op, &why_not)) {
      return fail_op(op, PK_ERROR_INVALID_ARGUMENT, -1, "reduction %s (%d) %s", reduce_name(op.reduce_op), op.reduce_op,
                     why_not);
    }
  }
  op.send_numel = op.has_send ? numel_of(op.send) : 0;
  op.recv_numel = op.has_recv ? numel_of(op.recv) : 0;
  const int64_t n = comm.size;
  auto expect_recv = [&](int64_t want, const char *rule) -> pk_status {
    if (op.recv_numel == want) return PK_OK;
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, 1, "recv has %lld elements, but %s (%lld)",
                   static_cast<long long>(op.recv_numel), rule, static_cast<long long>(want));
  };
  pk_status st = PK_OK;
  switch (op.kind) {
    case PK_COLLECTIVE_ALL_REDUCE:
    case PK_COLLECTIVE_BROADCAST:
    case PK_COLLECTIVE_REDUCE:
      if (op.has_send && op.has_recv) st = expect_recv(op.send_numel, "it must have send's element count");
      break;
    case PK_COLLECTIVE_ALL_GATHER:
      st = expect_recv(op.send_numel * n, "it must have nranks times send's element count");
      break;
    case PK_COLLECTIVE_REDUCE_SCATTER:
      if (op.send_numel != op.recv_numel * n) {
        return fail_op(op, PK_ERROR_INVALID_ARGUMENT, 0,
                       "send has %lld elements, but it must have nranks (%lld) times recv's %lld",
                       static_cast<long long>(op.send_numel), static_cast<long long>(n),
                       static_cast<long long>(op.recv_numel));
      }
      break;
    case PK_COLLECTIVE_ALL_TO_ALL:
      st = expect_recv(op.send_numel, "it must have send's element count");
      if (st == PK_OK && op.send_numel % n != 0) {
        return fail_op(op, PK_ERROR_INVALID_ARGUMENT, 0, "send has %lld elements, which nranks (%lld) does not divide",
                       static_cast<long long>(op.send_numel), static_cast<long long>(n));
      }
      break;
    default:
      break;
  }
  if (st != PK_OK) return st;
  // Aliasing: in place means the very same view (all_gather: send is this rank's slice of recv); anything else
  // that overlaps would read what the collective already wrote.
  if (op.has_send && op.has_recv) {
    const uint64_t sb = static_cast<uint64_t>(op.send_numel) * op.esize;
    const uint64_t rb = static_cast<uint64_t>(op.recv_numel) * op.esize;
    bool in_place = same_storage(op.send, op.recv) && op.send.byte_offset == op.recv.byte_offset;
    if (op.kind == PK_COLLECTIVE_ALL_GATHER) {
      in_place = same_storage(op.send, op.recv) && op.send.byte_offset == op.recv.byte_offset + comm.rank * sb;
    }
    const bool may_alias = op.kind != PK_COLLECTIVE_ALL_TO_ALL && op.kind != PK_COLLECTIVE_REDUCE_SCATTER;
    if (overlaps(op.send, sb, op.recv, rb) && !(in_place && may_alias)) {
      return fail_op(op, PK_ERROR_INVALID_ARGUMENT, 1, "recv overlaps send%s",
                     may_alias ? " without being the same view (in place)" : " (not allowed)");
    }
  }
  Device &dev = *comm.device;
  // A native communicator hands the device's tensors to the backend's own collectives: nothing is staged.
  op.staged = !comm.native() && !dev.host_visible();
  if (op.staged) {
    Backend &b = *dev.backend;
    if (b.runtime->strict()) {
      return fail_op(op, PK_ERROR_FALLBACK_FORBIDDEN, -1,
                     "backend '%s' has no native collectives and its memory is not host-addressable; staging "
                     "through host memory is forbidden in strict mode",
                     b.info.name);
    }
    if (!b.api.copy_device_to_host || !b.api.copy_host_to_device || !b.api.stream_synchronize) {
      return fail_op(op, PK_UNIMPLEMENTED, -1, "backend '%s' cannot copy to the host, which staging needs",
                     b.info.name);
    }
  }
  // Keep copies of the shapes: a group runs the call after the caller's arrays may be gone.
  if (op.has_send) {
    std::copy(op.send.shape, op.send.shape + op.send.ndim, op.send_shape);
    op.send.shape = op.send_shape;
    op.send.strides = nullptr;
  }
  if (op.has_recv) {
    std::copy(op.recv.shape, op.recv.shape + op.recv.ndim, op.recv_shape);
    op.recv.shape = op.recv_shape;
    op.recv.strides = nullptr;
  }
  return PK_OK;
}

uint8_t *host_address(const pk_tensor &t) {
  return t.data ? static_cast<uint8_t *>(t.data) + t.byte_offset : nullptr;
}

Scratch take(pk_comm_s &comm, uint64_t bytes) {
  Scratch s;
  s.data = comm.take_scratch(bytes, &s.capacity);
  return s;
}

// Host views of the tensors after the work queued before the call: the device memory itself where the host can
// address it, otherwise staging copies (counted: the collectives' fallback).
pk_status prepare_host_views(Op &op) {
  Device &dev = *op.comm->device;
  Backend &b = *dev.backend;
  pk_be_stream *s = op.stream->stream;
  const uint64_t sb = static_cast<uint64_t>(op.send_numel) * op.esize;
  const uint64_t rb = static_cast<uint64_t>(op.recv_numel) * op.esize;
  pk_status st = PK_OK;
  if (!op.staged) {
    if (b.api.stream_synchronize && (st = b.api.stream_synchronize(s)) != PK_OK) {
      return forward_backend_error(b, st, PK_OP_NONE, "stream failed before a collective");
    }
    if (op.has_send) op.hsend = host_address(op.send);
    if (op.has_recv) op.hrecv = host_address(op.recv);
  } else {
    uint64_t copied = 0;
    const bool send_in_recv = op.has_send && op.has_recv && same_storage(op.send, op.recv) &&
                              op.send.byte_offset >= op.recv.byte_offset &&
                              op.send.byte_offset + sb <= op.recv.byte_offset + rb;
    if (op.has_recv) {
      op.stage_recv = take(*op.comm, rb);
      op.hrecv = op.stage_recv.data.get();
      if (send_in_recv && rb) {  // in place: recv holds the input
        st = b.api.copy_device_to_host(s, op.hrecv, op.recv.data, op.recv.byte_offset, rb);
        copied += rb;
      }
    }
    if (st == PK_OK && op.has_send) {
      if (send_in_recv) {
        op.hsend = op.hrecv + (op.send.byte_offset - op.recv.byte_offset);
      } else {
        op.stage_send = take(*op.comm, sb);
        op.hsend = op.stage_send.data.get();
        if (sb) st = b.api.copy_device_to_host(s, op.hsend, op.send.data, op.send.byte_offset, sb);
        copied += sb;
      }
    }
    if (st == PK_OK) st = b.api.stream_synchronize(s);
    if (st != PK_OK) return forward_backend_error(b, st, PK_OP_NONE, "staging a collective's input failed");
    op.comm->staged_bytes += copied;
  }
  if (op.kind == PK_COLLECTIVE_BROADCAST && op.has_send && op.hsend != op.hrecv && op.send_numel) {
    std::memcpy(op.hrecv, op.hsend, sb);  // the root's recv is what it broadcasts
  }
  return PK_OK;
}

pk_engine_transfer transfer(int32_t kind, uint32_t unit, const void *send, void *recv, int64_t count, int32_t peer) {
  pk_engine_transfer t{};
  t.kind = kind;
  t.unit_bytes = unit;
  t.send = send;
  t.recv = recv;
  t.count = count;
  t.peer = peer;
  return t;
}

void fill_header(Op &op) {
  WireHeader &h = op.mine;
  std::memcpy(h.magic, kHeaderMagic, sizeof h.magic);
  h.kind = op.kind;
  h.reduce_op = op.reduce_op;
  h.peer = op.peer;
  h.dtype = op.dtype;
  const bool by_recv =
      op.kind == PK_COLLECTIVE_REDUCE_SCATTER || op.kind == PK_COLLECTIVE_BROADCAST || op.kind == PK_COLLECTIVE_RECV;
  const pk_tensor &t = by_recv ? op.recv : op.send;
  h.ndim = t.ndim;
  for (int32_t i = 0; i < t.ndim; ++i) h.shape[i] = t.shape[i];
  const bool p2p = op.kind == PK_COLLECTIVE_SEND || op.kind == PK_COLLECTIVE_RECV;
  h.seq = p2p ? 0 : op.comm->seq++;
  h.rank = op.comm->rank;
}

// The bytes of a checked collective's data that travel in the slots with its header: a small all-reduce's row, a
// small all-gather's block or a small broadcast; 0 for everything else (its data follows in rounds of its own).
uint64_t slot_payload(const Op &op) {
  uint64_t payload = 0;
  if (op.kind == PK_COLLECTIVE_ALL_REDUCE || op.kind == PK_COLLECTIVE_ALL_GATHER) {
    payload = static_cast<uint64_t>(op.send_numel) * op.esize;
  } else if (op.kind == PK_COLLECTIVE_BROADCAST) {
    payload = static_cast<uint64_t>(op.recv_numel) * op.esize;
  }
  return payload <= kSlotDataBytes ? payload : 0;
}

// Splits `count` elements into one chunk per rank, as even as possible: chunk r is [count*r/n, count*(r+1)/n).
void balanced_chunks(int64_t count, int32_t n, std::vector<int64_t> &counts, std::vector<int64_t> &displs) {
  counts.resize(static_cast<size_t>(n));
  displs.resize(static_cast<size_t>(n));
  for (int32_t r = 0; r < n; ++r) {
    displs[static_cast<size_t>(r)] = static_cast<int64_t>(static_cast<__int128>(count) * r / n);
    counts[static_cast<size_t>(r)] =
        static_cast<int64_t>(static_cast<__int128>(count) * (r + 1) / n) - displs[static_cast<size_t>(r)];
  }
}

void equal_chunks(int64_t each, int32_t n, std::vector<int64_t> &counts, std::vector<int64_t> &displs) {
  counts.assign(static_cast<size_t>(n), each);
  displs.resize(static_cast<size_t>(n));
  for (int32_t r = 0; r < n; ++r) displs[static_cast<size_t>(r)] = each * r;
}

// Reduce-scatter through all-to-all: rank r receives chunk r (counts_a / displs_a) of every rank into tmp, row
// by row in rank order. The reduction follows in the round's after-step.
Round scatter_round(Op &op, int64_t count, bool balanced) {
  const int32_t n = op.comm->size, me = op.comm->rank;
  if (balanced) {
    balanced_chunks(count, n, op.counts_a, op.displs_a);
  } else {
    equal_chunks(count / n, n, op.counts_a, op.displs_a);
  }
  const int64_t mine = op.counts_a[static_cast<size_t>(me)];
  equal_chunks(mine, n, op.counts_b, op.displs_b);
  op.tmp = take(*op.comm, static_cast<uint64_t>(mine) * n * op.esize);
  Round r;
  pk_engine_transfer t = transfer(PK_TRANSFER_ALLTOALLV, op.esize, op.hsend, op.tmp.data.get(), 0, -1);
  t.send_counts = op.counts_a.data();
  t.send_displs = op.displs_a.data();
  t.recv_counts = op.counts_b.data();
  t.recv_displs = op.displs_b.data();
  r.transfers.push_back(t);
  return r;
}

void build_rounds(Op &op) {
  pk_comm_s &comm = *op.comm;
  const int32_t n = comm.size, me = comm.rank;
  const uint32_t e = op.esize;
  const bool p2p = op.kind == PK_COLLECTIVE_SEND || op.kind == PK_COLLECTIVE_RECV;
  fill_header(op);
  if (comm.checked()) {
    Round r;
    r.after = After::check_headers;
    constexpr int64_t units = sizeof(WireHeader) / 8;
    if (p2p) {
      op.theirs.assign(1, WireHeader{});
      pk_engine_transfer s = transfer(PK_TRANSFER_SEND, 8, &op.mine, nullptr, units, op.peer);
      pk_engine_transfer v = transfer(PK_TRANSFER_RECV, 8, nullptr, op.theirs.data(), units, op.peer);
      const bool sending = op.kind == PK_COLLECTIVE_SEND;
      s.tag = sending ? kTagHeaderFromSender : kTagHeaderFromReceiver;
      v.tag = sending ? kTagHeaderFromReceiver : kTagHeaderFromSender;
      r.transfers = {s, v};
    } else {
      op.theirs.assign(static_cast<size_t>(n), WireHeader{});
      op.slot = take(comm, kSlotBytes);
      op.slots = take(comm, kSlotBytes * static_cast<uint64_t>(n));
      std::memcpy(op.slot.data.get(), &op.mine, sizeof op.mine);
      const uint64_t payload = slot_payload(op);
      op.data_in_slot = payload > 0;
      // This rank's data: an all-reduce's row, an all-gather's block, the root's broadcast.
      if (op.data_in_slot && op.has_send) std::memcpy(op.slot.data.get() + sizeof(WireHeader), op.hsend, payload);
      r.after = After::check_slots;
      r.transfers.push_back(
          transfer(PK_TRANSFER_ALLGATHER, 8, op.slot.data.get(), op.slots.data.get(), kSlotBytes / 8, -1));
    }
    op.rounds.push_back(std::move(r));
    if (op.data_in_slot) return;  // the slots carry the data: check_slots finishes the call
  }
  switch (op.kind) {
    case PK_COLLECTIVE_ALL_REDUCE: {
      const int64_t c = op.send_numel;
      if (c == 0) break;
      if (static_cast<uint64_t>(c) * e <= kOneRoundBytes) {
        op.tmp = take(comm, static_cast<uint64_t>(c) * n * e);
        Round r;
        r.transfers.push_back(transfer(PK_TRANSFER_ALLGATHER, e, op.hsend, op.tmp.data.get(), c, -1));
        r.after = After::reduce_into_recv;
        op.rounds.push_back(std::move(r));
        break;
      }
      Round r1 = scatter_round(op, c, true);
      r1.after = After::reduce_into_chunk;
      op.rounds.push_back(std::move(r1));
      Round r2;
      pk_engine_transfer t = transfer(PK_TRANSFER_ALLGATHERV, e, nullptr, op.hrecv, 0, -1);
      t.recv_counts = op.counts_a.data();
      t.recv_displs = op.displs_a.data();
      r2.transfers.push_back(t);
      op.rounds.push_back(std::move(r2));
      break;
    }
    case PK_COLLECTIVE_REDUCE: {
      const int64_t c = op.send_numel;
      if (c == 0) break;
      Round r1 = scatter_round(op, c, true);
      r1.after = After::reduce_into_chunk;
      op.rounds.push_back(std::move(r1));
      const bool root = me == op.peer;
      if (!root) op.chunk = take(comm, static_cast<uint64_t>(op.counts_a[static_cast<size_t>(me)]) * e);
      Round r2;
      pk_engine_transfer t =
          transfer(PK_TRANSFER_GATHERV, e, root ? nullptr : op.chunk.data.get(), root ? op.hrecv : nullptr, 0, op.peer);
      t.recv_counts = op.counts_a.data();
      t.recv_displs = op.displs_a.data();
      r2.transfers.push_back(t);
      op.rounds.push_back(std::move(r2));
      break;
    }
    case PK_COLLECTIVE_REDUCE_SCATTER: {
      if (op.recv_numel == 0) break;
      Round r = scatter_round(op, op.send_numel, false);
      r.after = After::reduce_into_recv;
      op.rounds.push_back(std::move(r));
      break;
    }
    case PK_COLLECTIVE_ALL_GATHER: {
      const int64_t c = op.send_numel;
      if (c == 0) break;
      Round r;
      if (op.hsend == op.hrecv + static_cast<uint64_t>(me) * c * e) {
        equal_chunks(c, n, op.counts_a, op.displs_a);
        pk_engine_transfer t = transfer(PK_TRANSFER_ALLGATHERV, e, nullptr, op.hrecv, 0, -1);
        t.recv_counts = op.counts_a.data();
        t.recv_displs = op.displs_a.data();
        r.transfers.push_back(t);
      } else {
        r.transfers.push_back(transfer(PK_TRANSFER_ALLGATHER, e, op.hsend, op.hrecv, c, -1));
      }
      op.rounds.push_back(std::move(r));
      break;
    }
    case PK_COLLECTIVE_BROADCAST:
      if (op.recv_numel) {
        Round r;
        r.transfers.push_back(transfer(PK_TRANSFER_BCAST, e, nullptr, op.hrecv, op.recv_numel, op.peer));
        op.rounds.push_back(std::move(r));
      }
      break;
    case PK_COLLECTIVE_ALL_TO_ALL:
      if (op.send_numel) {
        equal_chunks(op.send_numel / n, n, op.counts_a, op.displs_a);
        Round r;
        pk_engine_transfer t = transfer(PK_TRANSFER_ALLTOALLV, e, op.hsend, op.hrecv, 0, -1);
        t.send_counts = t.recv_counts = op.counts_a.data();
        t.send_displs = t.recv_displs = op.displs_a.data();
        r.transfers.push_back(t);
        op.rounds.push_back(std::move(r));
      }
      break;
    case PK_COLLECTIVE_SEND:
    case PK_COLLECTIVE_RECV:
      if (op.send_numel || op.recv_numel) {
        Round r;
        const bool sending = op.kind == PK_COLLECTIVE_SEND;
        pk_engine_transfer t = transfer(sending ? PK_TRANSFER_SEND : PK_TRANSFER_RECV, e, op.hsend, op.hrecv,
                                        sending ? op.send_numel : op.recv_numel, op.peer);
        t.tag = kTagData;
        r.transfers.push_back(t);
        op.rounds.push_back(std::move(r));
      }
      break;
    default:
      break;
  }
}

std::string call_text(const WireHeader &h) {
  std::string s = kind_name(h.kind);
  s += '(' + type_text(h.dtype, h.ndim, h.shape);
  if (h.reduce_op >= 0) s += std::string(", ") + reduce_name(h.reduce_op);
  if (h.kind == PK_COLLECTIVE_BROADCAST || h.kind == PK_COLLECTIVE_REDUCE) s += ", root " + std::to_string(h.peer);
  if (h.kind == PK_COLLECTIVE_SEND) s += ", to rank " + std::to_string(h.peer);
  if (h.kind == PK_COLLECTIVE_RECV) s += ", from rank " + std::to_string(h.peer);
  return s + ") as call #" + std::to_string(h.seq);
}

bool same_call(const WireHeader &a, const WireHeader &b) {
  if (a.kind != b.kind || a.reduce_op != b.reduce_op || a.peer != b.peer || a.dtype != b.dtype || a.ndim != b.ndim ||
      a.seq != b.seq)
    return false;
  for (int32_t i = 0; i < a.ndim && i < PK_MAX_RANK; ++i) {
    if (a.shape[i] != b.shape[i]) return false;
  }
  return true;
}

// After the header round: every rank compares the calls as every rank made them, so all agree on the verdict.
pk_status check_headers(Op &op) {
  const WireHeader &me = op.mine;
  if (op.kind == PK_COLLECTIVE_SEND || op.kind == PK_COLLECTIVE_RECV) {
    const WireHeader &p = op.theirs[0];
    bool match = std::memcmp(p.magic, kHeaderMagic, 4) == 0 && p.kind != op.kind && p.peer == op.comm->rank &&
                 p.dtype == me.dtype && p.ndim == me.ndim &&
                 (p.kind == PK_COLLECTIVE_SEND || p.kind == PK_COLLECTIVE_RECV);
    for (int32_t i = 0; match && i < me.ndim; ++i) match = p.shape[i] == me.shape[i];
    if (match) return PK_OK;
    return fail_op(op, PK_ERROR_INVALID_ARGUMENT, -1,
                   "rank %d and rank %d disagree: rank %d calls %s, rank %d calls %s; no data moved", me.rank, op.peer,
                   me.rank, call_text(me).c_str(), op.peer, call_text(p).c_str());
  }
  for (const WireHeader &h : op.theirs) {
    if (std::memcmp(h.magic, kHeaderMagic, 4) == 0 && same_call(h, me)) continue;
    // Name the first rank that differs from rank 0, so every rank prints the same message.
    const WireHeader &first = op.theirs[0];
    for (const WireHeader &o : op.theirs) {
      if (!same_call(o, first)) {
        return fail_op(op, PK_ERROR_INVALID_ARGUMENT, -1,
                       "the ranks disagree: rank %d calls %s, rank %d calls %s; no data moved", first.rank,
                       call_text(first).c_str(), o.rank, call_text(o).c_str());
      }
    }
  }
  return PK_OK;
}

// The result of a call whose data came in the slots (after its headers matched): rank r's data is at
// slots + r * kSlotBytes + sizeof(WireHeader).
void finish_from_slots(Op &op) {
  const int32_t n = op.comm->size;
  const uint8_t *data = op.slots.data.get() + sizeof(WireHeader);
  const uint64_t payload = slot_payload(op);
  switch (op.kind) {
    case PK_COLLECTIVE_ALL_REDUCE:
      reduce_rows(op.dtype, op.reduce_op, data, kSlotBytes, n, op.send_numel, op.hrecv);
      break;
    case PK_COLLECTIVE_ALL_GATHER:
      // memmove: in place, this rank's block of recv is its send, copied onto itself.
      for (int32_t r = 0; r < n; ++r)
        std::memmove(op.hrecv + static_cast<uint64_t>(r) * payload, data + static_cast<uint64_t>(r) * kSlotBytes,
                     payload);
      break;
    case PK_COLLECTIVE_BROADCAST:
      if (op.comm->rank != op.peer) std::memcpy(op.hrecv, data + static_cast<uint64_t>(op.peer) * kSlotBytes, payload);
      break;
    default:
      break;
  }
}

void after_round(Op &op, After after) {
  const int32_t n = op.comm->size, me = op.comm->rank;
  switch (after) {
    case After::check_headers:
      op.status = check_headers(op);
      break;
    case After::check_slots: {
      const uint8_t *slots = op.slots.data.get();
      for (int32_t r = 0; r < n; ++r)
        std::memcpy(&op.theirs[static_cast<size_t>(r)], slots + static_cast<uint64_t>(r) * kSlotBytes,
                    sizeof(WireHeader));
      op.status = check_headers(op);
      // Only once every rank's header matches this rank's is the data after them this call's data.
      if (op.status == PK_OK && op.data_in_slot) finish_from_slots(op);
      break;
    }
    case After::reduce_into_recv: {
      const int64_t c = op.kind == PK_COLLECTIVE_ALL_REDUCE ? op.send_numel : op.recv_numel;
      reduce_rows(op.dtype, op.reduce_op, op.tmp.data.get(), static_cast<uint64_t>(c) * op.esize, n, c, op.hrecv);
      break;
    }
    case After::reduce_into_chunk: {
      const int64_t mine = op.counts_a[static_cast<size_t>(me)];
      uint8_t *out = op.chunk.data ? op.chunk.data.get()
                                   : op.hrecv + static_cast<uint64_t>(op.displs_a[static_cast<size_t>(me)]) * op.esize;
      reduce_rows(op.dtype, op.reduce_op, op.tmp.data.get(), static_cast<uint64_t>(mine) * op.esize, n, mine, out);
      break;
    }
    case After::nothing:
      break;
  }
}

struct Active {
  Op *op;
  pk_engine_request *request;
};

void abandon_op(std::vector<Active> &active, const Op *op) {
  for (Active &a : active) {
    if (a.op == op && a.request) {
      op->comm->abandoned = true;
      op->comm->engine->api->abandon(a.request);
      a.request = nullptr;
    }
  }
}

// Polls the round's requests to completion, failing an op (and its communicator) on an engine error, an abort or
// its deadline.
void progress(std::vector<Active> &active, const std::vector<Clock::time_point> &deadlines,
              const std::vector<Op *> &ops) {
  char err[PK_MESSAGE_CAPACITY];
  for (uint64_t spins = 0;; ++spins) {
    bool pending = false;
    for (Active &a : active) {
      if (!a.request) continue;
      err[0] = '\0';
      pk_status st = a.op->comm->engine->api->test(a.request, err);
      if (st == PK_NOT_READY) {
        pending = true;
        continue;
      }
      a.request = nullptr;
      if (st != PK_OK && a.op->status == PK_OK) {
        a.op->status =
            fail_op(*a.op, PK_ERROR_COMM_FAILED, -1, "engine '%s' failed: %s (the communicator is now failed)",
                    a.op->comm->engine->name.c_str(), err);
        a.op->comm->fail(PK_ERROR_COMM_FAILED, err);
        abandon_op(active, a.op);
      }
    }
    if (!pending) return;
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < ops.size(); ++i) {
      Op &op = *ops[i];
      if (op.status != PK_OK) continue;
      bool has_pending = false;
      for (const Active &a : active) has_pending = has_pending || (a.op == &op && a.request);
      if (!has_pending) continue;
      if (op.comm->aborted.load(std::memory_order_relaxed)) {
        op.status = fail_op(op, PK_ERROR_COMM_FAILED, -1, "the communicator was aborted (pk_comm_abort)");
        op.comm->fail(PK_ERROR_COMM_FAILED, "the communicator was aborted (pk_comm_abort)");
        abandon_op(active, &op);
      } else if (now > deadlines[i]) {
        char why[200];
        std::snprintf(why, sizeof why, "did not finish within %u ms: a rank died, hangs, or does not make this call",
                      op.comm->timeout_ms.load());
        op.status = fail_op(op, PK_ERROR_TIMEOUT, -1, "%s (the communicator is now failed)", why);
        op.comm->fail(PK_ERROR_TIMEOUT, std::string(kind_name(op.kind)) + " " + why);
        abandon_op(active, &op);
      }
    }
    // Spinning keeps the latency of small calls low; past that, give the core to the other ranks of this machine.
    if (spins > 256) sched_yield();
  }
}

void finish(Op &op) {
  pk_comm_s &comm = *op.comm;
  if (op.status == PK_OK && op.staged && op.has_recv && op.recv_numel) {
    Backend &b = *comm.device->backend;
    const uint64_t rb = static_cast<uint64_t>(op.recv_numel) * op.esize;
    pk_status st = b.api.copy_host_to_device(op.stream->stream, op.recv.data, op.recv.byte_offset, op.hrecv, rb);
    if (st == PK_OK) st = b.api.stream_synchronize(op.stream->stream);
    if (st != PK_OK) op.status = forward_backend_error(b, st, PK_OP_NONE, "copying a collective's result back failed");
    comm.staged_bytes += rb;
  }
  if (op.status == PK_OK) {
    comm.calls++;
    (op.staged ? comm.staged_calls : comm.direct_calls)++;
    if (op.has_send) comm.bytes_sent += static_cast<uint64_t>(op.send_numel) * op.esize;
  }
  Scratch *blocks[] = {&op.stage_send, &op.stage_recv, &op.tmp, &op.chunk, &op.slot, &op.slots};
  const bool healthy = !comm.abandoned.load();
  for (Scratch *s : blocks) {
    if (!s->data) continue;
    if (healthy) {
      comm.give_scratch(std::move(s->data), s->capacity);
    } else {
      s->data.release();  // the engine may still write it (see pk_comm_destroy)
    }
  }
}

// Runs validated engine ops together: host views, then round k of every op (in op order, so that every rank starts
// the engine's collectives in the same order), until none has rounds left. Returns the first failure, as last error.
pk_status run_engine_ops(const std::vector<Op *> &ops) {
  std::string first_error;
  pk_status first = PK_OK;
  // Called right after each step, so that a failure without a message of its own (a backend's, forwarded) is
  // still the thread's last error.
  auto note = [&](Op &op) {
    if (op.status != PK_OK && op.error.empty()) {
      pk_error_info e;
      PK_STRUCT_INIT(e);
      pk_get_last_error(&e);
      op.error = e.message;
    }
    if (op.status != PK_OK && first == PK_OK) {
      first = op.status;
      first_error = op.error;
    }
  };
  std::vector<Clock::time_point> deadlines;
  for (Op *op : ops) {
    deadlines.push_back(Clock::now() + std::chrono::milliseconds(op->comm->timeout_ms.load()));
    op->status = prepare_host_views(*op);
    if (op->status == PK_OK) build_rounds(*op);
    note(*op);
  }
  for (size_t k = 0;; ++k) {
    std::vector<Active> active;
    bool any = false;
    char err[PK_MESSAGE_CAPACITY];
    for (Op *op : ops) {
      if (op->status != PK_OK || k >= op->rounds.size()) continue;
      any = true;
      for (const pk_engine_transfer &t : op->rounds[k].transfers) {
        pk_engine_request *req = nullptr;
        err[0] = '\0';
        pk_status st = op->comm->engine->api->start(op->comm->ec, &t, &req, err);
        if (st != PK_OK) {
          op->status = fail_op(*op, st, -1, "engine '%s': %s (the communicator is now failed)",
                               op->comm->engine->name.c_str(), err);
          op->comm->fail(st, err);
          abandon_op(active, op);
          break;
        }
        active.push_back(Active{op, req});
      }
      note(*op);
    }
    if (!any) break;
    progress(active, deadlines, ops);
    for (Op *op : ops) {
      if (op->status == PK_OK && k < op->rounds.size()) after_round(*op, op->rounds[k].after);
      note(*op);
    }
  }
  for (Op *op : ops) {
    finish(*op);
    note(*op);
  }
  if (first != PK_OK) return set_error(first, PK_OP_NONE, -1, 0, "%s", first_error.c_str());
  clear_error();
  return PK_OK;
}

// --- native collectives: the backend's collective_launch, after the same validation and checks ---------------------

pk_status fail_ops(const std::vector<Op *> &ops, pk_status st) {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  for (Op *op : ops) {
    if (op->status != PK_OK) continue;
    op->status = st;
    op->error = e.message;
  }
  return st;
}

// The cross-rank check of native ops (unless PK_COMM_UNCHECKED): the same headers as the engine path's, exchanged
// through the backend's own collectives on each communicator's private check stream (collectives_native.cpp), all
// in one backend group. A mismatch fails the op on every rank before its data moves.
void check_native_ops(const std::vector<Op *> &ops) {
  std::vector<NativeExchange> xs;
  std::vector<Op *> checked, p2p;
  for (Op *op : ops) {
    if (!op->comm->checked()) continue;
    fill_header(*op);
    checked.push_back(op);
    if (op->kind == PK_COLLECTIVE_SEND || op->kind == PK_COLLECTIVE_RECV) {
      op->theirs.assign(1, WireHeader{});
      p2p.push_back(op);
      continue;
    }
    op->theirs.assign(static_cast<size_t>(op->comm->size), WireHeader{});
    NativeExchange x;
    x.comm = op->comm;
    x.bytes = sizeof(WireHeader);
    x.send = &op->mine;
    x.recv = op->theirs.data();
    xs.push_back(x);
  }
  // Point-to-point headers: the slots carry no tag, and messages between two ranks match in the order they are
  // posted. So every rank sends the headers of its receives before those of its sends, and receives first for its
  // sends (the peer's receive's header), then for its receives: a send's header always meets the matching receive.
  for (int32_t pass = 0; pass < 4; ++pass) {
    const bool sending = pass < 2;
    const int32_t kind = (pass == 0 || pass == 3) ? PK_COLLECTIVE_RECV : PK_COLLECTIVE_SEND;
    for (Op *op : p2p) {
      if (op->kind != kind) continue;
      NativeExchange x;
      x.comm = op->comm;
      x.bytes = sizeof(WireHeader);
      x.peer = op->peer;
      x.kind = sending ? PK_COLLECTIVE_SEND : PK_COLLECTIVE_RECV;
      if (sending) {
        x.send = &op->mine;
      } else {
        x.recv = op->theirs.data();
      }
      xs.push_back(x);
    }
  }
  if (xs.empty()) return;
  if (pk_status st = run_native_exchanges(xs, kind_name(checked[0]->kind))) {
    fail_ops(checked, st);
    return;
  }
  for (Op *op : checked) op->status = check_headers(*op);
}

// Enqueues the native ops of one backend on their streams (asynchronous: the backend orders them like op_launch),
// in one backend group when there are several. Failures the backend reports later are the stream's sticky error.
void launch_native_ops(Backend &b, const std::vector<Op *> &ops) {
  std::vector<Op *> live;
  for (Op *op : ops)
    if (op->status == PK_OK) live.push_back(op);
  if (live.empty()) return;
  const bool grouped = live.size() > 1;
  if (grouped) {
    if (pk_status st = b.api.group_start(b.context)) {
      fail_ops(live, native_error(b, st, kind_name(live[0]->kind), "group_start"));
      return;
    }
  }
  for (Op *op : live) {
    pk_collective_desc d;
    PK_STRUCT_INIT(d);
    d.kind = op->kind;
    const bool reduces = op->kind == PK_COLLECTIVE_ALL_REDUCE || op->kind == PK_COLLECTIVE_REDUCE_SCATTER ||
                         op->kind == PK_COLLECTIVE_REDUCE;
    const bool peered = op->kind == PK_COLLECTIVE_BROADCAST || op->kind == PK_COLLECTIVE_REDUCE ||
                        op->kind == PK_COLLECTIVE_SEND || op->kind == PK_COLLECTIVE_RECV;
    d.reduce_op = reduces ? op->reduce_op : -1;
    d.peer = peered ? op->peer : -1;
    d.send = op->has_send ? &op->send : nullptr;
    d.recv = op->has_recv ? &op->recv : nullptr;
    d.timeout_ms = op->comm->timeout_ms.load();
    pk_status st = b.api.collective_launch(op->stream->stream, op->comm->bc, &d);
    if (st != PK_OK) {
      op->status = native_error(b, st, kind_name(op->kind), "collective_launch", op->comm->timeout_ms.load());
      pk_error_info e;
      PK_STRUCT_INIT(e);
      pk_get_last_error(&e);
      op->error = e.message;
      // As with an engine: a call given up (timeout, abort, a peer lost) leaves the communicator failed.
      if (st == PK_ERROR_TIMEOUT || st == PK_ERROR_COMM_FAILED) op->comm->fail(st, e.message);
    }
  }
  if (grouped) {
    if (pk_status st = b.api.group_end(b.context)) fail_ops(live, native_error(b, st, "pk_group_end", "group_end"));
  }
  for (Op *op : live) {
    if (op->status != PK_OK) continue;
    op->comm->calls++;
    op->comm->native_calls++;
    if (op->has_send) op->comm->bytes_sent += static_cast<uint64_t>(op->send_numel) * op->esize;
  }
}

pk_status run_ops(const std::vector<Op *> &ops) {
  // Native ops per backend (a group may span backends: each runs its own backend group), then the engine's.
  std::vector<std::pair<Backend *, std::vector<Op *>>> native;
  std::vector<Op *> engine;
  for (Op *op : ops) {
    if (!op->comm->native()) {
      engine.push_back(op);
      continue;
    }
    Backend *b = &op->comm->backend();
    auto it = std::find_if(native.begin(), native.end(), [b](const auto &kv) { return kv.first == b; });
    if (it == native.end()) {
      native.emplace_back(b, std::vector<Op *>{});
      it = native.end() - 1;
    }
    it->second.push_back(op);
  }
  for (auto &kv : native) {
    check_native_ops(kv.second);
    launch_native_ops(*kv.first, kv.second);
  }
  pk_status engine_st = engine.empty() ? PK_OK : run_engine_ops(engine);
  for (Op *op : ops) {
    if (op->comm->native() && op->status != PK_OK)
      return set_error(op->status, PK_OP_NONE, -1, 0, "%s", op->error.c_str());
  }
  if (engine_st == PK_OK) clear_error();
  return engine_st;
}

thread_local int t_group_depth = 0;
thread_local std::vector<std::unique_ptr<Op>> t_group_ops;

pk_status submit(pk_comm_t comm, pk_stream_t stream, int32_t kind, const pk_tensor *send, const pk_tensor *recv,
                 int32_t reduce_op, int32_t peer) {
  auto op = std::make_unique<Op>();
  op->kind = kind;
  if (comm == nullptr) return fail_op(*op, PK_ERROR_INVALID_ARGUMENT, -1, "comm is NULL");
  op->comm = comm;
  op->stream = stream;
  op->reduce_op = reduce_op;
  op->peer = peer;
  op->has_send = send != nullptr;
  op->has_recv = recv != nullptr;
  if (send) op->send = *send;
  if (recv) op->recv = *recv;
  if (pk_status st = validate(*op)) return st;
  if (t_group_depth > 0) {
    t_group_ops.push_back(std::move(op));
    return PK_OK;
  }
  return run_ops({op.get()});
}

}  // namespace
}  // namespace pk::rt::coll

using pk::rt::coll::submit;

extern "C" {

pk_status pk_all_reduce(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv,
                        int32_t reduce_op) {
  return submit(comm, stream, PK_COLLECTIVE_ALL_REDUCE, send, recv, reduce_op, -1);
}

pk_status pk_all_gather(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv) {
  return submit(comm, stream, PK_COLLECTIVE_ALL_GATHER, send, recv, -1, -1);
}

pk_status pk_reduce_scatter(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv,
                            int32_t reduce_op) {
  return submit(comm, stream, PK_COLLECTIVE_REDUCE_SCATTER, send, recv, reduce_op, -1);
}

pk_status pk_broadcast(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv, int32_t root) {
  return submit(comm, stream, PK_COLLECTIVE_BROADCAST, send, recv, -1, root);
}

pk_status pk_reduce(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv, int32_t reduce_op,
                    int32_t root) {
  return submit(comm, stream, PK_COLLECTIVE_REDUCE, send, recv, reduce_op, root);
}

pk_status pk_all_to_all(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv) {
  return submit(comm, stream, PK_COLLECTIVE_ALL_TO_ALL, send, recv, -1, -1);
}

pk_status pk_send(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, int32_t peer) {
  return submit(comm, stream, PK_COLLECTIVE_SEND, send, nullptr, -1, peer);
}

pk_status pk_recv(pk_comm_t comm, pk_stream_t stream, const pk_tensor *recv, int32_t peer) {
  return submit(comm, stream, PK_COLLECTIVE_RECV, nullptr, recv, -1, peer);
}

pk_status pk_group_start(void) {
  ++pk::rt::coll::t_group_depth;
  return PK_OK;
}

pk_status pk_group_end(void) {
  using namespace pk::rt::coll;
  if (t_group_depth == 0) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_group_end: no group is open on this thread");
  }
  if (--t_group_depth > 0) return PK_OK;
  std::vector<std::unique_ptr<Op>> ops;
  ops.swap(t_group_ops);
  std::vector<Op *> list;
  for (auto &op : ops) list.push_back(op.get());
  if (list.empty()) return PK_OK;
  return run_ops(list);
}

}  // extern "C"
