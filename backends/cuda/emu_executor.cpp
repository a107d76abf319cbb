// emu_executor.cpp — the cuda-emu backend: the cuda backend's kernels (the same LLVM IR body: grid-stride loop
// over blockIdx/threadIdx) compiled for the host by the JIT, with the grid supplied by two loops. Memory is
// host memory behind device pointers the host may not assume it can read (no UNIFIED_MEMORY), so the runtime
// goes through the copy slots exactly as with a GPU. Work runs synchronously at enqueue: streams are always
// idle, events always complete. What this does NOT prove about the PTX build is listed in README.md.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <set>

#include "gpu_backend.hpp"
#include "primkit/backend_kit.hpp"

namespace pk::gpu {

namespace {

using pk::kit::fail;

class EmuExecutor final : public Executor {
 public:
  ~EmuExecutor() override {
    for (void *p : allocations_) std::free(p);
  }
  const char *name() const override { return "cuda-emu"; }
  uint32_t device_count() override { return 1; }
  pk_status device_props(uint32_t device, pk_device_props &p) override {
    if (device != 0) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cuda-emu: no device %u", device);
    std::snprintf(p.name, sizeof p.name, "cuda-emu (PTX kernels' IR on the host)");
    p.device_type = PK_DEVICE_EXT;
    p.device_id = 0;
    p.memory_bytes = 0;
    p.compute_units = 1;
    p.features = PK_DEVICE_FEATURE_FUSION;
    p.float_policy = 0;
    p.dtype_mask = (1u << PK_DTYPE_COUNT) - 1;
    p.max_allocation_bytes = 0;
    p.alignment = 256;
    return PK_OK;
  }

  pk_status alloc(uint32_t, uint64_t bytes, void **out) override {
    if (bytes == 0) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cuda-emu: mem_alloc of 0 bytes");
    const uint64_t rounded = (bytes + 255) / 256 * 256;
    void *p = rounded >= bytes ? std::aligned_alloc(256, rounded) : nullptr;
    if (p == nullptr)
      return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cuda-emu: cannot allocate %llu bytes",
                  static_cast<unsigned long long>(bytes));
    std::lock_guard<std::mutex> g(mu_);
    try {
      allocations_.insert(p);
    } catch (...) {
      std::free(p);
      return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cuda-emu: cannot track an allocation");
    }
    *out = p;
    return PK_OK;
  }
  pk_status free(uint32_t, void *ptr) override {
    std::lock_guard<std::mutex> g(mu_);
    if (allocations_.erase(ptr) == 0)
      return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cuda-emu: mem_free of an unknown pointer");
    std::free(ptr);
    return PK_OK;
  }

  // A stream needs no state: the handle only has to be non-null and unique.
  pk_status stream_create(uint32_t, void **out) override {
    try {
      *out = std::make_unique<char>().release();  // owned by the pk_be_stream until stream_destroy
    } catch (const std::bad_alloc &) {
      return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cuda-emu: no memory for a stream");
    }
    return PK_OK;
  }
  pk_status stream_destroy(void *s) override {
    std::unique_ptr<char> owned(static_cast<char *>(s));
    return PK_OK;
  }
  pk_status stream_synchronize(void *) override { return PK_OK; }
  pk_status stream_query(void *) override { return PK_OK; }
  pk_status copy_h2d(void *, void *dst, const void *src, uint64_t bytes) override {
    std::memcpy(dst, src, bytes);
    return PK_OK;
  }
  pk_status copy_d2h(void *, void *dst, const void *src, uint64_t bytes) override {
    std::memcpy(dst, src, bytes);
    return PK_OK;
  }
  pk_status copy_d2d(void *, void *dst, const void *src, uint64_t bytes) override {
    std::memmove(dst, src, bytes);
    return PK_OK;
  }
  pk_status event_create(uint32_t, void **out) override { return stream_create(0, out); }
  pk_status event_destroy(void *e) override { return stream_destroy(e); }
  pk_status event_record(void *, void *) override { return PK_OK; }
  pk_status stream_wait_event(void *, void *) override { return PK_OK; }
  pk_status event_synchronize(void *) override { return PK_OK; }
  pk_status event_query(void *) override { return PK_OK; }

  pk_status load_kernel(uint32_t, const codegen::KernelSpec &spec, void **kernel) override {
    std::string err;
    void *fn = codegen::jit_compile(spec, codegen::HostMode::emu, err);
    if (fn == nullptr) return fail(PK_ERROR_INTERNAL, 0, -1, "cuda-emu: %s", err.c_str());
    *kernel = fn;
    return PK_OK;
  }
  pk_status launch(void *, void *kernel, void **params, int64_t n) override {
    // The grid the cuda backend would launch: kBlock threads per block, grid_for(n) blocks.
    codegen::call_jit(reinterpret_cast<codegen::EmuFn>(kernel), params, codegen::grid_for(n), codegen::kBlock);
    return PK_OK;
  }

 private:
  std::mutex mu_;
  std::set<void *> allocations_;
};

}  // namespace

std::unique_ptr<Executor> make_executor() {
  return std::make_unique<EmuExecutor>();
}
const char *backend_name() {
  return "cuda-emu";
}
// No native collectives: the emulator has no NCCL, and its collectives go through an engine (staged, as for a
// discrete GPU), which is what the multi-rank tests of cuda-emu check.
void install_native_collectives(pk_backend_api &) {}

}  // namespace pk::gpu
