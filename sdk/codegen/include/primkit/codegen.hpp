// codegen.hpp — PrimKit's LLVM kernel generator: the LLVM printer of the fusion planner's regions
// (primkit/region.hpp: a single op, a chain of elementwise ops, a chain closed by a reduction over the trailing
// axes, or a row program such as softmax), each lowered to LLVM IR once and then
//   (a) to PTX through LLVM's NVPTX target (sm_80, sm_90) for the cuda backend,
//   (b) to host code through ORC LLJIT, either as a grid emulator (the very same kernel body, with block and
//       thread indices supplied by loops: the cuda-emu backend) or as a plain loop over a range of work items
//       (the CPU backend's fused kernels).
// This header deliberately includes no LLVM header, so backends that use it compile quickly and never see
// LLVM's warnings.
//
// Kernel ABI shared by all three targets — the parameters, in order, each passed by value (for PTX through
// cuLaunchKernel's kernelParams, for host entries through an array of pointers to the values, the same shape):
//   ptr arg[0..K)      the region's inputs then outputs (Region::inputs, Region::outputs)
//   i64 n              work items: elements for elementwise regions, rows for reduction regions
//   i64 cols           reduction length (product of the reduced trailing axes); 1 for elementwise regions
//   strided layout only (KernelSpec::rank = r > 0):
//   i64 shape[r]       extents of the element space (the inputs' shape, reduced axes last)
//   i64 strides[K][r]  element strides of each argument; a row value has stride 0 on the reduced axes, a column
//                      value stride 0 on the others
//   i64 extra[Region::num_extra]   op scalars that vary per launch (iota's start and step)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primkit/region.hpp"

namespace pk::codegen {

// --- targets ----------------------------------------------------------------------------------------------

// PTX for sm (80 or 90). The kernel is named by `entry`. Thread-safe.
bool emit_ptx(const KernelSpec &spec, int sm, std::string &ptx, std::string &entry, std::string &err);
// The LLVM IR text of the kernel for a target ("nvptx", "emu" or "cpu"), for debugging and tests.
bool emit_ir(const KernelSpec &spec, const std::string &target, std::string &ir, std::string &err);

// Host entry points compiled by the JIT.
//   EmuFn: runs the grid (grid x block threads) of the PTX kernel's body on the calling thread.
//   CpuFn: runs work items [begin, end) as one loop (vectorized by LLVM).
using EmuFn = void (*)(void **params, uint32_t grid, uint32_t block);
using CpuFn = void (*)(void **params, int64_t begin, int64_t end);

// The only calls into JIT-compiled code. UBSan's -fsanitize=function (clang 17+) checks an indirect call by
// reading a type signature that clang places just before every function it compiles; LLVM's JIT emits none, so
// the check reads bytes before the kernel (a SEGV when the kernel starts a page). Sanitizer builds exempt these
// two calls from that one check (cmake/Sanitizers.cmake, tools/run-asan.sh).
#if defined(__clang__)
#define PK_NO_SANITIZE_FUNCTION_TYPE __attribute__((no_sanitize("function")))
#else
#define PK_NO_SANITIZE_FUNCTION_TYPE
#endif
PK_NO_SANITIZE_FUNCTION_TYPE inline void call_jit(EmuFn fn, void **params, uint32_t grid, uint32_t block) {
  fn(params, grid, block);
}
PK_NO_SANITIZE_FUNCTION_TYPE inline void call_jit(CpuFn fn, void **params, int64_t begin, int64_t end) {
  fn(params, begin, end);
}

// cpu_streaming: the cpu entry with non-temporal vector stores (x86; elsewhere the same as cpu), for elementwise
// regions whose outputs are far larger than the caches. Reducing regions get the plain cpu entry.
enum class HostMode { emu, cpu, cpu_streaming };

// Compiles (or finds in the process-wide cache) the host entry of a spec. Thread-safe; compiled code lives
// until the process ends (a kernel handle may be destroyed while another holds the same cached code).
// compile_ms (if not NULL) receives the time spent compiling, 0 on a cache hit.
void *jit_compile(const KernelSpec &spec, HostMode mode, std::string &err, double *compile_ms = nullptr);

// Kernel launch parameters in the kernel ABI above, owning their storage. values() is what kernelParams /
// the host entries take.
class Params {
 public:
  // pointers: one per argument (data + byte_offset); shape/strides only for a strided spec.
  Params(const std::vector<void *> &pointers, int64_t n, int64_t cols, const std::vector<int64_t> &shape,
         const std::vector<std::vector<int64_t>> &strides, const std::vector<int64_t> &extra = {});
  // The slots point into this object's own vectors: it is neither copied nor moved.
  Params(const Params &) = delete;
  Params &operator=(const Params &) = delete;
  void **values() { return slots_.data(); }

 private:
  std::vector<void *> pointers_;
  std::vector<int64_t> scalars_;
  std::vector<void *> slots_;
};

// Block size the generated kernels are launched with, and the grid for n work items.
constexpr uint32_t kBlock = 256;
uint32_t grid_for(int64_t n);

}  // namespace pk::codegen
