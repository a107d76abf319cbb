// CPU backend, matmul / dot_general / linear / addmm / baddbmm / convolution / pooling / FFT, through the public host
// API. References are double loops written here in a different form from the kernels (explicit padded copies for
// convolution and pooling, closed forms for the DFT), with the reduction error bound |err| <= K * eps * sum |a| |b| for
// float contractions, and hand-worked values in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <vector>

#include "cpu_test_fixture.hpp"
#include "primkit/primkit.h"

namespace {

using pk_test::last_error;

const pk_dtype kF32 = PK_DTYPE_F32_DESC, kF64 = PK_DTYPE_F64_DESC, kI32 = PK_DTYPE_I32_DESC, kI64 = PK_DTYPE_I64_DESC,
               kC64 = PK_DTYPE_C64_DESC, kC128 = PK_DTYPE_C128_DESC, kBF16 = PK_DTYPE_BF16_DESC;
const double kPi = 3.14159265358979323846;
using cd = std::complex<double>;
using cf = std::complex<float>;

class CpuLinalg : public pk_test::CpuBackendTest {};

void set_ints(int32_t &n, int64_t *v, std::vector<int64_t> values) {
  n = static_cast<int32_t>(values.size());
  for (size_t i = 0; i < values.size(); ++i) v[i] = values[i];
}

// Deterministic values of mixed sign in [-1, 1].
template <class T>
std::vector<T> values(size_t n, double seed) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(seed + 1.7 * static_cast<double>(i)) * 0.9);
  return v;
}

const double kEpsF32 = std::ldexp(1.0, -23);

TEST_F(CpuLinalg, MatmulF32AgainstADoubleLoopWithinTheReductionBound) {
  const int M = 3, K = 4, N = 5;
  std::vector<float> a = values<float>(M * K, 0.3), b = values<float>(K * N, 1.1), c(M * N, 0.0f);
  std::vector<double> ref(M * N, 0.0), mag(M * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) {
        ref[i * N + j] += static_cast<double>(a[i * K + k]) * b[k * N + j];
        mag[i * N + j] += std::fabs(static_cast<double>(a[i * K + k]) * b[k * N + j]);
      }
  ASSERT_EQ(
      launch(PK_OP_MATMUL, {tensor(a, kF32, {M, K}), tensor(b, kF32, {K, N})}, {tensor(c, kF32, {M, N})}, nullptr),
      PK_OK)
      << last_error().message;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      EXPECT_NEAR(c[i * N + j], ref[i * N + j], (K + 1) * kEpsF32 * mag[i * N + j]) << i << "," << j;
  // The same product with b given transposed in memory (strides [1, K]) and a column-major output.
  std::vector<float> bt(K * N), ct(M * N, 0.0f);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) bt[j * K + k] = b[k * N + j];
  ASSERT_EQ(launch(PK_OP_MATMUL, {tensor(a, kF32, {M, K}), tensor(bt, kF32, {K, N}, {1, K})},
                   {tensor(ct, kF32, {M, N}, {1, M})}, nullptr),
            PK_OK)
      << last_error().message;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      EXPECT_NEAR(ct[j * M + i], ref[i * N + j], (K + 1) * kEpsF32 * mag[i * N + j]) << i << "," << j;
}

TEST_F(CpuLinalg, LargerF32MatmulStaysWithinTheBound) {
  // Big enough for a library path (oneDNN when built with it); the bound is the same.
  const int M = 67, K = 129, N = 45;
  std::vector<float> a = values<float>(M * K, 0.7), b = values<float>(K * N, 2.3), c(M * N, 0.0f);
  ASSERT_EQ(
      launch(PK_OP_MATMUL, {tensor(a, kF32, {M, K}), tensor(b, kF32, {K, N})}, {tensor(c, kF32, {M, N})}, nullptr),
      PK_OK)
      << last_error().message;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        ref += static_cast<double>(a[i * K + k]) * b[k * N + j];
        mag += std::fabs(static_cast<double>(a[i * K + k]) * b[k * N + j]);
      }
      ASSERT_NEAR(c[i * N + j], ref, (K + 1) * kEpsF32 * mag) << i << "," << j;
    }
}

// Operands whose f32 products overflow or that hold infinities, where a plain f32 product gives NaN (inf - inf,
// inf * padding 0) but the exact result is finite or inf: the kernel must notice and compute in a wider type.
// Both guards: a square product (the result is checked after the fast product) and a thin contraction whose result
// is larger than its operands (K = 2; the operands are checked before); in f32 and in bf16 (every operand below is
// exact in both; bf16 runs through f32, and its result check rides on the conversion back). Hand-derived results:
//   row [2^70, 2^70] . column [2^60, -2^60] = 0 (the products 2^130 overflow f32);
//   row [2^70, 2^70] . column [2^60, 2^-60] = 2^130 + 2^10 -> +inf (overflow of the exact value);
//   row [inf, 0] . column [1, 0] = inf; row [inf, 0] . column [0, 1] = inf * 0 = NaN;
//   row [2^-10, 3] . any column [u, v] = 2^-10 u + 3 v, rounded once to the dtype.
double round_to_bf16(double x) {  // nearest even, 8 significant bits; no overflow among these values
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  const double m = std::frexp(x, &e);
  return std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);
}

uint16_t bf16_bits(float f) {  // exact for the operands used here (8 significant bits or fewer, or inf)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

double bf16_value(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST_F(CpuLinalg, MatmulWithOverflowingOrInfiniteOperandsGivesTheExactResultRounded) {
  const float big_a = std::ldexp(1.0f, 70), big_b = std::ldexp(1.0f, 60), tiny = std::ldexp(1.0f, -60);
  const float inf = std::numeric_limits<float>::infinity();
  const float rows[4][2] = {{big_a, big_a}, {inf, 0.0f}, {std::ldexp(1.0f, -10), 3.0f}, {0.5f, -0.25f}};
  const float cols[4][2] = {{big_b, -big_b}, {big_b, tiny}, {1.0f, 0.0f}, {0.0f, 1.0f}};
  auto exact = [&](int i, int j) -> double {
    if (i == 0) return j == 0 ? 0.0 : (j == 1 ? HUGE_VAL : static_cast<double>(big_a));
    if (i == 1) return j == 3 ? NAN : HUGE_VAL;
    return static_cast<double>(rows[i][0]) * cols[j][0] + static_cast<double>(rows[i][1]) * cols[j][1];
  };
  // Rows repeated over M = 64 (i = r % 4), columns over N = 64 (j = c % 4), with K = 2 (result larger than the
  // operands) and K = 2 padded to K = 64 with zero pairs (result no larger than the operands).
  for (bool bf16 : {false, true}) {
    for (int K : {2, 64}) {
      const int M = 64, N = 64;
      std::vector<float> a(M * K, 0.0f), b(K * N, 0.0f), c(M * N, -1.0f);
      for (int r = 0; r < M; ++r)
        for (int k = 0; k < 2; ++k) a[r * K + k] = rows[r % 4][k];
      for (int col = 0; col < N; ++col)
        for (int k = 0; k < 2; ++k) b[k * N + col] = cols[col % 4][k];
      std::vector<uint16_t> ah(a.size()), bh(b.size()), ch(c.size(), 0xbf80);
      for (size_t i = 0; i < a.size(); ++i) ah[i] = bf16_bits(a[i]);
      for (size_t i = 0; i < b.size(); ++i) bh[i] = bf16_bits(b[i]);
      const pk_status st = bf16 ? launch(PK_OP_MATMUL, {tensor(ah, kBF16, {M, K}), tensor(bh, kBF16, {K, N})},
                                         {tensor(ch, kBF16, {M, N})}, nullptr)
                                : launch(PK_OP_MATMUL, {tensor(a, kF32, {M, K}), tensor(b, kF32, {K, N})},
                                         {tensor(c, kF32, {M, N})}, nullptr);
      ASSERT_EQ(st, PK_OK) << last_error().message;
      for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) {
          const double want = exact(r % 4, col % 4);
          const double got = bf16 ? bf16_value(ch[r * N + col]) : c[r * N + col];
          const std::string where = std::string(bf16 ? "bf16" : "f32") + " K " + std::to_string(K) + " at " +
                                    std::to_string(r) + "," + std::to_string(col);
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << where;
          } else {
            EXPECT_EQ(got, bf16 ? round_to_bf16(want) : static_cast<double>(static_cast<float>(want))) << where;
          }
        }
    }
  }
}

TEST_F(CpuLinalg, MatmulI32Wraps) {
  // Row 0: 2 (2^31 - 1) + 3 = 2^32 + 1 -> 1. Row 1: -2^31 * 2 - 3 = -2^32 - 3 -> -3.
  std::vector<int32_t> a = {2147483647, 1, -2147483647 - 1, -1}, b = {2, 3}, c(2, 7);
  ASSERT_EQ(
      launch(PK_OP_MATMUL, {tensor(a, kI32, {2, 2}), tensor(b, kI32, {2, 1})}, {tensor(c, kI32, {2, 1})}, nullptr),
      PK_OK)
      << last_error().message;
  EXPECT_EQ(c[0], 1);
  EXPECT_EQ(c[1], -3);
}

TEST_F(CpuLinalg, MatmulWithAnEmptyContractionIsZero) {
  std::vector<float> a(1), b(1), c(6, 5.0f);
  ASSERT_EQ(
      launch(PK_OP_MATMUL, {tensor(a, kF32, {2, 0}), tensor(b, kF32, {0, 3})}, {tensor(c, kF32, {2, 3})}, nullptr),
      PK_OK)
      << last_error().message;
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

TEST_F(CpuLinalg, BatchMatmulComplexAndBf16) {
  // (1 + i) i + 2 (1 - i) = i - 1 + 2 - 2i = 1 - i; second batch: 3 * 2 + 0 = 6.
  std::vector<cf> a = {cf(1, 1), cf(2, 0), cf(3, 0), cf(0, 5)}, b = {cf(0, 1), cf(1, -1), cf(2, 0), cf(0, 0)}, c(2);
  ASSERT_EQ(launch(PK_OP_BATCH_MATMUL, {tensor(a, kC64, {2, 1, 2}), tensor(b, kC64, {2, 2, 1})},
                   {tensor(c, kC64, {2, 1, 1})}, nullptr),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(c[0], cf(1, -1));
  EXPECT_EQ(c[1], cf(6, 0));
  // bf16: [1.5, 2] x [[4], [0.25]] = 6.5 exactly (0x40d0).
  std::vector<uint16_t> ha = {0x3fc0, 0x4000}, hb = {0x4080, 0x3e80}, hc(1, 0);
  ASSERT_EQ(launch(PK_OP_BATCH_MATMUL, {tensor(ha, kBF16, {1, 1, 2}), tensor(hb, kBF16, {1, 2, 1})},
                   {tensor(hc, kBF16, {1, 1, 1})}, nullptr),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(hc[0], 0x40d0);
}

// bf16 results round once, to nearest even, from the f32 sum (hand-checked, and ml_dtypes agrees): 1 + 2^-8 is a
// tie between 1 and 1 + 2^-7 (-> 1, even: 0x3f80); 1 + 3 2^-8 a tie between 1 + 2^-7 and 1 + 2^-6 (-> 1 + 2^-6,
// even: 0x3f82); 1 + 2^-8 + 2^-12 is past the tie (-> 1 + 2^-7: 0x3f81). Then, times [3, 1]: a NaN operand gives a
// NaN; 3 2^127 overflows (+inf: 0x7f80); 3 (-2^-133) = -3 2^-133 is a bf16 subnormal, exact (0x8003).
TEST_F(CpuLinalg, MatmulBf16RoundsTheF32SumToNearestEven) {
  std::vector<uint16_t> a = {0x3f80, 0x3b80, 0x3f80, 0x3c40, 0x3f80, 0x3b88}, ones = {0x3f80, 0x3f80}, c(3, 0);
  ASSERT_EQ(launch(PK_OP_MATMUL, {tensor(a, kBF16, {3, 2}), tensor(ones, kBF16, {2, 1})}, {tensor(c, kBF16, {3, 1})},
                   nullptr),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(c[0], 0x3f80);
  EXPECT_EQ(c[1], 0x3f82);
  EXPECT_EQ(c[2], 0x3f81);
  std::vector<uint16_t> e = {0x7fc0, 0x0000, 0x7f00, 0x0000, 0x8001, 0x0000}, three = {0x4040, 0x3f80}, d(3, 0);
  ASSERT_EQ(launch(PK_OP_MATMUL, {tensor(e, kBF16, {3, 2}), tensor(three, kBF16, {2, 1})}, {tensor(d, kBF16, {3, 1})},
                   nullptr),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(d[0] & 0x7fc0, 0x7fc0);  // a NaN
  EXPECT_EQ(d[1], 0x7f80);
  EXPECT_EQ(d[2], 0x8003);
}

TEST_F(CpuLinalg, DotGeneralWithBatchAndContractingAxesAnywhere) {
  // lhs [2, 3, 4]: batch axis 0, contracting axis 2. rhs [4, 2, 5]: batch axis 1, contracting axis 0.
  // out [2, 3, 5] = (batch, lhs free, rhs free).
  std::vector<double> l = values<double>(24, 0.1), r = values<double>(40, 0.9), out(30, 0.0);
  pk_attrs_dot_general d = PK_ATTRS_DOT_GENERAL_INIT;
  set_ints(d.num_lhs_batch, d.lhs_batch, {0});
  set_ints(d.num_rhs_batch, d.rhs_batch, {1});
  set_ints(d.num_lhs_contract, d.lhs_contract, {2});
  set_ints(d.num_rhs_contract, d.rhs_contract, {0});
  ASSERT_EQ(launch(PK_OP_DOT_GENERAL, {tensor(l, kF64, {2, 3, 4}), tensor(r, kF64, {4, 2, 5})},
                   {tensor(out, kF64, {2, 3, 5})}, &d),
            PK_OK)
      << last_error().message;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        double ref = 0;
        for (int k = 0; k < 4; ++k) ref += l[(b * 3 + i) * 4 + k] * r[(k * 2 + b) * 5 + j];
        EXPECT_NEAR(out[(b * 3 + i) * 5 + j], ref, 1e-14) << b << i << j;
      }
  // Integers, two contracting axes and no batch: lhs [2, 3] . rhs [3, 2] over lhs (0, 1) ~ rhs (1, 0) -> scalar.
  std::vector<int64_t> li = {1, 2, 3, 4, 5, 6}, ri = {10, 40, 20, 50, 30, 60}, oi(1, 0);
  pk_attrs_dot_general e = PK_ATTRS_DOT_GENERAL_INIT;
  set_ints(e.num_lhs_contract, e.lhs_contract, {0, 1});
  set_ints(e.num_rhs_contract, e.rhs_contract, {1, 0});
  ASSERT_EQ(launch(PK_OP_DOT_GENERAL, {tensor(li, kI64, {2, 3}), tensor(ri, kI64, {3, 2})}, {tensor(oi, kI64, {})}, &e),
            PK_OK)
      << last_error().message;
  // l(i, j) * r(j, i): 1*10 + 2*20 + 3*30 + 4*40 + 5*50 + 6*60 = 10 + 40 + 90 + 160 + 250 + 360 = 910.
  EXPECT_EQ(oi[0], 910);
}

// Direct convolution on an explicitly zero-padded copy of the input, in double.
struct ConvCase {
  int64_t n, c, o, g;
  std::vector<int64_t> in, k, stride, lo, hi, dil;
};

std::vector<int64_t> conv_out_shape(const ConvCase &cc) {
  std::vector<int64_t> s = {cc.n, cc.o};
  for (size_t q = 0; q < cc.in.size(); ++q)
    s.push_back((cc.in[q] + cc.lo[q] + cc.hi[q] - cc.dil[q] * (cc.k[q] - 1) - 1) / cc.stride[q] + 1);
  return s;
}

// Returns the reference and, per output element, sum |x| |w| over its terms (for the bound).
void conv_reference(const ConvCase &cc, const std::vector<double> &x, const std::vector<double> &w,
                    std::vector<double> &ref, std::vector<double> &mag) {
  std::vector<int64_t> in = cc.in, k = cc.k, out = conv_out_shape(cc);
  while (in.size() < 3) {
    in.insert(in.begin(), 1);
    k.insert(k.begin(), 1);
  }
  std::vector<int64_t> lo = cc.lo, st = cc.stride, dl = cc.dil, hi = cc.hi;
  std::vector<int64_t> os(out.begin() + 2, out.end());
  while (lo.size() < 3) {
    lo.insert(lo.begin(), 0);
    hi.insert(hi.begin(), 0);
    st.insert(st.begin(), 1);
    dl.insert(dl.begin(), 1);
    os.insert(os.begin(), 1);
  }
  int64_t P[3];
  for (int q = 0; q < 3; ++q) P[q] = in[q] + lo[q] + hi[q];
  // xp[n][c][pd][ph][pw], zero outside the input.
  std::vector<double> xp(static_cast<size_t>(cc.n * cc.c * P[0] * P[1] * P[2]), 0.0);
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t c = 0; c < cc.c; ++c)
      for (int64_t d = 0; d < in[0]; ++d)
        for (int64_t h = 0; h < in[1]; ++h)
          for (int64_t v = 0; v < in[2]; ++v)
            xp[(((n * cc.c + c) * P[0] + d + lo[0]) * P[1] + h + lo[1]) * P[2] + v + lo[2]] =
                x[(((n * cc.c + c) * in[0] + d) * in[1] + h) * in[2] + v];
  const int64_t cg = cc.c / cc.g, og = cc.o / cc.g;
  ref.assign(static_cast<size_t>(cc.n * cc.o * os[0] * os[1] * os[2]), 0.0);
  mag = ref;
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t o = 0; o < cc.o; ++o)
      for (int64_t a = 0; a < os[0]; ++a)
        for (int64_t b = 0; b < os[1]; ++b)
          for (int64_t e = 0; e < os[2]; ++e) {
            double s = 0, m = 0;
            for (int64_t ci = 0; ci < cg; ++ci) {
              const int64_t c = (o / og) * cg + ci;
              for (int64_t kd = 0; kd < k[0]; ++kd)
                for (int64_t kh = 0; kh < k[1]; ++kh)
                  for (int64_t kw = 0; kw < k[2]; ++kw) {
                    const double xv =
                        xp[(((n * cc.c + c) * P[0] + a * st[0] + kd * dl[0]) * P[1] + b * st[1] + kh * dl[1]) * P[2] +
                           e * st[2] + kw * dl[2]];
                    const double wv = w[(((o * cg + ci) * k[0] + kd) * k[1] + kh) * k[2] + kw];
                    s += xv * wv;
                    m += std::fabs(xv * wv);
                  }
            }
            const size_t idx = static_cast<size_t>((((n * cc.o + o) * os[0] + a) * os[1] + b) * os[2] + e);
            ref[idx] = s;
            mag[idx] = m;
          }
}

pk_attrs_convolution conv_attrs(const ConvCase &cc) {
  pk_attrs_convolution a = PK_ATTRS_CONVOLUTION_INIT;
  set_ints(a.num_stride, a.stride, cc.stride);
  set_ints(a.num_padding_low, a.padding_low, cc.lo);
  set_ints(a.num_padding_high, a.padding_high, cc.hi);
  set_ints(a.num_dilation, a.dilation, cc.dil);
  a.groups = cc.g;
  return a;
}

TEST_F(CpuLinalg, ConvolutionWithGroupsStrideAsymmetricPaddingAndDilation) {
  const ConvCase cc{1, 4, 6, 2, {7, 6}, {3, 3}, {2, 1}, {1, 0}, {0, 2}, {1, 2}};
  const std::vector<int64_t> os = conv_out_shape(cc);  // [1, 6, 3, 4]
  ASSERT_EQ(os, (std::vector<int64_t>{1, 6, 3, 4}));
  std::vector<float> x = values<float>(1 * 4 * 7 * 6, 0.2), w = values<float>(6 * 2 * 3 * 3, 1.3), y(72, 0.0f);
  std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end()), ref, mag;
  conv_reference(cc, xd, wd, ref, mag);
  const pk_attrs_convolution at = conv_attrs(cc);
  ASSERT_EQ(launch(PK_OP_CONVOLUTION, {tensor(x, kF32, {1, 4, 7, 6}), tensor(w, kF32, {6, 2, 3, 3})},
                   {tensor(y, kF32, os)}, &at),
            PK_OK)
      << last_error().message;
  const double K = 2 * 3 * 3;
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], (K + 1) * kEpsF32 * mag[i] + 1e-30) << i;
  // f64 on the same case.
  std::vector<double> yd(72, 0.0);
  ASSERT_EQ(launch(PK_OP_CONVOLUTION, {tensor(xd, kF64, {1, 4, 7, 6}), tensor(wd, kF64, {6, 2, 3, 3})},
                   {tensor(yd, kF64, os)}, &at),
            PK_OK)
      << last_error().message;
  for (size_t i = 0; i < yd.size(); ++i) EXPECT_NEAR(yd[i], ref[i], 1e-14 * (mag[i] + 1)) << i;
}

TEST_F(CpuLinalg, Convolution1DAnd3D) {
  const ConvCase c1{2, 3, 4, 1, {10}, {3}, {3}, {2}, {1}, {2}};
  std::vector<double> x1 = values<double>(2 * 3 * 10, 0.4), w1 = values<double>(4 * 3 * 3, 0.8), r1, m1;
  conv_reference(c1, x1, w1, r1, m1);
  const std::vector<int64_t> s1 = conv_out_shape(c1);
  std::vector<double> y1(r1.size(), 0.0);
  pk_attrs_convolution a1 = conv_attrs(c1);
  ASSERT_EQ(launch(PK_OP_CONVOLUTION, {tensor(x1, kF64, {2, 3, 10}), tensor(w1, kF64, {4, 3, 3})},
                   {tensor(y1, kF64, s1)}, &a1),
            PK_OK)
      << last_error().message;
  for (size_t i = 0; i < y1.size(); ++i) EXPECT_NEAR(y1[i], r1[i], 1e-14 * (m1[i] + 1)) << i;

  const ConvCase c3{1, 2, 2, 2, {4, 3, 5}, {2, 2, 3}, {1, 2, 2}, {0, 1, 1}, {1, 0, 2}, {1, 1, 1}};
  std::vector<float> x3 = values<float>(2 * 4 * 3 * 5, 0.5), w3 = values<float>(2 * 1 * 2 * 2 * 3, 0.6);
  std::vector<double> x3d(x3.begin(), x3.end()), w3d(w3.begin(), w3.end()), r3, m3;
  conv_reference(c3, x3d, w3d, r3, m3);
  const std::vector<int64_t> s3 = conv_out_shape(c3);
  std::vector<float> y3(r3.size(), 0.0f);
  pk_attrs_convolution a3 = conv_attrs(c3);
  ASSERT_EQ(launch(PK_OP_CONVOLUTION, {tensor(x3, kF32, {1, 2, 4, 3, 5}), tensor(w3, kF32, {2, 1, 2, 2, 3})},
                   {tensor(y3, kF32, s3)}, &a3),
            PK_OK)
      << last_error().message;
  for (size_t i = 0; i < y3.size(); ++i) EXPECT_NEAR(y3[i], r3[i], 13 * kEpsF32 * m3[i] + 1e-30) << i;
}

// --- bf16 contractions over the whole range ---
// Where the CPU has native bf16 kernels (AVX-512 BF16, AMX), oneDNN's bf16 matmul and convolution read subnormal
// inputs as zero and flush subnormal results. The contract has no such exception, so values near the bottom of the
// range must give the same sums as anywhere else. Operands are bf16 values scaled by 1 (the native path), 2^-64
// (products near 2^-128: f32 subnormals) and 2^60 (products near 2^120); the reference is a double loop, and the
// bound adds to the reduction bound the f32 subnormal spacing per term and bf16's half-ulp of the result.

std::vector<uint16_t> bf16_values(size_t n, double seed, double scale) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = bf16_bits(static_cast<float>(round_to_bf16(std::sin(seed + 1.7 * static_cast<double>(i)) * 0.9 * scale)));
  return v;
}

double bf16_contraction_bound(double ref, double mag, double terms) {
  return std::ldexp(std::fabs(ref), -8) + (terms + 1) * kEpsF32 * mag + (terms + 1) * std::ldexp(1.0, -149) +
         std::ldexp(1.0, -134);
}

TEST_F(CpuLinalg, Bf16MatmulsAreExactToTheContractFromSubnormalToHugeProducts) {
  const int64_t B = 2, M = 33, K = 70, N = 41;
  for (double scale : {1.0, std::ldexp(1.0, -64), std::ldexp(1.0, 60)}) {
    std::vector<uint16_t> a = bf16_values(B * M * K, 0.4, scale), b = bf16_values(B * K * N, 1.9, scale);
    std::vector<double> ref(B * M * N, 0.0), mag(B * M * N, 0.0);
    for (int64_t q = 0; q < B; ++q)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k) {
            const double p = bf16_value(a[(q * M + i) * K + k]) * bf16_value(b[(q * K + k) * N + j]);
            ref[(q * M + i) * N + j] += p;
            mag[(q * M + i) * N + j] += std::fabs(p);
          }
    // batch_matmul into a dense output, then into a transposed one ([B, M, N] stored as [B, N, M]).
    std::vector<uint16_t> c(B * M * N, 0), ct(B * M * N, 0);
    ASSERT_EQ(launch(PK_OP_BATCH_MATMUL, {tensor(a, kBF16, {B, M, K}), tensor(b, kBF16, {B, K, N})},
                     {tensor(c, kBF16, {B, M, N})}, nullptr),
              PK_OK)
        << last_error().message;
    ASSERT_EQ(launch(PK_OP_BATCH_MATMUL, {tensor(a, kBF16, {B, M, K}), tensor(b, kBF16, {B, K, N})},
                     {tensor(ct, kBF16, {B, M, N}, {M * N, 1, M})}, nullptr),
              PK_OK)
        << last_error().message;
    // addmm on the first batch with c = 0 (beta 1, alpha 1): the product kept in f32 for the epilogue.
    std::vector<uint16_t> zero(M * N, 0), y(M * N, 0);
    pk_attrs_addmm at = PK_ATTRS_ADDMM_INIT;
    ASSERT_EQ(launch(PK_OP_ADDMM, {tensor(zero, kBF16, {M, N}), tensor(a, kBF16, {M, K}), tensor(b, kBF16, {K, N})},
                     {tensor(y, kBF16, {M, N})}, &at),
              PK_OK)
        << last_error().message;
    for (int64_t q = 0; q < B; ++q)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          const size_t r = static_cast<size_t>((q * M + i) * N + j);
          const double bound = bf16_contraction_bound(ref[r], mag[r], K);
          const std::string where = "scale 2^" + std::to_string(std::ilogb(scale)) + " at " + std::to_string(q) + "," +
                                    std::to_string(i) + "," + std::to_string(j);
          ASSERT_NEAR(bf16_value(c[r]), ref[r], bound) << "dense " << where;
          ASSERT_NEAR(bf16_value(ct[(q * N + j) * M + i]), ref[r], bound) << "transposed " << where;
          if (q == 0) {
            ASSERT_NEAR(bf16_value(y[r]), ref[r], bound) << "addmm " << where;
          }
        }
  }
  // A subnormal operand meets a huge one: [2^-130, 1] . [2^100, 2^-40] = 2^-30 + 2^-40, which rounds to 2^-30
  // (0x3080). Read as zero, the subnormal would leave 2^-40 (0x2b80). 2^-130 is bf16 0x0008 (8 x 2^-133).
  std::vector<uint16_t> row = {0x0008, 0x3f80}, col = {0x7180, 0x2b80}, out(1, 0);
  ASSERT_EQ(launch(PK_OP_MATMUL, {tensor(row, kBF16, {1, 2}), tensor(col, kBF16, {2, 1})}, {tensor(out, kBF16, {1, 1})},
                   nullptr),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(out[0], 0x3080);
}

TEST_F(CpuLinalg, Bf16ConvolutionIsExactToTheContractFromSubnormalToHugeProducts) {
  const ConvCase cc{2, 6, 8, 2, {9, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  const std::vector<int64_t> os = conv_out_shape(cc);
  const double terms = 3 * 3 * 3;  // C / groups x kernel size
  for (double scale : {1.0, std::ldexp(1.0, -64), std::ldexp(1.0, 60)}) {
    std::vector<uint16_t> x = bf16_values(2 * 6 * 9 * 7, 0.8, scale), w = bf16_values(8 * 3 * 3 * 3, 2.6, scale);
    std::vector<double> xd(x.size()), wd(w.size()), ref, mag;
    for (size_t i = 0; i < x.size(); ++i) xd[i] = bf16_value(x[i]);
    for (size_t i = 0; i < w.size(); ++i) wd[i] = bf16_value(w[i]);
    conv_reference(cc, xd, wd, ref, mag);
    std::vector<uint16_t> y(ref.size(), 0);
    const pk_attrs_convolution at = conv_attrs(cc);
    ASSERT_EQ(launch(PK_OP_CONVOLUTION, {tensor(x, kBF16, {2, 6, 9, 7}), tensor(w, kBF16, {8, 3, 3, 3})},
                     {tensor(y, kBF16, os)}, &at),
              PK_OK)
        << last_error().message;
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(bf16_value(y[i]), ref[i], bf16_contraction_bound(ref[i], mag[i], terms))
          << "scale 2^" << std::ilogb(scale) << " at " << i;
  }
}

// --- linear, addmm, baddbmm ---

// The product is not rounded before the epilogue: a = [1, 2^-4], b = [1, 2^-4] give p = 1 + 2^-8, which bf16
// rounds to 1 (a tie, to even), so c = -1 gives 0 through the decomposition; the answer is 2^-8 (bf16 0x3b80).
// In f16, p = 1 + 2^-11 from [1, 2^-6] . [1, 2^-5] rounds to 1 the same way; the answer is 2^-11 (0x1000).
TEST_F(CpuLinalg, AddmmRoundsOnceAfterTheEpilogue) {
  pk_attrs_addmm at = PK_ATTRS_ADDMM_INIT;
  std::vector<uint16_t> c = {0xbf80}, a = {0x3f80, 0x3d80}, b = {0x3f80, 0x3d80}, y = {0};  // -1; 1, 2^-4
  ASSERT_EQ(launch(PK_OP_ADDMM, {tensor(c, kBF16, {1, 1}), tensor(a, kBF16, {1, 2}), tensor(b, kBF16, {2, 1})},
                   {tensor(y, kBF16, {1, 1})}, &at),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(y[0], 0x3b80);
  std::vector<uint16_t> ch = {0xbc00}, ah = {0x3c00, 0x2400}, bh = {0x3c00, 0x2800}, yh = {0};  // -1; 1, 2^-6, 2^-5
  ASSERT_EQ(launch(PK_OP_ADDMM,
                   {tensor(ch, PK_DTYPE_F16_DESC, {1, 1}), tensor(ah, PK_DTYPE_F16_DESC, {1, 2}),
                    tensor(bh, PK_DTYPE_F16_DESC, {2, 1})},
                   {tensor(yh, PK_DTYPE_F16_DESC, {1, 1})}, &at),
            PK_OK);
  EXPECT_EQ(yh[0], 0x1000);
  // beta = 0 still multiplies c: the table's c * 0 is NaN for an infinite c.
  at.beta = 0;
  std::vector<float> cf = {std::numeric_limits<float>::infinity(), 5}, af = {1, 2}, bf = {3, 4}, yf(2);
  ASSERT_EQ(launch(PK_OP_ADDMM, {tensor(cf, kF32, {2, 1}), tensor(af, kF32, {2, 1}), tensor(bf, kF32, {1, 1})},
                   {tensor(yf, kF32, {2, 1})}, &at),
            PK_OK);
  EXPECT_TRUE(std::isnan(yf[0]));
  EXPECT_EQ(yf[1], 6.0f);  // 0 * 5 + 2 * 3
}

// baddbmm with beta 0.5, alpha 2 and c broadcast over the batch (zero stride); linear with a transposed x and a
// bias along the last axis. References are double loops.
TEST_F(CpuLinalg, BaddbmmAndLinearMatchADoubleLoop) {
  const int64_t B = 3, M = 4, K = 5, N = 6;
  std::vector<float> c = values<float>(M * N, 0.1), a = values<float>(B * M * K, 0.2),
                     b = values<float>(B * K * N, 0.3);
  std::vector<float> y(B * M * N);
  pk_attrs_baddbmm at = PK_ATTRS_BADDBMM_INIT;
  at.beta = 0.5;
  at.alpha = 2;
  ASSERT_EQ(launch(PK_OP_BADDBMM,
                   {tensor(c, kF32, {B, M, N}, {0, N, 1}), tensor(a, kF32, {B, M, K}), tensor(b, kF32, {B, K, N})},
                   {tensor(y, kF32, {B, M, N})}, &at),
            PK_OK)
      << last_error().message;
  for (int64_t q = 0; q < B; ++q)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double p = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          p += static_cast<double>(a[(q * M + i) * K + k]) * b[(q * K + k) * N + j];
          mag += std::fabs(static_cast<double>(a[(q * M + i) * K + k]) * b[(q * K + k) * N + j]);
        }
        const double want = 0.5 * c[i * N + j] + 2 * p;
        EXPECT_NEAR(y[(q * M + i) * N + j], want, (2 * K + 1) * kEpsF32 * (2 * mag + std::fabs(c[i * N + j])))
            << q << "," << i << "," << j;
      }
  // linear: x [2, 3, K] stored as [K, 2, 3] (strided view), weight [N, K], bias [N].
  std::vector<double> xs = values<double>(2 * 3 * K, 0.4), w = values<double>(N * K, 0.5),
                      bias = values<double>(N, 0.6);
  std::vector<double> yl(2 * 3 * N);
  ASSERT_EQ(
      launch(PK_OP_LINEAR, {tensor(xs, kF64, {2, 3, K}, {3, 1, 6}), tensor(w, kF64, {N, K}), tensor(bias, kF64, {N})},
             {tensor(yl, kF64, {2, 3, N})}, nullptr),
      PK_OK)
      << last_error().message;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j = 0; j < N; ++j) {
      double want = bias[j];
      for (int64_t k = 0; k < K; ++k) want += xs[k * 6 + r] * w[j * K + k];
      EXPECT_NEAR(yl[r * N + j], want, 1e-14) << r << "," << j;
    }
}

// linear f32 on dense operands (the fast path: the weight read in place, dense [N, K] or the transposed view of a
// dense [K, N], the bias added to the accumulator) against a double loop, at a size a library kernel takes; then
// the cases its range guard must hand to the exact path: an infinite x (inf * 0 would be NaN in a blocked kernel
// that pads), products that overflow f32 while the exact sum does not, and a bias that overflows the sum.
TEST_F(CpuLinalg, LinearF32DenseAndTransposedWeightMatchADoubleLoop) {
  const int64_t M = 37, K = 70, N = 53;
  std::vector<float> x = values<float>(M * K, 0.8), w = values<float>(N * K, 1.9), bias = values<float>(N, 2.6);
  std::vector<float> wt(K * N);  // w^T stored dense [K, N]
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) wt[k * N + j] = w[j * K + k];
  const auto check = [&](const std::vector<float> &y, const char *what) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double want = bias[j], mag = std::fabs(bias[j]);
        for (int64_t k = 0; k < K; ++k) {
          want += static_cast<double>(x[i * K + k]) * w[j * K + k];
          mag += std::fabs(static_cast<double>(x[i * K + k]) * w[j * K + k]);
        }
        ASSERT_NEAR(y[i * N + j], want, (K + 2) * kEpsF32 * mag) << what << " " << i << "," << j;
      }
  };
  std::vector<float> y(M * N, -7.0f), yt(M * N, -7.0f);
  ASSERT_EQ(launch(PK_OP_LINEAR, {tensor(x, kF32, {M, K}), tensor(w, kF32, {N, K}), tensor(bias, kF32, {N})},
                   {tensor(y, kF32, {M, N})}, nullptr),
            PK_OK)
      << last_error().message;
  check(y, "dense weight");
  ASSERT_EQ(launch(PK_OP_LINEAR, {tensor(x, kF32, {M, K}), tensor(wt, kF32, {N, K}, {1, N}), tensor(bias, kF32, {N})},
                   {tensor(yt, kF32, {M, N})}, nullptr),
            PK_OK)
      << last_error().message;
  check(yt, "transposed weight");

  // Row 0 of x holds an infinity that meets only positive weights: that row is +inf, the others stay finite.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xi = x, wp(N * K, 0.5f), yi(M * N);
  xi[3] = inf;
  ASSERT_EQ(launch(PK_OP_LINEAR, {tensor(xi, kF32, {M, K}), tensor(wp, kF32, {N, K}), tensor(bias, kF32, {N})},
                   {tensor(yi, kF32, {M, N})}, nullptr),
            PK_OK);
  for (int64_t j = 0; j < N; ++j) EXPECT_EQ(yi[j], inf) << j;
  for (int64_t j = 0; j < N; ++j) {
    double want = bias[j];
    for (int64_t k = 0; k < K; ++k) want += 0.5 * static_cast<double>(x[K + k]);  // row 1
    EXPECT_NEAR(yi[N + j], want, (K + 2) * kEpsF32 * (std::fabs(want) + K)) << j;
  }
  // 2^100 * 2^100 overflows f32 twice over, and the two products cancel exactly: the answer is the bias.
  std::vector<float> xo = {0x1p100f, 0x1p100f}, wo = {0x1p100f, -0x1p100f}, bo = {1.5f}, yo = {0};
  ASSERT_EQ(launch(PK_OP_LINEAR, {tensor(xo, kF32, {1, 2}), tensor(wo, kF32, {1, 2}), tensor(bo, kF32, {1})},
                   {tensor(yo, kF32, {1, 1})}, nullptr),
            PK_OK);
  EXPECT_EQ(yo[0], 1.5f);
  // A finite product plus a bias past the range rounds to +inf, once (as the exact sum would).
  std::vector<float> xb = {3e38f}, wb = {1.0f}, bb = {3e38f}, yb = {0};
  ASSERT_EQ(launch(PK_OP_LINEAR, {tensor(xb, kF32, {1, 1}), tensor(wb, kF32, {1, 1}), tensor(bb, kF32, {1})},
                   {tensor(yb, kF32, {1, 1})}, nullptr),
            PK_OK);
  EXPECT_EQ(yb[0], inf);
}

// Products with enough rows that the right operand is first relaid (M >= 256; f32 where N >= 2 K, bf16 always:
// see kRelayoutRows in kernels_linalg.cpp), against a double loop: matmul and batch_matmul (each batch its own
// right operand), linear with nn.Linear's dense weight and with the [K, N] one (GPT-2's Conv1D), bf16
// batch_matmul to the contract's bound, and an operand that overflows the f32 products (the guard still sends it
// to the exact path: [2^70, 2^70] . [2^60, -2^60] = 0).
TEST_F(CpuLinalg, RelaidRightOperandsMatchADoubleLoop) {
  const int64_t B = 2, M = 300, K = 40, N = 100;
  std::vector<float> a = values<float>(B * M * K, 0.6), b = values<float>(B * K * N, 1.7);
  std::vector<float> c(B * M * N, -1.0f), c1(M * N, -1.0f);
  ASSERT_EQ(launch(PK_OP_BATCH_MATMUL, {tensor(a, kF32, {B, M, K}), tensor(b, kF32, {B, K, N})},
                   {tensor(c, kF32, {B, M, N})}, nullptr),
            PK_OK)
      << last_error().message;
  ASSERT_EQ(
      launch(PK_OP_MATMUL, {tensor(a, kF32, {M, K}), tensor(b, kF32, {K, N})}, {tensor(c1, kF32, {M, N})}, nullptr),
      PK_OK)
      << last_error().message;
  std::vector<float> bias = values<float>(N, 2.1), yl(M * N, -1.0f);  // linear with w = b[0] read as [N, K]^T
  ASSERT_EQ(launch(PK_OP_LINEAR, {tensor(a, kF32, {M, K}), tensor(b, kF32, {N, K}, {1, N}), tensor(bias, kF32, {N})},
                   {tensor(yl, kF32, {M, N})}, nullptr),
            PK_OK)
      << last_error().message;
  for (int64_t q = 0; q < B; ++q)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double want = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = static_cast<double>(a[(q * M + i) * K + k]) * b[(q * K + k) * N + j];
          want += p;
          mag += std::fabs(p);
        }
        ASSERT_NEAR(c[(q * M + i) * N + j], want, (K + 1) * kEpsF32 * mag) << "batch " << q << "," << i << "," << j;
        if (q == 0) {
          ASSERT_NEAR(c1[i * N + j], want, (K + 1) * kEpsF32 * mag) << "matmul " << i << "," << j;
          ASSERT_NEAR(yl[i * N + j], want + bias[j], (K + 2) * kEpsF32 * (mag + std::fabs(bias[j])))
              << "linear " << i << "," << j;
        }
      }
  // bf16: batch_matmul with the blocked relayout, to the contract's bound.
  const int64_t Mb = 260, Kb = 24, Nb = 30;
  std::vector<uint16_t> ab = bf16_values(B * Mb * Kb, 0.4, 1.0), bb = bf16_values(B * Kb * Nb, 1.9, 1.0);
  std::vector<uint16_t> cb(B * Mb * Nb, 0);
  ASSERT_EQ(launch(PK_OP_BATCH_MATMUL, {tensor(ab, kBF16, {B, Mb, Kb}), tensor(bb, kBF16, {B, Kb, Nb})},
                   {tensor(cb, kBF16, {B, Mb, Nb})}, nullptr),
            PK_OK)
      << last_error().message;
  for (int64_t q = 0; q < B; ++q)
    for (int64_t i = 0; i < Mb; ++i)
      for (int64_t j = 0; j < Nb; ++j) {
        double want = 0, mag = 0;
        for (int64_t k = 0; k < Kb; ++k) {
          const double p = bf16_value(ab[(q * Mb + i) * Kb + k]) * bf16_value(bb[(q * Kb + k) * Nb + j]);
          want += p;
          mag += std::fabs(p);
        }
        ASSERT_NEAR(bf16_value(cb[(q * Mb + i) * Nb + j]), want, bf16_contraction_bound(want, mag, Kb))
            << "bf16 " << q << "," << i << "," << j;
      }
  // f32 products past the range: row 0 of a is [2^70, 2^70, 0, ...], column 0 of b is [2^60, -2^60, 0, ...].
  std::vector<float> ao(M * K, 0.0f), bo(K * N, 0.0f), co(M * N, -1.0f);
  ao[0] = ao[1] = 0x1p70f;
  bo[0] = 0x1p60f;
  bo[N] = -0x1p60f;
  ASSERT_EQ(
      launch(PK_OP_MATMUL, {tensor(ao, kF32, {M, K}), tensor(bo, kF32, {K, N})}, {tensor(co, kF32, {M, N})}, nullptr),
      PK_OK)
      << last_error().message;
  for (int64_t r = 0; r < M * N; ++r) ASSERT_EQ(co[r], 0.0f) << r;
}

// --- pooling ---

struct PoolCase {
  int64_t n, c, h, w;
  int64_t k[2], s[2], p[2], d[2];
  int64_t oh() const { return (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) / s[0] + 1; }
  int64_t ow() const { return (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) / s[1] + 1; }
};

// Max and mean over the windows of an explicitly padded copy (padding -inf for max; for the mean, 0 with a
// count grid of 1 on the input and `pad_counts` on the padding), in double.
void pool_reference(const PoolCase &pc, const std::vector<double> &x, bool is_max, bool pad_counts,
                    std::vector<double> &out, std::vector<double> &mag) {
  const int64_t ph = pc.h + 2 * pc.p[0], pw = pc.w + 2 * pc.p[1];
  out.clear();
  mag.clear();
  for (int64_t plane = 0; plane < pc.n * pc.c; ++plane) {
    std::vector<double> xp(static_cast<size_t>(ph * pw), is_max ? -HUGE_VAL : 0.0);
    std::vector<double> cnt(static_cast<size_t>(ph * pw), pad_counts ? 1.0 : 0.0);
    for (int64_t i = 0; i < pc.h; ++i)
      for (int64_t j = 0; j < pc.w; ++j) {
        xp[static_cast<size_t>((i + pc.p[0]) * pw + j + pc.p[1])] =
            x[static_cast<size_t>((plane * pc.h + i) * pc.w + j)];
        cnt[static_cast<size_t>((i + pc.p[0]) * pw + j + pc.p[1])] = 1.0;
      }
    for (int64_t oi = 0; oi < pc.oh(); ++oi)
      for (int64_t oj = 0; oj < pc.ow(); ++oj) {
        double m = -HUGE_VAL, s = 0, a = 0, n = 0;
        for (int64_t ki = 0; ki < pc.k[0]; ++ki)
          for (int64_t kj = 0; kj < pc.k[1]; ++kj) {
            const size_t at = static_cast<size_t>((oi * pc.s[0] + ki * pc.d[0]) * pw + oj * pc.s[1] + kj * pc.d[1]);
            const double v = xp[at];  // the table's max: NaN wins, then the larger value, +0 over -0
            if (!std::isnan(m) && (std::isnan(v) || v > m || (v == m && !std::signbit(v)))) m = v;
            s += xp[at];
            a += std::fabs(xp[at]);
            n += cnt[at];
          }
        out.push_back(is_max ? m : s / n);
        mag.push_back(is_max ? 0 : a / n);
      }
  }
}

pk_attrs_max_pool2d max_pool_attrs(const PoolCase &pc) {
  pk_attrs_max_pool2d a = PK_ATTRS_MAX_POOL2D_INIT;
  set_ints(a.num_kernel_size, a.kernel_size, {pc.k[0], pc.k[1]});
  set_ints(a.num_stride, a.stride, {pc.s[0], pc.s[1]});
  set_ints(a.num_padding, a.padding, {pc.p[0], pc.p[1]});
  set_ints(a.num_dilation, a.dilation, {pc.d[0], pc.d[1]});
  return a;
}

pk_attrs_avg_pool2d avg_pool_attrs(const PoolCase &pc, bool include_pad) {
  pk_attrs_avg_pool2d a = PK_ATTRS_AVG_POOL2D_INIT;
  set_ints(a.num_kernel_size, a.kernel_size, {pc.k[0], pc.k[1]});
  set_ints(a.num_stride, a.stride, {pc.s[0], pc.s[1]});
  set_ints(a.num_padding, a.padding, {pc.p[0], pc.p[1]});
  a.count_include_pad = include_pad ? 1 : 0;
  return a;
}

// f32 (oneDNN's path for finite values), f64 (the loops) and a transposed f32 view (packed first), with padding,
// stride, dilation and a floor-mode remainder.
TEST_F(CpuLinalg, MaxAndAvgPoolMatchAPaddedWindowReference) {
  const PoolCase pc{2, 3, 9, 11, {3, 2}, {2, 1}, {1, 1}, {1, 2}};
  const int64_t numel = pc.n * pc.c * pc.h * pc.w;
  std::vector<float> x = values<float>(static_cast<size_t>(numel), 0.7);
  std::vector<double> xd(x.begin(), x.end()), ref, mag;
  const std::vector<int64_t> in_shape = {pc.n, pc.c, pc.h, pc.w}, out_shape = {pc.n, pc.c, pc.oh(), pc.ow()};
  const size_t out_n = static_cast<size_t>(pc.n * pc.c * pc.oh() * pc.ow());
  // The same values stored [N, C, W, H] and viewed as [N, C, H, W].
  std::vector<float> xt(x.size());
  for (int64_t p = 0; p < pc.n * pc.c; ++p)
    for (int64_t i = 0; i < pc.h; ++i)
      for (int64_t j = 0; j < pc.w; ++j)
        xt[static_cast<size_t>((p * pc.w + j) * pc.h + i)] = x[static_cast<size_t>((p * pc.h + i) * pc.w + j)];
  const std::vector<int64_t> t_strides = {pc.c * pc.h * pc.w, pc.h * pc.w, 1, pc.h};

  const pk_attrs_max_pool2d am = max_pool_attrs(pc);
  pool_reference(pc, xd, true, false, ref, mag);
  std::vector<float> y(out_n), yt(out_n);
  std::vector<double> yd(out_n);
  ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(x, kF32, in_shape)}, {tensor(y, kF32, out_shape)}, &am), PK_OK)
      << last_error().message;
  ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(xd, kF64, in_shape)}, {tensor(yd, kF64, out_shape)}, &am), PK_OK);
  ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(xt, kF32, in_shape, t_strides)}, {tensor(yt, kF32, out_shape)}, &am),
            PK_OK);
  for (size_t i = 0; i < out_n; ++i) {
    EXPECT_EQ(y[i], ref[i]) << "max f32 " << i;
    EXPECT_EQ(yd[i], ref[i]) << "max f64 " << i;
    EXPECT_EQ(yt[i], ref[i]) << "max strided " << i;
  }

  PoolCase pa = pc;
  pa.k[0] = 3, pa.k[1] = 3, pa.s[0] = 2, pa.s[1] = 2, pa.d[0] = 1, pa.d[1] = 1;
  const std::vector<int64_t> avg_shape = {pa.n, pa.c, pa.oh(), pa.ow()};
  const size_t avg_n = static_cast<size_t>(pa.n * pa.c * pa.oh() * pa.ow());
  for (bool include : {true, false}) {
    const pk_attrs_avg_pool2d aa = avg_pool_attrs(pa, include);
    pool_reference(pa, xd, false, include, ref, mag);
    std::vector<float> ya(avg_n), yat(avg_n);
    std::vector<double> yad(avg_n);
    ASSERT_EQ(launch(PK_OP_AVG_POOL2D, {tensor(x, kF32, in_shape)}, {tensor(ya, kF32, avg_shape)}, &aa), PK_OK)
        << last_error().message;
    ASSERT_EQ(launch(PK_OP_AVG_POOL2D, {tensor(xd, kF64, in_shape)}, {tensor(yad, kF64, avg_shape)}, &aa), PK_OK);
    ASSERT_EQ(launch(PK_OP_AVG_POOL2D, {tensor(xt, kF32, in_shape, t_strides)}, {tensor(yat, kF32, avg_shape)}, &aa),
              PK_OK);
    for (size_t i = 0; i < avg_n; ++i) {
      EXPECT_NEAR(ya[i], ref[i], 10 * kEpsF32 * mag[i] + 1e-30) << "avg f32 include=" << include << " " << i;
      EXPECT_NEAR(yat[i], ref[i], 10 * kEpsF32 * mag[i] + 1e-30) << "avg strided include=" << include << " " << i;
      EXPECT_NEAR(yad[i], ref[i], 1e-15 * mag[i] + 1e-300) << "avg f64 include=" << include << " " << i;
    }
  }
}

// Inputs large enough for oneDNN's path (f32 and bf16), then the same input with values oneDNN's max or f32 window
// sums would get wrong: a NaN (must propagate), a -0 beside a +0 (+0 wins) and a pair of 1.9e38 (their f32 sum
// overflows; the mean is finite).
TEST_F(CpuLinalg, LargePoolsKeepTheTablesRules) {
  const PoolCase pc{2, 16, 48, 48, {3, 3}, {2, 2}, {1, 1}, {1, 1}};
  const int64_t numel = pc.n * pc.c * pc.h * pc.w;
  const std::vector<int64_t> in_shape = {pc.n, pc.c, pc.h, pc.w}, out_shape = {pc.n, pc.c, pc.oh(), pc.ow()};
  const size_t out_n = static_cast<size_t>(pc.n * pc.c * pc.oh() * pc.ow());
  std::vector<float> x = values<float>(static_cast<size_t>(numel), 0.9);
  for (float &v : x) v = std::round(v * 32) / 8;  // exact in bf16
  const pk_attrs_max_pool2d am = max_pool_attrs(pc);
  const pk_attrs_avg_pool2d aa = avg_pool_attrs(pc, true);
  auto check = [&](const std::string &what) {
    std::vector<double> xd(x.begin(), x.end()), ref, mag, aref, amag;
    pool_reference(pc, xd, true, false, ref, mag);
    pool_reference(pc, xd, false, true, aref, amag);
    std::vector<uint16_t> xb(x.size()), yb(out_n), yab(out_n);
    for (size_t i = 0; i < x.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &x[i], 4);
      xb[i] = static_cast<uint16_t>(u >> 16);
    }
    std::vector<float> y(out_n), ya(out_n);
    ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(x, kF32, in_shape)}, {tensor(y, kF32, out_shape)}, &am), PK_OK);
    ASSERT_EQ(launch(PK_OP_AVG_POOL2D, {tensor(x, kF32, in_shape)}, {tensor(ya, kF32, out_shape)}, &aa), PK_OK);
    ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(xb, kBF16, in_shape)}, {tensor(yb, kBF16, out_shape)}, &am), PK_OK);
    ASSERT_EQ(launch(PK_OP_AVG_POOL2D, {tensor(xb, kBF16, in_shape)}, {tensor(yab, kBF16, out_shape)}, &aa), PK_OK);
    int bad = 0;
    for (size_t i = 0; i < out_n && bad < 10; ++i) {
      const uint32_t ub = static_cast<uint32_t>(yb[i]) << 16, uab = static_cast<uint32_t>(yab[i]) << 16;
      float b, ab;
      std::memcpy(&b, &ub, 4);
      std::memcpy(&ab, &uab, 4);
      const bool max_ok = std::isnan(ref[i])
                              ? std::isnan(y[i]) && std::isnan(b)
                              : y[i] == ref[i] && b == ref[i] && std::signbit(y[i]) == std::signbit(ref[i]) &&
                                    std::signbit(b) == std::signbit(ref[i]);
      const bool avg_ok =
          std::isnan(aref[i])
              ? std::isnan(ya[i]) && std::isnan(ab)
              : std::fabs(ya[i] - aref[i]) <= 10 * kEpsF32 * amag[i] + 1e-30 &&
                    std::fabs(ab - aref[i]) <= std::ldexp(1.0, -8) * std::fabs(aref[i]) + 10 * kEpsF32 * amag[i];
      if (!max_ok || !avg_ok) ++bad;
      EXPECT_TRUE(max_ok) << what << " max " << i << ": f32 " << y[i] << ", bf16 " << b << ", want " << ref[i];
      EXPECT_TRUE(avg_ok) << what << " avg " << i << ": f32 " << ya[i] << ", bf16 " << ab << ", want " << aref[i];
    }
  };
  check("finite");
  // One NaN, a -0 next to a +0 where every other value of the window is negative, and two 1.9e38 in one window.
  x[5 * 48 + 7] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j) x[static_cast<size_t>(48 * 48 + (20 + i) * 48 + 30 + j)] = -1.5f;
  x[48 * 48 + 21 * 48 + 31] = -0.0f;
  x[48 * 48 + 21 * 48 + 32] = 0.0f;
  x[3 * 48 * 48 + 10 * 48 + 10] = 0x1.1cp+127f;  // 1.9e38, exact in bf16
  x[3 * 48 * 48 + 10 * 48 + 11] = 0x1.1cp+127f;
  check("edge values");
}

// The table's max: NaN propagates, +0 beats -0, padding counts as -inf (a window of padding only gives -inf, or
// for integers what -inf converts to: the lowest value).
TEST_F(CpuLinalg, MaxPoolEdgeValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // [1, 1, 2, 3], 2 x 2 windows, stride 1: {NaN, 1, -0, +0} -> NaN and {1, 2, +0, 5} -> 5.
  std::vector<float> x = {nan, 1, 2, -0.0f, 0.0f, 5}, y(2);
  PoolCase pc{1, 1, 2, 3, {2, 2}, {1, 1}, {0, 0}, {1, 1}};
  pk_attrs_max_pool2d a = max_pool_attrs(pc);
  ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(x, kF32, {1, 1, 2, 3})}, {tensor(y, kF32, {1, 1, 1, 2})}, &a), PK_OK)
      << last_error().message;
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 5.0f);
  // [1, 1, 2, 2] with 1 x 2 windows: {-0, +0} -> +0, {-1, -0} -> -0.
  std::vector<float> z = {-0.0f, 0.0f, -1, -0.0f}, yz(2);
  pc = PoolCase{1, 1, 2, 2, {1, 2}, {1, 1}, {0, 0}, {1, 1}};
  a = max_pool_attrs(pc);
  ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(z, kF32, {1, 1, 2, 2})}, {tensor(yz, kF32, {1, 1, 2, 1})}, &a), PK_OK);
  EXPECT_EQ(yz[0], 0.0f);
  EXPECT_FALSE(std::signbit(yz[0]));
  EXPECT_EQ(yz[1], 0.0f);
  EXPECT_TRUE(std::signbit(yz[1]));
  // One element, 1 x 1 windows and padding 1: a 3 x 3 output whose border windows hold padding only.
  pc = PoolCase{1, 1, 1, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  a = max_pool_attrs(pc);
  std::vector<float> one = {3}, y9(9);
  std::vector<int32_t> one_i = {-7}, y9i(9);
  ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(one, kF32, {1, 1, 1, 1})}, {tensor(y9, kF32, {1, 1, 3, 3})}, &a), PK_OK)
      << last_error().message;
  ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(one_i, kI32, {1, 1, 1, 1})}, {tensor(y9i, kI32, {1, 1, 3, 3})}, &a),
            PK_OK);
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(y9[i], i == 4 ? 3.0f : -inf) << i;
    EXPECT_EQ(y9i[i], i == 4 ? -7 : std::numeric_limits<int32_t>::lowest()) << i;
  }
  // bf16 (exact values k / 8): the max is one of the inputs, bit for bit.
  std::vector<float> xf = values<float>(2 * 6 * 6, 0.3);
  std::vector<uint16_t> xb(xf.size()), yb(2 * 3 * 3);
  std::vector<double> xr(xf.size()), ref, mag;
  for (size_t i = 0; i < xf.size(); ++i) {
    const float v = std::round(xf[i] * 32) / 8;  // in [-3.6, 3.6], exact in bf16
    uint32_t u;
    std::memcpy(&u, &v, 4);
    xb[i] = static_cast<uint16_t>(u >> 16);
    xr[i] = v;
  }
  pc = PoolCase{1, 2, 6, 6, {2, 2}, {2, 2}, {0, 0}, {1, 1}};
  a = max_pool_attrs(pc);
  pool_reference(pc, xr, true, false, ref, mag);
  ASSERT_EQ(launch(PK_OP_MAX_POOL2D, {tensor(xb, kBF16, {1, 2, 6, 6})}, {tensor(yb, kBF16, {1, 2, 3, 3})}, &a), PK_OK);
  for (size_t i = 0; i < yb.size(); ++i) {
    const uint32_t u = static_cast<uint32_t>(yb[i]) << 16;
    float v;
    std::memcpy(&v, &u, 4);
    EXPECT_EQ(v, ref[i]) << "bf16 " << i;
  }
}

// x = [[1, 2], [3, 4]], 2 x 2 windows, stride 2, padding 1: each window holds one element. Counting the padding
// divides by 4 (0.25, 0.5, 0.75, 1), not counting it by 1 (the elements themselves). Also f16 (exact here).
TEST_F(CpuLinalg, AvgPoolCountsThePaddingOrNot) {
  const PoolCase pc{1, 1, 2, 2, {2, 2}, {2, 2}, {1, 1}, {1, 1}};
  for (bool include : {true, false}) {
    const pk_attrs_avg_pool2d a = avg_pool_attrs(pc, include);
    std::vector<float> x = {1, 2, 3, 4}, y(4);
    ASSERT_EQ(launch(PK_OP_AVG_POOL2D, {tensor(x, kF32, {1, 1, 2, 2})}, {tensor(y, kF32, {1, 1, 2, 2})}, &a), PK_OK)
        << last_error().message;
    std::vector<uint16_t> xh = {0x3c00, 0x4000, 0x4200, 0x4400}, yh(4);  // 1, 2, 3, 4 in f16
    ASSERT_EQ(launch(PK_OP_AVG_POOL2D, {tensor(xh, PK_DTYPE_F16_DESC, {1, 1, 2, 2})},
                     {tensor(yh, PK_DTYPE_F16_DESC, {1, 1, 2, 2})}, &a),
              PK_OK);
    const float want_inc[] = {0.25f, 0.5f, 0.75f, 1.0f}, want_exc[] = {1, 2, 3, 4};
    const uint16_t half_inc[] = {0x3400, 0x3800, 0x3a00, 0x3c00};  // 0.25, 0.5, 0.75, 1
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(y[i], include ? want_inc[i] : want_exc[i]) << "include=" << include << " " << i;
      EXPECT_EQ(yh[i], include ? half_inc[i] : xh[i]) << "f16 include=" << include << " " << i;
    }
  }
}

// x[h][w] = 7 h + w on [5, 7] with output [3, 2]: the bins are h in [0, 2), [1, 4), [3, 5) and w in [0, 4),
// [3, 7) (they overlap), so y = 7 mean(h) + mean(w) = [[5, 8], [15.5, 18.5], [26, 29]].
// The table defines the op as two products with bin-weight matrices, so a non-finite input meets the zero
// weights of the other bins: x = [[inf, 1], [2, 3]] to [2, 1] gives t = [[inf, 1], [inf * 0 = NaN, 3]] (means over
// h per column), then y = [inf, NaN]; the finite plane beside it is unaffected.
TEST_F(CpuLinalg, AdaptiveAvgPoolBinsAndTheTablesNonFiniteRule) {
  pk_attrs_adaptive_avg_pool2d a = PK_ATTRS_ADAPTIVE_AVG_POOL2D_INIT;
  set_ints(a.num_output_size, a.output_size, {3, 2});
  std::vector<float> x(35), y(6);
  std::vector<double> xd(35), yd(6);
  for (int i = 0; i < 35; ++i) x[i] = static_cast<float>(xd[i] = i);
  ASSERT_EQ(launch(PK_OP_ADAPTIVE_AVG_POOL2D, {tensor(x, kF32, {1, 1, 5, 7})}, {tensor(y, kF32, {1, 1, 3, 2})}, &a),
            PK_OK)
      << last_error().message;
  ASSERT_EQ(launch(PK_OP_ADAPTIVE_AVG_POOL2D, {tensor(xd, kF64, {1, 1, 5, 7})}, {tensor(yd, kF64, {1, 1, 3, 2})}, &a),
            PK_OK);
  const double want[] = {5, 8, 15.5, 18.5, 26, 29};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(y[i], want[i]) << i;
    EXPECT_EQ(yd[i], want[i]) << i;
  }
  set_ints(a.num_output_size, a.output_size, {2, 1});
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xn = {inf, 1, 2, 3, 1, 2, 3, 4}, yn(4);
  ASSERT_EQ(launch(PK_OP_ADAPTIVE_AVG_POOL2D, {tensor(xn, kF32, {1, 2, 2, 2})}, {tensor(yn, kF32, {1, 2, 2, 1})}, &a),
            PK_OK);
  EXPECT_EQ(yn[0], inf);
  EXPECT_TRUE(std::isnan(yn[1]));
  EXPECT_EQ(yn[2], 1.5f);
  EXPECT_EQ(yn[3], 3.5f);
}

// x_j = exp(2 pi i m j / n) has the DFT X_k = n [k == m] (forward, unnormalized).
std::vector<cd> exponential(int64_t n, int64_t m) {
  std::vector<cd> x(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    x[static_cast<size_t>(j)] = std::polar(1.0, 2 * kPi * static_cast<double>(m * j % n) / n);
  return x;
}

TEST_F(CpuLinalg, FftC2COfASingleExponentialIsADelta) {
  for (int64_t n : {8, 12, 100, 1}) {
    const int64_t m = n > 3 ? 3 : 0;
    std::vector<cd> x = exponential(n, m), out(static_cast<size_t>(n));
    pk_attrs_fft_c2c f = PK_ATTRS_FFT_C2C_INIT;
    set_ints(f.num_dims, f.dims, {0});
    ASSERT_EQ(launch(PK_OP_FFT_C2C, {tensor(x, kC128, {n})}, {tensor(out, kC128, {n})}, &f), PK_OK)
        << last_error().message;
    for (int64_t k = 0; k < n; ++k) {
      const cd want = k == m ? cd(static_cast<double>(n), 0) : cd(0, 0);
      EXPECT_NEAR(std::abs(out[static_cast<size_t>(k)] - want), 0.0, 1e-13 * n) << "n=" << n << " k=" << k;
    }
    // The inverse (unnormalized) of the delta n [k == m] is n x.
    std::vector<cd> delta(static_cast<size_t>(n), cd(0, 0)), back(static_cast<size_t>(n));
    delta[static_cast<size_t>(m)] = cd(1, 0);
    f.forward = 0;
    ASSERT_EQ(launch(PK_OP_FFT_C2C, {tensor(delta, kC128, {n})}, {tensor(back, kC128, {n})}, &f), PK_OK);
    for (int64_t j = 0; j < n; ++j)
      EXPECT_NEAR(std::abs(back[static_cast<size_t>(j)] - x[static_cast<size_t>(j)]), 0.0, 1e-14 * n) << n << " " << j;
  }
  // c64, length 8.
  std::vector<cd> x = exponential(8, 5);
  std::vector<cf> xf(x.begin(), x.end()), of(8);
  pk_attrs_fft_c2c f = PK_ATTRS_FFT_C2C_INIT;
  set_ints(f.num_dims, f.dims, {0});
  ASSERT_EQ(launch(PK_OP_FFT_C2C, {tensor(xf, kC64, {8})}, {tensor(of, kC64, {8})}, &f), PK_OK) << last_error().message;
  for (int k = 0; k < 8; ++k) EXPECT_NEAR(std::abs(of[k] - cf(k == 5 ? 8.0f : 0.0f, 0.0f)), 0.0, 8e-6) << k;
}

TEST_F(CpuLinalg, FftC2COverTwoAxesOfAStridedInput) {
  // x(j0, j1) = exp(2 pi i (j0 / 4 + 5 j1 / 6)) -> 24 at (1, 5). The input is stored transposed (strides [1, 4]).
  std::vector<cd> x(24), out(24);
  for (int j0 = 0; j0 < 4; ++j0)
    for (int j1 = 0; j1 < 6; ++j1) x[j1 * 4 + j0] = std::polar(1.0, 2 * kPi * (j0 / 4.0 + 5.0 * j1 / 6.0));
  pk_attrs_fft_c2c f = PK_ATTRS_FFT_C2C_INIT;
  set_ints(f.num_dims, f.dims, {1, 0});
  ASSERT_EQ(launch(PK_OP_FFT_C2C, {tensor(x, kC128, {4, 6}, {1, 4})}, {tensor(out, kC128, {4, 6})}, &f), PK_OK)
      << last_error().message;
  for (int k0 = 0; k0 < 4; ++k0)
    for (int k1 = 0; k1 < 6; ++k1) {
      const cd want = (k0 == 1 && k1 == 5) ? cd(24, 0) : cd(0, 0);
      EXPECT_NEAR(std::abs(out[k0 * 6 + k1] - want), 0.0, 1e-12) << k0 << "," << k1;
    }
}

TEST_F(CpuLinalg, FftR2CMatchesTheDftAndC2RRoundTripsScaledByN) {
  // [2, 6] along axis 1: onesided [2, 4].
  std::vector<double> x = values<double>(12, 0.25), back(12, 0.0);
  std::vector<cd> spec(8);
  pk_attrs_fft_r2c r = PK_ATTRS_FFT_R2C_INIT;
  set_ints(r.num_dims, r.dims, {1});
  ASSERT_EQ(launch(PK_OP_FFT_R2C, {tensor(x, kF64, {2, 6})}, {tensor(spec, kC128, {2, 4})}, &r), PK_OK)
      << last_error().message;
  for (int row = 0; row < 2; ++row)
    for (int k = 0; k < 4; ++k) {
      cd want(0, 0);
      for (int j = 0; j < 6; ++j) want += x[row * 6 + j] * std::polar(1.0, -2 * kPi * (j * k % 6) / 6.0);
      EXPECT_NEAR(std::abs(spec[row * 4 + k] - want), 0.0, 1e-13) << row << "," << k;
    }
  pk_attrs_fft_c2r c = PK_ATTRS_FFT_C2R_INIT;
  set_ints(c.num_dims, c.dims, {1});
  c.last_dim_size = 6;
  ASSERT_EQ(launch(PK_OP_FFT_C2R, {tensor(spec, kC128, {2, 4})}, {tensor(back, kF64, {2, 6})}, &c), PK_OK)
      << last_error().message;
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(back[i], 6 * x[i], 1e-13) << i;

  // f32, odd length 5 on the last axis, both axes of [3, 5]: onesided [3, 3], round trip 15 x.
  std::vector<float> xf = values<float>(15, 0.6), bf(15, 0.0f);
  std::vector<cf> sf(9);
  set_ints(r.num_dims, r.dims, {0, 1});
  ASSERT_EQ(launch(PK_OP_FFT_R2C, {tensor(xf, kF32, {3, 5})}, {tensor(sf, kC64, {3, 3})}, &r), PK_OK)
      << last_error().message;
  set_ints(c.num_dims, c.dims, {0, 1});
  c.last_dim_size = 5;
  ASSERT_EQ(launch(PK_OP_FFT_C2R, {tensor(sf, kC64, {3, 3})}, {tensor(bf, kF32, {3, 5})}, &c), PK_OK)
      << last_error().message;
  for (int i = 0; i < 15; ++i) EXPECT_NEAR(bf[i], 15 * xf[i], 2e-5) << i;
}

}  // namespace
