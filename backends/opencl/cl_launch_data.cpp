// cl_launch_data.cpp — the OpenCL backend's launches of data movement (views, shape ops, cat, pad, the
// scatters of slices), indexing (gather, index_select, scatter, scatter_reduce, index_put), scans, sorting
// (sort, topk) and searchsorted.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "cl_backend.hpp"
#include "cl_codegen.hpp"
#include "cl_key.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

using kit::fail;

// --- data movement, indexing, scans, sorting ----------------------------------------------------------------

namespace {

// One side of a pk_move: the tensor, the base position, the per-iteration-axis map and whether positions are
// row-major (flat) positions of the tensor rather than element offsets.
struct MoveSide {
  const pk_tensor *t = nullptr;
  int64_t base = 0;
  Dims map{};
  bool flat = false;
};

pk_status run_move(pk_be_stream *s, uint32_t op, const MoveSide &dst, const MoveSide &src, const int64_t *shape,
                   int32_t rank) {
  const uint64_t n = count_of(shape, rank);
  if (n == 0) return PK_OK;
  const size_t bytes = dtype_bytes(kit::dtype_id(dst.t->dtype));
  const int32_t dts[1] = {static_cast<int32_t>(bytes)};
  static const char *const kNames[] = {"pk_move"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::move, 0, dts, 1, 0), op, kNames, 1, [&](bool *, uint32_t *) { return gen_move(bytes); },
      &ks);
  if (st != PK_OK) return st;
  const TensorArg d = tensor_arg(*dst.t), a = tensor_arg(*src.t);
  const Dims dsh = dims_of(dst.t->shape, dst.t->ndim), ssh = dims_of(src.t->shape, src.t->ndim),
             sh = dims_of(shape, rank);
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(d.mem)(static_cast<cl_long>(d.offset))(static_cast<cl_long>(dst.base))(dst.map)(static_cast<cl_int>(dst.flat));
  set(dsh)(d.strides)(static_cast<cl_int>(dst.t->ndim));
  set(a.mem)(static_cast<cl_long>(a.offset))(static_cast<cl_long>(src.base))(src.map)(static_cast<cl_int>(src.flat));
  set(ssh)(a.strides)(static_cast<cl_int>(src.t->ndim));
  set(sh)(static_cast<cl_int>(rank))(n);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

// dst[i...] = src[i...] for two tensors of one shape.
pk_status copy_same(pk_be_stream *s, uint32_t op, const pk_tensor &dst, const pk_tensor &src) {
  MoveSide d, a;
  d.t = &dst;
  a.t = &src;
  d.map = tensor_arg(dst).strides;
  a.map = tensor_arg(src).strides;
  return run_move(s, op, d, a, dst.shape, dst.ndim);
}

}  // namespace

pk_status launch_move_op(pk_be_stream *s, uint32_t op, const pk_tensor *in, uint32_t nin, const pk_tensor &out,
                         const void *attrs) {
  const TensorArg ia = tensor_arg(in[0]), oa = tensor_arg(out);
  MoveSide d, a;
  d.t = &out;
  d.map = oa.strides;
  a.t = &in[0];
  a.map = Dims{};
  switch (op) {
    case PK_OP_BROADCAST_IN_DIM: {
      const auto *at = static_cast<const pk_attrs_broadcast_in_dim *>(attrs);
      for (int32_t k = 0; k < in[0].ndim; ++k)
        if (in[0].shape[k] != 1) a.map.v[at->broadcast_dimensions[k]] = ia.strides.v[k];
      break;
    }
    case PK_OP_AS_STRIDED: {
      const auto *at = static_cast<const pk_attrs_as_strided *>(attrs);
      a.flat = true;
      a.base = at->storage_offset;
      a.map = dims_of(at->strides, out.ndim);
      break;
    }
    case PK_OP_SLICE: {
      const auto *at = static_cast<const pk_attrs_slice *>(attrs);
      for (int32_t k = 0; k < in[0].ndim; ++k) {
        a.base += at->start_indices[k] * ia.strides.v[k];
        a.map.v[k] = ia.strides.v[k] * (at->num_strides ? at->strides[k] : 1);
      }
      break;
    }
    case PK_OP_SLICE_IN_DIM: {
      const auto *at = static_cast<const pk_attrs_slice_in_dim *>(attrs);
      a.map = ia.strides;
      a.base = at->start * ia.strides.v[at->dim];
      a.map.v[at->dim] *= at->stride;
      break;
    }
    case PK_OP_TRANSPOSE: {
      const auto *at = static_cast<const pk_attrs_transpose *>(attrs);
      for (int32_t k = 0; k < out.ndim; ++k) a.map.v[k] = ia.strides.v[at->permutation[k]];
      break;
    }
    case PK_OP_REV: {
      const auto *at = static_cast<const pk_attrs_rev *>(attrs);
      a.map = ia.strides;
      for (int32_t k = 0; k < at->num_dims; ++k) {
        const int64_t dd = at->dims[k];
        if (in[0].shape[dd] == 0) continue;
        a.base += (in[0].shape[dd] - 1) * ia.strides.v[dd];
        a.map.v[dd] = -ia.strides.v[dd];
      }
      break;
    }
    case PK_OP_CAT: {
      const int64_t dim = static_cast<const pk_attrs_cat *>(attrs)->dim;
      int64_t pos = 0;
      for (uint32_t i = 0; i < nin; ++i) {
        MoveSide di = d, si;
        di.base = pos * oa.strides.v[dim];
        si.t = &in[i];
        si.map = tensor_arg(in[i]).strides;
        if (pk_status st = run_move(s, op, di, si, in[i].shape, in[i].ndim)) return st;
        pos += in[i].shape[dim];
      }
      return PK_OK;
    }
    case PK_OP_PAD: {
      const auto *at = static_cast<const pk_attrs_pad *>(attrs);
      if (pk_status st = launch_fill_bits(s, op, out, value_bits(at->value, kit::dtype_id(out.dtype)))) return st;
      // Input element i of an axis lands at low + i * (interior + 1); only those inside the output are copied.
      int64_t shape[PK_MAX_RANK];
      for (int32_t k = 0; k < in[0].ndim; ++k) {
        const int64_t step = (at->num_interior ? at->interior[k] : 0) + 1;
        const int64_t low = at->low[k], n = in[0].shape[k], e = out.shape[k];
        const int64_t i_lo = low >= 0 ? 0 : (-low + step - 1) / step;
        const int64_t room = e - 1 - low;
        const int64_t i_hi = room >= 0 ? std::min(n - 1, room / step) : -1;
        shape[k] = i_hi - i_lo + 1;
        if (shape[k] <= 0) return PK_OK;
        a.base += i_lo * ia.strides.v[k];
        a.map.v[k] = ia.strides.v[k];
        d.base += (low + i_lo * step) * oa.strides.v[k];
        d.map.v[k] = oa.strides.v[k] * step;
      }
      return run_move(s, op, d, a, shape, in[0].ndim);
    }
    case PK_OP_SLICE_SCATTER: {
      const auto *at = static_cast<const pk_attrs_slice_scatter *>(attrs);
      if (pk_status st = copy_same(s, op, out, in[0])) return st;
      a.t = &in[1];
      a.map = tensor_arg(in[1]).strides;
      d.base = at->start * oa.strides.v[at->dim];
      d.map.v[at->dim] *= at->stride;
      return run_move(s, op, d, a, in[1].shape, in[1].ndim);
    }
    case PK_OP_AS_STRIDED_SCATTER: {
      const auto *at = static_cast<const pk_attrs_as_strided_scatter *>(attrs);
      if (pk_status st = copy_same(s, op, out, in[0])) return st;
      a.t = &in[1];
      a.map = tensor_arg(in[1]).strides;
      d.flat = true;
      d.base = at->storage_offset;
      d.map = dims_of(at->strides, in[1].ndim);
      return run_move(s, op, d, a, in[1].shape, in[1].ndim);
    }
    default:
      // collapse_view, collapse, reshape, split_dim, expand_dims, squeeze, view_of: row-major order is kept.
      a.flat = true;
      a.map = dense_dims(out.shape, out.ndim);
      break;
  }
  return run_move(s, op, d, a, out.shape, out.ndim);
}

pk_status launch_take(pk_be_stream *s, uint32_t op, const pk_tensor &in, const pk_tensor &index, const pk_tensor &out,
                      const void *attrs) {
  const int64_t dim = op == PK_OP_GATHER ? static_cast<const pk_attrs_gather *>(attrs)->dim
                                         : static_cast<const pk_attrs_index_select *>(attrs)->dim;
  const uint64_t n = numel_of(out);
  if (n == 0) return PK_OK;
  const size_t bytes = dtype_bytes(kit::dtype_id(out.dtype));
  const int32_t idt = kit::dtype_id(index.dtype);
  const int32_t dts[2] = {static_cast<int32_t>(bytes), idt};
  static const char *const kNames[] = {"pk_take"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::take, 0, dts, 2, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_take(bytes, idt); }, &ks);
  if (st != PK_OK) return st;
  const TensorArg ia = tensor_arg(in), xa = tensor_arg(index), oa = tensor_arg(out);
  Dims smap = ia.strides, imap{};
  smap.v[dim] = 0;
  if (op == PK_OP_GATHER) {
    imap = xa.strides;
  } else {
    imap.v[dim] = xa.strides.v[0];
  }
  const Dims sh = dims_of(out.shape, out.ndim);
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(oa.mem)(static_cast<cl_long>(oa.offset))(oa.strides);
  set(ia.mem)(static_cast<cl_long>(ia.offset))(smap)(static_cast<cl_long>(ia.strides.v[dim]))(
      static_cast<cl_long>(in.shape[dim]));
  set(xa.mem)(static_cast<cl_long>(xa.offset))(imap)(sh)(static_cast<cl_int>(out.ndim))(n);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

pk_status launch_scatter(pk_be_stream *s, uint32_t op, const pk_tensor *in, const pk_tensor &out, const void *attrs) {
  int64_t dim = 0;
  cl_int kind = -1, include_self = 1;
  if (op == PK_OP_SCATTER) {
    dim = static_cast<const pk_attrs_scatter *>(attrs)->dim;
  } else {
    const auto *at = static_cast<const pk_attrs_scatter_reduce *>(attrs);
    dim = at->dim;
    kind = at->reduce;
    include_self = at->include_self;
  }
  const uint64_t n = numel_of(out);
  if (n == 0) return PK_OK;
  const int32_t dt = kit::dtype_id(out.dtype), idt = kit::dtype_id(in[1].dtype);
  const int32_t dts[2] = {dt, idt};
  static const char *const kNames[] = {"pk_scatter"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::scatter, PK_OP_SCATTER, dts, 2, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_scatter(dt, idt, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  const TensorArg aa = tensor_arg(in[0]), xa = tensor_arg(in[1]), sa = tensor_arg(in[2]), oa = tensor_arg(out);
  const Dims ish = dims_of(in[1].shape, in[1].ndim), sh = dims_of(out.shape, out.ndim);
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(aa.mem)(static_cast<cl_long>(aa.offset))(aa.strides);
  set(xa.mem)(static_cast<cl_long>(xa.offset))(xa.strides)(ish);
  set(sa.mem)(static_cast<cl_long>(sa.offset))(sa.strides);
  set(oa.mem)(static_cast<cl_long>(oa.offset))(oa.strides);
  set(sh)(static_cast<cl_int>(out.ndim))(static_cast<cl_int>(dim))(kind)(include_self)(n);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

pk_status launch_index_put(pk_be_stream *s, const pk_tensor *in, uint32_t nin, const pk_tensor &out,
                           const void *attrs) {
  const uint32_t op = PK_OP_INDEX_PUT;
  const uint64_t n = numel_of(out);
  if (n == 0) return PK_OK;
  const uint32_t k = nin - 2;
  const int32_t dt = kit::dtype_id(out.dtype), idt = kit::dtype_id(in[2].dtype);
  const int32_t dts[2] = {dt, idt};
  static const char *const kNames[] = {"pk_index_put"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::index_put, op, dts, 2, k), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_index_put(dt, idt, k, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  const TensorArg aa = tensor_arg(in[0]), va = tensor_arg(in[1]), oa = tensor_arg(out);
  const Dims sh = dims_of(out.shape, out.ndim);
  const cl_int acc = static_cast<const pk_attrs_index_put *>(attrs)->accumulate;
  cl_kernel kk = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{kk};
  set(aa.mem)(static_cast<cl_long>(aa.offset))(aa.strides);
  set(va.mem)(static_cast<cl_long>(va.offset))(va.strides);
  for (uint32_t j = 0; j < k; ++j) {
    const TensorArg xa = tensor_arg(in[2 + j]);
    set(xa.mem)(static_cast<cl_long>(xa.offset))(static_cast<cl_long>(xa.strides.v[0]));
  }
  set(oa.mem)(static_cast<cl_long>(oa.offset))(oa.strides)(sh)(static_cast<cl_int>(out.ndim));
  set(static_cast<cl_long>(in[2].shape[0]))(acc)(n);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, kk, 1, &global, &local, op);
}

namespace {

// Lines along `dim` of up to three tensors (t[0] gives the extents of the kept axes).
struct LineArgs {
  Dims sh{}, st[3]{};
  cl_int r = 0;
  uint64_t n_lines = 1;
  cl_long t[3] = {0, 0, 0};
};

LineArgs lines_of(const pk_tensor *const *t, int nt, int64_t dim) {
  LineArgs l;
  TensorArg a[3];
  for (int i = 0; i < nt; ++i) a[i] = tensor_arg(*t[i]);
  for (int32_t d = 0; d < t[0]->ndim; ++d) {
    if (d == dim) {
      for (int i = 0; i < nt; ++i) l.t[i] = a[i].strides.v[d];
      continue;
    }
    l.sh.v[l.r] = t[0]->shape[d];
    for (int i = 0; i < nt; ++i) l.st[i].v[l.r] = a[i].strides.v[d];
    l.n_lines *= static_cast<uint64_t>(t[0]->shape[d]);
    ++l.r;
  }
  return l;
}

}  // namespace

pk_status launch_scan(pk_be_stream *s, uint32_t op, const pk_tensor &in, const pk_tensor *outs, uint32_t nout,
                      const void *attrs) {
  const int32_t dt = kit::dtype_id(in.dtype);
  const int64_t dim = static_cast<const pk_attrs_cumsum *>(attrs)->dim;  // every scan's struct starts with dim
  const pk_tensor *ts[3] = {&in, &outs[0], nout > 1 ? &outs[1] : &outs[0]};
  const LineArgs l = lines_of(ts, 3, dim);
  const cl_long len = in.ndim ? in.shape[dim] : 1;
  if (l.n_lines == 0 || len == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_scan"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::scan, op, dts, 1, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_scan(op, dt, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  const TensorArg ia = tensor_arg(in), oa = tensor_arg(outs[0]), xa = tensor_arg(*ts[2]);
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(ia.mem)(static_cast<cl_long>(ia.offset))(oa.mem)(static_cast<cl_long>(oa.offset))(xa.mem)(
      static_cast<cl_long>(xa.offset));
  set(l.sh)(l.r)(l.st[0])(l.st[1])(l.st[2])(l.n_lines)(len)(l.t[0])(l.t[1])(l.t[2]);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t local = 64, global = round_up(static_cast<size_t>(l.n_lines), local);
  return enqueue(s, k, 1, &global, &local, op);
}

namespace {

pk_status sort_kernels(pk_be_stream *s, uint32_t op, int32_t dt, KernelSet **ks) {
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_sort", "pk_search", "pk_sort_runs", "pk_sort_merge", "pk_sort_out"};
  return get_kernels(
      *s->dev, kernel_key(Path::sort, PK_OP_SORT, dts, 1, 0), op, kNames, 5,
      [&](bool *all, uint32_t *) {
        *all = true;  // every slot, not only the first two
        return gen_sort(dt, s->dev->caps);
      },
      ks);
}

// Lines up to this long sort in one pass (each element's rank, O(len) per element); longer ones by merging runs of
// this length.
constexpr cl_long kSortRun = 256;

pk_status launch_merge_sort(pk_be_stream *s, uint32_t op, KernelSet *ks, const LineArgs &l, cl_long len, cl_long keep,
                            cl_int desc, const TensorArg &ia, const TensorArg &va, const TensorArg &xa,
                            size_t elem_bytes) {
  const uint64_t n = l.n_lines * static_cast<uint64_t>(len);
  cl_int err = CL_SUCCESS;
  // Ping-pong scratch for the values and their positions; released once enqueued (OpenCL keeps them until the
  // queued kernels are done).
  Mem kv[2], ki[2];
  for (int b = 0; b < 2; ++b) {
    kv[b] = Mem(clCreateBuffer(s->dev->context, CL_MEM_READ_WRITE, n * elem_bytes, nullptr, &err));
    if (kv[b]) ki[b] = Mem(clCreateBuffer(s->dev->context, CL_MEM_READ_WRITE, n * 8, nullptr, &err));
    if (!kv[b] || !ki[b]) return stream_fail(s, err, op, "allocating the sort's scratch buffers failed");
  }
  std::lock_guard<std::mutex> g(ks->mu);
  const size_t local = kLocal, global = round_up(static_cast<size_t>(n), kLocal);
  Args runs{ks->k[2].get()};
  runs(ia.mem)(static_cast<cl_long>(ia.offset))(kv[0].get())(ki[0].get());
  runs(l.sh)(l.r)(l.st[0])(l.st[1])(l.st[2])(l.n_lines)(len)(l.t[0])(l.t[1])(l.t[2])(kSortRun)(desc);
  if (runs.err != CL_SUCCESS) return stream_fail(s, runs.err, op, "clSetKernelArg failed");
  if (pk_status st = enqueue(s, ks->k[2].get(), 1, &global, &local, op)) return st;
  int cur = 0;
  for (cl_long w = kSortRun; w < len; w *= 2, cur ^= 1) {
    Args merge{ks->k[3].get()};
    merge(kv[cur].get())(ki[cur].get())(kv[cur ^ 1].get())(ki[cur ^ 1].get())(l.n_lines)(len)(w)(desc);
    if (merge.err != CL_SUCCESS) return stream_fail(s, merge.err, op, "clSetKernelArg failed");
    if (pk_status st = enqueue(s, ks->k[3].get(), 1, &global, &local, op)) return st;
  }
  Args out{ks->k[4].get()};
  out(kv[cur].get())(ki[cur].get())(va.mem)(static_cast<cl_long>(va.offset))(xa.mem)(static_cast<cl_long>(xa.offset));
  out(l.sh)(l.r)(l.st[0])(l.st[1])(l.st[2])(l.n_lines)(len)(l.t[0])(l.t[1])(l.t[2])(keep);
  if (out.err != CL_SUCCESS) return stream_fail(s, out.err, op, "clSetKernelArg failed");
  const size_t gout = round_up(static_cast<size_t>(l.n_lines * static_cast<uint64_t>(keep)), kLocal);
  return enqueue(s, ks->k[4].get(), 1, &gout, &local, op);
}

}  // namespace

pk_status launch_sort(pk_be_stream *s, uint32_t op, const pk_tensor &in, const pk_tensor *outs, const void *attrs) {
  const int32_t dt = kit::dtype_id(in.dtype);
  int64_t dim = 0, keep = 0;
  cl_int desc = 0;
  if (op == PK_OP_SORT) {
    const auto *at = static_cast<const pk_attrs_sort *>(attrs);
    dim = at->dim;
    desc = at->descending;
    keep = in.ndim ? in.shape[dim] : 1;
  } else {
    const auto *at = static_cast<const pk_attrs_topk *>(attrs);
    dim = at->dim;
    desc = at->largest;
    keep = at->k;
  }
  const pk_tensor *ts[3] = {&in, &outs[0], &outs[1]};
  const LineArgs l = lines_of(ts, 3, dim);
  const cl_long len = in.ndim ? in.shape[dim] : 1;
  const uint64_t n = l.n_lines * static_cast<uint64_t>(len);
  if (n == 0 || keep == 0) return PK_OK;
  KernelSet *ks = nullptr;
  if (pk_status st = sort_kernels(s, op, dt, &ks)) return st;
  const TensorArg ia = tensor_arg(in), va = tensor_arg(outs[0]), xa = tensor_arg(outs[1]);
  if (len > kSortRun) return launch_merge_sort(s, op, ks, l, len, keep, desc, ia, va, xa, pk::meta::dtype_size(dt));
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(ia.mem)(static_cast<cl_long>(ia.offset))(va.mem)(static_cast<cl_long>(va.offset))(xa.mem)(
      static_cast<cl_long>(xa.offset));
  set(l.sh)(l.r)(l.st[0])(l.st[1])(l.st[2])(l.n_lines)(len)(l.t[0])(l.t[1])(l.t[2]);
  set(static_cast<cl_long>(keep))(desc);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

pk_status launch_search(pk_be_stream *s, const pk_tensor &seq, const pk_tensor &vals, const pk_tensor &out,
                        const void *attrs) {
  const uint32_t op = PK_OP_SEARCHSORTED;
  const uint64_t n = numel_of(out);
  if (n == 0) return PK_OK;
  KernelSet *ks = nullptr;
  if (pk_status st = sort_kernels(s, op, kit::dtype_id(seq.dtype), &ks)) return st;
  const TensorArg qa = tensor_arg(seq), va = tensor_arg(vals), oa = tensor_arg(out);
  const Dims sh = dims_of(out.shape, out.ndim);
  const cl_int right = static_cast<const pk_attrs_searchsorted *>(attrs)->right;
  cl_kernel k = ks->k[1].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(qa.mem)(static_cast<cl_long>(qa.offset))(static_cast<cl_long>(qa.strides.v[0]))(
      static_cast<cl_long>(seq.shape[0]));
  set(va.mem)(static_cast<cl_long>(va.offset))(va.strides)(oa.mem)(static_cast<cl_long>(oa.offset))(oa.strides);
  set(sh)(static_cast<cl_int>(out.ndim))(right)(n);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

}  // namespace pk::ocl
