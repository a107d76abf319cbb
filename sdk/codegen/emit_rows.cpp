// emit_rows.cpp — row programs (see emit.cpp for the numerics): the loops over a row's columns, the passes of
// a row program, and the accumulators of the reductions (float sums and products as the reference computes them).
#include "emit_internal.hpp"

#include <cmath>
#include <limits>

namespace pk::codegen::detail {

// ------------------------------------------------------------------------------------------- row programs

std::vector<Value *> Emitter::loop_n(Value *count, const std::vector<Value *> &init, const Step &step,
                                     const char *name) {
  return loop(count, init, step, name, false);
}

std::vector<Value *> Emitter::loop_until(Value *count, const std::vector<Value *> &init, const Step &step,
                                         const char *name) {
  return loop(count, init, step, name, true);
}

std::vector<Value *> Emitter::loop(Value *count, const std::vector<Value *> &init, const Step &step, const char *name,
                                   bool early_exit) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  auto *pre = b_.GetInsertBlock();
  auto *body = llvm::BasicBlock::Create(ctx_, name, f);
  auto *done = llvm::BasicBlock::Create(ctx_, std::string(name) + "_done", f);
  b_.CreateCondBr(b_.CreateICmpSGT(count, i64c(0)), body, done);
  b_.SetInsertPoint(body);
  auto *c = b_.CreatePHI(i64_, 2);
  c->addIncoming(i64c(0), pre);
  std::vector<llvm::PHINode *> acc;
  std::vector<Value *> cur;
  for (Value *v : init) {
    acc.push_back(b_.CreatePHI(v->getType(), 2));
    acc.back()->addIncoming(v, pre);
    cur.push_back(acc.back());
  }
  std::vector<Value *> next = step(c, cur);
  Value *stop = nullptr;
  if (early_exit) {
    stop = next.back();
    next.pop_back();
  }
  Value *c1 = b_.CreateAdd(c, i64c(1));
  auto *latch = b_.GetInsertBlock();
  c->addIncoming(c1, latch);
  for (size_t k = 0; k < acc.size(); ++k) acc[k]->addIncoming(next[k], latch);
  Value *more = b_.CreateICmpSLT(c1, count);
  if (stop != nullptr) more = b_.CreateAnd(more, b_.CreateNot(stop));
  b_.CreateCondBr(more, body, done);
  b_.SetInsertPoint(done);
  std::vector<Value *> out;
  for (size_t k = 0; k < init.size(); ++k) {
    auto *phi = b_.CreatePHI(init[k]->getType(), 2);
    phi->addIncoming(init[k], pre);
    phi->addIncoming(next[k], latch);
    out.push_back(phi);
  }
  return out;
}

Value *Emitter::arg_offset(int arg, Kind k, Value *j, Value *row0, Value *c) {
  if (rank_ == 0) return is_uniform(arg) ? i64c(0) : k == kRow ? j : k == kCol ? c : b_.CreateAdd(row0, c);
  // Row values have stride 0 on the reduced axes and column values on the others, so one formula serves all.
  Value *lin = k == kRow ? row0 : b_.CreateAdd(row0, c);
  return offset_of(arg, lin, unravel(lin));
}

std::vector<Value *> Emitter::elem_values(const std::vector<Value *> &rowv, const std::vector<bool> &need,
                                          const std::vector<int> &stashed, Value *j, Value *row0, Value *c) {
  std::vector<Value *> val = rowv;
  for (size_t k = 0; k < r_.inputs.size(); ++k) {
    const uint32_t v = r_.inputs[k];
    if (need[v]) val[v] = load(r_.dtypes[v], args_[k], arg_offset(static_cast<int>(k), r_.kind(v), j, row0, c));
  }
  Value *lin = nullptr;
  for (const Node &n : r_.nodes) {
    if (!need[n.output] || is_reduction_op(n.op_id)) continue;
    if (stashed[n.output] >= 0) {
      const int arg = stashed[n.output];
      val[n.output] = load(r_.dtypes[n.output], args_[arg], arg_offset(arg, kElem, j, row0, c));
      continue;
    }
    if (n.op_id == PK_OP_IOTA && lin == nullptr) lin = b_.CreateAdd(row0, c);
    val[n.output] = apply(n, val, lin);
  }
  return val;
}

// A row program makes passes over each row: one per group of reductions that need no row value still to be
// computed (independent reductions share a pass), then one that stores the element outputs. An element value
// a later pass needs again — softmax's exp(x - max) — is stored in an element output's memory in the pass that
// computes it and loaded from there afterwards instead of recomputed; the last pass overwrites it in place with
// the output. (Dense layout only: strided outputs may reach one element from several positions.)
void Emitter::build_rows(Value *j) {
  const size_t nv = r_.dtypes.size(), nn = r_.nodes.size();
  const size_t nin = r_.inputs.size();
  // Empty reduced axes count as extent 1 in the index math (unravel does the same), so each row keeps its place.
  Value *row0 = b_.CreateMul(j, b_.CreateSelect(b_.CreateICmpEQ(cols_, i64c(0)), i64c(1), cols_));
  std::vector<int> producer(nv, -1);
  for (size_t i = 0; i < nn; ++i) producer[r_.nodes[i].output] = static_cast<int>(i);

  // --- plan: passes, what each computes, which values are stashed where ---
  std::vector<int> stashed(nv, -1);  // output argument holding the value, once a pass has stored it there
  // Element values (and the row values they read, in `rows`) needed to compute v at a column.
  std::function<void(uint32_t, std::vector<bool> &, std::vector<bool> *)> mark =
      [&](uint32_t v, std::vector<bool> &need, std::vector<bool> *rows) {
        if (r_.kind(v) == kRow) {
          if (rows) (*rows)[v] = true;
          return;
        }
        if (need[v]) return;
        need[v] = true;
        if (producer[v] < 0 || stashed[v] >= 0) return;
        const Node &n = r_.nodes[producer[v]];
        if (n.op_id != PK_OP_FILL)
          for (uint32_t u : n.inputs) mark(u, need, rows);
      };
  std::vector<bool> avail(nv, false);  // row values known before the pass being planned
  for (uint32_t v : r_.inputs)
    if (r_.kind(v) == kRow) avail[v] = true;
  auto compute_rows = [&](bool emit, std::vector<Value *> *rowv) {
    for (const Node &n : r_.nodes) {
      if (is_reduction_op(n.op_id) || r_.kind(n.output) != kRow || avail[n.output]) continue;
      bool ready = true;
      if (n.op_id != PK_OP_FILL)
        for (uint32_t u : n.inputs) ready = ready && avail[u];
      if (!ready) continue;
      avail[n.output] = true;
      if (emit) (*rowv)[n.output] = apply(n, *rowv, row0);
    }
  };
  struct Pass {
    std::vector<size_t> reds;    // reduction nodes
    std::vector<bool> need;      // element values computed or loaded
    std::vector<uint32_t> save;  // values this pass stores in their stash
    std::vector<int> stashed;    // stash state the pass reads with
  };
  std::vector<Pass> passes;
  std::vector<bool> done(nn, false), slot_used(r_.outputs.size(), false);
  for (;;) {
    compute_rows(false, nullptr);
    Pass p;
    p.need.assign(nv, false);
    p.stashed = stashed;
    for (size_t i = 0; i < nn; ++i) {
      const Node &n = r_.nodes[i];
      if (done[i] || !is_reduction_op(n.op_id)) continue;
      std::vector<bool> need(nv, false), rows(nv, false);
      mark(n.inputs[0], need, &rows);
      bool ready = true;
      for (size_t v = 0; v < nv; ++v) ready = ready && (!rows[v] || avail[v]);
      if (!ready) continue;
      p.reds.push_back(i);
      for (size_t v = 0; v < nv; ++v) p.need[v] = p.need[v] || need[v];
    }
    if (p.reds.empty()) break;
    for (size_t i : p.reds) done[i] = true;
    if (rank_ == 0) {
      // Stash candidates, latest first (the furthest from the loads saves the most recomputation).
      for (size_t i = nn; i-- > 0;) {
        const Node &n = r_.nodes[i];
        const uint32_t v = n.output;
        if (!p.need[v] || r_.kind(v) != kElem || is_reduction_op(n.op_id) || n.op_id == PK_OP_FILL ||
            n.op_id == PK_OP_IOTA || stashed[v] >= 0)
          continue;
        // Needed later: by a reduction of a later pass or by an element output (with the stashes so far).
        std::vector<bool> later(nv, false);
        for (size_t q = 0; q < nn; ++q)
          if (!done[q] && is_reduction_op(r_.nodes[q].op_id)) mark(r_.nodes[q].inputs[0], later, nullptr);
        for (uint32_t o : r_.outputs)
          if (r_.kind(o) == kElem) mark(o, later, nullptr);
        if (!later[v]) continue;
        int slot = -1;
        for (size_t k = 0; k < r_.outputs.size() && slot < 0; ++k)
          if (r_.outputs[k] == v && !slot_used[k]) slot = static_cast<int>(k);
        for (size_t k = 0; k < r_.outputs.size() && slot < 0; ++k)
          if (!slot_used[k] && r_.kind(r_.outputs[k]) == kElem && r_.dtypes[r_.outputs[k]] == r_.dtypes[v])
            slot = static_cast<int>(k);
        if (slot < 0) continue;
        slot_used[slot] = true;
        stashed[v] = static_cast<int>(nin) + slot;
        p.save.push_back(v);
      }
    }
    for (size_t i : p.reds) avail[r_.nodes[i].output] = true;
    passes.push_back(std::move(p));
  }

  // --- emit ---
  std::fill(avail.begin(), avail.end(), false);
  std::vector<Value *> rowv(nv, nullptr);
  for (size_t k = 0; k < nin; ++k) {
    const uint32_t v = r_.inputs[k];
    if (r_.kind(v) != kRow) continue;
    rowv[v] = load(r_.dtypes[v], args_[k], arg_offset(static_cast<int>(k), kRow, j, row0, i64c(0)));
    avail[v] = true;
  }
  for (const Pass &p : passes) {
    compute_rows(true, &rowv);
    std::vector<Value *> init;
    std::vector<size_t> first;  // each reduction's first accumulator in the combined list
    for (size_t i : p.reds) {
      const Node &n = r_.nodes[i];
      first.push_back(init.size());
      for (Value *a : red_init(n, r_.dtypes[n.inputs[0]])) init.push_back(a);
    }
    first.push_back(init.size());
    std::vector<Value *> acc = loop_cols(init, [&](Value *c, const std::vector<Value *> &a) {
      std::vector<Value *> val = elem_values(rowv, p.need, p.stashed, j, row0, c);
      for (uint32_t v : p.save)
        store(r_.dtypes[v], val[v], args_[stashed[v]], arg_offset(stashed[v], kElem, j, row0, c));
      std::vector<Value *> next;
      for (size_t r = 0; r < p.reds.size(); ++r) {
        const Node &n = r_.nodes[p.reds[r]];
        std::vector<Value *> mine(a.begin() + static_cast<std::ptrdiff_t>(first[r]),
                                  a.begin() + static_cast<std::ptrdiff_t>(first[r + 1]));
        for (Value *x : red_step(n, r_.dtypes[n.inputs[0]], mine, val[n.inputs[0]], c)) next.push_back(x);
      }
      return next;
    });
    for (size_t r = 0; r < p.reds.size(); ++r) {
      const Node &n = r_.nodes[p.reds[r]];
      std::vector<Value *> mine(acc.begin() + static_cast<std::ptrdiff_t>(first[r]),
                                acc.begin() + static_cast<std::ptrdiff_t>(first[r + 1]));
      rowv[n.output] = red_final(n, r_.dtypes[n.inputs[0]], r_.dtypes[n.output], mine);
      avail[n.output] = true;
    }
  }
  compute_rows(true, &rowv);
  std::vector<bool> need(nv, false);
  bool any = false;
  for (uint32_t v : r_.outputs)
    if (r_.kind(v) != kRow) {
      mark(v, need, nullptr);
      any = true;
    }
  if (any) {
    loop_cols({}, [&](Value *c, const std::vector<Value *> &) {
      std::vector<Value *> val = elem_values(rowv, need, stashed, j, row0, c);
      for (size_t k = 0; k < r_.outputs.size(); ++k) {
        const uint32_t v = r_.outputs[k];
        if (r_.kind(v) == kRow) continue;
        const int arg = static_cast<int>(nin + k);
        store(r_.dtypes[v], val[v], args_[arg], arg_offset(arg, r_.kind(v), j, row0, c));
      }
      return std::vector<Value *>{};
    });
  }
  for (size_t k = 0; k < r_.outputs.size(); ++k) {
    const uint32_t v = r_.outputs[k];
    if (r_.kind(v) != kRow) continue;
    const int arg = static_cast<int>(nin + k);
    store(r_.dtypes[v], rowv[v], args_[arg], arg_offset(arg, kRow, j, row0, i64c(0)));
  }
}

// Accumulators: floats sum and multiply in f64 and round once at the end (tighter than the reduction
// contract, and the same on every target); extrema and the logical/bitwise folds are exact in the compute type.
std::vector<Value *> Emitter::red_init(const Node &n, int32_t xdt) {
  if (is_complex_dtype(xdt)) return cx().red_init(n.op_id);
  const bool fp = is_fp(xdt);
  llvm::Type *ct = compute_type(xdt);
  const meta::Combine combine = combine_of(n.op_id);
  switch (combine) {
    case meta::Combine::add:
      if (xdt == PK_DTYPE_F64) return fsum_init();
      return {fp ? f64c(0.0) : llvm::ConstantInt::get(ct, 0)};
    case meta::Combine::mul:
      if (fp) return fprod_init();
      return {llvm::ConstantInt::get(ct, 1)};
    case meta::Combine::max:
    case meta::Combine::min: {
      const bool mx = combine == meta::Combine::max;
      if (xdt == PK_DTYPE_F8E4M3FN) return {fpc(ct, mx ? -448.0 : 448.0)};  // no infinities
      if (fp) return {fpc(ct, mx ? -HUGE_VAL : HUGE_VAL)};
      const unsigned w = ct->getIntegerBitWidth();
      if (is_unsigned(xdt))
        return {mx ? llvm::ConstantInt::get(ct, 0) : llvm::ConstantInt::get(ct, llvm::APInt::getMaxValue(w))};
      return {llvm::ConstantInt::get(ct, mx ? llvm::APInt::getSignedMinValue(w) : llvm::APInt::getSignedMaxValue(w))};
    }
    case meta::Combine::logical_or:
      return {b_.getFalse()};
    case meta::Combine::logical_and:
      return {b_.getTrue()};
    case meta::Combine::bit_xor:
      return {llvm::ConstantInt::get(ct, 0)};
    default:  // argmax, argmin: best value, its index, and whether a NaN ended the search
      return {fp ? fpc(ct, 0.0) : llvm::ConstantInt::get(ct, 0), i64c(0), b_.getFalse()};
  }
}

std::vector<Value *> Emitter::red_step(const Node &n, int32_t xdt, const std::vector<Value *> &a, Value *x, Value *c) {
  if (is_complex_dtype(xdt)) return cx().red_step(n.op_id, a, x);
  const bool fp = is_fp(xdt), uns = is_unsigned(xdt);
  // On the host, the f64 accumulations may be reassociated so that the loop vectorizes (partial sums per lane:
  // the order changes, the f64 accumulator keeps the error far below the output's rounding). GPU threads
  // accumulate in order, and the emulator must compute what the GPU does.
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  if (target_ == Target::cpu) {
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    b_.setFastMathFlags(fmf);
  }
  const meta::Combine combine = combine_of(n.op_id);
  switch (combine) {
    case meta::Combine::add:
      if (xdt == PK_DTYPE_F64) return fsum_step(a, x);
      return {fp ? b_.CreateFAdd(a[0], to_double(x)) : b_.CreateAdd(a[0], x)};
    case meta::Combine::mul:
      if (fp) return fprod_step(a, to_double(x));
      return {b_.CreateMul(a[0], x)};
    case meta::Combine::max:
    case meta::Combine::min: {
      const bool mx = combine == meta::Combine::max;
      // llvm.maximum/minimum have exactly fmaximum's semantics (NaN propagates, -0 < +0) and vectorize as
      // reductions; the NVPTX backend has no f64 lowering for them, so the GPU keeps the compare-and-select.
      if (fp && target_ == Target::cpu) {
        b_.clearFastMathFlags();
        return {intr(mx ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, {a[0], x})};
      }
      if (fp) return {fmaximum(a[0], x, mx)};
      Value *pick = mx ? (uns ? b_.CreateICmpUGT(x, a[0]) : b_.CreateICmpSGT(x, a[0]))
                       : (uns ? b_.CreateICmpULT(x, a[0]) : b_.CreateICmpSLT(x, a[0]));
      return {b_.CreateSelect(pick, x, a[0])};
    }
    case meta::Combine::logical_or:
      return {b_.CreateOr(a[0], truth(x, xdt))};
    case meta::Combine::logical_and:
      return {b_.CreateAnd(a[0], truth(x, xdt))};
    case meta::Combine::bit_xor:
      return {b_.CreateXor(a[0], x)};
    default: {
      // The first extremum in index order; the first NaN wins and ends the search.
      const bool mx = combine == meta::Combine::argmax;
      Value *nan = fp ? b_.CreateFCmpUNO(x, x) : b_.getFalse();
      Value *better = fp   ? (mx ? b_.CreateFCmpOGT(x, a[0]) : b_.CreateFCmpOLT(x, a[0]))
                      : mx ? (uns ? b_.CreateICmpUGT(x, a[0]) : b_.CreateICmpSGT(x, a[0]))
                           : (uns ? b_.CreateICmpULT(x, a[0]) : b_.CreateICmpSLT(x, a[0]));
      Value *first = b_.CreateICmpEQ(c, i64c(0));
      Value *take = b_.CreateAnd(b_.CreateNot(a[2]), b_.CreateOr(first, b_.CreateOr(nan, better)));
      return {b_.CreateSelect(take, x, a[0]), b_.CreateSelect(take, c, a[1]),
              b_.CreateOr(a[2], b_.CreateAnd(take, nan))};
    }
  }
}

Value *Emitter::red_final(const Node &n, int32_t xdt, int32_t ydt, const std::vector<Value *> &a) {
  const meta::Combine combine = combine_of(n.op_id);
  if (combine == meta::Combine::argmax || combine == meta::Combine::argmin) return a[1];
  if (is_complex_dtype(xdt)) return cx().red_final(n.op_id, ydt, a);
  if (combine == meta::Combine::add && xdt == PK_DTYPE_F64) return from_double(fsum_final(a), ydt);
  if (combine == meta::Combine::mul && is_fp(xdt)) return from_double(fprod_final(a), ydt);
  if (combine == meta::Combine::add && is_fp(xdt)) return from_double(a[0], ydt);
  return a[0];
}

std::vector<Value *> Emitter::red_first(const Node &n, int32_t xdt, Value *x, Value *c) {
  const meta::Combine combine = combine_of(n.op_id);
  if (combine == meta::Combine::add && xdt == PK_DTYPE_F64) {
    Value *fin = b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {x}), f64c(HUGE_VAL));
    return {b_.CreateSelect(fin, x, f64c(0.0)), b_.CreateSelect(fin, b_.CreateFMul(x, f64c(0x1p-600)), f64c(0.0)),
            b_.CreateSelect(fin, f64c(0.0), x)};
  }
  if (combine == meta::Combine::mul && is_fp(xdt)) return fprod_step(fprod_init(), to_double(x));  // 1 * x is x exactly
  if (combine == meta::Combine::add && is_fp(xdt)) return {to_double(x)};
  return red_step(n, xdt, red_init(n, xdt), x, c);
}

std::vector<Value *> Emitter::fsum_init() {
  return {f64c(0.0), f64c(0.0), f64c(0.0)};
}

std::vector<Value *> Emitter::fsum_step(const std::vector<Value *> &a, Value *x) {
  Value *fin = b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {x}), f64c(HUGE_VAL));
  return {b_.CreateFAdd(a[0], b_.CreateSelect(fin, x, f64c(0.0))),
          b_.CreateFAdd(a[1], b_.CreateSelect(fin, b_.CreateFMul(x, f64c(0x1p-600)), f64c(0.0))),
          b_.CreateSelect(fin, a[2], b_.CreateFAdd(a[2], x))};
}

Value *Emitter::fsum_final(const std::vector<Value *> &a) {
  Value *over = b_.CreateFCmpOEQ(intr(llvm::Intrinsic::fabs, {a[0]}), f64c(HUGE_VAL));
  Value *finite = b_.CreateSelect(over, b_.CreateFMul(a[1], f64c(0x1p600)), a[0]);
  return b_.CreateSelect(b_.CreateFCmpUNE(a[2], f64c(0.0)), a[2], finite);  // an infinity or NaN seen
}

std::vector<Value *> Emitter::fprod_init() {
  return {f64c(0.5), i64c(1), b_.getFalse(), b_.getInt32(0)};
}

Value *Emitter::pow2_d(Value *e) {
  return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, i64c(1023)), i64c(52)), f64_);
}

std::vector<Value *> Emitter::fprod_step(const std::vector<Value *> &a, Value *x) {
  Value *ax = intr(llvm::Intrinsic::fabs, {x});
  Value *is_nan = b_.CreateFCmpUNO(x, x), *is_zero = b_.CreateFCmpOEQ(ax, f64c(0.0));
  Value *is_inf = b_.CreateFCmpOEQ(ax, f64c(HUGE_VAL));
  // |x| = mx 2^ex with mx in [0.5, 1) (subnormals scaled by 2^64 first), for a finite nonzero x.
  Value *sub = b_.CreateFCmpOLT(ax, f64c(0x1p-1022));
  Value *xs = b_.CreateSelect(sub, b_.CreateFMul(ax, f64c(0x1p64)), ax);
  Value *bits = b_.CreateBitCast(xs, i64_);
  Value *ex = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, i64c(52)), i64c(0x7ff)), i64c(1022));
  ex = b_.CreateSub(ex, b_.CreateSelect(sub, i64c(64), i64c(0)));
  Value *mx =
      b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, i64c(0x000fffffffffffffLL)), i64c(0x3fe0000000000000LL)), f64_);
  Value *m = b_.CreateFMul(a[0], mx);  // in [0.25, 1): one rounding
  Value *low = b_.CreateFCmpOLT(m, f64c(0.5));
  m = b_.CreateSelect(low, b_.CreateFMul(m, f64c(2.0)), m);
  Value *e = b_.CreateSub(b_.CreateAdd(a[1], ex), b_.CreateSelect(low, i64c(1), i64c(0)));
  // Long double's range: beyond it the reference's product is infinite (zero).
  Value *kind = a[3];
  Value *finite_x = b_.CreateNot(b_.CreateOr(is_nan, b_.CreateOr(is_zero, is_inf)));
  Value *fin = b_.CreateICmpEQ(kind, b_.getInt32(0));
  Value *upd = b_.CreateAnd(fin, finite_x);
  Value *nk = kind;
  nk = b_.CreateSelect(b_.CreateAnd(upd, b_.CreateICmpSGT(e, i64c(16384))), b_.getInt32(2), nk);
  nk = b_.CreateSelect(b_.CreateAnd(upd, b_.CreateICmpSLT(e, i64c(-16445))), b_.getInt32(1), nk);
  // Zero and infinity: finite -> that kind; zero * inf and inf * zero -> NaN; NaN sticks.
  Value *zk = b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(2)), b_.getInt32(3),
                              b_.CreateSelect(fin, b_.getInt32(1), kind));
  Value *ik = b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(1)), b_.getInt32(3),
                              b_.CreateSelect(fin, b_.getInt32(2), kind));
  nk = b_.CreateSelect(is_zero, zk, nk);
  nk = b_.CreateSelect(is_inf, ik, nk);
  nk = b_.CreateSelect(is_nan, b_.getInt32(3), nk);
  Value *sign = b_.CreateXor(a[2], b_.CreateICmpSLT(b_.CreateBitCast(x, i64_), i64c(0)));
  return {b_.CreateSelect(upd, m, a[0]), b_.CreateSelect(upd, e, a[1]), sign, nk};
}

Value *Emitter::fprod_final(const std::vector<Value *> &a) {
  // 2^e as two factors (each a normal power of two): one rounding, subnormal results included.
  Value *e = b_.CreateSelect(b_.CreateICmpSGT(a[1], i64c(1100)), i64c(1100), a[1]);
  e = b_.CreateSelect(b_.CreateICmpSLT(e, i64c(-1100)), i64c(-1100), e);
  Value *e1 = b_.CreateSDiv(e, i64c(2)), *e2 = b_.CreateSub(e, e1);
  Value *mag = b_.CreateFMul(b_.CreateFMul(a[0], pow2_d(e1)), pow2_d(e2));
  Value *kind = a[3];
  mag = b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(1)), f64c(0.0), mag);
  mag = b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(2)), f64c(HUGE_VAL), mag);
  Value *v = b_.CreateSelect(a[2], b_.CreateFNeg(mag), mag);
  return b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(3)), f64c(std::nan("")), v);
}

}  // namespace pk::codegen::detail
