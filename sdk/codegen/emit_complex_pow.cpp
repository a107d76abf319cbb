// emit_complex_pow.cpp — complex pow in the kernel generator (see emit_complex.hpp): c128 a^b through log a,
// b log a and the phase in double-double, the exact fixed-point path where b log a is huge, and c64 a^b, which
// takes those paths where f64 alone would not hold the phase.
#include "emit_complex.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include "primkit/primkit.h"
#include "primkit/special_constants.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

namespace pk::codegen::detail {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

using llvm::Value;

// --- c128 pow: exp(b log a) with log a, the product and the phase in double-double (the OpenCL backend's
// algorithm). The result's relative error is about the absolute error of w = b log a, so w must be good to
// ~2^-56 absolutely, which double alone (whose w errs by |w| 2^-53) misses for every |w| above a few.

// log a and e^w in double-double are the device math's (sdk/devmath/complex.h, the OpenCL backend's too):
// pk_dm_clog_dd_parts writes log a's two double-doubles, pk_dm_cexp_dd rounds each part of e^(wr + i wi) once.
void ComplexEmitter::clog_dd(Value *x, Value *y, DD &re_out, DD &im_out) {
  const std::vector<Value *> p = m_.devmath_parts("pk_dm_clog_dd_parts", {x, y}, 4);
  re_out = {p[0], p[1]};
  im_out = {p[2], p[3]};
}
Value *ComplexEmitter::cexp_dd(DD wr, DD wi) {
  const std::vector<Value *> p = m_.devmath_parts("pk_dm_cexp_dd", {wr.hi, wr.lo, wi.hi, wi.lo}, 2);
  return pair(p[0], p[1]);
}

// c128 a^b (a, x: (f64, f64) pairs) with cpow's cases. The oracle's w = b log a is wider than f64: no product of
// finite parts overflows there, so a huge b is scaled by 2^-kb on the way. Non-finite operands and a = 0: w with
// Annex G's recovery, then cexp's special values. Otherwise log a, w and the phase in double-double; where w's
// real part is beyond exp's range the result is 0 or a complex infinity whatever the phase; where |Im w| >= 2^26 or
// Re w's products cancel, the exact path (cpow_exact).
Value *ComplexEmitter::cpow128(Value *a, Value *x) {
  Value *ar = re(a), *ai = im(a), *br = re(x), *bi = im(x);
  Value *zero = d(0.0);
  Value *abr = sel(is_finite(br), fabs(br), zero), *abi = sel(is_finite(bi), fabs(bi), zero);
  Value *bm = sel(b_.CreateFCmpOGT(abr, abi), abr, abi);
  Value *kb =
      sel(b_.CreateFCmpOGT(bm, d(0x1p900)), exponent(sel(b_.CreateFCmpOGT(bm, zero), bm, d(1.0))), b_.getInt64(0));
  Value *a_zero = b_.CreateAnd(b_.CreateFCmpOEQ(ar, zero), b_.CreateFCmpOEQ(ai, zero));
  Value *a_fin = b_.CreateAnd(is_finite(ar), is_finite(ai));
  Value *fin = b_.CreateAnd(a_fin, b_.CreateAnd(is_finite(br), is_finite(bi)));
  Value *r = branch(
      b_.CreateOr(b_.CreateNot(fin), a_zero),
      [&]() -> std::vector<Value *> {
        Value *l = clog(a);
        Value *lr = re(l), *li = im(l);
        // Parts of log a below f64's range are not 0 in the oracle: an infinite b part times them is infinite,
        // not NaN. Their signs are those of y (arg) and of |a| - 1 (> 0: |a| = 1 only exactly).
        li = sel(b_.CreateAnd(a_fin, b_.CreateAnd(b_.CreateFCmpOEQ(li, zero), b_.CreateFCmpONE(ai, zero))),
                 copysign(d(0x1p-1074), ai), li);
        lr =
            sel(b_.CreateAnd(a_fin, b_.CreateAnd(b_.CreateFCmpOEQ(lr, zero),
                                                 b_.CreateAnd(b_.CreateFCmpONE(ar, zero), b_.CreateFCmpONE(ai, zero)))),
                d(0x1p-1074), lr);
        Value *w = mul_g(br, bi, lr, li, kb);
        // Back to w: finite values beyond f64's range stay finite (the largest double): exp gives the same 0 or
        // infinity, and the phase is arbitrary in both.
        auto back = [&](Value *v) {
          Value *s = scale(v, kb);
          return sel(is_finite(v), sel(is_inf(s), copysign(d(std::numeric_limits<double>::max()), v), s), v);
        };
        return {cexp(pair(back(re(w)), back(im(w))))};
      },
      [&]() -> std::vector<Value *> {
        Value *bx = scale(br, b_.CreateNeg(kb)), *by = scale(bi, b_.CreateNeg(kb));
        DD lr, li;
        clog_dd(ar, ai, lr, li);
        DD wr = dd_sub(dd_mul_d(lr, bx), dd_mul_d(li, by));
        DD wi = dd_add(dd_mul_d(li, bx), dd_mul_d(lr, by));
        // Beyond |Im w| = 2^26 the phase, and where Re w's two products (each good to ~2^-90 of itself) cancel,
        // Re w, need the exact path.
        Value *mb = sel(b_.CreateFCmpOGT(fabs(bx), fabs(by)), fabs(bx), fabs(by));
        Value *ml = sel(b_.CreateFCmpOGT(fabs(lr.hi), fabs(li.hi)), fabs(lr.hi), fabs(li.hi));
        Value *terms = scale(b_.CreateFMul(mb, ml), kb);
        Value *cancel = b_.CreateAnd(
            b_.CreateFCmpOGE(terms, d(0x1p26)),
            b_.CreateFCmpOLE(scale(fabs(wr.hi), kb), b_.CreateFAdd(d(0x1p12), b_.CreateFMul(terms, d(0x1p-90)))));
        Value *exact = b_.CreateOr(b_.CreateFCmpOGE(scale(fabs(wi.hi), kb), d(0x1p26)), cancel);
        return branch(
            exact, [&]() -> std::vector<Value *> { return {cpow_exact(a, x)}; },
            [&]() -> std::vector<Value *> {
              Value *scaled = b_.CreateICmpSGT(kb, b_.getInt64(0));
              Value *rehi = scale(wr.hi, kb);
              Value *under = b_.CreateAnd(scaled, b_.CreateFCmpOLT(rehi, d(-746.0)));
              Value *over = b_.CreateAnd(scaled, b_.CreateFCmpOGT(rehi, d(710.0)));
              wr = {sel(scaled, rehi, wr.hi), sel(scaled, scale(wr.lo, kb), wr.lo)};
              wi = {sel(scaled, scale(wi.hi, kb), wi.hi), sel(scaled, scale(wi.lo, kb), wi.lo)};
              Value *v = cexp_dd(wr, wi);
              v = sel(under, pair(zero, zero), v);
              return {sel(over, pair(d(kInf), d(kInf)), v)};
            });
      })[0];
  Value *b_zero = b_.CreateAnd(b_.CreateFCmpOEQ(br, zero), b_.CreateFCmpOEQ(bi, zero));
  Value *pos_real = b_.CreateAnd(b_.CreateFCmpOEQ(bi, zero), b_.CreateFCmpOGT(br, zero));
  r = sel(b_.CreateAnd(a_zero, pos_real), pair(zero, zero), r);
  return sel(b_zero, pair(d(1.0), zero), r);
}

// --- pow's exact path where b log a is huge (the OpenCL backend's pk_cpow_exact). Beyond |b log a| ~ 2^26
// double-double no longer holds the phase Im(b log a) mod 2 pi (its error is |b log a| 2^-104 radians before the
// reduction): log a and b log a are then computed in fixed point, in 32-bit words (least significant first) with
// fl words below the point and two's complement signs, at |log2 |b|| + 110 bits below the point; the phase is
// taken as a fraction of a turn (b log a / (2 pi), modulo 1), and Re(b log a) exactly, however its two products
// cancel. Up to 36 words below the point (|b| near 2^1024), so each helper is a function of its own in the module
// (internal, not inlined; its loops stay loops and its word arrays are stack arrays of at most kWords words):
// the code stays small, and only the few elements with such a b call it.
class BigNumEmitter {
 public:
  explicit BigNumEmitter(ComplexEmitter &c)
      : c_(c),
        b_(c.b_),
        ctx_(c.b_.getContext()),
        i32_(b_.getInt32Ty()),
        i64_(b_.getInt64Ty()),
        f64_(c.f64_),
        ptr_(b_.getPtrTy()) {}

  // a^b through the module's exact-path function (built on first use).
  Value *cpow_exact(Value *a, Value *x) {
    auto *vt = llvm::FixedVectorType::get(f64_, 2);
    llvm::Function *f = fn("pk_cpow_exact", vt, {f64_, f64_, f64_, f64_}, [&](llvm::Function *g) {
      Value *ar = g->getArg(0), *ai = g->getArg(1), *br = g->getArg(2), *bi = g->getArg(3);
      Value *lr = arr(), *li = arr(), *cc = arr(), *wl = arr(), *wa = arr(), *bx = arr(), *by = arr(), *p = arr(),
            *q = arr();
      Value *bm = c_.sel(b_.CreateFCmpOGT(c_.fabs(br), c_.fabs(bi)), c_.fabs(br), c_.fabs(bi));
      Value *eb = b_.CreateTrunc(b_.CreateAdd(c_.exponent(bm), b_.getInt64(1)), i32_);
      eb = c_.sel(b_.CreateICmpSLT(eb, k(0)), k(0), eb);
      Value *fl = b_.CreateSDiv(b_.CreateAdd(eb, k(110 + 31)), k(32));
      Value *n = b_.CreateAdd(fl, k(1));
      Value *nw = b_.CreateAdd(b_.CreateAdd(fl, b_.CreateSDiv(b_.CreateAdd(eb, k(12)), k(32))), k(2));
      clog(lr, li, ar, ai, n, fl);
      from_double(bx, br, nw, fl);
      from_double(by, bi, nw, fl);
      // Re(b log a) = bx log|a| - by arg a
      widen(wl, lr, n, nw);
      widen(wa, li, n, nw);
      mul(p, bx, wl, nw, fl);
      mul(q, by, wa, nw, fl);
      sub(p, p, q, nw);
      Value *neg = negative(p, nw);
      Value *fill = c_.sel(neg, k(-1), k(0));
      Value *big = var(b_.getInt1Ty(), b_.getFalse());  // |Re| >= 2^32: exp gives 0 or infinity whatever the phase
      loop(b_.CreateAdd(fl, k(1)), nw,
           [&](Value *i) { set(big, b_.CreateOr(get(big), b_.CreateICmpNE(word(p, i), fill))); });
      ComplexEmitter::DD pr = to_dd(p, nw, fl);
      Value *bg = get(big);
      ComplexEmitter::DD wr = {c_.sel(bg, c_.sel(neg, c_.d(-0x1p40), c_.d(0x1p40)), pr.hi),
                               c_.sel(bg, c_.d(0.0), pr.lo)};
      // Im(b log a) / (2 pi) = bx arg a / (2 pi) + by log|a| / (2 pi); the fraction words are the turn.
      constant(cc, table("pk_bn_inv_2pi", pk::kit::special::kInvTwoPiFraction), n, fl);
      mul(p, li, cc, n, fl);
      widen(wa, p, n, nw);
      mul(p, lr, cc, n, fl);
      widen(wl, p, n, nw);
      mul(p, bx, wa, nw, fl);
      mul(q, by, wl, nw, fl);
      add(p, p, q, nw);
      zero(q, nw);
      copy(q, p, fl);
      ComplexEmitter::DD turn = to_dd(q, nw, fl);
      ComplexEmitter::DD tm = c_.dd_add_d(turn, c_.d(-1.0));
      Value *up = b_.CreateFCmpOGE(turn.hi, c_.d(0.5));
      turn = {c_.sel(up, tm.hi, turn.hi), c_.sel(up, tm.lo, turn.lo)};
      ComplexEmitter::DD phase = c_.dd_mul(turn, {c_.d(6.283185307179586), c_.d(2.4492935982947064e-16)});
      b_.CreateRet(c_.cexp_dd(wr, phase));
    });
    return b_.CreateCall(f, {c_.re(a), c_.im(a), c_.re(x), c_.im(x)});
  }

 private:
  static constexpr int kWords = 72;
  using Body = std::function<void(llvm::Function *)>;

  // The module's function `name`, built by `body` (which emits its return) on first use.
  llvm::Function *fn(const char *name, llvm::Type *ret, const std::vector<llvm::Type *> &params, const Body &body) {
    llvm::Module *m = b_.GetInsertBlock()->getModule();
    if (llvm::Function *f = m->getFunction(name)) return f;
    auto *f =
        llvm::Function::Create(llvm::FunctionType::get(ret, params, false), llvm::Function::InternalLinkage, name, m);
    f->addFnAttr(llvm::Attribute::NoInline);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
    body(f);
    return f;
  }
  llvm::Function *proc(const char *name, const std::vector<llvm::Type *> &params, const Body &body) {
    return fn(name, b_.getVoidTy(), params, [&](llvm::Function *f) {
      body(f);
      b_.CreateRetVoid();
    });
  }
  // A constant word table (most significant first) in the module.
  Value *table(const char *name, const std::uint32_t (&words)[40]) {
    llvm::Module *m = b_.GetInsertBlock()->getModule();
    if (llvm::GlobalVariable *g = m->getGlobalVariable(name, true)) return g;
    auto *init = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<std::uint32_t>(words));
    return new llvm::GlobalVariable(*m, init->getType(), true, llvm::GlobalValue::InternalLinkage, init, name);
  }

  Value *k(int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }
  // Stack storage in the current function's entry block: a word array, or a variable (set to init here).
  Value *arr(int words = kWords) {
    llvm::BasicBlock &entry = b_.GetInsertBlock()->getParent()->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
    return eb.CreateAlloca(llvm::ArrayType::get(i32_, static_cast<uint64_t>(words)));
  }
  Value *var(llvm::Type *t, Value *init) {
    llvm::BasicBlock &entry = b_.GetInsertBlock()->getParent()->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
    Value *v = eb.CreateAlloca(t);
    b_.CreateStore(init, v);
    return v;
  }
  Value *get(Value *v) { return b_.CreateLoad(llvm::cast<llvm::AllocaInst>(v)->getAllocatedType(), v); }
  void set(Value *v, Value *x) { b_.CreateStore(x, v); }
  Value *word(Value *a, Value *i) { return b_.CreateLoad(i32_, b_.CreateGEP(i32_, a, i)); }
  void put(Value *a, Value *i, Value *x) { b_.CreateStore(x, b_.CreateGEP(i32_, a, i)); }
  Value *wide(Value *w) { return b_.CreateZExt(w, i64_); }
  Value *narrow(Value *c) { return b_.CreateTrunc(c, i32_); }
  Value *lt(Value *x, Value *y) { return b_.CreateICmpSLT(x, y); }
  Value *min(Value *x, Value *y) { return c_.sel(lt(x, y), x, y); }
  // i = from .. to - 1 (i32), an IR loop.
  void loop(Value *from, Value *to, const std::function<void(Value *)> &body) {
    llvm::Function *f = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    auto *head = llvm::BasicBlock::Create(ctx_, "bn_loop", f);
    auto *exit = llvm::BasicBlock::Create(ctx_, "bn_loop_end", f);
    b_.CreateCondBr(lt(from, to), head, exit);
    b_.SetInsertPoint(head);
    llvm::PHINode *i = b_.CreatePHI(i32_, 2);
    i->addIncoming(from, pre);
    body(i);
    Value *next = b_.CreateAdd(i, k(1));
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(lt(next, to), head, exit);
    b_.SetInsertPoint(exit);
  }
  void when(Value *cond, const std::function<void()> &body) {
    llvm::Function *f = b_.GetInsertBlock()->getParent();
    auto *then = llvm::BasicBlock::Create(ctx_, "bn_then", f);
    auto *join = llvm::BasicBlock::Create(ctx_, "bn_join", f);
    b_.CreateCondBr(cond, then, join);
    b_.SetInsertPoint(then);
    body();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }
  // The word a[i] where 0 <= i < n, else `fill` (nothing is read outside the array).
  Value *word_or(Value *a, Value *i, Value *n, Value *fill) {
    Value *in = b_.CreateAnd(b_.CreateICmpSGE(i, k(0)), lt(i, n));
    return c_.sel(in, word(a, c_.sel(in, i, k(0))), fill);
  }
  Value *negative(Value *a, Value *n) { return b_.CreateICmpSLT(word(a, b_.CreateSub(n, k(1))), k(0)); }
  Value *fill_of(Value *a, Value *n) { return c_.sel(negative(a, n), k(-1), k(0)); }

  // --- the word-array helpers, each a call of its function.
  void zero(Value *r, Value *n) {
    b_.CreateCall(
        proc("pk_bn_zero", {ptr_, i32_},
             [&](llvm::Function *f) { loop(k(0), f->getArg(1), [&](Value *i) { put(f->getArg(0), i, k(0)); }); }),
        {r, n});
  }
  void copy(Value *r, Value *a, Value *n) {
    b_.CreateCall(proc("pk_bn_copy", {ptr_, ptr_, i32_},
                       [&](llvm::Function *f) {
                         loop(k(0), f->getArg(2), [&](Value *i) { put(f->getArg(0), i, word(f->getArg(1), i)); });
                       }),
                  {r, a, n});
  }
  Value *is_zero(Value *a, Value *n) {
    llvm::Function *f = fn("pk_bn_is_zero", b_.getInt1Ty(), {ptr_, i32_}, [&](llvm::Function *g) {
      Value *any = var(i32_, k(0));
      loop(k(0), g->getArg(1), [&](Value *i) { set(any, b_.CreateOr(get(any), word(g->getArg(0), i))); });
      b_.CreateRet(b_.CreateICmpEQ(get(any), k(0)));
    });
    return b_.CreateCall(f, {a, n});
  }
  void negate(Value *r, Value *n) {
    b_.CreateCall(proc("pk_bn_negate", {ptr_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *c = var(i64_, b_.getInt64(1));
                         loop(k(0), f->getArg(1), [&](Value *i) {
                           Value *s = b_.CreateAdd(get(c), wide(b_.CreateNot(word(rr, i))));
                           put(rr, i, narrow(s));
                           set(c, b_.CreateLShr(s, 32));
                         });
                       }),
                  {r, n});
  }
  // r = a + b (flip 0) or a - b (flip 1), modulo the format. r may alias a or b.
  void add_sub(Value *r, Value *a, Value *x, Value *n, Value *flip) {
    b_.CreateCall(proc("pk_bn_add_sub", {ptr_, ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *fl = f->getArg(4), *c = var(i64_, wide(fl));
                         Value *mask = b_.CreateNeg(fl);
                         loop(k(0), f->getArg(3), [&](Value *i) {
                           Value *s = b_.CreateAdd(get(c), wide(word(f->getArg(1), i)));
                           s = b_.CreateAdd(s, wide(b_.CreateXor(word(f->getArg(2), i), mask)));
                           put(f->getArg(0), i, narrow(s));
                           set(c, b_.CreateLShr(s, 32));
                         });
                       }),
                  {r, a, x, n, flip});
  }
  void add(Value *r, Value *a, Value *x, Value *n) { add_sub(r, a, x, n, k(0)); }
  void sub(Value *r, Value *a, Value *x, Value *n) { add_sub(r, a, x, n, k(1)); }
  // r = a b, truncated to the format (the product's magnitude is truncated, then signed). r may alias a or b.
  void mul(Value *r, Value *a, Value *x, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_mul", {ptr_, ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *aa = f->getArg(1), *xx = f->getArg(2), *nn = f->getArg(3),
                               *ff = f->getArg(4);
                         Value *u = arr(), *v = arr(), *p = arr(2 * kWords);
                         Value *neg = b_.CreateXor(negative(aa, nn), negative(xx, nn));
                         Value *top = b_.CreateAdd(ff, nn);
                         copy(u, aa, nn);
                         copy(v, xx, nn);
                         when(negative(u, nn), [&] { negate(u, nn); });
                         when(negative(v, nn), [&] { negate(v, nn); });
                         loop(k(0), top, [&](Value *i) { put(p, i, k(0)); });
                         Value *c = var(i64_, b_.getInt64(0));
                         loop(k(0), nn, [&](Value *i) {
                           Value *ui = word(u, i);
                           when(b_.CreateICmpNE(ui, k(0)), [&] {
                             set(c, b_.getInt64(0));
                             Value *jn = min(nn, b_.CreateSub(top, i));
                             loop(k(0), jn, [&](Value *j) {
                               Value *ij = b_.CreateAdd(i, j);
                               Value *s = b_.CreateAdd(b_.CreateMul(wide(ui), wide(word(v, j))), wide(word(p, ij)));
                               s = b_.CreateAdd(s, get(c));
                               put(p, ij, narrow(s));
                               set(c, b_.CreateLShr(s, 32));
                             });
                             Value *end = b_.CreateAdd(i, jn);
                             when(lt(end, top), [&] { put(p, end, narrow(get(c))); });
                           });
                         });
                         loop(k(0), nn, [&](Value *i) { put(rr, i, word(p, b_.CreateAdd(ff, i))); });
                         when(neg, [&] { negate(rr, nn); });
                       }),
                  {r, a, x, n, fl});
  }
  // r = a m (two's complement times an unsigned word, modulo the format's range: exact while it fits).
  void mul_u32(Value *r, Value *a, Value *m, Value *n) {
    b_.CreateCall(proc("pk_bn_mul_u32", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *c = var(i64_, b_.getInt64(0));
                         loop(k(0), f->getArg(3), [&](Value *i) {
                           Value *s =
                               b_.CreateAdd(get(c), b_.CreateMul(wide(word(f->getArg(1), i)), wide(f->getArg(2))));
                           put(f->getArg(0), i, narrow(s));
                           set(c, b_.CreateLShr(s, 32));
                         });
                       }),
                  {r, a, m, n});
  }
  // r = a / d, truncated, for a >= 0.
  void div_u32(Value *r, Value *a, Value *dv, Value *n) {
    b_.CreateCall(proc("pk_bn_div_u32", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *nn = f->getArg(3), *dd = wide(f->getArg(2)), *rem = var(i64_, b_.getInt64(0));
                         loop(k(0), nn, [&](Value *t) {
                           Value *i = b_.CreateSub(b_.CreateSub(nn, k(1)), t);
                           Value *cur = b_.CreateOr(b_.CreateShl(get(rem), 32), wide(word(f->getArg(1), i)));
                           put(f->getArg(0), i, narrow(b_.CreateUDiv(cur, dd)));
                           set(rem, b_.CreateURem(cur, dd));
                         });
                       }),
                  {r, a, dv, n});
  }
  // r = floor(a / 2^s) and r = a 2^s, s >= 0. r may alias a.
  void shr(Value *r, Value *a, Value *s, Value *n) {
    b_.CreateCall(proc("pk_bn_shr", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *aa = f->getArg(1), *ss = f->getArg(2), *nn = f->getArg(3);
                         Value *fill = fill_of(aa, nn);
                         Value *q = b_.CreateLShr(ss, 5), *bits = b_.CreateAnd(ss, 31);
                         Value *back = b_.CreateAnd(b_.CreateSub(k(32), bits), 31);
                         loop(k(0), nn, [&](Value *i) {
                           Value *lo = word_or(aa, b_.CreateAdd(i, q), nn, fill);
                           Value *hi = word_or(aa, b_.CreateAdd(b_.CreateAdd(i, q), k(1)), nn, fill);
                           Value *v = b_.CreateOr(b_.CreateLShr(lo, bits), b_.CreateShl(hi, back));
                           put(f->getArg(0), i, c_.sel(b_.CreateICmpEQ(bits, k(0)), lo, v));
                         });
                       }),
                  {r, a, s, n});
  }
  void shl(Value *r, Value *a, Value *s, Value *n) {
    b_.CreateCall(proc("pk_bn_shl", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *aa = f->getArg(1), *ss = f->getArg(2), *nn = f->getArg(3);
                         Value *q = b_.CreateLShr(ss, 5), *bits = b_.CreateAnd(ss, 31);
                         Value *back = b_.CreateAnd(b_.CreateSub(k(32), bits), 31);
                         loop(k(0), nn, [&](Value *t) {
                           Value *i = b_.CreateSub(b_.CreateSub(nn, k(1)), t);
                           Value *hi = word_or(aa, b_.CreateSub(i, q), nn, k(0));
                           Value *lo = word_or(aa, b_.CreateSub(b_.CreateSub(i, q), k(1)), nn, k(0));
                           Value *v = b_.CreateOr(b_.CreateShl(hi, bits), b_.CreateLShr(lo, back));
                           put(f->getArg(0), i, c_.sel(b_.CreateICmpEQ(bits, k(0)), hi, v));
                         });
                       }),
                  {r, a, s, n});
  }
  // Sign extension from n to nw words.
  void widen(Value *r, Value *a, Value *n, Value *nw) {
    b_.CreateCall(proc("pk_bn_widen", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *fill = fill_of(f->getArg(1), f->getArg(2));
                         loop(k(0), f->getArg(3),
                              [&](Value *i) { put(f->getArg(0), i, word_or(f->getArg(1), i, f->getArg(2), fill)); });
                       }),
                  {r, a, n, nw});
  }
  // A finite double, exact down to the format's last bit (below it truncated towards zero).
  void from_double(Value *r, Value *v, Value *n, Value *fl) {
    b_.CreateCall(
        proc("pk_bn_from_double", {ptr_, f64_, i32_, i32_},
             [&](llvm::Function *f) {
               Value *rr = f->getArg(0), *vv = f->getArg(1), *nn = f->getArg(2), *ff = f->getArg(3);
               zero(rr, nn);
               when(b_.CreateFCmpONE(vv, c_.d(0.0)), [&] {
                 Value *av = c_.fabs(vv), *e = c_.exponent(av);  // |v| = mi 2^(e - 52), mi < 2^53
                 Value *mi = b_.CreateFPToUI(c_.scale(av, b_.CreateSub(b_.getInt64(52), e)), i64_);
                 Value *pos =
                     b_.CreateAdd(b_.CreateSub(e, b_.getInt64(52)), b_.CreateSExt(b_.CreateMul(ff, k(32)), i64_));
                 Value *under = b_.CreateICmpSLT(pos, b_.getInt64(0));
                 Value *drop = b_.CreateNeg(pos);
                 Value *shifted =
                     b_.CreateLShr(mi, c_.sel(b_.CreateICmpSGT(drop, b_.getInt64(63)), b_.getInt64(63), drop));
                 mi = c_.sel(under, c_.sel(b_.CreateICmpSGE(drop, b_.getInt64(64)), b_.getInt64(0), shifted), mi);
                 pos = c_.sel(under, b_.getInt64(0), pos);
                 Value *q = b_.CreateLShr(pos, 5), *bits = b_.CreateAnd(pos, 31);
                 Value *lo = b_.CreateShl(mi, bits);
                 Value *hi = c_.sel(b_.CreateICmpEQ(bits, b_.getInt64(0)), b_.getInt64(0),
                                    b_.CreateLShr(mi, b_.CreateAnd(b_.CreateSub(b_.getInt64(64), bits), 63)));
                 Value *n64 = b_.CreateSExt(nn, i64_);
                 Value *parts[3] = {narrow(lo), narrow(b_.CreateLShr(lo, 32)), narrow(hi)};
                 for (int t = 0; t < 3; ++t) {
                   Value *at = b_.CreateAdd(q, b_.getInt64(static_cast<uint64_t>(t)));
                   when(b_.CreateICmpSLT(at, n64), [&] { put(rr, narrow(at), parts[t]); });
                 }
                 when(b_.CreateFCmpOLT(vv, c_.d(0.0)), [&] { negate(rr, nn); });
               });
             }),
        {r, v, n, fl});
  }
  // The value as a double-double from its four leading words (finite: callers keep it below 2^1000).
  ComplexEmitter::DD to_dd(Value *a, Value *n, Value *fl) {
    auto *st = llvm::StructType::get(ctx_, {f64_, f64_});
    llvm::Function *f = fn("pk_bn_to_dd", st, {ptr_, i32_, i32_}, [&](llvm::Function *g) {
      Value *aa = g->getArg(0), *nn = g->getArg(1), *ff = g->getArg(2);
      Value *x = arr();
      copy(x, aa, nn);
      Value *neg = negative(x, nn);
      when(neg, [&] { negate(x, nn); });
      Value *top = var(i32_, k(0));  // the leading nonzero word (0 if none)
      loop(k(0), nn, [&](Value *i) { set(top, c_.sel(b_.CreateICmpNE(word(x, i), k(0)), i, get(top))); });
      Value *tp = get(top);
      ComplexEmitter::DD s = {c_.d(0.0), c_.d(0.0)};
      for (int t = 0; t < 4; ++t) {
        Value *i = b_.CreateSub(tp, k(t));
        Value *w = b_.CreateUIToFP(word_or(x, i, nn, k(0)), f64_);
        s = c_.dd_add_d(s, c_.scale(w, b_.CreateSExt(b_.CreateMul(b_.CreateSub(i, ff), k(32)), i64_)));
      }
      Value *hi = c_.sel(neg, b_.CreateFNeg(s.hi), s.hi), *lo = c_.sel(neg, b_.CreateFNeg(s.lo), s.lo);
      Value *out = b_.CreateInsertValue(llvm::PoisonValue::get(st), hi, {0});
      b_.CreateRet(b_.CreateInsertValue(out, lo, {1}));
    });
    Value *r = b_.CreateCall(f, {a, n, fl});
    return {b_.CreateExtractValue(r, {0}), b_.CreateExtractValue(r, {1})};
  }
  // A constant's fraction (a table of kit::special, most significant word first).
  void constant(Value *r, Value *t, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_const", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *ff = f->getArg(3);
                         zero(f->getArg(0), f->getArg(2));
                         loop(k(0), ff, [&](Value *j) {
                           put(f->getArg(0), b_.CreateSub(b_.CreateSub(ff, k(1)), j), word(f->getArg(1), j));
                         });
                       }),
                  {r, t, n, fl});
  }
  Value *add_unit(Value *a, Value *fl, int delta) {  // a += delta at the units word
    put(a, fl, b_.CreateAdd(word(a, fl), k(delta)));
    return a;
  }
  // r = 1 / d for d in [1, 8): Newton's r (2 - d r) from the double quotient, 53 bits doubling to beyond 1152.
  void recip(Value *r, Value *dv, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_recip", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *dd = f->getArg(1), *nn = f->getArg(2), *ff = f->getArg(3);
                         Value *e = arr(), *two = arr();
                         from_double(rr, b_.CreateFDiv(c_.d(1.0), to_dd(dd, nn, ff).hi), nn, ff);
                         zero(two, nn);
                         put(two, ff, k(2));
                         loop(k(0), k(6), [&](Value *) {
                           mul(e, dd, rr, nn, ff);
                           sub(e, two, e, nn);
                           mul(rr, rr, e, nn, ff);
                         });
                       }),
                  {r, dv, n, fl});
  }
  // r = sqrt(x) for x in [1, 4]: x y with y = 1 / sqrt(x) by Newton's y (3 - x y^2) / 2.
  void sqrt(Value *r, Value *x, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_sqrt", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *xx = f->getArg(1), *nn = f->getArg(2), *ff = f->getArg(3);
                         Value *y = arr(), *t = arr(), *three = arr();
                         Value *s = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, to_dd(xx, nn, ff).hi);
                         from_double(y, b_.CreateFDiv(c_.d(1.0), s), nn, ff);
                         zero(three, nn);
                         put(three, ff, k(3));
                         loop(k(0), k(6), [&](Value *) {
                           mul(t, y, y, nn, ff);
                           mul(t, t, xx, nn, ff);
                           sub(t, three, t, nn);
                           mul(y, y, t, nn, ff);
                           shr(y, y, k(1), nn);
                         });
                         mul(rr, xx, y, nn, ff);
                       }),
                  {r, x, n, fl});
  }
  // sum_k sign^k z^(2k+1) / (2k+1) for 0 <= z <= 1/3: atanh (alternate 0) or atan (alternate 1); the terms fall
  // by z^2 each until they vanish from the format.
  void odd_series(Value *r, Value *z, int alternate, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_odd_series", {ptr_, ptr_, i32_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *zz = f->getArg(1), *alt = f->getArg(2), *nn = f->getArg(3),
                               *ff = f->getArg(4);
                         Value *z2 = arr(), *p = arr(), *t = arr();
                         mul(z2, zz, zz, nn, ff);
                         copy(p, zz, nn);
                         copy(rr, zz, nn);
                         llvm::Function *g = b_.GetInsertBlock()->getParent();
                         llvm::BasicBlock *pre = b_.GetInsertBlock();
                         auto *head = llvm::BasicBlock::Create(ctx_, "bn_series", g);
                         auto *more = llvm::BasicBlock::Create(ctx_, "bn_term", g);
                         auto *exit = llvm::BasicBlock::Create(ctx_, "bn_series_end", g);
                         b_.CreateBr(head);
                         b_.SetInsertPoint(head);
                         llvm::PHINode *kk = b_.CreatePHI(i32_, 2);
                         kk->addIncoming(k(3), pre);
                         mul(p, p, z2, nn, ff);
                         b_.CreateCondBr(is_zero(p, nn), exit, more);
                         b_.SetInsertPoint(more);
                         div_u32(t, p, kk, nn);
                         Value *flip = b_.CreateAnd(alt, b_.CreateAnd(b_.CreateLShr(kk, 1), k(1)));
                         add_sub(rr, rr, t, nn, flip);
                         kk->addIncoming(b_.CreateAdd(kk, k(2)), b_.GetInsertBlock());
                         b_.CreateBr(head);
                         b_.SetInsertPoint(exit);
                       }),
                  {r, z, k(alternate), n, fl});
  }
  // log|a| and arg a of a finite nonzero a. With m = max(|x|, |y|) 2^-k in [1, 2): |a|^2 2^-2k = S in [1, 8),
  // exact (to the format), log|a| = (2k + j) ln2 / 2 + atanh(z), z = (s - 1) / (s + 1), s = S 2^-j in [1, 2).
  // arg a: atan of t = min / max, halved twice (t / (1 + sqrt(1 + t^2))) to below tan(pi / 16), then the octant.
  void clog(Value *lr, Value *li, Value *x, Value *y, Value *n, Value *fl) {
    Value *ln2 = table("pk_bn_ln2", pk::kit::special::kLn2Fraction);
    Value *pi4 = table("pk_bn_pi_4", pk::kit::special::kPiOver4Fraction);
    b_.CreateCall(proc("pk_bn_clog", {ptr_, ptr_, f64_, f64_, i32_, i32_, ptr_, ptr_},
                       [&](llvm::Function *f) {
                         Value *lr_ = f->getArg(0), *li_ = f->getArg(1), *xx = f->getArg(2), *yy = f->getArg(3),
                               *nn = f->getArg(4), *ff = f->getArg(5);
                         Value *X = arr(), *Y = arr(), *s = arr(), *t = arr(), *u = arr();
                         Value *ax = c_.fabs(xx), *ay = c_.fabs(yy);
                         Value *mx = c_.sel(b_.CreateFCmpOGT(ax, ay), ax, ay),
                               *mn = c_.sel(b_.CreateFCmpOGT(ax, ay), ay, ax);
                         Value *kx = c_.exponent(mx);
                         from_double(X, c_.scale(mx, b_.CreateNeg(kx)), nn, ff);
                         from_double(Y, c_.scale(mn, b_.CreateNeg(kx)), nn, ff);
                         mul(s, X, X, nn, ff);
                         mul(t, Y, Y, nn, ff);
                         add(s, s, t, nn);
                         Value *j = b_.CreateSub(
                             k(31), b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, word(s, ff), b_.getFalse()));
                         shr(s, s, j, nn);
                         copy(t, s, nn);
                         add_unit(t, ff, 1);   // s + 1
                         add_unit(s, ff, -1);  // s - 1
                         recip(u, t, nn, ff);
                         mul(t, s, u, nn, ff);
                         odd_series(lr_, t, 0, nn, ff);
                         Value *e = b_.CreateAdd(b_.CreateMul(narrow(kx), k(2)), j);
                         constant(u, f->getArg(6), nn, ff);
                         mul_u32(u, u, c_.sel(lt(e, k(0)), b_.CreateNeg(e), e), nn);
                         when(lt(e, k(0)), [&] { negate(u, nn); });
                         shr(u, u, k(1), nn);
                         add(lr_, lr_, u, nn);

                         recip(u, X, nn, ff);
                         mul(t, Y, u, nn, ff);
                         loop(k(0), k(2), [&](Value *) {
                           mul(u, t, t, nn, ff);
                           add_unit(u, ff, 1);
                           sqrt(s, u, nn, ff);
                           add_unit(s, ff, 1);
                           recip(u, s, nn, ff);
                           mul(t, t, u, nn, ff);
                         });
                         odd_series(li_, t, 1, nn, ff);
                         shl(li_, li_, k(2), nn);
                         constant(u, f->getArg(7), nn, ff);
                         when(b_.CreateFCmpOGT(ay, ax), [&] {  // pi/2 - atan
                           shl(u, u, k(1), nn);
                           sub(li_, u, li_, nn);
                           shr(u, u, k(1), nn);
                         });
                         when(b_.CreateFCmpOLT(xx, c_.d(0.0)), [&] {  // pi - that
                           shl(u, u, k(2), nn);
                           sub(li_, u, li_, nn);
                         });
                         when(b_.CreateICmpSLT(b_.CreateBitCast(yy, i64_), b_.getInt64(0)), [&] { negate(li_, nn); });
                       }),
                  {lr, li, x, y, n, fl, ln2, pi4});
  }

  ComplexEmitter &c_;
  llvm::IRBuilder<> &b_;
  llvm::LLVMContext &ctx_;
  llvm::Type *i32_, *i64_, *f64_, *ptr_;
};

Value *ComplexEmitter::cpow_exact(Value *a, Value *x) {
  return BigNumEmitter(*this).cpow_exact(a, x);
}

// c64 a^b: w = b log a in f64 holds the phase to the f32 result's accuracy up to |w| ~ 2^20; beyond, c128's
// double-double and exact paths.
Value *ComplexEmitter::cpow_c64(Value *a, Value *x) {
  Value *l = clog(a);
  Value *zero = d(0.0);
  Value *fin =
      b_.CreateAnd(b_.CreateAnd(is_finite(re(a)), is_finite(im(a))), b_.CreateAnd(is_finite(re(x)), is_finite(im(x))));
  Value *nonzero = b_.CreateOr(b_.CreateFCmpONE(re(a), zero), b_.CreateFCmpONE(im(a), zero));
  Value *mb = sel(b_.CreateFCmpOGT(fabs(re(x)), fabs(im(x))), fabs(re(x)), fabs(im(x)));
  Value *ml = sel(b_.CreateFCmpOGT(fabs(re(l)), fabs(im(l))), fabs(re(l)), fabs(im(l)));
  Value *huge = b_.CreateFCmpOGE(b_.CreateFMul(mb, ml), d(0x1p20));
  return branch(
      b_.CreateAnd(b_.CreateAnd(fin, nonzero), huge), [&]() -> std::vector<Value *> { return {cpow128(a, x)}; },
      [&]() -> std::vector<Value *> { return {cpow(a, x)}; })[0];
}

}  // namespace pk::codegen::detail
