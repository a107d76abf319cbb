// shape_ops.cpp — views, shape ops, conversion and creation. These move or convert values; none rounds
// (float results are rounded once by evaluate()).
#include <cmath>
#include <limits>

#include "oracle_internal.hpp"

namespace pk::oracle {

// The exact value convert_element_type gives for x converted to dtype `to` (before the final rounding of a
// float result): float -> integer truncates toward zero and saturates, NaN -> 0; integer -> integer wraps
// modulo 2^bits; anything -> bool is "not zero"; complex -> real drops the imaginary part.
Wide convert_value(const Wide &x, int32_t from, int32_t to) {
  if (to == PK_DTYPE_BOOL) return {x.re != 0 || x.im != 0 ? 1.0L : 0.0L, 0};
  if (is_int_dtype(to)) {
    if (is_integral_dtype(from)) return {wrap_int(static_cast<uint64_t>(to_i64(x)), to), 0};
    long double v = x.re;
    if (std::isnan(v)) return {0, 0};
    v = truncl(v);
    if (v > int_max(to)) v = int_max(to);
    if (v < int_min(to)) v = int_min(to);
    return {v + 0.0L, 0};  // + 0.0L turns -0 into +0
  }
  if (is_complex_dtype(to)) return {x.re, is_complex_dtype(from) ? x.im : 0};
  return {x.re, 0};
}

namespace {

void broadcast_in_dim(const Call &c, std::vector<WTensor> &out) {
  const WTensor &a = c.a();
  WTensor o = c.output(0);
  const std::vector<int64_t> bd = c.attrs.ints("broadcast_dimensions");
  const std::vector<int64_t> a_strides = row_major_strides(a.shape);
  if (o.numel() > 0) {
    std::vector<int64_t> idx(o.shape.size(), 0);
    size_t i = 0;
    do {
      int64_t src = 0;
      for (size_t k = 0; k < bd.size(); ++k) {
        int64_t e = a.shape[k] == 1 ? 0 : idx[static_cast<size_t>(bd[k])];
        src += e * a_strides[k];
      }
      o.v[i++] = a.v[static_cast<size_t>(src)];
    } while (next_index(idx, o.shape));
  }
  out.push_back(std::move(o));
}

void cat(const Call &c, std::vector<WTensor> &out) {
  const int64_t dim = c.attrs.i("dim");
  WTensor o = c.output(0);
  if (o.numel() > 0) {
    std::vector<int64_t> idx(o.shape.size(), 0);
    size_t i = 0;
    do {
      int64_t pos = idx[static_cast<size_t>(dim)];
      size_t t = 0;
      while (pos >= c.a(t).shape[static_cast<size_t>(dim)]) pos -= c.a(t++).shape[static_cast<size_t>(dim)];
      const WTensor &src = c.a(t);
      std::vector<int64_t> sidx = idx;
      sidx[static_cast<size_t>(dim)] = pos;
      int64_t off = 0;
      std::vector<int64_t> st = row_major_strides(src.shape);
      for (size_t k = 0; k < sidx.size(); ++k) off += sidx[k] * st[k];
      o.v[i++] = src.v[static_cast<size_t>(off)];
    } while (next_index(idx, o.shape));
  }
  out.push_back(std::move(o));
}

void convert_element_type(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  for (size_t i = 0; i < o.v.size(); ++i) o.v[i] = convert_value(c.a().v[i], c.a().dtype, o.dtype);
  out.push_back(std::move(o));
}

void full(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  Wide v = convert_value({static_cast<long double>(c.attrs.f("value")), 0}, PK_DTYPE_F64, o.dtype);
  for (Wide &w : o.v) w = v;
  out.push_back(std::move(o));
}

// fill: a tensor like a holding `value` converted as convert_element_type does. The float value is kept
// exact (like full's, and like every float intermediate of a decomposition: composites such as gelu must not
// round their constants to a narrow dtype before the one final rounding); integers truncate and saturate;
// e4m3fn saturates to +-448 as the conversion does (its output rounding alone would give NaN).
void fill(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  Wide v = convert_value({static_cast<long double>(c.attrs.f("value")), 0}, PK_DTYPE_F64, o.dtype);
  if (o.dtype == PK_DTYPE_F8E4M3FN && fabsl(v.re) > 448) v.re = copysignl(448, v.re);
  for (Wide &w : o.v) w = v;
  out.push_back(std::move(o));
}

// scalar_tensor: a 0-d tensor of value converted to dtype (one rounding, by evaluate()).
void scalar_tensor(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  Wide v = convert_value({static_cast<long double>(c.attrs.f("value")), 0}, PK_DTYPE_F64, o.dtype);
  for (Wide &w : o.v) w = v;
  out.push_back(std::move(o));
}

// maximum_value / minimum_value: the largest (lowest) finite value of the dtype; bool: true (false); complex: that of
// its parts, + 0i. The float values are decoded from the format's largest finite bit pattern, so they are exact.
Kernel extreme_value(bool largest) {
  return [largest](const Call &c, std::vector<WTensor> &out) {
    WTensor o = c.output(0);
    long double v;
    if (is_integral_dtype(o.dtype)) {
      v = largest ? int_max(o.dtype) : int_min(o.dtype);
    } else {
      // Complex: the part's extreme plus 0i, as PyTorch's prims take it from torch.finfo(complex dtype).
      const int32_t part = o.dtype == PK_DTYPE_C64 ? PK_DTYPE_F32 : (o.dtype == PK_DTYPE_C128 ? PK_DTYPE_F64 : o.dtype);
      const BinaryFormat f = format_of(part);
      v = format_value(round_to_format(HUGE_VALL, f, Overflow::saturate), f);  // the largest finite value
      if (!largest) v = -v;
    }
    for (Wide &w : o.v) w = {v, 0};
    out.push_back(std::move(o));
  };
}

int64_t offset_of(const std::vector<int64_t> &idx, const std::vector<int64_t> &strides) {
  int64_t off = 0;
  for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * strides[k];
  return off;
}

// out[idx] = a[source(idx)] for every output multi-index; source returns false for "not from a" (fill).
template <typename Source>
WTensor gather_by(const Call &c, const WTensor &a, Source source, Wide fill = Wide{}) {
  WTensor o = c.output(0);
  if (o.numel() == 0) return o;
  const std::vector<int64_t> as = row_major_strides(a.shape);
  std::vector<int64_t> idx(o.shape.size(), 0), src(a.shape.size(), 0);
  size_t i = 0;
  do {
    o.v[i++] = source(idx, src) ? a.v[static_cast<size_t>(offset_of(src, as))] : fill;
  } while (next_index(idx, o.shape));
  return o;
}

// Same elements in row-major order, new shape (reshape, squeeze, expand_dims, copy, ...).
void same_order(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  o.v = c.a().v;
  if (o.v.size() != static_cast<size_t>(o.numel())) invalid(c.name() + ": element count changes");
  out.push_back(std::move(o));
}

void transpose(const Call &c, std::vector<WTensor> &out) {
  const std::vector<int64_t> perm = c.attrs.ints(pick(c, {"permutation", "perm", "dims"}));
  out.push_back(gather_by(c, c.a(), [&](const std::vector<int64_t> &idx, std::vector<int64_t> &src) {
    for (size_t k = 0; k < perm.size(); ++k) src[static_cast<size_t>(perm[k])] = idx[k];
    return true;
  }));
}

void rev(const Call &c, std::vector<WTensor> &out) {
  const std::vector<int64_t> dims = c.attrs.ints(pick(c, {"dims", "dimensions"}));
  const WTensor &a = c.a();
  out.push_back(gather_by(c, a, [&](const std::vector<int64_t> &idx, std::vector<int64_t> &src) {
    src = idx;
    for (int64_t d : dims)
      src[static_cast<size_t>(d)] = a.shape[static_cast<size_t>(d)] - 1 - idx[static_cast<size_t>(d)];
    return true;
  }));
}

void slice(const Call &c, std::vector<WTensor> &out) {
  const std::vector<int64_t> start = c.attrs.ints(pick(c, {"start_indices", "start", "starts"}));
  std::vector<int64_t> step;
  if (c.attrs.has("strides")) step = c.attrs.ints("strides");
  if (c.attrs.has("steps")) step = c.attrs.ints("steps");
  out.push_back(gather_by(c, c.a(), [&](const std::vector<int64_t> &idx, std::vector<int64_t> &src) {
    for (size_t k = 0; k < idx.size(); ++k) src[k] = start.at(k) + idx[k] * (step.empty() ? 1 : step[k]);
    return true;
  }));
}

// slice_in_dim: start, start + stride, ... below limit along one axis.
void slice_in_dim(const Call &c, std::vector<WTensor> &out) {
  const int64_t dim = c.attrs.i("dim"), start = c.attrs.i("start"), stride = c.attrs.i("stride");
  out.push_back(gather_by(c, c.a(), [&](const std::vector<int64_t> &idx, std::vector<int64_t> &src) {
    src = idx;
    src[static_cast<size_t>(dim)] = start + idx[static_cast<size_t>(dim)] * stride;
    return true;
  }));
}

// as_strided: out[i...] = flat(a)[storage_offset + sum i_k * strides_k]; a position outside numel(a) breaks the
// table's rule (an invalid launch).
int64_t strided_position(const Call &c, const std::vector<int64_t> &idx, const std::vector<int64_t> &strides,
                         int64_t offset, int64_t numel) {
  int64_t pos = offset;
  for (size_t k = 0; k < idx.size(); ++k) pos += idx[k] * strides.at(k);
  if (pos < 0 || pos >= numel)
    invalid(c.name() + ": position " + std::to_string(pos) + " is outside the " + std::to_string(numel) + " elements");
  return pos;
}

void as_strided(const Call &c, std::vector<WTensor> &out) {
  const std::vector<int64_t> strides = c.attrs.ints("strides");
  const int64_t offset = c.attrs.i("storage_offset");
  const WTensor &a = c.a();
  WTensor o = c.output(0);
  if (o.numel() > 0) {
    std::vector<int64_t> idx(o.shape.size(), 0);
    size_t i = 0;
    do {
      o.v[i++] = a.v[static_cast<size_t>(strided_position(c, idx, strides, offset, a.numel()))];
    } while (next_index(idx, o.shape));
  }
  out.push_back(std::move(o));
}

// as_strided_scatter: a copy of a whose as_strided view (shape, strides, storage_offset) is replaced by src.
void as_strided_scatter(const Call &c, std::vector<WTensor> &out) {
  const std::vector<int64_t> shape = c.attrs.ints("shape"), strides = c.attrs.ints("strides");
  const int64_t offset = c.attrs.i("storage_offset");
  const WTensor &a = c.a(0), &src = c.a(1);
  WTensor o = c.output(0);
  o.v = a.v;
  if (src.numel() > 0) {
    std::vector<int64_t> idx(shape.size(), 0);
    size_t i = 0;
    do {
      o.v[static_cast<size_t>(strided_position(c, idx, strides, offset, a.numel()))] = src.v[i++];
    } while (next_index(idx, shape));
  }
  out.push_back(std::move(o));
}

// slice_scatter: a copy of a with a[..., start + k * stride, ...] = src[..., k, ...] along dim.
void slice_scatter(const Call &c, std::vector<WTensor> &out) {
  const int64_t dim = c.attrs.i("dim"), start = c.attrs.i("start"), stride = c.attrs.i("stride");
  const WTensor &a = c.a(0), &src = c.a(1);
  WTensor o = c.output(0);
  o.v = a.v;
  const std::vector<int64_t> os = row_major_strides(a.shape);
  if (src.numel() > 0) {
    std::vector<int64_t> idx(src.shape.size(), 0);
    size_t i = 0;
    do {
      std::vector<int64_t> dst = idx;
      dst[static_cast<size_t>(dim)] = start + idx[static_cast<size_t>(dim)] * stride;
      if (dst[static_cast<size_t>(dim)] >= a.shape[static_cast<size_t>(dim)])
        invalid(c.name() + ": src reaches past the end of a along dim");
      o.v[static_cast<size_t>(offset_of(dst, os))] = src.v[i++];
    } while (next_index(idx, src.shape));
  }
  out.push_back(std::move(o));
}

// copy_to: the output is a's storage after b was written into it, i.e. b's values with a's shape.
void copy_to(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  if (c.a(1).v.size() != o.v.size()) invalid(c.name() + ": b does not have a's element count");
  o.v = c.a(1).v;
  out.push_back(std::move(o));
}

// Constant padding with low / high (negative = crop) and interior padding.
void pad(const Call &c, std::vector<WTensor> &out) {
  const std::vector<int64_t> low = c.attrs.ints(pick(c, {"low", "padding_low", "pad_low", "before"}));
  std::vector<int64_t> interior;
  if (c.attrs.has("interior")) interior = c.attrs.ints("interior");
  const WTensor &a = c.a();
  Wide fill{};
  if (c.in.size() > 1) {
    fill = c.a(1).v.at(0);
  } else if (c.attrs.has("value")) {
    fill = convert_value({static_cast<long double>(c.attrs.f("value")), 0}, PK_DTYPE_F64, a.dtype);
  }
  out.push_back(gather_by(
      c, a,
      [&](const std::vector<int64_t> &idx, std::vector<int64_t> &src) {
        for (size_t k = 0; k < idx.size(); ++k) {
          int64_t step = 1 + (interior.empty() ? 0 : interior[k]);
          int64_t p = idx[k] - low.at(k);
          if (p < 0 || p % step != 0 || p / step >= a.shape[k]) return false;
          src[k] = p / step;
        }
        return true;
      },
      fill));
}

void iota(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  int64_t dim = c.attrs.has("dimension") ? c.attrs.i("dimension") : (c.attrs.has("dim") ? c.attrs.i("dim") : 0);
  long double start = c.attrs.has("start") ? static_cast<long double>(c.attrs.i("start")) : 0;
  long double step = c.attrs.has("step") ? static_cast<long double>(c.attrs.i("step")) : 1;
  if (o.numel() > 0) {
    std::vector<int64_t> idx(o.shape.size(), 0);
    size_t i = 0;
    do {
      long double v = start + step * static_cast<long double>(o.shape.empty() ? 0 : idx[static_cast<size_t>(dim)]);
      o.v[i++] = convert_value({v, 0}, PK_DTYPE_I64, o.dtype);
    } while (next_index(idx, o.shape));
  }
  out.push_back(std::move(o));
}

// Reinterprets the bits of each element as another dtype of the same size.
void bitcast_convert(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  const int32_t from = c.a().dtype, to = o.dtype;
  const size_t fs = meta::dtype_size(from), ts = meta::dtype_size(to);
  if (fs != ts) unimplemented(c.name() + ": bitcast between different sizes");
  std::vector<uint8_t> buf(fs);
  for (size_t i = 0; i < o.v.size(); ++i) {
    store_rounded(c.a().v[i], from, buf.data());
    o.v[i] = load_element(buf.data(), to);
  }
  out.push_back(std::move(o));
}

// Reads index value k of an index tensor; -1 when it is outside [0, extent) (the table's gathers then yield 0
// and its scatters skip the element: an out-of-range index is defined behaviour, not an invalid launch).
int64_t index_at(const WTensor &t, size_t k, int64_t extent) {
  int64_t v = to_i64(t.v.at(k));
  return v < 0 || v >= extent ? -1 : v;
}

// gather / take_along_dim: out[i] = a[i with i[dim] replaced by index[i]] (index has the output's shape).
void gather_along(const Call &c, std::vector<WTensor> &out) {
  const int64_t dim = c.attrs.i("dim");
  const WTensor &a = c.a(0), &index = c.a(1);
  const std::vector<int64_t> is = row_major_strides(index.shape);
  out.push_back(gather_by(c, a, [&](const std::vector<int64_t> &idx, std::vector<int64_t> &src) {
    src = idx;
    src[static_cast<size_t>(dim)] =
        index_at(index, static_cast<size_t>(offset_of(idx, is)), a.shape[static_cast<size_t>(dim)]);
    return src[static_cast<size_t>(dim)] >= 0;
  }));
}

// index_select: out[..., j, ...] = a[..., index[j], ...] along dim, index 1-D.
void index_select(const Call &c, std::vector<WTensor> &out) {
  const int64_t dim = c.attrs.i("dim");
  const WTensor &a = c.a(0), &index = c.a(1);
  out.push_back(gather_by(c, a, [&](const std::vector<int64_t> &idx, std::vector<int64_t> &src) {
    src = idx;
    src[static_cast<size_t>(dim)] =
        index_at(index, static_cast<size_t>(idx[static_cast<size_t>(dim)]), a.shape[static_cast<size_t>(dim)]);
    return src[static_cast<size_t>(dim)] >= 0;
  }));
}

// scatter family: out = a; for each element i of index/src: out[i with i[dim] = index[i]] op= src[i].
// Duplicates combine in row-major order of the index (the last write wins for plain scatter); out-of-range
// indices are skipped. scatter_reduce combines a's own value too unless include_self is false.
Kernel scatter(int kind) {  // -1 plain write, else PK_REDUCE_KIND_*
  return [kind](const Call &c, std::vector<WTensor> &out) {
    const int64_t dim = c.attrs.i("dim");
    const WTensor &a = c.a(0), &index = c.a(1), &src = c.a(2);
    int k = kind;
    if (k == -2) k = c.attrs.e(pick(c, {"reduce", "kind", "mode"}));
    const bool include_self = !c.attrs.has("include_self") || c.attrs.b("include_self");
    WTensor o = c.output(0);
    o.v = a.v;
    const std::vector<int64_t> os = row_major_strides(a.shape);
    std::vector<std::vector<Wide>> pending(o.v.size());
    if (index.numel() > 0) {
      std::vector<int64_t> idx(index.shape.size(), 0);
      size_t i = 0;
      do {
        std::vector<int64_t> dst = idx;
        dst[static_cast<size_t>(dim)] = index_at(index, i, a.shape[static_cast<size_t>(dim)]);
        if (dst[static_cast<size_t>(dim)] < 0) {
          ++i;
          continue;
        }
        const size_t d = static_cast<size_t>(offset_of(dst, os));
        const std::vector<int64_t> ss = row_major_strides(src.shape);
        const Wide &val = src.v[static_cast<size_t>(offset_of(idx, ss))];
        if (k < 0)
          o.v[d] = val;
        else
          pending[d].push_back(val);
        ++i;
      } while (next_index(idx, index.shape));
    }
    if (k >= 0) {
      for (size_t d = 0; d < o.v.size(); ++d) {
        if (pending[d].empty()) continue;
        if (include_self) pending[d].insert(pending[d].begin(), o.v[d]);
        o.v[d] = reduce_values(k, pending[d], a.dtype);
      }
    }
    out.push_back(std::move(o));
  };
}

// index_put: a copy of a with a[indices[0][l], ..., indices[k-1][l], ...] = values[l, ...] (or += when
// accumulate); rows with an index outside its axis are skipped. Accumulated rows are summed compensated with
// a's value, in row order; without accumulate a later row overwrites an earlier one.
void index_put(const Call &c, std::vector<WTensor> &out) {
  const WTensor &a = c.a(0), &values = c.a(1);
  const size_t k = c.in.size() - 2;
  const bool accumulate = c.attrs.b("accumulate");
  WTensor o = c.output(0);
  o.v = a.v;
  if (k == 0 || k > a.shape.size()) invalid(c.name() + ": needs 1 to rank(a) index tensors");
  const int64_t rows = c.a(2).numel();
  int64_t inner = 1;  // elements per row: the product of a's extents after the k indexed axes
  for (size_t d = k; d < a.shape.size(); ++d) inner *= a.shape[d];
  if (values.numel() != rows * inner) invalid(c.name() + ": values is not [L] + a.shape[k:]");
  const std::vector<int64_t> as = row_major_strides(a.shape);
  std::vector<std::vector<Wide>> pending(accumulate ? o.v.size() : 0);
  for (int64_t l = 0; l < rows; ++l) {
    int64_t base = 0;
    bool inside = true;
    for (size_t d = 0; d < k; ++d) {
      const int64_t v = index_at(c.a(2 + d), static_cast<size_t>(l), a.shape[d]);
      if (v < 0) inside = false;
      base += v * as[d];
    }
    if (!inside) continue;
    for (int64_t j = 0; j < inner; ++j) {
      const Wide &val = values.v[static_cast<size_t>(l * inner + j)];
      if (accumulate)
        pending[static_cast<size_t>(base + j)].push_back(val);
      else
        o.v[static_cast<size_t>(base + j)] = val;
    }
  }
  for (size_t d = 0; d < pending.size(); ++d) {
    if (pending[d].empty()) continue;
    pending[d].insert(pending[d].begin(), o.v[d]);
    o.v[d] = reduce_values(PK_REDUCE_KIND_SUM, pending[d], a.dtype);
  }
  out.push_back(std::move(o));
}

}  // namespace

void register_shape_ops(Registry &r) {
  r["reshape"] = same_order;
  r["view"] = same_order;
  r["view_of"] = same_order;
  r["collapse_view"] = same_order;
  r["squeeze"] = same_order;
  r["expand_dims"] = same_order;
  r["unsqueeze"] = same_order;
  r["copy"] = same_order;
  r["clone"] = same_order;
  r["contiguous"] = same_order;
  r["collapse"] = same_order;
  r["split_dim"] = same_order;
  r["transpose"] = transpose;
  r["permute"] = transpose;
  r["rev"] = rev;
  r["flip"] = rev;
  r["slice"] = slice;
  r["pad"] = pad;
  r["iota"] = iota;
  r["bitcast_convert_type"] = bitcast_convert;
  r["bitcast"] = bitcast_convert;
  r["gather"] = gather_along;
  r["take_along_dim"] = gather_along;
  r["index_select"] = index_select;
  r["scatter"] = scatter(-1);
  r["scatter_add"] = scatter(PK_REDUCE_KIND_SUM);
  r["scatter_reduce"] = scatter(-2);
  r["broadcast_in_dim"] = broadcast_in_dim;
  r["cat"] = cat;
  r["convert_element_type"] = convert_element_type;
  r["full"] = full;
  r["fill"] = fill;
  r["scalar_tensor"] = scalar_tensor;
  r["maximum_value"] = extreme_value(true);
  r["minimum_value"] = extreme_value(false);
  r["slice_in_dim"] = slice_in_dim;
  r["copy_to"] = copy_to;
  r["as_strided"] = as_strided;
  r["as_strided_scatter"] = as_strided_scatter;
  r["slice_scatter"] = slice_scatter;
  r["index_put"] = index_put;
}

}  // namespace pk::oracle
