// targets.cpp — lowering a kernel module: PTX through the NVPTX target, host code through ORC LLJIT (with the
// O3 pipeline of the host's target machine, so the CPU loops are vectorized for the CPU the process runs on).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "emit.hpp"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Scalar/AlignmentFromAssumptions.h>

namespace pk::codegen {

namespace {

using detail::Target;

std::string to_string(llvm::Error e) {
  std::string s;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase &info) { s += info.message(); });
  return s;
}

void optimize(llvm::Module &m, llvm::TargetMachine *tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

// A short stable name per spec: FNV-1a of the key.
std::string entry_name(const KernelSpec &spec, const char *prefix) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key(spec)) h = (h ^ c) * 1099511628211ull;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s_%016llx", prefix, static_cast<unsigned long long>(h));
  return buf;
}

bool verify(llvm::Module &m, std::string &err) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(m, &os)) {
    err = "internal error: generated IR does not verify: " + os.str();
    return false;
  }
  return true;
}

std::once_flag g_nvptx_once;

// The streaming variant of a cpu entry, after vectorization: its vector stores become non-temporal (straight to
// memory, no read-for-ownership of the line: a third less traffic for a binary op), and an sfence before each
// return orders them before whatever the caller does next (they are weakly ordered). x86 only; elsewhere the
// entry stays the plain one.
void make_stores_streaming(llvm::Module &m, const std::string &entry, llvm::TargetMachine *tm) {
  llvm::Function *f = m.getFunction(entry);
  if (f == nullptr || !llvm::Triple(m.getTargetTriple()).isX86()) return;
  {
    // The O3 pipeline derives alignment from the entry's assumption before it vectorizes; derived again after, the
    // widened stores of the aligned loop are known aligned, and lower to whole-vector non-temporal stores.
    llvm::FunctionAnalysisManager fam;
    llvm::PassBuilder pb(tm);
    pb.registerFunctionAnalyses(fam);
    llvm::FunctionPassManager fpm;
    fpm.addPass(llvm::AlignmentFromAssumptionsPass());
    fpm.run(*f, fam);
  }
  llvm::LLVMContext &ctx = m.getContext();
  llvm::MDNode *nt =
      llvm::MDNode::get(ctx, {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1))});
  std::vector<llvm::ReturnInst *> returns;
  for (llvm::BasicBlock &bb : *f) {
    for (llvm::Instruction &inst : bb) {
      if (auto *st = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
        if (st->getValueOperand()->getType()->isVectorTy()) st->setMetadata(llvm::LLVMContext::MD_nontemporal, nt);
      } else if (auto *ret = llvm::dyn_cast<llvm::ReturnInst>(&inst)) {
        returns.push_back(ret);
      }
    }
  }
  for (llvm::ReturnInst *ret : returns) {
    llvm::IRBuilder<> b(ret);
    b.CreateIntrinsic(llvm::Intrinsic::x86_sse_sfence, {}, {});
  }
}

}  // namespace

bool emit_ir(const KernelSpec &spec, const std::string &target, std::string &ir, std::string &err) {
  err = check(spec.region);
  if (!err.empty()) return false;
  Target t = target == "nvptx" ? Target::nvptx : target == "emu" ? Target::emu : Target::cpu;
  llvm::LLVMContext ctx;
  auto m = detail::build_module(ctx, spec, t, entry_name(spec, "pk"));
  if (!verify(*m, err)) return false;
  llvm::raw_string_ostream os(ir);
  m->print(os, nullptr);
  return true;
}

bool emit_ptx(const KernelSpec &spec, int sm, std::string &ptx, std::string &entry, std::string &err) {
  err = check(spec.region);
  if (!err.empty()) return false;
  if (sm != 80 && sm != 90) {
    err = "PTX is generated for sm_80 and sm_90 only";
    return false;
  }
  std::call_once(g_nvptx_once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  const std::string triple = "nvptx64-nvidia-cuda";
  std::string lookup_err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, lookup_err);
  if (target == nullptr) {
    err = "NVPTX target unavailable in this LLVM: " + lookup_err;
    return false;
  }
  // PTX ISA 7.0 is the oldest with sm_80; sm_90 needs 7.8. Older ISAs keep the module loadable by older drivers.
  const char *cpu = sm == 90 ? "sm_90" : "sm_80";
  const char *features = sm == 90 ? "+ptx78" : "+ptx70";
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(triple, cpu, features, opts, std::nullopt,
                                                                      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) {
    err = "cannot create the NVPTX target machine";
    return false;
  }
  llvm::LLVMContext ctx;
  entry = entry_name(spec, "pk_kernel");
  auto m = detail::build_module(ctx, spec, Target::nvptx, entry);
  m->setTargetTriple(triple);
  m->setDataLayout(tm->createDataLayout());
  if (!verify(*m, err)) return false;
  optimize(*m, tm.get());
  llvm::SmallString<16384> out;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    err = "the NVPTX target cannot emit assembly";
    return false;
  }
  pm.run(*m);
  ptx.assign(out.begin(), out.end());
  return true;
}

// --- host JIT ---------------------------------------------------------------------------------------------

namespace {

class HostJit {
 public:
  static HostJit &get() {
    // One JIT per library instance (each plugin links its own copy); torn down when the plugin unloads.
    static HostJit j;
    return j;
  }

  void *compile(const KernelSpec &spec, HostMode mode, std::string &err, double *ms) {
    if (ms) *ms = 0;
    err = check(spec.region);
    if (!err.empty()) return nullptr;
    const Target target = mode == HostMode::emu             ? Target::emu
                          : mode == HostMode::cpu_streaming ? Target::cpu_streaming
                                                            : Target::cpu;
    const std::string k = (target == Target::emu   ? "emu|"
                           : target == Target::cpu ? "cpu|"
                                                   : "cpu_streaming|") +
                          key(spec);
    std::lock_guard<std::mutex> g(mu_);
    if (!init_err_.empty()) {
      err = init_err_;
      return nullptr;
    }
    auto it = cache_.find(k);
    if (it != cache_.end()) return it->second;
    auto t0 = std::chrono::steady_clock::now();
    auto ctx = std::make_unique<llvm::LLVMContext>();
    const std::string name =
        entry_name(spec, mode == HostMode::emu ? "pk_emu" : "pk_cpu") + "_" + std::to_string(counter_++);
    auto m = detail::build_module(*ctx, spec, target, name);
    m->setDataLayout(jit_->getDataLayout());
    m->setTargetTriple(jit_->getTargetTriple().str());
    if (!verify(*m, err)) return nullptr;
    optimize(*m, tm_.get());
    if (target == Target::cpu_streaming) make_stores_streaming(*m, name, tm_.get());
    // The optimized IR, for debugging; the variable is read once per process, not per compiled region.
    static const bool dump_ir = std::getenv("PRIMKIT_JIT_DUMP") != nullptr;
    if (dump_ir) m->print(llvm::errs(), nullptr);
    if (auto e = jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx)))) {
      err = "JIT: " + to_string(std::move(e));
      return nullptr;
    }
    auto sym = jit_->lookup(name);
    if (!sym) {
      err = "JIT: " + to_string(sym.takeError());
      return nullptr;
    }
    void *fn = sym->toPtr<void *>();
    cache_.emplace(k, fn);
    if (ms) *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return fn;
  }

 private:
  HostJit() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      init_err_ = "JIT: " + to_string(jtmb.takeError());
      return;
    }
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    // LLVM tunes recent AVX-512 CPUs to prefer 256-bit vectors (a guard against the frequency drop of early
    // AVX-512 parts); the fused kernels are long chains of arithmetic and transcendental math per element, where
    // 512-bit vectors do twice the work per instruction. Values are unchanged (the same operations per lane).
    jtmb->getFeatures().AddFeature("prefer-256-bit", false);
    auto tm = jtmb->createTargetMachine();
    if (!tm) {
      init_err_ = "JIT: " + to_string(tm.takeError());
      return;
    }
    tm_ = std::move(*tm);
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
    if (!jit) {
      init_err_ = "JIT: " + to_string(jit.takeError());
      return;
    }
    jit_ = std::move(*jit);
    // Kernels may call compiler-runtime helpers (e.g. __truncdfhf2 for f64 -> f16 on CPUs without an
    // instruction for it): resolve them from what the process has loaded.
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix());
    if (!gen) {
      init_err_ = "JIT: " + to_string(gen.takeError());
      return;
    }
    jit_->getMainJITDylib().addGenerator(std::move(*gen));
  }

  std::mutex mu_;
  std::string init_err_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::unordered_map<std::string, void *> cache_;
  uint64_t counter_ = 0;
};

}  // namespace

void *jit_compile(const KernelSpec &spec, HostMode mode, std::string &err, double *compile_ms) {
  return HostJit::get().compile(spec, mode, err, compile_ms);
}

Params::Params(const std::vector<void *> &pointers, int64_t n, int64_t cols, const std::vector<int64_t> &shape,
               const std::vector<std::vector<int64_t>> &strides, const std::vector<int64_t> &extra)
    : pointers_(pointers) {
  scalars_.push_back(n);
  scalars_.push_back(cols);
  if (!shape.empty()) {
    scalars_.insert(scalars_.end(), shape.begin(), shape.end());
    for (const auto &s : strides) scalars_.insert(scalars_.end(), s.begin(), s.end());
  }
  scalars_.insert(scalars_.end(), extra.begin(), extra.end());
  for (void *&p : pointers_) slots_.push_back(&p);
  for (int64_t &s : scalars_) slots_.push_back(&s);
}

uint32_t grid_for(int64_t n) {
  // Grid-stride loops cover the rest; 2^20 blocks keep every SM busy without a huge grid.
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<uint32_t>(std::clamp<int64_t>(blocks, 1, int64_t{1} << 20));
}

}  // namespace pk::codegen
