// emit.hpp — internal to primkit_codegen: builds the LLVM module of one kernel for one target.
#pragma once

#include <memory>
#include <string>

#include "primkit/codegen.hpp"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace pk::codegen::detail {

enum class Target { nvptx, emu, cpu };

// The module holds the shared item/body functions plus the target's entry, named `entry`. The module has no
// triple or data layout yet; the caller sets them before optimizing.
std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext &ctx, const KernelSpec &spec, Target target,
                                           const std::string &entry);

}  // namespace pk::codegen::detail
