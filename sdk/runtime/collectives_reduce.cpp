// collectives_reduce.cpp — the local reduction of the collectives extension: element i of the result is
// ((x0 op x1) op x2) ... op x(n-1) in rank order, in the dtype's compute type (primkit_collectives.h states the
// contract). Engines only move bytes; this is the one place where values are combined, so every rank that
// reduces the same rows gets the same bits, whatever engine carried them.
#include <cmath>
#include <complex>
#include <cstring>
#include <type_traits>

#include "collectives_internal.hpp"
#include "primkit/backend_kit.hpp"

namespace pk::rt::coll {
namespace {

using pk::kit::boolean;
using pk::kit::compute_t;

// Elements are reduced in blocks: the accumulators of a block stay in registers or L1 while the rows stream by,
// and each inner loop is a plain elementwise loop the compiler vectorizes.
constexpr int64_t kBlock = 512;

// Accumulates in C over the rows of one block, then stores with `finish`.
template <class T, class C, class Init, class Combine, class Finish>
void reduce_blocks(const uint8_t *rows, uint64_t row_stride, int32_t nrows, int64_t count, uint8_t *out, Init init,
                   Combine combine, Finish finish) {
  C acc[kBlock];
  for (int64_t base = 0; base < count; base += kBlock) {
    const int64_t m = count - base < kBlock ? count - base : kBlock;
    const T *row0 = reinterpret_cast<const T *>(rows) + base;
    for (int64_t j = 0; j < m; ++j) acc[j] = init(row0[j]);
    for (int32_t r = 1; r < nrows; ++r) {
      const T *row = reinterpret_cast<const T *>(rows + static_cast<uint64_t>(r) * row_stride) + base;
      for (int64_t j = 0; j < m; ++j) acc[j] = combine(acc[j], row[j]);
    }
    T *dst = reinterpret_cast<T *>(out) + base;
    for (int64_t j = 0; j < m; ++j) dst[j] = finish(acc[j]);
  }
}

void reduce_bool(const uint8_t *rows, uint64_t stride, int32_t n, int64_t count, int32_t op, uint8_t *out) {
  const bool any = op == PK_REDUCE_SUM || op == PK_REDUCE_MAX;
  auto init = [](boolean v) -> uint8_t { return v.v != 0; };
  auto fin = [](uint8_t v) { return boolean{v}; };
  if (any) {
    reduce_blocks<boolean, uint8_t>(
        rows, stride, n, count, out, init, [](uint8_t a, boolean b) -> uint8_t { return a | (b.v != 0); }, fin);
  } else {
    reduce_blocks<boolean, uint8_t>(
        rows, stride, n, count, out, init, [](uint8_t a, boolean b) -> uint8_t { return a & (b.v != 0); }, fin);
  }
}

template <class T>
void reduce_integer(const uint8_t *rows, uint64_t stride, int32_t n, int64_t count, int32_t op, uint8_t *out) {
  using U = std::make_unsigned_t<T>;  // wrap-around without signed overflow
  auto id = [](T v) { return v; };
  switch (op) {
    case PK_REDUCE_SUM:
      reduce_blocks<T, T>(
          rows, stride, n, count, out, id,
          [](T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); }, id);
      break;
    case PK_REDUCE_PROD:
      reduce_blocks<T, T>(
          rows, stride, n, count, out, id,
          [](T a, T b) {
            // Promoted to unsigned int at least, so u16*u16 cannot overflow a signed int.
            using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
            return static_cast<T>(
                static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
          },
          id);
      break;
    case PK_REDUCE_MAX:
      reduce_blocks<T, T>(
          rows, stride, n, count, out, id, [](T a, T b) { return b > a ? b : a; }, id);
      break;
    case PK_REDUCE_MIN:
      reduce_blocks<T, T>(
          rows, stride, n, count, out, id, [](T a, T b) { return b < a ? b : a; }, id);
      break;
    default: {  // avg: the exact sum, truncated toward zero
      const __int128 ranks = n;
      reduce_blocks<T, __int128>(
          rows, stride, n, count, out, [](T v) { return static_cast<__int128>(v); },
          [](__int128 a, T b) { return a + static_cast<__int128>(b); },
          [ranks](__int128 s) { return static_cast<T>(s / ranks); });
      break;
    }
  }
}

template <class T>
void reduce_float(const uint8_t *rows, uint64_t stride, int32_t n, int64_t count, int32_t op, uint8_t *out) {
  using C = compute_t<T>;
  auto init = [](T v) -> C { return pk::kit::load(v); };
  auto store = [](C c) { return pk::kit::store_as<T>(c); };
  switch (op) {
    case PK_REDUCE_SUM:
      reduce_blocks<T, C>(
          rows, stride, n, count, out, init, [](C a, T b) { return a + pk::kit::load(b); }, store);
      break;
    case PK_REDUCE_PROD:
      reduce_blocks<T, C>(
          rows, stride, n, count, out, init, [](C a, T b) { return a * pk::kit::load(b); }, store);
      break;
    case PK_REDUCE_MAX:
      // NaN sticks (the lowest rank's); on ties the earlier rank's value stays, so -0 vs +0 is decided by rank.
      reduce_blocks<T, C>(
          rows, stride, n, count, out, init,
          [](C a, T b) {
            C v = pk::kit::load(b);
            return (a != a) ? a : ((v != v || v > a) ? v : a);
          },
          store);
      break;
    case PK_REDUCE_MIN:
      reduce_blocks<T, C>(
          rows, stride, n, count, out, init,
          [](C a, T b) {
            C v = pk::kit::load(b);
            return (a != a) ? a : ((v != v || v < a) ? v : a);
          },
          store);
      break;
    default: {
      const C ranks = static_cast<C>(n);
      reduce_blocks<T, C>(
          rows, stride, n, count, out, init, [](C a, T b) { return a + pk::kit::load(b); },
          [ranks](C s) { return pk::kit::store_as<T>(s / ranks); });
      break;
    }
  }
}

template <class T>
void reduce_complex(const uint8_t *rows, uint64_t stride, int32_t n, int64_t count, int32_t op, uint8_t *out) {
  using R = typename T::value_type;
  auto id = [](T v) { return v; };
  if (op == PK_REDUCE_SUM) {
    reduce_blocks<T, T>(
        rows, stride, n, count, out, id, [](T a, T b) { return a + b; }, id);
  } else if (op == PK_REDUCE_PROD) {
    reduce_blocks<T, T>(
        rows, stride, n, count, out, id, [](T a, T b) { return a * b; }, id);
  } else {  // avg (max/min are refused by validation)
    const R ranks = static_cast<R>(n);
    reduce_blocks<T, T>(
        rows, stride, n, count, out, id, [](T a, T b) { return a + b; },
        [ranks](T s) { return T(s.real() / ranks, s.imag() / ranks); });
  }
}

}  // namespace

bool reduce_supported(int32_t dtype, int32_t op, const char **why) {
  if (op < 0 || op >= PK_REDUCE_COUNT) {
    *why = "is no PK_REDUCE_* value";
    return false;
  }
  if (pk::meta::is_complex(dtype) && (op == PK_REDUCE_MAX || op == PK_REDUCE_MIN)) {
    *why = "is not defined for complex dtypes (they have no order)";
    return false;
  }
  if (dtype == PK_DTYPE_BOOL && op == PK_REDUCE_AVG) {
    *why = "is not defined for bool";
    return false;
  }
  return true;
}

void reduce_rows(int32_t dtype, int32_t op, const uint8_t *rows, uint64_t row_stride, int32_t nrows, int64_t count,
                 uint8_t *out) {
  if (count <= 0) return;
  pk::kit::dispatch_dtype(dtype, [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, boolean>) {
      reduce_bool(rows, row_stride, nrows, count, op, out);
    } else if constexpr (pk::kit::is_complex<T>::value) {
      reduce_complex<T>(rows, row_stride, nrows, count, op, out);
    } else if constexpr (std::is_integral_v<T>) {
      reduce_integer<T>(rows, row_stride, nrows, count, op, out);
    } else {
      reduce_float<T>(rows, row_stride, nrows, count, op, out);
    }
    return PK_OK;
  });
}

}  // namespace pk::rt::coll
