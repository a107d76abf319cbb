// planted_bug_backend.cpp — a planted-bug backend: the CPU reference backend with exactly one defect, so that the
// conformance suite can show it catches that defect ("the suite proves it can fail", DESIGN §7).
//
// This one file is compiled once per defect with -DPK_PLANTED_BUG=<name> into libprimkit_backend_bug_<name>.so.
// It copies no kernel: it dlopens the real CPU plugin (path fixed at build time in PK_INNER_PLUGIN_PATH,
// overridable with $PRIMKIT_BUG_INNER_PLUGIN so an installed tree can point elsewhere), negotiates with it and
// hands the host the CPU's own function table with a few slots replaced. Each defect either rewrites a launch
// before forwarding it, overwrites some outputs after the CPU computed them, or breaks the stream/event
// machinery. Every defect stays inside the storage the runtime validated: a planted bug must produce wrong
// results (or crash or hang on purpose), never corrupt memory by accident, or the suite would be tested on
// undefined behaviour instead of on the defect.
//
// The defects (PK_PLANTED_BUG):
//   exp_2ulp         f32 exp results 2 ULP too large (within the 3-ULP limit, beyond the quality level 2)
//   exp_4ulp         f32 exp results 4 ULP too large (beyond the 3-ULP limit: must FAIL)
//   bf16_truncate    convert_element_type f32 -> bf16 truncates instead of rounding to nearest even
//   maximum_nan      maximum returns the other operand when exactly one operand is NaN
//   ignore_strides   every op reads strided inputs as if they were row-major contiguous
//   ignore_offset    every op ignores the byte_offset of its inputs
//   broadcast_axis   broadcast_in_dim reads input axis k along output axis broadcast_dimensions[k] + 1
//   add_saturate     integer add saturates instead of wrapping modulo 2^bits
//   sum_f16_acc      floating-point sum accumulates in f16
//   slice_off_by_one slice starts one element late on one axis
//   event_race       asynchronous streams whose events, synchronize and copies complete before the op's write lands
//   event_early      asynchronous streams whose events complete when recorded and whose stream_wait_event orders
//                    nothing, while stream_synchronize, stream_query and copies wait for the work honestly
//   stream_shared_scratch f32 sum passes its results through one scratch array shared by every stream, unlocked
//   leak_per_launch  every launch keeps 16 KiB of host memory it never frees (results stay right)
//   crash_empty      any launch with an empty tensor raises SIGSEGV
//   hang_shape       any launch whose input 0 has one specific shape (4x7) never returns
//   write_past_end   neg writes one element past the highest element of its output view (inside the storage)
//   write_before_start neg writes one element before the lowest element of its output view (inside the storage)
//   strided_output   every op writes a non-row-major output as if it were row-major (inside the storage)
//   k0_garbage       matmul with K = 0 returns without writing its (M x N, all-zero) output
//   empty_sum_garbage sum over an empty axis returns without writing its (all-zero) output
//   ftz_results      every f32 result that is subnormal is flushed to zero (the device declares no FTZ)
//   daz_f16_inputs   f16 neg, abs and exp read subnormal inputs as zero (the device declares no DAZ)
//   argmax_last_tie  argmax of floats returns the last of equal maxima instead of the first
//   minimum_zero_sign minimum(-0, +0) returns +0
//   convert_double_round integer -> f16/bf16 conversion rounds through f32 first (twice)
//   sigmoid_f16      sigmoid of f16 computed literally in f16 (exp, 1 + e and the reciprocal each rounded to f16)
//   sum_long_bf16    bf16 sums over rows of 2048 or more elements accumulate in bf16 (short rows are right)
//   isnan_canonical  f16 isnan compares with the canonical NaN patterns 0x7e00 / 0xfe00 only (other NaNs: false)
//   abs_saturate     integer abs(INT_MIN) saturates to INT_MAX instead of wrapping to INT_MIN
//   matmul_daz       f32 matmul of matrices reads subnormal inputs as zero (the device declares no DAZ), as a
//                    matrix unit run with flush-to-zero set would
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "primkit/backend_kit.hpp"
#include "primkit/primkit.h"

#ifndef PK_PLANTED_BUG
#error "compile with -DPK_PLANTED_BUG=<name> (see the list above)"
#endif
#ifndef PK_INNER_PLUGIN_PATH
#error "compile with -DPK_INNER_PLUGIN_PATH=\"<path of libprimkit_backend_cpu.so>\""
#endif

#define PK_BUG_STR2(x) #x
#define PK_BUG_STR(x) PK_BUG_STR2(x)

namespace {

namespace kit = pk::kit;

constexpr std::string_view kBug = PK_BUG_STR(PK_PLANTED_BUG);

constexpr bool is_bug(std::string_view name) {
  return kBug == name;
}

constexpr bool known_bug() {
  constexpr std::string_view names[] = {
      "exp_2ulp",        "exp_4ulp",          "bf16_truncate",        "maximum_nan",
      "ignore_strides",  "ignore_offset",     "broadcast_axis",       "add_saturate",
      "sum_f16_acc",     "slice_off_by_one",  "event_race",           "crash_empty",
      "hang_shape",      "write_past_end",    "write_before_start",   "strided_output",
      "k0_garbage",      "empty_sum_garbage", "ftz_results",          "daz_f16_inputs",
      "argmax_last_tie", "minimum_zero_sign", "convert_double_round", "sigmoid_f16",
      "sum_long_bf16",   "matmul_daz",        "event_early",          "stream_shared_scratch",
      "leak_per_launch", "isnan_canonical",   "abs_saturate"};
  for (std::string_view n : names)
    if (n == kBug) return true;
  return false;
}
static_assert(known_bug(), "PK_PLANTED_BUG names no planted bug of this file");

// --- the wrapped CPU plugin ----------------------------------------------------------------------------------

const pk_backend_api *g_inner = nullptr;  // the CPU plugin's table, set by pk_backend_entry before any slot runs
pk_backend_api g_table;                   // what the host gets: a copy of g_inner with planted slots

const pk_backend_api &inner() {
  return *g_inner;
}

// Errors raised by the shim itself (not by the CPU plugin) are recorded in this file's copy of the backend_kit
// error record; this flag says which record get_last_error must report on this thread. Every replaced slot
// clears it on entry, so the flag describes the thread's latest failing call into a replaced slot.
thread_local bool g_own_error = false;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
pk_status
own_fail(pk_status status, uint32_t op_id, const char *fmt, ...) {
  kit::LastError &e = kit::last_error();
  e.status = status;
  e.op_id = op_id;
  e.arg_index = -1;
  e.vendor_code = 0;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(e.message, sizeof e.message, fmt, ap);
  va_end(ap);
  g_own_error = true;
  return status;
}

// --- tensor helpers ------------------------------------------------------------------------------------------

int64_t numel_of(const pk_tensor &t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

size_t esize_of(const pk_tensor &t) {
  return (t.dtype.bits * t.dtype.lanes + 7u) / 8u;
}

// Byte range [lo, hi) the view's elements cover inside its storage (relative to data).
void view_span(const pk_tensor &t, int64_t &lo, int64_t &hi) {
  const int64_t es = static_cast<int64_t>(esize_of(t));
  lo = static_cast<int64_t>(t.byte_offset);
  hi = lo + es;
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    const int64_t stride = t.strides ? t.strides[d] : expect;
    const int64_t span = stride * (t.shape[d] - 1) * es;
    (span < 0 ? lo : hi) += span;
    expect *= t.shape[d];
  }
}

// Whether every element the descriptor reaches lies inside its storage. Defects that rewrite a descriptor use
// the rewrite only where this still holds, so that a planted bug reads wrong elements, never foreign memory.
bool reach_inside(const pk_tensor &t) {
  if (numel_of(t) == 0) return true;
  int64_t lo = 0, hi = 0;
  view_span(t, lo, hi);
  return lo >= 0 && hi <= static_cast<int64_t>(t.storage_bytes);
}

bool row_major(const pk_tensor &t) {
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

// Row-major multi-index of a linear index in `shape`.
void unravel(int64_t linear, const int64_t *shape, int32_t ndim, int64_t *idx) {
  for (int32_t d = ndim - 1; d >= 0; --d) {
    idx[d] = shape[d] ? linear % shape[d] : 0;
    linear = shape[d] ? linear / shape[d] : 0;
  }
}

template <class T>
constexpr bool is_real_float = std::is_floating_point_v<T> || kit::is_small_float<T>::value;

// --- numeric defects: post-processing of what the CPU wrote -------------------------------------------------

// exp_*: moves every finite, non-zero f32 result `ulps` representable values up (exp is positive, so away from
// zero); stops below infinity so the defect stays a few-ULP error and never becomes an overflow.
void shift_exp_results(const pk_tensor &out, int ulps) {
  const kit::View o = kit::view_of(out);
  const kit::View *views[1] = {&o};
  kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
    float *v = o.at<float>(off[0]);
    if (!std::isfinite(*v) || *v == 0.0f) return;
    for (int k = 0; k < ulps; ++k) {
      const float up = std::nextafter(*v, INFINITY);
      if (std::isinf(up)) break;
      *v = up;
    }
  });
}

// bf16_truncate: the upper 16 bits of the f32 pattern, i.e. rounding toward zero. NaN is left as the CPU wrote
// it (truncating a NaN whose payload sits in the low bits would give inf: a different, louder bug).
void truncate_to_bf16(const pk_tensor &in, const pk_tensor &out) {
  const kit::View a = kit::view_of(in), o = kit::view_of(out);
  const kit::View *views[2] = {&a, &o};
  kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
    const float x = *a.at<float>(off[0]);
    if (std::isnan(x)) return;
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    *o.at<uint16_t>(off[1]) = static_cast<uint16_t>(bits >> 16);
  });
}

// maximum_nan: where exactly one operand is NaN, the result is the other operand (the fmax() semantics a
// backend gets by mistake), instead of NaN.
void maximum_drops_nan(const pk_tensor *inputs, const pk_tensor &out) {
  const kit::View a = kit::view_of(inputs[0]), b = kit::view_of(inputs[1]), o = kit::view_of(out);
  const size_t es = o.esize;
  kit::dispatch_dtype(kit::dtype_id(out.dtype), [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (is_real_float<T>) {
      const kit::View *views[3] = {&a, &b, &o};
      kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
        const bool na = std::isnan(static_cast<double>(kit::load(*a.at<T>(off[0]))));
        const bool nb = std::isnan(static_cast<double>(kit::load(*b.at<T>(off[1]))));
        if (na && !nb) std::memcpy(o.at<T>(off[2]), b.at<T>(off[1]), es);
        if (nb && !na) std::memcpy(o.at<T>(off[2]), a.at<T>(off[0]), es);
      });
    }
    return PK_OK;
  });
}

// add_saturate: integer sums clamp to the type's range instead of wrapping modulo 2^bits.
void add_saturates(const pk_tensor *inputs, const pk_tensor &out) {
  const kit::View a = kit::view_of(inputs[0]), b = kit::view_of(inputs[1]), o = kit::view_of(out);
  kit::dispatch_dtype(kit::dtype_id(out.dtype), [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      const kit::View *views[3] = {&a, &b, &o};
      kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
        const T x = *a.at<T>(off[0]), y = *b.at<T>(off[1]);
        T r;
        if (__builtin_add_overflow(x, y, &r)) {
          r = y > 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
        }
        *o.at<T>(off[2]) = r;
      });
    }
    return PK_OK;
  });
}

// Recomputes a real floating-point sum with an accumulator of type Acc (every partial sum rounded to it), in
// row-major order, and stores it over the CPU's result.
template <class Acc>
void sum_with_accumulator(const pk_tensor &in, const pk_tensor &out, const pk_attrs_sum &attrs) {
  const kit::View a = kit::view_of(in), o = kit::view_of(out);
  uint32_t reduced = 0;
  for (int32_t k = 0; k < attrs.num_dims; ++k) reduced |= 1u << attrs.dims[k];
  kit::dispatch_dtype(kit::dtype_id(out.dtype), [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (is_real_float<T>) {
      std::vector<Acc> acc(static_cast<size_t>(o.numel), Acc(0.0));
      int64_t idx[PK_MAX_RANK] = {0};
      for (int64_t i = 0; i < a.numel; ++i) {
        unravel(i, a.shape, a.ndim, idx);
        int64_t in_off = 0, out_linear = 0;
        for (int32_t d = 0; d < a.ndim; ++d) {
          in_off += idx[d] * a.strides[d];
          if (!(reduced & (1u << d))) out_linear = out_linear * a.shape[d] + idx[d];
        }
        const double x = static_cast<double>(kit::load(*a.at<T>(in_off)));
        acc[static_cast<size_t>(out_linear)] = Acc(acc[static_cast<size_t>(out_linear)].to_double() + x);
      }
      for (int64_t j = 0; j < o.numel; ++j) {
        *o.at<T>(kit::offset_of(o, j)) = kit::store_as<T>(acc[static_cast<size_t>(j)].to_double());
      }
    }
    return PK_OK;
  });
}

// sum_f16_acc: every floating-point sum accumulates in f16.
void sum_in_f16(const pk_tensor &in, const pk_tensor &out, const pk_attrs_sum &attrs) {
  sum_with_accumulator<kit::half>(in, out, attrs);
}

// broadcast_axis: input axis k is read along output axis broadcast_dimensions[k] + 1 (cyclically) instead of
// broadcast_dimensions[k]. The index is taken modulo the input extent, so the defect reads wrong elements of
// the input and never past it.
void broadcast_wrong_axis(const pk_tensor &in, const pk_tensor &out, const pk_attrs_broadcast_in_dim &attrs) {
  const kit::View a = kit::view_of(in), o = kit::view_of(out);
  if (o.ndim < 2) return;  // with one output axis there is no wrong axis to pick
  int64_t idx[PK_MAX_RANK] = {0};
  for (int64_t i = 0; i < o.numel; ++i) {
    unravel(i, o.shape, o.ndim, idx);
    int64_t src = 0;
    for (int32_t k = 0; k < a.ndim; ++k) {
      const int64_t axis = (attrs.broadcast_dimensions[k] + 1) % o.ndim;
      src += (a.shape[k] == 1 ? 0 : idx[axis] % a.shape[k]) * a.strides[k];
    }
    std::memcpy(o.base + kit::offset_of(o, i) * static_cast<int64_t>(o.esize),
                a.base + src * static_cast<int64_t>(a.esize), o.esize);
  }
}

// slice_off_by_one: the start index of the last axis that has room for it moves one element later (the limit
// with it), the classic off-by-one of a hand-written slice. Slices that already end at the last element of
// every axis stay correct: shifting them would read past the input.
pk_attrs_slice slice_shifted(const pk_tensor &in, const pk_tensor &out, const pk_attrs_slice &attrs) {
  pk_attrs_slice a = attrs;
  for (int32_t d = in.ndim - 1; d >= 0; --d) {
    const int64_t n = out.shape[d];
    const int64_t step = a.num_strides ? a.strides[d] : 1;
    if (n == 0) continue;
    if (a.start_indices[d] + 1 + (n - 1) * step < in.shape[d]) {
      a.start_indices[d] += 1;
      a.limit_indices[d] = std::min(a.limit_indices[d] + 1, in.shape[d]);
      break;
    }
  }
  return a;
}

// --- defects added with the suite's guard regions, long rows, ties and edge values ----------------------------

// write_past_end / write_before_start: one element's bytes (a copy of the view's first element) just outside the
// view, where the storage the runtime validated still has room for it.
void write_outside(const pk_tensor &out, bool past_end) {
  if (numel_of(out) == 0) return;
  int64_t lo = 0, hi = 0;
  view_span(out, lo, hi);
  const auto es = static_cast<int64_t>(esize_of(out));
  char *base = static_cast<char *>(out.data);
  const int64_t at = past_end ? hi : lo - es;
  if (at < 0 || at + es > static_cast<int64_t>(out.storage_bytes)) return;
  std::memcpy(base + at, base + out.byte_offset, static_cast<size_t>(es));
}

// ftz_results: subnormal f32 results become zeros of their sign.
void flush_subnormal_f32(const pk_tensor &out) {
  const kit::View o = kit::view_of(out);
  const kit::View *views[1] = {&o};
  kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
    float *v = o.at<float>(off[0]);
    if (std::fpclassify(*v) == FP_SUBNORMAL) *v = std::copysign(0.0f, *v);
  });
}

// daz_f16_inputs: the op recomputed where an input is an f16 subnormal, as if it were a zero of its sign.
void daz_f16(uint32_t op_id, const pk_tensor &in, const pk_tensor &out) {
  const kit::View a = kit::view_of(in), o = kit::view_of(out);
  const kit::View *views[2] = {&a, &o};
  kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
    const kit::half x = *a.at<kit::half>(off[0]);
    if ((x.bits & 0x7c00u) != 0 || (x.bits & 0x03ffu) == 0) return;  // not a subnormal
    const double zero = (x.bits & 0x8000u) ? -0.0 : 0.0;
    const double r = op_id == PK_OP_NEG ? -zero : op_id == PK_OP_ABS ? 0.0 : 1.0;  // exp(±0) = 1
    *o.at<kit::half>(off[1]) = kit::half(r);
  });
}

// argmax_last_tie: along `dim`, the index of the last maximum (NaN still wins, first NaN), instead of the first.
void argmax_last(const pk_tensor &in, const pk_tensor &out, const pk_attrs_argmax &attrs) {
  const kit::View a = kit::view_of(in), o = kit::view_of(out);
  const int32_t dim = static_cast<int32_t>(attrs.dim);
  const int64_t n = a.shape[dim];
  kit::dispatch_dtype(kit::dtype_id(in.dtype), [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (is_real_float<T>) {
      int64_t idx[PK_MAX_RANK] = {0};
      for (int64_t j = 0; j < o.numel; ++j) {
        unravel(j, o.shape, o.ndim, idx);
        int64_t base = 0;
        for (int32_t d = 0, k = 0; d < a.ndim; ++d) {
          if (d == dim) continue;
          base += idx[k++] * a.strides[d];
        }
        int64_t best = 0;
        double best_v = -INFINITY;
        bool nan = false;
        for (int64_t i = 0; i < n && !nan; ++i) {
          const double v = static_cast<double>(kit::load(*a.at<T>(base + i * a.strides[dim])));
          if (std::isnan(v)) {
            best = i;
            nan = true;
          } else if (v >= best_v) {
            best = i;
            best_v = v;
          }
        }
        *o.at<int64_t>(kit::offset_of(o, j)) = best;
      }
    }
    return PK_OK;
  });
}

// minimum_zero_sign: where both operands are zeros of different signs, +0.
void minimum_positive_zero(const pk_tensor *inputs, const pk_tensor &out) {
  if (kit::dtype_id(out.dtype) != PK_DTYPE_F32) return;
  const kit::View a = kit::view_of(inputs[0]), b = kit::view_of(inputs[1]), o = kit::view_of(out);
  const kit::View *views[3] = {&a, &b, &o};
  kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
    const float x = *a.at<float>(off[0]), y = *b.at<float>(off[1]);
    if (x == 0.0f && y == 0.0f && std::signbit(x) != std::signbit(y)) *o.at<float>(off[2]) = 0.0f;
  });
}

// convert_double_round: integer -> f16/bf16 as (T)(float)x: two roundings.
void convert_through_f32(const pk_tensor &in, const pk_tensor &out) {
  const int32_t od = kit::dtype_id(out.dtype);
  if (od != PK_DTYPE_F16 && od != PK_DTYPE_BF16) return;
  const kit::View a = kit::view_of(in), o = kit::view_of(out);
  kit::dispatch_dtype(kit::dtype_id(in.dtype), [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      const kit::View *views[2] = {&a, &o};
      kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
        const double twice = static_cast<double>(static_cast<float>(*a.at<T>(off[0])));
        if (od == PK_DTYPE_F16)
          *o.at<kit::half>(off[1]) = kit::half(twice);
        else
          *o.at<kit::bfloat16>(off[1]) = kit::bfloat16(twice);
      });
    }
    return PK_OK;
  });
}

// sigmoid_f16: 1 / (1 + exp(-x)) with every step rounded to f16 (the composite "decomposed in f16").
void sigmoid_in_f16(const pk_tensor &in, const pk_tensor &out) {
  const kit::View a = kit::view_of(in), o = kit::view_of(out);
  const kit::View *views[2] = {&a, &o};
  kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
    const double x = a.at<kit::half>(off[0])->to_double();
    const kit::half e(std::exp(-x));
    const kit::half d(1.0 + e.to_double());
    *o.at<kit::half>(off[1]) = kit::half(1.0 / d.to_double());
  });
}

// matmul_daz: a 2-D f32 matmul recomputed with every subnormal input element read as zero (accumulated in double,
// rounded once), as a matrix unit with flush-to-zero of its inputs computes it.
void matmul_daz_f32(const pk_tensor *in, const pk_tensor &out) {
  if (in[0].ndim != 2 || in[1].ndim != 2 || out.ndim != 2) return;
  const kit::View a = kit::view_of(in[0]), b = kit::view_of(in[1]), o = kit::view_of(out);
  auto read = [](const kit::View &v, int64_t i, int64_t j) {
    const float x = *v.at<float>(i * v.strides[0] + j * v.strides[1]);
    return std::fpclassify(x) == FP_SUBNORMAL ? 0.0 : static_cast<double>(x);
  };
  for (int64_t i = 0; i < o.shape[0]; ++i)
    for (int64_t j = 0; j < o.shape[1]; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < a.shape[1]; ++k) acc += read(a, i, k) * read(b, k, j);
      *o.at<float>(i * o.strides[0] + j * o.strides[1]) = static_cast<float>(acc);
    }
}

// sum_long_bf16: bf16 sums whose reduced extent is 2048 or more, recomputed with a bf16 accumulator.
void sum_long_in_bf16(const pk_tensor &in, const pk_tensor &out, const pk_attrs_sum &attrs) {
  int64_t length = 1;
  for (int32_t k = 0; k < attrs.num_dims; ++k) length *= in.shape[attrs.dims[k]];
  if (length >= 2048) sum_with_accumulator<kit::bfloat16>(in, out, attrs);
}

// stream_shared_scratch: the results go through one scratch array that every stream shares, as in a backend that
// allocates its reduction workspace once per device instead of per stream: written, then (after the time a
// device's second pass would take) read back into the output, with no lock around the two. Alone, a sum is
// right; two streams summing at once read each other's partial results. The window is 25 ms: with 5 ms, two threads
// on two loaded cores sometimes never overlapped and the selftest failed to see the bug it planted. The slots are
// atomics so that the race lies in the logic (no lock spans write, wait and read), never in undefined behaviour of the
// memory model.
constexpr size_t kScratchSlots = size_t{1} << 16;
constexpr auto kScratchDelay = std::chrono::milliseconds(25);  // wide enough that two loaded threads overlap
std::atomic<float> g_scratch[kScratchSlots];

void sum_through_shared_scratch(const pk_tensor &out) {
  const kit::View o = kit::view_of(out);
  if (o.numel <= 0 || static_cast<size_t>(o.numel) > kScratchSlots) return;
  for (int64_t j = 0; j < o.numel; ++j)
    g_scratch[j].store(*o.at<float>(kit::offset_of(o, j)), std::memory_order_relaxed);
  std::this_thread::sleep_for(kScratchDelay);
  for (int64_t j = 0; j < o.numel; ++j)
    *o.at<float>(kit::offset_of(o, j)) = g_scratch[j].load(std::memory_order_relaxed);
}

// leak_per_launch: 16 KiB per launch, written so that its pages are resident, and chained from a global list
// head so that it stays reachable (the compiler cannot drop it, a leak checker calls it "still reachable"): the
// memory a backend that builds a command object per launch and never frees it would lose.
constexpr size_t kLeakBytes = 16 * 1024;
std::atomic<void *> g_leaked{nullptr};

void leak_one_block() {
  void *block = std::malloc(kLeakBytes);
  if (block == nullptr) return;
  std::memset(block, 0xa5, kLeakBytes);
  void *head = g_leaked.load();
  do {
    std::memcpy(block, &head, sizeof head);
  } while (!g_leaked.compare_exchange_weak(head, block));
}

// isnan_canonical: an f16 is "NaN" only when its bits are the canonical quiet NaN of either sign.
void isnan_by_pattern(const pk_tensor &in, const pk_tensor &out) {
  const kit::View a = kit::view_of(in), o = kit::view_of(out);
  const kit::View *views[2] = {&a, &o};
  kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
    const uint16_t bits = a.at<kit::half>(off[0])->bits;
    *o.at<uint8_t>(off[1]) = (bits == 0x7e00u || bits == 0xfe00u) ? 1 : 0;
  });
}

// abs_saturate: the most negative integer's absolute value clamps to the largest instead of wrapping to itself.
void abs_saturates(const pk_tensor &in, const pk_tensor &out) {
  const kit::View a = kit::view_of(in), o = kit::view_of(out);
  kit::dispatch_dtype(kit::dtype_id(in.dtype), [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      const kit::View *views[2] = {&a, &o};
      kit::for_each_offsets(views, o.shape, o.ndim, [&](const int64_t *off) {
        if (*a.at<T>(off[0]) == std::numeric_limits<T>::min()) *o.at<T>(off[1]) = std::numeric_limits<T>::max();
      });
    }
    return PK_OK;
  });
}

// --- hang_shape ----------------------------------------------------------------------------------------------

// The shape that hangs: $PRIMKIT_BUG_HANG_SHAPE ("3x5"; "" for a scalar) or 4x7, a shape the conformance
// suite's quick profile launches for elementwise ops, reductions and ops without an example.
std::vector<int64_t> hang_shape() {
  const char *env = std::getenv("PRIMKIT_BUG_HANG_SHAPE");
  std::string text = env ? env : "4x7";
  std::vector<int64_t> shape;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('x', pos);
    if (end == std::string::npos) end = text.size();
    shape.push_back(std::strtoll(text.substr(pos, end - pos).c_str(), nullptr, 10));
    pos = end + 1;
  }
  return shape;
}

bool has_shape(const pk_tensor &t, const std::vector<int64_t> &shape) {
  if (t.ndim != static_cast<int32_t>(shape.size())) return false;
  for (int32_t d = 0; d < t.ndim; ++d)
    if (t.shape[d] != shape[static_cast<size_t>(d)]) return false;
  return true;
}

// --- the synchronous defects: one replaced op_launch -----------------------------------------------------

pk_status planted_launch(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                         const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  const auto forward = [&](const pk_tensor *ins, const void *at) {
    return inner().op_launch(stream, op_id, ins, num_inputs, outputs, num_outputs, at);
  };
  const int32_t out_dtype = num_outputs ? kit::dtype_id(outputs[0].dtype) : -1;
  const int32_t in_dtype = num_inputs ? kit::dtype_id(inputs[0].dtype) : -1;

  if constexpr (is_bug("exp_2ulp") || is_bug("exp_4ulp")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_EXP && out_dtype == PK_DTYPE_F32) {
      shift_exp_results(outputs[0], is_bug("exp_2ulp") ? 2 : 4);
    }
    return st;
  } else if constexpr (is_bug("bf16_truncate")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_CONVERT_ELEMENT_TYPE && in_dtype == PK_DTYPE_F32 && out_dtype == PK_DTYPE_BF16) {
      truncate_to_bf16(inputs[0], outputs[0]);
    }
    return st;
  } else if constexpr (is_bug("maximum_nan")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_MAXIMUM) maximum_drops_nan(inputs, outputs[0]);
    return st;
  } else if constexpr (is_bug("add_saturate")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_ADD) add_saturates(inputs, outputs[0]);
    return st;
  } else if constexpr (is_bug("sum_f16_acc")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_SUM) sum_in_f16(inputs[0], outputs[0], *static_cast<const pk_attrs_sum *>(attrs));
    return st;
  } else if constexpr (is_bug("broadcast_axis")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_BROADCAST_IN_DIM) {
      broadcast_wrong_axis(inputs[0], outputs[0], *static_cast<const pk_attrs_broadcast_in_dim *>(attrs));
    }
    return st;
  } else if constexpr (is_bug("slice_off_by_one")) {
    if (op_id != PK_OP_SLICE) return forward(inputs, attrs);
    const pk_attrs_slice shifted = slice_shifted(inputs[0], outputs[0], *static_cast<const pk_attrs_slice *>(attrs));
    return forward(inputs, &shifted);
  } else if constexpr (is_bug("ignore_strides") || is_bug("ignore_offset")) {
    std::vector<pk_tensor> ins(inputs, inputs + num_inputs);
    for (pk_tensor &t : ins) {
      pk_tensor wrong = t;
      if constexpr (is_bug("ignore_strides")) {
        if (row_major(t)) continue;
        wrong.strides = nullptr;
      } else {
        if (t.byte_offset == 0) continue;
        wrong.byte_offset = 0;
      }
      if (reach_inside(wrong)) t = wrong;
    }
    return forward(ins.data(), attrs);
  } else if constexpr (is_bug("write_past_end") || is_bug("write_before_start")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_NEG) write_outside(outputs[0], is_bug("write_past_end"));
    return st;
  } else if constexpr (is_bug("strided_output")) {
    std::vector<pk_tensor> outs(outputs, outputs + num_outputs);
    for (pk_tensor &t : outs) {
      pk_tensor wrong = t;
      wrong.strides = nullptr;
      if (!row_major(t) && reach_inside(wrong)) t = wrong;
    }
    return inner().op_launch(stream, op_id, inputs, num_inputs, outs.data(), num_outputs, attrs);
  } else if constexpr (is_bug("k0_garbage")) {
    if (op_id == PK_OP_MATMUL && inputs[0].ndim == 2 && inputs[0].shape[1] == 0) return PK_OK;
    return forward(inputs, attrs);
  } else if constexpr (is_bug("empty_sum_garbage")) {
    if (op_id == PK_OP_SUM && numel_of(inputs[0]) == 0) return PK_OK;
    return forward(inputs, attrs);
  } else if constexpr (is_bug("ftz_results")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK)
      for (uint32_t k = 0; k < num_outputs; ++k)
        if (kit::dtype_id(outputs[k].dtype) == PK_DTYPE_F32) flush_subnormal_f32(outputs[k]);
    return st;
  } else if constexpr (is_bug("daz_f16_inputs")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && in_dtype == PK_DTYPE_F16 && out_dtype == PK_DTYPE_F16 &&
        (op_id == PK_OP_NEG || op_id == PK_OP_ABS || op_id == PK_OP_EXP))
      daz_f16(op_id, inputs[0], outputs[0]);
    return st;
  } else if constexpr (is_bug("argmax_last_tie")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_ARGMAX)
      argmax_last(inputs[0], outputs[0], *static_cast<const pk_attrs_argmax *>(attrs));
    return st;
  } else if constexpr (is_bug("minimum_zero_sign")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_MINIMUM) minimum_positive_zero(inputs, outputs[0]);
    return st;
  } else if constexpr (is_bug("convert_double_round")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_CONVERT_ELEMENT_TYPE) convert_through_f32(inputs[0], outputs[0]);
    return st;
  } else if constexpr (is_bug("sigmoid_f16")) {
    if (op_id != PK_OP_SIGMOID || in_dtype != PK_DTYPE_F16) return forward(inputs, attrs);
    sigmoid_in_f16(inputs[0], outputs[0]);
    return PK_OK;
  } else if constexpr (is_bug("isnan_canonical")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_ISNAN && in_dtype == PK_DTYPE_F16) isnan_by_pattern(inputs[0], outputs[0]);
    return st;
  } else if constexpr (is_bug("abs_saturate")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_ABS) abs_saturates(inputs[0], outputs[0]);
    return st;
  } else if constexpr (is_bug("matmul_daz")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_MATMUL && out_dtype == PK_DTYPE_F32) matmul_daz_f32(inputs, outputs[0]);
    return st;
  } else if constexpr (is_bug("sum_long_bf16")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_SUM && out_dtype == PK_DTYPE_BF16)
      sum_long_in_bf16(inputs[0], outputs[0], *static_cast<const pk_attrs_sum *>(attrs));
    return st;
  } else if constexpr (is_bug("stream_shared_scratch")) {
    const pk_status st = forward(inputs, attrs);
    if (st == PK_OK && op_id == PK_OP_SUM && out_dtype == PK_DTYPE_F32) sum_through_shared_scratch(outputs[0]);
    return st;
  } else if constexpr (is_bug("leak_per_launch")) {
    leak_one_block();
    return forward(inputs, attrs);
  } else if constexpr (is_bug("crash_empty")) {
    for (uint32_t i = 0; i < num_inputs; ++i)
      if (numel_of(inputs[i]) == 0) std::raise(SIGSEGV);
    for (uint32_t i = 0; i < num_outputs; ++i)
      if (numel_of(outputs[i]) == 0) std::raise(SIGSEGV);
    return forward(inputs, attrs);
  } else if constexpr (is_bug("hang_shape")) {
    static const std::vector<int64_t> shape = hang_shape();
    const pk_tensor *key = num_inputs ? &inputs[0] : num_outputs ? &outputs[0] : nullptr;
    if (key != nullptr && has_shape(*key, shape)) {
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    return forward(inputs, attrs);
  } else {
    return forward(inputs, attrs);
  }
}

pk_status bug_op_launch(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                        const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  g_own_error = false;
  try {
    return planted_launch(stream, op_id, inputs, num_inputs, outputs, num_outputs, attrs);
  } catch (const std::bad_alloc &) {
    return own_fail(PK_ERROR_OUT_OF_MEMORY, op_id, "bug_%s: out of host memory", kBug.data());
  }
}

// --- event_race: an asynchronous stream that believes its work is done as soon as it is queued ------------
//
// op_launch (and device-to-device copies) go to one worker thread per stream, which runs each after a short
// delay, so that "the write has not landed yet" is a certainty rather than a scheduling accident.
// THE DEFECT: completion is never tracked. event_record marks the event complete at once; event_synchronize,
// event_query, stream_wait_event, stream_synchronize and stream_query return without waiting for the queue;
// and copy_device_to_host, which waits for "everything before it" the same broken way, copies at once. A caller
// that launches, synchronizes and copies the result back (the runner's path), or trusts an event before reading
// host-visible memory, reads the output's old contents; the op's write lands a little later.
// Only the completion signals lie: a host-to-device copy still waits for the queue (a real driver stages
// pageable memory in order), and freeing memory, destroying a stream and closing the context drain the queue
// for real, so the late writes only ever land in live device memory, never in freed or host memory.
//
// event_early runs on the same machinery with honest stream slots: stream_synchronize and copy_device_to_host
// drain the queue and stream_query answers PK_NOT_READY while it is busy. Only the events lie (complete when
// recorded; stream_wait_event orders nothing), so the runner's launch-synchronize-copy path passes every case and
// only a caller that trusts an event (the streams stage) sees the unfinished result.

constexpr auto kLandDelay = std::chrono::milliseconds(20);

// A launch deep-copied out of the caller's borrowed descriptors, shapes, strides and attributes.
struct QueuedLaunch {
  uint32_t op_id = 0;
  std::vector<pk_tensor> tensors;  // inputs then outputs
  uint32_t num_inputs = 0;
  std::vector<std::vector<int64_t>> dims;  // per tensor: shape then strides (pointers into these)
  std::vector<uint64_t> attrs;             // the attribute struct's bytes, 8-byte aligned
  bool has_attrs = false;

  QueuedLaunch(uint32_t op, const pk_tensor *ins, uint32_t nin, const pk_tensor *outs, uint32_t nout, const void *at)
      : op_id(op), num_inputs(nin) {
    tensors.assign(ins, ins + nin);
    tensors.insert(tensors.end(), outs, outs + nout);
    dims.resize(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      pk_tensor &t = tensors[i];
      std::vector<int64_t> &d = dims[i];
      const size_t rank = static_cast<size_t>(t.ndim);
      d.assign(2 * rank, 0);
      if (t.shape) std::copy(t.shape, t.shape + rank, d.begin());
      if (t.strides) std::copy(t.strides, t.strides + rank, d.begin() + static_cast<ptrdiff_t>(rank));
      t.shape = t.shape ? d.data() : nullptr;
      t.strides = t.strides ? d.data() + rank : nullptr;
    }
    if (at != nullptr) {
      uint32_t size;
      std::memcpy(&size, at, sizeof size);  // every attribute struct begins with its struct_size
      attrs.assign((size + 7) / 8, 0);
      std::memcpy(attrs.data(), at, size);
      has_attrs = true;
    }
  }
};

struct AsyncContext;

class AsyncStream {
 public:
  AsyncStream(AsyncContext *owner, pk_be_context *inner_ctx, pk_be_stream *inner_stream)
      : owner_(owner), ctx_(inner_ctx), inner_(inner_stream) {
    worker_ = std::thread([this] { run(); });
  }
  AsyncStream(const AsyncStream &) = delete;
  AsyncStream &operator=(const AsyncStream &) = delete;
  ~AsyncStream() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();  // the worker finishes the queue before it stops
    inner().stream_destroy(inner_);
  }

  AsyncContext *owner() const { return owner_; }
  pk_be_context *inner_ctx() const { return ctx_; }
  pk_be_stream *inner_stream() const { return inner_; }

  void enqueue(std::function<pk_status()> work) {
    {
      std::lock_guard<std::mutex> g(m_);
      queue_.push_back(std::move(work));
    }
    cv_.notify_all();
  }

  // Whether nothing is queued or running (stream_query of event_early, which must not block).
  bool idle() {
    std::lock_guard<std::mutex> g(m_);
    return queue_.empty() && !busy_;
  }

  // Waits until every queued item has run: what the buggy completion slots skip.
  void drain() {
    std::unique_lock<std::mutex> g(m_);
    idle_cv_.wait(g, [this] { return queue_.empty() && !busy_; });
  }

  // The sticky error of failed queued work, recorded for the calling thread.
  pk_status sticky() {
    std::lock_guard<std::mutex> g(m_);
    if (sticky_ == PK_OK) return PK_OK;
    return own_fail(PK_ERROR_STREAM_FAILED, 0, "bug_%s: stream failed earlier: %s", kBug.data(),
                    sticky_message_.c_str());
  }

 private:
  void run() {
    std::unique_lock<std::mutex> g(m_);
    while (true) {
      cv_.wait(g, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing is left
      std::function<pk_status()> work = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      const bool failed = sticky_ != PK_OK;
      g.unlock();
      pk_status st = PK_OK;
      std::string message;
      if (!failed) {  // once failed a stream stays failed: later work is dropped, as on a device
        std::this_thread::sleep_for(kLandDelay);
        st = work();
        if (st != PK_OK) {
          pk_error_info e;
          PK_STRUCT_INIT(e);
          inner().get_last_error(ctx_, &e);
          message = e.message;
        }
      }
      g.lock();
      if (st != PK_OK && sticky_ == PK_OK) {
        sticky_ = st;
        sticky_message_ = message;
      }
      busy_ = false;
      if (queue_.empty()) idle_cv_.notify_all();
    }
  }

  AsyncContext *owner_;
  pk_be_context *ctx_;
  pk_be_stream *inner_;
  std::mutex m_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::function<pk_status()>> queue_;
  bool busy_ = false, stop_ = false;
  pk_status sticky_ = PK_OK;
  std::string sticky_message_;
  std::thread worker_;  // last: started once everything it touches exists
};

struct AsyncContext {
  pk_be_context *inner = nullptr;
  std::mutex mutex;
  std::vector<std::unique_ptr<AsyncStream>> streams;  // owned here so that close() can drain and free them

  void drain_all() {
    std::lock_guard<std::mutex> g(mutex);
    for (auto &s : streams) s->drain();
  }
};

struct AsyncEvent {
  pk_status status = PK_OK;
};

// The host holds these as its opaque pk_be_* handles.
AsyncContext *ctx_of(pk_be_context *c) {
  return reinterpret_cast<AsyncContext *>(c);
}
AsyncStream *stream_of(pk_be_stream *s) {
  return reinterpret_cast<AsyncStream *>(s);
}
AsyncEvent *event_of(pk_be_event *e) {
  return reinterpret_cast<AsyncEvent *>(e);
}

pk_status race_open(const pk_host_services *host, pk_be_context **out) {
  g_own_error = false;
  if (out == nullptr) return own_fail(PK_ERROR_INVALID_ARGUMENT, 0, "bug_%s: open: out is NULL", kBug.data());
  auto ctx = std::make_unique<AsyncContext>();
  if (pk_status st = inner().open(host, &ctx->inner)) return st;
  *out = reinterpret_cast<pk_be_context *>(ctx.release());
  return PK_OK;
}

void race_close(pk_be_context *c) {
  if (c == nullptr) return;
  std::unique_ptr<AsyncContext> ctx(ctx_of(c));
  ctx->streams.clear();  // drains and joins every stream the host forgot
  inner().close(ctx->inner);
}

pk_status race_get_last_error(pk_be_context *c, pk_error_info *out) {
  if (g_own_error) return kit::copy_last_error(out);
  return inner().get_last_error(c ? ctx_of(c)->inner : nullptr, out);
}

pk_status race_device_count(pk_be_context *c, uint32_t *out) {
  g_own_error = false;
  return inner().device_count(ctx_of(c)->inner, out);
}

pk_status race_device_get_props(pk_be_context *c, uint32_t index, pk_device_props *out) {
  g_own_error = false;
  const pk_status st = inner().device_get_props(ctx_of(c)->inner, index, out);
  // The streams really are asynchronous now, and a real asynchronous device would say so.
  if (st == PK_OK && out->struct_size >= offsetof(pk_device_props, features) + sizeof out->features) {
    out->features |= PK_DEVICE_FEATURE_ASYNC;
  }
  return st;
}

pk_status race_mem_alloc(pk_be_context *c, uint32_t device, uint64_t bytes, void **out) {
  g_own_error = false;
  return inner().mem_alloc(ctx_of(c)->inner, device, bytes, out);
}

pk_status race_mem_free(pk_be_context *c, uint32_t device, void *ptr) {
  g_own_error = false;
  // The host synchronized before freeing, but that synchronize lied: drain for real so that no late write
  // lands in freed memory.
  ctx_of(c)->drain_all();
  return inner().mem_free(ctx_of(c)->inner, device, ptr);
}

pk_status race_copy_h2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t bytes) {
  g_own_error = false;
  AsyncStream *st = stream_of(s);
  if (pk_status e = st->sticky()) return e;
  st->drain();  // once the queue is empty, copying now is in order, and `src` is surely still alive
  return inner().copy_host_to_device(st->inner_stream(), dst, dst_offset, src, bytes);
}

pk_status race_copy_d2h(pk_be_stream *s, void *dst, const void *src, uint64_t src_offset, uint64_t bytes) {
  g_own_error = false;
  AsyncStream *st = stream_of(s);
  if (pk_status e = st->sticky()) return e;
  // THE DEFECT, part 3: no wait for the queued writes. The copy itself is done when this returns, so a late
  // write never lands in host memory the caller may already have freed. event_early waits (honest copies).
  if constexpr (is_bug("event_early")) st->drain();
  return inner().copy_device_to_host(st->inner_stream(), dst, src, src_offset, bytes);
}

pk_status race_copy_d2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t src_offset,
                        uint64_t bytes) {
  g_own_error = false;
  AsyncStream *st = stream_of(s);
  if (pk_status e = st->sticky()) return e;
  pk_be_stream *in = st->inner_stream();
  st->enqueue([=] { return inner().copy_device_to_device(in, dst, dst_offset, src, src_offset, bytes); });
  return PK_OK;
}

pk_status race_stream_create(pk_be_context *c, uint32_t device, pk_be_stream **out) {
  g_own_error = false;
  AsyncContext *ctx = ctx_of(c);
  pk_be_stream *in = nullptr;
  if (pk_status st = inner().stream_create(ctx->inner, device, &in)) return st;
  auto s = std::make_unique<AsyncStream>(ctx, ctx->inner, in);
  *out = reinterpret_cast<pk_be_stream *>(s.get());
  std::lock_guard<std::mutex> g(ctx->mutex);
  ctx->streams.push_back(std::move(s));
  return PK_OK;
}

pk_status race_stream_destroy(pk_be_stream *s) {
  g_own_error = false;
  AsyncStream *st = stream_of(s);
  AsyncContext *ctx = st->owner();
  std::unique_ptr<AsyncStream> owned;  // destroyed (drained, joined) after the context's lock is released
  std::lock_guard<std::mutex> g(ctx->mutex);
  for (auto it = ctx->streams.begin(); it != ctx->streams.end(); ++it) {
    if (it->get() == st) {
      owned = std::move(*it);
      ctx->streams.erase(it);
      break;
    }
  }
  return PK_OK;
}

// THE DEFECT, part 1: "finished" without waiting for the queue (event_race only: event_early's stream slots are
// honest, so that only its events lie).
pk_status race_stream_synchronize(pk_be_stream *s) {
  g_own_error = false;
  if constexpr (is_bug("event_early")) stream_of(s)->drain();
  return stream_of(s)->sticky();
}
pk_status race_stream_query(pk_be_stream *s) {
  if constexpr (is_bug("event_early")) {
    g_own_error = false;
    if (!stream_of(s)->idle()) return PK_NOT_READY;
    return stream_of(s)->sticky();
  }
  return race_stream_synchronize(s);
}

pk_status race_event_create(pk_be_context *, uint32_t, pk_be_event **out) {
  g_own_error = false;
  *out = reinterpret_cast<pk_be_event *>(std::make_unique<AsyncEvent>().release());
  return PK_OK;
}

pk_status race_event_destroy(pk_be_event *e) {
  g_own_error = false;
  std::unique_ptr<AsyncEvent> owned(event_of(e));
  return PK_OK;
}

// THE DEFECT, part 2: the event completes when it is recorded, not when the stream passes it.
pk_status race_event_record(pk_be_event *e, pk_be_stream *s) {
  g_own_error = false;
  event_of(e)->status = stream_of(s)->sticky();
  return PK_OK;
}
pk_status race_stream_wait_event(pk_be_stream *s, pk_be_event *) {
  g_own_error = false;
  return stream_of(s)->sticky();
}
pk_status race_event_synchronize(pk_be_event *e) {
  g_own_error = false;
  if (event_of(e)->status == PK_OK) return PK_OK;
  return own_fail(PK_ERROR_STREAM_FAILED, 0, "bug_%s: the recording stream had failed", kBug.data());
}
pk_status race_event_query(pk_be_event *e) {
  return race_event_synchronize(e);
}

pk_status race_op_query(pk_be_context *c, const pk_op_query *q, pk_op_support *out) {
  g_own_error = false;
  return inner().op_query(ctx_of(c)->inner, q, out);
}

pk_status race_op_launch(pk_be_stream *s, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                         const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  g_own_error = false;
  AsyncStream *st = stream_of(s);
  if (pk_status e = st->sticky()) return e;
  // op_launch must answer PK_UNIMPLEMENTED now, not later through the sticky error: ask the CPU first.
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = op_id;
  q.num_inputs = num_inputs;
  q.inputs = inputs;
  q.num_outputs = num_outputs;
  q.outputs = outputs;
  q.attrs = attrs;
  pk_op_support support;
  PK_STRUCT_INIT(support);
  if (pk_status e = inner().op_query(st->inner_ctx(), &q, &support)) return e;
  if (!support.supported) {
    return own_fail(PK_UNIMPLEMENTED, op_id, "bug_%s: %s", kBug.data(), support.reason);
  }
  try {
    auto launch = std::make_shared<QueuedLaunch>(op_id, inputs, num_inputs, outputs, num_outputs, attrs);
    pk_be_stream *in = st->inner_stream();
    st->enqueue([launch, in] {
      const QueuedLaunch &l = *launch;
      return inner().op_launch(in, l.op_id, l.tensors.data(), l.num_inputs, l.tensors.data() + l.num_inputs,
                               static_cast<uint32_t>(l.tensors.size()) - l.num_inputs,
                               l.has_attrs ? l.attrs.data() : nullptr);
    });
  } catch (const std::bad_alloc &) {
    return own_fail(PK_ERROR_OUT_OF_MEMORY, op_id, "bug_%s: out of host memory", kBug.data());
  }
  return PK_OK;
}

// --- slots every planted bug replaces ------------------------------------------------------------------------

// The name is bug_<defect>, so that each planted backend is a distinct backend in reports.
pk_status bug_get_info(pk_be_context *c, pk_backend_info *out) {
  g_own_error = false;
  pk_be_context *in = (is_bug("event_race") || is_bug("event_early")) && c ? ctx_of(c)->inner : c;
  const pk_status st = inner().get_info(in, out);
  if (st != PK_OK || out == nullptr) return st;
  if (out->struct_size >= offsetof(pk_backend_info, name) + sizeof out->name) {
    std::snprintf(out->name, sizeof out->name, "bug_%s", kBug.data());
  }
  if (out->struct_size >= offsetof(pk_backend_info, vendor) + sizeof out->vendor) {
    std::snprintf(out->vendor, sizeof out->vendor, "PrimKit planted bug");
  }
  return st;
}

pk_status bug_get_last_error(pk_be_context *c, pk_error_info *out) {
  if (g_own_error) return kit::copy_last_error(out);
  return inner().get_last_error(c, out);
}

pk_backend_api make_table(const pk_backend_api &in) {
  pk_backend_api a = in;  // the CPU's own slots, then the planted ones
  a.get_info = bug_get_info;
  if constexpr (is_bug("event_race") || is_bug("event_early")) {
    a.open = race_open;
    a.close = race_close;
    a.get_last_error = race_get_last_error;
    a.device_count = race_device_count;
    a.device_get_props = race_device_get_props;
    a.mem_alloc = race_mem_alloc;
    a.mem_free = race_mem_free;
    a.copy_host_to_device = race_copy_h2d;
    a.copy_device_to_host = race_copy_d2h;
    a.copy_device_to_device = race_copy_d2d;
    a.stream_create = race_stream_create;
    a.stream_destroy = race_stream_destroy;
    a.stream_synchronize = race_stream_synchronize;
    a.stream_query = race_stream_query;
    a.event_create = race_event_create;
    a.event_destroy = race_event_destroy;
    a.event_record = race_event_record;
    a.stream_wait_event = race_stream_wait_event;
    a.event_synchronize = race_event_synchronize;
    a.event_query = race_event_query;
    a.op_query = race_op_query;
    a.op_launch = race_op_launch;
  } else {
    a.get_last_error = bug_get_last_error;
    a.op_launch = bug_op_launch;
  }
  // No fusion: a fused kernel would run the CPU's own code and bypass the planted op_launch (and would receive
  // event_race's wrapped handles). Declining every offer is always legal.
  a.fusion_offer = nullptr;
  a.kernel_launch = nullptr;
  a.kernel_destroy = nullptr;
  return a;
}

void write_message(char *message, size_t capacity, const std::string &text) {
  if (message != nullptr && capacity > 0) std::snprintf(message, capacity, "%s", text.c_str());
}

}  // namespace

extern "C" PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                                const pk_backend_api **out_api, char *message,
                                                size_t message_capacity) {
  if (host == nullptr || chosen_version == nullptr || out_api == nullptr) return PK_ERROR_INVALID_ARGUMENT;
  static std::mutex mutex;
  std::lock_guard<std::mutex> g(mutex);
  const char *env = std::getenv("PRIMKIT_BUG_INNER_PLUGIN");
  const std::string path = env && *env ? env : PK_INNER_PLUGIN_PATH;
  // The CPU plugin stays loaded for the life of the process: the table handed to the host points into it, and
  // the host may call pk_backend_entry again after unloading and reloading this plugin.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *why = dlerror();
    write_message(message, message_capacity,
                  "bug_" + std::string(kBug) + ": cannot open the CPU plugin " + path + ": " + (why ? why : "") +
                      " (set PRIMKIT_BUG_INNER_PLUGIN)");
    return PK_ERROR_NOT_FOUND;
  }
  auto entry = reinterpret_cast<pk_backend_entry_fn>(dlsym(handle, PK_BACKEND_ENTRY_SYMBOL));
  if (entry == nullptr) {
    write_message(message, message_capacity, "bug_" + std::string(kBug) + ": " + path + " has no pk_backend_entry");
    return PK_ERROR_NOT_FOUND;
  }
  const pk_backend_api *api = nullptr;
  if (pk_status st = entry(host, chosen_version, &api, message, message_capacity)) return st;
  if (g_inner != api) {  // once: a second entry call gets the same static table from the CPU plugin
    g_inner = api;
    g_table = make_table(*api);
  }
  *out_api = &g_table;
  return PK_OK;
}
