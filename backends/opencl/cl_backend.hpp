// cl_backend.hpp — what the OpenCL backend's files share (private to backends/opencl): a device's state and
// kernel cache, the ABI's context, stream, event and kernel objects, kernel arguments of tensors, and the
// functions that the plugin entry (opencl_backend.cpp) calls: the op launches (cl_launch.cpp: kernel cache,
// what runs where, elementwise, creation, reductions, matmul; cl_launch_data.cpp: data movement, indexing,
// scans, sorting; cl_launch_math.cpp: var, dot_general, convolution, RNG, FFT) and the fusion hook
// (cl_fusion.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cl_codegen.hpp"
#include "cl_key.hpp"
#include "cl_programs.hpp"
#include "cl_util.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

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

}  // namespace pk::ocl

struct pk_be_context {
  const pk_host_services *host = nullptr;
  std::vector<pk::ocl::Context> contexts;  // one per platform
  std::vector<std::unique_ptr<pk::ocl::DeviceState>> devices;
  std::string discovery_note;  // why there are no devices, if so
  std::mutex mu;
  std::unordered_set<cl_mem> allocations;  // released in close() if the host forgot them
};

struct pk_be_stream {
  pk_be_context *ctx = nullptr;
  pk::ocl::DeviceState *dev = nullptr;
  pk::ocl::Queue queue;
  pk::kit::StickyError sticky;  // the first failed enqueue (or clFinish); every later call reports it
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
  pk::ocl::DeviceState *dev = nullptr;
  pk::ocl::Event event;
  pk_be_stream *recorded_on = nullptr;
};

// A fused region (planned by the shared planner, printed by cl_region_printer) compiled at offer time.
struct pk_be_kernel {
  pk::ocl::DeviceState *dev = nullptr;
  pk::codegen::Region region;
  std::vector<int64_t> shape;  // the element space
  int32_t red = 0;             // trailing axes of `shape` reduced per row; 0: an elementwise region
  std::unique_ptr<pk::ocl::KernelSet> kernels;
  uint64_t numel = 1;
};

namespace pk::ocl {

enum KernelSlot { kContig = 0, kStrided = 1, kVec = 2, kVecNonTemporal = 3 };
// The kernels of a fused reducing region (print_row_region): dense, then strided.
const char *const kRowKernels[] = {"pk_row", "pk_row_strided"};
// The kernels of an elementwise program (gen_elementwise), in slot order; the last two only in vector programs.
const char *const kElementwiseKernels[] = {"pk_ew_contig", "pk_ew_strided", "pk_ew_vec", "pk_ew_vec_nt"};
constexpr size_t kLocal = 256;  // work-group size of the one-element-per-work-item kernels
// Outputs from this size on (larger than the last-level cache) are stored non-temporally, as the CPU backend does.
constexpr uint64_t kStreamingBytes = static_cast<uint64_t>(kit::kStreamingStoreBytes);

// --- stream errors and the host's log (opencl_backend.cpp) --------------------------------------------------

// PK_OK, or the error that made the stream sticky.
pk_status sticky_check(pk_be_stream *s);
// Records an enqueue failure and makes it the stream's sticky error.
pk_status stream_fail(pk_be_stream *s, cl_int err, uint32_t op, const char *what);
void log_line(pk_be_context *ctx, int level, const std::string &msg);

// --- tensors ----------------------------------------------------------------------------------------------------

struct TensorArg {
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // in elements
  Dims strides{};
  bool dense = true;
};

// Byte offsets that are not a multiple of the element size cannot be addressed by typed kernel pointers.
inline bool aligned_offset(const pk_tensor &t) {
  const size_t e = (t.dtype.bits * t.dtype.lanes + 7u) / 8u;
  return e == 0 || t.byte_offset % e == 0;
}

inline TensorArg tensor_arg(const pk_tensor &t) {
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

inline uint64_t numel_of(const pk_tensor &t) {
  uint64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= static_cast<uint64_t>(t.shape[d]);
  return n;
}

inline size_t round_up(size_t n, size_t m) {
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

inline Dims dims_of(const int64_t *v, int32_t n) {
  Dims d{};
  for (int32_t i = 0; i < n && i < PK_MAX_RANK; ++i) d.v[i] = v[i];
  return d;
}

// Row-major strides of `shape`.
inline Dims dense_dims(const int64_t *shape, int32_t n) {
  Dims d{};
  int64_t s = 1;
  for (int32_t i = n - 1; i >= 0; --i) {
    d.v[i] = s;
    s *= shape[i];
  }
  return d;
}

inline uint64_t count_of(const int64_t *shape, int32_t n) {
  uint64_t c = 1;
  for (int32_t i = 0; i < n; ++i) c *= static_cast<uint64_t>(shape[i]);
  return c;
}

// --- kernel cache, what runs where, launches (cl_launch.cpp) ------------------------------------------------

// Builds a program for `source` and creates the named kernels.
pk_status make_kernel_set(DeviceState &dev, const std::string &source, const char *const *names, size_t count,
                          uint32_t op, std::unique_ptr<KernelSet> &out);

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

bool is_ew_op(const pk::meta::OpInfo &op);
// Which kernel family runs a launch with these dtypes; Path::none with `why` when none does.
Path classify(const DeviceState &dev, uint32_t op_id, const int32_t *in_dt, uint32_t nin, const int32_t *out_dt,
              uint32_t nout, const void *attrs, std::string *why);

pk_status enqueue(pk_be_stream *s, cl_kernel k, cl_uint dims, const size_t *global, const size_t *local, uint32_t op);
// Runs an elementwise kernel set over tensors args (inputs then outputs) of `n` elements with the shape of t0.
pk_status run_elementwise(pk_be_stream *s, KernelSet &ks, const pk_tensor *const *tensors, size_t count, uint64_t n,
                          int32_t ndim, const int64_t *shape, uint32_t op);
uint32_t ew_variant(uint32_t op_id, int32_t out_dt, const void *attrs);
uint64_t ew_key(uint32_t op_id, const int32_t *in_dt, uint32_t nin, int32_t out_dt, uint32_t variant);
// Elementwise ops by id, for the launch fast path (filled once from the op table).
bool is_ew_id(uint32_t op_id);
KernelSet *find_kernels(DeviceState &dev, uint64_t key);
pk_status launch_elementwise(pk_be_stream *s, uint32_t op_id, const pk_tensor *inputs, uint32_t nin,
                             const pk_tensor *outputs, const int32_t *in_dt, int32_t out_dt, const void *attrs,
                             KernelSet *ks = nullptr);
pk_status launch_set(pk_be_stream *s, uint32_t op_id, const pk_tensor &out, int32_t out_dt, const void *attrs);
pk_status launch_fill_bits(pk_be_stream *s, uint32_t op_id, const pk_tensor &out, uint64_t bits);
pk_status launch_iota(pk_be_stream *s, const pk_tensor &out, int32_t out_dt, const pk_attrs_iota &at);
pk_status launch_reduction(pk_be_stream *s, uint32_t op_id, const pk_tensor &in, const pk_tensor &out, int32_t dt,
                           const void *attrs);
pk_status launch_argreduce(pk_be_stream *s, uint32_t op_id, const pk_tensor &in, const pk_tensor &out, int32_t dt,
                           const void *attrs);
pk_status launch_matmul(pk_be_stream *s, uint32_t op_id, const pk_tensor &a, const pk_tensor &b, const pk_tensor &c,
                        int32_t dt);

// --- data movement, indexing, scans, sorting (cl_launch_data.cpp) -------------------------------------------

pk_status launch_move_op(pk_be_stream *s, uint32_t op, const pk_tensor *in, uint32_t nin, const pk_tensor &out,
                         const void *attrs);
pk_status launch_take(pk_be_stream *s, uint32_t op, const pk_tensor &in, const pk_tensor &index, const pk_tensor &out,
                      const void *attrs);
pk_status launch_scatter(pk_be_stream *s, uint32_t op, const pk_tensor *in, const pk_tensor &out, const void *attrs);
pk_status launch_index_put(pk_be_stream *s, const pk_tensor *in, uint32_t nin, const pk_tensor &out, const void *attrs);
pk_status launch_scan(pk_be_stream *s, uint32_t op, const pk_tensor &in, const pk_tensor *outs, uint32_t nout,
                      const void *attrs);
pk_status launch_sort(pk_be_stream *s, uint32_t op, const pk_tensor &in, const pk_tensor *outs, const void *attrs);
pk_status launch_search(pk_be_stream *s, const pk_tensor &seq, const pk_tensor &vals, const pk_tensor &out,
                        const void *attrs);

// --- var, dot_general, convolution, RNG, FFT (cl_launch_math.cpp) -------------------------------------------

pk_status launch_var(pk_be_stream *s, const pk_tensor &in, const pk_tensor &out, const void *attrs);
pk_status launch_dot_general(pk_be_stream *s, const pk_tensor &a, const pk_tensor &b, const pk_tensor &out,
                             const void *attrs);
pk_status launch_conv(pk_be_stream *s, const pk_tensor &x, const pk_tensor &w, const pk_tensor &y, const void *attrs);
pk_status launch_philox(pk_be_stream *s, uint32_t op, const pk_tensor &out, const void *attrs);
pk_status launch_fft(pk_be_stream *s, uint32_t op, const pk_tensor &in, const pk_tensor &out, const void *attrs);

// --- fusion (cl_fusion.cpp): the ABI slots ----------------------------------------------------------------------

pk_status ocl_fusion_offer(pk_be_context *ctx, uint32_t device, const pk_subgraph *graph, pk_fusion_claim *claim,
                           pk_be_kernel **out);
pk_status ocl_kernel_launch(pk_be_stream *s, pk_be_kernel *k, const pk_tensor *args, uint32_t num_args);
pk_status ocl_kernel_destroy(pk_be_context *, pk_be_kernel *k);

}  // namespace pk::ocl
