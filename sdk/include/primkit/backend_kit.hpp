// backend_kit.hpp — header-only C++17 helpers for writing a PrimKit backend: storage types for the 8/16-bit
// float formats, dtype dispatch, strided tensor views and their iteration, a thread-local error record behind the
// get_last_error slot, and the slot glue every backend needs (struct_size-aware copies, get_info, a stream's
// sticky error, exception guards, the table and negotiation). Shared by the reference backends and the backend
// template so that no backend re-types these. Not part of the C ABI: nothing here crosses the plugin boundary.
//
// Conversions follow convert_element_type (docs/ops.md): round to nearest even; overflow gives inf (f16, bf16,
// f8e5m2) or saturates to ±448 (f8e4m3fn, which has no inf); NaN stays NaN.
#pragma once

#include <array>
#include <cmath>
#include <complex>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <type_traits>

#include "primkit/primkit.h"

namespace pk::kit {

// Outputs at least this large (well beyond what a host's last-level cache keeps for a following op) are worth
// writing with non-temporal stores: a regular store first reads the line it writes (read-for-ownership), a third
// more traffic for a binary op. One figure for every backend that runs on host memory (CPU kernels, fused JIT
// kernels, OpenCL on a CPU device), measured on this project's x86 machines.
constexpr int64_t kStreamingStoreBytes = int64_t{16} << 20;

// --- 8/16-bit float formats -----------------------------------------------------------------------------------

namespace detail {

// Rounds a double to a binary format with `mbits` mantissa bits, `ebits` exponent bits (IEEE bias) and, if
// has_inf, IEEE inf/NaN encodings (otherwise only all-ones is NaN, as in e4m3fn); returns the bit pattern (sign in
// bit total-1). One round-to-nearest-even from the double, subnormals of the target included. Values past the
// largest finite become inf, or the largest finite when `saturate` or the format has no inf. Integer operations on
// the double's bits only: this runs once per element of every 8/16-bit float kernel.
inline uint32_t encode_small_float(double v, int ebits, int mbits, bool has_inf, bool saturate, uint32_t nan_bits) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  const int total = 1 + ebits + mbits;
  const uint32_t sign = (u >> 63) ? (1u << (total - 1)) : 0u;
  const int dexp = static_cast<int>((u >> 52) & 0x7ff);
  const uint64_t dman = u & ((uint64_t{1} << 52) - 1);
  if (dexp == 0x7ff && dman != 0) return sign | nan_bits;
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t max_finite = has_inf ? ((((1u << ebits) - 2) << mbits) | ((1u << mbits) - 1))
                                      : ((((1u << ebits) - 1) << mbits) | ((1u << mbits) - 2));
  const uint32_t overflow = (has_inf && !saturate) ? (((1u << ebits) - 1) << mbits) : max_finite;
  if (dexp == 0x7ff) return sign | overflow;
  if (dexp == 0) return sign;           // zero, or a double subnormal: far below half the smallest target subnormal
  const int texp = dexp - 1023 + bias;  // the target's biased exponent if the value is normal there
  if (texp >= (1 << ebits)) return sign | overflow;
  const uint64_t full = dman | (uint64_t{1} << 52);  // 53-bit significand
  // Drop `shift` bits: 52 - mbits for a target normal; more (by 1 - texp) in the target's subnormal range, where
  // the quantum is fixed. The rounded count of quanta carries into the exponent field by itself.
  const int shift = 52 - mbits + (texp < 1 ? 1 - texp : 0);
  if (shift > 53) return sign;  // below half the smallest subnormal
  const uint64_t q = full >> shift, rem = full & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
  const uint64_t rounded = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
  const uint64_t bits =
      texp < 1 ? rounded : ((static_cast<uint64_t>(texp) << mbits) + (rounded - (uint64_t{1} << mbits)));
  if (bits > max_finite) return sign | overflow;
  return sign | static_cast<uint32_t>(bits);
}

// Exact: the format's value as a double, built from its bits.
inline double decode_small_float(uint32_t bits, int ebits, int mbits, bool has_inf) {
  const int total = 1 + ebits + mbits;
  const uint64_t neg = (bits >> (total - 1)) & 1u;
  const uint32_t e = (bits >> mbits) & ((1u << ebits) - 1);
  const uint32_t m = bits & ((1u << mbits) - 1);
  const int bias = (1 << (ebits - 1)) - 1;
  uint64_t u;
  if ((has_inf && e == (1u << ebits) - 1) || (!has_inf && e == (1u << ebits) - 1 && m == (1u << mbits) - 1)) {
    u = (has_inf && m == 0) ? (uint64_t{0x7ff} << 52) : (uint64_t{0x7ff8} << 48);
  } else if (e == 0) {
    // m quanta of 2^(1 - bias - mbits): the count times the quantum, both exact in double.
    const uint64_t quantum = static_cast<uint64_t>(1023 + 1 - bias - mbits) << 52;
    double q;
    std::memcpy(&q, &quantum, sizeof q);
    const double v = static_cast<double>(m) * q;
    std::memcpy(&u, &v, sizeof u);
  } else {
    u = (static_cast<uint64_t>(static_cast<int>(e) - bias + 1023) << 52) | (static_cast<uint64_t>(m) << (52 - mbits));
  }
  u |= neg << 63;
  double r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

}  // namespace detail

// Each format is a trivially copyable wrapper of its bits, convertible from double (one rounding) and to
// float/double (exact).
#define PK_KIT_SMALL_FLOAT(NAME, STORAGE, EBITS, MBITS, HAS_INF, NAN_BITS)                                     \
  struct NAME {                                                                                                \
    STORAGE bits;                                                                                              \
    NAME() = default;                                                                                          \
    static NAME from_bits(STORAGE b) {                                                                         \
      NAME r;                                                                                                  \
      r.bits = b;                                                                                              \
      return r;                                                                                                \
    }                                                                                                          \
    explicit NAME(double v)                                                                                    \
        : bits(static_cast<STORAGE>(detail::encode_small_float(v, EBITS, MBITS, HAS_INF, false, NAN_BITS))) {} \
    explicit NAME(float v) : NAME(static_cast<double>(v)) {}                                                   \
    double to_double() const { return detail::decode_small_float(bits, EBITS, MBITS, HAS_INF); }               \
    explicit operator double() const { return to_double(); }                                                   \
    explicit operator float() const { return static_cast<float>(to_double()); }                                \
  };

PK_KIT_SMALL_FLOAT(half, uint16_t, 5, 10, true, 0x7e00u)
PK_KIT_SMALL_FLOAT(bfloat16, uint16_t, 8, 7, true, 0x7fc0u)
PK_KIT_SMALL_FLOAT(f8e4m3fn, uint8_t, 4, 3, false, 0x7fu)
PK_KIT_SMALL_FLOAT(f8e5m2, uint8_t, 5, 2, true, 0x7eu)
#undef PK_KIT_SMALL_FLOAT

// bool is stored as one byte 0/1.
struct boolean {
  uint8_t v;
};

template <class T>
struct is_small_float : std::bool_constant<std::is_same_v<T, half> || std::is_same_v<T, bfloat16> ||
                                           std::is_same_v<T, f8e4m3fn> || std::is_same_v<T, f8e5m2>> {};
template <class T>
struct is_complex : std::false_type {};
template <class T>
struct is_complex<std::complex<T>> : std::true_type {};

// The type a kernel computes in: float for the 8/16-bit formats and f32, double for f64, the type itself
// otherwise (integers keep their width so that wrap-around matches the storage type).
template <class T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<half> {
  using type = float;
};
template <>
struct compute_type<bfloat16> {
  using type = float;
};
template <>
struct compute_type<f8e4m3fn> {
  using type = float;
};
template <>
struct compute_type<f8e5m2> {
  using type = float;
};
template <class T>
using compute_t = typename compute_type<T>::type;

// Loads a stored element into its compute type, and stores a compute value with one rounding.
template <class T>
inline compute_t<T> load(const T &v) {
  if constexpr (is_small_float<T>::value) {
    return static_cast<float>(v.to_double());
  } else {
    return v;
  }
}
template <class T, class C>
inline T store_as(const C &c) {
  if constexpr (is_small_float<T>::value) {
    return T(static_cast<double>(c));
  } else {
    return static_cast<T>(c);
  }
}

// Calls f(T{}) with the storage type of a PK_DTYPE_* id; returns PK_UNIMPLEMENTED for an unknown id.
// Storage types: boolean, uint8_t, int8_t, int16_t, int32_t, int64_t, half, bfloat16, float, double,
// std::complex<float>, std::complex<double>, f8e4m3fn, f8e5m2.
template <class F>
inline pk_status dispatch_dtype(int32_t dtype, F &&f) {
  switch (dtype) {
    case PK_DTYPE_BOOL:
      return f(boolean{});
    case PK_DTYPE_U8:
      return f(uint8_t{});
    case PK_DTYPE_I8:
      return f(int8_t{});
    case PK_DTYPE_I16:
      return f(int16_t{});
    case PK_DTYPE_I32:
      return f(int32_t{});
    case PK_DTYPE_I64:
      return f(int64_t{});
    case PK_DTYPE_F16:
      return f(half{});
    case PK_DTYPE_BF16:
      return f(bfloat16{});
    case PK_DTYPE_F32:
      return f(float{});
    case PK_DTYPE_F64:
      return f(double{});
    case PK_DTYPE_C64:
      return f(std::complex<float>{});
    case PK_DTYPE_C128:
      return f(std::complex<double>{});
    case PK_DTYPE_F8E4M3FN:
      return f(f8e4m3fn{});
    case PK_DTYPE_F8E5M2:
      return f(f8e5m2{});
    default:
      return PK_UNIMPLEMENTED;
  }
}

// PK_DTYPE_* id of a pk_dtype descriptor, -1 if it is none.
inline int32_t dtype_id(pk_dtype d) {
  if (d.lanes != 1) return -1;
  switch (d.code) {
    case PK_DTYPE_CODE_BOOL:
      return d.bits == 8 ? PK_DTYPE_BOOL : -1;
    case PK_DTYPE_CODE_UINT:
      return d.bits == 8 ? PK_DTYPE_U8 : -1;
    case PK_DTYPE_CODE_INT:
      return d.bits == 8    ? PK_DTYPE_I8
             : d.bits == 16 ? PK_DTYPE_I16
             : d.bits == 32 ? PK_DTYPE_I32
             : d.bits == 64 ? PK_DTYPE_I64
                            : -1;
    case PK_DTYPE_CODE_FLOAT:
      return d.bits == 16 ? PK_DTYPE_F16 : d.bits == 32 ? PK_DTYPE_F32 : d.bits == 64 ? PK_DTYPE_F64 : -1;
    case PK_DTYPE_CODE_BFLOAT:
      return d.bits == 16 ? PK_DTYPE_BF16 : -1;
    case PK_DTYPE_CODE_COMPLEX:
      return d.bits == 64 ? PK_DTYPE_C64 : d.bits == 128 ? PK_DTYPE_C128 : -1;
    case PK_DTYPE_CODE_FLOAT8_E4M3FN:
      return d.bits == 8 ? PK_DTYPE_F8E4M3FN : -1;
    case PK_DTYPE_CODE_FLOAT8_E5M2:
      return d.bits == 8 ? PK_DTYPE_F8E5M2 : -1;
    default:
      return -1;
  }
}

// --- strided views --------------------------------------------------------------------------------------------

// A tensor as a kernel sees it: base pointer (data + byte_offset), extents and element strides (row-major
// strides filled in when the descriptor has none). Only the first ndim entries of shape and strides are set:
// zeroing all PK_MAX_RANK of them cost more than the rest of a 1-element launch.
struct View {
  char *base = nullptr;
  int32_t ndim = 0;
  int64_t shape[PK_MAX_RANK];
  int64_t strides[PK_MAX_RANK];
  size_t esize = 0;
  int64_t numel = 1;
  bool contiguous = true;  // row-major dense

  template <class T>
  T *at(int64_t element_offset) const {
    return reinterpret_cast<T *>(base) + element_offset;
  }
};

inline View view_of(const pk_tensor &t) {
  View v;
  v.base = static_cast<char *>(t.data) + t.byte_offset;
  v.ndim = t.ndim;
  v.esize = (t.dtype.bits * t.dtype.lanes + 7u) / 8u;
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    v.shape[d] = t.shape[d];
    v.strides[d] = t.strides ? t.strides[d] : expect;
    if (v.shape[d] != 1 && v.strides[d] != expect) v.contiguous = false;
    expect *= t.shape[d];
  }
  v.numel = 1;
  for (int32_t d = 0; d < t.ndim; ++d) v.numel *= t.shape[d];
  return v;
}

// Iterates the row-major index space of `shape` (rank ndim) and calls f(offsets) with, for each of the n views,
// the element offset of the current index. All views must have that shape (or be broadcast by zero strides).
template <size_t N, class F>
inline void for_each_offsets(const View *const (&views)[N], const int64_t *shape, int32_t ndim, F &&f) {
  int64_t total = 1;
  for (int32_t d = 0; d < ndim; ++d) total *= shape[d];
  if (total == 0) return;
  int64_t idx[PK_MAX_RANK] = {0};
  int64_t off[N] = {0};
  for (int64_t i = 0; i < total; ++i) {
    f(static_cast<const int64_t *>(off));
    for (int32_t d = ndim - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        for (size_t k = 0; k < N; ++k) off[k] += views[k]->strides[d];
        break;
      }
      for (size_t k = 0; k < N; ++k) off[k] -= views[k]->strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

// Calls f(offsets) for the row-major indices [lo, hi) of `shape`, offsets being base[k] + index . strides[k] for
// each of N stride sets (a std::array<int64_t, N>). The innermost axis runs as a tight loop, so this is the
// fast way to walk strided tensors; [lo, hi) lets a caller split the index space across threads.
template <size_t N, class F>
void walk(const int64_t *shape, int32_t ndim, const std::array<const int64_t *, N> &strides,
          const std::array<int64_t, N> &base, int64_t lo, int64_t hi, F &&f) {
  if (lo >= hi) return;
  std::array<int64_t, N> off = base;
  if (ndim == 0) {
    f(off);
    return;
  }
  int64_t idx[PK_MAX_RANK];
  int64_t rem = lo;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
    for (size_t k = 0; k < N; ++k) off[k] += idx[d] * strides[k][d];
  }
  const int32_t last = ndim - 1;
  int64_t i = lo;
  while (true) {
    const int64_t run = (hi - i) < (shape[last] - idx[last]) ? (hi - i) : (shape[last] - idx[last]);
    for (int64_t r = 0; r < run; ++r) {
      f(off);
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][last];
    }
    i += run;
    if (i >= hi) return;
    // The innermost axis wrapped: rewind it and carry into the outer axes.
    for (size_t k = 0; k < N; ++k) off[k] -= strides[k][last] * shape[last];
    idx[last] = 0;
    for (int32_t d = last - 1; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

// Element offset of a row-major linear index in a view.
inline int64_t offset_of(const View &v, int64_t linear) {
  int64_t off = 0;
  for (int32_t d = v.ndim - 1; d >= 0; --d) {
    if (v.shape[d] == 0) return 0;
    off += (linear % v.shape[d]) * v.strides[d];
    linear /= v.shape[d];
  }
  return off;
}

// --- negotiation ---------------------------------------------------------------------------------------------

// The body of a plugin's pk_backend_entry for a backend whose table (`api`, static) is of this header's ABI:
// refuses another major with a message naming the backend, otherwise chooses min(this ABI, the host's).
//   extern "C" PK_EXPORT pk_status pk_backend_entry(...) { return kit::negotiate(&k_api, "acme", host, ...); }
inline pk_status negotiate(const pk_backend_api *api, const char *backend_name, const pk_host_services *host,
                           uint32_t *chosen_version, const pk_backend_api **out_api, char *message,
                           size_t message_capacity) {
  if (host == nullptr || chosen_version == nullptr || out_api == nullptr) return PK_ERROR_INVALID_ARGUMENT;
  if (PK_VERSION_MAJOR(host->host_abi_version) != PK_ABI_VERSION_MAJOR) {
    if (message != nullptr && message_capacity > 0) {
      std::snprintf(message, message_capacity, "the %s backend speaks ABI major %u; the host speaks %u", backend_name,
                    PK_ABI_VERSION_MAJOR, PK_VERSION_MAJOR(host->host_abi_version));
    }
    return PK_ERROR_ABI_MISMATCH;
  }
  *chosen_version = host->host_abi_version < PK_ABI_VERSION ? host->host_abi_version : PK_ABI_VERSION;
  *out_api = api;
  return PK_OK;
}

// --- errors ---------------------------------------------------------------------------------------------------

// The calling thread's last error, as the get_last_error slot reports it.
struct LastError {
  pk_status status = PK_OK;
  int32_t vendor_code = 0;
  int32_t arg_index = -1;
  uint32_t op_id = 0;
  char message[PK_MESSAGE_CAPACITY] = {0};
};

inline LastError &last_error() {
  thread_local LastError e;
  return e;
}

// Records an error and returns its status: `return kit::fail(PK_ERROR_DEVICE, op, -1, "...", ...)`.
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
inline pk_status
fail(pk_status status, uint32_t op_id, int32_t arg_index, const char *fmt, ...) {
  LastError &e = last_error();
  e.status = status;
  e.op_id = op_id;
  e.arg_index = arg_index;
  e.vendor_code = 0;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(e.message, sizeof e.message, fmt, ap);
  va_end(ap);
  return status;
}

// Copies the thread's last error into the host's struct (for the get_last_error slot).
inline pk_status copy_last_error(pk_error_info *out) {
  if (out == nullptr) return PK_ERROR_INVALID_ARGUMENT;
  const LastError &e = last_error();
  pk_error_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.status = e.status;
  info.vendor_code = e.vendor_code;
  info.arg_index = e.arg_index;
  info.op_id = e.op_id;
  std::snprintf(info.message, sizeof info.message, "%s", e.message);
  size_t n = out->struct_size < sizeof info ? out->struct_size : sizeof info;
  std::memcpy(out, &info, n);
  out->struct_size = static_cast<uint32_t>(n);
  return PK_OK;
}

// --- slot glue ------------------------------------------------------------------------------------------------
// The few lines every backend's ABI table re-typed. Each serves one contract of primkit.h; a backend that needs
// something else (another message, a driver code) keeps its own version.

// Copies a struct the backend filled into the host's. primkit.h's versioning rule: the caller sets struct_size,
// an older host has a shorter struct and must receive only the fields it knows, and the callee writes back how
// much it filled. For pk_backend_info, pk_device_props, pk_op_support (get_info, device_get_props, op_query).
template <class T>
inline void copy_out(const T &value, T *out) {
  const uint32_t n = out->struct_size < sizeof value ? out->struct_size : static_cast<uint32_t>(sizeof value);
  std::memcpy(out, &value, n);
  out->struct_size = n;
}

// The get_info slot's body: names the backend (what `primkit list` and --backend NAME match), its vendor and
// version, and the ABI it was built for. Copied with copy_out, so an older host gets the prefix it knows.
inline pk_status write_backend_info(pk_backend_info *out, const char *name, const char *vendor, uint32_t major,
                                    uint32_t minor = 0, uint32_t patch = 0) {
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  std::snprintf(info.name, sizeof info.name, "%s", name);
  std::snprintf(info.vendor, sizeof info.vendor, "%s", vendor);
  info.version_major = major;
  info.version_minor = minor;
  info.version_patch = patch;
  info.abi_version = PK_ABI_VERSION;
  copy_out(info, out);
  return PK_OK;
}

// The get_last_error slot, ready to put in the table: the record is the calling thread's (kit::fail writes it),
// so the context is not needed. `api.get_last_error = pk::kit::last_error_slot;`
inline pk_status last_error_slot(pk_be_context *, pk_error_info *out) {
  return copy_last_error(out);
}

// A stream's sticky error. primkit.h: once asynchronous work on a stream failed, the stream stays failed and
// every later enqueue, synchronize and query returns PK_ERROR_STREAM_FAILED (details via get_last_error). Keep
// one in your pk_be_stream; call check() first in every slot that takes the stream, and record() (or set()) with
// the status of work that failed.
struct StickyError {
  pk_status status = PK_OK;                 // the first failure; PK_OK while the stream is healthy
  char message[PK_MESSAGE_CAPACITY] = {0};  // its message, repeated by every later check()

  bool failed() const { return status != PK_OK; }

  // PK_OK on a healthy stream; otherwise records and returns PK_ERROR_STREAM_FAILED with the message
  // "<backend>: stream failed earlier: <the first failure's message>".
  pk_status check(const char *backend) const {
    if (status == PK_OK) return PK_OK;
    return fail(PK_ERROR_STREAM_FAILED, PK_OP_NONE, -1, "%s: stream failed earlier: %s", backend, message);
  }

  // Makes `failure` the stream's sticky error, with the calling thread's last-error message (kit::fail has just
  // written it).
  void set(pk_status failure) {
    status = failure;
    std::snprintf(message, sizeof message, "%s", last_error().message);
  }

  // Passes a status through, making it sticky if it is a failure. PK_UNIMPLEMENTED (a launch that declined and
  // wrote nothing) and PK_NOT_READY (a query's answer) leave the stream usable, as primkit.h says.
  pk_status record(pk_status st) {
    if (st != PK_OK && st != PK_UNIMPLEMENTED && st != PK_NOT_READY) set(st);
    return st;
  }
};

// Runs body() (returning pk_status) so that no exception leaves it: std::bad_alloc becomes PK_ERROR_OUT_OF_MEMORY
// ("<where>: out of host memory"), anything else PK_ERROR_INTERNAL ("<where>: unexpected exception"). For a slot
// body that allocates with the standard library; guarded<fn> below is the table-wide last line of defence, this
// one gives the message a precise status and the slot's name. primkit.h: slots never throw, abort or exit.
template <class Body>
inline pk_status catch_exceptions(uint32_t op_id, const char *where, Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, op_id, -1, "%s: out of host memory", where);
  } catch (...) {
    return fail(PK_ERROR_INTERNAL, op_id, -1, "%s: unexpected exception", where);
  }
}

// A pk_backend_api of this header's ABI with every slot NULL (a NULL slot means "not implemented") except
// get_last_error. A backend fills the rest and returns it from pk_backend_entry (through negotiate).
inline pk_backend_api api_table() {
  pk_backend_api api;
  PK_STRUCT_INIT(api);
  api.abi_version = PK_ABI_VERSION;
  api.get_last_error = last_error_slot;
  return api;
}

// --- exception guard ------------------------------------------------------------------------------------------

// A C++ exception that leaves a slot unwinds into the host's C frames, and std::terminate ends the host (a
// framework, a notebook) for a bug in one plugin. guarded<fn> is fn behind a catch-all: an exception becomes
// PK_ERROR_INTERNAL with its what() in the last-error record (so the host's message names it), and a void slot
// (close, *_destroy, mem_free) swallows it, as it has no way to report. Put every slot of the table behind it:
//   api.op_launch = pk::kit::guarded<my_op_launch>;
// The happy path costs nothing (zero-cost exceptions, and fn is known at compile time, so it is inlined).
namespace detail {
template <auto Fn, class Sig>
struct SlotGuard;
template <auto Fn, class R, class... Args>
struct SlotGuard<Fn, R (*)(Args...)> {
  static R call(Args... args) noexcept {
    try {
      return Fn(args...);
    } catch (const std::exception &e) {
      return on_exception(e.what());
    } catch (...) {
      return on_exception("an exception that is not a std::exception");
    }
  }
  static R on_exception(const char *what) {
    if constexpr (std::is_same_v<R, pk_status>) {
      return fail(PK_ERROR_INTERNAL, PK_OP_NONE, -1, "C++ exception escaped the backend: %s", what);
    } else {
      static_assert(std::is_void_v<R>, "a slot returns pk_status or nothing");
      (void)what;
    }
  }
};
template <auto Fn, class R, class... Args>
struct SlotGuard<Fn, R (*)(Args...) noexcept> : SlotGuard<Fn, R (*)(Args...)> {};
}  // namespace detail

template <auto Fn>
constexpr auto guarded = &detail::SlotGuard<Fn, decltype(Fn)>::call;

// A backend's vendor extensions, for its get_proc_address slot (primkit.h): each a name (by convention prefixed
// with the backend's name) and the function, cast to pk_proc. Applications get them through
// pk_backend_get_proc_address and cast back to the type the backend documents. Instead of a bare dlsym: the
// runtime finds the plugin it loaded (not a same-named library), and the answer for an unknown name is a
// status with a reason.
//   static const pk::kit::Extension kExtensions[] = {{"acme_set_clock", pk::kit::as_proc(&acme_set_clock)}};
//   api.get_proc_address = [](pk_be_context *, const char *name) { return pk::kit::find_extension(kExtensions, name);
//   };
struct Extension {
  const char *name;
  pk_proc fn;
};
template <class F>
pk_proc as_proc(F *fn) noexcept {
  static_assert(std::is_function_v<F>, "an extension is a function");
  return reinterpret_cast<pk_proc>(fn);
}
template <size_t N>
pk_proc find_extension(const Extension (&list)[N], const char *name) noexcept {
  if (name == nullptr) return nullptr;
  for (const Extension &e : list)
    if (std::strcmp(e.name, name) == 0) return e.fn;
  return nullptr;
}

}  // namespace pk::kit
