// emit_math.cpp — the emitter's f64 math (see emit.cpp for the numerics): exp, log, the trigonometric and
// hyperbolic functions and their inverses, cbrt, hypot, pow, erf and erfc, double-double where f64 alone would
// not meet the op table's bounds.
#include "emit_internal.hpp"

#include <cmath>
#include <limits>

namespace pk::codegen::detail {

// -------------------------------------------------------------------------------------------- f64 math

// k (an integral f64, |k| < 2^51) as i64 without fptosi, which x86 before AVX-512 cannot vectorize: adding
// 1.5 * 2^52 puts k in the low mantissa bits; subtracting that constant's bits leaves k. Same value as fptosi.
Value *Emitter::int_of(Value *k) {
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  Value *bits = b_.CreateBitCast(b_.CreateFAdd(k, f64c(kMagic)), i64_);
  return b_.CreateSub(bits, i64c(0x4338000000000000ll));
}

Value *Emitter::pow2i(Value *k) {
  return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, i64c(1023)), 52), f64_);
}

// e^r for |r| <= ln2/2: Taylor to r^13 (truncation 4e-18 relative), Horner with fma.
Value *Emitter::exp_poly(Value *r) {
  double c[14];
  c[0] = 1.0;
  for (int i = 1; i < 14; ++i) c[i] = c[i - 1] / i;
  Value *p = f64c(c[13]);
  for (int i = 12; i >= 0; --i) p = intr(llvm::Intrinsic::fma, {p, r, f64c(c[i])});
  return p;
}

// e^r - 1 for |r| <= ln2/2 without cancellation: r + r^2 (1/2 + r/6 + ... r^12/14!).
Value *Emitter::expm1_poly(Value *r) {
  double c[15];
  c[0] = 1.0;
  for (int i = 1; i < 15; ++i) c[i] = c[i - 1] / i;
  Value *q = f64c(c[14]);
  for (int i = 13; i >= 2; --i) q = intr(llvm::Intrinsic::fma, {q, r, f64c(c[i])});
  return intr(llvm::Intrinsic::fma, {b_.CreateFMul(r, r), q, r});
}

Value *Emitter::exp_d(Value *x) {
  using namespace consts;
  // Clamp (NaN goes to the upper bound and is restored at the end); beyond the clamps the result is inf or 0.
  Value *xc = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(710.0)), x, f64c(710.0));
  xc = b_.CreateSelect(b_.CreateFCmpOGT(xc, f64c(-746.0)), xc, f64c(-746.0));
  Value *k = intr(llvm::Intrinsic::rint, {b_.CreateFMul(xc, f64c(kInvLn2))});
  Value *r = intr(llvm::Intrinsic::fma, {b_.CreateFNeg(k), f64c(kLn2Hi), xc});
  r = intr(llvm::Intrinsic::fma, {b_.CreateFNeg(k), f64c(kLn2Lo), r});
  Value *p = exp_poly(r);
  // 2^k in two factors so that k in [-1077, 1025] stays inside the normal exponent range of each.
  Value *ki = int_of(k);
  Value *k1 = b_.CreateAShr(ki, 1);
  Value *k2 = b_.CreateSub(ki, k1);
  Value *res = b_.CreateFMul(b_.CreateFMul(p, pow2i(k1)), pow2i(k2));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::exp2_d(Value *x) {
  using namespace consts;
  Value *xc = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(1025.0)), x, f64c(1025.0));
  xc = b_.CreateSelect(b_.CreateFCmpOGT(xc, f64c(-1077.0)), xc, f64c(-1077.0));
  Value *k = intr(llvm::Intrinsic::rint, {xc});
  Value *f = b_.CreateFSub(xc, k);  // exact, |f| <= 1/2
  // t = f * ln2 carried in two parts to keep the reduced argument accurate to ~2^-60.
  Value *t = intr(llvm::Intrinsic::fma, {f, f64c(kLn2Hi), b_.CreateFMul(f, f64c(kLn2Lo))});
  Value *p = exp_poly(t);
  Value *ki = int_of(k);
  Value *k1 = b_.CreateAShr(ki, 1);
  Value *k2 = b_.CreateSub(ki, k1);
  Value *res = b_.CreateFMul(b_.CreateFMul(p, pow2i(k1)), pow2i(k2));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::expm1_d(Value *x) {
  using namespace consts;
  // Main path valid for k in [-60, 1023]; below, the result is -1 to double precision; above 709 it is e^x.
  Value *xc = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(709.0)), x, f64c(709.0));
  xc = b_.CreateSelect(b_.CreateFCmpOGT(xc, f64c(-41.0)), xc, f64c(-41.0));
  Value *k = intr(llvm::Intrinsic::rint, {b_.CreateFMul(xc, f64c(kInvLn2))});
  Value *r = intr(llvm::Intrinsic::fma, {b_.CreateFNeg(k), f64c(kLn2Hi), xc});
  r = intr(llvm::Intrinsic::fma, {b_.CreateFNeg(k), f64c(kLn2Lo), r});
  Value *em = expm1_poly(r);
  Value *s = pow2i(int_of(k));
  // 2^k (1 + em) - 1 = 2^k em + (2^k - 1): no cancellation for k != 0, and exactly em for k == 0.
  Value *res = intr(llvm::Intrinsic::fma, {s, em, b_.CreateFSub(s, f64c(1.0))});
  res = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(-40.0)), f64c(-1.0), res);
  res = b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(709.0)), exp_d(x), res);
  res = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(0.0)), x, res);  // keeps -0
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

void Emitter::log_parts(Value *x, Value *&e, Value *&logm) {
  // Subnormals are scaled into the normal range first.
  Value *sub = b_.CreateFCmpOLT(x, f64c(0x1p-1022));
  Value *xs = b_.CreateSelect(sub, b_.CreateFMul(x, f64c(0x1p54)), x);
  Value *eadj = b_.CreateSelect(sub, i64c(-54), i64c(0));
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)) (fdlibm's split at 0x3fe6a09e).
  Value *bits = b_.CreateBitCast(xs, i64_);
  Value *ix = b_.CreateAdd(bits, i64c(static_cast<int64_t>(0x3ff0000000000000ull - 0x3fe6a09e00000000ull)));
  Value *ei = b_.CreateAdd(b_.CreateSub(b_.CreateAShr(ix, 52), i64c(1023)), eadj);
  Value *mbits = b_.CreateAdd(b_.CreateAnd(ix, i64c(0x000fffffffffffffll)), i64c(0x3fe6a09e00000000ll));
  Value *m = b_.CreateBitCast(mbits, f64_);
  Value *f = b_.CreateFSub(m, f64c(1.0));  // exact (Sterbenz)
  Value *s = b_.CreateFDiv(f, b_.CreateFAdd(f64c(2.0), f));
  Value *z = b_.CreateFMul(s, s);
  // R = sum_{k=1..11} 2 z^k / (2k + 1); log(1 + f) = 2 atanh(s) = f - s (f - R). z <= 0.0295 so the next term
  // is below 2^-60 relative.
  Value *q = f64c(2.0 / 23.0);
  for (int k = 10; k >= 1; --k) q = intr(llvm::Intrinsic::fma, {q, z, f64c(2.0 / (2 * k + 1))});
  Value *R = b_.CreateFMul(z, q);
  logm = b_.CreateFSub(f, b_.CreateFMul(s, b_.CreateFSub(f, R)));
  e = b_.CreateSIToFP(ei, f64_);
}

Value *Emitter::log_special(Value *x, Value *r) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(inf)), x, r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(0.0)), f64c(-inf), r);
  r = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(0.0)), f64c(nan), r);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, r);
}

Value *Emitter::log_d(Value *x) {
  using namespace consts;
  Value *e, *logm;
  log_parts(x, e, logm);
  Value *hi = b_.CreateFMul(e, f64c(kLn2Hi));  // exact
  Value *lo = intr(llvm::Intrinsic::fma, {e, f64c(kLn2Lo), logm});
  return log_special(x, b_.CreateFAdd(hi, lo));
}

Value *Emitter::log2_d(Value *x) {
  using namespace consts;
  Value *e, *logm;
  log_parts(x, e, logm);
  Value *t = intr(llvm::Intrinsic::fma, {logm, f64c(kLog2eHi), b_.CreateFMul(logm, f64c(kLog2eLo))});
  return log_special(x, b_.CreateFAdd(e, t));  // exact powers of two give exact results
}

Value *Emitter::tanh_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *t = expm1_d(b_.CreateFMul(a, f64c(-2.0)));  // in (-1, 0]
  Value *y = b_.CreateFDiv(b_.CreateFNeg(t), b_.CreateFAdd(t, f64c(2.0)));
  y = b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(22.0)), f64c(1.0), y);
  return intr(llvm::Intrinsic::copysign, {y, x});
}

// ------------------------------------------------------------------------- more f64 math (double-double)

namespace consts {
// Words of 2/pi after the binary point, most significant first, behind one zero word (Payne-Hanek reads a
// window that may start before the point).
const std::vector<uint64_t> kTwoOverPi = {
    0x0000000000000000ull, 0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull, 0xfe5163abdebbc561ull,
    0xb7246e3a424dd2e0ull, 0x06492eea09d1921cull, 0xfe1deb1cb129a73eull, 0xe88235f52ebb4484ull, 0xe99c7026b45f7e41ull,
    0x3991d639835339f4ull, 0x9c845f8bbdf9283bull, 0x1ff897ffde05980full, 0xef2f118b5a0a6d1full, 0x6d367ecf27cb09b7ull,
    0x4f463f669e5fea2dull, 0x7527bac7ebe5f17bull, 0x3d0739f78a5292eaull, 0x6bfb5fb11f8d5d08ull, 0x56033046fc7b6babull,
    0xf0cfbc209af4361dull, 0xa9e391615ee61b08ull,
};
// erfcx(0.75 + 0.5 j) as hi, lo for j = 0..10: the centres of erfc's Taylor tables.
constexpr double kErfcxAt[][2] = {
    {0x1.038d54ea3d834p-1, -0x1.ec2134d851665p-55}, {0x1.78a692138767ap-2, 0x1.4797400f19192p-63},
    {0x1.23cfc2f1dc7e0p-2, 0x1.3b1040eb318c2p-57},  {0x1.d94446d627932p-3, -0x1.a8198a8216449p-58},
    {0x1.8c9eb68ff27d7p-3, -0x1.bb4e763c64a35p-57}, {0x1.54a7a08d4bb45p-3, -0x1.6a0d91336bdc9p-61},
    {0x1.2a2af19c14930p-3, -0x1.fa04a06a33f29p-57}, {0x1.08e62ce8c89adp-3, -0x1.dc926b221fa47p-57},
    {0x1.dc603a3e77e9bp-4, -0x1.d4e9c037b2163p-59}, {0x1.b096face146fep-4, 0x1.97cf1d947d704p-59},
    {0x1.8c14049cd551ep-4, -0x1.060a6f657761dp-59}, {0x1.6d2f811bf7397p-4, 0x1.8187bba0d21bdp-58},
    {0x1.52b80d463c470p-4, -0x1.f2f9d2243f17bp-58}, {0x1.3bcc59a28358cp-4, 0x1.48de49928652ap-59},
    {0x1.27c2b4d2f8988p-4, -0x1.99408690b9f33p-59}, {0x1.1618fbc75f8a0p-4, 0x1.8e9014246ff9dp-60},
    {0x1.0669c59166c17p-4, 0x1.a9783bfcd417ap-59},  {0x1.f0c9d48847e15p-5, 0x1.5f456df8b85ffp-59},
    {0x1.d7947dc6e8dafp-5, -0x1.248cfc5e9d1afp-60}, {0x1.c0cb9b2935b92p-5, -0x1.d3d9c0c529614p-59},
    {0x1.ac1a2600f9687p-5, -0x1.193568f0788efp-59}, {0x1.9939e4f6ef547p-5, 0x1.94087b6ee7d68p-64},
};
}  // namespace consts

void Emitter::two_sum(Value *a, Value *b, Value *&s, Value *&e) {
  s = b_.CreateFAdd(a, b);
  Value *bv = b_.CreateFSub(s, a);
  e = b_.CreateFAdd(b_.CreateFSub(a, b_.CreateFSub(s, bv)), b_.CreateFSub(b, bv));
}

void Emitter::fast_two_sum(Value *a, Value *b, Value *&s, Value *&e) {
  s = b_.CreateFAdd(a, b);
  e = b_.CreateFSub(b, b_.CreateFSub(s, a));
}

Value *Emitter::horner(Value *x, const std::vector<double> &c) {
  Value *p = f64c(c.back());
  for (size_t i = c.size() - 1; i-- > 0;) p = fma(p, x, f64c(c[i]));
  return p;
}

Value *Emitter::sign_neg(Value *x) {
  return b_.CreateICmpSLT(b_.CreateBitCast(x, i64_), i64c(0));
}

// A constant table in the module (NVPTX places it in global memory), created once per name.
Value *Emitter::table(const char *name, const std::vector<uint64_t> &words) {
  if (llvm::GlobalVariable *g = m_.getGlobalVariable(name, true)) return g;
  auto *init = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<uint64_t>(words));
  return new llvm::GlobalVariable(m_, init->getType(), true, llvm::GlobalValue::InternalLinkage, init, name);
}

// log(x) = e ln2 + log(1 + f), f = m - 1 exact, m in [sqrt(1/2), sqrt(2)); log(1 + f) = 2 atanh(s) with
// s = f / (2 + f) carried in double-double and its first two series terms in double-double, the rest (below
// 4e-4 of the result) in f64: about 2^-64 relative, which pow needs (its error grows with |y log x|).
Value *Emitter::log_dd(Value *x, Value *&lo) {
  using namespace consts;
  Value *sub = b_.CreateFCmpOLT(x, f64c(0x1p-1022));
  Value *xs = b_.CreateSelect(sub, b_.CreateFMul(x, f64c(0x1p54)), x);
  Value *eadj = b_.CreateSelect(sub, i64c(-54), i64c(0));
  Value *bits = b_.CreateBitCast(xs, i64_);
  Value *ix = b_.CreateAdd(bits, i64c(static_cast<int64_t>(0x3ff0000000000000ull - 0x3fe6a09e00000000ull)));
  Value *ei = b_.CreateAdd(b_.CreateSub(b_.CreateAShr(ix, 52), i64c(1023)), eadj);
  Value *m =
      b_.CreateBitCast(b_.CreateAdd(b_.CreateAnd(ix, i64c(0x000fffffffffffffll)), i64c(0x3fe6a09e00000000ll)), f64_);
  Value *f = b_.CreateFSub(m, f64c(1.0));
  Value *e = b_.CreateSIToFP(ei, f64_);
  Value *dh = b_.CreateFAdd(f64c(2.0), f);
  Value *dl = b_.CreateFAdd(b_.CreateFSub(f64c(2.0), dh), f);
  Value *s = b_.CreateFDiv(f, dh);
  Value *sl = b_.CreateFDiv(b_.CreateFSub(fma(b_.CreateFNeg(s), dh, f), b_.CreateFMul(s, dl)), dh);
  Value *z = b_.CreateFMul(s, s);
  Value *zl = fma(s, s, b_.CreateFNeg(z));
  Value *c3 = b_.CreateFMul(z, s);
  Value *c3l = b_.CreateFAdd(fma(z, s, b_.CreateFNeg(c3)), b_.CreateFMul(zl, s));
  Value *C = b_.CreateFMul(c3, f64c(kTwoThirdsHi));
  Value *Cl =
      b_.CreateFAdd(fma(c3, f64c(kTwoThirdsHi), b_.CreateFNeg(C)),
                    b_.CreateFAdd(b_.CreateFMul(c3, f64c(kTwoThirdsLo)), b_.CreateFMul(c3l, f64c(kTwoThirdsHi))));
  std::vector<double> rc;
  for (int k = 2; k <= 13; ++k) rc.push_back(2.0 / (2 * k + 1));
  Value *D = b_.CreateFMul(b_.CreateFMul(c3, z), horner(z, rc));
  Value *h, *e1;
  two_sum(b_.CreateFMul(s, f64c(2.0)), C, h, e1);
  Value *small = b_.CreateFAdd(b_.CreateFMul(sl, f64c(2.0)), b_.CreateFMul(b_.CreateFMul(z, sl), f64c(2.0)));
  Value *l = b_.CreateFAdd(e1, b_.CreateFAdd(b_.CreateFAdd(Cl, D), small));
  Value *H, *e2;
  two_sum(b_.CreateFMul(e, f64c(kLn2Hi)), h, H, e2);  // e ln2_hi is exact
  Value *L = b_.CreateFAdd(e2, b_.CreateFAdd(l, b_.CreateFMul(e, f64c(kLn2Lo))));
  Value *hi;
  fast_two_sum(H, L, hi, lo);
  return hi;
}

Value *Emitter::log1p_d(Value *x) {
  // 1 + x = u + ul exactly; log1p(x) = log(u) + ul / u (the next term is below 2^-106).
  Value *u, *ul;
  two_sum(f64c(1.0), x, u, ul);
  Value *lo;
  Value *hi = log_dd(u, lo);
  Value *r = b_.CreateFAdd(hi, b_.CreateFAdd(lo, b_.CreateFDiv(ul, u)));
  r = log_special(u, r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(0.0)), x, r);  // keeps -0
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, r);
}

Value *Emitter::log10_d(Value *x) {
  using namespace consts;
  Value *lo;
  Value *hi = log_dd(x, lo);
  Value *p = b_.CreateFMul(hi, f64c(kLog10eHi));
  Value *pl = b_.CreateFAdd(fma(hi, f64c(kLog10eHi), b_.CreateFNeg(p)),
                            b_.CreateFAdd(b_.CreateFMul(hi, f64c(kLog10eLo)), b_.CreateFMul(lo, f64c(kLog10eHi))));
  return log_special(x, b_.CreateFAdd(p, pl));
}

// ax = q pi/2 + r + rl for finite ax >= 0, |r| <= pi/4, by Payne-Hanek: ax = M 2^E (M < 2^53) times the
// 192 bits of 2/pi from weight 2^(1-E) on (the bits above give multiples of 4), kept modulo 4. The fraction
// keeps 128 bits: enough for the closest approach of any double to a multiple of pi/2 (about 2^-61).
// Below pi/4 nothing is reduced.
void Emitter::rem_pio2(Value *ax, Value *&q, Value *&r, Value *&rl) {
  using namespace consts;
  llvm::Type *i128 = b_.getInt128Ty();
  Value *tbl = table("pk_two_over_pi", kTwoOverPi);
  Value *bits = b_.CreateBitCast(ax, i64_);
  Value *be = b_.CreateLShr(bits, 52);
  Value *M = b_.CreateOr(b_.CreateAnd(bits, i64c(0x000fffffffffffffll)), i64c(int64_t{1} << 52));
  // First bit wanted: b_(E-1) of 2/pi, E = be - 1075; at stream position E - 1 + 63 (one zero word ahead).
  Value *j0 = b_.CreateSub(be, i64c(1013));
  j0 = b_.CreateSelect(b_.CreateICmpSLT(j0, i64c(0)), i64c(0), j0);  // only below pi/4, where it is unused
  Value *k = b_.CreateLShr(j0, 6), *sh = b_.CreateAnd(j0, i64c(63));
  Value *t[4];
  for (int i = 0; i < 4; ++i) t[i] = b_.CreateLoad(i64_, b_.CreateGEP(i64_, tbl, b_.CreateAdd(k, i64c(i))));
  auto fshl = [&](Value *a, Value *c) { return b_.CreateIntrinsic(llvm::Intrinsic::fshl, {i64_}, {a, c, sh}); };
  Value *w0 = fshl(t[0], t[1]), *w1 = fshl(t[1], t[2]), *w2 = fshl(t[2], t[3]);
  Value *M128 = b_.CreateZExt(M, i128);
  Value *p2 = b_.CreateMul(M128, b_.CreateZExt(w2, i128));
  Value *p1 = b_.CreateMul(M128, b_.CreateZExt(w1, i128));
  Value *p0 = b_.CreateMul(M, w0);  // only its low 64 bits matter (mod 4)
  auto hi64 = [&](Value *v) { return b_.CreateTrunc(b_.CreateLShr(v, 64), i64_); };
  Value *r0 = b_.CreateTrunc(p2, i64_);
  Value *mid = b_.CreateAdd(b_.CreateZExt(hi64(p2), i128), b_.CreateZExt(b_.CreateTrunc(p1, i64_), i128));
  Value *r1 = b_.CreateTrunc(mid, i64_);
  Value *r2 = b_.CreateAdd(b_.CreateAdd(p0, hi64(p1)), hi64(mid));
  // r2:r1:r0 = ax 2/pi mod 4 with the point below r2's top two bits. The fraction as a signed 128-bit number
  // is in [-1/2, 1/2): rounding q to nearest comes with it.
  Value *fh = b_.CreateOr(b_.CreateShl(r2, 2), b_.CreateLShr(r1, 62));
  Value *fl = b_.CreateOr(b_.CreateShl(r1, 2), b_.CreateLShr(r0, 62));
  Value *qq = b_.CreateAdd(b_.CreateLShr(r2, 62), b_.CreateLShr(fh, 63));
  Value *F = b_.CreateOr(b_.CreateShl(b_.CreateZExt(fh, i128), 64), b_.CreateZExt(fl, i128));
  Value *neg = b_.CreateICmpSLT(fh, i64c(0));
  Value *A = b_.CreateSelect(neg, b_.CreateNeg(F), F);
  Value *lz = b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {i128}, {A, b_.getFalse()});
  lz = b_.CreateSelect(b_.CreateICmpUGT(lz, llvm::ConstantInt::get(i128, 127)), llvm::ConstantInt::get(i128, 127), lz);
  Value *N = b_.CreateShl(A, lz);
  Value *nh = hi64(N), *nl = b_.CreateTrunc(N, i64_);
  Value *a1 = b_.CreateLShr(nh, 11);  // the top 53 bits: exact in f64
  Value *a2 = b_.CreateOr(b_.CreateShl(nh, 53), b_.CreateLShr(nl, 11));
  Value *lz64 = b_.CreateTrunc(lz, i64_);
  Value *f = b_.CreateFMul(b_.CreateUIToFP(a1, f64_), pow2i(b_.CreateSub(i64c(-53), lz64)));
  Value *flo = b_.CreateFMul(b_.CreateUIToFP(a2, f64_), pow2i(b_.CreateSub(i64c(-117), lz64)));
  Value *ph = b_.CreateFMul(f, f64c(kPio2Hi));
  Value *pl = b_.CreateFAdd(fma(f, f64c(kPio2Hi), b_.CreateFNeg(ph)),
                            b_.CreateFAdd(b_.CreateFMul(f, f64c(kPio2Lo)), b_.CreateFMul(flo, f64c(kPio2Hi))));
  Value *rh, *rlo;
  fast_two_sum(ph, pl, rh, rlo);
  rh = b_.CreateSelect(neg, b_.CreateFNeg(rh), rh);
  rlo = b_.CreateSelect(neg, b_.CreateFNeg(rlo), rlo);
  Value *small = b_.CreateFCmpOLE(ax, f64c(kPio4Hi));
  q = b_.CreateSelect(small, i64c(0), qq);
  r = b_.CreateSelect(small, ax, rh);
  rl = b_.CreateSelect(small, f64c(0.0), rlo);
}

// sin(r + rl) for |r| <= pi/4: Taylor to r^19 (truncation below 2^-63 relative).
Value *Emitter::sin_kernel(Value *r, Value *rl) {
  std::vector<double> c;
  double fact = 1;
  for (int k = 1; k <= 9; ++k) {
    fact *= (2 * k) * (2 * k + 1);
    c.push_back((k % 2 ? -1.0 : 1.0) / fact);
  }
  Value *z = b_.CreateFMul(r, r);
  Value *tail = b_.CreateFMul(b_.CreateFMul(r, z), horner(z, c));
  Value *corr = b_.CreateFMul(rl, fma(z, f64c(-0.5), f64c(1.0)));  // rl cos(r)
  return b_.CreateFAdd(r, b_.CreateFAdd(tail, corr));
}

// cos(r + rl) for |r| <= pi/4: 1 - r^2/2 with its rounding errors carried, then Taylor to r^20.
Value *Emitter::cos_kernel(Value *r, Value *rl) {
  std::vector<double> c;
  double fact = 2;
  for (int k = 2; k <= 10; ++k) {
    fact *= (2 * k - 1) * (2 * k);
    c.push_back((k % 2 ? -1.0 : 1.0) / fact);
  }
  Value *z = b_.CreateFMul(r, r);
  Value *zl = fma(r, r, b_.CreateFNeg(z));
  Value *hz = b_.CreateFMul(z, f64c(0.5));
  Value *w = b_.CreateFSub(f64c(1.0), hz);
  Value *err = b_.CreateFSub(b_.CreateFSub(f64c(1.0), w), hz);  // exact
  Value *corr = b_.CreateFSub(b_.CreateFSub(err, b_.CreateFMul(zl, f64c(0.5))), b_.CreateFMul(r, rl));
  corr = fma(b_.CreateFMul(z, z), horner(z, c), corr);
  return b_.CreateFAdd(w, corr);
}

Value *Emitter::trig_d(Value *x, uint32_t op) {
  Value *ax = intr(llvm::Intrinsic::fabs, {x});
  Value *finite = b_.CreateFCmpOLT(ax, f64c(HUGE_VAL));
  Value *axf = b_.CreateSelect(finite, ax, f64c(0.0));
  Value *q, *r, *rl;
  rem_pio2(axf, q, r, rl);
  Value *s = sin_kernel(r, rl), *c = cos_kernel(r, rl);
  Value *odd = b_.CreateICmpNE(b_.CreateAnd(q, i64c(1)), i64c(0));
  Value *res;
  if (op == PK_OP_TAN) {
    res = b_.CreateSelect(odd, b_.CreateFDiv(b_.CreateFNeg(c), s), b_.CreateFDiv(s, c));
  } else {
    Value *base = op == PK_OP_SIN ? b_.CreateSelect(odd, c, s) : b_.CreateSelect(odd, s, c);
    Value *qs = op == PK_OP_SIN ? q : b_.CreateAdd(q, i64c(1));
    res = b_.CreateSelect(b_.CreateICmpNE(b_.CreateAnd(qs, i64c(2)), i64c(0)), b_.CreateFNeg(base), base);
  }
  if (op != PK_OP_COS) res = b_.CreateSelect(sign_neg(x), b_.CreateFNeg(res), res);  // odd functions
  return b_.CreateSelect(finite, res, f64c(std::numeric_limits<double>::quiet_NaN()));
}

// asin(s) = s + s z P(z), z = s^2 <= 1/4: Taylor (truncation below 2^-56 relative).
Value *Emitter::asin_poly(Value *z) {
  std::vector<double> c;
  long double t = 1;
  for (int n = 1; n <= 27; ++n) {
    t = t * (2 * n - 1) / (2 * n);
    c.push_back(static_cast<double>(t / (2 * n + 1)));
  }
  return horner(z, c);
}

Value *Emitter::asin_d(Value *x) {
  using namespace consts;
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *z = b_.CreateFMul(a, a);
  Value *small = fma(b_.CreateFMul(a, z), asin_poly(z), a);
  // |x| > 1/2: pi/2 - 2 asin(s), s = sqrt((1 - a) / 2) (1 - a exact) carried as s + sl.
  Value *w = b_.CreateFMul(b_.CreateFSub(f64c(1.0), a), f64c(0.5));
  Value *s = intr(llvm::Intrinsic::sqrt, {w});
  Value *sl = b_.CreateFDiv(fma(b_.CreateFNeg(s), s, w), b_.CreateFMul(s, f64c(2.0)));
  sl = b_.CreateSelect(b_.CreateFCmpOEQ(s, f64c(0.0)), f64c(0.0), sl);
  Value *tail = fma(b_.CreateFMul(s, w), asin_poly(w), sl);
  Value *h, *e;
  two_sum(f64c(kPio2Hi), b_.CreateFMul(s, f64c(-2.0)), h, e);
  Value *big = b_.CreateFAdd(h, b_.CreateFAdd(e, fma(tail, f64c(-2.0), f64c(kPio2Lo))));
  Value *res = b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), small, big);
  return intr(llvm::Intrinsic::copysign, {res, x});  // NaN beyond |x| = 1 comes from sqrt
}

Value *Emitter::acos_d(Value *x) {
  using namespace consts;
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *z = b_.CreateFMul(x, x);
  Value *h, *e;
  two_sum(f64c(kPio2Hi), b_.CreateFNeg(x), h, e);
  Value *small = b_.CreateFAdd(
      h, b_.CreateFSub(b_.CreateFAdd(e, f64c(kPio2Lo)), b_.CreateFMul(b_.CreateFMul(x, z), asin_poly(z))));
  Value *w = b_.CreateFMul(b_.CreateFSub(f64c(1.0), a), f64c(0.5));
  Value *s = intr(llvm::Intrinsic::sqrt, {w});
  Value *sl = b_.CreateFDiv(fma(b_.CreateFNeg(s), s, w), b_.CreateFMul(s, f64c(2.0)));
  sl = b_.CreateSelect(b_.CreateFCmpOEQ(s, f64c(0.0)), f64c(0.0), sl);
  Value *tail = fma(b_.CreateFMul(s, w), asin_poly(w), sl);  // asin(s + sl) - s
  Value *pos = b_.CreateFMul(b_.CreateFAdd(s, tail), f64c(2.0));
  Value *h2, *e2;
  two_sum(f64c(kPiHi), b_.CreateFMul(s, f64c(-2.0)), h2, e2);
  Value *negv = b_.CreateFAdd(h2, b_.CreateFAdd(e2, fma(tail, f64c(-2.0), f64c(kPiLo))));
  Value *big = b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(0.0)), pos, negv);
  Value *res = b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), small, big);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

// atan(a) for a >= 0 (inf included): fdlibm's reduction to |t| <= 0.4375 around 0, 1/2, 1, 3/2 or infinity,
// then Taylor (truncation below 2^-57).
Value *Emitter::atan_pos(Value *a) {
  using namespace consts;
  Value *c0 = b_.CreateFCmpOLT(a, f64c(0.4375)), *c1 = b_.CreateFCmpOLT(a, f64c(0.6875));
  Value *c2 = b_.CreateFCmpOLT(a, f64c(1.1875)), *c3 = b_.CreateFCmpOLT(a, f64c(2.4375));
  auto pick = [&](double v0, double v1, double v2, double v3, double v4) {
    return b_.CreateSelect(
        c0, f64c(v0),
        b_.CreateSelect(c1, f64c(v1), b_.CreateSelect(c2, f64c(v2), b_.CreateSelect(c3, f64c(v3), f64c(v4)))));
  };
  auto pickv = [&](Value *v0, Value *v1, Value *v2, Value *v3, Value *v4) {
    return b_.CreateSelect(c0, v0, b_.CreateSelect(c1, v1, b_.CreateSelect(c2, v2, b_.CreateSelect(c3, v3, v4))));
  };
  // Numerators are exact (Sterbenz); t = (a - c) / (1 + a c).
  Value *num = pickv(a, b_.CreateFSub(b_.CreateFMul(a, f64c(2.0)), f64c(1.0)), b_.CreateFSub(a, f64c(1.0)),
                     b_.CreateFSub(a, f64c(1.5)), f64c(-1.0));
  Value *den =
      pickv(f64c(1.0), b_.CreateFAdd(a, f64c(2.0)), b_.CreateFAdd(a, f64c(1.0)), fma(a, f64c(1.5), f64c(1.0)), a);
  Value *t = b_.CreateFDiv(num, den);
  Value *bh = pick(0.0, kAtanHalfHi, kPio4Hi, kAtanOneHalfHi, kPio2Hi);
  Value *bl = pick(0.0, kAtanHalfLo, kPio4Lo, kAtanOneHalfLo, kPio2Lo);
  std::vector<double> c;
  for (int k = 1; k <= 25; ++k) c.push_back((k % 2 ? -1.0 : 1.0) / (2 * k + 1));
  Value *z = b_.CreateFMul(t, t);
  Value *tail = fma(b_.CreateFMul(t, z), horner(z, c), bl);
  return b_.CreateFAdd(bh, b_.CreateFAdd(t, tail));
}

Value *Emitter::atan_d(Value *x) {
  return intr(llvm::Intrinsic::copysign, {atan_pos(intr(llvm::Intrinsic::fabs, {x})), x});
}

Value *Emitter::atan2_d(Value *y, Value *x) {
  using namespace consts;
  Value *ax = intr(llvm::Intrinsic::fabs, {x}), *ay = intr(llvm::Intrinsic::fabs, {y});
  Value *r = atan_pos(b_.CreateFDiv(ay, ax));
  Value *xneg = sign_neg(x);
  // x < 0: pi - r (r <= pi/2, no cancellation).
  r = b_.CreateSelect(xneg, b_.CreateFAdd(b_.CreateFSub(f64c(kPiHi), r), f64c(kPiLo)), r);
  const double inf = HUGE_VAL;
  Value *zeros = b_.CreateAnd(b_.CreateFCmpOEQ(ax, f64c(0.0)), b_.CreateFCmpOEQ(ay, f64c(0.0)));
  Value *infs = b_.CreateAnd(b_.CreateFCmpOEQ(ax, f64c(inf)), b_.CreateFCmpOEQ(ay, f64c(inf)));
  r = b_.CreateSelect(zeros, b_.CreateSelect(xneg, f64c(kPiHi), f64c(0.0)), r);
  r = b_.CreateSelect(infs, b_.CreateSelect(xneg, f64c(kThreePio4Hi), f64c(kPio4Hi)), r);
  r = intr(llvm::Intrinsic::copysign, {r, y});
  return b_.CreateSelect(b_.CreateFCmpUNO(x, y), b_.CreateFAdd(x, y), r);
}

Value *Emitter::sinh_d(Value *x) {
  // fdlibm: expm1 below 22, then e^a / 2, then (e^(a/2) / 2) e^(a/2) where e^a overflows.
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *t = expm1_d(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(22.0)), a, f64c(0.0)));
  Value *t1 = b_.CreateFAdd(t, f64c(1.0));
  Value *lt1 = b_.CreateFSub(b_.CreateFMul(t, f64c(2.0)), b_.CreateFDiv(b_.CreateFMul(t, t), t1));
  Value *ge1 = b_.CreateFAdd(t, b_.CreateFDiv(t, t1));
  Value *mid = b_.CreateFMul(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(1.0)), lt1, ge1), f64c(0.5));
  Value *big = b_.CreateFMul(exp_d(a), f64c(0.5));
  Value *w = exp_d(b_.CreateFMul(a, f64c(0.5)));
  Value *huge = b_.CreateFMul(b_.CreateFMul(w, f64c(0.5)), w);
  Value *res = b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(22.0)), mid,
                               b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(709.0)), big, huge));
  res = intr(llvm::Intrinsic::copysign, {res, x});
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::cosh_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *t = expm1_d(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(1.0)), a, f64c(0.0)));
  // Below ln2 / 2: 1 + t^2 / (2 (1 + t)).
  Value *tiny = b_.CreateFAdd(
      f64c(1.0), b_.CreateFDiv(b_.CreateFMul(t, t), b_.CreateFMul(b_.CreateFAdd(t, f64c(1.0)), f64c(2.0))));
  Value *e = exp_d(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(22.0)), a, f64c(0.0)));
  Value *mid = b_.CreateFAdd(b_.CreateFMul(e, f64c(0.5)), b_.CreateFDiv(f64c(0.5), e));
  Value *big = b_.CreateFMul(exp_d(a), f64c(0.5));
  Value *w = exp_d(b_.CreateFMul(a, f64c(0.5)));
  Value *huge = b_.CreateFMul(b_.CreateFMul(w, f64c(0.5)), w);
  Value *res = b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(0.3465735902799726547)), tiny,
                               b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(22.0)), mid,
                                               b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(709.0)), big, huge)));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::asinh_d(Value *x) {
  using namespace consts;
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *lo;
  Value *hi = log_dd(b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(0x1p28)), a, f64c(1.0)), lo);
  Value *huge = b_.CreateFAdd(b_.CreateFAdd(hi, f64c(kLn2Hi)), b_.CreateFAdd(lo, f64c(kLn2Lo)));
  huge = b_.CreateSelect(b_.CreateFCmpOEQ(a, f64c(HUGE_VAL)), a, huge);
  Value *sq = intr(llvm::Intrinsic::sqrt, {fma(a, a, f64c(1.0))});
  Value *big = log_d(b_.CreateFAdd(b_.CreateFMul(a, f64c(2.0)), b_.CreateFDiv(f64c(1.0), b_.CreateFAdd(sq, a))));
  Value *z = b_.CreateFMul(a, a);
  Value *small = log1p_d(b_.CreateFAdd(
      a, b_.CreateFDiv(z, b_.CreateFAdd(f64c(1.0), intr(llvm::Intrinsic::sqrt, {b_.CreateFAdd(f64c(1.0), z)})))));
  Value *res = b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(0x1p28)), huge,
                               b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(2.0)), big, small));
  res = intr(llvm::Intrinsic::copysign, {res, x});
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::acosh_d(Value *x) {
  using namespace consts;
  Value *lo;
  Value *hi = log_dd(b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(0x1p28)), x, f64c(1.0)), lo);
  Value *huge = b_.CreateFAdd(b_.CreateFAdd(hi, f64c(kLn2Hi)), b_.CreateFAdd(lo, f64c(kLn2Lo)));
  huge = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(HUGE_VAL)), x, huge);
  Value *sq = intr(llvm::Intrinsic::sqrt, {fma(x, x, f64c(-1.0))});
  Value *big = log_d(b_.CreateFSub(b_.CreateFMul(x, f64c(2.0)), b_.CreateFDiv(f64c(1.0), b_.CreateFAdd(x, sq))));
  Value *t = b_.CreateFSub(x, f64c(1.0));
  Value *small = log1p_d(b_.CreateFAdd(t, intr(llvm::Intrinsic::sqrt, {fma(t, t, b_.CreateFMul(t, f64c(2.0)))})));
  Value *res = b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(0x1p28)), huge,
                               b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(2.0)), big, small));
  res = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(1.0)), f64c(std::numeric_limits<double>::quiet_NaN()), res);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::atanh_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *t = b_.CreateFAdd(a, a);
  Value *om = b_.CreateFSub(f64c(1.0), a);
  Value *small = b_.CreateFAdd(t, b_.CreateFDiv(b_.CreateFMul(t, a), om));
  Value *big = b_.CreateFDiv(t, om);
  Value *res = b_.CreateFMul(log1p_d(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(0.5)), small, big)), f64c(0.5));
  res = b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(1.0)), f64c(std::numeric_limits<double>::quiet_NaN()), res);
  res = intr(llvm::Intrinsic::copysign, {res, x});
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

// FreeBSD's cbrt: a 23-bit estimate from the exponent and a polynomial, then one step of a third-order
// iteration (error below 0.67 ulp).
Value *Emitter::cbrt_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *sub = b_.CreateFCmpOLT(a, f64c(0x1p-1022));
  Value *as = b_.CreateSelect(sub, b_.CreateFMul(a, f64c(0x1p54)), a);
  Value *hx = b_.CreateLShr(b_.CreateBitCast(as, i64_), 32);
  Value *th = b_.CreateAdd(b_.CreateUDiv(hx, i64c(3)), b_.CreateSelect(sub, i64c(696219795), i64c(715094163)));
  Value *t = b_.CreateBitCast(b_.CreateShl(th, 32), f64_);
  Value *r = b_.CreateFMul(b_.CreateFMul(t, t), b_.CreateFDiv(t, a));
  Value *p1 =
      fma(r, fma(r, f64c(1.621429720105354466140), f64c(-1.88497979543377169875)), f64c(1.87595182427177009643));
  Value *p2 = b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(r, r), r),
                            fma(r, f64c(0.145996192886612446982), f64c(-0.758397934778766047437)));
  t = b_.CreateFMul(t, b_.CreateFAdd(p1, p2));
  Value *u = b_.CreateAnd(b_.CreateAdd(b_.CreateBitCast(t, i64_), i64c(0x80000000ll)),
                          i64c(static_cast<int64_t>(0xffffffffc0000000ull)));
  t = b_.CreateBitCast(u, f64_);
  Value *s = b_.CreateFMul(t, t);
  Value *rr = b_.CreateFDiv(a, s);
  Value *w = b_.CreateFAdd(t, t);
  rr = b_.CreateFDiv(b_.CreateFSub(rr, t), b_.CreateFAdd(w, rr));
  t = fma(t, rr, t);
  Value *special = b_.CreateOr(b_.CreateFCmpOEQ(a, f64c(0.0)), b_.CreateFCmpUEQ(a, f64c(HUGE_VAL)));
  return b_.CreateSelect(special, b_.CreateFAdd(x, x), intr(llvm::Intrinsic::copysign, {t, x}));
}

// sqrt(x^2 + y^2) after scaling by a power of two, the sum carried in double-double and the square root
// corrected by one Newton step: under 1 ulp.
Value *Emitter::hypot_d(Value *x, Value *y) {
  Value *ax = intr(llvm::Intrinsic::fabs, {x}), *ay = intr(llvm::Intrinsic::fabs, {y});
  Value *mx = b_.CreateSelect(b_.CreateFCmpOGT(ax, ay), ax, ay);
  Value *big = b_.CreateFCmpOGT(mx, f64c(0x1p500)), *tiny = b_.CreateFCmpOLT(mx, f64c(0x1p-500));
  Value *sc = b_.CreateSelect(big, f64c(0x1p-600), b_.CreateSelect(tiny, f64c(0x1p600), f64c(1.0)));
  Value *un = b_.CreateSelect(big, f64c(0x1p600), b_.CreateSelect(tiny, f64c(0x1p-600), f64c(1.0)));
  Value *a = b_.CreateFMul(ax, sc), *c = b_.CreateFMul(ay, sc);
  Value *a2 = b_.CreateFMul(a, a), *c2 = b_.CreateFMul(c, c);
  Value *a2l = fma(a, a, b_.CreateFNeg(a2)), *c2l = fma(c, c, b_.CreateFNeg(c2));
  Value *S, *Se;
  two_sum(a2, c2, S, Se);
  Se = b_.CreateFAdd(Se, b_.CreateFAdd(a2l, c2l));
  Value *h = intr(llvm::Intrinsic::sqrt, {S});
  Value *corr = b_.CreateFDiv(b_.CreateFAdd(fma(b_.CreateFNeg(h), h, S), Se), b_.CreateFMul(h, f64c(2.0)));
  Value *res = b_.CreateFMul(b_.CreateFAdd(h, b_.CreateSelect(b_.CreateFCmpOEQ(h, f64c(0.0)), f64c(0.0), corr)), un);
  res = b_.CreateSelect(b_.CreateFCmpUNO(x, y), b_.CreateFAdd(x, y), res);
  Value *inf = b_.CreateOr(b_.CreateFCmpOEQ(ax, f64c(HUGE_VAL)), b_.CreateFCmpOEQ(ay, f64c(HUGE_VAL)));
  return b_.CreateSelect(inf, f64c(HUGE_VAL), res);  // inf beats NaN
}

// pow(x, y) = exp(y log|x|) with log and the product in double-double, then C99's special cases.
Value *Emitter::pow_d(Value *x, Value *y) {
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  Value *ax = intr(llvm::Intrinsic::fabs, {x}), *ay = intr(llvm::Intrinsic::fabs, {y});
  Value *finite_x = b_.CreateFCmpOLT(ax, f64c(inf));
  Value *usable = b_.CreateAnd(finite_x, b_.CreateFCmpOGT(ax, f64c(0.0)));
  Value *lo;
  Value *L = log_dd(b_.CreateSelect(usable, ax, f64c(1.0)), lo);
  Value *t = b_.CreateFMul(y, L);
  Value *tl = b_.CreateFAdd(fma(y, L, b_.CreateFNeg(t)), b_.CreateFMul(y, lo));
  Value *E = exp_d(t);
  Value *res = fma(E, tl, E);
  // Near overflow exp(t) alone may be inf where exp(t + tl) is finite (pow(1.77e-103, -3) is DBL_MAX - 1 ulp, and
  // t rounds above log(DBL_MAX)). Where the result overflowed (inf, or inf * tl = NaN) with t below 710, it is
  // recomputed as exp(t - 1) (t - 1 exact) times e (1 + tl), e in double-double: E' e_hi exact in the fma, plus E'
  // (e_hi tl + e_lo).
  Value *retry = b_.CreateAnd(b_.CreateFCmpUGE(intr(llvm::Intrinsic::fabs, {res}), f64c(HUGE_VAL)),  // inf or NaN
                              b_.CreateFCmpOLT(t, f64c(710.0)));
  Value *E1 = exp_d(b_.CreateFSub(t, f64c(1.0)));
  Value *c = fma(f64c(0x1.5bf0a8b145769p+1), tl, f64c(0x1.4d57ee2b1013ap-53));
  res = b_.CreateSelect(retry, fma(E1, f64c(0x1.5bf0a8b145769p+1), b_.CreateFMul(E1, c)), res);
  res = b_.CreateSelect(b_.CreateFCmpUNO(res, res), E, res);  // inf * tl
  // y integral / odd integral (|y| >= 2^53 is even).
  Value *yint = b_.CreateFCmpOEQ(intr(llvm::Intrinsic::floor, {y}), y);
  Value *hy = b_.CreateFMul(y, f64c(0.5));
  Value *yodd = b_.CreateAnd(yint, b_.CreateFCmpONE(intr(llvm::Intrinsic::floor, {hy}), hy));
  Value *xneg = sign_neg(x);
  // Negative finite x: NaN unless y is an integer; odd integers keep the sign.
  res = b_.CreateSelect(b_.CreateAnd(xneg, yodd), b_.CreateFNeg(res), res);
  res = b_.CreateSelect(b_.CreateAnd(b_.CreateFCmpOLT(x, f64c(0.0)), b_.CreateNot(yint)), f64c(nan), res);
  // x = +-0 or +-inf: 0 or inf by the sign of y (and of x for odd y).
  Value *ypos = b_.CreateFCmpOGT(y, f64c(0.0));
  Value *zero_inf = b_.CreateSelect(b_.CreateFCmpOEQ(ax, f64c(0.0)), b_.CreateSelect(ypos, f64c(0.0), f64c(inf)),
                                    b_.CreateSelect(ypos, f64c(inf), f64c(0.0)));
  zero_inf = b_.CreateSelect(b_.CreateAnd(xneg, yodd), b_.CreateFNeg(zero_inf), zero_inf);
  res = b_.CreateSelect(b_.CreateNot(usable), zero_inf, res);
  // y = +-inf: by |x| against 1 (|x| = 1 gives 1).
  Value *yinf = b_.CreateFCmpOEQ(ay, f64c(inf));
  Value *grow = b_.CreateICmpEQ(b_.CreateFCmpOGT(ax, f64c(1.0)), ypos);
  Value *yinf_v =
      b_.CreateSelect(b_.CreateFCmpOEQ(ax, f64c(1.0)), f64c(1.0), b_.CreateSelect(grow, f64c(inf), f64c(0.0)));
  res = b_.CreateSelect(yinf, yinf_v, res);
  res = b_.CreateSelect(b_.CreateFCmpUNO(x, y), b_.CreateFAdd(x, y), res);
  res = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(1.0)), f64c(1.0), res);
  return b_.CreateSelect(b_.CreateFCmpOEQ(y, f64c(0.0)), f64c(1.0), res);
}

// erfc(x) for x >= 0.5: exp(-x^2) (x^2 in double-double) times erfcx(x). Below 6, erfcx comes from Taylor
// tables around 0.75 + 0.5 j whose coefficients follow from erfcx' = 2 x erfcx - 2/sqrt(pi):
// (k+1) a_(k+1) = 2 c a_k + 2 a_(k-1), degree 19 on |h| <= 1/4 (below 2^-58 relative). That recurrence
// amplifies its rounding errors by about e^(c/2), harmless (long double) up to c = 5.75 but not beyond, so from
// 6 on erfcx is Laplace's continued fraction, 16 terms (below 2^-58 there). Beyond 27.5 erfc underflows.
Value *Emitter::erfc_pos(Value *x) {
  Value *xc = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(27.5)), x, f64c(27.0));
  Value *ex = erfcx_pos(xc);
  Value *x2 = b_.CreateFMul(xc, xc);
  Value *x2l = fma(xc, xc, b_.CreateFNeg(x2));
  Value *E = exp_d(b_.CreateFNeg(x2));
  E = fma(E, b_.CreateFNeg(x2l), E);
  Value *res = b_.CreateFMul(E, ex);
  return b_.CreateSelect(b_.CreateFCmpOGE(x, f64c(27.5)), f64c(0.0), res);
}

Value *Emitter::erfcx_pos(Value *xc) {
  using namespace consts;
  constexpr int kDeg = 19, kCentres = 11, kTerms = 16;
  std::vector<uint64_t> words, his;
  for (int j = 0; j < kCentres; ++j) {
    const long double c = 0.75L + 0.5L * j;
    long double a[kDeg + 1];
    a[0] = static_cast<long double>(kErfcxAt[j][0]) + kErfcxAt[j][1];
    a[1] = 2 * c * a[0] - 1.1283791670955125738961589L;  // 2 / sqrt(pi)
    for (int k = 1; k < kDeg; ++k) a[k + 1] = (2 * c * a[k] + 2 * a[k - 1]) / (k + 1);
    for (int k = 0; k <= kDeg; ++k) {
      double v = k == 0 ? kErfcxAt[j][1] : static_cast<double>(a[k]);  // slot 0: a_0's low part
      uint64_t w;
      std::memcpy(&w, &v, 8);
      words.push_back(w);
    }
    uint64_t w;
    std::memcpy(&w, &kErfcxAt[j][0], 8);
    his.push_back(w);
  }
  Value *tbl = table("pk_erfcx_taylor", words);
  Value *xt = b_.CreateSelect(b_.CreateFCmpOLT(xc, f64c(6.0)), xc, f64c(1.0));
  Value *j = b_.CreateFPToSI(b_.CreateFMul(b_.CreateFSub(xt, f64c(0.5)), f64c(2.0)), i64_);
  j = b_.CreateSelect(b_.CreateICmpSGT(j, i64c(kCentres - 1)), i64c(kCentres - 1), j);
  j = b_.CreateSelect(b_.CreateICmpSLT(j, i64c(0)), i64c(0), j);
  Value *c = fma(b_.CreateSIToFP(j, f64_), f64c(0.5), f64c(0.75));
  Value *h = b_.CreateFSub(xt, c);  // exact
  Value *base = b_.CreateMul(j, i64c(kDeg + 1));
  auto coef = [&](int k) { return b_.CreateLoad(f64_, b_.CreateGEP(f64_, tbl, b_.CreateAdd(base, i64c(k)))); };
  Value *p = coef(kDeg);
  for (int k = kDeg - 1; k >= 1; --k) p = fma(p, h, coef(k));
  Value *a0 = b_.CreateLoad(f64_, b_.CreateGEP(f64_, table("pk_erfcx_at", his), j));
  Value *taylor = b_.CreateFAdd(a0, fma(p, h, coef(0)));
  // erfcx(x) = 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))), evaluated from the tail.
  Value *xf = b_.CreateSelect(b_.CreateFCmpOLT(xc, f64c(6.0)), f64c(6.0), xc);
  Value *t = f64c(0.0);
  for (int k = kTerms; k >= 1; --k) t = b_.CreateFDiv(f64c(0.5 * k), b_.CreateFAdd(xf, t));
  Value *frac = b_.CreateFDiv(f64c(0.56418958354775628695), b_.CreateFAdd(xf, t));  // 1 / sqrt(pi)
  return b_.CreateSelect(b_.CreateFCmpOLT(xc, f64c(6.0)), taylor, frac);
}

// erf(x) for |x| <= 1/2: 2/sqrt(pi) (x - x^3/3 + x^5/10 - ...), Taylor to x^29.
Value *Emitter::erf_small(Value *x) {
  using namespace consts;
  std::vector<double> c;
  long double f = 1;
  for (int n = 1; n <= 14; ++n) {
    f *= n;
    c.push_back(static_cast<double>((n % 2 ? -1.0L : 1.0L) / (f * (2 * n + 1))));
  }
  Value *z = b_.CreateFMul(x, x);
  Value *tail = b_.CreateFMul(b_.CreateFMul(x, z), horner(z, c));  // x (erf sum - 1)
  Value *s = b_.CreateFAdd(x, tail);
  Value *sl = b_.CreateFSub(tail, b_.CreateFSub(s, x));
  Value *p = b_.CreateFMul(s, f64c(kTwoOverSqrtPiHi));
  Value *pl = fma(s, f64c(kTwoOverSqrtPiHi), b_.CreateFNeg(p));
  pl = b_.CreateFAdd(
      pl, b_.CreateFAdd(b_.CreateFMul(s, f64c(kTwoOverSqrtPiLo)), b_.CreateFMul(sl, f64c(kTwoOverSqrtPiHi))));
  return b_.CreateFAdd(p, pl);
}

Value *Emitter::erf_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *small = erf_small(b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), x, f64c(0.0)));
  Value *big = b_.CreateFSub(f64c(1.0), erfc_pos(b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(0.5)), a, f64c(1.0))));
  big = intr(llvm::Intrinsic::copysign, {big, x});
  Value *res = b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), small, big);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::erfc_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *ec = erfc_pos(b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(0.5)), a, f64c(1.0)));
  Value *small = b_.CreateFSub(f64c(1.0), erf_small(b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), x, f64c(0.0))));
  Value *big = b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(0.0)), ec, b_.CreateFSub(f64c(2.0), ec));
  Value *res = b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), small, big);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

}  // namespace pk::codegen::detail
