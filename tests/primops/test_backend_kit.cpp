// backend_kit.hpp's 8/16-bit float conversions (bit-level, used by every f16/bf16/fp8 kernel) against a
// straightforward reference written here with frexp/ldexp/nearbyint, over every bit pattern of each format and
// every midpoint between neighbours (the round-to-nearest-even ties), plus hand-checked encodings; and the slot
// glue (copy_out, write_backend_info, StickyError, catch_exceptions, api_table) that every backend builds on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "primkit/backend_kit.hpp"

namespace {

struct Format {
  const char *name;
  int ebits, mbits;
  bool has_inf;
  uint32_t nan_bits;
};
const Format kFormats[] = {{"f16", 5, 10, true, 0x7e00u},
                           {"bf16", 8, 7, true, 0x7fc0u},
                           {"e4m3fn", 4, 3, false, 0x7fu},
                           {"e5m2", 5, 2, true, 0x7eu}};

double ref_decode(uint32_t bits, const Format &f) {
  const int total = 1 + f.ebits + f.mbits, bias = (1 << (f.ebits - 1)) - 1;
  const bool neg = (bits >> (total - 1)) & 1u;
  const uint32_t e = (bits >> f.mbits) & ((1u << f.ebits) - 1), m = bits & ((1u << f.mbits) - 1);
  double v;
  if (f.has_inf && e == (1u << f.ebits) - 1)
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (!f.has_inf && e == (1u << f.ebits) - 1 && m == (1u << f.mbits) - 1)
    v = std::numeric_limits<double>::quiet_NaN();
  else if (e == 0)
    v = std::ldexp(static_cast<double>(m), 1 - bias - f.mbits);
  else
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.mbits), static_cast<int>(e) - bias);
  return neg ? -v : v;
}

// Rounds by scaling to the quantum of the value's binade and nearbyint (ties to even in the default mode).
uint32_t ref_encode(double v, const Format &f, bool saturate) {
  const int total = 1 + f.ebits + f.mbits, bias = (1 << (f.ebits - 1)) - 1;
  const uint32_t sign = std::signbit(v) ? (1u << (total - 1)) : 0u;
  if (std::isnan(v)) return sign | f.nan_bits;
  const int emax = f.has_inf ? ((1 << f.ebits) - 2) - bias : ((1 << f.ebits) - 1) - bias;
  const double max_finite = f.has_inf ? std::ldexp(2.0 - std::ldexp(1.0, -f.mbits), emax)
                                      : std::ldexp(2.0 - std::ldexp(1.0, 1 - f.mbits), emax);
  auto overflow = [&] {
    return (f.has_inf && !saturate) ? (sign | (((1u << f.ebits) - 1) << f.mbits))
                                    : (sign | ref_encode(max_finite, f, true));
  };
  const double a = std::fabs(v);
  if (std::isinf(a)) return overflow();
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  const int ue = std::max(e - 1, 1 - bias);
  const double q = std::ldexp(1.0, ue - f.mbits);
  const double r = std::nearbyint(a / q) * q;
  if (r > max_finite) return overflow();
  if (r == 0) return sign;
  std::frexp(r, &e);
  if (e - 1 < 1 - bias) return sign | static_cast<uint32_t>(r / std::ldexp(1.0, 1 - bias - f.mbits));
  const uint32_t mant = static_cast<uint32_t>((r / std::ldexp(1.0, e - 1) - 1.0) * std::ldexp(1.0, f.mbits));
  return sign | (static_cast<uint32_t>(e - 1 + bias) << f.mbits) | mant;
}

TEST(BackendKit, SmallFloatDecodeMatchesReferenceForEveryBitPattern) {
  for (const Format &f : kFormats) {
    const uint32_t count = 1u << (1 + f.ebits + f.mbits);
    for (uint32_t b = 0; b < count; ++b) {
      const double got = pk::kit::detail::decode_small_float(b, f.ebits, f.mbits, f.has_inf), want = ref_decode(b, f);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << f.name << " bits " << b;
      } else {
        ASSERT_EQ(got, want) << f.name << " bits " << b;
        ASSERT_EQ(std::signbit(got), std::signbit(want)) << f.name << " bits " << b;
      }
    }
  }
}

TEST(BackendKit, SmallFloatEncodeMatchesReferenceOnValuesTiesAndNeighbours) {
  for (const Format &f : kFormats) {
    const uint32_t half_count = 1u << (f.ebits + f.mbits);  // non-negative patterns
    std::vector<double> probes;
    for (uint32_t b = 0; b < half_count; ++b) {
      const double v = ref_decode(b, f);
      if (std::isnan(v)) continue;
      probes.push_back(v);
      const double next = ref_decode(b + 1, f);
      // Midpoint to the next value up (for the largest finite: half a quantum above it), and its neighbours.
      const double mid = std::isfinite(next) ? (v + next) / 2 : v + (v - ref_decode(b - 1, f)) / 2;
      if (std::isfinite(v)) {
        for (double p : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY), std::nextafter(v, INFINITY)})
          probes.push_back(p);
      }
    }
    for (double p : {1e300, 1e-300, 4.9e-324, 0x1p-1022, 1e5, 1e10, 0.1, 1.0 / 3}) probes.push_back(p);
    probes.push_back(std::numeric_limits<double>::quiet_NaN());
    for (double p : probes) {
      for (double s : {1.0, -1.0}) {
        for (bool saturate : {false, true}) {
          const double v = p * s;
          ASSERT_EQ(pk::kit::detail::encode_small_float(v, f.ebits, f.mbits, f.has_inf, saturate, f.nan_bits),
                    ref_encode(v, f, saturate))
              << f.name << " value " << v << " saturate " << saturate;
        }
      }
    }
  }
}

TEST(BackendKit, SmallFloatHandCheckedEncodings) {
  using pk::kit::bfloat16;
  using pk::kit::f8e4m3fn;
  using pk::kit::f8e5m2;
  using pk::kit::half;
  EXPECT_EQ(bfloat16(1.0).bits, 0x3f80);
  EXPECT_EQ(bfloat16(-2.0).bits, 0xc000);
  EXPECT_EQ(bfloat16(1.0 + 0x1p-8).bits, 0x3f80);      // tie: to even (down)
  EXPECT_EQ(bfloat16(1.0 + 3 * 0x1p-8).bits, 0x3f82);  // tie: to even (up)
  EXPECT_EQ(half(65504.0).bits, 0x7bff);               // largest finite
  EXPECT_EQ(half(65520.0).bits, 0x7c00);               // half a quantum above it: ties to even -> inf
  EXPECT_EQ(half(0x1p-24).bits, 0x0001);               // smallest subnormal
  EXPECT_EQ(half(0x1p-25).bits, 0x0000);               // half of it: tie to even -> 0
  EXPECT_EQ(half(0x1.8p-25).bits, 0x0001);             // above half -> smallest subnormal
  EXPECT_EQ(f8e4m3fn(448.0).bits, 0x7e);               // largest finite (no inf in e4m3fn)
  EXPECT_EQ(f8e4m3fn(1e6).bits, 0x7e);                 // saturates
  EXPECT_EQ(f8e5m2(57344.0).bits, 0x7b);               // largest finite
  EXPECT_EQ(f8e5m2(-std::numeric_limits<double>::infinity()).bits, 0xfc);
  EXPECT_EQ(half::from_bits(0x3555).to_double(), 0.333251953125);  // 0x3555 = 1.0101010101b x 2^-2
  EXPECT_EQ(f8e4m3fn::from_bits(0x01).to_double(), 0x1p-9);        // smallest e4m3fn subnormal
}

}  // namespace

namespace {

// The DLPack descriptor of each PrimKit dtype, written out by hand from the ABI header's table.
TEST(BackendKit, DtypeIdOfEveryDescriptorAndOfNone) {
  struct Row {
    uint8_t code, bits;
    int32_t id;
  };
  const Row rows[] = {{PK_DTYPE_CODE_BOOL, 8, PK_DTYPE_BOOL},
                      {PK_DTYPE_CODE_UINT, 8, PK_DTYPE_U8},
                      {PK_DTYPE_CODE_INT, 8, PK_DTYPE_I8},
                      {PK_DTYPE_CODE_INT, 16, PK_DTYPE_I16},
                      {PK_DTYPE_CODE_INT, 32, PK_DTYPE_I32},
                      {PK_DTYPE_CODE_INT, 64, PK_DTYPE_I64},
                      {PK_DTYPE_CODE_FLOAT, 16, PK_DTYPE_F16},
                      {PK_DTYPE_CODE_BFLOAT, 16, PK_DTYPE_BF16},
                      {PK_DTYPE_CODE_FLOAT, 32, PK_DTYPE_F32},
                      {PK_DTYPE_CODE_FLOAT, 64, PK_DTYPE_F64},
                      {PK_DTYPE_CODE_COMPLEX, 64, PK_DTYPE_C64},
                      {PK_DTYPE_CODE_COMPLEX, 128, PK_DTYPE_C128},
                      {PK_DTYPE_CODE_FLOAT8_E4M3FN, 8, PK_DTYPE_F8E4M3FN},
                      {PK_DTYPE_CODE_FLOAT8_E5M2, 8, PK_DTYPE_F8E5M2}};
  int matched = 0;
  // Every (code, bits) pair: exactly the rows above name a dtype, lanes 1 only.
  for (unsigned code = 0; code < 256; ++code) {
    for (unsigned bits = 0; bits < 256; ++bits) {
      int32_t want = -1;
      for (const Row &r : rows)
        if (r.code == code && r.bits == bits) want = r.id;
      const pk_dtype d{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
      ASSERT_EQ(pk::kit::dtype_id(d), want) << "code " << code << " bits " << bits;
      matched += want >= 0;
      if (want >= 0) {
        EXPECT_EQ(pk::kit::dtype_id(pk_dtype{d.code, d.bits, 2}), -1);
        EXPECT_EQ(pk::kit::dtype_id(pk_dtype{d.code, d.bits, 0}), -1);
      }
    }
  }
  EXPECT_EQ(matched, PK_DTYPE_COUNT);
}

// An older host's struct is shorter: copy_out must write only the prefix it knows and say so in struct_size.
TEST(BackendKit, CopyOutRespectsTheHostsStructSize) {
  pk_backend_info full;
  PK_STRUCT_INIT(full);
  ASSERT_EQ(pk::kit::write_backend_info(&full, "acme", "Acme Corp", 2, 3, 4), PK_OK);
  EXPECT_STREQ(full.name, "acme");
  EXPECT_STREQ(full.vendor, "Acme Corp");
  EXPECT_EQ(full.version_major, 2u);
  EXPECT_EQ(full.version_minor, 3u);
  EXPECT_EQ(full.version_patch, 4u);
  EXPECT_EQ(full.abi_version, static_cast<uint32_t>(PK_ABI_VERSION));
  EXPECT_EQ(full.struct_size, sizeof full);

  pk_backend_info older;
  std::memset(&older, 0x5a, sizeof older);
  const uint32_t prefix = offsetof(pk_backend_info, vendor);
  older.struct_size = prefix;
  pk::kit::copy_out(full, &older);
  EXPECT_EQ(older.struct_size, prefix);
  EXPECT_STREQ(older.name, "acme");
  EXPECT_EQ(static_cast<unsigned char>(older.vendor[0]), 0x5au) << "wrote past the host's struct_size";
}

// primkit.h: once failed, a stream stays failed; PK_UNIMPLEMENTED and PK_NOT_READY are not failures.
TEST(BackendKit, StickyErrorKeepsTheFirstFailureAndItsMessage) {
  pk::kit::StickyError sticky;
  EXPECT_FALSE(sticky.failed());
  EXPECT_EQ(sticky.check("acme"), PK_OK);
  EXPECT_EQ(sticky.record(pk::kit::fail(PK_UNIMPLEMENTED, PK_OP_ADD, -1, "declined")), PK_UNIMPLEMENTED);
  EXPECT_EQ(sticky.record(PK_NOT_READY), PK_NOT_READY);
  EXPECT_FALSE(sticky.failed());
  EXPECT_EQ(sticky.record(pk::kit::fail(PK_ERROR_DEVICE, PK_OP_ADD, -1, "acme: the device fell over")),
            PK_ERROR_DEVICE);
  EXPECT_TRUE(sticky.failed());
  EXPECT_EQ(sticky.status, PK_ERROR_DEVICE);
  EXPECT_EQ(sticky.check("acme"), PK_ERROR_STREAM_FAILED);
  EXPECT_STREQ(pk::kit::last_error().message, "acme: stream failed earlier: acme: the device fell over");
  EXPECT_EQ(pk::kit::last_error().op_id, static_cast<uint32_t>(PK_OP_NONE));
}

TEST(BackendKit, CatchExceptionsTurnsThemIntoStatuses) {
  EXPECT_EQ(pk::kit::catch_exceptions(PK_OP_NONE, "acme: open", [] { return PK_OK; }), PK_OK);
  EXPECT_EQ(pk::kit::catch_exceptions(PK_OP_NONE, "acme: open", []() -> pk_status { throw std::bad_alloc(); }),
            PK_ERROR_OUT_OF_MEMORY);
  EXPECT_STREQ(pk::kit::last_error().message, "acme: open: out of host memory");
  EXPECT_EQ(pk::kit::catch_exceptions(PK_OP_ADD, "acme: add", []() -> pk_status { throw std::runtime_error("boom"); }),
            PK_ERROR_INTERNAL);
  EXPECT_STREQ(pk::kit::last_error().message, "acme: add: unexpected exception");
  EXPECT_EQ(pk::kit::last_error().op_id, static_cast<uint32_t>(PK_OP_ADD));
}

TEST(BackendKit, ApiTableHasOnlyTheKitsGetLastError) {
  const pk_backend_api api = pk::kit::api_table();
  EXPECT_EQ(api.struct_size, sizeof api);
  EXPECT_EQ(api.abi_version, static_cast<uint32_t>(PK_ABI_VERSION));
  EXPECT_EQ(api.get_last_error, &pk::kit::last_error_slot);
  EXPECT_EQ(api.open, nullptr);
  EXPECT_EQ(api.op_launch, nullptr);
  EXPECT_EQ(api.fusion_offer, nullptr);

  pk::kit::fail(PK_ERROR_DEVICE, PK_OP_ADD, 1, "acme: %s", "lost");
  pk_error_info info;
  PK_STRUCT_INIT(info);
  ASSERT_EQ(api.get_last_error(nullptr, &info), PK_OK);
  EXPECT_EQ(info.status, PK_ERROR_DEVICE);
  EXPECT_EQ(info.arg_index, 1);
  EXPECT_STREQ(info.message, "acme: lost");
}

}  // namespace
