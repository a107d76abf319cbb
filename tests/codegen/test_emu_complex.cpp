// Complex kernels (c64, c128) on cuda-emu against independent values: products and quotients worked by hand, and
// for the correctly rounded c128 ops (abs, div, reciprocal, sqrt) results computed with exact rational arithmetic
// or 600-bit mpmath and rounded once to f64, written here as bit patterns. Several inputs lie within 2^-12 ulp of
// a rounding midpoint, one is an exact tie and some within 2^-50 ulp, so that the generator's exact decision of
// doubtful roundings runs. The conformance suite checks every complex op against the oracle on top of this.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "complex_arith_cases.hpp"
#include "complex_elementary_cases.hpp"
#include "emu_backend_fixture.hpp"
#include "pow_huge_phase_cases.hpp"
#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

namespace {

class EmuComplex : public pk::test::EmuBackendTest {
 public:
  struct Tensor {
    int32_t dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };

 protected:
  // Runs one op on host tensors; returns the output's bytes (empty on failure, with a test failure recorded).
  static std::vector<uint8_t> run(uint32_t op_id, const std::vector<Tensor> &in, int32_t out_dt,
                                  const std::vector<int64_t> &out_shape, const void *attrs = nullptr) {
    std::vector<pk_buffer_t> bufs;
    std::vector<pk_tensor> tin(in.size());
    for (size_t k = 0; k < in.size(); ++k) {
      pk_buffer_t b = nullptr;
      EXPECT_EQ(pk_buffer_create(dev_, in[k].bytes.size(), &b), PK_OK);
      bufs.push_back(b);
      EXPECT_EQ(pk_buffer_tensor(b, pk::meta::dtype_desc(in[k].dtype), static_cast<int32_t>(in[k].shape.size()),
                                 in[k].shape.data(), nullptr, 0, &tin[k]),
                PK_OK);
      EXPECT_EQ(pk_copy_host_to_buffer(stream_, b, 0, in[k].bytes.data(), in[k].bytes.size()), PK_OK);
    }
    int64_t n = 1;
    for (int64_t e : out_shape) n *= e;
    const size_t out_bytes = static_cast<size_t>(n) * pk::meta::dtype_size(out_dt);
    pk_buffer_t ob = nullptr;
    EXPECT_EQ(pk_buffer_create(dev_, out_bytes, &ob), PK_OK);
    pk_tensor tout;
    EXPECT_EQ(pk_buffer_tensor(ob, pk::meta::dtype_desc(out_dt), static_cast<int32_t>(out_shape.size()),
                               out_shape.data(), nullptr, 0, &tout),
              PK_OK);
    std::vector<uint8_t> out(out_bytes);
    const pk_status st = pk_launch(stream_, op_id, tin.data(), static_cast<uint32_t>(tin.size()), &tout, 1, attrs);
    EXPECT_EQ(st, PK_OK) << pk::meta::op_name(op_id);
    EXPECT_EQ(pk_copy_buffer_to_host(stream_, out.data(), ob, 0, out_bytes), PK_OK);
    EXPECT_EQ(pk_stream_synchronize(stream_), PK_OK);
    for (pk_buffer_t b : bufs) pk_buffer_destroy(b);
    pk_buffer_destroy(ob);
    if (st != PK_OK) out.clear();
    return out;
  }
};

double d_of(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
uint64_t bits_of(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> values_of(const std::vector<uint8_t> &b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}
// c128 values as (re, im) bit patterns, one element per pair.
EmuComplex::Tensor c128(const std::vector<uint64_t> &parts) {
  return {PK_DTYPE_C128, {static_cast<int64_t>(parts.size() / 2)}, bytes_of(parts)};
}
std::string hex(uint64_t b) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(b));
  return buf;
}

TEST_F(EmuComplex, C128DivAndReciprocalAreCorrectlyRounded) {
  // (a c + b d) / (c^2 + d^2) and (b c - a d) / (c^2 + d^2) with Python's fractions: the real part lies 0.0005 ulp
  // above a midpoint (extended precision rounds it down); the reciprocal's imaginary part is subnormal.
  const std::vector<uint64_t> a = {0xc0360fd228354001, bits_of(-1.5), bits_of(6.0), bits_of(-0.0)};
  const std::vector<uint64_t> b = {0x3fae7de7a4c24538, bits_of(-2.0), bits_of(0.0), bits_of(3.0)};
  auto q = values_of<uint64_t>(run(PK_OP_DIV, {c128(a), c128(b)}, PK_DTYPE_C128, {2}));
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(hex(q[0]), hex(0x3fdaf43f303108a1));
  EXPECT_EQ(hex(q[1]), hex(0xc026163dea51bc72));
  EXPECT_EQ(d_of(q[2]), 0.0);  // (6 - 0i) / 3i = -2i
  EXPECT_EQ(d_of(q[3]), -2.0);
  // (2^-1074 + 0.5i) / (2^-1074 - i): the imaginary part 1.5 2^-1074 / (1 + 2^-2148) lies just below a subnormal
  // tie (c^2 underflows in f64 but still decides it); a quotient beyond DBL_MAX overflows to infinities.
  const std::vector<uint64_t> a2 = {0x1, bits_of(0.5), 0xbfd0ede8a3f78659, 0x7fefffffffffffff};
  const std::vector<uint64_t> b2 = {0x1, bits_of(-1.0), 0x1, 0x8000000000000001};
  auto q2 = values_of<uint64_t>(run(PK_OP_DIV, {c128(a2), c128(b2)}, PK_DTYPE_C128, {2}));
  ASSERT_EQ(q2.size(), 4u);
  EXPECT_EQ(d_of(q2[0]), -0.5);
  EXPECT_EQ(hex(q2[1]), hex(0x1));
  EXPECT_EQ(d_of(q2[2]), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(d_of(q2[3]), std::numeric_limits<double>::infinity());
  auto r =
      values_of<uint64_t>(run(PK_OP_RECIPROCAL, {c128({0x3f9718e38321c234, 0x8000000000000001})}, PK_DTYPE_C128, {1}));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(hex(r[0]), hex(0x40462acb8c6a00b1));
  EXPECT_EQ(hex(r[1]), hex(0x00000000000007ae));
}

TEST_F(EmuComplex, C128SqrtIsCorrectlyRounded) {
  // mpmath at 600 bits. sqrt(DBL_MAX) is 2^-109 relative below the midpoint under 2^512 (extended precision lands
  // on the midpoint and rounds up to 2^512); the second result's real part is subnormal.
  const std::vector<uint64_t> z = {0x7fefffffffffffff, 0x3fc0cd6f1624aaac, 0xc0141e512f0359f1, 0x0010000000000000,
                                   bits_of(-4.0),      bits_of(0.0),       bits_of(0.0),       bits_of(-8.0)};
  auto s = values_of<uint64_t>(run(PK_OP_SQRT, {c128(z)}, PK_DTYPE_C128, {4}));
  ASSERT_EQ(s.size(), 8u);
  EXPECT_EQ(hex(s[0]), hex(0x5fefffffffffffff));
  EXPECT_EQ(hex(s[1]), hex(0x1fb0cd6f1624aaac));
  EXPECT_EQ(hex(s[2]), hex(0x000391319b9f9ae9));
  EXPECT_EQ(hex(s[3]), hex(0x4001f1016446c6f6));
  EXPECT_EQ(d_of(s[4]), 0.0);  // sqrt(-4 + 0i) = 2i
  EXPECT_EQ(d_of(s[5]), 2.0);
  EXPECT_EQ(d_of(s[6]), 2.0);  // sqrt(-8i) = 2 - 2i
  EXPECT_EQ(d_of(s[7]), -2.0);
  // sqrt(-DBL_MAX + (2 - 2^-52) i): the real part |y| / (2 Im) lies about 2^-54 ulp below a midpoint (mpmath),
  // so the quotient's exact decision runs.
  auto s2 = values_of<uint64_t>(run(PK_OP_SQRT, {c128({0xffefffffffffffff, 0x3fffffffffffffff})}, PK_DTYPE_C128, {1}));
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(hex(s2[0]), hex(0x1fefffffffffffff));
  EXPECT_EQ(hex(s2[1]), hex(0x5fefffffffffffff));
}

TEST_F(EmuComplex, C64SqrtIsCorrectlyRounded) {
  // sqrt(1 + y i), y = (2^23 - 1) 2^-149: Im = y / (2 Re) lies 7e-71 quanta below the midpoint of two f32
  // subnormals (mpmath, 600 bits), so it rounds down; long double, where Re rounds to 1, sees the midpoint itself.
  const std::vector<uint32_t> z = {0x3f800000u, 0x007fffffu};
  std::vector<uint8_t> zb(z.size() * 4);
  std::memcpy(zb.data(), z.data(), zb.size());
  auto s = values_of<uint32_t>(run(PK_OP_SQRT, {{PK_DTYPE_C64, {1}, zb}}, PK_DTYPE_C64, {1}));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], 0x3f800000u);
  EXPECT_EQ(s[1], 0x003fffffu);
}

TEST_F(EmuComplex, C128AbsIsCorrectlyRounded) {
  const std::vector<uint64_t> z = {
      bits_of(3e300),     bits_of(4e300),      // no overflow of x^2 + y^2
      0x3ffbba4d5cab289c, 0x3ff40edb4193f3d0,  // 1.8e-5 ulp from a midpoint
      0x3fedd096aa843916, 0x3ff178f5b092b113,  // 3.5e-5 ulp from a midpoint
      0x4333333333333335, 0x433999999999999c,  // (3k, 4k): |z| = 5k, an exact tie (to even)
      0x3ff3c0ca428c59fb, 0x3e51c71c706f8383,  // 1e-16 ulp below a midpoint
      0x0000000000000003, 0x8000000000000004,  // subnormal: 5 * 2^-1074
  };
  auto a = values_of<uint64_t>(run(PK_OP_ABS, {c128(z)}, PK_DTYPE_F64, {6}));
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(hex(a[0]), hex(0x7e5ddd4baa009303));
  EXPECT_EQ(hex(a[1]), hex(0x40011c6de99c528c));
  EXPECT_EQ(hex(a[2]), hex(0x3ff6f7c03b0e3157));
  EXPECT_EQ(hex(a[3]), hex(0x4340000000000002));
  EXPECT_EQ(hex(a[4]), hex(0x3ff3c0ca428c59fb));
  EXPECT_EQ(hex(a[5]), hex(0x0000000000000005));
}

TEST_F(EmuComplex, ProductsQuotientsAndSums) {
  // (1 + 2i)(3 + 4i) = -5 + 10i; (1.5 + 2.5i)(-3 + 0.5i) = -5.75 - 6.75i (exact).
  auto m = values_of<uint64_t>(run(PK_OP_MUL,
                                   {c128({bits_of(1.0), bits_of(2.0), bits_of(1.5), bits_of(2.5)}),
                                    c128({bits_of(3.0), bits_of(4.0), bits_of(-3.0), bits_of(0.5)})},
                                   PK_DTYPE_C128, {2}));
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(d_of(m[0]), -5.0);
  EXPECT_EQ(d_of(m[1]), 10.0);
  EXPECT_EQ(d_of(m[2]), -5.75);
  EXPECT_EQ(d_of(m[3]), -6.75);
  // c64: (1 + 2i) / (3 + 4i) = 11/25 + 2/25 i, each rounded once to f32.
  const std::vector<float> u = {1.0f, 2.0f}, v = {3.0f, 4.0f};
  auto q = values_of<float>(
      run(PK_OP_DIV, {{PK_DTYPE_C64, {1}, bytes_of(u)}, {PK_DTYPE_C64, {1}, bytes_of(v)}}, PK_DTYPE_C64, {1}));
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(bits_of(q[0]), 0x3ee147aeu);
  EXPECT_EQ(bits_of(q[1]), 0x3da3d70au);
  // A sum whose finite terms overflow still meets the later -inf as exact arithmetic does: -inf, not NaN.
  const double big = std::numeric_limits<double>::max(), inf = std::numeric_limits<double>::infinity();
  pk_attrs_sum attrs;
  PK_STRUCT_INIT(attrs);
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  auto s = values_of<double>(run(PK_OP_SUM,
                                 {{PK_DTYPE_C128, {3}, bytes_of(std::vector<double>{big, 1.0, big, 2.0, -inf, 3.0})}},
                                 PK_DTYPE_C128, {}, &attrs));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], -inf);
  EXPECT_EQ(s[1], 6.0);
  // DBL_MAX + DBL_MAX - DBL_MAX is DBL_MAX, although the f64 running sum overflows on the way.
  auto s2 = values_of<double>(run(PK_OP_SUM,
                                  {{PK_DTYPE_C128, {3}, bytes_of(std::vector<double>{big, 1.0, big, 0.5, -big, 0.25})}},
                                  PK_DTYPE_C128, {}, &attrs));
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0], big);
  EXPECT_EQ(s2[1], 1.75);
  // A running product that goes subnormal in f64 keeps its bits, as the reference's long double one does:
  // 2^-1000 (1 + 2^-40) 2^-60 2^1000 2^60 = 1 + 2^-40 (hand-checked; plain f64 gives 1). One past f64's range
  // comes back: 2^1000 2^1000 2^-1000 = 2^1000.
  pk_attrs_cumprod cp;
  PK_STRUCT_INIT(cp);
  auto p = values_of<double>(
      run(PK_OP_CUMPROD,
          {{PK_DTYPE_C128,
            {4},
            bytes_of(std::vector<double>{0x1p-1000 * (1 + 0x1p-40), 0, 0x1p-60, 0, 0x1p1000, 0, 0x1p60, 0})}},
          PK_DTYPE_C128, {4}, &cp));
  ASSERT_EQ(p.size(), 8u);
  EXPECT_EQ(p[6], 1 + 0x1p-40);
  EXPECT_EQ(p[7], 0.0);
  auto p2 = values_of<double>(
      run(PK_OP_CUMPROD, {{PK_DTYPE_C128, {3}, bytes_of(std::vector<double>{0x1p1000, 0, 0x1p1000, 0, 0x1p-1000, 0})}},
          PK_DTYPE_C128, {3}, &cp));
  ASSERT_EQ(p2.size(), 6u);
  EXPECT_EQ(p2[2], inf);
  EXPECT_EQ(p2[4], 0x1p1000);
}

// |got - want| in ulps of the larger part of want (norm-wise, as the op table measures complex results).
double cx_ulps(double gr, double gi, double wr, double wi) {
  const double big = std::max(std::fabs(wr), std::fabs(wi));
  const double ulp = big < 0x1p-1022 ? 0x1p-1074 : std::ldexp(1.0, std::ilogb(big) - 52);
  return std::max(std::fabs(gr - wr), std::fabs(gi - wi)) / ulp;
}

TEST_F(EmuComplex, C128PowMatchesMultiPrecision) {
  // exp(b log a) with mpmath at 2000 bits, rounded to f64 (bit patterns). The phases Im(b log a) of about 1e6 and
  // 3e7 radians need w in double-double (f64 alone errs by ~|w| 2^-53); a result in the subnormal range, a tiny
  // and a huge a, and |b| = 2^1000 (w beyond f64: the result is 0 or a complex infinity) are covered too.
  struct Case {
    uint64_t a[2], b[2], want[2];
  };
  const Case cases[] = {
      {{0x3fe8000000000000, 0x3fe0000000000000},
       {0x4044266666666666, 0xc03919999999999a},
       {0x40cdda0a2aa6d442, 0x40e1983965225de6}},  // (0.75 + 0.5i)^(40.3 - 25.1i)
      {{0x3ff000001ad7f29b, 0x3e112e0be826d695},
       {0x412e848000000000, 0x41124f8000000000},
       {0x3ff1ab3f78ca0d3d, 0x3fa1887fe7e7cc41}},  // a near 1, b = 1e6 + 3e5i
      {{0x3fe3333333333333, 0x3fe999999999999a},
       {0x413000004ccccccd, 0x3fe0000000000000},
       {0xbfd047ada57164a5, 0xbfe268787eefaabe}},  // Im w ~ 9.7e5
      {{0xbfd1eb851eb851ec, 0x3feeb851eb851eb8},
       {0x417000000c000000, 0xbfe0000000000000},
       {0xbff043064bc5b39f, 0xc00283bb41cabf88}},  // Im w ~ 3.1e7
      {{0x3fe0000000000000, 0x0000000000000000},
       {0x4090b93333333333, 0x3fe6666666666666},
       {0x000000000000000b, 0x8000000000000006}},  // subnormal parts
      {{0x01a56e1fc2f8f359, 0x0189b759505df0d1},
       {0xbff03d70a3d70a3d, 0x3fe0000000000000},
       {0x7f23015116958d92, 0xfeea7a6301e2f5a1}},  // tiny a
      {{0x7e64e7b4f70066e8, 0xfe6ddd4baa009303},
       {0x3ff0020c49ba5e35, 0x3f50624dd2f1a9fc},
       {0x7e78e3253cec2544, 0xfe5b424c9a543da8}},  // huge a
      {{0x3fe0000000000000, 0x3fd0000000000000},
       {0x7e70000000000000, 0x4008000000000000},
       {0x0000000000000000, 0x0000000000000000}},  // b = 2^1000 + 3i: 0
  };
  std::vector<uint64_t> a, b;
  for (const Case &c : cases) {
    a.insert(a.end(), {c.a[0], c.a[1]});
    b.insert(b.end(), {c.b[0], c.b[1]});
  }
  // Special cases: b = 0 gives 1; a = 0 with a real b > 0 gives 0; b = -2^1000 + 3i overflows.
  a.insert(a.end(), {bits_of(2.0), bits_of(3.0), bits_of(0.0), bits_of(0.0), bits_of(0.5), bits_of(0.25)});
  b.insert(b.end(), {bits_of(0.0), bits_of(0.0), bits_of(2.5), bits_of(0.0), 0xfe70000000000000, bits_of(3.0)});
  const size_t n = a.size() / 2;
  auto p = values_of<uint64_t>(run(PK_OP_POW, {c128(a), c128(b)}, PK_DTYPE_C128, {static_cast<int64_t>(n)}));
  ASSERT_EQ(p.size(), 2 * n);
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case &c = cases[i];
    EXPECT_LE(cx_ulps(d_of(p[2 * i]), d_of(p[2 * i + 1]), d_of(c.want[0]), d_of(c.want[1])), 1.0)
        << "case " << i << ": got (" << hex(p[2 * i]) << ", " << hex(p[2 * i + 1]) << "), want (" << hex(c.want[0])
        << ", " << hex(c.want[1]) << ")";
  }
  const size_t k = std::size(cases);
  EXPECT_EQ(d_of(p[2 * k]), 1.0);
  EXPECT_EQ(d_of(p[2 * k + 1]), 0.0);
  EXPECT_EQ(d_of(p[2 * k + 2]), 0.0);
  EXPECT_EQ(d_of(p[2 * k + 3]), 0.0);
  EXPECT_TRUE(std::isinf(d_of(p[2 * k + 4])) || std::isinf(d_of(p[2 * k + 5])))
      << hex(p[2 * k + 4]) << ", " << hex(p[2 * k + 5]);
}

TEST_F(EmuComplex, ArithmeticCorrectlyRoundedAgainstMpmath) {
  // mul, div, reciprocal, abs and sqrt (the device math's, linked into the kernel) of c128 and c64
  // (complex_arith_cases.hpp): every part equal to mpmath's value rounded to nearest in the output format, exact ties
  // and a part 2^-250 below a midpoint included.
  const std::vector<int64_t> shape = {1};
  const auto check = [&](const pk::test::ComplexArithCase &c, auto zero, int32_t cdt, int32_t rdt) {
    using T = decltype(zero);
    std::vector<Tensor> in;
    for (const auto &o : pk::test::complex_arith_operands(c))
      in.push_back({cdt, shape, bytes_of(std::vector<T>{static_cast<T>(o[0]), static_cast<T>(o[1])})});
    const bool abs = c.op == PK_OP_ABS;
    const auto w = values_of<T>(run(c.op, in, abs ? rdt : cdt, shape));
    ASSERT_EQ(w.size(), abs ? 1u : 2u);
    EXPECT_EQ(static_cast<double>(w[0]), c.re) << c.op << (c.c64 ? " c64 " : " c128 ") << c.a << " " << c.c;
    if (!abs) {
      EXPECT_EQ(static_cast<double>(w[1]), c.im) << c.op << (c.c64 ? " c64 " : " c128 ") << c.a << " " << c.c;
    }
  };
  for (const auto &c : pk::test::kComplexArithCases) {
    if (c.c64)
      check(c, 0.0f, PK_DTYPE_C64, PK_DTYPE_F32);
    else
      check(c, 0.0, PK_DTYPE_C128, PK_DTYPE_F64);
  }
}

TEST_F(EmuComplex, ElementaryFunctionsAgainstMpmath) {
  // exp, log, sin, cos, tanh (the device math's, linked into the kernel) of c128 and, where the argument is exact
  // in float and the result normal there, c64: each part within an ulp of its own magnitude.
  const auto float_normal = [](double v) { return v == 0.0 || (std::fabs(v) >= 0x1p-126 && std::fabs(v) < 0x1p127); };
  for (const auto &c : pk::test::kComplexElementaryCases) {
    const std::vector<int64_t> shape = {1};
    const auto w = values_of<double>(
        run(c.op, {{PK_DTYPE_C128, shape, bytes_of(std::vector<double>{c.x, c.y})}}, PK_DTYPE_C128, shape));
    ASSERT_EQ(w.size(), 2u);
    EXPECT_LE(pk::test::complex_part_ulps(w[0], c.re, 53), 1.0) << c.op << " (" << c.x << ", " << c.y << ")";
    EXPECT_LE(pk::test::complex_part_ulps(w[1], c.im, 53), 1.0) << c.op << " (" << c.x << ", " << c.y << ")";
    if (static_cast<float>(c.x) != c.x || static_cast<float>(c.y) != c.y || !float_normal(c.re) || !float_normal(c.im))
      continue;
    const std::vector<float> zf = {static_cast<float>(c.x), static_cast<float>(c.y)};
    const auto wf = values_of<float>(run(c.op, {{PK_DTYPE_C64, shape, bytes_of(zf)}}, PK_DTYPE_C64, shape));
    ASSERT_EQ(wf.size(), 2u);
    EXPECT_LE(pk::test::complex_part_ulps(wf[0], c.re, 24), 1.0) << c.op << " c64 (" << c.x << ", " << c.y << ")";
    EXPECT_LE(pk::test::complex_part_ulps(wf[1], c.im, 24), 1.0) << c.op << " c64 (" << c.x << ", " << c.y << ")";
  }
}

TEST_F(EmuComplex, PowWithHugePhaseAgainstMpmath) {
  // The exact path of pow (fixed-point log a and b log a, the phase as a fraction of a turn): |Im(b log a)| from
  // 2^26 up to ~1e308 radians, and Re(b log a) where its two products cancel, against mpmath at 4000 bits (the
  // cases the OpenCL backend's test uses too). c64 takes the c128 path where |b log a| may exceed 2^20.
  const auto &wide = pk::test::kPowHugePhaseC128;
  const auto &narrow = pk::test::kPowHugePhaseC64;
  const auto check = [&](const auto &cases, size_t count, int32_t dt, auto zero, double eps) {
    using T = decltype(zero);
    std::vector<T> a, b;
    for (size_t i = 0; i < count; ++i) {
      a.insert(a.end(), {static_cast<T>(cases[i][0]), static_cast<T>(cases[i][1])});
      b.insert(b.end(), {static_cast<T>(cases[i][2]), static_cast<T>(cases[i][3])});
    }
    const int64_t n = static_cast<int64_t>(count);
    const std::vector<int64_t> shape = {n};
    const auto p = values_of<T>(run(PK_OP_POW, {{dt, shape, bytes_of(a)}, {dt, shape, bytes_of(b)}}, dt, shape));
    ASSERT_EQ(p.size(), 2 * count);
    for (size_t i = 0; i < count; ++i) {
      const double tol = 16 * eps * std::max(std::fabs(cases[i][4]), std::fabs(cases[i][5]));
      EXPECT_NEAR(p[2 * i], cases[i][4], tol) << "case " << i;
      EXPECT_NEAR(p[2 * i + 1], cases[i][5], tol) << "case " << i;
    }
  };
  check(wide, std::size(wide), PK_DTYPE_C128, 0.0, 0x1p-52);
  check(narrow, std::size(narrow), PK_DTYPE_C64, 0.0f, 0x1p-23);
}

TEST_F(EmuComplex, MatmulSumsProductsOnceRounded) {
  // [1, K] x [K, 1] products worked by hand. c128: (1 + 2^-30)^2 - 1 = 2^-29 + 2^-60 exactly, which an f64
  // running sum loses (it rounds (1 + 2^-30)^2 to 1 + 2^-29); the imaginary part is (1 + 2^-30) - 3.
  const double e30 = 0x1p-30;
  auto m = values_of<double>(run(PK_OP_MATMUL,
                                 {{PK_DTYPE_C128, {1, 2}, bytes_of(std::vector<double>{1 + e30, 0.0, -1.0, 0.0})},
                                  {PK_DTYPE_C128, {2, 1}, bytes_of(std::vector<double>{1 + e30, 1.0, 1.0, 3.0})}},
                                 PK_DTYPE_C128, {1, 1}));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0], 0x1p-29 + 0x1p-60);
  EXPECT_EQ(m[1], -2.0 + e30);
  // Products beyond f64's range that cancel: (2^600 2^500 - 2^600 2^500 + 2^1000 1) = 2^1000 (the sum is redone
  // with scaled factors); the imaginary part big 2^500 + big 2^500 - big is beyond f64's range: inf.
  const double big = std::numeric_limits<double>::max();
  auto o = values_of<double>(
      run(PK_OP_MATMUL,
          {{PK_DTYPE_C128, {1, 3}, bytes_of(std::vector<double>{0x1p600, big, -0x1p600, big, 0x1p1000, -big})},
           {PK_DTYPE_C128, {3, 1}, bytes_of(std::vector<double>{0x1p500, 0.0, 0x1p500, 0.0, 1.0, 0.0})}},
          PK_DTYPE_C128, {1, 1}));
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0], 0x1p1000);
  EXPECT_EQ(o[1], std::numeric_limits<double>::infinity());
  // A term with an infinite part is the Annex G product ((inf + 0i)(1 + i) = inf + inf i), added to the rest.
  const double inf = std::numeric_limits<double>::infinity();
  auto g = values_of<double>(run(PK_OP_MATMUL,
                                 {{PK_DTYPE_C128, {1, 2}, bytes_of(std::vector<double>{inf, 0.0, 1.0, 2.0})},
                                  {PK_DTYPE_C128, {2, 1}, bytes_of(std::vector<double>{1.0, 1.0, 3.0, 4.0})}},
                                 PK_DTYPE_C128, {1, 1}));
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0], inf);
  EXPECT_EQ(g[1], inf);
  // c64: (1 + 2i)(0.5 - i) + (3 - i)(2 + 2i) = 10.5 + 4i; (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 (an f32 running sum
  // would round the square).
  const float f12 = 0x1p-12f;
  auto c = values_of<float>(run(PK_OP_MATMUL,
                                {{PK_DTYPE_C64, {2, 2}, bytes_of(std::vector<float>{1, 2, 3, -1, 1 + f12, 0, -1, 0})},
                                 {PK_DTYPE_C64, {2, 1}, bytes_of(std::vector<float>{0.5f, -1, 2, 2})}},
                                PK_DTYPE_C64, {2, 1}));
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0], 10.5f);
  EXPECT_EQ(c[1], 4.0f);
  auto c2 = values_of<float>(run(PK_OP_MATMUL,
                                 {{PK_DTYPE_C64, {1, 2}, bytes_of(std::vector<float>{1 + f12, 0, -1, 0})},
                                  {PK_DTYPE_C64, {2, 1}, bytes_of(std::vector<float>{1 + f12, 0, 1, 0})}},
                                 PK_DTYPE_C64, {1, 1}));
  ASSERT_EQ(c2.size(), 2u);
  EXPECT_EQ(c2[0], 0x1p-11f + 0x1p-24f);
  EXPECT_EQ(c2[1], 0.0f);
}

// Direct DFT checks against 300-bit mpmath sums (rounded to f64): every element within 4 ulps of the largest
// output magnitude (the op table's bound is a reduction bound over the transform, far looser).
void expect_near_norm(const std::vector<double> &got, const std::vector<double> &want, double eps, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double big = 0;
  for (double w : want) big = std::max(big, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_LE(std::fabs(got[i] - want[i]), 4 * eps * big) << what << " [" << i << "]: " << got[i] << " vs " << want[i];
}
template <typename T>
std::vector<double> doubles(const std::vector<T> &v) {
  return std::vector<double>(v.begin(), v.end());
}

TEST_F(EmuComplex, FftMatchesMultiPrecisionDft) {
  // c2c forward of length 5 (no twiddle is exact), c128 and c64.
  const std::vector<double> x5 = {1.5, -0.25, -2, 0.75, 0.125, 3, 4, -1, -0.5, -0.5};
  const std::vector<double> y5 = {3.125,
                                  2.0,
                                  0.9302240668048078,
                                  1.9134728869199058,
                                  1.7277430879190039,
                                  -2.6378863820488525,
                                  7.86673208754905,
                                  2.9694458623611686,
                                  -6.149699242272861,
                                  -5.495032367232222};
  pk_attrs_fft_c2c c2c;
  PK_STRUCT_INIT(c2c);
  c2c.num_dims = 1;
  c2c.dims[0] = 0;
  c2c.forward = 1;
  expect_near_norm(
      values_of<double>(run(PK_OP_FFT_C2C, {{PK_DTYPE_C128, {5}, bytes_of(x5)}}, PK_DTYPE_C128, {5}, &c2c)), y5,
      0x1p-52, "c2c c128");
  const std::vector<float> x5f(x5.begin(), x5.end());
  expect_near_norm(
      doubles(values_of<float>(run(PK_OP_FFT_C2C, {{PK_DTYPE_C64, {5}, bytes_of(x5f)}}, PK_DTYPE_C64, {5}, &c2c))), y5,
      0x1p-23, "c2c c64");
  // Inverse (unnormalized) over both axes of [2, 3].
  const std::vector<double> x23 = {1, 2, -3, 0.5, 0.25, -1, 2, 2, -1, 0, 0.5, 1.5};
  const std::vector<double> y23 = {-0.25,
                                   5.0,
                                   4.625,
                                   -0.6136206679760836,
                                   4.625,
                                   7.613620667976083,
                                   -3.25,
                                   -2.0,
                                   -2.473076211353316,
                                   -0.5155444566227676,
                                   2.723076211353316,
                                   2.515544456622768};
  c2c.num_dims = 2;
  c2c.dims[1] = 1;
  c2c.forward = 0;
  expect_near_norm(
      values_of<double>(run(PK_OP_FFT_C2C, {{PK_DTYPE_C128, {2, 3}, bytes_of(x23)}}, PK_DTYPE_C128, {2, 3}, &c2c)), y23,
      0x1p-52, "c2c inverse 2-D");
  // r2c of length 6, onesided (4 entries), from f32 to c64.
  pk_attrs_fft_r2c r2c;
  PK_STRUCT_INIT(r2c);
  r2c.num_dims = 1;
  r2c.dims[0] = 0;
  r2c.onesided = 1;
  const std::vector<float> xr = {1.0f, -2.5f, 0.75f, 3.0f, -1.25f, 0.5f};
  expect_near_norm(
      doubles(values_of<float>(run(PK_OP_FFT_R2C, {{PK_DTYPE_F32, {6}, bytes_of(xr)}}, PK_DTYPE_C64, {4}, &r2c))),
      {1.5, 0.0, -2.75, 0.8660254037844386, 5.25, 4.330127018922194, -0.5, 0.0}, 0x1p-23, "r2c f32");
  // c2r: 3 entries to 5 (odd) and to 4 (even: entry 2 is the Nyquist term, counted once) real values.
  pk_attrs_fft_c2r c2r;
  PK_STRUCT_INIT(c2r);
  c2r.num_dims = 1;
  c2r.dims[0] = 0;
  const std::vector<double> xc = {2, 0.5, -1, 1.25, 0.5, -2};
  c2r.last_dim_size = 5;
  expect_near_norm(values_of<double>(run(PK_OP_FFT_C2R, {{PK_DTYPE_C128, {3}, bytes_of(xc)}}, PK_DTYPE_F64, {5}, &c2r)),
                   {1.0, 0.5464487353071663, -1.346638212786955, 9.20074017903664, 0.5994492984431491}, 0x1p-52,
                   "c2r 5");
  c2r.last_dim_size = 4;
  expect_near_norm(values_of<double>(run(PK_OP_FFT_C2R, {{PK_DTYPE_C128, {3}, bytes_of(xc)}}, PK_DTYPE_F64, {4}, &c2r)),
                   {0.5, -1.0, 4.5, 4.0}, 0x1p-52, "c2r 4");
  // c2r over both axes of [3, 2] to [3, 3]: the first axis a full inverse transform, the last Hermitian.
  const std::vector<double> xa = {1, 1, 0.5, -2, -1, 0.25, 2, 0, 0.75, 1.5, -0.5, -1};
  c2r.num_dims = 2;
  c2r.dims[1] = 1;
  c2r.last_dim_size = 3;
  expect_near_norm(
      values_of<double>(run(PK_OP_FFT_C2R, {{PK_DTYPE_C128, {3, 2}, bytes_of(xa)}}, PK_DTYPE_F64, {3, 3}, &c2r)),
      {4.75, 3.946152422706632, -6.446152422706632, -0.024519052838328986, 2.171633369868303, 4.475480947161671,
       1.274519052838329, 5.774519052838329, -6.921633369868303},
      0x1p-52, "c2r 2-D");
}

TEST_F(EmuComplex, C128ScatterMovesBothWords) {
  // out = a; out[index[i]] = src[i] along dim 0, the last duplicate winning: index [2, 0, 2] writes src[1] to 0
  // and src[2] to 2; element 1 keeps a's. NaN payloads and -0 survive (the words move as bits).
  const std::vector<uint64_t> a = {1, 2, 3, 4, 5, 6};
  const std::vector<uint64_t> src = {0x7ff0000000000bad, 0x8000000000000000, 0x3ff0000000000000,
                                     0xfff8000000000123, bits_of(-2.5),      0x0000000000000001};
  const std::vector<int64_t> index = {2, 0, 2};
  pk_attrs_scatter attrs;
  PK_STRUCT_INIT(attrs);
  attrs.dim = 0;
  auto o = values_of<uint64_t>(
      run(PK_OP_SCATTER, {c128(a), {PK_DTYPE_I64, {3}, bytes_of(index)}, c128(src)}, PK_DTYPE_C128, {3}, &attrs));
  ASSERT_EQ(o.size(), 6u);
  EXPECT_EQ(hex(o[0]), hex(0x3ff0000000000000));
  EXPECT_EQ(hex(o[1]), hex(0xfff8000000000123));
  EXPECT_EQ(hex(o[2]), hex(3));
  EXPECT_EQ(hex(o[3]), hex(4));
  EXPECT_EQ(hex(o[4]), hex(bits_of(-2.5)));
  EXPECT_EQ(hex(o[5]), hex(1));
}

}  // namespace

namespace {

TEST_F(EmuComplex, FusedChainThroughTheGraphApi) {
  // conj(x * y + z) and its row sums over [16, 9] c128 values with small integer parts: every step is exact, so
  // the expected values are integers computed here.
  const int64_t shape[2] = {16, 9};
  pk_graph_t g;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  const pk_dtype c = pk::meta::dtype_desc(PK_DTYPE_C128);
  uint32_t x, y, z, xy, s, t, total;
  ASSERT_EQ(pk_graph_add_input(g, c, 2, shape, &x), PK_OK);
  ASSERT_EQ(pk_graph_add_input(g, c, 2, shape, &y), PK_OK);
  ASSERT_EQ(pk_graph_add_input(g, c, 2, shape, &z), PK_OK);
  uint32_t in2[2] = {x, y};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in2, 2, nullptr, &xy, 1), PK_OK);
  uint32_t in3[2] = {xy, z};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_ADD, in3, 2, nullptr, &s, 1), PK_OK);
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_CONJ_PHYSICAL, &s, 1, nullptr, &t, 1), PK_OK);
  pk_attrs_sum sa = PK_ATTRS_SUM_INIT;
  sa.num_dims = 1;
  sa.dims[0] = 1;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_SUM, &t, 1, &sa, &total, 1), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, t), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, total), PK_OK);
  pk_executable_t exe;
  ASSERT_EQ(pk_graph_compile(g, dev_, nullptr, &exe), PK_OK);
  pk_graph_destroy(g);
  uint32_t fused = 0, fused_nodes = 0, singles = 0;
  ASSERT_EQ(pk_executable_stats(exe, &fused, &fused_nodes, &singles), PK_OK);
  EXPECT_EQ(fused, 1u);
  EXPECT_EQ(singles, 0u);
  EXPECT_EQ(fused_nodes, 4u);
  const size_t n = 16 * 9;
  std::vector<double> v[3];
  for (int k = 0; k < 3; ++k)
    for (size_t i = 0; i < n; ++i) {
      v[k].push_back(static_cast<double>(static_cast<int>((i * (3 + k) + k) % 11) - 5));
      v[k].push_back(static_cast<double>(static_cast<int>((i * (5 + 2 * k) + 1) % 7) - 3));
    }
  std::vector<pk_buffer_t> bufs;
  std::vector<pk_tensor> ts;
  // pk_tensor keeps a pointer to its shape: the shapes outlive the tensors.
  const int64_t row_shape[1] = {16};
  auto add = [&](const int64_t *sh, int32_t nd, const std::vector<double> *data) {
    int64_t cnt = 1;
    for (int32_t k = 0; k < nd; ++k) cnt *= sh[k];
    pk_buffer_t b = nullptr;
    EXPECT_EQ(pk_buffer_create(dev_, static_cast<size_t>(cnt) * 16, &b), PK_OK);
    pk_tensor tt;
    EXPECT_EQ(pk_buffer_tensor(b, c, nd, sh, nullptr, 0, &tt), PK_OK);
    if (data) {
      EXPECT_EQ(pk_copy_host_to_buffer(stream_, b, 0, data->data(), data->size() * 8), PK_OK);
    }
    bufs.push_back(b);
    ts.push_back(tt);
  };
  for (auto &vk : v) add(shape, 2, &vk);
  add(shape, 2, nullptr);
  add(row_shape, 1, nullptr);
  ASSERT_EQ(pk_executable_run(exe, stream_, ts.data(), 3, ts.data() + 3, 2), PK_OK);
  std::vector<double> tg(n * 2), sg(32);
  ASSERT_EQ(pk_copy_buffer_to_host(stream_, tg.data(), bufs[3], 0, tg.size() * 8), PK_OK);
  ASSERT_EQ(pk_copy_buffer_to_host(stream_, sg.data(), bufs[4], 0, sg.size() * 8), PK_OK);
  ASSERT_EQ(pk_stream_synchronize(stream_), PK_OK);
  for (size_t row = 0; row < 16; ++row) {
    double sr = 0, si = 0;
    for (size_t col = 0; col < 9; ++col) {
      const size_t i = row * 9 + col;
      const double a = v[0][2 * i], b = v[0][2 * i + 1], cc = v[1][2 * i], d = v[1][2 * i + 1];
      const double re = a * cc - b * d + v[2][2 * i], im = -(a * d + b * cc + v[2][2 * i + 1]);
      EXPECT_EQ(tg[2 * i], re) << i;
      EXPECT_EQ(tg[2 * i + 1], im) << i;
      sr += re;
      si += im;
    }
    EXPECT_EQ(sg[2 * row], sr) << row;
    EXPECT_EQ(sg[2 * row + 1], si) << row;
  }
  pk_executable_destroy(exe);
  for (pk_buffer_t b : bufs) pk_buffer_destroy(b);
}

}  // namespace
