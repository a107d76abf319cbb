// emit.hpp — internal to primkit_codegen: builds the LLVM module of one kernel for one target.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "primkit/codegen.hpp"
#include "primkit/op_info.hpp"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace pk::codegen::detail {

// cpu_streaming: the cpu entry of an elementwise region laid out for non-temporal stores (items peeled until the
// first output is 64-byte aligned, then the main loop); targets.cpp marks its vector stores after vectorization.
enum class Target { nvptx, emu, cpu, cpu_streaming };

// The module holds the shared item/body functions plus the target's entry, named `entry`. The module has no
// triple or data layout yet; the caller sets them before optimizing.
std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext &ctx, const KernelSpec &spec, Target target,
                                           const std::string &entry);

}  // namespace pk::codegen::detail
