// collectives_expectation.hpp — the independent side of every multi-rank collectives check, shared by the
// conformance suite's collectives stage (`primkit conformance --collectives`) and the multi-rank tests
// (tests/collectives): each rank derives every rank's inputs from (rank, index), so each rank computes the
// expected result of any collective by itself, in double or int64, and reads and writes every dtype's elements from
// plain numbers without PrimKit's own conversions.
//
// Header-only, so that a test binary can use it without linking the conformance library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "primkit/primkit_collectives.h"

namespace pk::conformance::collectives {

struct DtypeCase {
  int32_t id;
  pk_dtype desc;
  const char *name;
  uint32_t size;
};

inline const std::vector<DtypeCase> &all_dtypes() {
  static const std::vector<DtypeCase> v = {{PK_DTYPE_BOOL, PK_DTYPE_BOOL_DESC, "bool", 1},
                                           {PK_DTYPE_U8, PK_DTYPE_U8_DESC, "u8", 1},
                                           {PK_DTYPE_I8, PK_DTYPE_I8_DESC, "i8", 1},
                                           {PK_DTYPE_I16, PK_DTYPE_I16_DESC, "i16", 2},
                                           {PK_DTYPE_I32, PK_DTYPE_I32_DESC, "i32", 4},
                                           {PK_DTYPE_I64, PK_DTYPE_I64_DESC, "i64", 8},
                                           {PK_DTYPE_F16, PK_DTYPE_F16_DESC, "f16", 2},
                                           {PK_DTYPE_BF16, PK_DTYPE_BF16_DESC, "bf16", 2},
                                           {PK_DTYPE_F32, PK_DTYPE_F32_DESC, "f32", 4},
                                           {PK_DTYPE_F64, PK_DTYPE_F64_DESC, "f64", 8},
                                           {PK_DTYPE_C64, PK_DTYPE_C64_DESC, "c64", 8},
                                           {PK_DTYPE_C128, PK_DTYPE_C128_DESC, "c128", 16},
                                           {PK_DTYPE_F8E4M3FN, PK_DTYPE_F8E4M3FN_DESC, "f8e4m3fn", 1},
                                           {PK_DTYPE_F8E5M2, PK_DTYPE_F8E5M2_DESC, "f8e5m2", 1}};
  return v;
}
inline const DtypeCase &dtype_case(int32_t id) {
  for (const auto &d : all_dtypes())
    if (d.id == id) return d;
  return all_dtypes()[0];
}

enum class Kind { boolean, sint, uint, real, cplx };
inline Kind kind_of(int32_t id) {
  switch (id) {
    case PK_DTYPE_BOOL:
      return Kind::boolean;
    case PK_DTYPE_U8:
      return Kind::uint;
    case PK_DTYPE_I8:
    case PK_DTYPE_I16:
    case PK_DTYPE_I32:
    case PK_DTYPE_I64:
      return Kind::sint;
    case PK_DTYPE_C64:
    case PK_DTYPE_C128:
      return Kind::cplx;
    default:
      return Kind::real;
  }
}

inline const char *reduce_op_name(int32_t op) {
  static const char *const names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < PK_REDUCE_COUNT ? names[op] : "?";
}

// The reductions primkit_collectives.h defines for a dtype: no max/min for complex, no avg for bool.
inline bool reduction_defined(int32_t id, int32_t op) {
  if (kind_of(id) == Kind::cplx && (op == PK_REDUCE_MAX || op == PK_REDUCE_MIN)) return false;
  if (id == PK_DTYPE_BOOL && op == PK_REDUCE_AVG) return false;
  return true;
}

// Small binary floats decoded from their fields (sign, ebits of exponent with IEEE bias, mbits of mantissa). Only
// finite values are used here.
inline double decode_small(uint32_t code, int ebits, int mbits) {
  const uint32_t sign = (code >> (ebits + mbits)) & 1u;
  const int bias = (1 << (ebits - 1)) - 1;
  const int e = static_cast<int>((code >> mbits) & ((1u << ebits) - 1));
  const double m = static_cast<double>(code & ((1u << mbits) - 1));
  double v = e == 0 ? std::ldexp(m, 1 - bias - mbits) : std::ldexp(1.0 + m / (1 << mbits), e - bias);
  return sign ? -v : v;
}
inline void small_format(int32_t id, int &ebits, int &mbits) {
  ebits = id == PK_DTYPE_F16 ? 5 : id == PK_DTYPE_BF16 ? 8 : id == PK_DTYPE_F8E4M3FN ? 4 : 5;
  mbits = id == PK_DTYPE_F16 ? 10 : id == PK_DTYPE_BF16 ? 7 : id == PK_DTYPE_F8E4M3FN ? 3 : 2;
}
// The code of an exactly representable value (found by scanning the codes once per format). Throws
// std::invalid_argument for a value the format does not hold: the callers choose their values to be exact.
inline uint32_t encode_small(int32_t id, double v) {
  static std::map<int32_t, std::map<double, uint32_t>> tables;
  auto &table = tables[id];
  if (table.empty()) {
    int eb, mb;
    small_format(id, eb, mb);
    const uint32_t codes = 1u << (1 + eb + mb);
    const uint32_t top = (1u << eb) - 1;  // all-ones exponents hold inf/NaN (and e4m3fn's largest values)
    for (uint32_t c = codes; c-- > 0;) {
      if (((c >> mb) & top) == top) continue;
      table[decode_small(c, eb, mb)] = c;  // descending scan: +0 (code 0) is the one kept for 0
    }
  }
  auto it = table.find(v);
  if (it == table.end())
    throw std::invalid_argument("value " + std::to_string(v) + " is not representable in " + dtype_case(id).name);
  return it->second;
}

// Element values are doubles (real floats), pairs (complex) or exact integers (bool and integer dtypes).
struct Value {
  double re = 0, im = 0;
  int64_t i = 0;
};

inline void write_element(int32_t id, uint8_t *p, const Value &v) {
  switch (id) {
    case PK_DTYPE_BOOL:
      p[0] = v.i != 0;
      break;
    case PK_DTYPE_U8:
    case PK_DTYPE_I8:
    case PK_DTYPE_I16:
    case PK_DTYPE_I32:
    case PK_DTYPE_I64:
      std::memcpy(p, &v.i, dtype_case(id).size);
      break;  // little-endian low bytes: wraps
    case PK_DTYPE_F32: {
      float f = static_cast<float>(v.re);
      std::memcpy(p, &f, 4);
      break;
    }
    case PK_DTYPE_F64:
      std::memcpy(p, &v.re, 8);
      break;
    case PK_DTYPE_C64: {
      float f[2] = {static_cast<float>(v.re), static_cast<float>(v.im)};
      std::memcpy(p, f, 8);
      break;
    }
    case PK_DTYPE_C128: {
      double d[2] = {v.re, v.im};
      std::memcpy(p, d, 16);
      break;
    }
    default: {
      uint32_t code = encode_small(id, v.re);
      std::memcpy(p, &code, dtype_case(id).size);
      break;
    }
  }
}

inline Value read_element(int32_t id, const uint8_t *p) {
  Value v;
  switch (id) {
    case PK_DTYPE_BOOL:
    case PK_DTYPE_U8:
      v.i = p[0];
      break;
    case PK_DTYPE_I8:
      v.i = static_cast<int8_t>(p[0]);
      break;
    case PK_DTYPE_I16: {
      int16_t x;
      std::memcpy(&x, p, 2);
      v.i = x;
      break;
    }
    case PK_DTYPE_I32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      v.i = x;
      break;
    }
    case PK_DTYPE_I64:
      std::memcpy(&v.i, p, 8);
      break;
    case PK_DTYPE_F32: {
      float f;
      std::memcpy(&f, p, 4);
      v.re = f;
      break;
    }
    case PK_DTYPE_F64:
      std::memcpy(&v.re, p, 8);
      break;
    case PK_DTYPE_C64: {
      float f[2];
      std::memcpy(f, p, 8);
      v.re = f[0];
      v.im = f[1];
      break;
    }
    case PK_DTYPE_C128: {
      double d[2];
      std::memcpy(d, p, 16);
      v.re = d[0];
      v.im = d[1];
      break;
    }
    default: {
      uint32_t code = 0;
      std::memcpy(&code, p, dtype_case(id).size);
      int eb, mb;
      small_format(id, eb, mb);
      v.re = decode_small(code, eb, mb);
      break;
    }
  }
  return v;
}

// Integers wrap to their width, as the contract says: this is the expectation's own wrap (sign extension of the
// low bits), not PrimKit's.
inline int64_t wrap_to(int32_t id, int64_t x) {
  switch (id) {
    case PK_DTYPE_U8:
      return static_cast<uint8_t>(x);
    case PK_DTYPE_I8:
      return static_cast<int8_t>(x);
    case PK_DTYPE_I16:
      return static_cast<int16_t>(x);
    case PK_DTYPE_I32:
      return static_cast<int32_t>(x);
    default:
      return x;
  }
}

inline bool same_value(int32_t id, const Value &a, const Value &b) {
  switch (kind_of(id)) {
    case Kind::boolean:
    case Kind::sint:
    case Kind::uint:
      return a.i == b.i;
    case Kind::real:
      return a.re == b.re || (std::isnan(a.re) && std::isnan(b.re));
    case Kind::cplx:
      return a.re == b.re && a.im == b.im;
  }
  return false;
}

// Every digit a double needs (so that two different values never print alike), and the sign of zero.
inline std::string show_real(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

inline std::string show(int32_t id, const Value &v) {
  switch (kind_of(id)) {
    case Kind::boolean:
    case Kind::sint:
    case Kind::uint:
      return std::to_string(v.i);
    case Kind::real:
      return show_real(v.re);
    case Kind::cplx:
      return "(" + show_real(v.re) + "," + show_real(v.im) + ")";
  }
  return "?";
}

// Element i of rank r's input: integers in [-125, 125] (u8: [0, 250]) so that sums wrap and products overflow the
// narrow types; floats in [-2, 2], so that every sum, product and average of up to 4 ranks is exact in every float
// format (the order of the fold cannot matter: the reduction-order checks use inputs of their own).
inline Value input(int32_t id, int r, int64_t i) {
  Value v;
  const int64_t k = (i * 7 + r * 13 + 3);
  switch (kind_of(id)) {
    case Kind::boolean:
      v.i = (i + r) % 3 != 0;
      break;
    case Kind::uint:
      v.i = k % 251;
      break;
    case Kind::sint:
      v.i = k % 251 - 125;
      break;
    case Kind::real:
      v.re = static_cast<double>(k % 5 - 2);
      break;
    case Kind::cplx:
      v.re = static_cast<double>(k % 5 - 2);
      v.im = static_cast<double>((k + 1) % 5 - 2);
      break;
  }
  return v;
}

// Rank r's input of `count` elements, as bytes of the dtype.
inline std::vector<uint8_t> make_input(int32_t id, int r, int64_t count) {
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * dtype_case(id).size);
  for (int64_t i = 0; i < count; ++i) write_element(id, bytes.data() + i * dtype_case(id).size, input(id, r, i));
  return bytes;
}

// The expected reduction of element i of input() over ranks 0..n-1 (n <= 4 keeps every float result exact; larger
// rank counts stay exact for sum and avg of up to 2^20 ranks in f32 and wider, but not in the narrow formats).
inline Value expected_reduction(int32_t id, int32_t op, int n, int64_t i) {
  Value acc = input(id, 0, i);
  const Kind kind = kind_of(id);
  for (int r = 1; r < n; ++r) {
    Value v = input(id, r, i);
    switch (kind) {
      case Kind::boolean:
        acc.i = (op == PK_REDUCE_SUM || op == PK_REDUCE_MAX) ? (acc.i | v.i) : (acc.i & v.i);
        break;
      case Kind::sint:
      case Kind::uint:
        if (op == PK_REDUCE_SUM || op == PK_REDUCE_AVG) acc.i += v.i;
        // Products wrap: multiplying modulo 2^64 (unsigned, so no overflow) and wrapping each step to the
        // dtype's width gives the wrapped exact product for any rank count.
        if (op == PK_REDUCE_PROD)
          acc.i = wrap_to(id, static_cast<int64_t>(static_cast<uint64_t>(acc.i) * static_cast<uint64_t>(v.i)));
        if (op == PK_REDUCE_MAX) acc.i = std::max(acc.i, v.i);
        if (op == PK_REDUCE_MIN) acc.i = std::min(acc.i, v.i);
        break;
      case Kind::real:
        if (op == PK_REDUCE_SUM || op == PK_REDUCE_AVG) acc.re += v.re;
        if (op == PK_REDUCE_PROD) acc.re *= v.re;
        if (op == PK_REDUCE_MAX) acc.re = std::max(acc.re, v.re);
        if (op == PK_REDUCE_MIN) acc.re = std::min(acc.re, v.re);
        break;
      case Kind::cplx:
        if (op == PK_REDUCE_PROD) {
          double re = acc.re * v.re - acc.im * v.im, im = acc.re * v.im + acc.im * v.re;
          acc.re = re;
          acc.im = im;
        } else {
          acc.re += v.re;
          acc.im += v.im;
        }
        break;
    }
  }
  if (op == PK_REDUCE_AVG) {
    acc.i = acc.i / n;  // truncation toward zero, as C++ divides
    acc.re /= n;
    acc.im /= n;
  }
  if (kind == Kind::sint || kind == Kind::uint) acc.i = wrap_to(id, acc.i);
  return acc;
}

}  // namespace pk::conformance::collectives
