// cl_launch.cpp — the OpenCL backend's kernel cache, what runs where (shared by the capability query and the
// launch), and the launches of elementwise ops, creation (fill, full, iota, extreme values), reductions,
// argmax / argmin and matmul.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cl_backend.hpp"
#include "cl_codegen.hpp"
#include "cl_fft.hpp"
#include "cl_key.hpp"
#include "cl_programs.hpp"
#include "cl_util.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

using kit::fail;

// --- kernel cache -----------------------------------------------------------------------------------------------

// Builds a program for `source` and creates the named kernels.
pk_status make_kernel_set(DeviceState &dev, const std::string &source, const char *const *names, size_t count,
                          uint32_t op, std::unique_ptr<KernelSet> &out) {
  BuildInfo info;
  Program p = build_program(dev.context, dev.id, dev.key, source, dev.options, &info);
  if (!p) {
    kit::last_error().op_id = op;
    return kit::last_error().status;
  }
  auto set = std::make_unique<KernelSet>();
  for (size_t i = 0; i < count; ++i) {
    if (names[i] == nullptr) continue;
    cl_int err = CL_SUCCESS;
    set->k[i] = Kernel(clCreateKernel(p.get(), names[i], &err));
    if (err != CL_SUCCESS) return cl_fail(PK_ERROR_INTERNAL, err, op, "opencl: clCreateKernel(%s) failed", names[i]);
  }
  set->program = std::move(p);
  out = std::move(set);
  return PK_OK;
}

// --- what runs where --------------------------------------------------------------------------------------------

bool is_ew_op(const pk::meta::OpInfo &op) {
  const char *c = op.category;
  return std::strcmp(c, "unary") == 0 || std::strcmp(c, "binary") == 0 || std::strcmp(c, "compare") == 0 ||
         std::strcmp(c, "ternary") == 0 || op.id == PK_OP_CONVERT_ELEMENT_TYPE || op.id == PK_OP_CLONE ||
         op.id == PK_OP_COPY_TO;
}

// Which kernel family runs a launch with these dtypes; Path::none with `why` when none does. Shared by op_query
// and op_launch so that both always agree. `attrs` may be NULL (a coverage query: any attribute values).
Path classify(const DeviceState &dev, uint32_t op_id, const int32_t *in_dt, uint32_t nin, const int32_t *out_dt,
              uint32_t nout, const void *attrs, std::string *why) {
  const pk::meta::OpInfo *op = pk::meta::find_op(op_id);
  auto no = [&](const std::string &r) {
    if (why) *why = r;
    return Path::none;
  };
  if (op == nullptr) return no("unknown op");
  if (nout < 1) return no(std::string("no OpenCL kernel for ") + op->name);
  std::string w;
  auto dt_ok = [&](int32_t dt) { return dtype_supported(dt, dev.caps, &w); };
  auto is_cx = [](int32_t dt) { return dt == PK_DTYPE_C64 || dt == PK_DTYPE_C128; };
  auto real = [&](int32_t dt) { return dt_ok(dt) && dt != PK_DTYPE_BOOL && !is_cx(dt); };
  switch (op_id) {
    case PK_OP_BROADCAST_IN_DIM:
    case PK_OP_AS_STRIDED:
    case PK_OP_COLLAPSE_VIEW:
    case PK_OP_EXPAND_DIMS:
    case PK_OP_SLICE:
    case PK_OP_SLICE_IN_DIM:
    case PK_OP_SPLIT_DIM:
    case PK_OP_SQUEEZE:
    case PK_OP_TRANSPOSE:
    case PK_OP_VIEW_OF:
    case PK_OP_COLLAPSE:
    case PK_OP_RESHAPE:
    case PK_OP_REV:
    case PK_OP_CAT:
    case PK_OP_PAD:
    case PK_OP_SLICE_SCATTER:
    case PK_OP_AS_STRIDED_SCATTER:
      return dt_ok(out_dt[0]) ? Path::move : no(w);
    case PK_OP_GATHER:
    case PK_OP_INDEX_SELECT:
      return nin == 2 && dt_ok(out_dt[0]) ? Path::take : no(w);
    case PK_OP_SCATTER:
      return nin == 3 && dt_ok(out_dt[0]) ? Path::scatter : no(w);
    case PK_OP_SCATTER_REDUCE:
      return nin == 3 && real(out_dt[0]) ? Path::scatter : no(w.empty() ? "not generated for bool and complex" : w);
    case PK_OP_INDEX_PUT:
      return nin >= 3 && real(out_dt[0]) ? Path::index_put : no(w.empty() ? "not generated for bool and complex" : w);
    case PK_OP_CUMSUM:
    case PK_OP_CUMPROD:
    case PK_OP_CUMMAX:
    case PK_OP_CUMMIN:
    case PK_OP_LOGCUMSUMEXP:
      return nin == 1 && scan_supported(op_id, in_dt[0], dev.caps, &w) ? Path::scan : no(w);
    case PK_OP_SORT:
    case PK_OP_TOPK:
      return nin == 1 && nout == 2 && scan_supported(op_id, in_dt[0], dev.caps, &w) ? Path::sort : no(w);
    case PK_OP_SEARCHSORTED:
      return nin == 2 && scan_supported(op_id, in_dt[0], dev.caps, &w) ? Path::search : no(w);
    case PK_OP_VAR:
      return nin == 1 && scan_supported(op_id, in_dt[0], dev.caps, &w) ? Path::var : no(w);
    case PK_OP_DOT_GENERAL:
      return nin == 2 && matmul_supported(in_dt[0], dev.caps, &w) ? Path::dot_general : no(w);
    case PK_OP_CONVOLUTION:
      if (nin != 2 || !dt_ok(in_dt[0])) return no(w);
      if (in_dt[0] != PK_DTYPE_F32 && in_dt[0] != PK_DTYPE_F64 && in_dt[0] != PK_DTYPE_BF16)
        return no("convolution is generated for bf16, f32 and f64");
      return Path::conv;
    case PK_OP_FFT_C2C:
    case PK_OP_FFT_R2C:
    case PK_OP_FFT_C2R:
      return nin == 1 && fft_supported(op_id, in_dt[0], dev.caps, &w) ? Path::fft : no(w);
    case PK_OP_PHILOX_UNIFORM:
    case PK_OP_PHILOX_NORMAL:
    case PK_OP_PHILOX_RANDINT:
      if (!dev.caps.fp64) return no("the Philox kernels compute in f64, which needs cl_khr_fp64");
      if (is_cx(out_dt[0])) return no("the Philox kernels are not generated for complex dtypes");
      return dt_ok(out_dt[0]) ? Path::philox : no(w);
    default:
      break;
  }
  if (nout != 1) return no(std::string("no OpenCL kernel for ") + op->name);
  // The reductions: the op table's folds (and mean); an index reduction has its own kernel.
  const meta::Combine fold = reduction_fold(op_id);
  if (fold == meta::Combine::argmax || fold == meta::Combine::argmin) {
    std::string w;
    if (nin != 1 || !argreduce_supported(op_id, in_dt[0], dev.caps, &w)) return no(w);
    return Path::argreduce;
  }
  if (fold != meta::Combine::none && fold != meta::Combine::line) {
    std::string w;
    if (nin != 1 || !reduction_supported(op_id, in_dt[0], dev.caps, &w)) return no(w);
    return Path::reduction;
  }
  switch (op_id) {
    case PK_OP_FILL:
    case PK_OP_FULL:
    case PK_OP_SCALAR_TENSOR:
    case PK_OP_MAXIMUM_VALUE:
    case PK_OP_MINIMUM_VALUE: {
      std::string w;
      if (!dtype_supported(out_dt[0], dev.caps, &w)) return no(w);
      return Path::set;
    }
    case PK_OP_IOTA: {
      std::string w;
      if (!dtype_supported(out_dt[0], dev.caps, &w)) return no(w);
      return Path::iota;
    }
    case PK_OP_MATMUL:
    case PK_OP_BATCH_MATMUL: {
      std::string w;
      if (nin != 2 || !matmul_supported(in_dt[0], dev.caps, &w)) return no(w);
      return Path::matmul;
    }
    default:
      break;
  }
  if (!is_ew_op(*op) || op->tier != pk::meta::Tier::primitive || nin > 3) {
    return no(std::string("no OpenCL kernel is generated for ") + op->name);
  }
  uint32_t variant = 0;
  if (op_id == PK_OP_CONVERT_ELEMENT_TYPE) variant = static_cast<uint32_t>(out_dt[0]);
  if (op_id == PK_OP_ROUND && attrs) variant = static_cast<uint32_t>(static_cast<const pk_attrs_round *>(attrs)->mode);
  if (!ew_op_supported(op_id, in_dt, nin, out_dt[0], variant, dev.caps, &w)) return no(w);
  return Path::elementwise;
}

// --- launches ---------------------------------------------------------------------------------------------------

pk_status enqueue(pk_be_stream *s, cl_kernel k, cl_uint dims, const size_t *global, const size_t *local, uint32_t op) {
  cl_int err = clEnqueueNDRangeKernel(s->queue.get(), k, dims, nullptr, global, local, 0, nullptr, nullptr);
  if (err != CL_SUCCESS) return stream_fail(s, err, op, "clEnqueueNDRangeKernel failed");
  return PK_OK;
}

// Runs an elementwise kernel set over tensors args (inputs then outputs) of `n` elements with the shape of t0.
pk_status run_elementwise(pk_be_stream *s, KernelSet &ks, const pk_tensor *const *tensors, size_t count, uint64_t n,
                          int32_t ndim, const int64_t *shape, uint32_t op) {
  if (n == 0) return PK_OK;
  TensorArg a[16];
  if (count > 16) return fail(PK_ERROR_INTERNAL, op, -1, "opencl: more than 16 tensors in one elementwise kernel");
  bool dense = true;
  for (size_t i = 0; i < count; ++i) {
    a[i] = tensor_arg(*tensors[i]);
    dense = dense && a[i].dense;
  }
  int slot = dense ? (ks.vector ? kVec : kContig) : kStrided;
  if (slot == kVec && s->dev->alignment >= 32 &&
      n * dtype_bytes(kit::dtype_id(tensors[count - 1]->dtype)) >= kStreamingBytes) {
    bool aligned = true;  // the non-temporal kernel stores whole 32-byte vectors
    for (size_t i = 0; i < count; ++i) aligned = aligned && tensors[i]->byte_offset % 32 == 0;
    if (aligned) slot = kVecNonTemporal;
  }
  cl_kernel k = ks.k[slot].get();
  std::lock_guard<std::mutex> g(ks.mu);
  Args set{k};
  for (size_t i = 0; i < count; ++i) {
    set(a[i].mem)(a[i].offset);
    if (!dense) set(a[i].strides);
  }
  if (!dense) {
    Dims sh{};
    for (int32_t d = 0; d < ndim; ++d) sh.v[d] = shape[d];
    set(sh)(static_cast<cl_int>(ndim));
  }
  set(n);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const uint64_t items = slot >= kVec ? (n + ks.vec_elems - 1) / ks.vec_elems : n;
  const size_t global = round_up(static_cast<size_t>(items), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

uint32_t ew_variant(uint32_t op_id, int32_t out_dt, const void *attrs) {
  if (op_id == PK_OP_CONVERT_ELEMENT_TYPE) return static_cast<uint32_t>(out_dt);
  if (op_id == PK_OP_ROUND && attrs) return static_cast<uint32_t>(static_cast<const pk_attrs_round *>(attrs)->mode);
  return 0;
}

uint64_t ew_key(uint32_t op_id, const int32_t *in_dt, uint32_t nin, int32_t out_dt, uint32_t variant) {
  const int32_t dts[4] = {in_dt[0], nin > 1 ? in_dt[1] : -1, nin > 2 ? in_dt[2] : -1, out_dt};
  return kernel_key(Path::elementwise, op_id, dts, 4, variant);
}

// Elementwise ops by id, for the launch fast path (filled once from the op table).
bool is_ew_id(uint32_t op_id) {
  static const std::vector<bool> table = [] {
    std::vector<bool> t(PK_OP_ID_LIMIT, false);
    for (const pk::meta::OpInfo *op = pk::meta::ops_begin(); op != pk::meta::ops_end(); ++op) {
      if (op->id < PK_OP_ID_LIMIT && op->tier == pk::meta::Tier::primitive && is_ew_op(*op) && op->id != PK_OP_FILL) {
        t[op->id] = true;
      }
    }
    return t;
  }();
  return op_id < table.size() && table[op_id];
}

KernelSet *find_kernels(DeviceState &dev, uint64_t key) {
  std::lock_guard<std::mutex> g(dev.mu);
  auto it = dev.kernels.find(key);
  return it == dev.kernels.end() ? nullptr : it->second.get();
}

pk_status launch_elementwise(pk_be_stream *s, uint32_t op_id, const pk_tensor *inputs, uint32_t nin,
                             const pk_tensor *outputs, const int32_t *in_dt, int32_t out_dt, const void *attrs,
                             KernelSet *ks) {
  DeviceState &dev = *s->dev;
  const uint32_t variant = ew_variant(op_id, out_dt, attrs);
  const uint64_t key = ew_key(op_id, in_dt, nin, out_dt, variant);
  pk_status st = ks ? PK_OK
                    : get_kernels(
                          dev, key, op_id, kElementwiseKernels, 4,
                          [&](bool *vec, uint32_t *w) {
                            EwGraph g;
                            EwNode node;
                            node.op_id = op_id;
                            node.num_inputs = nin;
                            for (uint32_t i = 0; i < nin; ++i) {
                              g.dtypes.push_back(in_dt[i]);
                              g.args.push_back(static_cast<int32_t>(i));
                              node.inputs[i] = static_cast<int32_t>(i);
                            }
                            g.dtypes.push_back(out_dt);
                            g.args.push_back(static_cast<int32_t>(nin));
                            g.num_in_args = nin;
                            node.output = static_cast<int32_t>(nin);
                            node.variant = variant;
                            g.nodes.push_back(node);
                            return gen_elementwise(g, dev.caps, vec, w);
                          },
                          &ks);
  if (st != PK_OK) return st;
  const pk_tensor *ts[4] = {&inputs[0], nin > 1 ? &inputs[1] : nullptr, nin > 2 ? &inputs[2] : nullptr, nullptr};
  ts[nin] = &outputs[0];
  return run_elementwise(s, *ks, ts, nin + 1, numel_of(outputs[0]), outputs[0].ndim, outputs[0].shape, op_id);
}

pk_status launch_set(pk_be_stream *s, uint32_t op_id, const pk_tensor &out, int32_t out_dt, const void *attrs) {
  uint64_t bits = 0;
  switch (op_id) {
    case PK_OP_FILL:
      bits = value_bits(static_cast<const pk_attrs_fill *>(attrs)->value, out_dt);
      break;
    case PK_OP_FULL:
      bits = value_bits(static_cast<const pk_attrs_full *>(attrs)->value, out_dt);
      break;
    case PK_OP_SCALAR_TENSOR:
      bits = value_bits(static_cast<const pk_attrs_scalar_tensor *>(attrs)->value, out_dt);
      break;
    case PK_OP_MAXIMUM_VALUE:
      bits = extreme_bits(out_dt, true);
      break;
    default:
      bits = extreme_bits(out_dt, false);
      break;
  }
  return launch_fill_bits(s, op_id, out, bits);
}

pk_status launch_fill_bits(pk_be_stream *s, uint32_t op_id, const pk_tensor &out, uint64_t bits) {
  const uint64_t n = numel_of(out);
  if (n == 0) return PK_OK;
  const size_t bytes = dtype_bytes(kit::dtype_id(out.dtype));
  const int32_t dts[1] = {static_cast<int32_t>(bytes)};
  static const char *const kNames[] = {"pk_set_contig", "pk_set_strided"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::set, 0, dts, 1, 0), op_id, kNames, 2,
      [&](bool *, uint32_t *) { return gen_set(bytes); }, &ks);
  if (st != PK_OK) return st;
  const TensorArg a = tensor_arg(out);
  cl_kernel k = ks->k[a.dense ? kContig : kStrided].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(a.mem)(a.offset);
  if (!a.dense) {
    Dims sh{};
    for (int32_t d = 0; d < out.ndim; ++d) sh.v[d] = out.shape[d];
    set(a.strides)(sh)(static_cast<cl_int>(out.ndim));
  }
  set(n)(bits);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op_id, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op_id);
}

pk_status launch_iota(pk_be_stream *s, const pk_tensor &out, int32_t out_dt, const pk_attrs_iota &at) {
  const uint64_t n = numel_of(out);
  if (n == 0) return PK_OK;
  const int32_t dts[1] = {out_dt};
  static const char *const kNames[] = {"pk_iota"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::iota, PK_OP_IOTA, dts, 1, 0), PK_OP_IOTA, kNames, 1,
      [&](bool *, uint32_t *) { return gen_iota(out_dt, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  const TensorArg a = tensor_arg(out);
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(a.mem)(a.offset)(static_cast<cl_long>(a.strides.v[0]))(n)(static_cast<cl_long>(at.start))(
      static_cast<cl_long>(at.step));
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, PK_OP_IOTA, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, PK_OP_IOTA);
}

// The reduce ops' attribute structs share one layout (struct_size, num_dims, dims).
static_assert(offsetof(pk_attrs_sum, dims) == offsetof(pk_attrs_amax, dims) &&
                  offsetof(pk_attrs_sum, dims) == offsetof(pk_attrs_mean, dims) &&
                  offsetof(pk_attrs_sum, dims) == offsetof(pk_attrs_all, dims) &&
                  offsetof(pk_attrs_sum, dims) == offsetof(pk_attrs_any, dims) &&
                  offsetof(pk_attrs_sum, dims) == offsetof(pk_attrs_xor_sum, dims) &&
                  offsetof(pk_attrs_sum, dims) == offsetof(pk_attrs_amin, dims) &&
                  offsetof(pk_attrs_sum, dims) == offsetof(pk_attrs_prod, dims) &&
                  offsetof(pk_attrs_sum, num_dims) == offsetof(pk_attrs_prod, num_dims),
              "reduction attribute layouts differ");

namespace {

pk_status ensure_scratch(pk_be_stream *s, size_t bytes, uint32_t op) {
  if (s->scratch_bytes >= bytes) return PK_OK;
  cl_int err = CL_SUCCESS;
  Mem m(clCreateBuffer(s->dev->context, CL_MEM_READ_WRITE, bytes, nullptr, &err));
  if (!m) return stream_fail(s, err, op, "allocating the reduction scratch buffer failed");
  // The old scratch may still be read by queued work: OpenCL keeps a released buffer alive until it is done.
  s->scratch = std::move(m);
  s->scratch_bytes = bytes;
  return PK_OK;
}

}  // namespace

pk_status launch_reduction(pk_be_stream *s, uint32_t op_id, const pk_tensor &in, const pk_tensor &out, int32_t dt,
                           const void *attrs) {
  DeviceState &dev = *s->dev;
  const auto *at = static_cast<const pk_attrs_sum *>(attrs);
  uint32_t mask = 0;
  for (int32_t i = 0; at && i < at->num_dims; ++i) mask |= 1u << at->dims[i];
  const TensorArg ia = tensor_arg(in), oa = tensor_arg(out);
  // Kept axes (with the output's strides, in order) and reduced axes; extent-1 axes dropped, and adjacent reduced
  // axes that are contiguous in memory merged, so a row reduction walks one strided axis.
  Dims ks{}, kin{}, kout{}, rs{}, rst{};
  int32_t nk = 0, nr = 0, od = 0;
  uint64_t n_out = 1, n_red = 1;
  for (int32_t d = 0; d < in.ndim; ++d) {
    const int64_t ext = in.shape[d];
    if (mask & (1u << d)) {
      n_red *= static_cast<uint64_t>(ext);
      if (ext == 1) continue;
      if (nr > 0 && rst.v[nr - 1] == ia.strides.v[d] * ext) {
        rs.v[nr - 1] *= ext;
        rst.v[nr - 1] = ia.strides.v[d];
      } else {
        rs.v[nr] = ext;
        rst.v[nr++] = ia.strides.v[d];
      }
    } else {
      n_out *= static_cast<uint64_t>(ext);
      if (ext != 1) {
        ks.v[nk] = ext;
        kin.v[nk] = ia.strides.v[d];
        kout.v[nk++] = oa.strides.v[od];
      }
      ++od;
    }
  }
  if (nr == 0) {
    rs.v[0] = 1;
    rst.v[0] = 0;
    nr = 1;
  }
  if (n_out == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_red_direct", "pk_red_partial", "pk_red_final"};
  KernelSet *kset = nullptr;
  // All three kernels always exist: ask for three names by claiming the "vector" slot count.
  pk_status st = get_kernels(
      dev, kernel_key(Path::reduction, op_id, dts, 1, 0), op_id, kNames, 3,
      [&](bool *vec, uint32_t *) {
        *vec = true;
        return gen_reduction(op_id, dt, dev.caps);
      },
      &kset);
  if (st != PK_OK) return st;
  const cl_int cnk = nk, cnr = nr;
  const bool direct = n_red < 8192 || n_out >= 256;
  std::lock_guard<std::mutex> g(kset->mu);
  if (direct) {
    cl_kernel k = kset->k[0].get();
    Args set{k};
    set(ia.mem)(ia.offset)(ks)(kin)(kout)(cnk)(rs)(rst)(cnr)(n_out)(n_red)(oa.mem)(oa.offset);
    if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op_id, "clSetKernelArg failed");
    const size_t local = 64, global = round_up(static_cast<size_t>(n_out), local);
    return enqueue(s, k, 1, &global, &local, op_id);
  }
  const cl_uint parts = static_cast<cl_uint>(std::min<uint64_t>(64, std::max<uint64_t>(1, n_red / (kRedLocal * 256))));
  if (pk_status e = ensure_scratch(s, n_out * parts * reduction_acc_bytes(dt), op_id)) return e;
  cl_mem scratch = s->scratch.get();
  cl_kernel k1 = kset->k[1].get(), k2 = kset->k[2].get();
  Args set1{k1};
  set1(ia.mem)(ia.offset)(ks)(kin)(kout)(cnk)(rs)(rst)(cnr)(n_out)(n_red)(scratch)(parts);
  if (set1.err != CL_SUCCESS) return stream_fail(s, set1.err, op_id, "clSetKernelArg failed");
  const size_t local1 = kRedLocal, global1 = static_cast<size_t>(n_out) * parts * kRedLocal;
  if (pk_status e = enqueue(s, k1, 1, &global1, &local1, op_id)) return e;
  Args set2{k2};
  set2(scratch)(parts)(ks)(kout)(cnk)(n_out)(n_red)(oa.mem)(oa.offset);
  if (set2.err != CL_SUCCESS) return stream_fail(s, set2.err, op_id, "clSetKernelArg failed");
  const size_t local2 = 64, global2 = round_up(static_cast<size_t>(n_out), local2);
  return enqueue(s, k2, 1, &global2, &local2, op_id);
}

pk_status launch_argreduce(pk_be_stream *s, uint32_t op_id, const pk_tensor &in, const pk_tensor &out, int32_t dt,
                           const void *attrs) {
  DeviceState &dev = *s->dev;
  const int64_t dim = static_cast<const pk_attrs_argmax *>(attrs)->dim;
  const TensorArg ia = tensor_arg(in), oa = tensor_arg(out);
  Dims ks{}, kin{}, kout{};
  int32_t nk = 0, od = 0;
  uint64_t n_out = 1;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (d == dim) continue;
    n_out *= static_cast<uint64_t>(in.shape[d]);
    ks.v[nk] = in.shape[d];
    kin.v[nk] = ia.strides.v[d];
    kout.v[nk++] = oa.strides.v[od++];
  }
  if (n_out == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_arg_direct"};
  KernelSet *kset = nullptr;
  pk_status st = get_kernels(
      dev, kernel_key(Path::argreduce, op_id, dts, 1, 0), op_id, kNames, 1,
      [&](bool *, uint32_t *) { return gen_argreduce(op_id, dt, dev.caps); }, &kset);
  if (st != PK_OK) return st;
  cl_kernel k = kset->k[0].get();
  std::lock_guard<std::mutex> g(kset->mu);
  Args set{k};
  const cl_int cnk = nk;
  const cl_long len = in.ndim ? in.shape[dim] : 1, stride = in.ndim ? ia.strides.v[dim] : 0;
  set(ia.mem)(ia.offset)(ks)(kin)(kout)(cnk)(len)(stride)(n_out)(oa.mem)(oa.offset);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op_id, "clSetKernelArg failed");
  const size_t local = 64, global = round_up(static_cast<size_t>(n_out), local);
  return enqueue(s, k, 1, &global, &local, op_id);
}

pk_status launch_matmul(pk_be_stream *s, uint32_t op_id, const pk_tensor &a, const pk_tensor &b, const pk_tensor &c,
                        int32_t dt) {
  DeviceState &dev = *s->dev;
  const TensorArg aa = tensor_arg(a), ba = tensor_arg(b), ca = tensor_arg(c);
  const bool batched = op_id == PK_OP_BATCH_MATMUL;
  const int o = batched ? 1 : 0;
  const cl_long M = a.shape[o], K = a.shape[o + 1], N = b.shape[o + 1], B = batched ? a.shape[0] : 1;
  const cl_long sab = batched ? aa.strides.v[0] : 0, sbb = batched ? ba.strides.v[0] : 0,
                scb = batched ? ca.strides.v[0] : 0;
  if (M == 0 || N == 0 || B == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_matmul"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      dev, kernel_key(Path::matmul, PK_OP_MATMUL, dts, 1, 0), op_id, kNames, 1,
      [&](bool *, uint32_t *) { return gen_matmul(dt, dev.caps); }, &ks);
  if (st != PK_OK) return st;
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(aa.mem)(aa.offset)(sab)(static_cast<cl_long>(aa.strides.v[o]))(static_cast<cl_long>(aa.strides.v[o + 1]));
  set(ba.mem)(ba.offset)(sbb)(static_cast<cl_long>(ba.strides.v[o]))(static_cast<cl_long>(ba.strides.v[o + 1]));
  set(ca.mem)(ca.offset)(scb)(static_cast<cl_long>(ca.strides.v[o]))(static_cast<cl_long>(ca.strides.v[o + 1]));
  set(M)(N)(K);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op_id, "clSetKernelArg failed");
  const size_t local[3] = {kMmLocal, kMmLocal, 1};
  const size_t global[3] = {static_cast<size_t>((N + kMmTile - 1) / kMmTile) * kMmLocal,
                            static_cast<size_t>((M + kMmTile - 1) / kMmTile) * kMmLocal, static_cast<size_t>(B)};
  return enqueue(s, k, 3, global, local, op_id);
}

}  // namespace pk::ocl
