// validate.cpp — shape inference and launch validation from the op table. This is the runtime's per-launch
// path: no heap, no locks, no std::string; everything works on fixed-size stack data.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>

#include "primkit/op_info.hpp"

namespace pk::meta {

namespace {

__extension__ typedef __int128 i128;

constexpr uint32_t kMaxTypeVars = 8;
// Extents beyond this many bytes are saturated: far past any storage_bytes, and safe from i128 overflow.
constexpr i128 kSaturate = static_cast<i128>(1) << 96;
// A caller's attribute struct larger than this is taken as garbage rather than scanned for non-zero bytes.
constexpr uint32_t kMaxPlausibleAttrsSize = 1u << 16;

// --- naming -------------------------------------------------------------------------------------------------

const char *input_name(const OpInfo &op, uint32_t i) {
  if (i < op.num_inputs) return op.inputs[i].name;
  if (op.variadic()) return op.inputs[op.num_inputs - 1].name;
  return "?";
}

const OperandInfo *input_decl(const OpInfo &op, uint32_t i) {
  if (i < op.num_inputs) return &op.inputs[i];
  if (op.variadic()) return &op.inputs[op.num_inputs - 1];
  return nullptr;
}

// "input 1 (b)" / "output 0 (out)" / "argument 3" into buf.
struct Label {
  char text[96];
};

// `entry` names the entry point when the tensors are not an op's (e.g. "pk_executable_run").
Label label(const OpInfo *op, bool output, uint32_t idx, const char *entry = nullptr) {
  Label l;
  if (op == nullptr) {
    if (entry)
      std::snprintf(l.text, sizeof l.text, "%s %u", output ? "output" : "input", idx);
    else
      std::snprintf(l.text, sizeof l.text, "argument %u", idx);
  } else if (output) {
    std::snprintf(l.text, sizeof l.text, "output %u (%s)", idx, idx < op->num_outputs ? op->outputs[idx].name : "?");
  } else {
    std::snprintf(l.text, sizeof l.text, "input %u (%s)", idx, input_name(*op, idx));
  }
  return l;
}

// Which argument a check is about; the text is built only when a check fails.
struct Who {
  const OpInfo *op;
  bool output;
  uint32_t idx;
  const char *entry = nullptr;  // the entry point, when the tensors are not an op's
  Label text() const { return label(op, output, idx, entry); }
  // What the message starts with: the op, else the entry point.
  const char *subject() const { return op ? op->name : entry ? entry : "tensor"; }
};

struct ShapeText {
  char text[8 * 21 + 4];
};

ShapeText shape_text(const int64_t *shape, int32_t ndim) {
  ShapeText s;
  size_t n = 0;
  s.text[n++] = '[';
  for (int32_t i = 0; i < ndim && i < PK_MAX_RANK; ++i) {
    int w = std::snprintf(s.text + n, sizeof s.text - n, i ? ",%lld" : "%lld", static_cast<long long>(shape[i]));
    if (w < 0 || static_cast<size_t>(w) >= sizeof s.text - n) break;
    n += static_cast<size_t>(w);
  }
  if (n + 2 <= sizeof s.text) {
    s.text[n++] = ']';
    s.text[n] = '\0';
  } else {
    s.text[sizeof s.text - 1] = '\0';
  }
  return s;
}

// "u8, i8, i16" — the dtypes of a mask.
struct MaskText {
  char text[160];
};

MaskText mask_text(uint32_t mask) {
  MaskText m;
  size_t n = 0;
  m.text[0] = '\0';
  for (int32_t id = 0; id < PK_DTYPE_COUNT; ++id) {
    if (!(mask & (1u << id))) continue;
    int w = std::snprintf(m.text + n, sizeof m.text - n, n ? ", %s" : "%s", dtype_name(id));
    if (w < 0 || static_cast<size_t>(w) >= sizeof m.text - n) break;
    n += static_cast<size_t>(w);
  }
  return m;
}

long long sat_ll(i128 v) {
  if (v > static_cast<i128>(INT64_MAX)) return INT64_MAX;
  if (v < static_cast<i128>(INT64_MIN)) return INT64_MIN;
  return static_cast<long long>(v);
}

// --- descriptors ----------------------------------------------------------------------------------------------

// Bounds a shape whose extents are >= 0 (see check_shape_size in op_info.hpp). The product skips the zeros: an
// empty tensor has no element, but its row-major strides and a backend's loop bounds are still products of its
// other extents ([0, 2, 2^62] would give axis 0 a stride of 2^63).
// `name()` gives the text naming the tensor ("add: input 0 (a)"), built only when a check fails.
struct Prefix {
  char text[192];
};

template <class Name>
bool check_size(const int64_t *shape, int32_t ndim, size_t esize, const Name &name, int32_t arg, Diag &diag) {
  uint64_t count = 1;
  for (int32_t i = 0; i < ndim; ++i) {
    const int64_t n = shape[i];
    if (n >= kMaxExtent) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: extent %lld of axis %d is 2^62 or more", name().text,
                       static_cast<long long>(n), i);
    }
    if (n > 0 &&
        (__builtin_mul_overflow(count, static_cast<uint64_t>(n), &count) || count > static_cast<uint64_t>(INT64_MAX))) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                       "%s: shape %s: its non-empty extents make more than 2^63-1 elements", name().text,
                       shape_text(shape, ndim).text);
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(esize), &bytes) || bytes > static_cast<uint64_t>(INT64_MAX)) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                     "%s: shape %s: its non-empty extents make %llu elements of %zu bytes, more than 2^63-1 bytes",
                     name().text, shape_text(shape, ndim).text, static_cast<unsigned long long>(count), esize);
  }
  return true;
}

bool check_descriptor(const pk_tensor &t, TensorType &out, const Who &who, int32_t arg, Diag &diag) {
  const char *on = who.subject();
  if (t.struct_size < sizeof(pk_tensor)) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                     "%s: %s: struct_size %u is smaller than pk_tensor (%zu); initialize it with PK_STRUCT_INIT", on,
                     who.text().text, t.struct_size, sizeof(pk_tensor));
  }
  if (t.ndim < 0 || t.ndim > PK_MAX_RANK) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: ndim %d is outside 0..%d", on, who.text().text, t.ndim,
                     PK_MAX_RANK);
  }
  if (t.ndim > 0 && t.shape == nullptr) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: shape is NULL but ndim is %d", on, who.text().text,
                     t.ndim);
  }
  int32_t dt = dtype_id(t.dtype);
  if (dt < 0) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: dtype {code %u, bits %u, lanes %u} is no PrimKit dtype",
                     on, who.text().text, t.dtype.code, t.dtype.bits, t.dtype.lanes);
  }
  out.dtype = dt;
  out.ndim = t.ndim;
  for (int32_t i = 0; i < t.ndim; ++i) {
    int64_t n = t.shape[i];
    if (n < 0) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: extent %lld of axis %d is negative", on,
                       who.text().text, static_cast<long long>(n), i);
    }
    out.shape[i] = n;
  }
  for (int32_t i = t.ndim; i < PK_MAX_RANK; ++i) out.shape[i] = 0;
  auto name = [&] {
    Prefix p;
    std::snprintf(p.text, sizeof p.text, "%s: %s", on, who.text().text);
    return p;
  };
  return check_size(t.shape, t.ndim, dtype_size(dt), name, arg, diag);
}

// Element strides of a view: the given ones, or row-major contiguous for NULL.
void effective_strides(const pk_tensor &t, int64_t *strides) {
  if (t.strides) {
    for (int32_t i = 0; i < t.ndim; ++i) strides[i] = t.strides[i];
    return;
  }
  int64_t s = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    strides[i] = s;
    s *= t.shape[i] > 0 ? t.shape[i] : 1;
  }
}

// Byte range [lo, hi) relative to data, exact (saturated far past 2^64). Assumes a checked descriptor.
void extent128(const pk_tensor &t, size_t esize, i128 &lo, i128 &hi) {
  i128 off = static_cast<i128>(t.byte_offset);
  for (int32_t i = 0; i < t.ndim; ++i) {
    if (t.shape[i] == 0) {
      lo = hi = off;
      return;
    }
  }
  i128 mn = 0, mx = 0;
  if (t.strides == nullptr) {
    i128 n = 1;
    for (int32_t i = 0; i < t.ndim; ++i) {
      n *= t.shape[i];
      if (n > kSaturate) n = kSaturate;
    }
    mx = n - 1;
  } else {
    for (int32_t i = 0; i < t.ndim; ++i) {
      i128 d = static_cast<i128>(t.strides[i]) * (t.shape[i] - 1);
      if (d > 0) {
        mx += d;
        if (mx > kSaturate) mx = kSaturate;
      } else {
        mn += d;
        if (mn < -kSaturate) mn = -kSaturate;
      }
    }
  }
  lo = off + mn * static_cast<i128>(esize);
  hi = off + (mx + 1) * static_cast<i128>(esize);
}

bool is_empty(const TensorType &t) {
  for (int32_t i = 0; i < t.ndim; ++i)
    if (t.shape[i] == 0) return true;
  return false;
}

// Outputs: no zero or negative strides on axes with more than one element, and no two elements at one address.
bool check_output_layout(const pk_tensor &t, const Who &who, int32_t arg, Diag &diag) {
  if (t.strides == nullptr) return true;
  int32_t axes[PK_MAX_RANK];
  int32_t n = 0;
  for (int32_t i = 0; i < t.ndim; ++i) {
    if (t.shape[i] <= 1) continue;
    if (t.strides[i] == 0) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: zero stride on axis %d makes elements alias",
                       who.subject(), who.text().text, i);
    }
    if (t.strides[i] < 0) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                       "%s: %s: negative stride %lld on axis %d; output strides must be positive", who.subject(),
                       who.text().text, static_cast<long long>(t.strides[i]), i);
    }
    // insertion sort by stride
    int32_t k = n++;
    while (k > 0 && t.strides[axes[k - 1]] > t.strides[i]) {
      axes[k] = axes[k - 1];
      --k;
    }
    axes[k] = i;
  }
  i128 span = 0;
  for (int32_t k = 0; k < n; ++k) {
    int32_t ax = axes[k];
    if (static_cast<i128>(t.strides[ax]) <= span) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: stride %lld on axis %d makes elements overlap",
                       who.subject(), who.text().text, static_cast<long long>(t.strides[ax]), ax);
    }
    span += static_cast<i128>(t.strides[ax]) * (t.shape[ax] - 1);
  }
  return true;
}

bool host_addressable(const pk_tensor &t) {
  return (t.flags & PK_TENSOR_FLAG_HOST_VISIBLE) || t.device_type == PK_DEVICE_CPU ||
         t.device_type == PK_DEVICE_CUDA_HOST;
}

// The ABI's placement rule (primkit.h, pk_tensor): a NULL data pointer only for an empty view at offset 0, and a
// non-empty view's first element aligned to the element size, as kernels load whole elements (a misaligned f64
// load faults on some devices and is slow on others). Where `data` is a host address the sum data + byte_offset
// is checked; elsewhere it may be an opaque handle whose storage starts aligned, so byte_offset is.
template <class Name>
bool check_placement(const pk_tensor &t, size_t esize, bool empty, const Name &name, int32_t arg, Diag &diag) {
  if (t.data == nullptr) {
    if (!empty)
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: data is NULL but the tensor has elements", name().text);
    if (t.byte_offset != 0) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                       "%s: data is NULL with byte_offset %llu; a NULL data pointer is only legal with offset 0",
                       name().text, static_cast<unsigned long long>(t.byte_offset));
    }
    return true;
  }
  if (empty || esize <= 1) return true;
  if (host_addressable(t)) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(t.byte_offset);
    if (first % esize != 0) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                       "%s: data + byte_offset (%p + %llu) is not aligned to the element size of %zu bytes",
                       name().text, t.data, static_cast<unsigned long long>(t.byte_offset), esize);
    }
  } else if (t.byte_offset % esize != 0) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                     "%s: byte_offset %llu is not a multiple of the element size of %zu bytes", name().text,
                     static_cast<unsigned long long>(t.byte_offset), esize);
  }
  return true;
}

// Conservative: true when the byte ranges of two non-empty views may share a byte.
bool may_overlap(const pk_tensor &a, i128 alo, i128 ahi, const pk_tensor &b, i128 blo, i128 bhi) {
  if (alo == ahi || blo == bhi) return false;
  if (a.device_type != b.device_type || a.device_id != b.device_id) return false;
  if (a.data != b.data) {
    if (!host_addressable(a) || !host_addressable(b)) return false;  // distinct handles or allocations
    i128 da = static_cast<i128>(reinterpret_cast<uintptr_t>(a.data));
    i128 db = static_cast<i128>(reinterpret_cast<uintptr_t>(b.data));
    alo += da;
    ahi += da;
    blo += db;
    bhi += db;
  }
  return alo < bhi && blo < ahi;
}

bool same_view(const pk_tensor &a, const pk_tensor &b) {
  if (a.data != b.data || a.byte_offset != b.byte_offset || a.ndim != b.ndim || a.device_type != b.device_type ||
      a.device_id != b.device_id || a.dtype.code != b.dtype.code || a.dtype.bits != b.dtype.bits)
    return false;
  int64_t sa[PK_MAX_RANK], sb[PK_MAX_RANK];
  effective_strides(a, sa);
  effective_strides(b, sb);
  for (int32_t i = 0; i < a.ndim; ++i) {
    if (a.shape[i] != b.shape[i]) return false;
    if (a.shape[i] > 1 && sa[i] != sb[i]) return false;
  }
  return true;
}

// --- attributes -----------------------------------------------------------------------------------------------

size_t field_end(const AttrInfo &a) {
  switch (a.type) {
    case AttrType::i64:
    case AttrType::f64:
      return a.offset + 8;
    case AttrType::ints: {
      size_t e1 = a.count_offset + sizeof(int32_t), e2 = a.offset + sizeof(int64_t) * PK_MAX_RANK;
      return e1 > e2 ? e1 : e2;
    }
    default:
      return a.offset + sizeof(int32_t);
  }
}

template <class T>
T load(const void *base, size_t off) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char *>(base) + off, sizeof v);
  return v;
}

template <class T>
void store(void *base, size_t off, T v) {
  std::memcpy(static_cast<unsigned char *>(base) + off, &v, sizeof v);
}

void write_default(const AttrInfo &a, void *out) {
  switch (a.type) {
    case AttrType::i64:
      store<int64_t>(out, a.offset, a.has_default ? static_cast<int64_t>(a.default_value) : 0);
      break;
    case AttrType::f64:
      store<double>(out, a.offset,
                    a.has_default ? a.default_value : (a.required ? std::numeric_limits<double>::quiet_NaN() : 0.0));
      break;
    case AttrType::ints: {
      int32_t n = 0;
      if (a.has_default && a.default_ints) {
        n = a.num_default_ints < 0 ? 0 : (a.num_default_ints > PK_MAX_RANK ? PK_MAX_RANK : a.num_default_ints);
        for (int32_t i = 0; i < n; ++i) store<int64_t>(out, a.offset + 8 * static_cast<size_t>(i), a.default_ints[i]);
      }
      store<int32_t>(out, a.count_offset, n);
      break;
    }
    default:
      store<int32_t>(out, a.offset, a.has_default ? static_cast<int32_t>(a.default_value) : 0);
      break;
  }
}

void fill_defaults(const OpInfo &op, void *out) {
  std::memset(out, 0, op.attrs_size);
  store<uint32_t>(out, 0, static_cast<uint32_t>(op.attrs_size));
  for (uint32_t i = 0; i < op.num_attrs; ++i) write_default(op.attrs[i], out);
}

bool check_range(const OpInfo &op, const AttrInfo &a, double v, int32_t elem, Diag &diag) {
  char name[80];
  if (elem >= 0)
    std::snprintf(name, sizeof name, "%s[%d]", a.name, elem);
  else
    std::snprintf(name, sizeof name, "%s", a.name);
  if ((a.has_min || a.has_max) && std::isnan(v)) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s is NaN", op.name, name);
  }
  if (a.has_min && v < a.min) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s = %.17g is below the minimum %.17g", op.name,
                     name, v, a.min);
  }
  if (a.has_max && v > a.max) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s = %.17g is above the maximum %.17g", op.name,
                     name, v, a.max);
  }
  return true;
}

bool check_axis(const OpInfo &op, const AttrInfo &a, int64_t v, int32_t elem, int32_t rank, Diag &diag) {
  if (v >= 0 && v < rank) return true;
  char name[80];
  if (elem >= 0)
    std::snprintf(name, sizeof name, "%s[%d]", a.name, elem);
  else
    std::snprintf(name, sizeof name, "%s", a.name);
  return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s = %lld is not an axis of input %d (%s), rank %d",
                   op.name, name, static_cast<long long>(v), a.dim_of, op.inputs[a.dim_of].name, rank);
}

// --- shapes ---------------------------------------------------------------------------------------------------

bool check_arity(const OpInfo &op, uint32_t num_inputs, Diag &diag) {
  uint32_t min_in = op.num_inputs;
  while (min_in > 0 && op.inputs[min_in - 1].optional && !op.inputs[min_in - 1].variadic) --min_in;
  if (op.variadic()) {
    if (num_inputs < op.num_inputs) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: takes at least %u input%s (%s is variadic), got %u", op.name,
                       op.num_inputs, op.num_inputs == 1 ? "" : "s", op.inputs[op.num_inputs - 1].name, num_inputs);
    }
  } else if (num_inputs < min_in || num_inputs > op.num_inputs) {
    if (min_in == op.num_inputs)
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: takes %u input%s, got %u", op.name, op.num_inputs,
                       op.num_inputs == 1 ? "" : "s", num_inputs);
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: takes %u to %u inputs, got %u", op.name, min_in, op.num_inputs,
                     num_inputs);
  }
  if (num_inputs > kMaxLaunchInputs) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: %u inputs; at most %u are supported", op.name, num_inputs,
                     kMaxLaunchInputs);
  }
  return true;
}

int32_t find_attr(const OpInfo &op, const char *name) {
  for (uint32_t i = 0; i < op.num_attrs; ++i)
    if (std::strcmp(op.attrs[i].name, name) == 0) return static_cast<int32_t>(i);
  return -1;
}

}  // namespace

// --- public -----------------------------------------------------------------------------------------------------

void default_attrs(const OpInfo &op, void *out) {
  if (op.attrs_size > 0) fill_defaults(op, out);
}

bool Diag::fail(pk_status s, int32_t arg, const char *fmt, ...) {
  status = s;
  arg_index = arg;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  return false;
}

int64_t numel(const TensorType &t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.ndim && i < PK_MAX_RANK; ++i) n *= t.shape[i];
  return n;
}

bool tensor_type(const pk_tensor &t, TensorType &out, const OpInfo *op, int32_t arg_index, Diag &diag) {
  // arg_index counts inputs first, then outputs; with a variadic op it is taken as an input.
  bool output = false;
  uint32_t idx = arg_index < 0 ? 0 : static_cast<uint32_t>(arg_index);
  if (op && !op->variadic() && idx >= op->num_inputs) {
    output = true;
    idx -= op->num_inputs;
  }
  return check_descriptor(t, out, Who{op, output, idx}, arg_index, diag);
}

bool check_shape_size(const int64_t *shape, int32_t ndim, int32_t dtype, const char *what, int32_t arg, Diag &diag) {
  auto name = [&] {
    Prefix p;
    std::snprintf(p.text, sizeof p.text, "%s", what);
    return p;
  };
  return check_size(shape, ndim, dtype_size(dtype), name, arg, diag);
}

bool check_tensor_placement(const pk_tensor &t, const char *what, int32_t arg, Diag &diag) {
  auto name = [&] {
    Prefix p;
    std::snprintf(p.text, sizeof p.text, "%s", what);
    return p;
  };
  uint64_t lo = 0, hi = 0;
  byte_extent(t, lo, hi);
  return check_placement(t, dtype_size(dtype_id(t.dtype)), lo == hi, name, arg, diag);
}

void byte_extent(const pk_tensor &t, uint64_t &lo, uint64_t &hi) {
  size_t esize = dtype_size(dtype_id(t.dtype));
  if (t.ndim < 0 || t.ndim > PK_MAX_RANK || (t.ndim > 0 && t.shape == nullptr)) {
    lo = hi = t.byte_offset;
    return;
  }
  i128 l, h;
  extent128(t, esize, l, h);
  auto clamp = [](i128 v) -> uint64_t {
    if (v < 0) return 0;
    if (v > static_cast<i128>(UINT64_MAX)) return UINT64_MAX;
    return static_cast<uint64_t>(v);
  };
  lo = clamp(l);
  hi = clamp(h);
}

bool normalize_attrs(const OpInfo &op, const void *attrs, void *out, Diag &diag) {
  if (op.num_attrs == 0) return true;  // nothing to read; a pointer passed anyway is ignored
  if (op.attrs_size > kMaxAttrsSize || op.attrs_size < sizeof(uint32_t)) {
    return diag.fail(PK_ERROR_INTERNAL, -1, "%s: attribute struct size %zu is outside 4..%zu (op table bug)", op.name,
                     op.attrs_size, kMaxAttrsSize);
  }
  if (attrs == nullptr) {
    for (uint32_t i = 0; i < op.num_attrs; ++i) {
      if (!op.attrs[i].has_default) {
        return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                         "%s: attrs is NULL but attribute %s has no default; pass a pk_attrs_%s (PK_ATTRS_*_INIT)",
                         op.name, op.attrs[i].name, op.name);
      }
    }
    fill_defaults(op, out);
    return true;
  }
  uint32_t size = load<uint32_t>(attrs, 0);
  if (size < sizeof(uint32_t)) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                     "%s: attribute struct_size %u is too small; initialize pk_attrs_%s with its PK_ATTRS_*_INIT",
                     op.name, size, op.name);
  }
  if (size > op.attrs_size) {
    if (size > kMaxPlausibleAttrsSize) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                       "%s: attribute struct_size %u is implausible (this runtime's pk_attrs_%s has %zu bytes)",
                       op.name, size, op.name, op.attrs_size);
    }
    const unsigned char *p = static_cast<const unsigned char *>(attrs);
    for (uint32_t i = static_cast<uint32_t>(op.attrs_size); i < size; ++i) {
      if (p[i] != 0) {
        return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                         "%s: attribute struct is newer than this runtime (struct_size %u > %zu) and sets a field "
                         "this runtime does not know (non-zero byte at offset %u)",
                         op.name, size, op.attrs_size, i);
      }
    }
  }
  fill_defaults(op, out);
  for (uint32_t i = 0; i < op.num_attrs; ++i) {
    const AttrInfo &a = op.attrs[i];
    if (field_end(a) > size) continue;  // an older caller: keeps the default
    switch (a.type) {
      case AttrType::i64:
      case AttrType::f64:
        std::memcpy(static_cast<unsigned char *>(out) + a.offset, static_cast<const unsigned char *>(attrs) + a.offset,
                    8);
        break;
      case AttrType::ints:
        std::memcpy(static_cast<unsigned char *>(out) + a.count_offset,
                    static_cast<const unsigned char *>(attrs) + a.count_offset, sizeof(int32_t));
        std::memcpy(static_cast<unsigned char *>(out) + a.offset, static_cast<const unsigned char *>(attrs) + a.offset,
                    sizeof(int64_t) * PK_MAX_RANK);
        break;
      case AttrType::boolean:
        store<int32_t>(out, a.offset, load<int32_t>(attrs, a.offset) != 0 ? 1 : 0);
        break;
      default:
        std::memcpy(static_cast<unsigned char *>(out) + a.offset, static_cast<const unsigned char *>(attrs) + a.offset,
                    sizeof(int32_t));
        break;
    }
  }
  return true;
}

bool check_attrs(const OpInfo &op, const void *attrs, const TensorType *inputs, uint32_t num_inputs, Diag &diag) {
  if (op.num_attrs == 0) return true;
  if (attrs == nullptr) return diag.fail(PK_ERROR_INTERNAL, -1, "%s: check_attrs needs normalized attributes", op.name);
  for (uint32_t i = 0; i < op.num_attrs; ++i) {
    const AttrInfo &a = op.attrs[i];
    // The input whose axes the attribute names (for a variadic input: its first tensor); -1 if not given.
    int32_t rank = -1;
    if (a.dim_of >= 0 && static_cast<uint32_t>(a.dim_of) < num_inputs && inputs) rank = inputs[a.dim_of].ndim;
    switch (a.type) {
      case AttrType::i64: {
        int64_t v = load<int64_t>(attrs, a.offset);
        if (!check_range(op, a, static_cast<double>(v), -1, diag)) return false;
        if (rank >= 0 && !check_axis(op, a, v, -1, rank, diag)) return false;
        break;
      }
      case AttrType::f64: {
        double v = load<double>(attrs, a.offset);
        if (a.required && std::isnan(v)) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                           "%s: attribute %s is required and was left unset (NaN); the op has no safe default for it",
                           op.name, a.name);
        }
        if (!check_range(op, a, v, -1, diag)) return false;
        break;
      }
      case AttrType::boolean: {
        int32_t v = load<int32_t>(attrs, a.offset);
        if (v != 0 && v != 1) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s = %d is not a bool (0 or 1)", op.name,
                           a.name, v);
        }
        break;
      }
      case AttrType::dtype: {
        int32_t v = load<int32_t>(attrs, a.offset);
        if (v < 0 || v >= PK_DTYPE_COUNT) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s = %d is not a dtype id (0..%d)", op.name,
                           a.name, v, PK_DTYPE_COUNT - 1);
        }
        break;
      }
      case AttrType::enumeration: {
        int32_t v = load<int32_t>(attrs, a.offset);
        if (v < 0 || v >= a.enum_count) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s = %d is not a %s choice (0..%d)", op.name,
                           a.name, v, enum_name(a.enum_id), a.enum_count - 1);
        }
        break;
      }
      case AttrType::ints: {
        int32_t n = load<int32_t>(attrs, a.count_offset);
        if (n < 0 || n > PK_MAX_RANK) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s has %d values (num_%s); at most %d",
                           op.name, a.name, n, a.name, PK_MAX_RANK);
        }
        uint32_t seen = 0;
        for (int32_t k = 0; k < n; ++k) {
          int64_t v = load<int64_t>(attrs, a.offset + 8 * static_cast<size_t>(k));
          if (!check_range(op, a, static_cast<double>(v), k, diag)) return false;
          if (rank >= 0) {
            if (!check_axis(op, a, v, k, rank, diag)) return false;
            if (seen & (1u << v)) {
              return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s[%d] = %lld repeats an axis", op.name,
                               a.name, k, static_cast<long long>(v));
            }
            seen |= 1u << v;
          }
        }
        break;
      }
    }
  }
  return true;
}

bool infer_outputs(const OpInfo &op, const TensorType *inputs, uint32_t num_inputs, const void *attrs,
                   TensorType *outputs, Diag &diag) {
  if (!check_arity(op, num_inputs, diag)) return false;
  if (num_inputs > 0 && inputs == nullptr)
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: inputs is NULL", op.name);
  if (op.num_type_vars > kMaxTypeVars) {
    return diag.fail(PK_ERROR_INTERNAL, -1, "%s: %u type variables; at most %u supported", op.name, op.num_type_vars,
                     kMaxTypeVars);
  }
  int32_t bound_dtype[kMaxTypeVars];
  int32_t bound_by[kMaxTypeVars];
  for (uint32_t v = 0; v < op.num_type_vars; ++v) bound_by[v] = -1;
  for (uint32_t i = 0; i < num_inputs; ++i) {
    const TensorType &t = inputs[i];
    const OperandInfo &decl = *input_decl(op, i);
    int32_t arg = static_cast<int32_t>(i);
    if (t.ndim < 0 || t.ndim > PK_MAX_RANK) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: rank %d is outside 0..%d", op.name,
                       label(&op, false, i).text, t.ndim, PK_MAX_RANK);
    }
    if (t.dtype < 0 || t.dtype >= PK_DTYPE_COUNT) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: dtype id %d is no PrimKit dtype", op.name,
                       label(&op, false, i).text, t.dtype);
    }
    if (decl.type_var >= 0 && static_cast<uint32_t>(decl.type_var) < op.num_type_vars) {
      const TypeVarInfo &tv = op.type_vars[decl.type_var];
      if (!(tv.dtype_mask & (1u << t.dtype))) {
        return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: dtype %s is not admitted (%s is one of %s)", op.name,
                         label(&op, false, i).text, dtype_name(t.dtype), tv.name, mask_text(tv.dtype_mask).text);
      }
      int32_t first = bound_by[decl.type_var];
      if (first < 0) {
        bound_by[decl.type_var] = arg;
        bound_dtype[decl.type_var] = t.dtype;
      } else if (bound_dtype[decl.type_var] != t.dtype) {
        return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: dtype %s differs from %s %s", op.name,
                         label(&op, false, i).text, dtype_name(t.dtype),
                         label(&op, false, static_cast<uint32_t>(first)).text, dtype_name(bound_dtype[decl.type_var]));
      }
    } else if (decl.type_var < 0 && t.dtype != decl.fixed_dtype) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: dtype %s but the op needs %s", op.name,
                       label(&op, false, i).text, dtype_name(t.dtype), dtype_name(decl.fixed_dtype));
    } else if (decl.type_var >= 0) {
      return diag.fail(PK_ERROR_INTERNAL, arg, "%s: %s: type variable %d out of range (op table bug)", op.name,
                       label(&op, false, i).text, decl.type_var);
    }
  }
  for (uint32_t k = 0; k < op.num_outputs; ++k) {
    outputs[k].dtype = -1;
    outputs[k].ndim = 0;
    for (int32_t d = 0; d < PK_MAX_RANK; ++d) outputs[k].shape[d] = 0;
  }
  // Shapes.
  switch (op.shape) {
    case ShapeRule::elementwise: {
      for (uint32_t i = 1; i < num_inputs; ++i) {
        const TensorType &a = inputs[0], &b = inputs[i];
        bool same = a.ndim == b.ndim;
        for (int32_t d = 0; same && d < a.ndim; ++d) same = a.shape[d] == b.shape[d];
        if (!same) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, static_cast<int32_t>(i),
                           "%s: %s: shape %s differs from %s %s (no implicit broadcasting; use broadcast_in_dim)",
                           op.name, label(&op, false, i).text, shape_text(b.shape, b.ndim).text,
                           label(&op, false, 0).text, shape_text(a.shape, a.ndim).text);
        }
      }
      for (uint32_t k = 0; k < op.num_outputs; ++k) {
        if (num_inputs == 0) break;
        outputs[k].ndim = inputs[0].ndim;
        for (int32_t d = 0; d < inputs[0].ndim; ++d) outputs[k].shape[d] = inputs[0].shape[d];
      }
      break;
    }
    case ShapeRule::reduce: {
      int32_t ai = find_attr(op, "dims");
      if (ai < 0 || op.attrs[ai].type != AttrType::ints || num_inputs == 0 || attrs == nullptr) {
        return diag.fail(PK_ERROR_INTERNAL, -1, "%s: shape rule reduce needs input 0 and an ints attribute dims",
                         op.name);
      }
      const AttrInfo &a = op.attrs[ai];
      int32_t n = load<int32_t>(attrs, a.count_offset);
      uint32_t removed = 0;
      for (int32_t k = 0; k < n && k < PK_MAX_RANK; ++k) {
        int64_t v = load<int64_t>(attrs, a.offset + 8 * static_cast<size_t>(k));
        if (v < 0 || v >= inputs[0].ndim) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1,
                           "%s: attribute dims[%d] = %lld is not an axis of input 0 (%s), rank %d", op.name, k,
                           static_cast<long long>(v), op.inputs[0].name, inputs[0].ndim);
        }
        removed |= 1u << v;
      }
      for (uint32_t k = 0; k < op.num_outputs; ++k) {
        int32_t r = 0;
        for (int32_t d = 0; d < inputs[0].ndim; ++d)
          if (!(removed & (1u << d))) outputs[k].shape[r++] = inputs[0].shape[d];
        outputs[k].ndim = r;
      }
      break;
    }
    case ShapeRule::scan:
    case ShapeRule::same_as_input: {
      if (num_inputs == 0) {
        return diag.fail(PK_ERROR_INTERNAL, -1, "%s: shape rule same_as_input/scan needs an input", op.name);
      }
      for (uint32_t k = 0; k < op.num_outputs; ++k) {
        outputs[k].ndim = inputs[0].ndim;
        for (int32_t d = 0; d < inputs[0].ndim; ++d) outputs[k].shape[d] = inputs[0].shape[d];
      }
      break;
    }
    case ShapeRule::derived: {
      // The program types the outputs (and checks the inputs through its primitives' rules). This allocates;
      // derived shapes exist only on composite ops, whose launch decomposes anyway.
      Decomposition d;
      if (!decompose(op, inputs, num_inputs, attrs, d, diag)) return false;
      for (uint32_t k = 0; k < op.num_outputs && k < d.outputs.size(); ++k) outputs[k] = d.values[d.outputs[k]];
      break;
    }
    case ShapeRule::custom: {
      if (op.shape_fn == nullptr)
        return diag.fail(PK_ERROR_INTERNAL, -1, "%s: custom shape rule without function", op.name);
      if (!op.shape_fn(op, inputs, num_inputs, attrs, outputs, diag)) {
        if (diag.status == PK_OK) diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: shape rule failed", op.name);
        return false;
      }
      for (uint32_t k = 0; k < op.num_outputs; ++k) {
        const TensorType &o = outputs[k];
        bool ok = o.ndim >= 0 && o.ndim <= PK_MAX_RANK;
        for (int32_t d = 0; ok && d < o.ndim; ++d) ok = o.shape[d] >= 0;
        if (!ok) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, static_cast<int32_t>(num_inputs + k),
                           "%s: %s: the shape rule gives rank %d or a negative extent (at most rank %d)", op.name,
                           label(&op, true, k).text, o.ndim, PK_MAX_RANK);
        }
      }
      break;
    }
  }
  // Dtypes.
  for (uint32_t k = 0; k < op.num_outputs; ++k) {
    const OutputInfo &o = op.outputs[k];
    int32_t dt = -1;
    switch (o.rule) {
      case DtypeRule::type_var:
      case DtypeRule::real_of:
      case DtypeRule::complex_of:
        if (o.arg < 0 || static_cast<uint32_t>(o.arg) >= op.num_type_vars || bound_by[o.arg] < 0) {
          return diag.fail(PK_ERROR_INTERNAL, -1, "%s: output %u (%s): its type variable is bound by no input", op.name,
                           k, o.name);
        }
        dt = bound_dtype[o.arg];
        if (o.rule == DtypeRule::real_of) dt = real_of(dt);
        if (o.rule == DtypeRule::complex_of) {
          dt = complex_of(dt);
          if (dt < 0) {
            return diag.fail(PK_ERROR_INVALID_ARGUMENT, bound_by[o.arg], "%s: %s: no complex dtype for %s", op.name,
                             label(&op, false, static_cast<uint32_t>(bound_by[o.arg])).text,
                             dtype_name(bound_dtype[o.arg]));
          }
        }
        break;
      case DtypeRule::fixed:
        dt = o.arg;
        break;
      case DtypeRule::attr: {
        if (o.arg < 0 || static_cast<uint32_t>(o.arg) >= op.num_attrs || attrs == nullptr) {
          return diag.fail(PK_ERROR_INTERNAL, -1, "%s: output %u (%s): dtype attribute missing", op.name, k, o.name);
        }
        const AttrInfo &a = op.attrs[o.arg];
        dt = load<int32_t>(attrs, a.offset);
        if (dt < 0 || dt >= PK_DTYPE_COUNT) {
          return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: attribute %s = %d is not a dtype id (0..%d)", op.name,
                           a.name, dt, PK_DTYPE_COUNT - 1);
        }
        break;
      }
    }
    outputs[k].dtype = dt;
  }
  // A shape rule may give outputs far larger than its inputs (huge padding, many windows): bound them as input
  // descriptors are bounded, here, so that every consumer of inference (launches, pk_infer_outputs, graph nodes)
  // gets only sizes it can compute with.
  for (uint32_t k = 0; k < op.num_outputs; ++k) {
    const int32_t arg = static_cast<int32_t>(num_inputs + k);
    auto name = [&] {
      Prefix p;
      std::snprintf(p.text, sizeof p.text, "%s: %s", op.name, label(&op, true, k).text);
      return p;
    };
    if (!check_size(outputs[k].shape, outputs[k].ndim, dtype_size(outputs[k].dtype), name, arg, diag)) return false;
  }
  return true;
}

namespace {

// One tensor that a kernel will read or write, on its own: the descriptor, the bytes the view reaches against
// storage_bytes, the placement rule, and for an output that it is writable with positive, non-overlapping
// strides. `span` gets the bytes [lo, hi) relative to data (both within storage_bytes once this passed).
bool check_run_tensor(const pk_tensor &t, const Who &who, int32_t arg, TensorType &tt, ViewSpan &span, Diag &diag) {
  if (!check_descriptor(t, tt, who, arg, diag)) return false;
  i128 lo, hi;
  extent128(t, dtype_size(tt.dtype), lo, hi);
  if (lo != hi && (lo < 0 || hi > static_cast<i128>(t.storage_bytes))) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: %s reach bytes [%lld, %lld) outside storage_bytes %llu",
                     who.subject(), who.text().text, t.strides ? "strides" : "elements", sat_ll(lo), sat_ll(hi),
                     static_cast<unsigned long long>(t.storage_bytes));
  }
  span.lo = lo == hi ? 0 : static_cast<uint64_t>(lo);
  span.hi = lo == hi ? 0 : static_cast<uint64_t>(hi);
  // A kernel reaches the elements: a non-empty view needs storage (NULL is legal only in capability queries),
  // aligned to its elements.
  auto name = [&] {
    Prefix p;
    std::snprintf(p.text, sizeof p.text, "%s: %s", who.subject(), who.text().text);
    return p;
  };
  if (!check_placement(t, dtype_size(tt.dtype), lo == hi, name, arg, diag)) return false;
  if (who.output) {
    if (t.flags & PK_TENSOR_FLAG_READ_ONLY) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: the tensor is read-only (PK_TENSOR_FLAG_READ_ONLY)",
                       who.subject(), who.text().text);
    }
    if (!check_output_layout(t, who, arg, diag)) return false;
  }
  return true;
}

}  // namespace

TensorRef::Name TensorRef::name() const {
  Name n;
  const Who who{op, output, idx, entry};
  std::snprintf(n.text, sizeof n.text, "%s: %s", who.subject(), who.text().text);
  return n;
}

bool validate_tensors(const OpInfo *op, const char *entry, const pk_tensor *inputs, uint32_t num_inputs,
                      const pk_tensor *outputs, uint32_t num_outputs, const TensorCheck *extra, TensorType *types,
                      ViewSpan *spans, Diag &diag) {
  const char *subject = op ? op->name : entry;
  if (num_inputs > 0 && inputs == nullptr)
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: inputs is NULL", subject);
  if (num_outputs > 0 && outputs == nullptr) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: outputs is NULL", subject);
  }
  for (uint32_t i = 0; i < num_inputs + num_outputs; ++i) {
    const bool output = i >= num_inputs;
    const uint32_t idx = output ? i - num_inputs : i;
    const pk_tensor &t = output ? outputs[idx] : inputs[idx];
    const auto arg = static_cast<int32_t>(i);
    if (!check_run_tensor(t, Who{op, output, idx, entry}, arg, types[i], spans[i], diag)) return false;
    if (extra && !extra->check(t, TensorRef{op, entry, output, idx}, arg, diag)) return false;
  }
  // Aliasing: outputs against inputs and against each other. Only an op declared in-place may write its input
  // 0, and only through exactly the same view.
  const bool inplace = op != nullptr && op->alias == Alias::inplace;
  for (uint32_t k = 0; k < num_outputs; ++k) {
    const pk_tensor &o = outputs[k];
    const ViewSpan &os = spans[num_inputs + k];
    if (is_empty(types[num_inputs + k])) continue;
    for (uint32_t i = 0; i < num_inputs; ++i) {
      if (!may_overlap(o, os.lo, os.hi, inputs[i], spans[i].lo, spans[i].hi)) continue;
      if (k == 0 && i == 0 && inplace && same_view(o, inputs[0])) continue;
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, static_cast<int32_t>(num_inputs + k), "%s: %s overlaps %s%s", subject,
                       label(op, true, k, entry).text, label(op, false, i, entry).text,
                       (inplace && k == 0 && i == 0)
                           ? " (in-place needs exactly the same view: data, byte_offset, shape and strides)"
                           : "");
    }
    for (uint32_t j = 0; j < k; ++j) {
      const ViewSpan &js = spans[num_inputs + j];
      if (may_overlap(o, os.lo, os.hi, outputs[j], js.lo, js.hi)) {
        return diag.fail(PK_ERROR_INVALID_ARGUMENT, static_cast<int32_t>(num_inputs + k), "%s: %s overlaps %s", subject,
                         label(op, true, k, entry).text, label(op, true, j, entry).text);
      }
    }
  }
  return true;
}

bool validate_launch(const OpInfo &op, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
                     uint32_t num_outputs, const void *attrs, void *attrs_out, Diag &diag, const TensorCheck *extra) {
  if (!check_arity(op, num_inputs, diag)) return false;
  if (num_outputs != op.num_outputs) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: has %u output%s, got %u", op.name, op.num_outputs,
                     op.num_outputs == 1 ? "" : "s", num_outputs);
  }
  if (num_outputs > kMaxLaunchOutputs) {
    return diag.fail(PK_ERROR_INTERNAL, -1, "%s: %u outputs; at most %u supported", op.name, num_outputs,
                     kMaxLaunchOutputs);
  }
  TensorType types[kMaxLaunchInputs + kMaxLaunchOutputs];
  ViewSpan spans[kMaxLaunchInputs + kMaxLaunchOutputs];
  if (!validate_tensors(&op, nullptr, inputs, num_inputs, outputs, num_outputs, extra, types, spans, diag)) {
    return false;
  }
  // Attributes and inference.
  const void *norm = nullptr;
  if (op.num_attrs) {
    if (attrs_out == nullptr) return diag.fail(PK_ERROR_INTERNAL, -1, "%s: validate_launch needs attrs_out", op.name);
    if (!normalize_attrs(op, attrs, attrs_out, diag)) return false;
    norm = attrs_out;
  }
  TensorType inferred[kMaxLaunchOutputs];
  if (!check_attrs(op, norm, types, num_inputs, diag)) return false;
  if (!infer_outputs(op, types, num_inputs, norm, inferred, diag)) return false;
  if (op.num_attrs) canonicalize_attrs(op, types, num_inputs, attrs_out);
  for (uint32_t k = 0; k < num_outputs; ++k) {
    const TensorType &want = inferred[k], &got = types[num_inputs + k];
    int32_t arg = static_cast<int32_t>(num_inputs + k);
    if (want.dtype != got.dtype) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: dtype %s but the op gives %s", op.name,
                       label(&op, true, k).text, dtype_name(got.dtype), dtype_name(want.dtype));
    }
    bool same = want.ndim == got.ndim;
    for (int32_t d = 0; same && d < want.ndim; ++d) same = want.shape[d] == got.shape[d];
    if (!same) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: shape %s but the op gives %s", op.name,
                       label(&op, true, k).text, shape_text(got.shape, got.ndim).text,
                       shape_text(want.shape, want.ndim).text);
    }
  }
  return true;
}

bool validate_query_tensor(const OpInfo &op, const pk_tensor &t, bool output, uint32_t idx, int32_t arg,
                           TensorType &out, Diag &diag) {
  // A capability query describes tensors without storage: shape may be NULL (any extents), data is not read.
  // Everything it does say is held to the launch's rule.
  const Who who{&op, output, idx, nullptr};
  if (t.struct_size >= sizeof(pk_tensor) && (t.ndim == 0 || t.shape != nullptr)) {
    if (!check_descriptor(t, out, who, arg, diag)) return false;
    // The view a launch could make of it: its bytes [lo, hi) from data must fit a storage (lo >= 0, hi < 2^63), as
    // a launch checks against storage_bytes. fuzz_query: a stride of 2^63 / 1.05 reached the code generator, which
    // multiplied it by a slice's step.
    i128 lo, hi;
    extent128(t, dtype_size(out.dtype), lo, hi);
    if (lo != hi && (lo < 0 || hi > static_cast<i128>(INT64_MAX))) {
      return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                       "%s: %s: %s reach bytes [%lld, %lld), outside any storage (0 to 2^63 - 1)", op.name,
                       who.text().text, t.strides ? "strides" : "elements", sat_ll(lo), sat_ll(hi));
    }
    return true;
  }
  pk_tensor full;
  std::memset(&full, 0, sizeof full);
  std::memcpy(&full, &t, std::min<size_t>(t.struct_size, sizeof full));
  full.struct_size = sizeof full;
  if (t.struct_size < offsetof(pk_tensor, strides)) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg, "%s: %s: struct_size %u is smaller than the fields a query reads",
                     op.name, who.text().text, t.struct_size);
  }
  static const int64_t kOnes[PK_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
  static_assert(PK_MAX_RANK == 8, "kOnes has PK_MAX_RANK entries");
  if (full.shape == nullptr && full.ndim > 0 && full.ndim <= PK_MAX_RANK) full.shape = kOnes;
  return check_descriptor(full, out, who, arg, diag);  // with shape NULL, out's extents say nothing
}

}  // namespace pk::meta
