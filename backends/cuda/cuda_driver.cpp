// cuda_driver.cpp — the cuda backend's executor: the CUDA driver API resolved with dlopen("libcuda.so.1") at
// run time (never linked: the plugin must load and answer "0 devices" on machines without a driver), kernels
// as PTX from the LLVM code generator loaded with cuModuleLoadDataEx.
//
// The driver's types are declared here rather than taken from cuda.h so the plugin builds without the CUDA
// toolkit. CUDA 12+ headers map several names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2, ...): we
// resolve the versioned names directly. The primary context of each device is used (cuDevicePrimaryCtxRetain),
// made current on the calling thread before each driver call that needs one.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "gpu_backend.hpp"
#include "primkit/backend_kit.hpp"

namespace pk::gpu {

namespace {

using pk::kit::fail;

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUevent = CUevent_st *;

constexpr CUresult kSuccess = 0;
constexpr CUresult kNotReady = 600;
constexpr CUresult kOutOfMemory = 2;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrCcMajor = 75;
constexpr int kAttrCcMinor = 76;
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDisableTiming = 2;
constexpr int kJitErrorLogBuffer = 5;  // CUjit_option values
constexpr int kJitErrorLogBufferSizeBytes = 6;

// The driver entry points we use, resolved by name.
struct Driver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int *) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem_v2)(size_t *, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree_v2)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void *, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync_v2)(void *, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuStreamCreate)(CUstream *, unsigned) = nullptr;
  CUresult (*cuStreamDestroy_v2)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamQuery)(CUstream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*cuEventCreate)(CUevent *, unsigned) = nullptr;
  CUresult (*cuEventDestroy_v2)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
};

struct Device {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  int sm = 0;  // compute capability major*10 + minor
  char name[PK_NAME_CAPACITY] = {0};
  size_t memory = 0;
  int sms = 0;
};

struct Kernel {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  uint32_t device = 0;
};

class CudaExecutor final : public Executor {
 public:
  CudaExecutor() { init(); }
  ~CudaExecutor() override {
    for (auto &k : kernels_) {
      if (current(k->device) == PK_OK) d_.cuModuleUnload(k->module);
    }
    for (auto &dv : devices_)
      if (dv.ctx) d_.cuDevicePrimaryCtxRelease_v2(dv.dev);
    if (lib_) dlclose(lib_);
  }
  const char *name() const override { return "cuda"; }

  uint32_t device_count() override {
    if (devices_.empty()) fail(PK_ERROR_NOT_FOUND, 0, -1, "cuda: %s", why_.c_str());
    return static_cast<uint32_t>(devices_.size());
  }

  pk_status device_props(uint32_t device, pk_device_props &p) override {
    if (device >= devices_.size()) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cuda: no device %u", device);
    const Device &dv = devices_[device];
    std::snprintf(p.name, sizeof p.name, "%s", dv.name);
    p.device_type = PK_DEVICE_CUDA;
    p.device_id = static_cast<int32_t>(device);
    p.memory_bytes = dv.memory;
    p.compute_units = static_cast<uint32_t>(dv.sms);
    p.features = PK_DEVICE_FEATURE_ASYNC | PK_DEVICE_FEATURE_FUSION;
    p.float_policy = 0;  // kernels use IEEE instructions (no ftz, no approximate division or sqrt)
    p.dtype_mask = (1u << PK_DTYPE_COUNT) - 1;
    p.max_allocation_bytes = dv.memory;
    p.alignment = 256;
    return PK_OK;
  }

  pk_status alloc(uint32_t device, uint64_t bytes, void **out) override {
    if (pk_status st = current(device)) return st;
    CUdeviceptr p = 0;
    CUresult r = d_.cuMemAlloc_v2(&p, bytes);
    if (r != kSuccess) {
      return error(r == kOutOfMemory ? PK_ERROR_OUT_OF_MEMORY : PK_ERROR_DEVICE, r, "cuMemAlloc_v2");
    }
    *out = reinterpret_cast<void *>(static_cast<uintptr_t>(p));
    return PK_OK;
  }
  pk_status free(uint32_t device, void *ptr) override {
    if (pk_status st = current(device)) return st;
    return check(d_.cuMemFree_v2(dptr(ptr)), "cuMemFree_v2");
  }

  pk_status stream_create(uint32_t device, void **out) override {
    if (pk_status st = current(device)) return st;
    CUstream s = nullptr;
    if (pk_status st = check(d_.cuStreamCreate(&s, kStreamNonBlocking), "cuStreamCreate")) return st;
    std::lock_guard<std::mutex> g(mu_);
    stream_device_.emplace_back(s, device);
    *out = s;
    return PK_OK;
  }
  pk_status stream_destroy(void *s) override {
    pk_status st = on_stream(s);
    if (st == PK_OK) st = check(d_.cuStreamSynchronize(static_cast<CUstream>(s)), "cuStreamSynchronize");
    pk_status st2 = check(d_.cuStreamDestroy_v2(static_cast<CUstream>(s)), "cuStreamDestroy_v2");
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = stream_device_.begin(); it != stream_device_.end(); ++it) {
      if (it->first == s) {
        stream_device_.erase(it);
        break;
      }
    }
    return st != PK_OK ? st : st2;
  }
  pk_status stream_synchronize(void *s) override {
    if (pk_status st = on_stream(s)) return st;
    return check(d_.cuStreamSynchronize(static_cast<CUstream>(s)), "cuStreamSynchronize");
  }
  pk_status stream_query(void *s) override {
    if (pk_status st = on_stream(s)) return st;
    CUresult r = d_.cuStreamQuery(static_cast<CUstream>(s));
    return r == kNotReady ? PK_NOT_READY : check(r, "cuStreamQuery");
  }
  pk_status copy_h2d(void *s, void *dst, const void *src, uint64_t bytes) override {
    if (pk_status st = on_stream(s)) return st;
    return check(d_.cuMemcpyHtoDAsync_v2(dptr(dst), src, bytes, static_cast<CUstream>(s)), "cuMemcpyHtoDAsync_v2");
  }
  pk_status copy_d2h(void *s, void *dst, const void *src, uint64_t bytes) override {
    if (pk_status st = on_stream(s)) return st;
    return check(d_.cuMemcpyDtoHAsync_v2(dst, dptr(src), bytes, static_cast<CUstream>(s)), "cuMemcpyDtoHAsync_v2");
  }
  pk_status copy_d2d(void *s, void *dst, const void *src, uint64_t bytes) override {
    if (pk_status st = on_stream(s)) return st;
    return check(d_.cuMemcpyDtoDAsync_v2(dptr(dst), dptr(src), bytes, static_cast<CUstream>(s)),
                 "cuMemcpyDtoDAsync_v2");
  }

  pk_status event_create(uint32_t device, void **out) override {
    if (pk_status st = current(device)) return st;
    CUevent e = nullptr;
    if (pk_status st = check(d_.cuEventCreate(&e, kEventDisableTiming), "cuEventCreate")) return st;
    *out = e;
    return PK_OK;
  }
  pk_status event_destroy(void *e) override {
    return check(d_.cuEventDestroy_v2(static_cast<CUevent>(e)), "cuEventDestroy_v2");
  }
  pk_status event_record(void *e, void *s) override {
    if (pk_status st = on_stream(s)) return st;
    return check(d_.cuEventRecord(static_cast<CUevent>(e), static_cast<CUstream>(s)), "cuEventRecord");
  }
  pk_status stream_wait_event(void *s, void *e) override {
    if (pk_status st = on_stream(s)) return st;
    return check(d_.cuStreamWaitEvent(static_cast<CUstream>(s), static_cast<CUevent>(e), 0), "cuStreamWaitEvent");
  }
  pk_status event_synchronize(void *e) override {
    return check(d_.cuEventSynchronize(static_cast<CUevent>(e)), "cuEventSynchronize");
  }
  pk_status event_query(void *e) override {
    CUresult r = d_.cuEventQuery(static_cast<CUevent>(e));
    return r == kNotReady ? PK_NOT_READY : check(r, "cuEventQuery");
  }

  pk_status load_kernel(uint32_t device, const codegen::KernelSpec &spec, void **kernel) override {
    if (device >= devices_.size()) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cuda: no device %u", device);
    // sm_90 PTX for Hopper and newer, sm_80 PTX otherwise; the driver JIT-compiles PTX for newer GPUs.
    const int sm = devices_[device].sm >= 90 ? 90 : 80;
    std::string ptx, entry, err;
    if (!codegen::emit_ptx(spec, sm, ptx, entry, err)) return fail(PK_ERROR_INTERNAL, 0, -1, "cuda: %s", err.c_str());
    if (pk_status st = current(device)) return st;
    auto k = std::make_unique<Kernel>();
    k->device = device;
    // The driver's PTX compiler explains a rejected module in its error log: the message carries it.
    char log[2048] = {0};
    int options[2] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes};
    void *values[2] = {log, reinterpret_cast<void *>(sizeof log - 1)};
    if (CUresult r = d_.cuModuleLoadDataEx(&k->module, ptx.c_str(), 2, options, values); r != kSuccess) {
      fail(PK_ERROR_DEVICE, 0, -1, "cuda: cuModuleLoadDataEx of kernel %s (sm_%d) failed: %s: %s", entry.c_str(), sm,
           code_text(r).c_str(), log[0] ? log : "no log");
      pk::kit::last_error().vendor_code = r;
      return PK_ERROR_DEVICE;
    }
    if (pk_status st = check(d_.cuModuleGetFunction(&k->function, k->module, entry.c_str()), "cuModuleGetFunction")) {
      d_.cuModuleUnload(k->module);
      return st;
    }
    std::lock_guard<std::mutex> g(mu_);
    kernels_.push_back(std::move(k));
    *kernel = kernels_.back().get();
    return PK_OK;
  }

  pk_status launch(void *s, void *kernel, void **params, int64_t n) override {
    if (pk_status st = on_stream(s)) return st;
    auto *k = static_cast<Kernel *>(kernel);
    return check(d_.cuLaunchKernel(k->function, codegen::grid_for(n), 1, 1, codegen::kBlock, 1, 1, 0,
                                   static_cast<CUstream>(s), params, nullptr),
                 "cuLaunchKernel");
  }

 private:
  template <class F>
  bool resolve(F &fn, const char *name) {
    fn = reinterpret_cast<F>(dlsym(lib_, name));
    if (fn == nullptr) why_ = std::string("libcuda.so.1 lacks ") + name + " (driver too old?)";
    return fn != nullptr;
  }

  void init() {
    lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
      const char *e = dlerror();
      why_ = std::string("libcuda.so.1 not found: no NVIDIA driver (") + (e ? e : "dlopen failed") + ")";
      return;
    }
#define PK_RESOLVE(name) \
  if (!resolve(d_.name, #name)) return
    PK_RESOLVE(cuInit);
    PK_RESOLVE(cuDriverGetVersion);
    PK_RESOLVE(cuDeviceGetCount);
    PK_RESOLVE(cuDeviceGet);
    PK_RESOLVE(cuDeviceGetName);
    PK_RESOLVE(cuDeviceTotalMem_v2);
    PK_RESOLVE(cuDeviceGetAttribute);
    PK_RESOLVE(cuDevicePrimaryCtxRetain);
    PK_RESOLVE(cuDevicePrimaryCtxRelease_v2);
    PK_RESOLVE(cuCtxSetCurrent);
    PK_RESOLVE(cuMemAlloc_v2);
    PK_RESOLVE(cuMemFree_v2);
    PK_RESOLVE(cuMemcpyHtoDAsync_v2);
    PK_RESOLVE(cuMemcpyDtoHAsync_v2);
    PK_RESOLVE(cuMemcpyDtoDAsync_v2);
    PK_RESOLVE(cuStreamCreate);
    PK_RESOLVE(cuStreamDestroy_v2);
    PK_RESOLVE(cuStreamSynchronize);
    PK_RESOLVE(cuStreamQuery);
    PK_RESOLVE(cuStreamWaitEvent);
    PK_RESOLVE(cuEventCreate);
    PK_RESOLVE(cuEventDestroy_v2);
    PK_RESOLVE(cuEventRecord);
    PK_RESOLVE(cuEventSynchronize);
    PK_RESOLVE(cuEventQuery);
    PK_RESOLVE(cuModuleLoadDataEx);
    PK_RESOLVE(cuModuleUnload);
    PK_RESOLVE(cuModuleGetFunction);
    PK_RESOLVE(cuLaunchKernel);
    PK_RESOLVE(cuGetErrorName);
#undef PK_RESOLVE
    CUresult r = d_.cuInit(0);
    if (r != kSuccess) {
      why_ = "cuInit failed: " + code_text(r) + " (no usable GPU?)";
      return;
    }
    int count = 0;
    r = d_.cuDeviceGetCount(&count);
    if (r != kSuccess || count <= 0) {
      why_ = r != kSuccess ? "cuDeviceGetCount failed: " + code_text(r) : "the driver reports no CUDA device";
      return;
    }
    for (int i = 0; i < count; ++i) {
      Device dv;
      int major = 0, minor = 0;
      if (d_.cuDeviceGet(&dv.dev, i) != kSuccess) continue;
      d_.cuDeviceGetAttribute(&major, kAttrCcMajor, dv.dev);
      d_.cuDeviceGetAttribute(&minor, kAttrCcMinor, dv.dev);
      dv.sm = major * 10 + minor;
      if (dv.sm < 80) continue;  // the generated PTX targets sm_80 and newer
      d_.cuDeviceGetAttribute(&dv.sms, kAttrMultiprocessorCount, dv.dev);
      d_.cuDeviceGetName(dv.name, sizeof dv.name, dv.dev);
      d_.cuDeviceTotalMem_v2(&dv.memory, dv.dev);
      if (d_.cuDevicePrimaryCtxRetain(&dv.ctx, dv.dev) != kSuccess) continue;
      devices_.push_back(dv);
    }
    if (devices_.empty()) why_ = "no CUDA device of compute capability 8.0 or newer";
  }

  std::string code_text(CUresult r) const {
    const char *name = nullptr;
    if (d_.cuGetErrorName) d_.cuGetErrorName(r, &name);
    return std::string(name ? name : "CUDA_ERROR") + " (" + std::to_string(r) + ")";
  }
  pk_status error(pk_status st, CUresult r, const char *call) {
    fail(st, 0, -1, "cuda: %s failed: %s", call, code_text(r).c_str());
    pk::kit::last_error().vendor_code = r;
    return st;
  }
  pk_status check(CUresult r, const char *call) {
    return r == kSuccess ? PK_OK : error(PK_ERROR_DEVICE, r, call);
  }

  pk_status make_current(uint32_t device) override {
    return current(device);
  }
  pk_status current(uint32_t device) {
    if (device >= devices_.size()) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cuda: no device %u", device);
    return check(d_.cuCtxSetCurrent(devices_[device].ctx), "cuCtxSetCurrent");
  }
  pk_status on_stream(void *s) {
    uint32_t device = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (auto &sd : stream_device_)
        if (sd.first == s) device = sd.second;
    }
    return current(device);
  }
  static CUdeviceptr dptr(const void *p) {
    return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
  }

  void *lib_ = nullptr;
  Driver d_;
  std::string why_;
  std::vector<Device> devices_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<std::pair<CUstream, uint32_t>> stream_device_;
};

}  // namespace

std::unique_ptr<Executor> make_executor() {
  return std::make_unique<CudaExecutor>();
}
const char *backend_name() {
  return "cuda";
}

}  // namespace pk::gpu
