// shape_rules.cpp — the shape functions of the op table's `shape: custom` rows (shape_<op>). Each checks its
// inputs' extents against each other and the (already range-checked) attributes and writes the outputs' ranks
// and extents; dtypes are set by the caller. No allocation: this is on the launch path.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "primkit/op_info.hpp"

namespace pk::meta {

namespace {

__extension__ typedef __int128 i128;  // exact sums and products of attributes below 2^62

struct ShapeText {
  char text[160];
};

ShapeText text_of(const int64_t *shape, int32_t ndim) {
  ShapeText s;
  size_t pos = 0;
  pos += static_cast<size_t>(std::snprintf(s.text + pos, sizeof s.text - pos, "["));
  for (int32_t d = 0; d < ndim && pos < sizeof s.text; ++d) {
    pos +=
        static_cast<size_t>(std::snprintf(s.text + pos, sizeof s.text - pos, d ? ", %" PRId64 : "%" PRId64, shape[d]));
  }
  if (pos < sizeof s.text) std::snprintf(s.text + pos, sizeof s.text - pos, "]");
  return s;
}

ShapeText text_of(const TensorType &t) {
  return text_of(t.shape, t.ndim);
}

void set_shape(TensorType &out, const int64_t *shape, int32_t ndim) {
  out.ndim = ndim;
  for (int32_t d = 0; d < ndim; ++d) out.shape[d] = shape[d];
}

void copy_shape(TensorType &out, const TensorType &in) {
  set_shape(out, in.shape, in.ndim);
}

bool same_shape(const TensorType &a, const TensorType &b) {
  if (a.ndim != b.ndim) return false;
  for (int32_t d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

// Offset-like attributes (paddings, strides, dilations, starts) are bounded like extents: |v| < 2^62. No tensor
// needs more, and the bound keeps every sum of an extent and such an attribute, in shape rules and in kernels,
// inside int64 (fuzz_attrs: convolution's padding_low = 0x72ffffff00000001 overflowed the padded extent).
bool offset_in_range(const OpInfo &op, const char *attr, int32_t axis, int64_t v, Diag &d) {
  if (v > -kMaxExtent && v < kMaxExtent) return true;
  if (axis < 0) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s = %" PRId64 " is 2^62 or more in magnitude", op.name,
                  attr, v);
  }
  return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s[%d] = %" PRId64 " is 2^62 or more in magnitude",
                op.name, attr, axis, v);
}

// Elements start, start + stride, ... below limit (0 <= start <= limit, stride >= 1), without forming
// limit - start + stride - 1, which overflows for a huge stride.
int64_t strided_count(int64_t start, int64_t limit, int64_t stride) {
  return limit > start ? (limit - start - 1) / stride + 1 : 0;
}

bool need_rank(const OpInfo &op, const TensorType &t, int32_t arg, int32_t lo, int32_t hi, Diag &d) {
  if (t.ndim < lo || t.ndim > hi) {
    if (lo == hi) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: input %d (%s): rank %d, the op needs rank %d", op.name, arg,
                    op.inputs[arg < static_cast<int32_t>(op.num_inputs) ? arg : op.num_inputs - 1].name, t.ndim, lo);
    }
    return d.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: input %d (%s): rank %d, the op needs rank %d..%d", op.name, arg,
                  op.inputs[arg < static_cast<int32_t>(op.num_inputs) ? arg : op.num_inputs - 1].name, t.ndim, lo, hi);
  }
  return true;
}

// Output extents from an ints attribute (shape=...), which check_attrs has bounded to >= 0.
bool shape_from_attr(const OpInfo &op, const int64_t *v, int32_t n, TensorType &out, Diag &d) {
  if (n < 0 || n > PK_MAX_RANK) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute shape has %d entries (at most %d)", op.name, n,
                  PK_MAX_RANK);
  }
  for (int32_t k = 0; k < n; ++k) {
    if (v[k] < 0) return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute shape has a negative extent", op.name);
  }
  // The sizes rule of pk_tensor before anything multiplies the extents (fuzz_launch: reshape's element count
  // overflowed int64 on shape=[2^57+3, 65536]); byte sizes are checked with the output's dtype by validation.
  char what[PK_NAME_CAPACITY + 32];
  std::snprintf(what, sizeof what, "%s: attribute shape", op.name);
  if (!check_shape_size(v, n, PK_DTYPE_U8, what, -1, d)) return false;
  set_shape(out, v, n);
  return true;
}

// Reductions along one axis that is removed (argmax, argmin).
bool remove_axis(const TensorType &in, int64_t dim, TensorType &out) {
  int32_t r = 0;
  for (int32_t d = 0; d < in.ndim; ++d)
    if (d != dim) out.shape[r++] = in.shape[d];
  out.ndim = r;
  return true;
}

// Shared by as_strided and as_strided_scatter: the largest element position the view touches must lie inside a.
bool check_strided_window(const OpInfo &op, const TensorType &a, const int64_t *shape, int32_t nshape,
                          const int64_t *strides, int32_t nstrides, int64_t offset, Diag &d) {
  if (nshape != nstrides) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attributes shape (%d entries) and strides (%d) differ in length",
                  op.name, nshape, nstrides);
  }
  int64_t last = offset;
  for (int32_t k = 0; k < nshape; ++k) {
    if (shape[k] == 0) return true;  // an empty view touches nothing
    if (strides[k] > 0 && shape[k] - 1 > (INT64_MAX - last) / strides[k]) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: the view overflows 64-bit positions", op.name);
    }
    last += (shape[k] - 1) * strides[k];
  }
  if (last >= numel(a)) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: the view reaches element %" PRId64 " but input 0 (a) has only %" PRId64 " elements", op.name,
                  last, numel(a));
  }
  return true;
}

// Index ops (gather, scatter, scatter_reduce): index has a's rank; extents of index <= a's off dim.
bool check_index_like(const OpInfo &op, const TensorType &a, const TensorType &index, int64_t dim, Diag &d) {
  if (index.ndim != a.ndim) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1, "%s: input 1 (index): rank %d differs from input 0 (a) rank %d",
                  op.name, index.ndim, a.ndim);
  }
  for (int32_t k = 0; k < a.ndim; ++k) {
    if (k != dim && index.shape[k] > a.shape[k]) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                    "%s: input 1 (index): extent %" PRId64 " of axis %d exceeds input 0 (a) extent %" PRId64, op.name,
                    index.shape[k], k, a.shape[k]);
    }
  }
  return true;
}

bool rng_shape(const OpInfo &op, const int64_t *shape, int32_t n, int32_t dtype, bool float_only, TensorType &out,
               Diag &d) {
  if (float_only && !is_float(dtype)) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute dtype = %s, the op produces float dtypes only", op.name,
                  dtype_name(dtype));
  }
  if (!float_only && !is_integer(dtype)) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute dtype = %s, the op produces integer dtypes only",
                  op.name, dtype_name(dtype));
  }
  return shape_from_attr(op, shape, n, out, d);
}

}  // namespace

// --- reductions -------------------------------------------------------------------------------------------------

bool shape_argmax(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_argmax *>(attrs);
  if (in[0].shape[a.dim] == 0) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 0, "%s: input 0 (a): axis %" PRId64 " is empty; no index to return",
                  op.name, a.dim);
  }
  return remove_axis(in[0], a.dim, out[0]);
}

bool shape_argmin(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_argmin *>(attrs);
  if (in[0].shape[a.dim] == 0) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 0, "%s: input 0 (a): axis %" PRId64 " is empty; no index to return",
                  op.name, a.dim);
  }
  return remove_axis(in[0], a.dim, out[0]);
}

// --- views and shape ops ----------------------------------------------------------------------------------------

bool shape_broadcast_in_dim(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out,
                            Diag &d) {
  const auto &a = *static_cast<const pk_attrs_broadcast_in_dim *>(attrs);
  const TensorType &x = in[0];
  if (a.num_broadcast_dimensions != x.ndim) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: attribute broadcast_dimensions has %d entries but input 0 (a) has rank %d", op.name,
                  a.num_broadcast_dimensions, x.ndim);
  }
  for (int32_t k = 0; k < x.ndim; ++k) {
    int64_t bd = a.broadcast_dimensions[k];
    if (bd < 0 || bd >= a.num_shape) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                    "%s: attribute broadcast_dimensions[%d] = %" PRId64 " is not an axis of the output (rank %d)",
                    op.name, k, bd, a.num_shape);
    }
    if (k > 0 && bd <= a.broadcast_dimensions[k - 1]) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute broadcast_dimensions must be strictly increasing",
                    op.name);
    }
    if (x.shape[k] != 1 && x.shape[k] != a.shape[bd]) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, 0,
                    "%s: input 0 (a): extent %" PRId64 " of axis %d is neither 1 nor the output extent %" PRId64
                    " of axis %" PRId64,
                    op.name, x.shape[k], k, a.shape[bd], bd);
    }
  }
  return shape_from_attr(op, a.shape, a.num_shape, out[0], d);
}

bool shape_cat(const OpInfo &op, const TensorType *in, uint32_t n, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_cat *>(attrs);
  const TensorType &first = in[0];
  int64_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const TensorType &t = in[i];
    if (t.ndim != first.ndim) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, static_cast<int32_t>(i),
                    "%s: input %u (tensors): rank %d differs from input 0 rank %d", op.name, i, t.ndim, first.ndim);
    }
    for (int32_t k = 0; k < t.ndim; ++k) {
      if (k != a.dim && t.shape[k] != first.shape[k]) {
        return d.fail(PK_ERROR_INVALID_ARGUMENT, static_cast<int32_t>(i),
                      "%s: input %u (tensors): shape %s differs from input 0 %s off axis %" PRId64, op.name, i,
                      text_of(t).text, text_of(first).text, a.dim);
      }
    }
    // Each extent is below 2^62, so the sum so far plus one more cannot overflow before this check stops it
    // (fuzz_query: 64 inputs of ~2^61 along the axis overflowed the total).
    total += t.shape[a.dim];
    if (total >= kMaxExtent) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, static_cast<int32_t>(i),
                    "%s: input %u (tensors): the concatenated extent along axis %" PRId64 " reaches 2^62 or more",
                    op.name, i, a.dim);
    }
  }
  copy_shape(out[0], first);
  out[0].shape[a.dim] = total;
  return true;
}

bool shape_as_strided(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_as_strided *>(attrs);
  if (!check_strided_window(op, in[0], a.shape, a.num_shape, a.strides, a.num_strides, a.storage_offset, d))
    return false;
  return shape_from_attr(op, a.shape, a.num_shape, out[0], d);
}

namespace {
bool collapse_shape(const OpInfo &op, const TensorType &x, int64_t start, int64_t end, TensorType &out, Diag &d) {
  if (!(start < end && end <= x.ndim)) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: attributes start = %" PRId64 ", end = %" PRId64 " need start < end <= rank (%d)", op.name, start,
                  end, x.ndim);
  }
  int32_t r = 0;
  for (int32_t k = 0; k < start; ++k) out.shape[r++] = x.shape[k];
  int64_t m = 1;
  for (int64_t k = start; k < end; ++k) m *= x.shape[k];
  out.shape[r++] = m;
  for (int32_t k = static_cast<int32_t>(end); k < x.ndim; ++k) out.shape[r++] = x.shape[k];
  out.ndim = r;
  return true;
}
}  // namespace

bool shape_collapse_view(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out,
                         Diag &d) {
  const auto &a = *static_cast<const pk_attrs_collapse_view *>(attrs);
  return collapse_shape(op, in[0], a.start, a.end, out[0], d);
}

bool shape_collapse(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_collapse *>(attrs);
  return collapse_shape(op, in[0], a.start, a.end, out[0], d);
}

bool shape_expand_dims(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_expand_dims *>(attrs);
  const int32_t rank = in[0].ndim + a.num_dims;
  if (rank > PK_MAX_RANK) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: the result would have rank %d (at most %d)", op.name, rank,
                  PK_MAX_RANK);
  }
  uint32_t inserted = 0;
  for (int32_t k = 0; k < a.num_dims; ++k) {
    if (a.dims[k] >= rank) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                    "%s: attribute dims[%d] = %" PRId64 " is not an axis of the result (rank %d)", op.name, k,
                    a.dims[k], rank);
    }
    if (inserted & (1u << a.dims[k])) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute dims repeats %" PRId64, op.name, a.dims[k]);
    }
    inserted |= 1u << a.dims[k];
  }
  int32_t src = 0;
  for (int32_t k = 0; k < rank; ++k) out[0].shape[k] = (inserted & (1u << k)) ? 1 : in[0].shape[src++];
  out[0].ndim = rank;
  return true;
}

bool shape_slice(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_slice *>(attrs);
  const TensorType &x = in[0];
  if (a.num_start_indices != x.ndim || a.num_limit_indices != x.ndim ||
      (a.num_strides != 0 && a.num_strides != x.ndim)) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: start_indices, limit_indices (and strides, unless empty) need one entry per axis of input 0 "
                  "(rank %d); got %d, %d, %d",
                  op.name, x.ndim, a.num_start_indices, a.num_limit_indices, a.num_strides);
  }
  for (int32_t k = 0; k < x.ndim; ++k) {
    int64_t s = a.start_indices[k], l = a.limit_indices[k], st = a.num_strides ? a.strides[k] : 1;
    if (!(s <= l && l <= x.shape[k])) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                    "%s: axis %d: start %" PRId64 " and limit %" PRId64 " need start <= limit <= extent %" PRId64,
                    op.name, k, s, l, x.shape[k]);
    }
    out[0].shape[k] = strided_count(s, l, st);
  }
  out[0].ndim = x.ndim;
  return true;
}

bool shape_slice_in_dim(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_slice_in_dim *>(attrs);
  const TensorType &x = in[0];
  if (!(a.start <= a.limit && a.limit <= x.shape[a.dim])) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: start %" PRId64 " and limit %" PRId64 " need start <= limit <= extent %" PRId64
                  " of axis %" PRId64,
                  op.name, a.start, a.limit, x.shape[a.dim], a.dim);
  }
  copy_shape(out[0], x);
  out[0].shape[a.dim] = strided_count(a.start, a.limit, a.stride);
  return true;
}

bool shape_split_dim(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_split_dim *>(attrs);
  const TensorType &x = in[0];
  if (x.ndim + 1 > PK_MAX_RANK) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: the result would have rank %d (at most %d)", op.name, x.ndim + 1,
                  PK_MAX_RANK);
  }
  if (x.shape[a.dim] % a.outer_length != 0) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: outer_length %" PRId64 " does not divide extent %" PRId64 " of axis %" PRId64, op.name,
                  a.outer_length, x.shape[a.dim], a.dim);
  }
  int32_t r = 0;
  for (int32_t k = 0; k < x.ndim; ++k) {
    if (k == a.dim) {
      out[0].shape[r++] = a.outer_length;
      out[0].shape[r++] = x.shape[k] / a.outer_length;
    } else {
      out[0].shape[r++] = x.shape[k];
    }
  }
  out[0].ndim = r;
  return true;
}

bool shape_squeeze(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_squeeze *>(attrs);
  const TensorType &x = in[0];
  uint32_t removed = 0;
  for (int32_t k = 0; k < a.num_dims; ++k) {
    if (x.shape[a.dims[k]] != 1) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, 0, "%s: input 0 (a): axis %" PRId64 " has extent %" PRId64 ", not 1",
                    op.name, a.dims[k], x.shape[a.dims[k]]);
    }
    removed |= 1u << a.dims[k];
  }
  int32_t r = 0;
  for (int32_t k = 0; k < x.ndim; ++k)
    if (!(removed & (1u << k))) out[0].shape[r++] = x.shape[k];
  out[0].ndim = r;
  return true;
}

bool shape_transpose(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_transpose *>(attrs);
  const TensorType &x = in[0];
  if (a.num_permutation != x.ndim) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute permutation has %d entries but input 0 has rank %d",
                  op.name, a.num_permutation, x.ndim);
  }
  for (int32_t k = 0; k < x.ndim; ++k) out[0].shape[k] = x.shape[a.permutation[k]];
  out[0].ndim = x.ndim;
  return true;
}

bool shape_reshape(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_reshape *>(attrs);
  if (!shape_from_attr(op, a.shape, a.num_shape, out[0], d)) return false;
  if (numel(out[0]) != numel(in[0])) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: attribute shape %s has %" PRId64 " elements but input 0 (a) %s has %" PRId64, op.name,
                  text_of(out[0]).text, numel(out[0]), text_of(in[0]).text, numel(in[0]));
  }
  return true;
}

bool shape_as_strided_scatter(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out,
                              Diag &d) {
  const auto &a = *static_cast<const pk_attrs_as_strided_scatter *>(attrs);
  if (!check_strided_window(op, in[0], a.shape, a.num_shape, a.strides, a.num_strides, a.storage_offset, d))
    return false;
  TensorType want{};
  if (!shape_from_attr(op, a.shape, a.num_shape, want, d)) return false;
  if (!same_shape(want, in[1])) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1, "%s: input 1 (src): shape %s but attribute shape is %s", op.name,
                  text_of(in[1]).text, text_of(want).text);
  }
  copy_shape(out[0], in[0]);
  return true;
}

bool shape_pad(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_pad *>(attrs);
  const TensorType &x = in[0];
  if (a.num_low != x.ndim || a.num_high != x.ndim || (a.num_interior != 0 && a.num_interior != x.ndim)) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: low, high (and interior, unless empty) need one entry per axis of input 0 (rank %d); got %d, "
                  "%d, %d",
                  op.name, x.ndim, a.num_low, a.num_high, a.num_interior);
  }
  for (int32_t k = 0; k < x.ndim; ++k) {
    int64_t interior = a.num_interior ? a.interior[k] : 0;
    if (!offset_in_range(op, "low", k, a.low[k], d) || !offset_in_range(op, "high", k, a.high[k], d) ||
        !offset_in_range(op, "interior", k, interior, d)) {
      return false;
    }
    int64_t n = x.shape[k];
    // Each term is below 2^62 in magnitude and (n - 1) * interior below 2^124: exact in 128 bits.
    i128 e = static_cast<i128>(a.low[k]) + a.high[k] + n + (n > 0 ? static_cast<i128>(n - 1) * interior : 0);
    if (e < 0) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                    "%s: axis %d: low %" PRId64 " and high %" PRId64 " crop more than the padded extent", op.name, k,
                    a.low[k], a.high[k]);
    }
    if (e >= kMaxExtent) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                    "%s: axis %d: low %" PRId64 ", high %" PRId64 " and interior %" PRId64 " pad extent %" PRId64
                    " to 2^62 or more",
                    op.name, k, a.low[k], a.high[k], interior, n);
    }
    out[0].shape[k] = static_cast<int64_t>(e);
  }
  out[0].ndim = x.ndim;
  return true;
}

bool shape_slice_scatter(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out,
                         Diag &d) {
  const auto &a = *static_cast<const pk_attrs_slice_scatter *>(attrs);
  const TensorType &x = in[0], &src = in[1];
  if (src.ndim != x.ndim) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1, "%s: input 1 (src): rank %d differs from input 0 (a) rank %d", op.name,
                  src.ndim, x.ndim);
  }
  for (int32_t k = 0; k < x.ndim; ++k) {
    if (k != a.dim && src.shape[k] != x.shape[k]) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                    "%s: input 1 (src): shape %s differs from input 0 (a) %s off axis %" PRId64, op.name,
                    text_of(src).text, text_of(x).text, a.dim);
    }
  }
  int64_t n = src.shape[a.dim];
  // start + (n - 1) * stride in 128 bits: both attributes may be anything up to 2^63 - 1.
  if (n > 0 && static_cast<i128>(a.start) + static_cast<i128>(n - 1) * a.stride >= x.shape[a.dim]) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                  "%s: input 1 (src): %" PRId64 " slices from %" PRId64 " by %" PRId64 " overrun axis %" PRId64
                  " (extent %" PRId64 ")",
                  op.name, n, a.start, a.stride, a.dim, x.shape[a.dim]);
  }
  copy_shape(out[0], x);
  return true;
}

// --- creation and RNG -------------------------------------------------------------------------------------------

bool shape_full(const OpInfo &op, const TensorType *, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_full *>(attrs);
  return shape_from_attr(op, a.shape, a.num_shape, out[0], d);
}

bool shape_iota(const OpInfo &, const TensorType *, uint32_t, const void *attrs, TensorType *out, Diag &) {
  const auto &a = *static_cast<const pk_attrs_iota *>(attrs);
  out[0].ndim = 1;
  out[0].shape[0] = a.length;
  return true;
}

bool shape_scalar_tensor(const OpInfo &, const TensorType *, uint32_t, const void *, TensorType *out, Diag &) {
  out[0].ndim = 0;
  return true;
}

bool shape_maximum_value(const OpInfo &, const TensorType *, uint32_t, const void *, TensorType *out, Diag &) {
  out[0].ndim = 0;
  return true;
}

bool shape_minimum_value(const OpInfo &, const TensorType *, uint32_t, const void *, TensorType *out, Diag &) {
  out[0].ndim = 0;
  return true;
}

bool shape_philox_uniform(const OpInfo &op, const TensorType *, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_philox_uniform *>(attrs);
  if (!(a.low < a.high)) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attributes low = %g and high = %g need low < high", op.name,
                  a.low, a.high);
  }
  return rng_shape(op, a.shape, a.num_shape, a.dtype, true, out[0], d);
}

bool shape_philox_normal(const OpInfo &op, const TensorType *, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_philox_normal *>(attrs);
  return rng_shape(op, a.shape, a.num_shape, a.dtype, true, out[0], d);
}

bool shape_philox_randint(const OpInfo &op, const TensorType *, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_philox_randint *>(attrs);
  // high - low in [1, 2^32], computed without overflow.
  if (!(a.low < a.high) || (a.low < 0 && a.high > INT64_MAX + a.low) || a.high - a.low > (int64_t{1} << 32)) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: attributes low = %" PRId64 " and high = %" PRId64 " need 1 <= high - low <= 2^32", op.name,
                  a.low, a.high);
  }
  return rng_shape(op, a.shape, a.num_shape, a.dtype, false, out[0], d);
}

// --- linear algebra ---------------------------------------------------------------------------------------------

bool shape_matmul(const OpInfo &op, const TensorType *in, uint32_t, const void *, TensorType *out, Diag &d) {
  if (!need_rank(op, in[0], 0, 2, 2, d) || !need_rank(op, in[1], 1, 2, 2, d)) return false;
  if (in[0].shape[1] != in[1].shape[0]) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                  "%s: input 1 (b): shape %s does not continue input 0 (a) %s (K differs)", op.name,
                  text_of(in[1]).text, text_of(in[0]).text);
  }
  out[0].ndim = 2;
  out[0].shape[0] = in[0].shape[0];
  out[0].shape[1] = in[1].shape[1];
  return true;
}

bool shape_batch_matmul(const OpInfo &op, const TensorType *in, uint32_t, const void *, TensorType *out, Diag &d) {
  if (!need_rank(op, in[0], 0, 3, 3, d) || !need_rank(op, in[1], 1, 3, 3, d)) return false;
  if (in[0].shape[0] != in[1].shape[0] || in[0].shape[2] != in[1].shape[1]) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                  "%s: input 1 (b): shape %s does not match input 0 (a) %s (need [B, M, K] x [B, K, N])", op.name,
                  text_of(in[1]).text, text_of(in[0]).text);
  }
  out[0].ndim = 3;
  out[0].shape[0] = in[0].shape[0];
  out[0].shape[1] = in[0].shape[1];
  out[0].shape[2] = in[1].shape[2];
  return true;
}

bool shape_dot_general(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_dot_general *>(attrs);
  const TensorType &l = in[0], &r = in[1];
  if (a.num_lhs_batch != a.num_rhs_batch || a.num_lhs_contract != a.num_rhs_contract) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: lhs_batch/rhs_batch (%d/%d) and lhs_contract/rhs_contract (%d/%d) must pair up", op.name,
                  a.num_lhs_batch, a.num_rhs_batch, a.num_lhs_contract, a.num_rhs_contract);
  }
  uint32_t lused = 0, rused = 0;
  for (int32_t k = 0; k < a.num_lhs_batch; ++k) {
    if (l.shape[a.lhs_batch[k]] != r.shape[a.rhs_batch[k]]) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                    "%s: batch pair %d: extent %" PRId64 " of a axis %" PRId64 " != extent %" PRId64
                    " of b axis %" PRId64,
                    op.name, k, l.shape[a.lhs_batch[k]], a.lhs_batch[k], r.shape[a.rhs_batch[k]], a.rhs_batch[k]);
    }
    lused |= 1u << a.lhs_batch[k];
    rused |= 1u << a.rhs_batch[k];
  }
  for (int32_t k = 0; k < a.num_lhs_contract; ++k) {
    if (l.shape[a.lhs_contract[k]] != r.shape[a.rhs_contract[k]]) {
      return d.fail(
          PK_ERROR_INVALID_ARGUMENT, 1,
          "%s: contracting pair %d: extent %" PRId64 " of a axis %" PRId64 " != extent %" PRId64 " of b axis %" PRId64,
          op.name, k, l.shape[a.lhs_contract[k]], a.lhs_contract[k], r.shape[a.rhs_contract[k]], a.rhs_contract[k]);
    }
    if ((lused & (1u << a.lhs_contract[k])) || (rused & (1u << a.rhs_contract[k]))) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: an axis is both a batch and a contracting axis", op.name);
    }
    lused |= 1u << a.lhs_contract[k];
    rused |= 1u << a.rhs_contract[k];
  }
  int32_t rank = 0;
  int64_t shape[3 * PK_MAX_RANK];
  for (int32_t k = 0; k < a.num_lhs_batch; ++k) shape[rank++] = l.shape[a.lhs_batch[k]];
  for (int32_t k = 0; k < l.ndim; ++k)
    if (!(lused & (1u << k))) shape[rank++] = l.shape[k];
  for (int32_t k = 0; k < r.ndim; ++k)
    if (!(rused & (1u << k))) shape[rank++] = r.shape[k];
  if (rank > PK_MAX_RANK) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: the result would have rank %d (at most %d)", op.name, rank,
                  PK_MAX_RANK);
  }
  set_shape(out[0], shape, rank);
  return true;
}

bool shape_convolution(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_convolution *>(attrs);
  const TensorType &x = in[0], &w = in[1];
  if (!need_rank(op, x, 0, 3, 5, d)) return false;
  if (w.ndim != x.ndim) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1, "%s: input 1 (weight): rank %d differs from input 0 (input) rank %d",
                  op.name, w.ndim, x.ndim);
  }
  const int32_t ns = x.ndim - 2;
  const struct {
    const char *name;
    int32_t n;
  } lists[] = {{"stride", a.num_stride},
               {"padding_low", a.num_padding_low},
               {"padding_high", a.num_padding_high},
               {"dilation", a.num_dilation}};
  for (const auto &li : lists) {
    if (li.n != 0 && li.n != ns) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                    "%s: attribute %s has %d entries; give %d (one per spatial axis) or none", op.name, li.name, li.n,
                    ns);
    }
  }
  const int64_t c = x.shape[1], o = w.shape[0], g = a.groups;
  if (c % g != 0 || o % g != 0) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                  "%s: groups = %" PRId64 " must divide the input channels %" PRId64 " and output channels %" PRId64,
                  op.name, g, c, o);
  }
  if (w.shape[1] != c / g) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                  "%s: input 1 (weight): shape %s needs %" PRId64
                  " input channels per group (axis 1), input has %" PRId64 " channels in %" PRId64 " groups",
                  op.name, text_of(w).text, c / g, c, g);
  }
  out[0].ndim = x.ndim;
  out[0].shape[0] = x.shape[0];
  out[0].shape[1] = o;
  for (int32_t s = 0; s < ns; ++s) {
    int64_t stride = a.num_stride ? a.stride[s] : 1, dil = a.num_dilation ? a.dilation[s] : 1;
    int64_t lo = a.num_padding_low ? a.padding_low[s] : 0, hi = a.num_padding_high ? a.padding_high[s] : 0;
    if (!offset_in_range(op, "stride", s, stride, d) || !offset_in_range(op, "dilation", s, dil, d) ||
        !offset_in_range(op, "padding_low", s, lo, d) || !offset_in_range(op, "padding_high", s, hi, d)) {
      return false;
    }
    // The padded input is a tensor a kernel walks: its extent is bounded like one. Sums and the dilated kernel's
    // span are formed in 128 bits (each term is below 2^62, three of them are not below 2^63).
    const i128 padded = static_cast<i128>(x.shape[2 + s]) + lo + hi;
    if (padded >= kMaxExtent) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                    "%s: spatial axis %d: padding_low %" PRId64 " and padding_high %" PRId64 " pad extent %" PRId64
                    " to 2^62 or more",
                    op.name, s, lo, hi, x.shape[2 + s]);
    }
    const i128 span = static_cast<i128>(dil) * (w.shape[2 + s] - 1) + 1;
    if (padded < span) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                    "%s: spatial axis %d: the dilated kernel (%.17g) is larger than the padded input (%" PRId64 ")",
                    op.name, s, static_cast<double>(span), static_cast<int64_t>(padded));
    }
    out[0].shape[2 + s] = static_cast<int64_t>((padded - span) / stride + 1);
  }
  return true;
}

// --- indexing ---------------------------------------------------------------------------------------------------

bool shape_gather(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_gather *>(attrs);
  if (!check_index_like(op, in[0], in[1], a.dim, d)) return false;
  copy_shape(out[0], in[1]);
  return true;
}

namespace {
bool scatter_like(const OpInfo &op, const TensorType *in, int64_t dim, TensorType *out, Diag &d) {
  if (!check_index_like(op, in[0], in[1], dim, d)) return false;
  if (!same_shape(in[1], in[2])) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 2, "%s: input 2 (src): shape %s differs from input 1 (index) %s", op.name,
                  text_of(in[2]).text, text_of(in[1]).text);
  }
  copy_shape(out[0], in[0]);
  return true;
}
}  // namespace

bool shape_scatter(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  return scatter_like(op, in, static_cast<const pk_attrs_scatter *>(attrs)->dim, out, d);
}

bool shape_scatter_reduce(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out,
                          Diag &d) {
  return scatter_like(op, in, static_cast<const pk_attrs_scatter_reduce *>(attrs)->dim, out, d);
}

bool shape_index_select(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_index_select *>(attrs);
  if (!need_rank(op, in[1], 1, 1, 1, d)) return false;
  copy_shape(out[0], in[0]);
  out[0].shape[a.dim] = in[1].shape[0];
  return true;
}

bool shape_index_put(const OpInfo &op, const TensorType *in, uint32_t n, const void *, TensorType *out, Diag &d) {
  const TensorType &a = in[0], &values = in[1];
  const uint32_t k = n - 2;
  if (k == 0 || k > static_cast<uint32_t>(a.ndim)) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: %u index tensors; give 1..rank(a) = %d", op.name, k, a.ndim);
  }
  int64_t len = -1;
  for (uint32_t i = 2; i < n; ++i) {
    if (in[i].ndim != 1) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, static_cast<int32_t>(i), "%s: input %u (indices): rank %d, need 1-D",
                    op.name, i, in[i].ndim);
    }
    if (len >= 0 && in[i].shape[0] != len) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, static_cast<int32_t>(i),
                    "%s: input %u (indices): length %" PRId64 " differs from input 2 length %" PRId64, op.name, i,
                    in[i].shape[0], len);
    }
    len = in[i].shape[0];
  }
  bool ok = values.ndim == 1 + a.ndim - static_cast<int32_t>(k) && values.shape[0] == len;
  for (int32_t dd = 1; ok && dd < values.ndim; ++dd) ok = values.shape[dd] == a.shape[static_cast<int32_t>(k) + dd - 1];
  if (!ok) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                  "%s: input 1 (values): shape %s, need [%" PRId64 "] + the extents of a %s after its first %u axes",
                  op.name, text_of(values).text, len, text_of(a).text, k);
  }
  copy_shape(out[0], a);
  return true;
}

// --- sorting and searching --------------------------------------------------------------------------------------

bool shape_topk(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_topk *>(attrs);
  if (a.k > in[0].shape[a.dim]) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: k = %" PRId64 " exceeds extent %" PRId64 " of axis %" PRId64,
                  op.name, a.k, in[0].shape[a.dim], a.dim);
  }
  for (int k = 0; k < 2; ++k) {
    copy_shape(out[k], in[0]);
    out[k].shape[a.dim] = a.k;
  }
  return true;
}

bool shape_searchsorted(const OpInfo &op, const TensorType *in, uint32_t, const void *, TensorType *out, Diag &d) {
  if (!need_rank(op, in[0], 0, 1, 1, d)) return false;
  copy_shape(out[0], in[1]);
  return true;
}

// --- attention --------------------------------------------------------------------------------------------------

// q [B, Hq, L, E], k [B, Hkv, S, E], v [B, Hkv, S, Ev] with Hkv dividing Hq (grouped-query heads), and a mask that
// broadcasts to [B, Hq, L, S] from its trailing axes (PyTorch's attn_mask rule), bool or q's dtype. Checked here
// rather than left to the decomposition so that a bad launch names the argument instead of an inner primitive.
bool shape_scaled_dot_product_attention_masked(const OpInfo &op, const TensorType *in, uint32_t, const void *,
                                               TensorType *out, Diag &d) {
  for (int32_t i = 0; i < 3; ++i)
    if (!need_rank(op, in[i], i, 4, 4, d)) return false;
  if (!need_rank(op, in[3], 3, 0, 4, d)) return false;
  const TensorType &q = in[0], &k = in[1], &v = in[2], &m = in[3];
  if (k.shape[0] != q.shape[0] || k.shape[3] != q.shape[3]) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                  "%s: input 1 (k): shape %s does not match input 0 (q) %s (need k [B, Hkv, S, E] for q [B, Hq, L, E])",
                  op.name, text_of(k).text, text_of(q).text);
  }
  if (v.shape[0] != k.shape[0] || v.shape[1] != k.shape[1] || v.shape[2] != k.shape[2]) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 2,
                  "%s: input 2 (v): shape %s does not match input 1 (k) %s (need v [B, Hkv, S, Ev])", op.name,
                  text_of(v).text, text_of(k).text);
  }
  const int64_t hq = q.shape[1], hkv = k.shape[1];
  if (hkv == 0 ? hq != 0 : hq % hkv != 0) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 1,
                  "%s: input 1 (k): %" PRId64 " kv heads do not divide the %" PRId64
                  " query heads of input 0 (q) (grouped-query attention needs Hq a multiple of Hkv)",
                  op.name, hkv, hq);
  }
  if (m.dtype != PK_DTYPE_BOOL && m.dtype != q.dtype) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 3,
                  "%s: input 3 (mask): dtype %d is neither bool nor q's dtype %d (an additive mask has q's dtype)",
                  op.name, m.dtype, q.dtype);
  }
  const int64_t full[4] = {q.shape[0], hq, q.shape[2], k.shape[2]};
  for (int32_t a = 0; a < m.ndim; ++a) {
    const int64_t e = m.shape[a], want = full[4 - m.ndim + a];
    if (e != 1 && e != want) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, 3,
                    "%s: input 3 (mask): shape %s does not broadcast to [B, Hq, L, S] = %s (axis %d has %" PRId64
                    ", needs 1 or %" PRId64 ")",
                    op.name, text_of(m).text, text_of(full, 4).text, a, e, want);
    }
  }
  set_shape(out[0], full, 4);
  out[0].shape[3] = v.shape[3];
  return true;
}

// --- FFT --------------------------------------------------------------------------------------------------------

bool shape_fft_r2c(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_fft_r2c *>(attrs);
  if (a.num_dims == 0) return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute dims is empty", op.name);
  copy_shape(out[0], in[0]);
  if (a.onesided) {
    int64_t last = a.dims[a.num_dims - 1];
    // n / 2 + 1 entries would make one output entry out of no input (PyTorch refuses 0 points as well).
    if (in[0].shape[last] == 0) {
      return d.fail(PK_ERROR_INVALID_ARGUMENT, 0,
                    "%s: input 0 (a): axis %" PRId64 " has 0 entries; a onesided transform needs at least one", op.name,
                    last);
    }
    out[0].shape[last] = in[0].shape[last] / 2 + 1;
  }
  return true;
}

bool shape_fft_c2r(const OpInfo &op, const TensorType *in, uint32_t, const void *attrs, TensorType *out, Diag &d) {
  const auto &a = *static_cast<const pk_attrs_fft_c2r *>(attrs);
  if (a.num_dims == 0) return d.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute dims is empty", op.name);
  int64_t last = a.dims[a.num_dims - 1];
  if (in[0].shape[last] != a.last_dim_size / 2 + 1) {
    return d.fail(PK_ERROR_INVALID_ARGUMENT, 0,
                  "%s: input 0 (a): axis %" PRId64 " has %" PRId64 " entries; last_dim_size %" PRId64 " needs %" PRId64,
                  op.name, last, in[0].shape[last], a.last_dim_size, a.last_dim_size / 2 + 1);
  }
  copy_shape(out[0], in[0]);
  out[0].shape[last] = a.last_dim_size;
  return true;
}

// --- canonical attributes ---------------------------------------------------------------------------------------

void canonicalize_attrs(const OpInfo &op, const TensorType *in, uint32_t num_inputs, void *attrs) {
  if (attrs == nullptr || num_inputs == 0) return;
  switch (op.id) {
    case PK_OP_SLICE: {
      auto &a = *static_cast<pk_attrs_slice *>(attrs);
      for (int32_t k = 0; k < a.num_strides && k < in[0].ndim; ++k) {
        const int64_t n = strided_count(a.start_indices[k], a.limit_indices[k], a.strides[k]);
        if (n <= 1) {
          a.limit_indices[k] = a.start_indices[k] + n;  // the same n elements with step 1
          a.strides[k] = 1;
        }
      }
      break;
    }
    case PK_OP_SLICE_IN_DIM: {
      auto &a = *static_cast<pk_attrs_slice_in_dim *>(attrs);
      const int64_t n = strided_count(a.start, a.limit, a.stride);
      if (n <= 1) {
        a.limit = a.start + n;
        a.stride = 1;
      }
      break;
    }
    case PK_OP_SLICE_SCATTER: {
      auto &a = *static_cast<pk_attrs_slice_scatter *>(attrs);
      if (num_inputs > 1 && a.dim >= 0 && a.dim < in[1].ndim && in[1].shape[a.dim] <= 1) a.stride = 1;
      break;
    }
    case PK_OP_PAD: {
      auto &a = *static_cast<pk_attrs_pad *>(attrs);
      for (int32_t k = 0; k < a.num_interior && k < in[0].ndim; ++k) {
        if (in[0].shape[k] <= 1) a.interior[k] = 0;
      }
      break;
    }
    default:
      break;
  }
}

}  // namespace pk::meta
