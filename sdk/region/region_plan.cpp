// region_plan.cpp — op launches as kernel launches (plan_op): views, copies and fills, reductions and
// elementwise ops here, the line ops and gather in region_plan_lines.cpp; and the capability queries. No LLVM
// here.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <optional>

#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"
#include "primkit/region.hpp"

#include "region_internal.hpp"

namespace pk::codegen {

namespace detail {

// --- planning op launches -----------------------------------------------------------------------------------

Strides strides_of(const pk_tensor &t) {
  Strides s(static_cast<size_t>(t.ndim));
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    s[d] = t.strides ? t.strides[d] : expect;
    expect *= t.shape[d];
  }
  return s;
}
std::vector<int64_t> shape_of(const pk_tensor &t) {
  return std::vector<int64_t>(t.shape, t.shape + t.ndim);
}
int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

// Data movement copies bits: every dtype moves as the unsigned/signed integer of its size (fp8 and bf16 bytes,
// complex as i64 pairs), so NaN payloads and signed zeros survive exactly.
int32_t bits_dtype(int32_t d, int32_t &lanes) {
  lanes = 1;
  switch (pk::meta::dtype_size(d)) {
    case 1:
      return PK_DTYPE_U8;
    case 2:
      return PK_DTYPE_I16;
    case 4:
      return PK_DTYPE_I32;
    case 8:
      return PK_DTYPE_I64;
    case 16:
      lanes = 2;
      return PK_DTYPE_I64;
    default:
      return -1;
  }
}

// out (tensor `dst`, viewed at offset/strides over `shape`) <- src (likewise): one copy launch.
bool copy_launch(int32_t dtype, const std::vector<int64_t> &shape, uint32_t src, int64_t src_off, Strides src_st,
                 uint32_t dst, int64_t dst_off, Strides dst_st, std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t lanes = 1;
  const int32_t bd = bits_dtype(dtype, lanes);
  if (bd < 0) {
    why = text("%s: no storage type for this dtype in the code generator", pk::meta::dtype_name(dtype));
    return false;
  }
  PlannedLaunch l;
  l.shape = shape;
  if (lanes > 1) {
    // 16-byte elements: a trailing axis of two i64 words.
    for (auto *st : {&src_st, &dst_st})
      for (int64_t &v : *st) v *= lanes;
    src_off *= lanes;
    dst_off *= lanes;
    l.shape.push_back(lanes);
    src_st.push_back(1);
    dst_st.push_back(1);
  }
  if (l.shape.size() > PK_MAX_RANK) {
    why = "rank too large for the code generator";
    return false;
  }
  l.region.dtypes = {bd, bd};
  l.region.inputs = {0};
  l.region.nodes = {Node{PK_OP_CONVERT_ELEMENT_TYPE, {0}, 1, 0, 0}};
  l.region.outputs = {1};
  l.args = {PlanArg{src, src_off, std::move(src_st)}, PlanArg{dst, dst_off, std::move(dst_st)}};
  if (numel(l.shape) > 0) out.push_back(std::move(l));
  return true;
}

// The f64 a creation op's value becomes in dtype d, as a FILL node computes it; fp8 is stored as its bits.
bool fill_launch(int32_t dtype, double value, const std::vector<int64_t> &shape, uint32_t dst, int64_t dst_off,
                 Strides dst_st, std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t d = dtype;
  if (d == PK_DTYPE_F8E4M3FN) {
    value = pk::kit::f8e4m3fn(value).bits;
    d = PK_DTYPE_U8;
  } else if (d == PK_DTYPE_F8E5M2) {
    value = pk::kit::f8e5m2(value).bits;
    d = PK_DTYPE_U8;
  }
  if (!cls(d)) {
    why = text("fill: dtype %s is not supported by the code generator", pk::meta::dtype_name(dtype));
    return false;
  }
  PlannedLaunch l;
  l.shape = shape;
  l.region.dtypes = {d};
  l.region.nodes = {Node{PK_OP_FILL, {}, 0, value, 0}};
  l.region.outputs = {0};
  l.args = {PlanArg{dst, dst_off, std::move(dst_st)}};
  if (numel(shape) > 0) out.push_back(std::move(l));
  return true;
}

namespace {

Strides dense_strides(const std::vector<int64_t> &shape) {
  Strides s(shape.size());
  int64_t expect = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = expect;
    expect *= shape[d];
  }
  return s;
}
bool is_dense(const pk_tensor &t) {
  const Strides s = strides_of(t), e = dense_strides(shape_of(t));
  for (int32_t d = 0; d < t.ndim; ++d)
    if (t.shape[d] != 1 && s[d] != e[d]) return false;
  return true;
}

double extreme_value(int32_t d, bool largest) {
  switch (d) {
    case PK_DTYPE_BOOL:
      return largest ? 1 : 0;
    case PK_DTYPE_U8:
      return largest ? 255 : 0;
    case PK_DTYPE_I8:
      return largest ? 127 : -128;
    case PK_DTYPE_I16:
      return largest ? 32767 : -32768;
    case PK_DTYPE_I32:
      return largest ? 2147483647.0 : -2147483648.0;
    case PK_DTYPE_I64:
      return largest ? 9223372036854775807.0 : -9223372036854775808.0;  // saturating conversion gives the limit
    case PK_DTYPE_F16:
      return largest ? 65504.0 : -65504.0;
    case PK_DTYPE_BF16:
      return largest ? 0x1.fep127 : -0x1.fep127;
    case PK_DTYPE_F32:
    case PK_DTYPE_C64:  // complex: the parts' extreme + 0i (fill's imaginary part), as torch.finfo gives it
      return largest ? 0x1.fffffep127 : -0x1.fffffep127;
    case PK_DTYPE_F64:
    case PK_DTYPE_C128:
      return largest ? std::numeric_limits<double>::max() : -std::numeric_limits<double>::max();
    case PK_DTYPE_F8E4M3FN:
      return largest ? 448.0 : -448.0;
    case PK_DTYPE_F8E5M2:
      return largest ? 57344.0 : -57344.0;
    default:
      return 0;
  }
}

bool plan_reduction(uint32_t op_id, const pk_tensor &in, const pk_tensor &o, const std::vector<int64_t> &dims,
                    std::vector<PlannedLaunch> &out, std::string &why, const void *attrs = nullptr) {
  int32_t dt[2] = {pk::meta::dtype_id(in.dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 1, dt + 1, 1, attrs, l.region, why)) return false;
  // Element space: the kept axes in order, then the reduced ones; the output walks the kept axes only.
  std::vector<bool> red(static_cast<size_t>(in.ndim), false);
  for (int64_t d : dims) red[static_cast<size_t>(d)] = true;
  const Strides is = strides_of(in), os = strides_of(o);
  Strides a, b;
  size_t ko = 0;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (red[d]) continue;
    l.shape.push_back(in.shape[d]);
    a.push_back(is[d]);
    b.push_back(ko < os.size() ? os[ko] : 0);
    ++ko;
  }
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (!red[d]) continue;
    l.shape.push_back(in.shape[d]);
    a.push_back(is[d]);
    b.push_back(0);
    ++l.red;
  }
  l.args = {PlanArg{0, 0, a}, PlanArg{1, 0, b}};
  if (numel(std::vector<int64_t>(l.shape.begin(), l.shape.end() - l.red)) > 0) out.push_back(std::move(l));
  return true;
}

// The data movement ops: a copy launch per input (bits, see bits_dtype); pad fills the output first,
// slice_scatter and as_strided_scatter copy a first. nullopt for every other op.
std::optional<bool> plan_data_movement(uint32_t op_id, const pk::meta::OpInfo *op, const pk_tensor *in, uint32_t nin,
                                       const pk_tensor *outs, const void *attrs, std::vector<PlannedLaunch> &out,
                                       std::string &why) {
  const pk_tensor &o = outs[0];
  const int32_t odt = pk::meta::dtype_id(o.dtype);
  const uint32_t O = nin;  // the output's tensor index
  const std::vector<int64_t> oshape = shape_of(o);
  auto copy_whole = [&](uint32_t src) {
    return copy_launch(odt, oshape, src, 0, strides_of(in[src]), O, 0, strides_of(o), out, why);
  };
  switch (op_id) {
    case PK_OP_CLONE:
    case PK_OP_VIEW_OF:
      return copy_whole(0);
    case PK_OP_COPY_TO:
      return copy_whole(1);
    case PK_OP_TRANSPOSE: {
      const auto &a = *static_cast<const pk_attrs_transpose *>(attrs);
      const Strides is = strides_of(in[0]);
      Strides src(oshape.size());
      for (size_t d = 0; d < oshape.size(); ++d) src[d] = is[static_cast<size_t>(a.permutation[d])];
      return copy_launch(odt, oshape, 0, 0, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_BROADCAST_IN_DIM: {
      const auto &a = *static_cast<const pk_attrs_broadcast_in_dim *>(attrs);
      const Strides is = strides_of(in[0]);
      Strides src(oshape.size(), 0);
      for (int32_t k = 0; k < in[0].ndim; ++k)
        if (in[0].shape[k] != 1) src[static_cast<size_t>(a.broadcast_dimensions[k])] = is[k];
      return copy_launch(odt, oshape, 0, 0, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_SLICE: {
      const auto &a = *static_cast<const pk_attrs_slice *>(attrs);
      const Strides is = strides_of(in[0]);
      Strides src(oshape.size());
      int64_t off = 0;
      for (int32_t d = 0; d < in[0].ndim; ++d) {
        off += a.start_indices[d] * is[d];
        src[d] = is[d] * (a.num_strides ? a.strides[d] : 1);
      }
      return copy_launch(odt, oshape, 0, off, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_SLICE_IN_DIM: {
      const auto &a = *static_cast<const pk_attrs_slice_in_dim *>(attrs);
      Strides src = strides_of(in[0]);
      const int64_t off = a.start * src[a.dim];
      src[a.dim] *= a.stride;
      return copy_launch(odt, oshape, 0, off, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_REV: {
      const auto &a = *static_cast<const pk_attrs_rev *>(attrs);
      Strides src = strides_of(in[0]);
      int64_t off = 0;
      for (int32_t k = 0; k < a.num_dims; ++k) {
        const int64_t d = a.dims[k];
        off += (in[0].shape[d] - 1) * src[d];
        src[d] = -src[d];
      }
      return copy_launch(odt, oshape, 0, off, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_EXPAND_DIMS:
    case PK_OP_SQUEEZE:
    case PK_OP_COLLAPSE_VIEW:
    case PK_OP_COLLAPSE:
    case PK_OP_RESHAPE:
    case PK_OP_SPLIT_DIM: {
      // Row-major order is kept: one side dense gives the other side's view over its shape.
      if (is_dense(in[0])) return copy_launch(odt, oshape, 0, 0, dense_strides(oshape), O, 0, strides_of(o), out, why);
      if (is_dense(o)) {
        const std::vector<int64_t> ishape = shape_of(in[0]);
        return copy_launch(odt, ishape, 0, 0, strides_of(in[0]), O, 0, dense_strides(ishape), out, why);
      }
      why = text("%s: the code generator needs a dense input or output", op->name);
      return false;
    }
    case PK_OP_AS_STRIDED: {
      const auto &a = *static_cast<const pk_attrs_as_strided *>(attrs);
      if (!is_dense(in[0])) {
        why = "as_strided: the code generator needs a dense input";
        return false;
      }
      return copy_launch(odt, oshape, 0, a.storage_offset, Strides(a.strides, a.strides + a.num_strides), O, 0,
                         strides_of(o), out, why);
    }
    case PK_OP_CAT: {
      const auto &a = *static_cast<const pk_attrs_cat *>(attrs);
      const Strides os = strides_of(o);
      int64_t pos = 0;
      for (uint32_t i = 0; i < nin; ++i) {
        if (!copy_launch(odt, shape_of(in[i]), i, 0, strides_of(in[i]), O, pos * os[a.dim], os, out, why)) return false;
        pos += in[i].shape[a.dim];
      }
      return true;
    }
    case PK_OP_PAD: {
      const auto &a = *static_cast<const pk_attrs_pad *>(attrs);
      const Strides os = strides_of(o), is = strides_of(in[0]);
      if (!fill_launch(odt, a.value, oshape, O, 0, os, out, why)) return false;
      // Input element i of an axis lands at low + i * (interior + 1); only those inside [0, extent) are copied.
      std::vector<int64_t> shape(static_cast<size_t>(in[0].ndim));
      Strides src = is, dst = os;
      int64_t src_off = 0, dst_off = 0;
      for (int32_t d = 0; d < in[0].ndim; ++d) {
        const int64_t st = (a.num_interior ? a.interior[d] : 0) + 1;
        const int64_t low = a.low[d], n = in[0].shape[d], e = o.shape[d];
        const int64_t i_lo = low >= 0 ? 0 : (-low + st - 1) / st;
        const int64_t room = e - 1 - low;
        const int64_t i_hi = room >= 0 ? std::min(n - 1, room / st) : -1;
        const int64_t count = i_hi - i_lo + 1;
        if (count <= 0) return true;
        shape[d] = count;
        src_off += i_lo * is[d];
        dst_off += (low + i_lo * st) * os[d];
        dst[d] = os[d] * st;
      }
      return copy_launch(odt, shape, 0, src_off, src, O, dst_off, dst, out, why);
    }
    case PK_OP_SLICE_SCATTER: {
      const auto &a = *static_cast<const pk_attrs_slice_scatter *>(attrs);
      if (!copy_whole(0)) return false;
      Strides dst = strides_of(o);
      const int64_t off = a.start * dst[a.dim];
      dst[a.dim] *= a.stride;
      return copy_launch(odt, shape_of(in[1]), 1, 0, strides_of(in[1]), O, off, dst, out, why);
    }
    case PK_OP_AS_STRIDED_SCATTER: {
      const auto &a = *static_cast<const pk_attrs_as_strided_scatter *>(attrs);
      if (!is_dense(o)) {
        why = "as_strided_scatter: the code generator needs a dense output";
        return false;
      }
      if (!copy_whole(0)) return false;
      return copy_launch(odt, shape_of(in[1]), 1, 0, strides_of(in[1]), O, a.storage_offset,
                         Strides(a.strides, a.strides + a.num_strides), out, why);
    }
    default:
      break;
  }
  return std::nullopt;
}

// The creation ops: fills of a constant, iota and the philox generators. nullopt for every other op.
std::optional<bool> plan_creation(uint32_t op_id, const pk::meta::OpInfo *op, uint32_t nin, const pk_tensor *outs,
                                  const void *attrs, std::vector<PlannedLaunch> &out, std::string &why) {
  const pk_tensor &o = outs[0];
  const int32_t odt = pk::meta::dtype_id(o.dtype);
  const uint32_t O = nin;  // the output's tensor index
  const std::vector<int64_t> oshape = shape_of(o);
  switch (op_id) {
    case PK_OP_FULL:
      return fill_launch(odt, static_cast<const pk_attrs_full *>(attrs)->value, oshape, O, 0, strides_of(o), out, why);
    case PK_OP_SCALAR_TENSOR:
      return fill_launch(odt, static_cast<const pk_attrs_scalar_tensor *>(attrs)->value, oshape, O, 0, strides_of(o),
                         out, why);
    case PK_OP_MAXIMUM_VALUE:
    case PK_OP_MINIMUM_VALUE:
      return fill_launch(odt, extreme_value(odt, op_id == PK_OP_MAXIMUM_VALUE), oshape, O, 0, strides_of(o), out, why);
    case PK_OP_IOTA: {
      const auto &a = *static_cast<const pk_attrs_iota *>(attrs);
      PlannedLaunch l;
      if (!single(PK_OP_IOTA, nullptr, 0, &odt, 1, nullptr, l.region, why)) return false;
      l.shape = oshape;
      l.args = {PlanArg{O, 0, strides_of(o)}};
      l.extra = {a.start, a.step};
      if (numel(oshape) > 0) out.push_back(std::move(l));
      return true;
    }
    case PK_OP_PHILOX_UNIFORM:
    case PK_OP_PHILOX_NORMAL:
    case PK_OP_PHILOX_RANDINT: {
      if (attrs == nullptr) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      PlannedLaunch l;
      if (!single(op_id, nullptr, 0, &odt, 1, nullptr, l.region, why)) return false;
      auto bits = [](double v) {
        int64_t b;
        std::memcpy(&b, &v, sizeof b);
        return b;
      };
      if (op_id == PK_OP_PHILOX_UNIFORM) {
        const auto &a = *static_cast<const pk_attrs_philox_uniform *>(attrs);
        l.extra = {a.seed, a.offset, bits(a.low), bits(a.high)};
      } else if (op_id == PK_OP_PHILOX_NORMAL) {
        const auto &a = *static_cast<const pk_attrs_philox_normal *>(attrs);
        l.extra = {a.seed, a.offset, bits(a.mean), bits(a.std)};
      } else {
        const auto &a = *static_cast<const pk_attrs_philox_randint *>(attrs);
        l.extra = {a.seed, a.offset, a.low, a.high};
      }
      l.shape = oshape;
      l.args = {PlanArg{O, 0, strides_of(o)}};
      if (numel(oshape) > 0) out.push_back(std::move(l));
      return true;
    }
    default:
      break;
  }
  return std::nullopt;
}

// The ops with an element space of their own: var and argmax/argmin (reductions whose attributes are not a dims
// list), the line ops and gather. nullopt for every other op (and for a matmul without two inputs).
std::optional<bool> plan_line_op(uint32_t op_id, const pk::meta::OpInfo *op, const pk_tensor *in, uint32_t nin,
                                 const pk_tensor *outs, uint32_t nout, const void *attrs,
                                 std::vector<PlannedLaunch> &out, std::string &why) {
  const pk_tensor &o = outs[0];
  switch (op_id) {
    case PK_OP_VAR: {
      if (attrs == nullptr) {
        why = "var: no attributes";
        return false;
      }
      const auto &a = *static_cast<const pk_attrs_var *>(attrs);
      return plan_reduction(op_id, in[0], o, std::vector<int64_t>(a.dims, a.dims + a.num_dims), out, why, attrs);
    }
    case PK_OP_CUMSUM:
    case PK_OP_CUMPROD:
    case PK_OP_CUMMAX:
    case PK_OP_CUMMIN:
    case PK_OP_LOGCUMSUMEXP: {
      if (attrs == nullptr || nin != 1) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      // Every scan's attributes are {struct_size, dim}.
      static_assert(sizeof(pk_attrs_cumsum) == sizeof(pk_attrs_cumprod) &&
                        sizeof(pk_attrs_cumsum) == sizeof(pk_attrs_cummax) &&
                        sizeof(pk_attrs_cumsum) == sizeof(pk_attrs_cummin) &&
                        sizeof(pk_attrs_cumsum) == sizeof(pk_attrs_logcumsumexp),
                    "scan attribute layouts differ");
      return plan_scan(op_id, in, outs, nout, static_cast<const pk_attrs_cumsum *>(attrs)->dim, out, why);
    }
    case PK_OP_GATHER:
    case PK_OP_INDEX_SELECT: {
      if (attrs == nullptr || nin != 2) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      static_assert(sizeof(pk_attrs_gather) == sizeof(pk_attrs_index_select), "gather attribute layouts differ");
      return plan_gather(op_id, in, o, static_cast<const pk_attrs_gather *>(attrs)->dim, out, why);
    }
    case PK_OP_SORT:
    case PK_OP_TOPK: {
      if (attrs == nullptr || nin != 1) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      const int64_t dim = op_id == PK_OP_SORT ? static_cast<const pk_attrs_sort *>(attrs)->dim
                                              : static_cast<const pk_attrs_topk *>(attrs)->dim;
      return plan_order(op_id, in[0], outs, nout, dim, attrs, out, why);
    }
    case PK_OP_SCATTER:
    case PK_OP_SCATTER_REDUCE:
      if (attrs == nullptr || nin != 3) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      static_assert(offsetof(pk_attrs_scatter, dim) == offsetof(pk_attrs_scatter_reduce, dim), "scatter dim");
      return plan_scatter(op_id, in, o, static_cast<const pk_attrs_scatter *>(attrs)->dim, attrs, out, why);
    case PK_OP_INDEX_PUT:
      if (attrs == nullptr || nin < 3) {
        why = "index_put: no attributes or no index";
        return false;
      }
      return plan_index_put(in, nin, o, attrs, out, why);
    case PK_OP_FFT_C2C:
    case PK_OP_FFT_R2C:
    case PK_OP_FFT_C2R:
      if (attrs == nullptr || nin != 1) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      return plan_fft(op_id, in[0], o, attrs, out, why);
    case PK_OP_CONVOLUTION:
      if (attrs == nullptr || nin != 2) {
        why = "convolution: no attributes";
        return false;
      }
      return plan_conv(in, o, attrs, out, why);
    case PK_OP_SEARCHSORTED:
      if (attrs == nullptr || nin != 2) {
        why = "searchsorted: no attributes";
        return false;
      }
      return plan_searchsorted(in, o, attrs, out, why);
    case PK_OP_MATMUL:
    case PK_OP_BATCH_MATMUL: {
      if (nin != 2) break;
      const int64_t r = in[0].ndim;  // [B,] M, K x [B,] K, N
      const std::vector<int64_t> batch = r == 3 ? std::vector<int64_t>{0} : std::vector<int64_t>{};
      return plan_dot(op_id, in, o, batch, batch, {r - 1}, {r - 2}, out, why);
    }
    case PK_OP_DOT_GENERAL: {
      if (attrs == nullptr || nin != 2) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      const auto &a = *static_cast<const pk_attrs_dot_general *>(attrs);
      return plan_dot(op_id, in, o, std::vector<int64_t>(a.lhs_batch, a.lhs_batch + a.num_lhs_batch),
                      std::vector<int64_t>(a.rhs_batch, a.rhs_batch + a.num_rhs_batch),
                      std::vector<int64_t>(a.lhs_contract, a.lhs_contract + a.num_lhs_contract),
                      std::vector<int64_t>(a.rhs_contract, a.rhs_contract + a.num_rhs_contract), out, why);
    }
    case PK_OP_ARGMAX:
    case PK_OP_ARGMIN: {
      if (attrs == nullptr) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      static_assert(sizeof(pk_attrs_argmax) == sizeof(pk_attrs_argmin), "argmax/argmin attribute layouts differ");
      return plan_reduction(op_id, in[0], o, {static_cast<const pk_attrs_argmax *>(attrs)->dim}, out, why);
    }
    default:
      break;
  }
  return std::nullopt;
}

bool plan_impl(uint32_t op_id, const pk_tensor *in, uint32_t nin, const pk_tensor *outs, uint32_t nout,
               const void *attrs, std::vector<PlannedLaunch> &out, std::string &why) {
  const pk::meta::OpInfo *op = pk::meta::find_op(op_id);
  if (op == nullptr || op->tier != pk::meta::Tier::primitive || nout != op->num_outputs || nout < 1 ||
      (nin > 0 && in == nullptr) || outs == nullptr ||
      (nout > 1 && op_id != PK_OP_CUMMAX && op_id != PK_OP_CUMMIN && !is_order_op(op_id))) {
    why = text("%s: the code generator has no lowering for this op", op ? op->name : "unknown op");
    return false;
  }
  if (const std::optional<bool> done = plan_data_movement(op_id, op, in, nin, outs, attrs, out, why)) return *done;
  if (const std::optional<bool> done = plan_creation(op_id, op, nin, outs, attrs, out, why)) return *done;
  if (const std::optional<bool> done = plan_line_op(op_id, op, in, nin, outs, nout, attrs, out, why)) return *done;
  const pk_tensor &o = outs[0];
  const int32_t odt = pk::meta::dtype_id(o.dtype);
  const uint32_t O = nin;  // the output's tensor index
  const std::vector<int64_t> oshape = shape_of(o);
  if (is_dims_reduction(op_id)) {
    if (attrs == nullptr) {
      why = text("%s: no attributes", op->name);
      return false;
    }
    const auto &a = *static_cast<const pk_attrs_sum *>(attrs);
    return plan_reduction(op_id, in[0], o, std::vector<int64_t>(a.dims, a.dims + a.num_dims), out, why);
  }
  // Elementwise: every operand walks the output's shape with its own strides.
  if (nin > 8) {
    why = "the code generator handles elementwise ops with at most 8 inputs";
    return false;
  }
  int32_t dts[8];
  for (uint32_t i = 0; i < nin; ++i) dts[i] = pk::meta::dtype_id(in[i].dtype);
  PlannedLaunch l;
  if (!single(op_id, dts, nin, &odt, 1, attrs, l.region, why)) return false;
  l.shape = oshape;
  for (uint32_t i = 0; i < nin; ++i) l.args.push_back(PlanArg{i, 0, strides_of(in[i])});
  l.args.push_back(PlanArg{O, 0, strides_of(o)});
  if (numel(oshape) > 0) out.push_back(std::move(l));
  return true;
}

// Coverage queries give no output descriptors (and attributes may be NULL: "any values"): the answer comes from
// the op's dtype rules.
bool coverage(const pk::meta::OpInfo &op, const int32_t *in, uint32_t nin, const void *attrs, std::string &why) {
  auto var_dtype = [&](int32_t var) {
    for (uint32_t i = 0; i < nin && i < op.num_inputs; ++i)
      if (op.inputs[i].type_var == var) return in[i];
    return nin > 0 ? in[0] : static_cast<int32_t>(PK_DTYPE_F32);
  };
  int32_t odt = PK_DTYPE_F32;
  if (op.num_outputs > 0) {
    const pk::meta::OutputInfo &oi = op.outputs[0];
    switch (oi.rule) {
      case pk::meta::DtypeRule::type_var:
        odt = var_dtype(oi.arg);
        break;
      case pk::meta::DtypeRule::fixed:
        odt = oi.arg;
        break;
      case pk::meta::DtypeRule::attr:
        odt = nin > 0 ? in[0] : static_cast<int32_t>(PK_DTYPE_F32);
        if (attrs != nullptr) std::memcpy(&odt, static_cast<const char *>(attrs) + op.attrs[oi.arg].offset, sizeof odt);
        break;
      case pk::meta::DtypeRule::complex_of:
        odt = pk::meta::complex_of(var_dtype(oi.arg));
        break;
      default:
        odt = pk::meta::real_of(var_dtype(oi.arg));
        break;
    }
  }
  if (op.num_outputs != 1 && op.id != PK_OP_CUMMAX && op.id != PK_OP_CUMMIN && !is_order_op(op.id)) {
    why = text("%s: the code generator handles ops with one output", op.name);
    return false;
  }
  switch (op.id) {
    case PK_OP_CLONE:
    case PK_OP_VIEW_OF:
    case PK_OP_COPY_TO:
    case PK_OP_TRANSPOSE:
    case PK_OP_BROADCAST_IN_DIM:
    case PK_OP_SLICE:
    case PK_OP_SLICE_IN_DIM:
    case PK_OP_REV:
    case PK_OP_EXPAND_DIMS:
    case PK_OP_SQUEEZE:
    case PK_OP_COLLAPSE_VIEW:
    case PK_OP_COLLAPSE:
    case PK_OP_RESHAPE:
    case PK_OP_SPLIT_DIM:
    case PK_OP_AS_STRIDED:
    case PK_OP_CAT:
    case PK_OP_SLICE_SCATTER:
    case PK_OP_AS_STRIDED_SCATTER: {
      int32_t lanes = 1;
      if (bits_dtype(odt, lanes) >= 0) return true;
      why = text("%s: no storage type for this dtype in the code generator", op.name);
      return false;
    }
    case PK_OP_PAD:
    case PK_OP_FULL:
    case PK_OP_SCALAR_TENSOR:
    case PK_OP_MAXIMUM_VALUE:
    case PK_OP_MINIMUM_VALUE:
      if (cls(odt) || odt == PK_DTYPE_F8E4M3FN || odt == PK_DTYPE_F8E5M2) return true;
      why = text("%s: dtype %s is not supported by the code generator", op.name, pk::meta::dtype_name(odt));
      return false;
    default:
      break;
  }
  Region r;
  return single(op.id, in, nin, &odt, 1, nullptr, r, why);
}

}  // namespace

}  // namespace detail

// The detail helpers the functions below use (emit.hpp, region_internal.hpp).
using detail::coverage;
using detail::dense_strides;
using detail::numel;
using detail::plan_impl;
using detail::Strides;
using detail::text;

bool plan_op(uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
             uint32_t num_outputs, const void *attrs, std::vector<PlannedLaunch> &out, std::string &why) {
  out.clear();
  for (uint32_t i = 0; i < num_inputs + num_outputs; ++i) {
    const pk_tensor &t = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
    if (pk::meta::dtype_id(t.dtype) < 0) {
      why = "unknown dtype";
      return false;
    }
  }
  if (!plan_impl(op_id, inputs, num_inputs, outputs, num_outputs, attrs, out, why)) {
    out.clear();
    return false;
  }
  for (const PlannedLaunch &l : out) {
    if (l.shape.size() > PK_MAX_RANK) {
      why = "rank too large for the code generator";
      out.clear();
      return false;
    }
  }
  return true;
}

bool plan_is_dense(const PlannedLaunch &l) {
  return plan_is_dense(l, 0);
}

uint64_t plan_uniform_inputs(const PlannedLaunch &l) {
  uint64_t bits = 0;
  const size_t nin = std::min<size_t>(l.region.inputs.size(), 64);
  for (size_t k = 0; k < nin && k < l.args.size(); ++k) {
    bool zero = true;
    for (size_t d = 0; d < l.shape.size() && zero; ++d) zero = l.shape[d] == 1 || l.args[k].strides[d] == 0;
    if (zero) bits |= uint64_t{1} << k;
  }
  return bits;
}

bool plan_is_dense(const PlannedLaunch &l, uint64_t uniform) {
  // The convolution kernel reads its element-space coordinates, which only the strided kernel has.
  if (l.region.nodes.size() == 1 &&
      (l.region.nodes[0].op_id == PK_OP_CONVOLUTION || is_fft_op(l.region.nodes[0].op_id)))
    return false;
  const size_t r = l.shape.size();
  const size_t lead = r - static_cast<size_t>(l.red);
  std::vector<int64_t> lead_shape(l.shape.begin(), l.shape.begin() + static_cast<std::ptrdiff_t>(lead));
  std::vector<int64_t> red_shape(l.shape.begin() + static_cast<std::ptrdiff_t>(lead), l.shape.end());
  const Strides full = dense_strides(l.shape), ls = dense_strides(lead_shape), rs = dense_strides(red_shape);
  const size_t nin = l.region.inputs.size();
  for (size_t k = 0; k < l.args.size(); ++k) {
    if (k < 64 && ((uniform >> k) & 1)) continue;  // read at element 0 (KernelSpec::uniform)
    const uint32_t v = k < nin ? l.region.inputs[k] : l.region.outputs[k - nin];
    const Kind kind = l.region.kind(v);
    for (size_t d = 0; d < r; ++d) {
      if (l.shape[d] == 1) continue;
      int64_t want = full[d];
      if (kind == kRow) want = d < lead ? ls[d] : 0;
      if (kind == kCol) want = d < lead ? 0 : rs[d - lead];
      if (l.args[k].strides[d] != want) return false;
    }
  }
  return true;
}

bool fused_args_match(const Region &region, const std::vector<int64_t> &shape, int32_t red, const pk_tensor *args,
                      uint32_t num_args, std::string &why) {
  auto shape_text = [](const int64_t *dims, size_t n) {
    std::string t = "[";
    for (size_t d = 0; d < n; ++d) t += (d ? "," : "") + std::to_string(dims[d]);
    return t + "]";
  };
  if (num_args != region.num_args() || (num_args > 0 && args == nullptr)) {
    why = "the kernel takes " + std::to_string(region.num_args()) + " arguments, got " + std::to_string(num_args);
    return false;
  }
  if (red < 0 || static_cast<size_t>(red) > shape.size()) {
    why = "the kernel's element space has fewer axes than it reduces";
    return false;
  }
  const size_t lead = shape.size() - static_cast<size_t>(red);
  const size_t nin = region.inputs.size();
  for (uint32_t i = 0; i < num_args; ++i) {
    const uint32_t v = i < nin ? region.inputs[i] : region.outputs[i - nin];
    const pk_tensor &t = args[i];
    const std::string which = "argument " + std::to_string(i);
    if (v >= region.dtypes.size()) {
      why = which + ": the region has no such value";
      return false;
    }
    if (pk::meta::dtype_id(t.dtype) != region.dtypes[v]) {
      why = which + " is " + pk::meta::dtype_name(pk::meta::dtype_id(t.dtype)) + ", the kernel was planned for " +
            pk::meta::dtype_name(region.dtypes[v]);
      return false;
    }
    const Kind kind = region.kind(v);
    const size_t first = kind == kCol ? lead : 0, last = kind == kRow ? lead : shape.size();
    const bool readable = t.ndim >= 0 && t.ndim <= PK_MAX_RANK && (t.ndim == 0 || t.shape != nullptr);
    if (!readable || static_cast<size_t>(t.ndim) != last - first ||
        !std::equal(shape.begin() + static_cast<std::ptrdiff_t>(first),
                    shape.begin() + static_cast<std::ptrdiff_t>(last), t.shape)) {
      why = which + " has shape " + (readable ? shape_text(t.shape, static_cast<size_t>(t.ndim)) : "(invalid)") +
            ", the kernel was planned for " + shape_text(shape.data() + first, last - first);
      return false;
    }
    if (t.data == nullptr && numel(shape) != 0) {
      why = which + " has no data";
      return false;
    }
  }
  return true;
}

bool region_for_op(uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
                   uint32_t num_outputs, const void *attrs, Region &out, std::string &why) {
  std::vector<PlannedLaunch> plan;
  if (!plan_op(op_id, inputs, num_inputs, outputs, num_outputs, attrs, plan, why)) return false;
  if (plan.size() != 1) {
    why = "the op runs as several kernels";
    return false;
  }
  out = plan[0].region;
  return true;
}

bool region_for_query(const pk_op_query &q, Region &out, std::string &why) {
  const pk::meta::OpInfo *op = pk::meta::find_op(q.op_id);
  if (op == nullptr || op->tier != pk::meta::Tier::primitive) {
    why = text("%s: the code generator has no lowering for this op", op ? op->name : "unknown op");
    return false;
  }
  if (q.num_inputs > 0 && q.inputs == nullptr) {
    why = "inputs is NULL";
    return false;
  }
  // A coverage query gives no shape in any tensor (primkit.h), outputs or not; an exact one gives every shape.
  // Found by fuzz_query: a coverage query with outputs went on to plan_op, which read the NULL shapes.
  uint32_t shapeless = 0, ranked = 0;
  for (uint32_t i = 0; i < q.num_inputs + (q.outputs ? q.num_outputs : 0); ++i) {
    const pk_tensor &t = i < q.num_inputs ? q.inputs[i] : q.outputs[i - q.num_inputs];
    if (t.ndim > 0) ++ranked, shapeless += t.shape == nullptr;
  }
  if (shapeless != 0 && shapeless != ranked) {
    why = "some tensors give a shape and others none: neither a coverage nor an exact query";
    return false;
  }
  // NULL attrs mean "any attribute values" (primkit.h): answered as coverage too, never planned from a NULL struct
  // (fuzz_query: an exact as_strided query without attrs bound a reference to NULL).
  if (q.num_outputs == 0 || q.outputs == nullptr || shapeless != 0 || (q.attrs == nullptr && op->num_attrs > 0)) {
    if (q.num_inputs > 64) {
      why = "too many inputs";
      return false;
    }
    int32_t in[64];
    for (uint32_t i = 0; i < q.num_inputs; ++i) in[i] = pk::meta::dtype_id(q.inputs[i].dtype);
    for (uint32_t i = 0; i < q.num_inputs; ++i)
      if (in[i] < 0) {
        why = "unknown dtype";
        return false;
      }
    out = Region{};
    return coverage(*op, in, q.num_inputs, q.attrs, why);
  }
  std::vector<PlannedLaunch> plan;
  if (!plan_op(q.op_id, q.inputs, q.num_inputs, q.outputs, q.num_outputs, q.attrs, plan, why)) return false;
  out = plan.empty() ? Region{} : plan[0].region;
  return true;
}

}  // namespace pk::codegen
