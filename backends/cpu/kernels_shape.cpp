// kernels_shape.cpp — views (written as copies into the caller's outputs), shape ops, indexing and sorting.
//
// Data movement works on element sizes (1, 2, 4, 8 or 16 bytes), not on types, so every dtype (bool, fp8,
// complex) is covered by the same code. Every op that only moves data is expressed as "build a strided source view
// whose shape is the output's, then copy", and every output is written through its own strides. Index tensors are
// i32 or i64; an index is checked before any memory is touched with it.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>
#include <type_traits>
#include <vector>

#include "cpu_kernels.hpp"

namespace pk::cpu {
namespace {

using kit::View;
using kit::walk;

template <class T>
constexpr bool is_int_v = std::is_integral_v<T>;
template <class T>
constexpr bool is_real_v = std::is_integral_v<T> || std::is_floating_point_v<T> || kit::is_small_float<T>::value;

int64_t numel_of(const int64_t *shape, int32_t ndim) {
  int64_t n = 1;
  for (int32_t d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

// Drops extent-1 axes and merges neighbours that are one run in every stride set, so copies run long inner loops.
template <size_t N>
int32_t coalesce(int64_t *shape, int32_t ndim, const std::array<int64_t *, N> &st) {
  int32_t r = 0;
  for (int32_t d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    shape[r] = shape[d];
    for (size_t k = 0; k < N; ++k) st[k][r] = st[k][d];
    ++r;
  }
  int32_t w = 0;
  for (int32_t d = 0; d < r; ++d) {
    bool merge = w > 0;
    for (size_t k = 0; merge && k < N; ++k) merge = st[k][w - 1] == st[k][d] * shape[d];
    if (merge) {
      shape[w - 1] *= shape[d];
      for (size_t k = 0; k < N; ++k) st[k][w - 1] = st[k][d];
    } else {
      shape[w] = shape[d];
      for (size_t k = 0; k < N; ++k) st[k][w] = st[k][d];
      ++w;
    }
  }
  return w;
}

// Row-major strides of a dense tensor of `shape`.
void dense_strides(const int64_t *shape, int32_t ndim, int64_t *out) {
  int64_t s = 1;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    out[d] = s;
    s *= shape[d];
  }
}

// --- elements by size -------------------------------------------------------------------------------------------

struct E16 {
  uint64_t lo, hi;
};

template <class F>
pk_status by_size(size_t esize, F &&f) {
  switch (esize) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    case 16:
      return f(E16{});
    default:
      return PK_UNIMPLEMENTED;
  }
}

template <class E>
inline E *elem(char *base, int64_t off) {
  return reinterpret_cast<E *>(base) + off;
}
template <class E>
inline const E *elem(const char *base, int64_t off) {
  return reinterpret_cast<const E *>(base) + off;
}

constexpr int64_t kCopyGrain = 16384;

// dst[i...] = src[i...] for views of one shape (src may have any strides, dst has the output's).
void copy_view(const View &dst, const View &src) {
  int64_t shape[PK_MAX_RANK], sd[PK_MAX_RANK], ss[PK_MAX_RANK];
  for (int32_t d = 0; d < dst.ndim; ++d) {
    shape[d] = dst.shape[d];
    sd[d] = dst.strides[d];
    ss[d] = src.strides[d];
  }
  const int64_t n = numel_of(shape, dst.ndim);
  if (n == 0) return;
  const int32_t nd = coalesce<2>(shape, dst.ndim, {sd, ss});
  by_size(dst.esize, [&](auto tag) -> pk_status {
    using E = decltype(tag);
    char *db = dst.base;
    const char *sb = src.base;
    parallel_for(0, n, kCopyGrain, [&](int64_t lo, int64_t hi) {
      walk<2>(shape, nd, {sd, ss}, {0, 0}, lo, hi,
              [&](const std::array<int64_t, 2> &o) { *elem<E>(db, o[0]) = *elem<E>(sb, o[1]); });
    });
    return PK_OK;
  });
}

// A dense row-major view of the same storage with another shape (for order-preserving reshapes).
View dense_as(const View &v, const int64_t *shape, int32_t ndim) {
  View r = v;
  r.ndim = ndim;
  for (int32_t d = 0; d < ndim; ++d) r.shape[d] = shape[d];
  dense_strides(r.shape, ndim, r.strides);
  return r;
}

// out (row-major order) = a (row-major order): the element count is equal, the shapes differ.
void linear_copy(const View &out, const View &a) {
  if (out.numel == 0) return;
  if (a.contiguous) return copy_view(out, dense_as(a, out.shape, out.ndim));
  if (out.contiguous) return copy_view(dense_as(out, a.shape, a.ndim), a);
  by_size(out.esize, [&](auto tag) -> pk_status {
    using E = decltype(tag);
    parallel_for(0, out.numel, kCopyGrain, [&](int64_t lo, int64_t hi) {
      walk<1>(out.shape, out.ndim, {out.strides}, {0}, lo, hi, [&](const std::array<int64_t, 1> &o) {
        *elem<E>(out.base, o[0]) = *elem<E>(a.base, kit::offset_of(a, lo++));
      });
    });
    return PK_OK;
  });
}

// The value a pad fills with, converted as convert_element_type does: round to nearest even; float -> int
// truncates and saturates (NaN -> 0); -> bool is v != 0.
template <class T>
T from_f64(double v) {
  if constexpr (std::is_same_v<T, kit::boolean>) {
    return kit::boolean{static_cast<uint8_t>(v != 0.0 ? 1 : 0)};
  } else if constexpr (is_int_v<T>) {
    if (std::isnan(v)) return T{0};
    const double t = std::trunc(v);
    if (t <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (t >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(t);
  } else if constexpr (kit::is_complex<T>::value) {
    using R = typename T::value_type;
    return T(static_cast<R>(v), R(0));
  } else {
    return kit::store_as<T>(v);
  }
}

void fill_view(const View &out, int32_t dtype, double value) {
  if (out.numel == 0) return;
  unsigned char bytes[16] = {0};
  kit::dispatch_dtype(dtype, [&](auto tag) -> pk_status {
    using T = decltype(tag);
    const T v = from_f64<T>(value);
    std::memcpy(bytes, &v, sizeof v);
    return PK_OK;
  });
  int64_t shape[PK_MAX_RANK], sd[PK_MAX_RANK];
  for (int32_t d = 0; d < out.ndim; ++d) {
    shape[d] = out.shape[d];
    sd[d] = out.strides[d];
  }
  const int32_t nd = coalesce<1>(shape, out.ndim, {sd});
  by_size(out.esize, [&](auto tag) -> pk_status {
    using E = decltype(tag);
    E v;
    std::memcpy(&v, bytes, sizeof v);
    parallel_for(0, out.numel, kCopyGrain, [&](int64_t lo, int64_t hi) {
      walk<1>(shape, nd, {sd}, {0}, lo, hi, [&](const std::array<int64_t, 1> &o) { *elem<E>(out.base, o[0]) = v; });
    });
    return PK_OK;
  });
}

// --- shared -----------------------------------------------------------------------------------------------------

// Index tensors are i32 or i64 (type variable I).
inline int64_t read_index(const View &v, int64_t off) {
  return v.esize == 8 ? *elem<int64_t>(v.base, off) : static_cast<int64_t>(*elem<int32_t>(v.base, off));
}

// Runs chunk bodies that need scratch memory on the worker threads; an allocation failure inside a chunk (which
// must not throw through parallel_for) is reported after the loop.
template <class F>
pk_status parallel_with_scratch(const Launch &l, int64_t n, int64_t grain, F &&f) {
  std::atomic<bool> failed{false};
  parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
    try {
      f(lo, hi);
    } catch (...) {
      failed.store(true, std::memory_order_relaxed);
    }
  });
  if (failed.load()) return kit::fail(PK_ERROR_OUT_OF_MEMORY, l.op->id, -1, "%s: out of host memory", l.op->name);
  return PK_OK;
}

// --- views ------------------------------------------------------------------------------------------------------

pk_status k_broadcast_in_dim(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_broadcast_in_dim>(l);
  const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
  View src = out;
  src.base = in.base;
  for (int32_t d = 0; d < out.ndim; ++d) src.strides[d] = 0;
  for (int32_t k = 0; k < in.ndim; ++k)
    if (in.shape[k] != 1) src.strides[a.broadcast_dimensions[k]] = in.strides[k];
  copy_view(out, src);
  return PK_OK;
}

pk_status k_as_strided(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_as_strided>(l);
  const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
  if (out.numel == 0) return PK_OK;
  if (in.contiguous) {
    View src = out;
    src.base = in.base + a.storage_offset * static_cast<int64_t>(in.esize);
    for (int32_t d = 0; d < out.ndim; ++d) src.strides[d] = a.strides[d];
    copy_view(out, src);
    return PK_OK;
  }
  // flat(a) of a strided input: each position is mapped through a's own strides.
  return by_size(out.esize, [&](auto tag) -> pk_status {
    using E = decltype(tag);
    parallel_for(0, out.numel, kCopyGrain, [&](int64_t lo, int64_t hi) {
      walk<2>(out.shape, out.ndim, {out.strides, a.strides}, {0, a.storage_offset}, lo, hi,
              [&](const std::array<int64_t, 2> &o) {
                *elem<E>(out.base, o[0]) = *elem<E>(in.base, kit::offset_of(in, o[1]));
              });
    });
    return PK_OK;
  });
}

// collapse_view, collapse, reshape, split_dim, expand_dims, squeeze, view_of: the row-major order is kept.
pk_status k_linear(const Launch &l) {
  linear_copy(kit::view_of(l.outputs[0]), kit::view_of(l.inputs[0]));
  return PK_OK;
}

// copy_to(a, b): b (broadcast to a's shape, right-aligned) written into the output, which the runtime gives a's
// storage (alias inplace) or a new tensor of a's shape.
pk_status k_copy_to(const Launch &l) {
  const View out = kit::view_of(l.outputs[0]), b = kit::view_of(l.inputs[1]);
  if (out.numel == 0) return PK_OK;
  View src = out;
  src.base = b.base;
  const int32_t lead = out.ndim - b.ndim;
  for (int32_t d = 0; d < out.ndim; ++d) {
    const int32_t k = d - lead;
    src.strides[d] = (k < 0 || b.shape[k] == 1) ? 0 : b.strides[k];
  }
  src.contiguous = b.contiguous && b.ndim == out.ndim && b.numel == out.numel;
  copy_view(out, src);
  return PK_OK;
}

pk_status k_slice(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_slice>(l);
  const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
  if (out.numel == 0) return PK_OK;
  View src = out;
  src.base = in.base;
  for (int32_t d = 0; d < in.ndim; ++d) {
    const int64_t step = a.num_strides ? a.strides[d] : 1;
    src.base += a.start_indices[d] * in.strides[d] * static_cast<int64_t>(in.esize);
    src.strides[d] = in.strides[d] * step;
  }
  copy_view(out, src);
  return PK_OK;
}

pk_status k_slice_in_dim(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_slice_in_dim>(l);
  const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
  if (out.numel == 0) return PK_OK;
  View src = in;
  src.shape[a.dim] = out.shape[a.dim];
  src.base += a.start * in.strides[a.dim] * static_cast<int64_t>(in.esize);
  src.strides[a.dim] = in.strides[a.dim] * a.stride;
  copy_view(out, src);
  return PK_OK;
}

pk_status k_transpose(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_transpose>(l);
  const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
  View src = out;
  src.base = in.base;
  for (int32_t d = 0; d < out.ndim; ++d) src.strides[d] = in.strides[a.permutation[d]];
  copy_view(out, src);
  return PK_OK;
}

// --- shape ops --------------------------------------------------------------------------------------------------

pk_status k_rev(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_rev>(l);
  const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
  if (out.numel == 0) return PK_OK;
  View src = in;
  for (int32_t k = 0; k < a.num_dims; ++k) {
    const int64_t d = a.dims[k];
    src.base += (in.shape[d] - 1) * in.strides[d] * static_cast<int64_t>(in.esize);
    src.strides[d] = -in.strides[d];
  }
  copy_view(out, src);
  return PK_OK;
}

pk_status k_cat(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_cat>(l);
  const View out = kit::view_of(l.outputs[0]);
  int64_t pos = 0;
  for (uint32_t i = 0; i < l.num_inputs; ++i) {
    const View in = kit::view_of(l.inputs[i]);
    if (in.numel > 0) {
      View dst = out;
      dst.shape[a.dim] = in.shape[a.dim];
      dst.base += pos * out.strides[a.dim] * static_cast<int64_t>(out.esize);
      copy_view(dst, in);
    }
    pos += in.shape[a.dim];
  }
  return PK_OK;
}

pk_status k_as_strided_scatter(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_as_strided_scatter>(l);
  const View base = kit::view_of(l.inputs[0]), src = kit::view_of(l.inputs[1]), out = kit::view_of(l.outputs[0]);
  copy_view(out, base);
  if (src.numel == 0) return PK_OK;
  // Positions index flat(out) in row-major order; the doc promises they do not overlap, so chunks never collide.
  return by_size(out.esize, [&](auto tag) -> pk_status {
    using E = decltype(tag);
    parallel_for(0, src.numel, kCopyGrain, [&](int64_t lo, int64_t hi) {
      walk<2>(src.shape, src.ndim, {src.strides, a.strides}, {0, a.storage_offset}, lo, hi,
              [&](const std::array<int64_t, 2> &o) {
                const int64_t dst = out.contiguous ? o[1] : kit::offset_of(out, o[1]);
                *elem<E>(out.base, dst) = *elem<E>(src.base, o[0]);
              });
    });
    return PK_OK;
  });
}

pk_status k_pad(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_pad>(l);
  const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
  fill_view(out, dtype_of(l.outputs[0]), a.value);
  // Input element i of an axis lands at low + i * (interior + 1); only those inside [0, extent) are copied.
  View src = in, dst = out;
  for (int32_t d = 0; d < in.ndim; ++d) {
    const int64_t s = (a.num_interior ? a.interior[d] : 0) + 1;
    const int64_t low = a.low[d], n = in.shape[d], e = out.shape[d];
    const int64_t i_lo = low >= 0 ? 0 : (-low + s - 1) / s;
    const int64_t room = e - 1 - low;
    const int64_t i_hi = room >= 0 ? std::min(n - 1, room / s) : -1;
    const int64_t count = i_hi - i_lo + 1;
    if (count <= 0) return PK_OK;
    src.base += i_lo * in.strides[d] * static_cast<int64_t>(in.esize);
    src.shape[d] = count;
    dst.base += (low + i_lo * s) * out.strides[d] * static_cast<int64_t>(out.esize);
    dst.shape[d] = count;
    dst.strides[d] = out.strides[d] * s;
  }
  copy_view(dst, src);
  return PK_OK;
}

pk_status k_slice_scatter(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_slice_scatter>(l);
  const View base = kit::view_of(l.inputs[0]), src = kit::view_of(l.inputs[1]), out = kit::view_of(l.outputs[0]);
  copy_view(out, base);
  if (src.numel == 0) return PK_OK;
  View dst = out;
  dst.shape[a.dim] = src.shape[a.dim];
  dst.base += a.start * out.strides[a.dim] * static_cast<int64_t>(out.esize);
  dst.strides[a.dim] = out.strides[a.dim] * a.stride;
  copy_view(dst, src);
  return PK_OK;
}

// --- indexing ---------------------------------------------------------------------------------------------------

pk_status k_gather(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_gather>(l);
  const View in = kit::view_of(l.inputs[0]), index = kit::view_of(l.inputs[1]), out = kit::view_of(l.outputs[0]);
  const int64_t dim = a.dim, extent = in.shape[dim], step = in.strides[dim];
  int64_t in_st[PK_MAX_RANK];
  for (int32_t d = 0; d < in.ndim; ++d) in_st[d] = d == dim ? 0 : in.strides[d];
  return by_size(out.esize, [&](auto tag) -> pk_status {
    using E = decltype(tag);
    parallel_for(0, out.numel, kCopyGrain, [&](int64_t lo, int64_t hi) {
      walk<3>(index.shape, index.ndim, {index.strides, out.strides, in_st}, {0, 0, 0}, lo, hi,
              [&](const std::array<int64_t, 3> &o) {
                const int64_t v = read_index(index, o[0]);
                *elem<E>(out.base, o[1]) = (v >= 0 && v < extent) ? *elem<E>(in.base, o[2] + v * step) : E{};
              });
    });
    return PK_OK;
  });
}

pk_status k_scatter(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_scatter>(l);
  const View base = kit::view_of(l.inputs[0]), index = kit::view_of(l.inputs[1]), src = kit::view_of(l.inputs[2]);
  const View out = kit::view_of(l.outputs[0]);
  copy_view(out, base);
  const int64_t dim = a.dim, extent = out.shape[dim], step = out.strides[dim];
  int64_t out_st[PK_MAX_RANK];
  for (int32_t d = 0; d < out.ndim; ++d) out_st[d] = d == dim ? 0 : out.strides[d];
  // Serial: duplicate indices would race (the doc leaves which value wins unspecified, here the last).
  return by_size(out.esize, [&](auto tag) -> pk_status {
    using E = decltype(tag);
    walk<3>(index.shape, index.ndim, {index.strides, src.strides, out_st}, {0, 0, 0}, 0, index.numel,
            [&](const std::array<int64_t, 3> &o) {
              const int64_t v = read_index(index, o[0]);
              if (v >= 0 && v < extent) *elem<E>(out.base, o[2] + v * step) = *elem<E>(src.base, o[1]);
            });
    return PK_OK;
  });
}

// Accumulators for the reducing index ops: double for floats (one rounding at the store), int64 for integers
// (sums and products wrap through uint64).
template <class T>
using acc_t = std::conditional_t<is_int_v<T>, int64_t, double>;

template <class T>
inline acc_t<T> to_acc(const T &v) {
  return static_cast<acc_t<T>>(kit::load(v));
}

template <class T>
inline T from_acc(acc_t<T> v) {
  if constexpr (is_int_v<T>) {
    return static_cast<T>(v);
  } else {
    return kit::store_as<T>(v);
  }
}

template <class A>
inline A combine(int32_t kind, A x, A y) {
  if constexpr (std::is_floating_point_v<A>) {
    switch (kind) {
      case PK_REDUCE_KIND_SUM:
        return x + y;
      case PK_REDUCE_KIND_PROD:
        return x * y;
      case PK_REDUCE_KIND_AMAX:
        return (std::isnan(x) || std::isnan(y)) ? std::numeric_limits<A>::quiet_NaN() : std::max(x, y);
      default:
        return (std::isnan(x) || std::isnan(y)) ? std::numeric_limits<A>::quiet_NaN() : std::min(x, y);
    }
  } else {
    const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (kind) {
      case PK_REDUCE_KIND_SUM:
        return static_cast<A>(ux + uy);
      case PK_REDUCE_KIND_PROD:
        return static_cast<A>(ux * uy);
      case PK_REDUCE_KIND_AMAX:
        return std::max(x, y);
      default:
        return std::min(x, y);
    }
  }
}

pk_status k_scatter_reduce(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_scatter_reduce>(l);
  const View base = kit::view_of(l.inputs[0]), index = kit::view_of(l.inputs[1]), src = kit::view_of(l.inputs[2]);
  const View out = kit::view_of(l.outputs[0]);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (!is_real_v<T>) {
        return PK_UNIMPLEMENTED;
      } else {
        using A = acc_t<T>;
        // Accumulate per output position (row-major linear index), then store only the positions touched.
        std::vector<A> acc(static_cast<size_t>(out.numel));
        std::vector<uint8_t> touched(static_cast<size_t>(out.numel), 0);
        int64_t dense[PK_MAX_RANK], lin_st[PK_MAX_RANK];
        dense_strides(out.shape, out.ndim, dense);
        for (int32_t d = 0; d < out.ndim; ++d) lin_st[d] = d == a.dim ? 0 : dense[d];
        const int64_t extent = out.shape[a.dim];
        walk<3>(index.shape, index.ndim, {index.strides, src.strides, lin_st}, {0, 0, 0}, 0, index.numel,
                [&](const std::array<int64_t, 3> &o) {
                  const int64_t v = read_index(index, o[0]);
                  if (v < 0 || v >= extent) return;
                  const size_t p = static_cast<size_t>(o[2] + v * dense[a.dim]);
                  const A x = to_acc(*elem<T>(src.base, o[1]));
                  if (touched[p]) {
                    acc[p] = combine(a.reduce, acc[p], x);
                  } else {
                    touched[p] = 1;
                    acc[p] =
                        a.include_self
                            ? combine(a.reduce,
                                      to_acc(*elem<T>(base.base, kit::offset_of(base, o[2] + v * dense[a.dim]))), x)
                            : x;
                  }
                });
        copy_view(out, base);
        walk<2>(out.shape, out.ndim, {out.strides, dense}, {0, 0}, 0, out.numel, [&](const std::array<int64_t, 2> &o) {
          if (touched[static_cast<size_t>(o[1])])
            *elem<T>(out.base, o[0]) = from_acc<T>(acc[static_cast<size_t>(o[1])]);
        });
        return PK_OK;
      }
    });
  });
}

pk_status k_index_select(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_index_select>(l);
  const View in = kit::view_of(l.inputs[0]), index = kit::view_of(l.inputs[1]), out = kit::view_of(l.outputs[0]);
  const int64_t dim = a.dim, extent = in.shape[dim], step = in.strides[dim];
  int64_t in_st[PK_MAX_RANK], ix_st[PK_MAX_RANK];
  for (int32_t d = 0; d < in.ndim; ++d) {
    in_st[d] = d == dim ? 0 : in.strides[d];
    ix_st[d] = d == dim ? index.strides[0] : 0;
  }
  return by_size(out.esize, [&](auto tag) -> pk_status {
    using E = decltype(tag);
    parallel_for(0, out.numel, kCopyGrain, [&](int64_t lo, int64_t hi) {
      walk<3>(out.shape, out.ndim, {out.strides, in_st, ix_st}, {0, 0, 0}, lo, hi,
              [&](const std::array<int64_t, 3> &o) {
                const int64_t v = read_index(index, o[2]);
                *elem<E>(out.base, o[0]) = (v >= 0 && v < extent) ? *elem<E>(in.base, o[1] + v * step) : E{};
              });
    });
    return PK_OK;
  });
}

pk_status k_index_put(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_index_put>(l);
  const View base = kit::view_of(l.inputs[0]), values = kit::view_of(l.inputs[1]), out = kit::view_of(l.outputs[0]);
  const int32_t k = static_cast<int32_t>(l.num_inputs) - 2;
  View idx[PK_MAX_RANK];
  for (int32_t j = 0; j < k; ++j) idx[j] = kit::view_of(l.inputs[2 + j]);
  const int64_t len = idx[0].shape[0];
  // The block each index row addresses: the trailing axes a.shape[k:].
  const int32_t rest_nd = out.ndim - k;
  int64_t rest_shape[PK_MAX_RANK] = {0}, rest_out[PK_MAX_RANK] = {0}, rest_val[PK_MAX_RANK] = {0};
  for (int32_t d = 0; d < rest_nd; ++d) {
    rest_shape[d] = out.shape[k + d];
    rest_out[d] = out.strides[k + d];
    rest_val[d] = values.strides[1 + d];
  }
  const int64_t rest_n = numel_of(rest_shape, rest_nd);
  // Offset (through `strides`) of row l's block, or -1 when one of its indices is out of range.
  auto row_offset = [&](int64_t row, const int64_t *strides) -> int64_t {
    int64_t off = 0;
    for (int32_t j = 0; j < k; ++j) {
      const int64_t v = read_index(idx[j], row * idx[j].strides[0]);
      if (v < 0 || v >= out.shape[j]) return -1;
      off += v * strides[j];
    }
    return off;
  };
  copy_view(out, base);
  if (rest_n == 0 || len == 0) return PK_OK;
  if (!a.accumulate) {
    // Serial over rows: duplicate rows overwrite in order.
    return by_size(out.esize, [&](auto tag) -> pk_status {
      using E = decltype(tag);
      for (int64_t row = 0; row < len; ++row) {
        const int64_t off = row_offset(row, out.strides);
        if (off < 0) continue;
        walk<2>(rest_shape, rest_nd, {rest_out, rest_val}, {off, row * values.strides[0]}, 0, rest_n,
                [&](const std::array<int64_t, 2> &o) { *elem<E>(out.base, o[0]) = *elem<E>(values.base, o[1]); });
      }
      return PK_OK;
    });
  }
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (!is_real_v<T>) {
        return PK_UNIMPLEMENTED;
      } else {
        using A = acc_t<T>;
        int64_t dense[PK_MAX_RANK];
        dense_strides(out.shape, out.ndim, dense);
        std::vector<A> acc(static_cast<size_t>(out.numel));
        walk<2>(out.shape, out.ndim, {out.strides, dense}, {0, 0}, 0, out.numel, [&](const std::array<int64_t, 2> &o) {
          acc[static_cast<size_t>(o[1])] = to_acc(*elem<T>(out.base, o[0]));
        });
        for (int64_t row = 0; row < len; ++row) {
          const int64_t off = row_offset(row, dense);
          if (off < 0) continue;
          walk<2>(rest_shape, rest_nd, {dense + k, rest_val}, {off, row * values.strides[0]}, 0, rest_n,
                  [&](const std::array<int64_t, 2> &o) {
                    A &dst = acc[static_cast<size_t>(o[0])];
                    dst = combine(PK_REDUCE_KIND_SUM, dst, to_acc(*elem<T>(values.base, o[1])));
                  });
        }
        walk<2>(out.shape, out.ndim, {out.strides, dense}, {0, 0}, 0, out.numel, [&](const std::array<int64_t, 2> &o) {
          *elem<T>(out.base, o[0]) = from_acc<T>(acc[static_cast<size_t>(o[1])]);
        });
        return PK_OK;
      }
    });
  });
}

// --- sorting ----------------------------------------------------------------------------------------------------

// Ascending order with NaN above +inf (NaNs compare equal to each other).
template <class C>
inline bool less_nan_last(C x, C y) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return false;
    if (std::isnan(y)) return true;
  }
  return x < y;
}

template <class C>
inline bool before(C x, C y, bool descending) {
  return descending ? less_nan_last(y, x) : less_nan_last(x, y);
}

// The lines along `dim` of input 0 and of each output (which may differ in extent along dim, as topk's do).
struct Lines {
  int32_t on = 0;
  int64_t oshape[PK_MAX_RANK] = {0};
  int64_t st[3][PK_MAX_RANK] = {{0}};
  int64_t outer = 1;
};

Lines lines_of(const View *const *views, int32_t nviews, int64_t dim) {
  Lines r;
  for (int32_t d = 0; d < views[0]->ndim; ++d) {
    if (d == dim) continue;
    r.oshape[r.on] = views[0]->shape[d];
    for (int32_t v = 0; v < nviews; ++v) r.st[v][r.on] = views[v]->strides[d];
    ++r.on;
    r.outer *= views[0]->shape[d];
  }
  return r;
}

// sort (k < 0: the whole line, stable) and topk (the first k of the order, ties by lower index).
template <class T>
pk_status sort_lines(const Launch &l, const View &in, const View &vals, const View &inds, int64_t dim, bool descending,
                     int64_t k) {
  using C = kit::compute_t<T>;
  const View *views[3] = {&in, &vals, &inds};
  const Lines ln = lines_of(views, 3, dim);
  const int64_t n = in.shape[dim], keep = k < 0 ? n : k;
  if (ln.outer == 0 || keep == 0) return PK_OK;
  const int64_t s_in = in.strides[dim], s_val = vals.strides[dim], s_ind = inds.strides[dim];
  return parallel_with_scratch(
      l, ln.outer, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)), [&](int64_t lo, int64_t hi) {
        std::vector<C> key(static_cast<size_t>(n));
        std::vector<int64_t> perm(static_cast<size_t>(n));
        walk<3>(ln.oshape, ln.on, {ln.st[0], ln.st[1], ln.st[2]}, {0, 0, 0}, lo, hi,
                [&](const std::array<int64_t, 3> &o) {
                  const T *src = elem<T>(in.base, o[0]);
                  for (int64_t i = 0; i < n; ++i) key[static_cast<size_t>(i)] = kit::load(src[i * s_in]);
                  std::iota(perm.begin(), perm.end(), int64_t{0});
                  if (k < 0) {
                    std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
                      return before(key[static_cast<size_t>(x)], key[static_cast<size_t>(y)], descending);
                    });
                  } else {
                    std::partial_sort(perm.begin(), perm.begin() + keep, perm.end(), [&](int64_t x, int64_t y) {
                      const C kx = key[static_cast<size_t>(x)], ky = key[static_cast<size_t>(y)];
                      if (before(kx, ky, descending)) return true;
                      if (before(ky, kx, descending)) return false;
                      return x < y;
                    });
                  }
                  T *dv = elem<T>(vals.base, o[1]);
                  int64_t *di = elem<int64_t>(inds.base, o[2]);
                  for (int64_t i = 0; i < keep; ++i) {
                    const int64_t j = perm[static_cast<size_t>(i)];
                    dv[i * s_val] = src[j * s_in];  // the stored element itself: NaN payloads and -0 survive
                    di[i * s_ind] = j;
                  }
                });
      });
}

pk_status k_sort(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_sort>(l);
  const View in = kit::view_of(l.inputs[0]), vals = kit::view_of(l.outputs[0]), inds = kit::view_of(l.outputs[1]);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (!is_real_v<T>) {
        return PK_UNIMPLEMENTED;
      } else {
        return sort_lines<T>(l, in, vals, inds, a.dim, a.descending != 0, -1);
      }
    });
  });
}

pk_status k_topk(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_topk>(l);
  const View in = kit::view_of(l.inputs[0]), vals = kit::view_of(l.outputs[0]), inds = kit::view_of(l.outputs[1]);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (!is_real_v<T>) {
        return PK_UNIMPLEMENTED;
      } else {
        return sort_lines<T>(l, in, vals, inds, a.dim, a.largest != 0, a.k);
      }
    });
  });
}

pk_status k_searchsorted(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_searchsorted>(l);
  const View seq = kit::view_of(l.inputs[0]), values = kit::view_of(l.inputs[1]), out = kit::view_of(l.outputs[0]);
  return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (!is_real_v<T>) {
      return PK_UNIMPLEMENTED;
    } else {
      using C = kit::compute_t<T>;
      const int64_t n = seq.shape[0], s = seq.strides[0];
      const T *sp = elem<T>(seq.base, 0);
      const bool right = a.right != 0;
      parallel_for(0, values.numel, 1024, [&](int64_t lo, int64_t hi) {
        walk<2>(values.shape, values.ndim, {values.strides, out.strides}, {0, 0}, lo, hi,
                [&](const std::array<int64_t, 2> &o) {
                  const C v = kit::load(*elem<T>(values.base, o[0]));
                  // First position whose element is not below v (left) or is above v (right), in the order of sort.
                  int64_t first = 0, count = n;
                  while (count > 0) {
                    const int64_t half = count / 2, mid = first + half;
                    const C x = kit::load(sp[mid * s]);
                    if (right ? !less_nan_last(v, x) : less_nan_last(x, v)) {
                      first = mid + 1;
                      count -= half + 1;
                    } else {
                      count = half;
                    }
                  }
                  *elem<int64_t>(out.base, o[1]) = first;
                });
      });
      return PK_OK;
    }
  });
}

}  // namespace

void register_shape_kernels(KernelRegistry &r) {
  r.add(PK_OP_BROADCAST_IN_DIM, k_broadcast_in_dim, kAll);
  r.add(PK_OP_CAT, k_cat, kAll);
  r.add(PK_OP_AS_STRIDED, k_as_strided, kAll);
  r.add(PK_OP_COLLAPSE_VIEW, k_linear, kAll);
  r.add(PK_OP_EXPAND_DIMS, k_linear, kAll);
  r.add(PK_OP_SLICE, k_slice, kAll);
  r.add(PK_OP_SLICE_IN_DIM, k_slice_in_dim, kAll);
  r.add(PK_OP_SPLIT_DIM, k_linear, kAll);
  r.add(PK_OP_SQUEEZE, k_linear, kAll);
  r.add(PK_OP_TRANSPOSE, k_transpose, kAll);
  r.add(PK_OP_VIEW_OF, k_linear, kAll);
  r.add(PK_OP_COPY_TO, k_copy_to, kAll);
  r.add(PK_OP_COLLAPSE, k_linear, kAll);
  r.add(PK_OP_RESHAPE, k_linear, kAll);
  r.add(PK_OP_REV, k_rev, kAll);
  r.add(PK_OP_AS_STRIDED_SCATTER, k_as_strided_scatter, kAll);
  r.add(PK_OP_PAD, k_pad, kAll);
  r.add(PK_OP_SLICE_SCATTER, k_slice_scatter, kAll);
  r.add(PK_OP_GATHER, k_gather, kAll);
  r.add(PK_OP_SCATTER, k_scatter, kAll);
  r.add(PK_OP_SCATTER_REDUCE, k_scatter_reduce, kReal);
  r.add(PK_OP_INDEX_SELECT, k_index_select, kAll);
  r.add(PK_OP_INDEX_PUT, k_index_put, kReal);
  r.add(PK_OP_SORT, k_sort, kReal);
  r.add(PK_OP_TOPK, k_topk, kReal);
  r.add(PK_OP_SEARCHSORTED, k_searchsorted, kReal);
}

}  // namespace pk::cpu
