// coll_test_util.hpp — what the multi-rank collectives tests share: the process-wide runtime, device, stream and
// world communicator (one per rank, set up in main), device tensors, and an element model that writes and reads
// every dtype from plain doubles and integers without PrimKit's own conversions (the independent side of the
// comparison).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "primkit/primkit_collectives.h"

namespace pk::colltest {

struct World {
  pk_runtime_t runtime = nullptr;
  pk_device_t device = nullptr;
  pk_stream_t stream = nullptr;
  pk_comm_t comm = nullptr;
  int rank = 0;
  int size = 1;
  bool host_visible = false;
  std::string backend;
};
World &world();

inline pk_error_info last_error() {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  return e;
}

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

// Small binary floats decoded from their fields (sign, ebits of exponent with IEEE bias, mbits of mantissa), so
// the tests read f16/bf16/fp8 without PrimKit's conversion code. Only finite values are used here.
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
// The code of an exactly representable value (found by scanning the codes once per format).
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
  EXPECT_NE(it, table.end()) << "test value " << v << " is not representable";
  return it == table.end() ? 0 : it->second;
}

// Element values are doubles (bool, integers and real floats) or pairs (complex).
struct Value {
  double re = 0, im = 0;
  int64_t i = 0;  // integers and bool, exactly
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
      v.i = p[0];
      break;
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

// Integers wrap to their width, as the contract says; this is the test's own wrap (sign extension of the low bits).
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

inline std::string show(int32_t id, const Value &v) {
  switch (kind_of(id)) {
    case Kind::boolean:
    case Kind::sint:
    case Kind::uint:
      return std::to_string(v.i);
    case Kind::real:
      return std::to_string(v.re);
    case Kind::cplx:
      return "(" + std::to_string(v.re) + "," + std::to_string(v.im) + ")";
  }
  return "?";
}

// A dense device tensor of one dtype, on the world's device.
struct DeviceTensor {
  pk_buffer_t buffer = nullptr;
  std::vector<int64_t> shape;
  pk_tensor t{};
  uint64_t bytes = 0;
  DeviceTensor(int32_t dtype, std::vector<int64_t> shp) : shape(std::move(shp)) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    bytes = static_cast<uint64_t>(n) * dtype_case(dtype).size;
    EXPECT_EQ(pk_buffer_create(world().device, bytes ? bytes : 1, &buffer), PK_OK) << last_error().message;
    pk_buffer_tensor(buffer, dtype_case(dtype).desc, static_cast<int32_t>(shape.size()), shape.data(), nullptr, 0, &t);
  }
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;
  ~DeviceTensor() { pk_buffer_destroy(buffer); }
  void put(const std::vector<uint8_t> &host) {
    ASSERT_EQ(host.size(), bytes);
    if (bytes) {
      ASSERT_EQ(pk_copy_host_to_buffer(world().stream, buffer, 0, host.data(), bytes), PK_OK) << last_error().message;
    }
    ASSERT_EQ(pk_stream_synchronize(world().stream), PK_OK);
  }
  std::vector<uint8_t> get() {
    std::vector<uint8_t> host(bytes);
    if (bytes) {
      EXPECT_EQ(pk_copy_buffer_to_host(world().stream, host.data(), buffer, 0, bytes), PK_OK) << last_error().message;
    }
    EXPECT_EQ(pk_stream_synchronize(world().stream), PK_OK);
    return host;
  }
};

}  // namespace pk::colltest
