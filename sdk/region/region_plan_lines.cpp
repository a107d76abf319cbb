// region_plan_lines.cpp — the launches of the line ops (scans, dot_general, sort/topk, searchsorted, the
// scatters, index_put, the FFTs, convolution) and gather: each op's element space and every argument's view
// over it (see region_plan.cpp for the other ops). No LLVM here.
#include <algorithm>

#include "primkit/op_info.hpp"
#include "primkit/region.hpp"

#include "region_internal.hpp"

namespace pk::codegen::detail {

// A scan along `dim`: the other axes in order, then dim, which each work item walks (one line per item).
bool plan_scan(uint32_t op_id, const pk_tensor *in, const pk_tensor *outs, uint32_t nout, int64_t dim,
               std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(outs[0].dtype),
                   nout > 1 ? pk::meta::dtype_id(outs[1].dtype) : -1};
  PlannedLaunch l;
  if (!single(op_id, dt, 1, dt + 1, nout, nullptr, l.region, why)) return false;
  if (l.region.outputs.size() != nout) {
    why = text("%s: wrong number of outputs", pk::meta::op_name(op_id));
    return false;
  }
  std::vector<Strides> st = {strides_of(in[0])};
  for (uint32_t k = 0; k < nout; ++k) st.push_back(strides_of(outs[k]));
  std::vector<Strides> perm(st.size());
  std::vector<int32_t> order;
  for (int32_t d = 0; d < in[0].ndim; ++d)
    if (d != dim) order.push_back(d);
  if (in[0].ndim > 0) order.push_back(static_cast<int32_t>(dim));
  for (int32_t d : order) {
    l.shape.push_back(in[0].shape[d]);
    for (size_t k = 0; k < st.size(); ++k) perm[k].push_back(st[k][static_cast<size_t>(d)]);
  }
  if (order.empty()) {  // a 0-d tensor is one line of one element
    l.shape.push_back(1);
    for (Strides &p : perm) p.push_back(0);
  }
  l.red = 1;
  for (size_t k = 0; k < st.size(); ++k) l.args.push_back(PlanArg{static_cast<uint32_t>(k), 0, perm[k]});
  if (numel(l.shape) > 0) out.push_back(std::move(l));
  return true;
}

// out[i] = a[i with axis dim replaced by index[i]] (gather; index_select reads its 1-D index along dim only).
bool plan_gather(uint32_t op_id, const pk_tensor *in, const pk_tensor &o, int64_t dim, std::vector<PlannedLaunch> &out,
                 std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 2, dt + 2, 1, nullptr, l.region, why)) return false;
  const size_t d = static_cast<size_t>(dim);
  Strides as = strides_of(in[0]), os = strides_of(o), idx = strides_of(in[1]);
  l.shape = shape_of(o);
  if (op_id == PK_OP_INDEX_SELECT) {
    Strides s(static_cast<size_t>(o.ndim), 0);
    s[d] = idx.empty() ? 0 : idx[0];
    idx = s;
  }
  int32_t lanes = 1;
  bits_dtype(dt[0], lanes);
  if (lanes > 1) {  // 16-byte elements: a trailing axis of two i64 words
    for (Strides *st : {&as, &os})
      for (int64_t &v : *st) v *= lanes;
    as.push_back(1);
    os.push_back(1);
    idx.push_back(0);
    l.shape.push_back(lanes);
  }
  if (l.shape.size() > PK_MAX_RANK) {
    why = "rank too large for the code generator";
    return false;
  }
  Strides a = as;
  a[d] = 0;
  l.args = {PlanArg{0, 0, a}, PlanArg{1, 0, idx}, PlanArg{2, 0, os}};
  l.extra = {in[0].shape[d], as[d]};
  if (numel(l.shape) > 0) out.push_back(std::move(l));
  return true;
}

// A dot product per output element: the element space is the batch axes, a's free axes, b's free axes (the
// output's axes, in order), then the contracting axes, which each work item walks. a has stride 0 on b's free
// axes and b on a's; axes of extent 1 are dropped so that the space fits the generator's rank limit.
bool plan_dot(uint32_t op_id, const pk_tensor *in, const pk_tensor &o, const std::vector<int64_t> &lb,
              const std::vector<int64_t> &rb, const std::vector<int64_t> &lc, const std::vector<int64_t> &rc,
              std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 2, dt + 2, 1, nullptr, l.region, why)) return false;
  const Strides as = strides_of(in[0]), bs = strides_of(in[1]), os = strides_of(o);
  auto free_axes = [](int32_t rank, const std::vector<int64_t> &x, const std::vector<int64_t> &y) {
    std::vector<int64_t> f;
    for (int64_t k = 0; k < rank; ++k)
      if (std::find(x.begin(), x.end(), k) == x.end() && std::find(y.begin(), y.end(), k) == y.end()) f.push_back(k);
    return f;
  };
  const std::vector<int64_t> lf = free_axes(in[0].ndim, lb, lc), rf = free_axes(in[1].ndim, rb, rc);
  Strides sa, sb, so;
  auto axis = [&](int64_t extent, int64_t a, int64_t b, int64_t c, bool reduced) {
    if (extent == 1) return;
    l.shape.push_back(extent);
    sa.push_back(a);
    sb.push_back(b);
    so.push_back(c);
    l.red += reduced ? 1 : 0;
  };
  size_t p = 0;  // the output's axis
  for (size_t k = 0; k < lb.size(); ++k, ++p) axis(in[0].shape[lb[k]], as[lb[k]], bs[rb[k]], os[p], false);
  for (int64_t k : lf) axis(in[0].shape[k], as[k], 0, os[p++], false);
  for (int64_t k : rf) axis(in[1].shape[k], 0, bs[k], os[p++], false);
  for (size_t k = 0; k < lc.size(); ++k) axis(in[0].shape[lc[k]], as[lc[k]], bs[rc[k]], 0, true);
  if (numel(shape_of(o)) == 0) return true;  // nothing to compute
  if (l.red == 0 || numel(l.shape) == 0) {
    // One term (or none: an empty contraction sums to 0): a trailing axis keeps the kernel a line walk.
    const bool empty = numel(l.shape) == 0;
    l.shape.erase(l.shape.end() - l.red, l.shape.end());
    sa.resize(l.shape.size());
    sb.resize(l.shape.size());
    so.resize(l.shape.size());
    l.red = 1;
    l.shape.push_back(empty ? 0 : 1);
    sa.push_back(0);
    sb.push_back(0);
    so.push_back(0);
  }
  l.args = {PlanArg{0, 0, sa}, PlanArg{1, 0, sb}, PlanArg{2, 0, so}};
  out.push_back(std::move(l));
  return true;
}

// sort and topk rank every element of a line against the whole line (the count of elements that go before it:
// smaller or larger, or equal at a lower index) and store it at that rank if it is below extra[0] (the output's
// extent along dim). The element space is the other axes, then the element's position i on dim, then the
// position c it is compared with: input 0 is the line at i (stride 0 on c), input 1 at c (stride 0 on i), the
// outputs are written along c. Quadratic in the line length, but every element is a work item of its own and the
// result is deterministic (stable) without scratch memory.
bool plan_order(uint32_t op_id, const pk_tensor &in, const pk_tensor *outs, uint32_t nout, int64_t dim,
                const void *attrs, std::vector<PlannedLaunch> &out, std::string &why) {
  if (nout != 2) {
    why = text("%s: values and indices are the outputs", pk::meta::op_name(op_id));
    return false;
  }
  int32_t dt[3] = {pk::meta::dtype_id(in.dtype), pk::meta::dtype_id(outs[0].dtype), pk::meta::dtype_id(outs[1].dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 1, dt + 1, 2, attrs, l.region, why)) return false;
  const Strides is = strides_of(in), vs = strides_of(outs[0]), xs = strides_of(outs[1]);
  Strides si, sc, sv, sx;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (d == dim) continue;
    l.shape.push_back(in.shape[d]);
    si.push_back(is[d]);
    sc.push_back(is[d]);
    sv.push_back(vs[d]);
    sx.push_back(xs[d]);
  }
  const int64_t n = in.ndim > 0 ? in.shape[dim] : 1, st = in.ndim > 0 ? is[dim] : 0;
  l.shape.push_back(n);
  l.shape.push_back(n);
  si.insert(si.end(), {st, 0});
  sc.insert(sc.end(), {0, st});
  sv.insert(sv.end(), {0, outs[0].ndim > 0 ? vs[dim] : 0});
  sx.insert(sx.end(), {0, outs[1].ndim > 0 ? xs[dim] : 0});
  l.red = 1;
  l.args = {PlanArg{0, 0, si}, PlanArg{0, 0, sc}, PlanArg{1, 0, sv}, PlanArg{2, 0, sx}};
  l.extra = {outs[0].ndim > 0 ? outs[0].shape[dim] : 1};
  if (numel(l.shape) > 0 && l.extra[0] > 0) out.push_back(std::move(l));
  return true;
}

// searchsorted: for each value (a work item) the count of sequence elements before it in sort order, a walk over
// the whole sequence: the element space is the values' shape, then the sequence's axis.
bool plan_searchsorted(const pk_tensor *in, const pk_tensor &o, const void *attrs, std::vector<PlannedLaunch> &out,
                       std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(PK_OP_SEARCHSORTED, dt, 2, dt + 2, 1, attrs, l.region, why)) return false;
  if (in[0].ndim != 1) {
    why = "searchsorted: the code generator needs a 1-D sorted_sequence";
    return false;
  }
  Strides ss(static_cast<size_t>(in[1].ndim), 0), vs = strides_of(in[1]), os = strides_of(o);
  l.shape = shape_of(in[1]);
  l.shape.push_back(in[0].shape[0]);
  ss.push_back(strides_of(in[0])[0]);
  vs.push_back(0);
  os.push_back(0);
  l.red = 1;
  l.args = {PlanArg{0, 0, ss}, PlanArg{1, 0, vs}, PlanArg{2, 0, os}};
  l.extra = {in[0].shape[0]};
  if (numel(shape_of(in[1])) > 0) out.push_back(std::move(l));
  return true;
}

// scatter / scatter_reduce: out = a, then each element of the box the index reaches (the index's extents off
// dim, a's along dim) is a work item that walks its line of the index along dim and combines the src elements
// whose index equals its own position, in index order (the last one wins for scatter): no atomics, so
// duplicates combine deterministically in the oracle's order. The element space is the other axes, dim (the
// item's position t = j mod extra[0]), then the index's line.
bool plan_scatter(uint32_t op_id, const pk_tensor *in, const pk_tensor &o, int64_t dim, const void *attrs,
                  std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t dt[4] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(in[2].dtype),
                   pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 3, dt + 3, 1, attrs, l.region, why)) return false;
  if (!copy_launch(dt[3], shape_of(o), 0, 0, strides_of(in[0]), 3, 0, strides_of(o), out, why)) return false;
  const Strides as = strides_of(in[0]), is = strides_of(in[1]), ss = strides_of(in[2]), os = strides_of(o);
  Strides sa, si, sv, so;
  const size_t d0 = static_cast<size_t>(dim);
  for (size_t d = 0; d < as.size(); ++d) {
    if (d == d0) continue;
    l.shape.push_back(in[1].shape[d]);
    sa.push_back(as[d]);
    si.push_back(is[d]);
    sv.push_back(ss[d]);
    so.push_back(os[d]);
  }
  int32_t lanes = 1;
  bits_dtype(dt[0], lanes);
  int64_t w = 1;  // the data's strides in words
  if (lanes > 1 && op_id == PK_OP_SCATTER) {
    // 16-byte elements move as two i64 words: an axis of the words ahead of dim (so that the item's position
    // along dim stays the row index modulo extra[0]); the index does not move along it.
    w = lanes;
    for (Strides *st : {&sa, &sv, &so})
      for (int64_t &v : *st) v *= lanes;
    l.shape.push_back(lanes);
    sa.push_back(1);
    si.push_back(0);
    sv.push_back(1);
    so.push_back(1);
  }
  l.shape.insert(l.shape.end(), {in[0].shape[d0], in[1].shape[d0]});
  sa.insert(sa.end(), {w * as[d0], 0});
  si.insert(si.end(), {0, is[d0]});
  sv.insert(sv.end(), {0, w * ss[d0]});
  so.insert(so.end(), {w * os[d0], 0});
  if (w > 1 && l.shape.size() > PK_MAX_RANK) {
    why = "scatter: c128 of this rank is too large for the code generator (the words' axis)";
    return false;
  }
  l.red = 1;
  l.args = {PlanArg{0, 0, sa}, PlanArg{1, 0, si}, PlanArg{2, 0, sv}, PlanArg{3, 0, so}};
  l.extra = {in[0].shape[d0]};
  if (numel(l.shape) > 0) out.push_back(std::move(l));
  return true;
}

// index_put: every element of a is a work item that walks the L index rows and takes (or adds) the values of
// the rows whose k indices equal its first k coordinates, in row order. The element space is a's axes, then L.
bool plan_index_put(const pk_tensor *in, uint32_t nin, const pk_tensor &o, const void *attrs,
                    std::vector<PlannedLaunch> &out, std::string &why) {
  std::vector<int32_t> dt;
  for (uint32_t i = 0; i < nin; ++i) dt.push_back(pk::meta::dtype_id(in[i].dtype));
  const int32_t odt = pk::meta::dtype_id(o.dtype);
  PlannedLaunch l;
  if (!single(PK_OP_INDEX_PUT, dt.data(), nin, &odt, 1, attrs, l.region, why)) return false;
  const uint32_t k = nin - 2;
  if (k < 1 || static_cast<int32_t>(k) > in[0].ndim) {
    why = "index_put: needs 1 to rank(a) index tensors";
    return false;
  }
  const int64_t rows = in[2].ndim > 0 ? in[2].shape[0] : 1;
  const Strides as = strides_of(in[0]), vs = strides_of(in[1]), os = strides_of(o);
  l.shape = shape_of(in[0]);
  l.shape.push_back(rows);
  Strides sa = as, so = os, sv(l.shape.size(), 0);
  sa.push_back(0);
  so.push_back(0);
  // values [L] + a.shape[k:]: its axis 0 walks the rows, the others follow a's trailing axes.
  for (int32_t d = static_cast<int32_t>(k); d < in[0].ndim; ++d)
    sv[static_cast<size_t>(d)] = vs[static_cast<size_t>(d - static_cast<int32_t>(k) + 1)];
  sv.back() = in[1].ndim > 0 ? vs[0] : 0;
  l.args = {PlanArg{0, 0, sa}, PlanArg{1, 0, sv}};
  for (uint32_t i = 0; i < k; ++i) {
    Strides sx(l.shape.size(), 0);
    sx.back() = in[2 + i].ndim > 0 ? strides_of(in[2 + i])[0] : 0;
    l.args.push_back(PlanArg{2 + i, 0, sx});
  }
  l.args.push_back(PlanArg{nin, 0, so});
  l.red = 1;
  if (numel(shape_of(in[0])) > 0) out.push_back(std::move(l));
  return true;
}

// fft_c2c / fft_r2c / fft_c2r as direct DFTs (O(n^2) in the transform size): one work item per output element,
// which walks every input element of its transform as the line, the twiddle from the exact integer index
// sum_d (j_d k_d mod n_d) / n_d. The element space is the output's other axes, its transformed axes k_d, then the
// input's transformed axes j_d; extra[d] is the transform length n_d of dims[d] (last_dim_size for c2r's last
// axis, whose input has n / 2 + 1 entries: the kernel weighs them for the Hermitian half they stand for).
bool plan_fft(uint32_t op_id, const pk_tensor &in, const pk_tensor &o, const void *attrs,
              std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t dt[2] = {pk::meta::dtype_id(in.dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 1, dt + 1, 1, attrs, l.region, why)) return false;
  const char *name = pk::meta::op_name(op_id);
  std::vector<int64_t> dims;
  bool inverse = false, onesided = false;
  int64_t last_n = 0;
  auto take_dims = [&](int32_t num, const int64_t *d) {
    for (int32_t i = 0; i < num && i < PK_MAX_RANK; ++i) dims.push_back(d[i]);
  };
  if (op_id == PK_OP_FFT_C2C) {
    const auto &a = *static_cast<const pk_attrs_fft_c2c *>(attrs);
    take_dims(a.num_dims, a.dims);
    inverse = a.forward == 0;
  } else if (op_id == PK_OP_FFT_R2C) {
    const auto &a = *static_cast<const pk_attrs_fft_r2c *>(attrs);
    take_dims(a.num_dims, a.dims);
    onesided = a.onesided != 0;
  } else {
    const auto &a = *static_cast<const pk_attrs_fft_c2r *>(attrs);
    take_dims(a.num_dims, a.dims);
    inverse = true;
    last_n = a.last_dim_size;
  }
  const size_t D = dims.size();
  if (in.ndim != o.ndim || (op_id == PK_OP_FFT_C2R && D == 0)) {
    why = text("%s: the output's rank or dims do not fit the input", name);
    return false;
  }
  std::vector<bool> transformed(static_cast<size_t>(in.ndim), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= in.ndim || transformed[static_cast<size_t>(d)]) {
      why = text("%s: dims must be distinct axes of a", name);
      return false;
    }
    transformed[static_cast<size_t>(d)] = true;
  }
  // Transform lengths, and the output's extents they imply.
  std::vector<int64_t> n(D);
  for (size_t d = 0; d < D; ++d) {
    const size_t ax = static_cast<size_t>(dims[d]);
    n[d] = op_id == PK_OP_FFT_C2R && d + 1 == D ? last_n : in.shape[ax];
    int64_t want = n[d];
    if (op_id == PK_OP_FFT_R2C && onesided && d + 1 == D) want = n[d] / 2 + 1;
    if (o.shape[ax] != want || (op_id == PK_OP_FFT_C2R && d + 1 == D && in.shape[ax] < n[d] / 2 + 1)) {
      why = text("%s: the output's extents do not fit the transform", name);
      return false;
    }
  }
  for (int32_t a = 0; a < in.ndim; ++a)
    if (!transformed[static_cast<size_t>(a)] && in.shape[a] != o.shape[a]) {
      why = text("%s: the output's extents do not fit the input", name);
      return false;
    }
  const Strides is = strides_of(in), os = strides_of(o);
  Strides sa, so;
  for (int32_t a = 0; a < in.ndim; ++a) {
    if (transformed[static_cast<size_t>(a)] || o.shape[a] == 1) continue;
    l.shape.push_back(o.shape[a]);
    sa.push_back(is[static_cast<size_t>(a)]);
    so.push_back(os[static_cast<size_t>(a)]);
  }
  for (int64_t d : dims) {
    l.shape.push_back(o.shape[d]);
    sa.push_back(0);
    so.push_back(os[static_cast<size_t>(d)]);
  }
  for (int64_t d : dims) {
    l.shape.push_back(in.shape[d]);
    sa.push_back(is[static_cast<size_t>(d)]);
    so.push_back(0);
  }
  l.red = static_cast<int>(D);
  if (D == 0) {  // a copy (r2c: to complex): one term per element
    l.shape.push_back(1);
    sa.push_back(0);
    so.push_back(0);
    l.red = 1;
  }
  if (l.shape.size() > PK_MAX_RANK) {
    why = text("%s: too many axes for the code generator (the other axes plus twice the transformed ones)", name);
    return false;
  }
  l.region.nodes[0].round_mode = static_cast<int32_t>(D) | (inverse ? kFftInverse : 0);
  l.region.num_extra = static_cast<uint32_t>(D);
  l.extra = n;
  l.args = {PlanArg{0, 0, sa}, PlanArg{1, 0, so}};
  if (numel(shape_of(o)) > 0) out.push_back(std::move(l));
  return true;
}

// convolution: one work item per output element, the dot product over (C / groups, kernel window) as a line; the
// element space [N, G, O/G, out..., C/G, k...] makes every operand a strided view (the input at offset
// -sum(low * stride) with stride * s on the output axes and dilation * s on the kernel axes) and the kernel masks
// the terms whose input position falls outside. Up to 2 spatial axes (3 would exceed the rank limit).
bool plan_conv(const pk_tensor *in, const pk_tensor &o, const void *attrs, std::vector<PlannedLaunch> &out,
               std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(PK_OP_CONVOLUTION, dt, 2, dt + 2, 1, attrs, l.region, why)) return false;
  const auto &a = *static_cast<const pk_attrs_convolution *>(attrs);
  const int32_t nsp = in[0].ndim - 2;
  if (nsp < 1 || 4 + 2 * nsp > PK_MAX_RANK) {
    why = "convolution: the code generator handles 1 or 2 spatial axes";
    return false;
  }
  const int64_t groups = a.groups, N = in[0].shape[0], C = in[0].shape[1], O = in[1].shape[0], Cg = in[1].shape[1];
  if (groups < 1 || O % groups != 0 || Cg * groups != C) {
    why = "convolution: channels do not match groups";
    return false;
  }
  // An empty window (no input channels per group, or a kernel axis of extent 0) sums no terms: every output is 0.
  // The convolution kernel decodes its element-space coordinates over the window axes, which an extent of 0
  // breaks (cuda-emu left half of a grouped output unwritten), so it is a fill.
  int64_t window = Cg;
  for (int32_t i = 0; i < nsp; ++i) window *= in[1].shape[i + 2];
  if (window == 0) return fill_launch(dt[2], 0.0, shape_of(o), 2, 0, strides_of(o), out, why);
  const Strides xs = strides_of(in[0]), ws = strides_of(in[1]), os = strides_of(o);
  // The kernel walks the input by stride x element stride, dilation x element stride and from -padding x element
  // stride: validation bounds each attribute below 2^62 but not these products (a stride of 2^61 over a padding
  // of 2^61 leaves two outputs), which must fit int64. Where one does not, the code generator declines.
  int64_t start_offset = 0;
  for (int32_t i = 0; i < nsp; ++i) {
    const size_t d = static_cast<size_t>(i + 2);
    int64_t product = 0;
    bool over = __builtin_mul_overflow(a.num_stride ? a.stride[i] : 1, xs[d], &product) ||
                __builtin_mul_overflow(a.num_dilation ? a.dilation[i] : 1, xs[d], &product) ||
                __builtin_mul_overflow(a.num_padding_low ? a.padding_low[i] : 0, xs[d], &product) ||
                __builtin_sub_overflow(start_offset, product, &start_offset);
    if (over) {
      why = "convolution: stride, dilation or padding times the input's element stride overflows 64 bits";
      return false;
    }
  }
  l.region.nodes[0].round_mode = nsp;
  l.region.num_extra = 4 * static_cast<uint32_t>(nsp);
  const int64_t Og = O / groups;
  l.shape = {N, groups, Og};
  Strides sx = {xs[0], Cg * xs[1], 0}, sw = {0, Og * ws[0], ws[0]}, so = {os[0], Og * os[1], os[1]};
  int64_t x_off = 0;
  for (int32_t i = 0; i < nsp; ++i) {
    const size_t d = static_cast<size_t>(i + 2);
    const int64_t st = a.num_stride ? a.stride[i] : 1, dil = a.num_dilation ? a.dilation[i] : 1;
    const int64_t lo = a.num_padding_low ? a.padding_low[i] : 0;
    l.shape.push_back(o.shape[d]);
    sx.push_back(st * xs[d]);
    sw.push_back(0);
    so.push_back(os[d]);
    x_off -= lo * xs[d];
    l.extra.insert(l.extra.end(), {st, dil, lo, in[0].shape[d]});
  }
  l.shape.push_back(Cg);
  sx.push_back(xs[1]);
  sw.push_back(ws[1]);
  so.push_back(0);
  for (int32_t i = 0; i < nsp; ++i) {
    const size_t d = static_cast<size_t>(i + 2);
    l.shape.push_back(in[1].shape[d]);
    sx.push_back((a.num_dilation ? a.dilation[i] : 1) * xs[d]);
    sw.push_back(ws[d]);
    so.push_back(0);
  }
  l.red = 1 + nsp;
  l.args = {PlanArg{0, x_off, sx}, PlanArg{1, 0, sw}, PlanArg{2, 0, so}};
  if (numel(shape_of(o)) > 0) out.push_back(std::move(l));
  return true;
}

}  // namespace pk::codegen::detail
