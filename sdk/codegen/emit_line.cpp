// emit_line.cpp — line ops (see emit.cpp for the numerics): var, the scans, dot_general and convolution,
// sort/topk/searchsorted, the scatters and the FFTs, each one work item per line of its input.
#include "emit_internal.hpp"

#include <cmath>
#include <limits>

#include <llvm/IR/DerivedTypes.h>

namespace pk::codegen::detail {

// ----------------------------------------------------------------------------------------------- line ops

// One work item walks one line of the node's input: the program of its op family.
// Scans: one pass carrying the running value; each step stores its element (and cummax/cummin their index).
void Emitter::build_line(Value *j) {
  const Node &n = r_.nodes[0];
  const int32_t xdt = r_.dtypes[n.inputs[0]], ydt = r_.dtypes[n.output];
  const bool fp = is_fp(xdt), uns = is_unsigned(xdt);
  Value *row0 = b_.CreateMul(j, b_.CreateSelect(b_.CreateICmpEQ(cols_, i64c(0)), i64c(1), cols_));
  const Line l{n, xdt, ydt, fp, uns, j, row0};
  if (is_fft_op(n.op_id)) {
    build_fft_line(l);
    return;
  }
  if (is_complex_dtype(xdt)) {  // var, cumsum, cumprod, dot_general
    build_complex_line(l);
    return;
  }
  switch (n.op_id) {
    case PK_OP_VAR:
      build_var_line(l);
      return;
    case PK_OP_CUMSUM:
    case PK_OP_CUMPROD:
      build_cumsum_line(l);
      return;
    case PK_OP_LOGCUMSUMEXP:
      build_logcumsumexp_line(l);
      return;
    case PK_OP_CONVOLUTION:
    case PK_OP_DOT_GENERAL:
      build_dot_line(l);
      return;
    case PK_OP_SORT:
    case PK_OP_TOPK:
    case PK_OP_SEARCHSORTED:
      build_order_line(l);
      return;
    case PK_OP_SCATTER:
    case PK_OP_SCATTER_REDUCE:
    case PK_OP_INDEX_PUT:
      build_scatter_line(l);
      return;
    default:  // cummax, cummin
      build_cumext_line(l);
      return;
  }
}

Value *Emitter::line_x(const Line &l, Value *c) {
  return load(l.xdt, args_[0], arg_offset(0, kElem, l.j, l.row0, c));
}

Value *Emitter::line_x_row(const Line &l, int arg) {
  return load(l.xdt, args_[arg], arg_offset(arg, kRow, l.j, l.row0, i64c(0)));
}

void Emitter::line_store(const Line &l, int arg, int32_t d, Value *v, Value *c) {
  store(d, v, args_[arg], arg_offset(arg, kElem, l.j, l.row0, c));
}

// A direct DFT: the sum over the input elements j of the transform of x_j w(j), w = exp(-+2 pi i f) with
// f = sum_d (j_d k_d mod n_d) / n_d as an exact fraction num / den (see plan_fft), accumulated as a complex
// dot product (c64 in f64; c128 compensated). The twiddle: f in quarter turns q plus a remainder
// r = (4 num - q den) / (2 den) in [-1/4, 1/4], sin and cos of pi r from sincos_pi (double-double pi r).
void Emitter::build_fft_line(const Line &l) {
  const Node &n = l.n;
  const int32_t xdt = l.xdt, ydt = l.ydt;
  Value *j = l.j, *row0 = l.row0;
  const int D = n.round_mode & kFftAxes;
  const bool inverse = (n.round_mode & kFftInverse) != 0;
  const int32_t cdt = is_complex_dtype(xdt) ? xdt : ydt;
  if (D == 0) {  // no axes: the input itself (r2c: as complex), bits untouched
    Value *x = line_x_row(l, 0);
    store(ydt, is_complex_dtype(xdt) ? x : cx().convert(x, xdt, cdt), args_[1], arg_offset(1, kRow, j, row0, i64c(0)));
    return;
  }
  auto *v2 = llvm::FixedVectorType::get(f64_, 2);
  Value *v = cx().dot(
      cdt, cols_,
      [&](Value *count, const std::vector<Value *> &init, const ComplexEmitter::Step &step) {
        return loop_n(count, init, step);
      },
      [&](Value *c) {
        Value *lin = b_.CreateAdd(row0, c);
        std::vector<Value *> idx = rank_ ? unravel(lin) : std::vector<Value *>{};
        auto coord = [&](int axis) {  // (the dense kernel has no coordinates; it is never planned)
          return axis >= 0 && axis < static_cast<int>(idx.size()) ? idx[static_cast<size_t>(axis)] : i64c(0);
        };
        Value *x = load(xdt, args_[0], offset_of(0, lin, idx));
        if (!is_complex_dtype(xdt)) x = cx().convert(x, xdt, cdt);
        Value *num = i64c(0), *den = i64c(1), *weight = f64c(1.0);
        for (int d = 0; d < D; ++d) {
          Value *nd = extra_[static_cast<size_t>(d)];
          nd = b_.CreateSelect(b_.CreateICmpSGT(nd, i64c(0)), nd, i64c(1));
          Value *k = coord(rank_ - 2 * D + d), *jd = coord(rank_ - D + d);
          Value *t = b_.CreateURem(b_.CreateMul(k, jd), nd);
          num = b_.CreateAdd(b_.CreateMul(num, nd), b_.CreateMul(t, den));
          den = b_.CreateMul(den, nd);
          num = b_.CreateSelect(b_.CreateICmpUGE(num, den), b_.CreateSub(num, den), num);
          if (n.op_id == PK_OP_FFT_C2R && d == D - 1) {
            // Entry m of the n / 2 + 1 stands for itself and, for 1 <= m <= n - S (S entries given), for its
            // conjugate at n - m, whose term has the same real part; entries at n and beyond are unused.
            Value *S = rank_ ? shape_[static_cast<size_t>(rank_ - 1)] : i64c(1);
            Value *twice = b_.CreateAnd(b_.CreateICmpSGE(jd, i64c(1)), b_.CreateICmpSLE(jd, b_.CreateSub(nd, S)));
            weight = b_.CreateSelect(b_.CreateICmpSGE(jd, nd), f64c(0.0), b_.CreateSelect(twice, f64c(2.0), f64c(1.0)));
          }
        }
        Value *m4 = b_.CreateMul(num, i64c(4));
        Value *q = b_.CreateUDiv(b_.CreateAdd(m4, b_.CreateUDiv(den, i64c(2))), den);
        Value *rem = b_.CreateSub(m4, b_.CreateMul(q, den));
        Value *r = b_.CreateFDiv(b_.CreateSIToFP(rem, f64_), b_.CreateSIToFP(b_.CreateMul(den, i64c(2)), f64_));
        Value *s0, *c0;
        sincos_pi(r, s0, c0);
        Value *qm = b_.CreateAnd(q, i64c(3));
        auto quad = [&](Value *v0, Value *v1, Value *v2, Value *v3) {
          return b_.CreateSelect(
              b_.CreateICmpEQ(qm, i64c(0)), v0,
              b_.CreateSelect(b_.CreateICmpEQ(qm, i64c(1)), v1, b_.CreateSelect(b_.CreateICmpEQ(qm, i64c(2)), v2, v3)));
        };
        Value *ns0 = b_.CreateFNeg(s0), *nc0 = b_.CreateFNeg(c0);
        Value *cs = quad(c0, ns0, nc0, s0), *sn = quad(s0, c0, ns0, nc0);
        if (!inverse) sn = b_.CreateFNeg(sn);
        Value *tw = b_.CreateInsertElement(llvm::PoisonValue::get(v2), b_.CreateFMul(cs, weight), uint64_t{0});
        tw = b_.CreateInsertElement(tw, b_.CreateFMul(sn, weight), uint64_t{1});
        return std::make_pair(x, tw);
      });
  if (!is_complex_dtype(ydt)) v = b_.CreateExtractElement(v, uint64_t{0});  // c2r: the real part
  store(ydt, v, args_[1], arg_offset(1, kRow, j, row0, i64c(0)));
}

void Emitter::build_complex_line(const Line &l) {
  const Node &n = l.n;
  const int32_t xdt = l.xdt, ydt = l.ydt;
  Value *j = l.j, *row0 = l.row0;
  if (n.op_id == PK_OP_DOT_GENERAL) {
    // Both operands walk the same element space (see the real case below).
    Value *v = cx().dot(
        xdt, cols_,
        [&](Value *count, const std::vector<Value *> &init, const ComplexEmitter::Step &step) {
          return loop_n(count, init, step);
        },
        [&](Value *c) {
          Value *lin = b_.CreateAdd(row0, c);
          std::vector<Value *> idx = rank_ ? unravel(lin) : std::vector<Value *>{};
          return std::make_pair(load(xdt, args_[0], offset_of(0, lin, idx)),
                                load(xdt, args_[1], offset_of(1, lin, idx)));
        });
    store(ydt, v, args_[2], arg_offset(2, kRow, j, row0, i64c(0)));
    return;
  }
  if (n.op_id == PK_OP_VAR) {
    Value *v = cx().variance(
        xdt, ydt, cols_, n.fill_value,
        [&](const std::vector<Value *> &init, const ComplexEmitter::Step &step) { return loop_cols(init, step); },
        [&](Value *c) { return line_x(l, c); });
    store(ydt, v, args_[1], arg_offset(1, kRow, j, row0, i64c(0)));
    return;
  }
  loop_cols(cx().red_init(n.op_id), [&](Value *c, const std::vector<Value *> &a) {
    std::vector<Value *> acc = cx().red_step(n.op_id, a, line_x(l, c));
    line_store(l, 1, ydt, cx().red_final(n.op_id, ydt, acc), c);
    return acc;
  });
}

// var: the mean, a corrected mean, then the squared deviations (three passes, f64; the correction term makes a
// constant row's variance exactly 0). A sum of finite values that overflows is redone on values scaled by
// 2^-600 (exact) and the variance scaled back, as the CPU backend does; both sums come from the first pass.
void Emitter::build_var_line(const Line &l) {
  const Node &n = l.n;
  const int32_t ydt = l.ydt;
  Value *j = l.j, *row0 = l.row0;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Value *> s = loop_cols({f64c(0), f64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
    Value *x = to_double(line_x(l, c));
    return std::vector<Value *>{b_.CreateFAdd(a[0], x), b_.CreateFAdd(a[1], b_.CreateFMul(x, f64c(0x1p-600)))};
  });
  Value *big = b_.CreateFCmpOEQ(intr(llvm::Intrinsic::fabs, {s[0]}), f64c(inf));
  Value *scale = b_.CreateSelect(big, f64c(0x1p-600), f64c(1));
  Value *cnt = b_.CreateSIToFP(cols_, f64_);
  Value *mean = b_.CreateFDiv(b_.CreateSelect(big, s[1], s[0]), cnt);
  Value *resid = loop_cols({f64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
    return std::vector<Value *>{
        b_.CreateFAdd(a[0], b_.CreateFSub(b_.CreateFMul(to_double(line_x(l, c)), scale), mean))};
  })[0];
  mean = b_.CreateFAdd(mean, b_.CreateFDiv(resid, cnt));
  Value *ss = loop_cols({f64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
    Value *dev = b_.CreateFSub(b_.CreateFMul(to_double(line_x(l, c)), scale), mean);
    return std::vector<Value *>{b_.CreateFAdd(a[0], b_.CreateFMul(dev, dev))};
  })[0];
  Value *divisor = b_.CreateFSub(cnt, f64c(n.fill_value));
  Value *unscale = b_.CreateSelect(big, f64c(0x1p600), f64c(1));
  Value *v = b_.CreateFMul(b_.CreateFMul(b_.CreateFDiv(ss, divisor), unscale), unscale);
  v = b_.CreateSelect(b_.CreateFCmpOGT(divisor, f64c(0)), v, f64c(nan));
  store(ydt, from_double(v, ydt), args_[1], arg_offset(1, kRow, j, row0, i64c(0)));
}

// The running sum (product) as the sum (prod) reduction accumulates it, stored at each element.
void Emitter::build_cumsum_line(const Line &l) {
  const Node &n = l.n;
  const int32_t xdt = l.xdt, ydt = l.ydt;
  Node red;
  red.op_id = n.op_id == PK_OP_CUMPROD ? PK_OP_PROD : PK_OP_SUM;
  loop_cols(red_init(red, xdt), [&](Value *c, const std::vector<Value *> &a) {
    std::vector<Value *> acc = red_step(red, xdt, a, line_x(l, c), c);  // integers wrap
    line_store(l, 1, ydt, red_final(red, xdt, ydt, acc), c);
    return acc;
  });
}

// log(e^acc + e^x) with the larger term factored out; -inf + -inf stays -inf, any +inf wins, NaN sticks.
void Emitter::build_logcumsumexp_line(const Line &l) {
  const int32_t ydt = l.ydt;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  loop_cols({f64c(-inf)}, [&](Value *c, const std::vector<Value *> &a) {
    Value *x = to_double(line_x(l, c));
    Value *gt = b_.CreateFCmpOGT(a[0], x);
    Value *hi = b_.CreateSelect(gt, a[0], x), *lo = b_.CreateSelect(gt, x, a[0]);
    Value *acc = b_.CreateFAdd(hi, log1p_d(exp_d(b_.CreateFSub(lo, hi))));
    acc = b_.CreateSelect(b_.CreateFCmpOEQ(intr(llvm::Intrinsic::fabs, {hi}), f64c(inf)), hi, acc);
    acc = b_.CreateSelect(b_.CreateFCmpUNO(a[0], x), f64c(nan), acc);
    line_store(l, 1, ydt, from_double(acc, ydt), c);
    return std::vector<Value *>{acc};
  });
}

// Floats: each product is exact in f64 (f32 and narrower) or fused (f64) into an f64 sum rounded once;
// integers multiply and add in their own width (wrapping, as the table says).
// Convolution (always the strided kernel, see plan_is_dense): the element space is [N, G, O/G, out..., C/G,
// k...] with nsp = round_mode spatial axes; a term whose input position out * stride + k * dilation - low
// (extra[4i..4i+3] = stride, dilation, low, extent of axis i) falls outside the input is no term at all.
void Emitter::build_dot_line(const Line &l) {
  const Node &n = l.n;
  const int32_t xdt = l.xdt, ydt = l.ydt;
  const bool fp = l.fp;
  Value *j = l.j, *row0 = l.row0;
  const bool conv = n.op_id == PK_OP_CONVOLUTION;
  const int nsp = conv ? n.round_mode : 0;
  auto dot = [&](Value *count, Value *scale) {
    return loop_n(count, {fp ? f64c(0.0) : llvm::Constant::getNullValue(compute_type(xdt))},
                  [&](Value *c, const std::vector<Value *> &a) {
                    // One unravel serves both operands: they walk the same element space.
                    Value *lin = b_.CreateAdd(row0, c);
                    std::vector<Value *> idx = rank_ ? unravel(lin) : std::vector<Value *>{};
                    Value *inside = b_.getTrue();
                    // (A layout without those axes is never planned, see plan_is_dense; it would read 0.)
                    auto coord = [&](int axis) {
                      return axis < static_cast<int>(idx.size()) ? idx[static_cast<size_t>(axis)] : i64c(0);
                    };
                    for (int i = 0; i < nsp; ++i) {
                      Value *pos = b_.CreateSub(b_.CreateAdd(b_.CreateMul(coord(3 + i), extra_[4 * i]),
                                                             b_.CreateMul(coord(4 + nsp + i), extra_[4 * i + 1])),
                                                extra_[4 * i + 2]);
                      inside = b_.CreateAnd(inside, b_.CreateICmpULT(pos, extra_[4 * i + 3]));  // 0 <= pos < extent
                    }
                    Value *x = conv ? if_else(
                                          inside, [&]() { return load(xdt, args_[0], offset_of(0, lin, idx)); },
                                          [&]() { return llvm::Constant::getNullValue(compute_type(xdt)); })
                                    : load(xdt, args_[0], offset_of(0, lin, idx));
                    Value *y = load(xdt, args_[1], offset_of(1, lin, idx));
                    auto term = [&](Value *acc) { return std::vector<Value *>{b_.CreateSelect(inside, acc, a[0])}; };
                    if (!fp) return term(b_.CreateAdd(a[0], b_.CreateMul(x, y)));
                    Value *xd = to_double(x), *yd = to_double(y);
                    if (scale == nullptr) return term(fma(xd, yd, a[0]));
                    // Scaled: finite factors only (inf * tiny must stay inf, not become inf * 0).
                    Value *both = b_.CreateAnd(b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {xd}), f64c(HUGE_VAL)),
                                               b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {yd}), f64c(HUGE_VAL)));
                    return term(b_.CreateSelect(both, fma(b_.CreateFMul(xd, scale), b_.CreateFMul(yd, scale), a[0]),
                                                b_.CreateFAdd(a[0], b_.CreateFMul(xd, yd))));
                  })[0];
  };
  Value *sum = dot(cols_, nullptr);
  if (xdt == PK_DTYPE_F64) {
    // f64 products (up to 2^2048) may overflow where the exact sum does not, or cancel as inf - inf: a
    // non-finite sum is redone with both factors scaled by 2^-550 and scaled back. A sum that overflowed has
    // terms near 2^1024, so what underflows in the second pass (2^26 absolute per term) is far below the
    // reduction bound. Infinite or NaN inputs give the same non-finite result either way.
    Value *finite = b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {sum}), f64c(HUGE_VAL));
    Value *scaled = dot(b_.CreateSelect(finite, i64c(0), cols_), f64c(0x1p-550));
    sum = b_.CreateSelect(finite, sum, b_.CreateFMul(b_.CreateFMul(scaled, f64c(0x1p550)), f64c(0x1p550)));
  }
  store(ydt, fp ? from_double(sum, ydt) : sum, args_[2], arg_offset(2, kRow, j, row0, i64c(0)));
}

void Emitter::build_order_line(const Line &l) {
  const Node &n = l.n;
  const int32_t xdt = l.xdt, ydt = l.ydt;
  const bool fp = l.fp, uns = l.uns;
  Value *j = l.j, *row0 = l.row0;
  // The sort order: NaN above +inf, -0 equal to +0 (so they keep their input order), integers exactly.
  auto less = [&](Value *a, Value *c) -> Value * {
    if (fp) return b_.CreateAnd(b_.CreateFCmpORD(a, a), b_.CreateOr(b_.CreateFCmpUNO(c, c), b_.CreateFCmpOLT(a, c)));
    return uns ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c);
  };
  const bool flag = n.round_mode != 0;  // sort: descending; topk: largest; searchsorted: right
  // The work item's own value: searchsorted's value (input 1), or the element being placed (input 0).
  const int own = n.op_id == PK_OP_SEARCHSORTED ? 1 : 0;
  Value *v = load(xdt, args_[own], arg_offset(own, kRow, j, row0, i64c(0)));
  if (n.op_id == PK_OP_SEARCHSORTED) {
    // The count of sequence elements below the value (left) or not above it (right).
    Value *count = loop_cols({i64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
      Value *e = load(xdt, args_[0], arg_offset(0, kElem, j, row0, c));
      Value *in = flag ? b_.CreateNot(less(v, e)) : less(e, v);
      return std::vector<Value *>{b_.CreateAdd(a[0], b_.CreateZExt(in, i64_))};
    })[0];
    store(PK_DTYPE_I64, count, args_[2], arg_offset(2, kRow, j, row0, i64c(0)));
    return;
  }
  // The element at position i of its line goes after every element that precedes it in the (stable) order.
  Value *i = b_.CreateURem(j, cols_);
  Value *rank = loop_cols({i64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
    Value *e = load(xdt, args_[1], arg_offset(1, kElem, j, row0, c));
    Value *e_first = flag ? less(v, e) : less(e, v);
    Value *tie = b_.CreateAnd(b_.CreateNot(b_.CreateOr(less(v, e), less(e, v))), b_.CreateICmpULT(c, i));
    return std::vector<Value *>{b_.CreateAdd(a[0], b_.CreateZExt(b_.CreateOr(e_first, tie), i64_))};
  })[0];
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  auto *put = llvm::BasicBlock::Create(ctx_, "put", f), *done = llvm::BasicBlock::Create(ctx_, "put_done", f);
  b_.CreateCondBr(b_.CreateICmpSLT(rank, extra_[0]), put, done);
  b_.SetInsertPoint(put);
  store(ydt, v, args_[2], arg_offset(2, kElem, j, row0, rank));
  store(PK_DTYPE_I64, i, args_[3], arg_offset(3, kElem, j, row0, rank));
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

// This item's element of a (and of the output). Index entries that land on it are walked in the oracle's
// order (row-major over the index): the last one wins, or all are combined.
void Emitter::build_scatter_line(const Line &l) {
  const Node &n = l.n;
  const int32_t xdt = l.xdt, ydt = l.ydt;
  Value *j = l.j, *row0 = l.row0;
  const bool put = n.op_id == PK_OP_INDEX_PUT;
  const int out_arg = nargs_ - 1, data_arg = put ? 1 : 2;
  Value *self = line_x_row(l, 0);
  // Where the item is: scatter, its position t along dim (the last leading axis); index_put, its first k
  // coordinates (none is above 0 when the dense kernel runs: every axis of a then has extent 1).
  std::vector<Value *> want;
  if (put) {
    std::vector<Value *> idx = rank_ ? unravel(row0) : std::vector<Value *>{};
    for (int k = 2; k < out_arg; ++k) want.push_back(rank_ ? idx[static_cast<size_t>(k - 2)] : i64c(0));
  } else {
    want.push_back(b_.CreateURem(j, extra_[0]));
  }
  auto lands = [&](Value *c) {
    Value *all = b_.getTrue();
    for (size_t k = 0; k < want.size(); ++k) {
      const int arg = put ? static_cast<int>(k) + 2 : 1;
      const int32_t idt = r_.dtypes[r_.inputs[static_cast<size_t>(arg)]];
      Value *ix = load(idt, args_[arg], arg_offset(arg, kElem, j, row0, c));
      if (idt != PK_DTYPE_I64) ix = b_.CreateSExt(ix, i64_);
      all = b_.CreateAnd(all, b_.CreateICmpEQ(ix, want[k]));  // out-of-range indices never equal
    }
    return all;
  };
  auto value_at = [&](Value *c) { return load(xdt, args_[data_arg], arg_offset(data_arg, kElem, j, row0, c)); };
  const bool combine = n.op_id == PK_OP_SCATTER_REDUCE || (put && n.round_mode != 0);
  Value *result;
  if (!combine) {
    result = loop_cols({self}, [&](Value *c, const std::vector<Value *> &a) {
      Value *hit = lands(c);
      // The load sits behind the select's condition only logically: value_at reads a valid element either way.
      return std::vector<Value *>{b_.CreateSelect(hit, value_at(c), a[0])};
    })[0];
  } else {
    // The reduction's own accumulator (f64 for float sums and products); the first term is taken as is, so
    // a lone -0 stays -0.
    Node red;
    const int32_t kind = put ? PK_REDUCE_KIND_SUM : n.round_mode % kIncludeSelf;
    red.op_id = kind == PK_REDUCE_KIND_SUM    ? PK_OP_SUM
                : kind == PK_REDUCE_KIND_PROD ? PK_OP_PROD
                : kind == PK_REDUCE_KIND_AMAX ? PK_OP_AMAX
                                              : PK_OP_AMIN;
    const bool with_self = put || (n.round_mode & kIncludeSelf) != 0;
    std::vector<Value *> acc0 = with_self ? red_first(red, xdt, self, i64c(0)) : red_init(red, xdt);
    const size_t k = acc0.size();
    acc0.push_back(b_.getInt1(with_self));  // whether a term has been taken
    std::vector<Value *> acc = loop_cols(acc0, [&](Value *c, const std::vector<Value *> &a) {
      Value *hit = lands(c);
      Value *x = value_at(c);
      const std::vector<Value *> st(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k));
      const std::vector<Value *> stepped = red_step(red, xdt, st, x, c), firsted = red_first(red, xdt, x, c);
      std::vector<Value *> out;
      for (size_t i = 0; i < k; ++i)
        out.push_back(b_.CreateSelect(hit, b_.CreateSelect(a[k], stepped[i], firsted[i]), st[i]));
      out.push_back(b_.CreateOr(a[k], hit));
      return out;
    });
    const std::vector<Value *> fin(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(k));
    result = b_.CreateSelect(acc[k], red_final(red, xdt, ydt, fin), self);
  }
  store(ydt, result, args_[out_arg], arg_offset(out_arg, kRow, j, row0, i64c(0)));
}

// >= (<=) moves the index to the last occurrence of the extremum; a NaN is the extremum once seen (a later
// NaN moves the index, a number never replaces it).
void Emitter::build_cumext_line(const Line &l) {
  const Node &n = l.n;
  const int32_t xdt = l.xdt, ydt = l.ydt;
  const bool fp = l.fp, uns = l.uns;
  const bool mx = n.op_id == PK_OP_CUMMAX;
  llvm::Type *ct = compute_type(xdt);
  loop_cols({llvm::Constant::getNullValue(ct), i64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
    Value *x = line_x(l, c);
    Value *take;
    if (fp) {
      Value *cmp = mx ? b_.CreateFCmpOGE(x, a[0]) : b_.CreateFCmpOLE(x, a[0]);
      take = b_.CreateOr(b_.CreateFCmpUNO(x, x), b_.CreateAnd(b_.CreateFCmpORD(a[0], a[0]), cmp));
    } else {
      take = mx ? (uns ? b_.CreateICmpUGE(x, a[0]) : b_.CreateICmpSGE(x, a[0]))
                : (uns ? b_.CreateICmpULE(x, a[0]) : b_.CreateICmpSLE(x, a[0]));
    }
    take = b_.CreateOr(take, b_.CreateICmpEQ(c, i64c(0)));
    Value *m = b_.CreateSelect(take, x, a[0]), *mi = b_.CreateSelect(take, c, a[1]);
    line_store(l, 1, ydt, m, c);
    line_store(l, 2, PK_DTYPE_I64, mi, c);
    return std::vector<Value *>{m, mi};
  });
}

}  // namespace pk::codegen::detail
