// emit_devmath.cpp — the device math (sdk/devmath) in generated kernels. A node that needs one of its functions
// emits a call to pk_dm_<name> (devmath); once the kernel is built, link_devmath links the definitions it calls
// from the bitcode the build compiled for the target (NVPTX, or the host for cuda-emu and the CPU) and defines the
// primitives that bitcode leaves external (port.h: exp, log, erf, ...) with the emitter's own IR math, so that the
// kernel calls no libm. The optimizer then inlines as it sees fit.
#include <stdexcept>
#include <string>
#include <vector>

#include "emit_internal.hpp"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBufferRef.h>

// Generated at build time (sdk/codegen/CMakeLists.txt): kDevmathBitcode_nvptx, kDevmathBitcode_host.
#include "devmath_host_bitcode.inc"
#include "devmath_nvptx_bitcode.inc"

namespace pk::codegen::detail {

namespace {

// The device math's functions are pk_dm_*; the ones port.h leaves to the emitter are among them.
bool is_devmath(const llvm::Function &f) {
  return f.getName().starts_with("pk_dm_");
}

}  // namespace

Value *Emitter::devmath(const char *name, llvm::ArrayRef<Value *> args) {
  std::vector<llvm::Type *> types;
  for (Value *a : args) types.push_back(a->getType());
  llvm::FunctionCallee callee = m_.getOrInsertFunction(name, llvm::FunctionType::get(f64_, types, false));
  return b_.CreateCall(callee, args);
}

// complex.h's convention: the results through a pointer to n doubles (the same call on every target, where a
// returned struct would follow each target's ABI). The array lives in the function's entry block, so that once the
// call is inlined the optimizer keeps the parts in registers.
std::vector<Value *> Emitter::devmath_parts(const char *name, llvm::ArrayRef<Value *> args, unsigned n) {
  llvm::Function *fn = b_.GetInsertBlock()->getParent();
  llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  llvm::Type *parts_t = llvm::ArrayType::get(f64_, n);
  llvm::AllocaInst *out = entry.CreateAlloca(parts_t, nullptr, "dm_out");
  std::vector<llvm::Type *> types;
  std::vector<Value *> call_args;
  for (Value *a : args) {
    types.push_back(a->getType());
    call_args.push_back(a);
  }
  types.push_back(out->getType());
  call_args.push_back(out);
  llvm::FunctionCallee callee =
      m_.getOrInsertFunction(name, llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), types, false));
  b_.CreateCall(callee, call_args);
  std::vector<Value *> parts;
  for (unsigned k = 0; k < n; ++k)
    parts.push_back(b_.CreateLoad(f64_, b_.CreateConstInBoundsGEP2_64(parts_t, out, 0, k)));
  return parts;
}
void Emitter::devmath_complex(const char *name, llvm::ArrayRef<Value *> args, Value *&re, Value *&im) {
  const std::vector<Value *> parts = devmath_parts(name, args, 2);
  re = parts[0];
  im = parts[1];
}

Value *Emitter::devmath_primitive(llvm::StringRef name, llvm::Function &f) {
  Value *x = f.arg_size() > 0 ? f.getArg(0) : nullptr;
  if (name == "pk_dm_exp") return exp_d(x);
  if (name == "pk_dm_expm1") return expm1_d(x);
  if (name == "pk_dm_log") return log_d(x);
  if (name == "pk_dm_log1p") return log1p_d(x);
  if (name == "pk_dm_log2") return log2_d(x);
  if (name == "pk_dm_pow") return pow_d(x, f.getArg(1));
  if (name == "pk_dm_erf") return erf_d(x);
  if (name == "pk_dm_erfc") return erfc_d(x);
  if (name == "pk_dm_sin") return trig_d(x, PK_OP_SIN);
  if (name == "pk_dm_cos") return trig_d(x, PK_OP_COS);
  if (name == "pk_dm_atan2") return atan2_d(x, f.getArg(1));
  return nullptr;
}

void Emitter::link_devmath() {
  bool calls = false;
  for (const llvm::Function &f : m_) calls = calls || (f.isDeclaration() && is_devmath(f));
  if (!calls) return;
  // The bitcode of the kernel's target; a parse or link failure is a build defect, reported as an internal error
  // (the callers' exception guards turn it into a status).
  const bool nvptx = target_ == Target::nvptx;
  const llvm::StringRef bytes =
      nvptx ? llvm::StringRef(reinterpret_cast<const char *>(kDevmathBitcode_nvptx), sizeof kDevmathBitcode_nvptx)
            : llvm::StringRef(reinterpret_cast<const char *>(kDevmathBitcode_host), sizeof kDevmathBitcode_host);
  llvm::Expected<std::unique_ptr<llvm::Module>> lib =
      llvm::parseBitcodeFile(llvm::MemoryBufferRef(bytes, "devmath"), ctx_);
  if (!lib)
    throw std::runtime_error("internal error: the device math bitcode does not load: " +
                             llvm::toString(lib.takeError()));
  // clang records the CPU it compiled for; the kernel's own target decides, and differing attributes would keep
  // the inliner from merging the functions into the kernel.
  for (llvm::Function &f : **lib) {
    f.removeFnAttr("target-cpu");
    f.removeFnAttr("target-features");
    f.removeFnAttr("tune-cpu");
  }
  if (llvm::Linker::linkModules(m_, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded))
    throw std::runtime_error("internal error: the device math bitcode does not link into the kernel");
  // Internal: each kernel module has its own copy, and what the optimizer inlines everywhere disappears.
  // Collected first: defining a primitive adds declarations (intrinsics) to the module.
  std::vector<llvm::Function *> linked;
  for (llvm::Function &f : m_) {
    if (is_devmath(f)) linked.push_back(&f);
  }
  llvm::IRBuilderBase::InsertPointGuard keep(b_);
  for (llvm::Function *f : linked) {
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
    if (!f->isDeclaration()) continue;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
    Value *r = devmath_primitive(f->getName(), *f);
    if (r == nullptr) {
      throw std::runtime_error("internal error: the device math needs " + f->getName().str() +
                               ", which the code generator does not define");
    }
    b_.CreateRet(r);
  }
}

}  // namespace pk::codegen::detail
