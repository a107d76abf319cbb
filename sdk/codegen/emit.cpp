// emit.cpp — LLVM IR for a Region: the per-work-item function (`item`), the grid-stride body of the GPU kernel
// (`body`), and the entry of each target (the NVPTX kernel, the host grid emulator, the host CPU loop).
//
// Numerics (the op table's contracts):
// - f16/bf16 and fp8 values are computed in f32 and rounded back to their format after every node, so a fused
//   chain gives the same bits as the same ops run one by one.
// - Transcendentals are our own IR, identical on every target (no libm, no libdevice): they are evaluated in
//   f64 with range reduction and Taylor polynomials of enough terms to be accurate to about 1 ulp of f64, then
//   rounded once to the value's format. For f32 that is within 1 ulp; f64 stays within the table's 2-16 ulp,
//   with double-double where f64 alone would not (pow's log, log1p, log10, Payne-Hanek reduction for sin/cos/tan).
//   The price is f64 arithmetic on GPUs, acceptable for memory-bound elementwise kernels.
// - sqrt, fma, floor, ceil, trunc, rint, round, copysign, fabs use LLVM intrinsics every target lowers to
//   IEEE instructions (NVPTX: sqrt.rn, fma.rn, cvt.rmi/rpi/rzi/rni ...).
// - Narrowing to f16 from f64 is one IEEE conversion; to bf16 it goes through f32 rounded to odd, which makes
//   the second rounding exact (24 >= 8 + 2 bits).
// - The special functions (erfcx, erf_inv, ndtri, lgamma, digamma) iterate (Newton steps, recurrences) and carry
//   the steps that cancel in double-double, so that f64 meets the table's 16 ulp with room to spare.
// - var and the scans run one work item per line (var: three passes; scans: one, storing each element).
// - Float sums and products accumulate in f64. On the host (CPU target) the accumulation may be reassociated so
//   that row loops vectorize; GPU threads, and the emulator that stands for them, accumulate in index order.
//
// This file holds the emitter's memory access, conversions and the entries of each target; emit_internal.hpp
// lists the files that hold the rest.
#include "emit_internal.hpp"

#include <cmath>
#include <limits>

#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Metadata.h>

namespace pk::codegen::detail {

ComplexEmitter &Emitter::cx() {
  if (!cx_) {
    cx_math_ = std::make_unique<EmitterMath>(*this);
    cx_ = std::make_unique<ComplexEmitter>(b_, *cx_math_);
  }
  return *cx_;
}

// ---------------------------------------------------------------------------------------------------- memory

Value *Emitter::from_storage(Value *v, int32_t d) {
  switch (d) {
    case PK_DTYPE_BOOL:
      return b_.CreateICmpNE(v, b_.getInt8(0));
    case PK_DTYPE_F16:
      return b_.CreateFPExt(v, f32_);
    case PK_DTYPE_BF16:
      return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, i32_), 16), f32_);
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      return decode_fp8(v, d);
    default:
      return v;
  }
}
Value *Emitter::to_storage(Value *v, int32_t d) {
  switch (d) {
    case PK_DTYPE_BOOL:
      return b_.CreateZExt(v, i8_);
    case PK_DTYPE_F16:
      return b_.CreateFPTrunc(v, f16_);  // exact: v already holds an f16 value
    case PK_DTYPE_BF16:
      return b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(v, i32_), 16), i16_);
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      return encode_fp8(v, d);
    default:
      return v;
  }
}
Value *Emitter::load(int32_t d, Value *base, Value *offset) {
  if (is_complex_dtype(d)) return cx().load(d, base, offset);
  Value *p = b_.CreateGEP(storage_type(d), base, offset);
  return from_storage(b_.CreateLoad(storage_type(d), p), d);
}
void Emitter::store(int32_t d, Value *v, Value *base, Value *offset) {
  if (is_complex_dtype(d)) return cx().store(d, v, base, offset);
  Value *p = b_.CreateGEP(storage_type(d), base, offset);
  b_.CreateStore(to_storage(v, d), p);
}

std::vector<Value *> Emitter::unravel(Value *linear) {
  std::vector<Value *> idx(rank_);
  Value *rem = linear;
  for (int d = rank_ - 1; d >= 0; --d) {
    if (d == 0) {
      idx[d] = rem;
    } else {
      // An empty axis still reaches here for a reduction's row store: never divide by zero.
      Value *ext = b_.CreateSelect(b_.CreateICmpEQ(shape_[d], i64c(0)), i64c(1), shape_[d]);
      idx[d] = b_.CreateURem(rem, ext);
      rem = b_.CreateUDiv(rem, ext);
    }
  }
  return idx;
}

Value *Emitter::offset_of(int arg, Value *linear, const std::vector<Value *> &idx) {
  if (rank_ == 0) return is_uniform(arg) ? i64c(0) : linear;
  Value *off = i64c(0);
  for (int d = 0; d < rank_; ++d) off = b_.CreateAdd(off, b_.CreateMul(idx[d], strides_[arg][d]));
  return off;
}

// ------------------------------------------------------------------------------------------ conversions

Value *Emitter::round_bf16(Value *f) {
  // Round to nearest even on the upper 16 bits; NaN keeps its sign and becomes quiet.
  Value *bits = b_.CreateBitCast(f, i32_);
  Value *lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(1));
  Value *rounded = b_.CreateAnd(b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0x7fff))), b_.getInt32(0xffff0000u));
  Value *nan = b_.CreateOr(b_.CreateAnd(bits, b_.getInt32(0xffff0000u)), b_.getInt32(0x00400000));
  Value *is_nan = b_.CreateFCmpUNO(f, f);
  return b_.CreateBitCast(b_.CreateSelect(is_nan, nan, rounded), f32_);
}

Value *Emitter::narrow(Value *v, int32_t d) {
  if (d == PK_DTYPE_F16) return b_.CreateFPExt(b_.CreateFPTrunc(v, f16_), f32_);
  if (d == PK_DTYPE_BF16) return round_bf16(v);
  if (is_fp8(d)) return round_fp8(v, d, false);
  return v;
}

Value *Emitter::round_fp8(Value *v, int32_t d, bool saturate) {
  const bool e4 = d == PK_DTYPE_F8E4M3FN;
  const int mbits = e4 ? 3 : 2, emin = e4 ? -6 : -14;
  const double max_finite = e4 ? 448.0 : 57344.0;
  Value *x = to_double(v);
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  // The quantum 2^(e - mbits) at a's exponent (subnormals: at emin); scaling by powers of two is exact, and
  // rint rounds half to even.
  Value *e = b_.CreateSub(b_.CreateLShr(b_.CreateBitCast(a, i64_), 52), i64c(1023));
  e = b_.CreateSelect(b_.CreateICmpSLT(e, i64c(emin)), i64c(emin), e);
  e = b_.CreateSelect(b_.CreateICmpSGT(e, i64c(64)), i64c(64), e);  // inf, NaN and beyond: overflow anyway
  Value *r = b_.CreateFMul(intr(llvm::Intrinsic::rint, {b_.CreateFMul(a, pow2i(b_.CreateSub(i64c(mbits), e)))}),
                           pow2i(b_.CreateSub(e, i64c(mbits))));
  const double over = saturate ? max_finite : e4 ? std::numeric_limits<double>::quiet_NaN() : HUGE_VAL;
  r = b_.CreateSelect(b_.CreateFCmpOGT(r, f64c(max_finite)), f64c(over), r);
  r = intr(llvm::Intrinsic::copysign, {r, x});
  r = b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, r);
  return b_.CreateFPTrunc(r, f32_);  // exact
}

Value *Emitter::decode_fp8(Value *bits, int32_t d) {
  if (d == PK_DTYPE_F8E5M2)  // the upper byte of an f16
    return b_.CreateFPExt(b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(bits, i16_), 8), f16_), f32_);
  Value *u = b_.CreateZExt(bits, i32_);
  Value *e = b_.CreateAnd(b_.CreateLShr(u, 3), b_.getInt32(15));
  Value *m = b_.CreateAnd(u, b_.getInt32(7));
  Value *normal = b_.CreateICmpNE(e, b_.getInt32(0));
  // (m + 8 [normal]) 2^(max(e, 1) - 10), the power of two built as f32 bits.
  Value *sig = b_.CreateUIToFP(b_.CreateOr(m, b_.CreateSelect(normal, b_.getInt32(8), b_.getInt32(0))), f32_);
  Value *ee = b_.CreateSelect(normal, e, b_.getInt32(1));
  Value *scale = b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(ee, b_.getInt32(127 - 10)), 23), f32_);
  Value *mag = b_.CreateFMul(sig, scale);
  mag = b_.CreateSelect(b_.CreateICmpEQ(b_.CreateAnd(u, b_.getInt32(0x7f)), b_.getInt32(0x7f)),
                        fpc(f32_, std::numeric_limits<double>::quiet_NaN()), mag);
  return b_.CreateSelect(b_.CreateICmpNE(b_.CreateAnd(u, b_.getInt32(0x80)), b_.getInt32(0)), b_.CreateFNeg(mag), mag);
}

Value *Emitter::encode_fp8(Value *f, int32_t d) {
  if (d == PK_DTYPE_F8E5M2)  // exact in f16; its upper byte
    return b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(b_.CreateFPTrunc(f, f16_), i16_), 8), i8_);
  Value *fb = b_.CreateBitCast(f, i32_);
  Value *sign = b_.CreateTrunc(b_.CreateLShr(fb, 24), i8_);
  sign = b_.CreateAnd(sign, b_.getInt8(static_cast<uint8_t>(0x80)));
  Value *a = intr(llvm::Intrinsic::fabs, {f});
  // Subnormal (below 2^-6): a 2^9 is the mantissa; normal: exponent + 7 and the top three mantissa bits.
  Value *sub = b_.CreateFPToUI(b_.CreateFMul(a, fpc(f32_, 512.0)), i32_);
  Value *ab = b_.CreateBitCast(a, i32_);
  Value *nrm = b_.CreateOr(b_.CreateShl(b_.CreateSub(b_.CreateLShr(ab, 23), b_.getInt32(127 - 7)), 3),
                           b_.CreateAnd(b_.CreateLShr(ab, 20), b_.getInt32(7)));
  Value *mag = b_.CreateSelect(b_.CreateFCmpOLT(a, fpc(f32_, 0x1p-6)), sub, nrm);
  mag = b_.CreateSelect(b_.CreateFCmpUNO(f, f), b_.getInt32(0x7f), mag);
  return b_.CreateOr(b_.CreateTrunc(mag, i8_), sign);
}

Value *Emitter::round_odd_to_float(Value *d, Value *err_sign) {
  // r = d rounded to nearest; if that was inexact, replace it by the truncation of the exact value with its last
  // bit set (round to odd). err_sign > 0 / < 0 says the exact value lies above / below d (0: d is exact).
  Value *r = b_.CreateFPTrunc(d, f32_);
  Value *back = b_.CreateFPExt(r, f64_);
  // Exact value vs r: compare d to back, then the lost part breaks a tie.
  Value *above = b_.CreateOr(b_.CreateFCmpOGT(d, back),
                             b_.CreateAnd(b_.CreateFCmpOEQ(d, back), b_.CreateFCmpOGT(err_sign, f64c(0))));
  Value *below = b_.CreateOr(b_.CreateFCmpOLT(d, back),
                             b_.CreateAnd(b_.CreateFCmpOEQ(d, back), b_.CreateFCmpOLT(err_sign, f64c(0))));
  Value *inexact = b_.CreateOr(above, below);
  Value *bits = b_.CreateBitCast(r, i32_);
  // |exact| < |r| means truncation is one step toward zero from r: magnitude bits - 1.
  Value *neg = b_.CreateICmpSLT(bits, b_.getInt32(0));
  Value *mag_too_big = b_.CreateSelect(neg, above, below);
  Value *trunc = b_.CreateSelect(mag_too_big, b_.CreateSub(bits, b_.getInt32(1)), bits);
  Value *odd = b_.CreateOr(trunc, b_.getInt32(1));
  Value *nan_or_inf = b_.CreateFCmpUNO(b_.CreateFSub(d, d), f64c(0));
  Value *res = b_.CreateSelect(b_.CreateAnd(inexact, b_.CreateNot(nan_or_inf)), odd, bits);
  return b_.CreateBitCast(res, f32_);
}

Value *Emitter::from_double(Value *v, int32_t d) {
  switch (d) {
    case PK_DTYPE_F64:
      return v;
    case PK_DTYPE_F32:
      return b_.CreateFPTrunc(v, f32_);
    case PK_DTYPE_F16:
      return b_.CreateFPExt(b_.CreateFPTrunc(v, f16_), f32_);
    case PK_DTYPE_BF16:
      return round_bf16(round_odd_to_float(v, f64c(0)));
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      return round_fp8(v, d, false);
    default:
      return v;
  }
}

Value *Emitter::truth(Value *v, int32_t d) {
  if (d == PK_DTYPE_BOOL) return v;
  if (is_fp(d)) return b_.CreateFCmpUNE(v, fpc(v->getType(), 0.0));  // NaN is nonzero
  return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
}

Value *Emitter::convert(Value *v, int32_t from, int32_t to) {
  if (from == to) return v;
  if (is_complex_dtype(from) || is_complex_dtype(to)) return cx().convert(v, from, to);
  if (to == PK_DTYPE_BOOL) return truth(v, from);
  llvm::Type *ct = compute_type(to);
  if (!is_fp(from)) {  // bool or integer source
    if (!is_fp(to)) return b_.CreateIntCast(v, ct, !is_unsigned(from));
    if (is_fp8(to))  // every integer below 2^53 is exact in f64; beyond, fp8 overflows anyway
      return round_fp8(is_unsigned(from) ? b_.CreateUIToFP(v, f64_) : b_.CreateSIToFP(v, f64_), to,
                       to == PK_DTYPE_F8E4M3FN);
    if (to == PK_DTYPE_BF16 && (from == PK_DTYPE_I32 || from == PK_DTYPE_I64)) {
      // i32 is exact in f64; then one correct rounding through round-to-odd f32 (i64 is refused by check()).
      Value *dv = is_unsigned(from) ? b_.CreateUIToFP(v, f64_) : b_.CreateSIToFP(v, f64_);
      return from_double(dv, to);
    }
    Value *f = is_unsigned(from) ? b_.CreateUIToFP(v, ct) : b_.CreateSIToFP(v, ct);
    // Integers wider than 24 bits round once into f32; every such value overflows f16 anyway, and bf16 from
    // i8/u8/i16 is exact in f32, so one more rounding to the 16-bit format is the only one.
    return narrow(f, to);
  }
  if (!is_fp(to)) {  // float -> integer: truncate toward zero, saturate, NaN -> 0
    auto id = is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return b_.CreateIntrinsic(id, {ct, v->getType()}, {v});
  }
  // float -> float
  if (is_fp8(to)) return round_fp8(v, to, to == PK_DTYPE_F8E4M3FN);  // convert_element_type saturates e4m3fn
  if (to == PK_DTYPE_F64) return to_double(v);
  if (from == PK_DTYPE_F64) return from_double(v, to);
  // f16/bf16/f32 (all held in f32) to f32/f16/bf16: one rounding of an exact f32 value.
  return narrow(v, to);
}

Value *Emitter::constant(double value, int32_t d) {
  switch (d) {
    case PK_DTYPE_BOOL:
      return b_.getInt1(value != 0.0 || std::isnan(value));
    case PK_DTYPE_F64:
      return f64c(value);
    case PK_DTYPE_F32:
      return fpc(f32_, static_cast<double>(static_cast<float>(value)));
    case PK_DTYPE_F16:
      return fpc(f32_, pk::kit::half(value).to_double());
    case PK_DTYPE_BF16:
      return fpc(f32_, pk::kit::bfloat16(value).to_double());
    case PK_DTYPE_F8E4M3FN:  // saturates, as convert_element_type does
      return fpc(f32_, pk::kit::f8e4m3fn(value).to_double());
    case PK_DTYPE_F8E5M2:
      return fpc(f32_, pk::kit::f8e5m2(value).to_double());
    default:
      break;
  }
  // Integers: truncate toward zero and saturate, NaN -> 0 (convert_element_type's rule).
  llvm::Type *t = compute_type(d);
  const unsigned bits = t->getIntegerBitWidth();
  double lo = is_unsigned(d) ? 0.0 : -std::ldexp(1.0, static_cast<int>(bits) - 1);
  double hi =
      is_unsigned(d) ? std::ldexp(1.0, static_cast<int>(bits)) - 1.0 : std::ldexp(1.0, static_cast<int>(bits) - 1);
  if (std::isnan(value)) return llvm::ConstantInt::get(t, 0);
  double tv = std::trunc(value);
  if (tv <= lo) return llvm::ConstantInt::get(t, static_cast<uint64_t>(static_cast<int64_t>(lo)));
  if (tv >= hi) {
    // hi is 2^(bits-1) for signed (not representable): the maximum is hi - 1.
    if (is_unsigned(d)) return llvm::ConstantInt::get(t, static_cast<uint64_t>(hi));
    return llvm::ConstantInt::get(t, llvm::APInt::getSignedMaxValue(bits));
  }
  return llvm::ConstantInt::get(t, static_cast<uint64_t>(static_cast<int64_t>(tv)), true);
}

llvm::Function *Emitter::build_item() {
  std::vector<llvm::Type *> types = param_types();
  types.push_back(i64_);  // work item j
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "pk_item", m_);
  f->addFnAttr(llvm::Attribute::AlwaysInline);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  args_.clear();
  shape_.clear();
  extra_.clear();
  strides_.assign(nargs_, {});
  auto it = f->arg_begin();
  for (int k = 0; k < nargs_; ++k, ++it) {
    // Arguments never overlap (the runtime rejects output/input overlap): tell the vectorizer.
    f->addParamAttr(k, llvm::Attribute::NoAlias);
    args_.push_back(&*it);
  }
  n_ = &*it++;
  cols_ = &*it++;
  for (int d = 0; d < rank_; ++d) shape_.push_back(&*it++);
  for (int k = 0; k < nargs_; ++k)
    for (int d = 0; d < rank_; ++d) strides_[k].push_back(&*it++);
  for (uint32_t e = 0; e < r_.num_extra; ++e) extra_.push_back(&*it++);
  Value *j = &*it;
  auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  b_.SetInsertPoint(entry);
  if (r_.reduces()) {
    if (is_line_op(r_.nodes[0].op_id))
      build_line(j);
    else
      build_rows(j);
  } else {
    element(j);
  }
  b_.CreateRetVoid();
  return f;
}

llvm::Function *Emitter::build_body(llvm::Function *item) {
  std::vector<llvm::Type *> types = param_types();
  types.insert(types.end(), 4, i32_);  // tid, ntid, ctaid, nctaid
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "pk_body", m_);
  f->addFnAttr(llvm::Attribute::AlwaysInline);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  std::vector<Value *> params;
  auto it = f->arg_begin();
  for (int k = 0; k < nargs_ + nscalars_; ++k, ++it) params.push_back(&*it);
  Value *tid = &*it++, *ntid = &*it++, *ctaid = &*it++, *nctaid = &*it;
  Value *n = params[nargs_];
  auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  auto *loop = llvm::BasicBlock::Create(ctx_, "grid_stride", f);
  auto *exit = llvm::BasicBlock::Create(ctx_, "exit", f);
  b_.SetInsertPoint(entry);
  // Global thread index and grid size in i64: n may exceed 2^31.
  Value *gid =
      b_.CreateAdd(b_.CreateMul(b_.CreateZExt(ctaid, i64_), b_.CreateZExt(ntid, i64_)), b_.CreateZExt(tid, i64_));
  Value *stride = b_.CreateMul(b_.CreateZExt(ntid, i64_), b_.CreateZExt(nctaid, i64_));
  b_.CreateCondBr(b_.CreateICmpSLT(gid, n), loop, exit);
  b_.SetInsertPoint(loop);
  auto *j = b_.CreatePHI(i64_, 2);
  j->addIncoming(gid, entry);
  std::vector<Value *> call_args = params;
  call_args.push_back(j);
  b_.CreateCall(item, call_args);
  Value *jn = b_.CreateAdd(j, stride);
  j->addIncoming(jn, loop);
  b_.CreateCondBr(b_.CreateICmpSLT(jn, n), loop, exit);
  b_.SetInsertPoint(exit);
  b_.CreateRetVoid();
  return f;
}

void Emitter::build_nvptx_kernel(llvm::Function *body, const std::string &name) {
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), param_types(), false);
  auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  for (int k = 0; k < nargs_; ++k) f->addParamAttr(k, llvm::Attribute::NoAlias);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
  std::vector<Value *> args;
  for (auto &a : f->args()) args.push_back(&a);
  args.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {}));
  args.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x, {}, {}));
  args.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}, {}));
  args.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, {}, {}));
  b_.CreateCall(body, args);
  b_.CreateRetVoid();
  llvm::NamedMDNode *md = m_.getOrInsertNamedMetadata("nvvm.annotations");
  llvm::Metadata *ops[] = {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx_, "kernel"),
                           llvm::ConstantAsMetadata::get(b_.getInt32(1))};
  md->addOperand(llvm::MDNode::get(ctx_, ops));
}

// Loads the kernel parameters from a kernelParams-style array (void **: one pointer per parameter value).
static std::vector<Value *> load_params(llvm::IRBuilder<> &b, Value *params, int nargs, int nscalars) {
  std::vector<Value *> out;
  llvm::Type *ptr = b.getPtrTy();
  for (int k = 0; k < nargs + nscalars; ++k) {
    Value *slot = b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, params, static_cast<uint64_t>(k)));
    out.push_back(b.CreateLoad(k < nargs ? ptr : static_cast<llvm::Type *>(b.getInt64Ty()), slot));
  }
  return out;
}

void Emitter::build_emu_entry(llvm::Function *body, const std::string &name) {
  // void entry(void **params, u32 grid, u32 block): every (block, thread) pair of the grid, in order. Threads
  // of the generated kernels never communicate, so a sequential order is one legal schedule.
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr_, i32_, i32_}, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
  Value *params = f->getArg(0), *grid = f->getArg(1), *block = f->getArg(2);
  auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  auto *outer = llvm::BasicBlock::Create(ctx_, "blocks", f);
  auto *inner = llvm::BasicBlock::Create(ctx_, "threads", f);
  auto *outer_latch = llvm::BasicBlock::Create(ctx_, "next_block", f);
  auto *exit = llvm::BasicBlock::Create(ctx_, "exit", f);
  b_.SetInsertPoint(entry);
  std::vector<Value *> p = load_params(b_, params, nargs_, nscalars_);
  Value *any = b_.CreateAnd(b_.CreateICmpUGT(grid, b_.getInt32(0)), b_.CreateICmpUGT(block, b_.getInt32(0)));
  b_.CreateCondBr(any, outer, exit);
  b_.SetInsertPoint(outer);
  auto *bid = b_.CreatePHI(i32_, 2);
  bid->addIncoming(b_.getInt32(0), entry);
  b_.CreateBr(inner);
  b_.SetInsertPoint(inner);
  auto *tid = b_.CreatePHI(i32_, 2);
  tid->addIncoming(b_.getInt32(0), outer);
  std::vector<Value *> args = p;
  args.push_back(tid);
  args.push_back(block);
  args.push_back(bid);
  args.push_back(grid);
  b_.CreateCall(body, args);
  Value *tn = b_.CreateAdd(tid, b_.getInt32(1));
  tid->addIncoming(tn, inner);
  b_.CreateCondBr(b_.CreateICmpULT(tn, block), inner, outer_latch);
  b_.SetInsertPoint(outer_latch);
  Value *bn = b_.CreateAdd(bid, b_.getInt32(1));
  bid->addIncoming(bn, outer_latch);
  b_.CreateCondBr(b_.CreateICmpULT(bn, grid), outer, exit);
  b_.SetInsertPoint(exit);
  b_.CreateRetVoid();
}

void Emitter::build_cpu_entry(llvm::Function *item, const std::string &name, bool streaming) {
  // void entry(void **params, i64 begin, i64 end): plain loops the vectorizer can widen.
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr_, i64_, i64_}, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
  Value *params = f->getArg(0), *begin = f->getArg(1), *end = f->getArg(2);
  auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  auto *exit = llvm::BasicBlock::Create(ctx_, "exit", f);
  b_.SetInsertPoint(entry);
  std::vector<Value *> p = load_params(b_, params, nargs_, nscalars_);
  // Items [lo, hi) as one loop, entered from the current block.
  auto items = [&](Value *lo, Value *hi, llvm::BasicBlock *next, const char *label) {
    auto *loop = llvm::BasicBlock::Create(ctx_, label, f);
    llvm::BasicBlock *from = b_.GetInsertBlock();
    b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), loop, next);
    b_.SetInsertPoint(loop);
    auto *j = b_.CreatePHI(i64_, 2);
    j->addIncoming(lo, from);
    std::vector<Value *> args = p;
    args.push_back(j);
    b_.CreateCall(item, args);
    Value *jn = b_.CreateAdd(j, i64c(1));
    j->addIncoming(jn, loop);
    b_.CreateCondBr(b_.CreateICmpSLT(jn, hi), loop, next);
  };
  if (!streaming || r_.reduces() || r_.outputs.empty()) {
    items(begin, end, exit, "items");
  } else {
    // Non-temporal vector stores need aligned addresses: peel items until the first output is 64-byte aligned
    // (a cache line, which also covers 32-byte AVX stores), tell the optimizer so, then the main loop. An output
    // not aligned to its own element size cannot get there: it takes the plain loop.
    const uint32_t out0 = r_.outputs[0];
    const int64_t es = static_cast<int64_t>(pk::meta::dtype_size(r_.dtypes[out0]));
    Value *out = p[r_.inputs.size()];
    Value *addr = b_.CreateAdd(b_.CreatePtrToInt(out, i64_), b_.CreateMul(begin, i64c(es)));
    Value *elem_aligned = b_.CreateICmpEQ(b_.CreateAnd(addr, i64c(es - 1)), i64c(0));
    Value *to_line = b_.CreateAnd(b_.CreateSub(i64c(0), addr), i64c(63));
    Value *peel_end = b_.CreateAdd(begin, b_.CreateUDiv(to_line, i64c(es)));
    peel_end = b_.CreateSelect(b_.CreateICmpSLT(peel_end, end), peel_end, end);
    auto *peel = llvm::BasicBlock::Create(ctx_, "peel", f);
    auto *plain = llvm::BasicBlock::Create(ctx_, "plain", f);
    auto *aligned = llvm::BasicBlock::Create(ctx_, "aligned", f);
    auto *main = llvm::BasicBlock::Create(ctx_, "main", f);
    b_.CreateCondBr(elem_aligned, peel, plain);
    b_.SetInsertPoint(plain);
    items(begin, end, exit, "items");
    b_.SetInsertPoint(peel);
    items(begin, peel_end, aligned, "peeled_items");
    b_.SetInsertPoint(aligned);
    b_.CreateCondBr(b_.CreateICmpSLT(peel_end, end), main, exit);
    b_.SetInsertPoint(main);
    // Stated on the output pointer itself (its element peel_end is aligned): the alignment pass rewrites the
    // accesses derived from the pointer an assumption names, and the loop's stores derive from `out`.
    b_.CreateAlignmentAssumption(m_.getDataLayout(), out, 64, b_.CreateMul(peel_end, i64c(-es)));
    items(peel_end, end, exit, "aligned_items");
  }
  b_.SetInsertPoint(exit);
  b_.CreateRetVoid();
}

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext &ctx, const KernelSpec &spec, Target target,
                                           const std::string &entry) {
  auto m = std::make_unique<llvm::Module>("primkit_kernel", ctx);
  Emitter e(ctx, *m, spec, target);
  llvm::Function *item = e.build_item();
  switch (target) {
    case Target::nvptx:
      e.build_nvptx_kernel(e.build_body(item), entry);
      break;
    case Target::emu:
      e.build_emu_entry(e.build_body(item), entry);
      break;
    case Target::cpu:
    case Target::cpu_streaming:
      e.build_cpu_entry(item, entry, target == Target::cpu_streaming);
      break;
  }
  e.link_devmath();
  return m;
}

}  // namespace pk::codegen::detail
