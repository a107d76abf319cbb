// opencl_backend.cpp — the OpenCL reference backend's plugin entry: platform/device discovery through the ICD
// loader, cl_mem device memory, streams as in-order command queues, events as cl_event markers, the capability
// query and launches of kernels generated from the op table (cl_codegen) and built lazily (cl_programs), and the
// fusion hook that compiles elementwise chains into one kernel.
//
// Nothing here waits for the device after an op: the runtime calls stream_synchronize when it needs results.
// A failed enqueue (or a failure clFinish reports) makes its stream's error sticky, as the ABI requires.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cl_codegen.hpp"
#include "cl_fft.hpp"
#include "cl_key.hpp"
#include "cl_programs.hpp"
#include "cl_util.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {
namespace {

using kit::fail;

// A built program and its kernels. clSetKernelArg + clEnqueueNDRangeKernel on one cl_kernel must not interleave
// between threads, hence the mutex.
struct KernelSet {
  Program program;
  std::mutex mu;
  Kernel k[12];  // the most kernels one program has (the FFTs': kFftKernels)
  bool vector = false;
  uint32_t vec_elems = 1;
};

struct DeviceState {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context context = nullptr;  // owned by the context's platform list
  std::string name, key, options;
  DeviceCaps caps;
  uint64_t memory = 0, max_alloc = 0;
  uint32_t compute_units = 1, alignment = 64;
  bool denormals = true;
  std::mutex mu;  // guards `kernels` (and serializes program builds)
  std::unordered_map<uint64_t, std::unique_ptr<KernelSet>> kernels;
};

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

bool has_extension(const std::string &exts, const char *name) {
  size_t pos = 0;
  const size_t n = std::strlen(name);
  while ((pos = exts.find(name, pos)) != std::string::npos) {
    if ((pos == 0 || exts[pos - 1] == ' ') && (pos + n == exts.size() || exts[pos + n] == ' ')) return true;
    pos += n;
  }
  return false;
}

}  // namespace
}  // namespace pk::ocl

using pk::ocl::DeviceState;
using pk::ocl::KernelSet;

struct pk_be_context {
  const pk_host_services *host = nullptr;
  std::vector<pk::ocl::Context> contexts;  // one per platform
  std::vector<std::unique_ptr<DeviceState>> devices;
  std::string discovery_note;  // why there are no devices, if so
  std::mutex mu;
  std::unordered_set<cl_mem> allocations;  // released in close() if the host forgot them
};

struct pk_be_stream {
  pk_be_context *ctx = nullptr;
  DeviceState *dev = nullptr;
  pk::ocl::Queue queue;
  pk_status sticky = PK_OK;
  char sticky_message[PK_MESSAGE_CAPACITY] = {0};
  // Scratch for two-stage reductions; reused by later launches (the queue is in order).
  pk::ocl::Mem scratch;
  size_t scratch_bytes = 0;
  // FFT twiddle and Bluestein tables (double2) made by earlier launches on this queue: its order guarantees they
  // are complete before a later launch reads them, which another queue's would not. Oldest dropped beyond
  // kFftTableBytes (OpenCL keeps a released buffer until queued work is done with it).
  struct FftTable {
    int kind;
    uint64_t n;
    bool forward;
    pk::ocl::Mem mem;
    uint64_t bytes;
  };
  std::vector<FftTable> fft_tables;
};

struct pk_be_event {
  DeviceState *dev = nullptr;
  pk::ocl::Event event;
  pk_be_stream *recorded_on = nullptr;
};

// A fused elementwise region compiled at offer time.
struct pk_be_kernel {
  DeviceState *dev = nullptr;
  pk::ocl::EwGraph graph;
  std::unique_ptr<KernelSet> kernels;
  int32_t ndim = 0;
  int64_t shape[PK_MAX_RANK] = {0};
  uint64_t numel = 1;
};

namespace pk::ocl {
namespace {

enum KernelSlot { kContig = 0, kStrided = 1, kVec = 2, kVecNonTemporal = 3 };
// The kernels of an elementwise program (gen_elementwise), in slot order; the last two only in vector programs.
const char *const kElementwiseKernels[] = {"pk_ew_contig", "pk_ew_strided", "pk_ew_vec", "pk_ew_vec_nt"};
constexpr size_t kLocal = 256;  // work-group size of the one-element-per-work-item kernels
// Outputs from this size on (larger than the last-level cache) are stored non-temporally, as the CPU backend does.
constexpr uint64_t kStreamingBytes = static_cast<uint64_t>(kit::kStreamingStoreBytes);

pk_status sticky_check(pk_be_stream *s) {
  if (s->sticky == PK_OK) return PK_OK;
  return fail(PK_ERROR_STREAM_FAILED, 0, -1, "opencl: stream failed earlier: %s", s->sticky_message);
}

// Records an enqueue failure and makes it the stream's sticky error.
pk_status stream_fail(pk_be_stream *s, cl_int err, uint32_t op, const char *what) {
  pk_status st =
      cl_fail(status_of(err), err, op, "opencl: %s%s%s", op ? pk::meta::op_name(op) : "", op ? ": " : "", what);
  s->sticky = st;
  std::snprintf(s->sticky_message, sizeof s->sticky_message, "%s", kit::last_error().message);
  return st;
}

void log_line(pk_be_context *ctx, int level, const std::string &msg) {
  if (ctx && ctx->host && ctx->host->log) ctx->host->log(level, msg.c_str());
}

// --- tensors ----------------------------------------------------------------------------------------------------

struct TensorArg {
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // in elements
  Dims strides{};
  bool dense = true;
};

// Byte offsets that are not a multiple of the element size cannot be addressed by typed kernel pointers.
bool aligned_offset(const pk_tensor &t) {
  const size_t e = (t.dtype.bits * t.dtype.lanes + 7u) / 8u;
  return e == 0 || t.byte_offset % e == 0;
}

TensorArg tensor_arg(const pk_tensor &t) {
  TensorArg a;
  a.mem = static_cast<cl_mem>(t.data);
  const size_t e = (t.dtype.bits * t.dtype.lanes + 7u) / 8u;
  a.offset = e ? t.byte_offset / e : 0;
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    a.strides.v[d] = t.strides ? t.strides[d] : expect;
    if (t.shape[d] != 1 && a.strides.v[d] != expect) a.dense = false;
    expect *= t.shape[d];
  }
  return a;
}

uint64_t numel_of(const pk_tensor &t) {
  uint64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= static_cast<uint64_t>(t.shape[d]);
  return n;
}

size_t round_up(size_t n, size_t m) {
  return (n + m - 1) / m * m;
}

// Sets kernel arguments in order, remembering the first failure.
struct Args {
  cl_kernel k;
  cl_uint i = 0;
  cl_int err = CL_SUCCESS;
  template <class T>
  Args &operator()(const T &v) {
    if (err == CL_SUCCESS) err = clSetKernelArg(k, i, sizeof(T), &v);
    ++i;
    return *this;
  }
};

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

// The kernel set for `key`, generated by `gen` and built at first use. Builds run under the device lock: two
// threads asking for one new kernel build it once.
template <class Gen>
pk_status get_kernels(DeviceState &dev, uint64_t key, uint32_t op, const char *const *names, size_t count, Gen &&gen,
                      KernelSet **out) {
  std::lock_guard<std::mutex> g(dev.mu);
  auto it = dev.kernels.find(key);
  if (it != dev.kernels.end()) {
    *out = it->second.get();
    return PK_OK;
  }
  bool vector = false;
  uint32_t vec_elems = 1;
  std::unique_ptr<KernelSet> set;
  const std::string source = gen(&vector, &vec_elems);
  if (pk_status st = make_kernel_set(dev, source, names, vector ? count : std::min<size_t>(count, 2), op, set))
    return st;
  set->vector = vector;
  set->vec_elems = vec_elems;
  *out = set.get();
  dev.kernels.emplace(key, std::move(set));
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
    case PK_OP_SUM:
    case PK_OP_PROD:
    case PK_OP_AMAX:
    case PK_OP_AMIN:
    case PK_OP_MEAN:
    case PK_OP_ALL:
    case PK_OP_ANY:
    case PK_OP_XOR_SUM: {
      std::string w;
      if (nin != 1 || !reduction_supported(op_id, in_dt[0], dev.caps, &w)) return no(w);
      return Path::reduction;
    }
    case PK_OP_ARGMAX:
    case PK_OP_ARGMIN: {
      std::string w;
      if (nin != 1 || !argreduce_supported(op_id, in_dt[0], dev.caps, &w)) return no(w);
      return Path::argreduce;
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
                             KernelSet *ks = nullptr) {
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

pk_status launch_fill_bits(pk_be_stream *s, uint32_t op_id, const pk_tensor &out, uint64_t bits);

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

// --- data movement, indexing, scans, sorting, linalg, rng ---------------------------------------------------------

// One side of a pk_move: the tensor, the base position, the per-iteration-axis map and whether positions are
// row-major (flat) positions of the tensor rather than element offsets.
struct MoveSide {
  const pk_tensor *t = nullptr;
  int64_t base = 0;
  Dims map{};
  bool flat = false;
};

Dims dims_of(const int64_t *v, int32_t n) {
  Dims d{};
  for (int32_t i = 0; i < n && i < PK_MAX_RANK; ++i) d.v[i] = v[i];
  return d;
}

// Row-major strides of `shape`.
Dims dense_dims(const int64_t *shape, int32_t n) {
  Dims d{};
  int64_t s = 1;
  for (int32_t i = n - 1; i >= 0; --i) {
    d.v[i] = s;
    s *= shape[i];
  }
  return d;
}

uint64_t count_of(const int64_t *shape, int32_t n) {
  uint64_t c = 1;
  for (int32_t i = 0; i < n; ++i) c *= static_cast<uint64_t>(shape[i]);
  return c;
}

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

pk_status launch_var(pk_be_stream *s, const pk_tensor &in, const pk_tensor &out, const void *attrs) {
  const uint32_t op = PK_OP_VAR;
  const auto *at = static_cast<const pk_attrs_var *>(attrs);
  const int32_t dt = kit::dtype_id(in.dtype);
  uint32_t mask = 0;
  for (int32_t i = 0; i < at->num_dims; ++i) mask |= 1u << at->dims[i];
  const TensorArg ia = tensor_arg(in), oa = tensor_arg(out);
  Dims ks{}, kin{}, kout{}, rs{}, rst{};
  int32_t nk = 0, nr = 0, od = 0;
  uint64_t n_out = 1, n_red = 1;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (mask & (1u << d)) {
      n_red *= static_cast<uint64_t>(in.shape[d]);
      rs.v[nr] = in.shape[d];
      rst.v[nr++] = ia.strides.v[d];
    } else {
      n_out *= static_cast<uint64_t>(in.shape[d]);
      ks.v[nk] = in.shape[d];
      kin.v[nk] = ia.strides.v[d];
      kout.v[nk++] = oa.strides.v[od++];
    }
  }
  if (n_out == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_var"};
  KernelSet *kset = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::var, op, dts, 1, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_var(dt, s->dev->caps); }, &kset);
  if (st != PK_OK) return st;
  cl_kernel k = kset->k[0].get();
  std::lock_guard<std::mutex> g(kset->mu);
  Args set{k};
  set(ia.mem)(ia.offset)(ks)(kin)(kout)(static_cast<cl_int>(nk))(rs)(rst)(static_cast<cl_int>(nr))(
      n_out)(n_red)(oa.mem)(oa.offset);
  if (s->dev->caps.fp64) {
    set(at->correction);
  } else {
    set(static_cast<cl_float>(at->correction));
  }
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t local = 64, global = round_up(static_cast<size_t>(n_out), local);
  return enqueue(s, k, 1, &global, &local, op);
}

pk_status launch_dot_general(pk_be_stream *s, const pk_tensor &a, const pk_tensor &b, const pk_tensor &out,
                             const void *attrs) {
  const uint32_t op = PK_OP_DOT_GENERAL;
  const auto *at = static_cast<const pk_attrs_dot_general *>(attrs);
  const int32_t dt = kit::dtype_id(a.dtype);
  const TensorArg aa = tensor_arg(a), ba = tensor_arg(b), oa = tensor_arg(out);
  // Output axes: batch, lhs free, rhs free (in order).
  Dims osh{}, soa{}, sob{}, csh{}, sca{}, scb{};
  int32_t orank = 0, crank = 0;
  bool a_used[PK_MAX_RANK] = {false}, b_used[PK_MAX_RANK] = {false};
  for (int32_t i = 0; i < at->num_lhs_batch; ++i) {
    osh.v[orank] = a.shape[at->lhs_batch[i]];
    soa.v[orank] = aa.strides.v[at->lhs_batch[i]];
    sob.v[orank++] = ba.strides.v[at->rhs_batch[i]];
    a_used[at->lhs_batch[i]] = b_used[at->rhs_batch[i]] = true;
  }
  for (int32_t i = 0; i < at->num_lhs_contract; ++i) {
    csh.v[crank] = a.shape[at->lhs_contract[i]];
    sca.v[crank] = aa.strides.v[at->lhs_contract[i]];
    scb.v[crank++] = ba.strides.v[at->rhs_contract[i]];
    a_used[at->lhs_contract[i]] = b_used[at->rhs_contract[i]] = true;
  }
  for (int32_t d = 0; d < a.ndim; ++d) {
    if (a_used[d]) continue;
    osh.v[orank] = a.shape[d];
    soa.v[orank++] = aa.strides.v[d];
  }
  for (int32_t d = 0; d < b.ndim; ++d) {
    if (b_used[d]) continue;
    osh.v[orank] = b.shape[d];
    sob.v[orank++] = ba.strides.v[d];
  }
  const uint64_t n = numel_of(out), nc = count_of(csh.v, crank);
  if (n == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_dot_general"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::dot_general, op, dts, 1, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_dot_general(dt, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(aa.mem)(static_cast<cl_long>(aa.offset))(ba.mem)(static_cast<cl_long>(ba.offset))(oa.mem)(
      static_cast<cl_long>(oa.offset));
  set(osh)(static_cast<cl_int>(orank))(soa)(sob)(oa.strides)(csh)(static_cast<cl_int>(crank))(sca)(scb)(nc)(n);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

// The layout of pk_conv_geom in the generated source.
struct ConvGeom {
  cl_long xst[8], xsh[8], wst[8], ksh[8], yst[8], ysh[8], stride[8], padl[8], dil[8];
  cl_long S, Cg, Mg, NB, KS, OS;
};

pk_status launch_conv(pk_be_stream *s, const pk_tensor &x, const pk_tensor &w, const pk_tensor &y, const void *attrs) {
  const uint32_t op = PK_OP_CONVOLUTION;
  const auto *at = static_cast<const pk_attrs_convolution *>(attrs);
  const int32_t dt = kit::dtype_id(x.dtype);
  const TensorArg xa = tensor_arg(x), wa = tensor_arg(w), ya = tensor_arg(y);
  ConvGeom g{};
  const int32_t S = x.ndim - 2;
  const int64_t groups = at->groups > 0 ? at->groups : 1;
  g.S = S;
  g.NB = x.shape[0];
  g.Cg = x.shape[1] / groups;
  g.Mg = w.shape[0] / groups;
  g.KS = 1;
  g.OS = 1;
  for (int32_t d = 0; d < x.ndim; ++d) {
    g.xst[d] = xa.strides.v[d];
    g.wst[d] = wa.strides.v[d];
    g.yst[d] = ya.strides.v[d];
  }
  for (int32_t d = 0; d < S; ++d) {
    g.xsh[d] = x.shape[2 + d];
    g.ksh[d] = w.shape[2 + d];
    g.ysh[d] = y.shape[2 + d];
    g.stride[d] = at->num_stride ? at->stride[d] : 1;
    g.padl[d] = at->num_padding_low ? at->padding_low[d] : 0;
    g.dil[d] = at->num_dilation ? at->dilation[d] : 1;
    g.KS *= g.ksh[d];
    g.OS *= g.ysh[d];
  }
  const int64_t M = g.Mg, N = g.NB * g.OS;
  if (M == 0 || N == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_conv"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::conv, op, dts, 1, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_conv(dt, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> lock(ks->mu);
  Args set{k};
  set(xa.mem)(xa.offset)(wa.mem)(wa.offset)(ya.mem)(ya.offset)(g);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t local[3] = {kMmLocal, kMmLocal, 1};
  const size_t global[3] = {static_cast<size_t>((N + kMmTile - 1) / kMmTile) * kMmLocal,
                            static_cast<size_t>((M + kMmTile - 1) / kMmTile) * kMmLocal, static_cast<size_t>(groups)};
  return enqueue(s, k, 3, global, local, op);
}

pk_status launch_philox(pk_be_stream *s, uint32_t op, const pk_tensor &out, const void *attrs) {
  const int32_t dt = kit::dtype_id(out.dtype);
  const uint64_t n = numel_of(out);
  if (n == 0) return PK_OK;
  cl_ulong offset = 0, seed = 0, ispan = 1;
  cl_double low = 0, span = 0, mean = 0, sd = 1;
  cl_long ilow = 0;
  if (op == PK_OP_PHILOX_UNIFORM) {
    const auto *at = static_cast<const pk_attrs_philox_uniform *>(attrs);
    offset = static_cast<cl_ulong>(at->offset);
    seed = static_cast<cl_ulong>(at->seed);
    low = at->low;
    span = at->high - at->low;
  } else if (op == PK_OP_PHILOX_NORMAL) {
    const auto *at = static_cast<const pk_attrs_philox_normal *>(attrs);
    offset = static_cast<cl_ulong>(at->offset);
    seed = static_cast<cl_ulong>(at->seed);
    mean = at->mean;
    sd = at->std;
  } else {
    const auto *at = static_cast<const pk_attrs_philox_randint *>(attrs);
    offset = static_cast<cl_ulong>(at->offset);
    seed = static_cast<cl_ulong>(at->seed);
    ilow = at->low;
    ispan = static_cast<cl_ulong>(at->high) - static_cast<cl_ulong>(at->low);
  }
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_philox"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::philox, op, dts, 1, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_philox(op, dt, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  const TensorArg oa = tensor_arg(out);
  const Dims sh = dims_of(out.shape, out.ndim);
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(oa.mem)(static_cast<cl_long>(oa.offset))(oa.strides)(sh)(static_cast<cl_int>(out.ndim))(n);
  set(offset)(seed)(low)(span)(ilow)(ispan)(mean)(sd);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

// --- FFT --------------------------------------------------------------------------------------------------------

// The passes of one FFT launch over its dense double2 work tensor, held in two buffers (each pass reads one and
// writes the other). Twiddle and Bluestein tables are made once per (length, direction) and stream, and kept.
class FftPasses {
 public:
  enum Slot { kLoad, kTwiddle, kRadix2, kDirect, kExtend, kStore, kChirp, kBsKernel, kBsPre, kBsMul, kBsPost };

  FftPasses(pk_be_stream *s, uint32_t op, KernelSet &ks) : s_(s), op_(op), ks_(ks) {}
  FftPasses(const FftPasses &) = delete;
  FftPasses &operator=(const FftPasses &) = delete;
  ~FftPasses() { trim_tables(); }

  pk_status alloc(uint64_t elements) {
    for (Mem &m : buf_)
      if (pk_status st = make_buffer(m, elements, "allocating the FFT work buffers failed")) return st;
    return PK_OK;
  }

  pk_status load(const pk_tensor &in) {
    const TensorArg a = tensor_arg(in);
    const uint64_t count = numel_of(in);
    Args set{kernel(kLoad)};
    set(a.mem)(static_cast<cl_long>(a.offset))(a.strides)(dims_of(in.shape, in.ndim))(static_cast<cl_int>(in.ndim))(
        buf_[cur_].get())(count);
    return run(set, kLoad, count);
  }

  // The 1-D transform along axis `dim` of the work tensor of `shape`.
  pk_status axis(const int64_t *shape, int32_t rank, int64_t dim, bool forward) {
    const uint64_t n = static_cast<uint64_t>(shape[dim]), count = count_of(shape, rank);
    if (count == 0) return PK_OK;
    uint64_t inner = 1;
    for (int32_t d = static_cast<int32_t>(dim) + 1; d < rank; ++d) inner *= static_cast<uint64_t>(shape[d]);
    cl_mem tw = nullptr;
    if (is_pow2(n)) {
      if (pk_status st = table(kTwiddle, n, forward, &tw)) return st;
      int c = cur_;
      if (pk_status st = radix2(buf_[0].get(), buf_[1].get(), &c, tw, n, inner, count)) return st;
      cur_ = c;
      return PK_OK;
    }
    if (n > kFftDirectMax) return bluestein(n, count / n / inner, inner, forward);
    // Other lengths (1 included: its pass still turns a non-finite part into the reference's non-finite pair).
    if (pk_status st = table(kTwiddle, n, forward, &tw)) return st;
    Args set{kernel(kDirect)};
    set(buf_[cur_].get())(buf_[cur_ ^ 1].get())(tw)(n)(inner)(count);
    if (pk_status st = run(set, kDirect, count)) return st;
    cur_ ^= 1;
    return PK_OK;
  }

  // fft_c2r: the onesided axis `dim` (of `half` entries in `shape`) extended to n entries.
  pk_status extend(const int64_t *shape, int32_t rank, int64_t dim, uint64_t half, uint64_t n) {
    uint64_t inner = 1;
    for (int32_t d = static_cast<int32_t>(dim) + 1; d < rank; ++d) inner *= static_cast<uint64_t>(shape[d]);
    const uint64_t count = count_of(shape, rank) / half * n;
    Args set{kernel(kExtend)};
    set(buf_[cur_].get())(buf_[cur_ ^ 1].get())(half)(n)(inner)(count);
    if (pk_status st = run(set, kExtend, count)) return st;
    cur_ ^= 1;
    return PK_OK;
  }

  // The output: element idx of `out` is the work tensor's (of `shape`) at the same coordinates.
  pk_status store(const int64_t *shape, int32_t rank, const pk_tensor &out) {
    const TensorArg a = tensor_arg(out);
    const uint64_t count = numel_of(out);
    Args set{kernel(kStore)};
    set(buf_[cur_].get())(dense_dims(shape, rank))(a.mem)(static_cast<cl_long>(a.offset))(a.strides)(
        dims_of(out.shape, out.ndim))(static_cast<cl_int>(out.ndim))(count);
    return run(set, kStore, count);
  }

 private:
  cl_kernel kernel(Slot k) const { return ks_.k[k].get(); }
  static bool is_pow2(uint64_t n) { return n >= 2 && (n & (n - 1)) == 0; }

  pk_status make_buffer(Mem &m, uint64_t elements, const char *what) {
    cl_int err = CL_SUCCESS;
    m = Mem(clCreateBuffer(s_->dev->context, CL_MEM_READ_WRITE, std::max<uint64_t>(elements, 1) * 16, nullptr, &err));
    return m ? PK_OK : stream_fail(s_, err, op_, what);
  }

  // The radix-2 stages of lines of length n (a power of two) between buffers a (0) and b (1), starting in *c.
  pk_status radix2(cl_mem a, cl_mem b, int *c, cl_mem tw, uint64_t n, uint64_t inner, uint64_t count) {
    const cl_mem bufs[2] = {a, b};
    for (uint64_t p = 1; p < n; p <<= 1) {
      Args set{kernel(kRadix2)};
      set(bufs[*c])(bufs[*c ^ 1])(tw)(n)(p)(inner)(count / 2);
      if (pk_status st = run(set, kRadix2, count / 2)) return st;
      *c ^= 1;
    }
    return PK_OK;
  }

  // Bluestein's algorithm along an axis of length n: lines padded to m >= 2n - 1, transformed, multiplied by the
  // chirp kernel's spectrum (made once per launch), transformed back.
  pk_status bluestein(uint64_t n, uint64_t outer, uint64_t inner, bool forward) {
    uint64_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    cl_mem chirp = nullptr, spectrum = nullptr, tw_fwd = nullptr, tw_inv = nullptr;
    if (pk_status st = table(kChirp, n, forward, &chirp)) return st;
    if (pk_status st = table(kTwiddle, m, true, &tw_fwd)) return st;
    if (pk_status st = table(kTwiddle, m, false, &tw_inv)) return st;
    if (pk_status st = table(kBsKernel, n, forward, &spectrum)) return st;
    const uint64_t padded = outer * m * inner;
    if (bs_elements_ < padded) {
      for (Mem &b : bs_)
        if (pk_status st = make_buffer(b, padded, "allocating the FFT's Bluestein buffers failed")) return st;
      bs_elements_ = padded;
    }
    Args pre{kernel(kBsPre)};
    pre(buf_[cur_].get())(bs_[0].get())(chirp)(n)(m)(inner)(padded);
    if (pk_status st = run(pre, kBsPre, padded)) return st;
    int c = 0;
    if (pk_status st = radix2(bs_[0].get(), bs_[1].get(), &c, tw_fwd, m, inner, padded)) return st;
    Args mul{kernel(kBsMul)};
    mul(bs_[c].get())(spectrum)(m)(inner)(padded);
    if (pk_status st = run(mul, kBsMul, padded)) return st;
    if (pk_status st = radix2(bs_[0].get(), bs_[1].get(), &c, tw_inv, m, inner, padded)) return st;
    const uint64_t count = outer * n * inner;
    Args post{kernel(kBsPost)};
    post(bs_[c].get())(buf_[cur_ ^ 1].get())(chirp)(n)(m)(inner)(count);
    if (pk_status st = run(post, kBsPost, count)) return st;
    cur_ ^= 1;
    return PK_OK;
  }

  pk_status run(const Args &set, Slot k, uint64_t items) {
    if (set.err != CL_SUCCESS) return stream_fail(s_, set.err, op_, "clSetKernelArg failed");
    if (items == 0) return PK_OK;
    const size_t global = round_up(static_cast<size_t>(items), kLocal), local = kLocal;
    return enqueue(s_, kernel(k), 1, &global, &local, op_);
  }

  // A table of the launch, made at first use: twiddles e^(+-2 pi i j / n) (kTwiddle), Bluestein's chirp for length n
  // (kChirp) or the spectrum of its convolution kernel (kBsKernel).
  pk_status table(Slot kind, uint64_t n, bool forward, cl_mem *out) {
    for (const auto &t : s_->fft_tables) {
      if (t.kind == kind && t.n == n && t.forward == forward) {
        *out = t.mem.get();
        return PK_OK;
      }
    }
    Mem m;
    const double sign = forward ? -1.0 : 1.0;
    uint64_t bytes = n * 16;
    if (kind == kBsKernel) {
      uint64_t len = 1;
      while (len < 2 * n - 1) len <<= 1;
      bytes = len * 16;
      cl_mem chirp = nullptr, tw = nullptr;
      if (pk_status st = table(kChirp, n, forward, &chirp)) return st;
      if (pk_status st = table(kTwiddle, len, true, &tw)) return st;
      Mem spare;
      if (pk_status st = make_buffer(m, len, "allocating an FFT table failed")) return st;
      if (pk_status st = make_buffer(spare, len, "allocating an FFT table failed")) return st;
      Args set{kernel(kBsKernel)};
      set(chirp)(m.get())(n)(len);
      if (pk_status st = run(set, kBsKernel, len)) return st;
      int c = 0;
      if (pk_status st = radix2(m.get(), spare.get(), &c, tw, len, 1, len)) return st;
      if (c == 1) m = std::move(spare);
    } else {
      if (pk_status st = make_buffer(m, n, "allocating an FFT table failed")) return st;
      Args set{kernel(kind)};
      set(m.get())(n)(static_cast<cl_double>(sign));
      if (pk_status st = run(set, kind, n)) return st;
    }
    *out = m.get();
    s_->fft_tables.push_back(pk_be_stream::FftTable{kind, n, forward, std::move(m), bytes});
    return PK_OK;
  }

  // Drops the oldest tables beyond kFftTableBytes; only between launches, since a launch holds its tables' handles
  // until it has enqueued the passes that read them.
  void trim_tables() {
    auto &cache = s_->fft_tables;
    uint64_t total = 0;
    for (const auto &t : cache) total += t.bytes;
    while (cache.size() > 1 && total > kFftTableBytes) {
      total -= cache.front().bytes;
      cache.erase(cache.begin());
    }
  }

  static constexpr uint64_t kFftTableBytes = uint64_t{64} << 20;
  pk_be_stream *s_;
  uint32_t op_;
  KernelSet &ks_;
  Mem buf_[2], bs_[2];
  uint64_t bs_elements_ = 0;
  int cur_ = 0;
};

pk_status launch_fft(pk_be_stream *s, uint32_t op, const pk_tensor &in, const pk_tensor &out, const void *attrs) {
  const int32_t in_dt = kit::dtype_id(in.dtype);
  int32_t num_dims = 0;
  const int64_t *dims = nullptr;
  bool forward = true;
  int64_t last_size = 0;
  if (op == PK_OP_FFT_C2C) {
    const auto *at = static_cast<const pk_attrs_fft_c2c *>(attrs);
    num_dims = at->num_dims;
    dims = at->dims;
    forward = at->forward != 0;
  } else if (op == PK_OP_FFT_R2C) {
    const auto *at = static_cast<const pk_attrs_fft_r2c *>(attrs);
    num_dims = at->num_dims;
    dims = at->dims;
  } else {
    const auto *at = static_cast<const pk_attrs_fft_c2r *>(attrs);
    num_dims = at->num_dims;
    dims = at->dims;
    forward = false;
    last_size = at->last_dim_size;
  }
  if (numel_of(out) == 0) return PK_OK;
  // An empty line transforms to zeros (fft_r2c of an empty axis still has its one onesided entry).
  if (numel_of(in) == 0) return launch_fill_bits(s, op, out, 0);
  if (op == PK_OP_FFT_C2R && num_dims == 0)
    return fail(PK_ERROR_INVALID_ARGUMENT, op, -1, "opencl: fft_c2r: attribute dims is empty");
  int64_t shape[PK_MAX_RANK] = {0};
  const int32_t rank = std::min<int32_t>(in.ndim, PK_MAX_RANK);
  for (int32_t d = 0; d < rank; ++d) shape[d] = in.shape[d];
  uint64_t elements = numel_of(in);
  if (op == PK_OP_FFT_C2R) {
    const int64_t last = dims[num_dims - 1];
    elements = std::max(elements, elements / static_cast<uint64_t>(in.shape[last]) * static_cast<uint64_t>(last_size));
  }
  DeviceState &dev = *s->dev;
  if (elements * 16 > dev.max_alloc) {
    return fail(PK_ERROR_OUT_OF_MEMORY, op, -1,
                "opencl: %s: the work buffer of %llu complex<double> elements exceeds the device's largest allocation",
                pk::meta::op_name(op), static_cast<unsigned long long>(elements));
  }
  const int32_t dts[1] = {in_dt};
  static const char *const kNames[kFftKernels] = {
      "pk_fft_load",  "pk_fft_twiddle",   "pk_fft_radix2", "pk_fft_direct", "pk_fft_extend", "pk_fft_store",
      "pk_fft_chirp", "pk_fft_bs_kernel", "pk_fft_bs_pre", "pk_fft_bs_mul", "pk_fft_bs_post"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      dev, kernel_key(Path::fft, op, dts, 1, 0), op, kNames, kFftKernels,
      [&](bool *all, uint32_t *) {
        *all = true;  // every slot, not only the first two
        return gen_fft(op, in_dt, dev.caps);
      },
      &ks);
  if (st != PK_OK) return st;
  std::lock_guard<std::mutex> g(ks->mu);
  FftPasses f(s, op, *ks);
  if ((st = f.alloc(elements)) || (st = f.load(in))) return st;
  // The passes in the order of dims, as the reference (a repeated axis transforms twice); fft_c2r's last axis is
  // extended by Hermitian symmetry first.
  const int32_t plain = op == PK_OP_FFT_C2R ? num_dims - 1 : num_dims;
  for (int32_t k = 0; k < plain; ++k) {
    if ((st = f.axis(shape, rank, dims[k], forward))) return st;
  }
  if (op == PK_OP_FFT_C2R) {
    const int64_t last = dims[num_dims - 1];
    const uint64_t half = static_cast<uint64_t>(shape[last]);
    if ((st = f.extend(shape, rank, last, half, static_cast<uint64_t>(last_size)))) return st;
    shape[last] = last_size;
    if ((st = f.axis(shape, rank, last, false))) return st;
  }
  return f.store(shape, rank, out);
}

// --- ABI slots --------------------------------------------------------------------------------------------------

template <class T>
void copy_out(const T &value, T *out) {
  const uint32_t n = std::min<uint32_t>(out->struct_size, sizeof value);
  std::memcpy(out, &value, n);
  out->struct_size = n;
}

// Runtimes created on several threads open this backend at once (the ABI allows opens of different contexts to
// overlap), and PoCL 3.1 does not survive concurrent discovery: clGetDeviceInfo(CL_DEVICE_NAME) crashed in strlen
// while other threads ran clGetPlatformIDs and clCreateContext. Opening and closing are rare and short, so they
// take turns in the process.
std::mutex &discovery_mutex() {
  static std::mutex mu;
  return mu;
}

pk_status ocl_open(const pk_host_services *host, pk_be_context **out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: open: out is NULL");
  auto ctx = std::unique_ptr<pk_be_context>(new (std::nothrow) pk_be_context);
  if (!ctx) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: open: no memory for the context");
  ctx->host = host;
  std::lock_guard<std::mutex> discovery(discovery_mutex());
  try {
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, nullptr, &np);
    // No platform is not a failure: the backend loads and reports zero devices (get_last_error says why).
    if (err != CL_SUCCESS || np == 0) {
      ctx->discovery_note = std::string("opencl: no OpenCL platform (clGetPlatformIDs: ") + cl_error_name(err) + ")";
    }
    std::vector<cl_platform_id> platforms(np);
    if (np) clGetPlatformIDs(np, platforms.data(), nullptr);
    for (cl_platform_id p : platforms) {
      cl_uint nd = 0;
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
      std::vector<cl_device_id> all(nd), usable;
      clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, all.data(), nullptr);
      for (cl_device_id d : all) {
        // Kernels are compiled at run time: a device without a compiler cannot run any.
        if (device_value<cl_bool>(d, CL_DEVICE_AVAILABLE) && device_value<cl_bool>(d, CL_DEVICE_COMPILER_AVAILABLE)) {
          usable.push_back(d);
        }
      }
      if (usable.empty()) continue;
      // One context per platform, so events and buffers are shared by all its devices.
      const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(p), 0};
      Context c(clCreateContext(props, static_cast<cl_uint>(usable.size()), usable.data(), nullptr, nullptr, &err));
      if (!c) {
        log_line(ctx.get(), 1, std::string("opencl: clCreateContext failed: ") + cl_error_name(err));
        continue;
      }
      const std::string pname = platform_string(p, CL_PLATFORM_NAME), pver = platform_string(p, CL_PLATFORM_VERSION);
      for (cl_device_id d : usable) {
        auto ds = std::make_unique<DeviceState>();
        ds->platform = p;
        ds->id = d;
        ds->context = c.get();
        ds->name = device_string(d, CL_DEVICE_NAME);
        ds->key = pname + '|' + pver + '|' + ds->name + '|' + device_string(d, CL_DRIVER_VERSION) + '|' +
                  device_string(d, CL_DEVICE_VERSION);
        const std::string exts = device_string(d, CL_DEVICE_EXTENSIONS);
        ds->caps.fp64 = has_extension(exts, "cl_khr_fp64");
        ds->caps.fp16 = has_extension(exts, "cl_khr_fp16");
        ds->memory = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
        ds->max_alloc = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
        ds->compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
        ds->alignment = std::max<cl_uint>(1, device_value<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
        const cl_device_fp_config fp = device_value<cl_device_fp_config>(d, CL_DEVICE_SINGLE_FP_CONFIG);
        ds->denormals = (fp & CL_FP_DENORM) != 0;
        ds->options = "-cl-std=CL1.2";
        // OpenCL allows 2.5 ulp for f32 division and 3 ulp for sqrt; the op table says correctly rounded.
        if (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ds->options += " -cl-fp32-correctly-rounded-divide-sqrt";
        ctx->devices.push_back(std::move(ds));
      }
      ctx->contexts.push_back(std::move(c));
    }
    if (ctx->devices.empty() && ctx->discovery_note.empty()) {
      ctx->discovery_note = "opencl: no available OpenCL device with a compiler";
    }
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: open: out of memory");
  }
  *out = ctx.release();
  return PK_OK;
}

void ocl_close(pk_be_context *ctx) {
  if (ctx == nullptr) return;
  std::lock_guard<std::mutex> discovery(discovery_mutex());  // releasing the contexts may end PoCL's devices
  for (cl_mem m : ctx->allocations) clReleaseMemObject(m);
  std::unique_ptr<pk_be_context> owned(ctx);
}

pk_status ocl_get_info(pk_be_context *, pk_backend_info *out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: get_info: out is NULL");
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  std::snprintf(info.name, sizeof info.name, "opencl");
  std::snprintf(info.vendor, sizeof info.vendor, "PrimKit reference");
  info.version_major = 1;
  info.abi_version = PK_ABI_VERSION;
  copy_out(info, out);
  return PK_OK;
}

pk_status ocl_get_last_error(pk_be_context *, pk_error_info *out) {
  return kit::copy_last_error(out);
}

pk_status ocl_device_count(pk_be_context *ctx, uint32_t *out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: device_count: out is NULL");
  *out = static_cast<uint32_t>(ctx->devices.size());
  if (ctx->devices.empty()) fail(PK_OK, 0, -1, "%s", ctx->discovery_note.c_str());
  return PK_OK;
}

pk_status ocl_device_get_props(pk_be_context *ctx, uint32_t index, pk_device_props *out) {
  if (out == nullptr || index >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: no device %u", index);
  }
  const DeviceState &d = *ctx->devices[index];
  pk_device_props p;
  PK_STRUCT_INIT(p);
  std::snprintf(p.name, sizeof p.name, "%s", d.name.c_str());
  p.device_type = PK_DEVICE_OPENCL;
  p.device_id = static_cast<int32_t>(index);
  p.memory_bytes = d.memory;
  p.compute_units = d.compute_units;
  p.features = PK_DEVICE_FEATURE_ASYNC | PK_DEVICE_FEATURE_FUSION;
  // OpenCL's ULP table is the limit for the builtins; subnormals only where the device keeps them.
  p.float_policy = PK_FLOAT_FAST_MATH_TRANSCENDENTALS |
                   (d.denormals ? 0u : (PK_FLOAT_FLUSH_SUBNORMAL_OUTPUTS | PK_FLOAT_FLUSH_SUBNORMAL_INPUTS));
  for (int32_t dt = 0; dt < PK_DTYPE_COUNT; ++dt) {
    if (dtype_supported(dt, d.caps, nullptr)) p.dtype_mask |= 1u << dt;
  }
  p.max_allocation_bytes = d.max_alloc;
  p.alignment = d.alignment;
  copy_out(p, out);
  return PK_OK;
}

pk_status ocl_mem_alloc(pk_be_context *ctx, uint32_t device, uint64_t bytes, void **out) {
  if (out == nullptr || bytes == 0 || device >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: mem_alloc: bad arguments (%llu bytes on device %u)",
                static_cast<unsigned long long>(bytes), device);
  }
  DeviceState &d = *ctx->devices[device];
  if (bytes > d.max_alloc) {
    // Checked here because some drivers accept the size and fail only at first use.
    pk_status st = fail(PK_ERROR_OUT_OF_MEMORY, 0, -1,
                        "opencl: mem_alloc: %llu bytes exceed the device's largest allocation of %llu bytes "
                        "(CL_DEVICE_MAX_MEM_ALLOC_SIZE): CL_INVALID_BUFFER_SIZE (%d)",
                        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(d.max_alloc),
                        static_cast<int>(CL_INVALID_BUFFER_SIZE));
    kit::last_error().vendor_code = CL_INVALID_BUFFER_SIZE;
    return st;
  }
  cl_int err = CL_SUCCESS;
  Mem m(clCreateBuffer(d.context, CL_MEM_READ_WRITE, static_cast<size_t>(bytes), nullptr, &err));
  if (!m) {
    return cl_fail(status_of(err), err, 0, "opencl: mem_alloc of %llu bytes: clCreateBuffer failed",
                   static_cast<unsigned long long>(bytes));
  }
  std::lock_guard<std::mutex> g(ctx->mu);
  try {
    ctx->allocations.insert(m.get());
  } catch (...) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: cannot track an allocation");
  }
  *out = m.release();
  return PK_OK;
}

pk_status ocl_mem_free(pk_be_context *ctx, uint32_t, void *ptr) {
  cl_mem m = static_cast<cl_mem>(ptr);
  std::lock_guard<std::mutex> g(ctx->mu);
  if (ctx->allocations.erase(m) == 0)
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: mem_free of an unknown buffer");
  clReleaseMemObject(m);
  return PK_OK;
}

pk_status ocl_copy_h2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes == 0) return PK_OK;
  cl_int err = clEnqueueWriteBuffer(s->queue.get(), static_cast<cl_mem>(dst), CL_FALSE, dst_offset, bytes, src, 0,
                                    nullptr, nullptr);
  return err == CL_SUCCESS ? PK_OK : stream_fail(s, err, 0, "copy host to device: clEnqueueWriteBuffer failed");
}

pk_status ocl_copy_d2h(pk_be_stream *s, void *dst, const void *src, uint64_t src_offset, uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes == 0) return PK_OK;
  cl_int err = clEnqueueReadBuffer(s->queue.get(), static_cast<cl_mem>(const_cast<void *>(src)), CL_FALSE, src_offset,
                                   bytes, dst, 0, nullptr, nullptr);
  return err == CL_SUCCESS ? PK_OK : stream_fail(s, err, 0, "copy device to host: clEnqueueReadBuffer failed");
}

pk_status ocl_copy_d2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t src_offset,
                       uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes == 0) return PK_OK;
  cl_int err = clEnqueueCopyBuffer(s->queue.get(), static_cast<cl_mem>(const_cast<void *>(src)),
                                   static_cast<cl_mem>(dst), src_offset, dst_offset, bytes, 0, nullptr, nullptr);
  return err == CL_SUCCESS ? PK_OK : stream_fail(s, err, 0, "copy device to device: clEnqueueCopyBuffer failed");
}

pk_status ocl_stream_create(pk_be_context *ctx, uint32_t device, pk_be_stream **out) {
  if (out == nullptr || device >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: stream_create: no device %u", device);
  }
  auto s = std::unique_ptr<pk_be_stream>(new (std::nothrow) pk_be_stream);
  if (!s) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: no memory for a stream");
  s->ctx = ctx;
  s->dev = ctx->devices[device].get();
  cl_int err = CL_SUCCESS;
  s->queue = Queue(clCreateCommandQueue(s->dev->context, s->dev->id, 0, &err));  // in order, no profiling
  if (!s->queue) return cl_fail(status_of(err), err, 0, "opencl: stream_create: clCreateCommandQueue failed");
  *out = s.release();
  return PK_OK;
}

pk_status ocl_stream_destroy(pk_be_stream *s) {
  std::unique_ptr<pk_be_stream> owned(s);
  if (s && s->queue) clFinish(s->queue.get());
  return PK_OK;
}

pk_status ocl_stream_synchronize(pk_be_stream *s) {
  cl_int err = clFinish(s->queue.get());
  if (err != CL_SUCCESS && s->sticky == PK_OK) stream_fail(s, err, 0, "stream_synchronize: clFinish failed");
  return sticky_check(s);
}

pk_status ocl_stream_query(pk_be_stream *s) {
  if (pk_status st = sticky_check(s)) return st;
  Event ev;
  cl_int err = clEnqueueMarkerWithWaitList(s->queue.get(), 0, nullptr, ev.out());
  if (err == CL_SUCCESS) err = clFlush(s->queue.get());
  cl_int status = CL_COMPLETE;
  if (err == CL_SUCCESS) {
    err = clGetEventInfo(ev.get(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  }
  if (err != CL_SUCCESS) return stream_fail(s, err, 0, "stream_query failed");
  if (status < 0) return stream_fail(s, status, 0, "earlier work on the stream failed");
  return status == CL_COMPLETE ? PK_OK : PK_NOT_READY;
}

pk_status ocl_event_create(pk_be_context *ctx, uint32_t device, pk_be_event **out) {
  if (out == nullptr || device >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: event_create: no device %u", device);
  }
  auto e = std::unique_ptr<pk_be_event>(new (std::nothrow) pk_be_event);
  if (!e) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: no memory for an event");
  e->dev = ctx->devices[device].get();
  *out = e.release();
  return PK_OK;
}

pk_status ocl_event_destroy(pk_be_event *e) {
  std::unique_ptr<pk_be_event> owned(e);
  return PK_OK;
}

pk_status ocl_event_record(pk_be_event *e, pk_be_stream *s) {
  if (pk_status st = sticky_check(s)) return st;
  cl_int err = clEnqueueMarkerWithWaitList(s->queue.get(), 0, nullptr, e->event.out());
  // Flushed so that event_query on another thread sees progress without anyone else flushing this queue.
  if (err == CL_SUCCESS) err = clFlush(s->queue.get());
  if (err != CL_SUCCESS) return stream_fail(s, err, 0, "event_record: clEnqueueMarkerWithWaitList failed");
  e->recorded_on = s;
  return PK_OK;
}

pk_status ocl_stream_wait_event(pk_be_stream *s, pk_be_event *e) {
  if (pk_status st = sticky_check(s)) return st;
  if (!e->event) return PK_OK;  // never recorded: nothing to wait for
  cl_event ev = e->event.get();
  cl_int err;
  if (e->dev->context == s->dev->context) {
    err = clEnqueueBarrierWithWaitList(s->queue.get(), 1, &ev, nullptr);
  } else {
    // Another platform's event cannot enter this queue's wait list: wait on the host instead.
    err = clWaitForEvents(1, &ev);
  }
  return err == CL_SUCCESS ? PK_OK : stream_fail(s, err, 0, "stream_wait_event failed");
}

pk_status event_status(pk_be_event *e, bool block) {
  if (!e->event) return PK_OK;
  cl_event ev = e->event.get();
  cl_int status = CL_COMPLETE;
  cl_int err = block ? clWaitForEvents(1, &ev) : CL_SUCCESS;
  if (err == CL_SUCCESS || err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
    err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  }
  if (err != CL_SUCCESS) return cl_fail(status_of(err), err, 0, "opencl: event status unavailable");
  if (status < 0) {
    return cl_fail(PK_ERROR_STREAM_FAILED, status, 0, "opencl: the recording stream failed before the event");
  }
  if (e->recorded_on && e->recorded_on->sticky != PK_OK) return sticky_check(e->recorded_on);
  return status == CL_COMPLETE ? PK_OK : PK_NOT_READY;
}

pk_status ocl_event_synchronize(pk_be_event *e) {
  return event_status(e, true);
}
pk_status ocl_event_query(pk_be_event *e) {
  return event_status(e, false);
}

// Dtype ids of a query's or launch's tensors; false if one is no PrimKit dtype.
bool dtype_ids(const pk_tensor *ts, uint32_t n, int32_t *out) {
  for (uint32_t i = 0; i < n; ++i) {
    out[i] = kit::dtype_id(ts[i].dtype);
    if (out[i] < 0) return false;
  }
  return true;
}

// A coverage query (no output descriptors) still needs output dtypes to classify: derive them from the op's
// dtype rules and the inputs (an attribute-given dtype is read from attrs when present, else taken as the key
// input's dtype, or f32 for ops without inputs).
uint32_t coverage_output_dtypes(const pk::meta::OpInfo &op, const int32_t *in_dt, uint32_t nin, const void *attrs,
                                int32_t *out_dt) {
  auto var_dtype = [&](int32_t var) {
    for (uint32_t i = 0; i < nin && i < op.num_inputs; ++i) {
      if (op.inputs[i].type_var == var) return in_dt[i];
    }
    return nin > 0 ? in_dt[0] : static_cast<int32_t>(PK_DTYPE_F32);
  };
  for (uint32_t k = 0; k < op.num_outputs && k < 8; ++k) {
    const pk::meta::OutputInfo &o = op.outputs[k];
    switch (o.rule) {
      case pk::meta::DtypeRule::type_var:
        out_dt[k] = var_dtype(o.arg);
        break;
      case pk::meta::DtypeRule::fixed:
        out_dt[k] = o.arg;
        break;
      case pk::meta::DtypeRule::real_of:
        out_dt[k] = pk::meta::real_of(var_dtype(o.arg));
        break;
      case pk::meta::DtypeRule::complex_of:
        out_dt[k] = pk::meta::complex_of(var_dtype(o.arg));
        break;
      case pk::meta::DtypeRule::attr: {
        int32_t d = nin > 0 ? in_dt[0] : static_cast<int32_t>(PK_DTYPE_F32);
        if (attrs != nullptr) std::memcpy(&d, static_cast<const char *>(attrs) + op.attrs[o.arg].offset, sizeof d);
        out_dt[k] = d;
        break;
      }
    }
  }
  return op.num_outputs < 8 ? op.num_outputs : 8;
}

pk_status ocl_op_query(pk_be_context *ctx, const pk_op_query *q, pk_op_support *out) {
  if (q == nullptr || out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: op_query: NULL argument");
  pk_op_support s;
  PK_STRUCT_INIT(s);
  std::string why;
  int32_t in_dt[8], out_dt[8];
  if (q->device_index >= ctx->devices.size()) {
    why = "no such device";
  } else if (q->num_inputs > 8 || q->num_outputs > 8 || !dtype_ids(q->inputs, q->num_inputs, in_dt) ||
             !dtype_ids(q->outputs, q->num_outputs, out_dt)) {
    why = "unsupported arity or dtype";
  } else {
    uint32_t num_outputs = q->num_outputs;
    const pk::meta::OpInfo *op = pk::meta::find_op(q->op_id);
    if (num_outputs == 0 && op != nullptr && op->num_outputs > 0) {
      num_outputs = coverage_output_dtypes(*op, in_dt, q->num_inputs, q->attrs, out_dt);
    }
    const Path p =
        classify(*ctx->devices[q->device_index], q->op_id, in_dt, q->num_inputs, out_dt, num_outputs, q->attrs, &why);
    bool ok = p != Path::none;
    for (uint32_t i = 0; ok && i < q->num_inputs + q->num_outputs; ++i) {
      const pk_tensor &t = i < q->num_inputs ? q->inputs[i] : q->outputs[i - q->num_inputs];
      if (!aligned_offset(t)) {
        ok = false;
        why = "a byte_offset that is not a multiple of the element size";
      }
    }
    s.supported = ok ? 1 : 0;
    s.native = ok ? 1 : 0;
  }
  std::snprintf(s.reason, sizeof s.reason, "%s", why.c_str());
  copy_out(s, out);
  return PK_OK;
}

pk_status ocl_op_launch(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                        const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  if (pk_status st = sticky_check(stream)) return st;
  int32_t in_dt[8], out_dt[8];
  if (num_inputs > 8 || num_outputs > 8 || !dtype_ids(inputs, num_inputs, in_dt) ||
      !dtype_ids(outputs, num_outputs, out_dt)) {
    return fail(PK_UNIMPLEMENTED, op_id, -1, "opencl: %s: unsupported arity or dtype", pk::meta::op_name(op_id));
  }
  for (uint32_t i = 0; i < num_inputs + num_outputs; ++i) {
    if (!aligned_offset(i < num_inputs ? inputs[i] : outputs[i - num_inputs])) {
      return fail(PK_UNIMPLEMENTED, op_id, static_cast<int32_t>(i),
                  "opencl: %s: a byte_offset that is not a multiple of the element size", pk::meta::op_name(op_id));
    }
  }
  try {
    // Fast path: an elementwise kernel built earlier means classify() said yes for exactly this key before
    // (classify builds the op's expression text, which costs microseconds).
    if (is_ew_id(op_id) && num_inputs >= 1 && num_inputs <= 3 && num_outputs == 1) {
      const uint64_t key = ew_key(op_id, in_dt, num_inputs, out_dt[0], ew_variant(op_id, out_dt[0], attrs));
      if (KernelSet *ks = find_kernels(*stream->dev, key)) {
        return launch_elementwise(stream, op_id, inputs, num_inputs, outputs, in_dt, out_dt[0], attrs, ks);
      }
    }
    std::string why;
    switch (classify(*stream->dev, op_id, in_dt, num_inputs, out_dt, num_outputs, attrs, &why)) {
      case Path::none:
        return fail(PK_UNIMPLEMENTED, op_id, -1, "opencl: %s: %s", pk::meta::op_name(op_id), why.c_str());
      case Path::elementwise:
        return launch_elementwise(stream, op_id, inputs, num_inputs, outputs, in_dt, out_dt[0], attrs);
      case Path::set:
        return launch_set(stream, op_id, outputs[0], out_dt[0], attrs);
      case Path::iota:
        return launch_iota(stream, outputs[0], out_dt[0], *static_cast<const pk_attrs_iota *>(attrs));
      case Path::reduction:
        return launch_reduction(stream, op_id, inputs[0], outputs[0], in_dt[0], attrs);
      case Path::argreduce:
        return launch_argreduce(stream, op_id, inputs[0], outputs[0], in_dt[0], attrs);
      case Path::matmul:
        return launch_matmul(stream, op_id, inputs[0], inputs[1], outputs[0], in_dt[0]);
      case Path::move:
        return launch_move_op(stream, op_id, inputs, num_inputs, outputs[0], attrs);
      case Path::take:
        return launch_take(stream, op_id, inputs[0], inputs[1], outputs[0], attrs);
      case Path::scatter:
        return launch_scatter(stream, op_id, inputs, outputs[0], attrs);
      case Path::index_put:
        return launch_index_put(stream, inputs, num_inputs, outputs[0], attrs);
      case Path::scan:
        return launch_scan(stream, op_id, inputs[0], outputs, num_outputs, attrs);
      case Path::sort:
        return launch_sort(stream, op_id, inputs[0], outputs, attrs);
      case Path::search:
        return launch_search(stream, inputs[0], inputs[1], outputs[0], attrs);
      case Path::var:
        return launch_var(stream, inputs[0], outputs[0], attrs);
      case Path::dot_general:
        return launch_dot_general(stream, inputs[0], inputs[1], outputs[0], attrs);
      case Path::conv:
        return launch_conv(stream, inputs[0], inputs[1], outputs[0], attrs);
      case Path::philox:
        return launch_philox(stream, op_id, outputs[0], attrs);
      case Path::fft:
        return launch_fft(stream, op_id, inputs[0], outputs[0], attrs);
    }
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, op_id, -1, "opencl: %s: out of host memory", pk::meta::op_name(op_id));
  }
  return fail(PK_ERROR_INTERNAL, op_id, -1, "opencl: unreachable");
}

// --- fusion -----------------------------------------------------------------------------------------------------

// Claims the longest prefix (in the offered topological order) of elementwise nodes this backend generates, all of
// the first node's output shape: a prefix of a topological order is always convex. Fewer than two nodes: decline.
pk_status ocl_fusion_offer(pk_be_context *ctx, uint32_t device, const pk_subgraph *graph, pk_fusion_claim *claim,
                           pk_be_kernel **out) {
  if (graph == nullptr || claim == nullptr || out == nullptr || device >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: fusion_offer: bad arguments");
  }
  *out = nullptr;
  DeviceState &dev = *ctx->devices[device];
  try {
    auto k = std::make_unique<pk_be_kernel>();
    k->dev = &dev;
    EwGraph &g = k->graph;
    for (uint32_t v = 0; v < graph->num_values; ++v) g.dtypes.push_back(kit::dtype_id(graph->values[v].dtype));
    uint32_t claimed = 0;
    const pk_graph_value *shape0 = nullptr;
    for (uint32_t i = 0; i < graph->num_nodes && i < claim->num_nodes; ++i) {
      const pk_graph_node &n = graph->nodes[i];
      const pk::meta::OpInfo *op = pk::meta::find_op(n.op_id);
      if (op == nullptr || !is_ew_op(*op) || n.num_outputs != 1 || n.num_inputs > 3 || n.num_inputs == 0) break;
      const pk_graph_value &ov = graph->values[n.outputs[0]];
      if (shape0 && (ov.ndim != shape0->ndim || !std::equal(ov.shape, ov.shape + ov.ndim, shape0->shape))) break;
      EwNode node;
      node.op_id = n.op_id;
      node.num_inputs = n.num_inputs;
      int32_t in_dt[3] = {-1, -1, -1};
      bool shapes_ok = true;
      for (uint32_t j = 0; j < n.num_inputs; ++j) {
        node.inputs[j] = static_cast<int32_t>(n.inputs[j]);
        in_dt[j] = g.dtypes[n.inputs[j]];
        const pk_graph_value &iv = graph->values[n.inputs[j]];
        shapes_ok = shapes_ok && iv.ndim == ov.ndim && std::equal(iv.shape, iv.shape + iv.ndim, ov.shape);
      }
      node.output = static_cast<int32_t>(n.outputs[0]);
      const int32_t out_dt = g.dtypes[n.outputs[0]];
      if (n.op_id == PK_OP_CONVERT_ELEMENT_TYPE) node.variant = static_cast<uint32_t>(out_dt);
      if (n.op_id == PK_OP_ROUND && n.attrs)
        node.variant = static_cast<uint32_t>(static_cast<const pk_attrs_round *>(n.attrs)->mode);
      if (n.op_id == PK_OP_FILL) {
        if (n.attrs == nullptr) break;
        node.const_bits = value_bits(static_cast<const pk_attrs_fill *>(n.attrs)->value, out_dt);
      }
      if (!shapes_ok || !ew_op_supported(n.op_id, in_dt, n.num_inputs, out_dt, node.variant, dev.caps, nullptr)) break;
      g.nodes.push_back(node);
      shape0 = &ov;
      ++claimed;
    }
    if (claimed < 2) return PK_OK;
    // Arguments in pk_fusion_claim order: values read but not produced by the claim, then produced values read
    // after it or leaving the subgraph; both ascending.
    std::vector<bool> produced(graph->num_values, false), read(graph->num_values, false),
        read_after(graph->num_values, false);
    for (uint32_t i = 0; i < graph->num_nodes; ++i) {
      const pk_graph_node &n = graph->nodes[i];
      for (uint32_t j = 0; j < n.num_inputs; ++j) (i < claimed ? read : read_after)[n.inputs[j]] = true;
      if (i < claimed) produced[n.outputs[0]] = true;
    }
    for (uint32_t v = 0; v < graph->num_values; ++v)
      if (read[v] && !produced[v]) g.args.push_back(static_cast<int32_t>(v));
    g.num_in_args = static_cast<uint32_t>(g.args.size());
    for (uint32_t v = 0; v < graph->num_values; ++v)
      if (produced[v] && (read_after[v] || graph->values[v].is_output)) g.args.push_back(static_cast<int32_t>(v));
    if (g.args.size() > 16 || g.args.size() == g.num_in_args) return PK_OK;
    k->ndim = shape0->ndim;
    std::copy(shape0->shape, shape0->shape + shape0->ndim, k->shape);
    for (int32_t d = 0; d < k->ndim; ++d) k->numel *= static_cast<uint64_t>(k->shape[d]);
    bool vector = false;
    uint32_t w = 1;
    const std::string source = gen_elementwise(g, dev.caps, &vector, &w);
    if (pk_status st = make_kernel_set(dev, source, kElementwiseKernels, vector ? 4 : 2, 0, k->kernels)) {
      // A region that fails to build is declined (the nodes then run one by one), but said in the log.
      log_line(ctx, 1, std::string("opencl: fused region declined: ") + kit::last_error().message);
      (void)st;
      return PK_OK;
    }
    k->kernels->vector = vector;
    k->kernels->vec_elems = w;
    for (uint32_t i = 0; i < claimed; ++i) claim->claimed[i] = 1;
    *out = k.release();
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: fusion_offer: out of host memory");
  }
  return PK_OK;
}

pk_status ocl_kernel_launch(pk_be_stream *s, pk_be_kernel *k, const pk_tensor *args, uint32_t num_args) {
  if (pk_status st = sticky_check(s)) return st;
  if (k == nullptr || num_args != k->graph.args.size() || (num_args && args == nullptr)) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: kernel_launch: expected %zu arguments, got %u",
                k ? k->graph.args.size() : size_t{0}, num_args);
  }
  const pk_tensor *ts[16];
  for (uint32_t i = 0; i < num_args; ++i) {
    if (!aligned_offset(args[i])) {
      return fail(PK_ERROR_INVALID_ARGUMENT, 0, static_cast<int32_t>(i),
                  "opencl: kernel_launch: argument %u has a byte_offset that is not a multiple of its element size", i);
    }
    ts[i] = &args[i];
  }
  return run_elementwise(s, *k->kernels, ts, num_args, k->numel, k->ndim, k->shape, 0);
}

pk_status ocl_kernel_destroy(pk_be_context *, pk_be_kernel *k) {
  std::unique_ptr<pk_be_kernel> owned(k);
  return PK_OK;
}

pk_backend_api make_api() {
  pk_backend_api a;
  PK_STRUCT_INIT(a);
  a.abi_version = PK_ABI_VERSION;
  a.open = ocl_open;
  a.close = ocl_close;
  a.get_info = ocl_get_info;
  a.get_last_error = ocl_get_last_error;
  a.device_count = ocl_device_count;
  a.device_get_props = ocl_device_get_props;
  a.mem_alloc = ocl_mem_alloc;
  a.mem_free = ocl_mem_free;
  a.copy_host_to_device = ocl_copy_h2d;
  a.copy_device_to_host = ocl_copy_d2h;
  a.copy_device_to_device = ocl_copy_d2d;
  a.stream_create = ocl_stream_create;
  a.stream_destroy = ocl_stream_destroy;
  a.stream_synchronize = ocl_stream_synchronize;
  a.stream_query = ocl_stream_query;
  a.event_create = ocl_event_create;
  a.event_destroy = ocl_event_destroy;
  a.event_record = ocl_event_record;
  a.stream_wait_event = ocl_stream_wait_event;
  a.event_synchronize = ocl_event_synchronize;
  a.event_query = ocl_event_query;
  a.op_query = ocl_op_query;
  a.op_launch = ocl_op_launch;
  a.fusion_offer = ocl_fusion_offer;
  a.kernel_launch = ocl_kernel_launch;
  a.kernel_destroy = ocl_kernel_destroy;
  return a;
}

const pk_backend_api k_api = make_api();

}  // namespace
}  // namespace pk::ocl

extern "C" PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                                const pk_backend_api **out_api, char *message,
                                                size_t message_capacity) {
  return pk::kit::negotiate(&pk::ocl::k_api, "opencl", host, chosen_version, out_api, message, message_capacity);
}
