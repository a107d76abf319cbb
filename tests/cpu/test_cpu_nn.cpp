// CPU backend, the native composite kernels (softmax, log_softmax, layer_norm, rms_norm, gelu, gelu_tanh, silu,
// tanhshrink, scaled_dot_product_attention), through the public host API. Expected values are worked out by hand
// in the comments, taken from mpmath (said where), or computed here in long double straight from the ops'
// definitions, never taken from a kernel run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cpu_test_fixture.hpp"
#include "primkit/primkit.h"

namespace {

using pk_test::last_error;
using pk_test::Lcg;

const pk_dtype kF16 = PK_DTYPE_F16_DESC, kF32 = PK_DTYPE_F32_DESC, kF64 = PK_DTYPE_F64_DESC, kBF16 = PK_DTYPE_BF16_DESC;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
using ld = long double;

// IEEE binary16 bits -> value (normal and subnormal numbers, infinities, NaN).
double half_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1f) return m ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

// Deterministic, irregular values in about [-4, 4].
std::vector<float> wavy(size_t n, float scale = 4.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.1));
  return v;
}

// |actual - ref| within `ulps` f32 ulps of max(|ref|, floor): the composite-bound style of check.
void expect_close(double actual, ld ref, double ulps, ld floor, const std::string &what) {
  if (std::isnan(ref)) {
    EXPECT_TRUE(std::isnan(actual)) << what << ": " << actual << " where NaN is expected";
    return;
  }
  if (std::isinf(ref)) {
    EXPECT_EQ(static_cast<ld>(actual), ref) << what;
    return;
  }
  // Plus the f32 subnormal spacing: results that underflow are judged on an absolute scale.
  const ld tol = ulps * std::ldexp(1.0L, -23) * std::max(std::fabs(ref), floor) + std::ldexp(1.0L, -149);
  EXPECT_LE(std::fabs(static_cast<ld>(actual) - ref), tol) << what << ": " << actual << " vs " << (double)ref;
}

// softmax / log_softmax of one row, in long double from the definition.
std::vector<ld> softmax_ref(const std::vector<ld> &x, bool log) {
  ld m = -HUGE_VALL;
  for (ld v : x) m = std::max(m, v);
  ld s = 0;
  for (ld v : x) s += expl(v - m);
  std::vector<ld> out;
  for (ld v : x) out.push_back(log ? (v - m) - logl(s) : expl(v - m) / s);
  return out;
}

class CpuNn : public pk_test::CpuBackendTest {};

// The backend claims each op as a native kernel for every dtype the table admits (not as its decomposition).
TEST_F(CpuNn, CompositesHaveNativeKernels) {
  const uint32_t ops[] = {PK_OP_SOFTMAX,  PK_OP_LOG_SOFTMAX, PK_OP_LAYER_NORM,
                          PK_OP_RMS_NORM, PK_OP_GELU,        PK_OP_GELU_TANH,
                          PK_OP_SILU,     PK_OP_TANHSHRINK,  PK_OP_SCALED_DOT_PRODUCT_ATTENTION};
  for (uint32_t op : ops) {
    for (pk_dtype dt : {kF16, kBF16, kF32, kF64}) {
      pk_tensor in[3];
      for (pk_tensor &t : in) {
        PK_STRUCT_INIT(t);
        t.dtype = dt;
      }
      pk_op_query q;
      PK_STRUCT_INIT(q);
      q.op_id = op;
      // the op's arity (queries are validated like launches)
      q.num_inputs = op == PK_OP_LAYER_NORM || op == PK_OP_SCALED_DOT_PRODUCT_ATTENTION ? 3
                     : op == PK_OP_RMS_NORM                                             ? 2
                                                                                        : 1;
      q.inputs = in;
      pk_op_support s;
      PK_STRUCT_INIT(s);
      ASSERT_EQ(pk_device_query_op(dev_, &q, &s), PK_OK);
      EXPECT_EQ(s.supported, 1) << op << ": " << s.reason;
      EXPECT_EQ(s.native, 1) << op << ": " << s.reason;
    }
  }
}

// Dense rows (the vector path, with a tail of 3; rows longer than log_softmax's blocks, rising so that later
// blocks raise the running max) and the same data along axis 0 (the strided path).
TEST_F(CpuNn, SoftmaxAndLogSoftmaxMatchALongDoubleReference) {
  const int64_t rows = 5, n = 2503;
  std::vector<float> x = wavy(rows * n, 6.0f), out(x.size());
  for (int64_t i = 0; i < rows * n; ++i) x[i] += 0.003f * static_cast<float>(i % n);
  for (bool log : {false, true}) {
    for (int64_t dim : {1, 0}) {
      pk_attrs_softmax sa = PK_ATTRS_SOFTMAX_INIT;
      pk_attrs_log_softmax la = PK_ATTRS_LOG_SOFTMAX_INIT;
      sa.dim = la.dim = dim;
      const void *attrs = log ? static_cast<const void *>(&la) : static_cast<const void *>(&sa);
      ASSERT_EQ(launch(log ? PK_OP_LOG_SOFTMAX : PK_OP_SOFTMAX, {tensor(x, kF32, {rows, n})},
                       {tensor(out, kF32, {rows, n})}, attrs),
                PK_OK)
          << last_error().message;
      const int64_t lines = dim == 1 ? rows : n, len = dim == 1 ? n : rows;
      for (int64_t r = 0; r < lines; ++r) {
        auto at = [&](int64_t i) { return dim == 1 ? r * n + i : i * n + r; };
        std::vector<ld> row;
        for (int64_t i = 0; i < len; ++i) row.push_back(x[at(i)]);
        const std::vector<ld> ref = softmax_ref(row, log);
        ld sum = 0;
        for (int64_t i = 0; i < len; ++i) {
          expect_close(out[at(i)], ref[i], 2, log ? 1.0L : 0.0L, "softmax element");
          sum += log ? expl(static_cast<ld>(out[at(i)])) : static_cast<ld>(out[at(i)]);
        }
        EXPECT_NEAR(static_cast<double>(sum), 1.0, 1e-5) << "row " << r << (log ? " (log)" : "");
      }
    }
  }
}

// Dense f32 rows whose x - max spans the whole range: near 0, where f32 subtraction of x and max is inexact
// (x = 1000.0001, max = 1000.5), the subnormal outputs (x - max in [-104, -86)), exact zeros below that,
// masking values (-1e9, -FLT_MAX, -inf); 8-lane bodies and the scalar tail. Within 2 ulps of a long double reference
// (absolute 2^-149 below the normal range).
TEST_F(CpuNn, SoftmaxRowsAcrossTheWholeExpRange) {
  const int64_t n = 203;
  std::vector<float> x(2 * n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 1000.5f - 0.6f * static_cast<float>(i) + 1e-4f * static_cast<float>(i % 7);  // row 0: d from 0 to -121
    x[n + i] =
        (i % 5 == 0) ? -1e9f : (i % 5 == 1 ? -kInf : (i % 5 == 2 ? -3.4e38f : 0.37f * static_cast<float>(i % 9)));
  }
  std::vector<float> out(x.size(), -1.0f);
  pk_attrs_softmax sa = PK_ATTRS_SOFTMAX_INIT;
  sa.dim = 1;
  ASSERT_EQ(launch(PK_OP_SOFTMAX, {tensor(x, kF32, {2, n})}, {tensor(out, kF32, {2, n})}, &sa), PK_OK)
      << last_error().message;
  for (int64_t r = 0; r < 2; ++r) {
    const std::vector<ld> ref = softmax_ref(std::vector<ld>(x.begin() + r * n, x.begin() + (r + 1) * n), false);
    for (int64_t i = 0; i < n; ++i)
      expect_close(out[r * n + i], ref[i], 2, 0.0L, "softmax element " + std::to_string(i));
    for (int64_t i = 0; i < n && r == 1; ++i) {
      if (i % 5 < 3) {
        EXPECT_EQ(out[n + i], 0.0f) << i;  // masked: exactly 0
      }
    }
  }
}

// Rows whose maximum is past int's range once divided by ln 2 (found by fuzz_launch under UBSan): the shifted path
// computed the scaled path's k = round(max / ln 2) anyway, a float-to-int conversion outside int's range (undefined
// behaviour; UBSan aborts on it in tools/run-asan.sh). The values: two equal maxima share the row.
TEST_F(CpuNn, SoftmaxRowsWithMaximaPastIntRange) {
  const int64_t n = 19;  // two 8-lane blocks and a scalar tail
  for (float big : {1e20f, -1e20f, 3.0e38f, 2.0e9f}) {
    std::vector<float> x(n, big - std::fabs(big) * 0.5f);
    x[3] = big;
    x[17] = big;
    std::vector<float> out(n, -1.0f);
    pk_attrs_softmax sa = PK_ATTRS_SOFTMAX_INIT;
    sa.dim = 0;
    ASSERT_EQ(launch(PK_OP_SOFTMAX, {tensor(x, kF32, {n})}, {tensor(out, kF32, {n})}, &sa), PK_OK)
        << last_error().message;
    const std::vector<ld> ref = softmax_ref(std::vector<ld>(x.begin(), x.end()), false);
    for (int64_t i = 0; i < n; ++i) expect_close(out[i], ref[i], 2, 0.0L, "element " + std::to_string(i));
    EXPECT_EQ(out[3], 0.5f) << big;
    EXPECT_EQ(out[17], 0.5f) << big;
  }
}

// Rows on both sides of the limits of the scaled-exp path (|x| <= 88 and max - min <= 80; past them the
// shifted path): ranges of 79.9 and 80.5, maxima of 88 and 88.5, minima of -88 and -88.5, all-negative rows, and
// rows inside +-88 whose range (110, 176) would leave the normal range if they were scaled. The
// maximum sits in the scalar tail and the minimum in the 8-lane tail, so that every part of the loop meets the
// extremes. Within 2 ulps of a long double reference, and each row sums to 1.
TEST_F(CpuNn, SoftmaxRowsAtTheLimitsOfTheScaledExpPath) {
  const int64_t n = 203;
  const std::pair<float, float> ranges[] = {{8.1f, 88.0f},   {-88.0f, -8.0f},  {-88.0f, -70.0f}, {7.5f, 88.0f},
                                            {0.0f, 88.5f},   {-88.5f, -60.0f}, {-40.0f, 39.9f},  {-40.0f, 40.5f},
                                            {-88.0f, 88.0f}, {-60.0f, 50.0f}};
  const int64_t rows = static_cast<int64_t>(std::size(ranges));
  std::vector<float> x(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    const auto [lo, hi] = ranges[r];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = (i * 37 + 11) % n;  // a permutation of 0 .. n-1: values out of order
      x[r * n + i] = j == n - 1 ? hi : lo + (hi - lo) * static_cast<float>(j) / static_cast<float>(n - 1);
    }
    float *row = x.data() + r * n;
    std::swap(*std::max_element(row, row + n), row[201]);
    std::swap(*std::min_element(row, row + n), row[195]);
    ASSERT_EQ(row[201], hi);
    ASSERT_EQ(row[195], lo);
  }
  std::vector<float> out(x.size(), -1.0f);
  pk_attrs_softmax sa = PK_ATTRS_SOFTMAX_INIT;
  sa.dim = 1;
  ASSERT_EQ(launch(PK_OP_SOFTMAX, {tensor(x, kF32, {rows, n})}, {tensor(out, kF32, {rows, n})}, &sa), PK_OK)
      << last_error().message;
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<ld> ref = softmax_ref(std::vector<ld>(x.begin() + r * n, x.begin() + (r + 1) * n), false);
    ld sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      expect_close(out[r * n + i], ref[i], 2, 0.0L, "row " + std::to_string(r) + " element " + std::to_string(i));
      sum += out[r * n + i];
    }
    EXPECT_NEAR(static_cast<double>(sum), 1.0, 1e-5) << "row " << r;
  }
}

// Every row length from 1 to 100 and a few past it (the 8- and 16-lane bodies, their tails and the scalar tail of
// both vector widths), three rows per launch so that each row's scale pass rides on the next one's. Within 2 ulps
// of a long double reference.
TEST_F(CpuNn, SoftmaxRowsOfEveryTailLength) {
  pk_attrs_softmax sa = PK_ATTRS_SOFTMAX_INIT;
  sa.dim = 1;
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 100; ++n) lengths.push_back(n);
  for (int64_t n : {111, 127, 128, 129, 175, 179, 4099}) lengths.push_back(n);
  for (int64_t n : lengths) {
    std::vector<float> x = wavy(static_cast<size_t>(3 * n), 7.0f), out(x.size(), -1.0f);
    ASSERT_EQ(launch(PK_OP_SOFTMAX, {tensor(x, kF32, {3, n})}, {tensor(out, kF32, {3, n})}, &sa), PK_OK)
        << last_error().message;
    for (int64_t r = 0; r < 3; ++r) {
      const std::vector<ld> ref = softmax_ref(std::vector<ld>(x.begin() + r * n, x.begin() + (r + 1) * n), false);
      for (int64_t i = 0; i < n; ++i)
        expect_close(out[r * n + i], ref[i], 2, 0.0L,
                     "length " + std::to_string(n) + " row " + std::to_string(r) + " element " + std::to_string(i));
    }
  }
}

// Rows with special values follow the decomposition: a -inf element gives 0 (log: -inf); a row of -inf only
// (max - max = NaN), a NaN or a +inf makes the whole row NaN. f32 dense rows, and the same in f64.
TEST_F(CpuNn, SoftmaxSpecialRows) {
  const float e = static_cast<float>(std::exp(1.0));
  std::vector<float> x = {-kInf, -kInf, -kInf, 1, -kInf, 2, 1, kNaN, 2, 1, kInf, 2}, out(12, 0.0f);
  std::vector<double> xd(x.begin(), x.end()), outd(12, 0.0);
  pk_attrs_softmax sa = PK_ATTRS_SOFTMAX_INIT;
  sa.dim = 1;
  pk_attrs_log_softmax la = PK_ATTRS_LOG_SOFTMAX_INIT;
  la.dim = 1;
  ASSERT_EQ(launch(PK_OP_SOFTMAX, {tensor(x, kF32, {4, 3})}, {tensor(out, kF32, {4, 3})}, &sa), PK_OK);
  ASSERT_EQ(launch(PK_OP_SOFTMAX, {tensor(xd, kF64, {4, 3})}, {tensor(outd, kF64, {4, 3})}, &sa), PK_OK);
  for (int i : {0, 1, 2, 6, 7, 8, 9, 10, 11}) {
    EXPECT_TRUE(std::isnan(out[i])) << i;
    EXPECT_TRUE(std::isnan(outd[i])) << i;
  }
  // Row 1: exp(1 - 2) / (exp(-1) + 1) = 1 / (1 + e), then 0, then e / (1 + e).
  EXPECT_NEAR(out[3], 1 / (1 + e), 1e-7);
  EXPECT_EQ(out[4], 0.0f);
  EXPECT_NEAR(out[5], e / (1 + e), 1e-7);
  EXPECT_NEAR(outd[3], 1 / (1 + std::exp(1.0)), 1e-16);
  EXPECT_EQ(outd[4], 0.0);
  ASSERT_EQ(launch(PK_OP_LOG_SOFTMAX, {tensor(x, kF32, {4, 3})}, {tensor(out, kF32, {4, 3})}, &la), PK_OK);
  for (int i : {0, 1, 2, 6, 7, 8, 9, 10, 11}) EXPECT_TRUE(std::isnan(out[i])) << i;
  // Row 1: log(1 / (1 + e)) = -log1p(e), -inf, -log1p(1/e).
  EXPECT_NEAR(out[3], -std::log1p(std::exp(1.0)), 1e-6);
  EXPECT_EQ(out[4], -kInf);
  EXPECT_NEAR(out[5], -std::log1p(std::exp(-1.0)), 1e-7);
}

// f16 in, f16 out: softmax of [1, 2, 3, -inf] is [1, e, e^2, 0] / (1 + e + e^2) = [0.0900306, 0.2447285,
// 0.6652410, 0], each within an f16 rounding (2^-11 relative).
TEST_F(CpuNn, SoftmaxOfF16) {
  std::vector<uint16_t> x = {0x3c00, 0x4000, 0x4200, 0xfc00}, out(4, 0);
  pk_attrs_softmax sa = PK_ATTRS_SOFTMAX_INIT;
  sa.dim = 0;
  ASSERT_EQ(launch(PK_OP_SOFTMAX, {tensor(x, kF16, {4})}, {tensor(out, kF16, {4})}, &sa), PK_OK);
  const double expect[4] = {0.0900306, 0.2447285, 0.6652410, 0};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(half_value(out[i]), expect[i], expect[i] * std::ldexp(1.0, -11) + 1e-7);
}

// The rows' opmath: f16 softplus and sigmoid compute in f32 and round once, as their decompositions do (both now
// have native kernels, held to the same values). Computed literally in f16, exp(x) overflows above x = 11.09
// (softplus gave +inf up to the threshold 20) and 1 + exp(-x) overflows below x = -11.09 (sigmoid gave 0 where the
// result is an f16 subnormal). Expected bits: log1p(exp(x)) and 1 / (1 + exp(-x)) in double, rounded to f16 (hand
// table).
TEST_F(CpuNn, NarrowFloatCompositesWithoutAKernelComputeInF32) {
  // 11.5, 12, 15, 19.5, -14, -12, -11.1015625
  std::vector<uint16_t> x = {0x49c0, 0x4a00, 0x4b80, 0x4ce0, 0xcb00, 0xca00, 0xc98d}, out(7, 0xffff);
  const std::vector<uint16_t> softplus = {0x49c0, 0x4a00, 0x4b80, 0x4ce0, 0x000e, 0x0067, 0x00fd};
  const std::vector<uint16_t> sigmoid = {0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x000e, 0x0067, 0x00fd};
  pk_attrs_softplus sp = PK_ATTRS_SOFTPLUS_INIT;
  ASSERT_EQ(launch(PK_OP_SOFTPLUS, {tensor(x, kF16, {7})}, {tensor(out, kF16, {7})}, &sp), PK_OK)
      << last_error().message;
  EXPECT_EQ(out, softplus);
  ASSERT_EQ(launch(PK_OP_SIGMOID, {tensor(x, kF16, {7})}, {tensor(out, kF16, {7})}, nullptr), PK_OK)
      << last_error().message;
  EXPECT_EQ(out, sigmoid);
}

// Softmax over a transposed (strided) input, written to a strided output with gaps.
TEST_F(CpuNn, SoftmaxOfStridedInputAndOutput) {
  // Logical x[i][j] = base[j * 4 + i] for a [4, 3] view of a [3, 4] buffer; output rows 8 apart.
  std::vector<float> base = wavy(12), out(32, -7.0f);
  pk_attrs_softmax sa = PK_ATTRS_SOFTMAX_INIT;
  sa.dim = 1;
  ASSERT_EQ(launch(PK_OP_SOFTMAX, {tensor(base, kF32, {4, 3}, {1, 4})}, {tensor(out, kF32, {4, 3}, {8, 2})}, &sa),
            PK_OK)
      << last_error().message;
  for (int i = 0; i < 4; ++i) {
    std::vector<ld> row;
    for (int j = 0; j < 3; ++j) row.push_back(base[j * 4 + i]);
    const std::vector<ld> ref = softmax_ref(row, false);
    for (int j = 0; j < 3; ++j) expect_close(out[i * 8 + j * 2], ref[j], 2, 0, "strided softmax");
    EXPECT_EQ(out[i * 8 + 1], -7.0f);  // the gaps are untouched
  }
}

TEST_F(CpuNn, EmptyInputsAreFine) {
  std::vector<float> x(1), out(1);
  pk_attrs_softmax sa = PK_ATTRS_SOFTMAX_INIT;
  sa.dim = 1;
  EXPECT_EQ(launch(PK_OP_SOFTMAX, {tensor(x, kF32, {0, 5})}, {tensor(out, kF32, {0, 5})}, &sa), PK_OK);
  EXPECT_EQ(launch(PK_OP_SOFTMAX, {tensor(x, kF32, {3, 0})}, {tensor(out, kF32, {3, 0})}, &sa), PK_OK);
  EXPECT_EQ(launch(PK_OP_SILU, {tensor(x, kF32, {0})}, {tensor(out, kF32, {0})}, nullptr), PK_OK);
}

// x = [1, 2, 3, 4], eps = 0: mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25, so y = [-1.5, -0.5, 0.5,
// 1.5] / sqrt(1.25) = [-1.3416408, -0.4472136, 0.4472136, 1.3416408]; with w = [1, 2, 1, 2], b = [0, 0, 1, 1]:
// [-1.3416408, -0.8944272, 1.4472136, 3.6832816]. Second row [5, 5, 5, 5] with eps = 0: 0 * rsqrt(0) = NaN.
TEST_F(CpuNn, LayerNormHandChecked) {
  std::vector<float> x = {1, 2, 3, 4, 5, 5, 5, 5}, w = {1, 2, 1, 2}, b = {0, 0, 1, 1}, out(8, 0.0f);
  pk_attrs_layer_norm a = PK_ATTRS_LAYER_NORM_INIT;
  a.eps = 0;
  ASSERT_EQ(launch(PK_OP_LAYER_NORM, {tensor(x, kF32, {2, 4}), tensor(w, kF32, {4}), tensor(b, kF32, {4})},
                   {tensor(out, kF32, {2, 4})}, &a),
            PK_OK)
      << last_error().message;
  const double expect[4] = {-1.3416408, -0.8944272, 1.4472136, 3.6832816};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[i], expect[i], 1e-6) << i;
  for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
  // The same in f64 (generic path), eps = 1e-5 on the first row: rstd = 1 / sqrt(1.25001).
  std::vector<double> xd(x.begin(), x.begin() + 4), wd(w.begin(), w.end()), bd(b.begin(), b.end()), od(4);
  a.eps = 1e-5;
  ASSERT_EQ(launch(PK_OP_LAYER_NORM, {tensor(xd, kF64, {4}), tensor(wd, kF64, {4}), tensor(bd, kF64, {4})},
                   {tensor(od, kF64, {4})}, &a),
            PK_OK);
  const double rstd = 1 / std::sqrt(1.25001), centred[4] = {-1.5, -0.5, 0.5, 1.5};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(od[i], centred[i] * rstd * wd[i] + bd[i], 1e-15) << i;
}

// Long rows (vector body and tail, several threads' worth) against a long double two-pass reference, then over
// the last two axes of a transposed input (strided path).
// One row of layer_norm (or rms_norm) against a long double reference, within 4 ulps: mean and variance
// (or the mean square) exactly in long double, then (x - mean) * rstd * w + b.
void expect_norm_row(const float *x, const float *out, int64_t n, const std::vector<float> &w,
                     const std::vector<float> &b, bool rms, double eps, const std::string &what) {
  ld mean = 0, ss = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= n;
  for (int64_t i = 0; i < n; ++i) {
    const ld d = rms ? static_cast<ld>(x[i]) : x[i] - mean;
    ss += d * d;
  }
  const ld scale = 1 / sqrtl(ss / n + eps);
  for (int64_t i = 0; i < n; ++i) {
    const ld d = rms ? static_cast<ld>(x[i]) : x[i] - mean;
    const ld ref = rms ? d * scale * w[i] : d * scale * w[i] + b[i];
    expect_close(out[i], ref, 4, 1, what + " element " + std::to_string(i));
  }
}

TEST_F(CpuNn, LayerNormAndRmsNormMatchALongDoubleReference) {
  const int64_t rows = 6, n = 4099;
  std::vector<float> x = wavy(rows * n), w = wavy(n, 1.5f), b = wavy(n, 0.5f), out(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] += 100.0f;  // a mean far from 0: the variance must not cancel
  for (bool rms : {false, true}) {
    pk_attrs_layer_norm la = PK_ATTRS_LAYER_NORM_INIT;
    pk_attrs_rms_norm ra = PK_ATTRS_RMS_NORM_INIT;
    if (rms) {
      ASSERT_EQ(launch(PK_OP_RMS_NORM, {tensor(x, kF32, {rows, n}), tensor(w, kF32, {n})},
                       {tensor(out, kF32, {rows, n})}, &ra),
                PK_OK);
    } else {
      ASSERT_EQ(launch(PK_OP_LAYER_NORM, {tensor(x, kF32, {rows, n}), tensor(w, kF32, {n}), tensor(b, kF32, {n})},
                       {tensor(out, kF32, {rows, n})}, &la),
                PK_OK);
    }
    for (int64_t r = 0; r < rows; ++r)
      expect_norm_row(x.data() + r * n, out.data() + r * n, n, w, b, rms, rms ? ra.eps : la.eps,
                      rms ? "rms_norm" : "layer_norm");
  }
  // normalized_ndim = 2 over x[2][3][2] given as a transposed view of a [2][2][3] buffer: x[a][i][j] = buf[a*6 +
  // j*3 + i].
  std::vector<float> buf = wavy(12), w2 = {1, 2, 3, 4, 5, 6}, b2 = {0, 1, 0, 1, 0, 1}, o2(12);
  pk_attrs_layer_norm la = PK_ATTRS_LAYER_NORM_INIT;
  la.normalized_ndim = 2;
  ASSERT_EQ(launch(PK_OP_LAYER_NORM,
                   {tensor(buf, kF32, {2, 3, 2}, {6, 1, 3}), tensor(w2, kF32, {3, 2}), tensor(b2, kF32, {3, 2})},
                   {tensor(o2, kF32, {2, 3, 2})}, &la),
            PK_OK)
      << last_error().message;
  for (int a = 0; a < 2; ++a) {
    ld v[6], mean = 0, ss = 0;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j) mean += v[i * 2 + j] = buf[a * 6 + j * 3 + i];
    mean /= 6;
    for (ld t : v) ss += (t - mean) * (t - mean);
    const ld rstd = 1 / sqrtl(ss / 6 + la.eps);
    for (int k = 0; k < 6; ++k) expect_close(o2[a * 6 + k], (v[k] - mean) * rstd * w2[k] + b2[k], 4, 1, "strided");
  }
}

// x = [3, 4], eps = 0: mean square 12.5, so x / sqrt(12.5) = [0.8485281, 1.1313708]. An infinite element makes
// the mean square inf and rsqrt 0: inf * 0 = NaN for itself, 0 for the others.
// Every row length from 1 to 80 (the 4-, 8-, 16- and 32-wide loops of both vector widths, and their scalar
// tails), two rows per launch with a mean far from 0. Within 4 ulps of a long double reference.
TEST_F(CpuNn, NormRowsOfEveryTailLength) {
  for (int64_t n = 1; n <= 80; ++n) {
    std::vector<float> x = wavy(static_cast<size_t>(2 * n)), w = wavy(n, 1.5f), b = wavy(n, 0.5f), out(x.size());
    for (float &v : x) v += 50.0f;
    for (bool rms : {false, true}) {
      pk_attrs_layer_norm la = PK_ATTRS_LAYER_NORM_INIT;
      pk_attrs_rms_norm ra = PK_ATTRS_RMS_NORM_INIT;
      const pk_status st =
          rms ? launch(PK_OP_RMS_NORM, {tensor(x, kF32, {2, n}), tensor(w, kF32, {n})}, {tensor(out, kF32, {2, n})},
                       &ra)
              : launch(PK_OP_LAYER_NORM, {tensor(x, kF32, {2, n}), tensor(w, kF32, {n}), tensor(b, kF32, {n})},
                       {tensor(out, kF32, {2, n})}, &la);
      ASSERT_EQ(st, PK_OK) << last_error().message;
      for (int64_t r = 0; r < 2; ++r)
        expect_norm_row(x.data() + r * n, out.data() + r * n, n, w, b, rms, rms ? ra.eps : la.eps,
                        std::string(rms ? "rms_norm" : "layer_norm") + " length " + std::to_string(n) + " row " +
                            std::to_string(r));
    }
  }
}

TEST_F(CpuNn, RmsNormHandChecked) {
  std::vector<float> x = {3, 4, kInf, -2}, w = {1, 1}, out(4, 1.0f);
  pk_attrs_rms_norm a = PK_ATTRS_RMS_NORM_INIT;
  a.eps = 0;
  ASSERT_EQ(launch(PK_OP_RMS_NORM, {tensor(x, kF32, {2, 2}), tensor(w, kF32, {2})}, {tensor(out, kF32, {2, 2})}, &a),
            PK_OK);
  EXPECT_NEAR(out[0], 0.8485281, 1e-6);
  EXPECT_NEAR(out[1], 1.1313708, 1e-6);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], 0.0f);
  EXPECT_TRUE(std::signbit(out[3]));
}

// The activations against their definitions in long double, including the negative range where 1 + erf and
// 1 + tanh cancel (gelu(-5.5) = -1.1e-7 and gelu(-10) = -7.6e-23 need erfc), and x = -inf, where the
// decomposition gives -inf * 0 = NaN (sigmoid: 1 / inf = 0). Values below f32's range are checked in f64 only.
// The cpu.isa_avx2 and cpu.isa_generic runs check the AVX2 and scalar paths; the default one AVX-512's.
TEST_F(CpuNn, ActivationsMatchTheirDefinitions) {
  std::vector<float> x = {-30, -10, -5.5f, -1, -0.25f, 0, 1e-3f, 0.5f, 2, 7, 40, -kInf, kInf, kNaN};
  for (int n = 0; n < 40; ++n) x.push_back(-9.0f + 0.45f * static_cast<float>(n));  // fills whole vectors
  std::vector<float> out(x.size());
  std::vector<double> xd(x.begin(), x.end()), outd(x.size());
  const uint32_t ops[] = {PK_OP_GELU, PK_OP_GELU_TANH, PK_OP_SILU, PK_OP_SIGMOID};
  for (uint32_t op : ops) {
    const int64_t n = static_cast<int64_t>(x.size());
    ASSERT_EQ(launch(op, {tensor(x, kF32, {n})}, {tensor(out, kF32, {n})}, nullptr), PK_OK);
    ASSERT_EQ(launch(op, {tensor(xd, kF64, {n})}, {tensor(outd, kF64, {n})}, nullptr), PK_OK);
    for (size_t i = 0; i < x.size(); ++i) {
      const ld v = x[i];
      ld ref;
      if (op == PK_OP_GELU) {
        ref = v / 2 * erfcl(-v * static_cast<ld>(0.7071067811865476));  // the table's constant is a double
      } else if (op == PK_OP_GELU_TANH) {
        // 1 + tanh(u) = 2 / (1 + e^-2u), without the cancellation
        ref = v / (1 + expl(-2 * (v + static_cast<ld>(0.044715) * v * v * v) * static_cast<ld>(0.7978845608028654)));
      } else if (op == PK_OP_SILU) {
        ref = v / (1 + expl(-v));
      } else {
        ref = 1 / (1 + expl(-v));  // sigmoid: -inf gives 0, +inf 1; -30 gives 9.4e-14, relatively accurate
      }
      if (std::isinf(v) && v < 0 && op != PK_OP_SIGMOID) ref = std::numeric_limits<ld>::quiet_NaN();
      const std::string what = "op " + std::to_string(op) + " at " + std::to_string(x[i]);
      if (std::fabs(ref) >= 1e-37L || ref == 0 || !std::isfinite(ref)) expect_close(out[i], ref, 2, 0, what + " (f32)");
      if (std::isfinite(ref)) {
        EXPECT_LE(std::fabs(outd[i] - ref), 4 * std::ldexp(1.0L, -52) * std::fabs(ref) + 1e-300L) << what;
      } else {
        expect_close(outd[i], ref, 1, 0, what + " (f64)");
      }
    }
  }
}

// tanhshrink = x - tanh(x), whose subtraction cancels for small |x|. The f64 values are mpmath's at 2000 bits
// rounded to nearest (hex literals); the kernel may be 1 ulp off them, where rounding x - tanh(x) in f64 would
// be off by 16 ulp at 0.44 (an input of an earlier conformance failure) and by all bits at 3e-8. 1e-103 gives a
// subnormal; zeros give +0 as the decomposition (x - x).
TEST_F(CpuNn, TanhshrinkIsAccurateWhereTheSubtractionCancels) {
  struct Row {
    double x, want;
  };
  const Row rows[] = {{1e-100, 0x1.c92d503f699ccp-999},
                      {1e-103, 0x0.03d5c7b785490p-1022},
                      {3e-08, 0x1.5c2baecdda078p-77},
                      {0.001, 0x1.6e80f467abf06p-32},
                      {-0.125, -0x1.5336a1da3e582p-11},
                      {0.3, 0x1.1cab16b43c724p-7},
                      {0.4399563517403652, 0x1.afafe666e2b8ap-6},
                      {0.4999, 0x1.36294d4833bf7p-5},
                      {0.5, 0x1.36561454ba865p-5},
                      {-0.5890682336135423, -0x1.ea3c100a47b11p-5},
                      {1.0, 0x1.e84152bac31afp-3},
                      {3.0, 0x1.00a20bbb97d40p+1},
                      {-20.0, -0x1.3000000000000p+4}};
  std::vector<double> x, out(std::size(rows) + 5);
  for (const Row &r : rows) x.push_back(r.x);
  const double inf = std::numeric_limits<double>::infinity();
  for (double special : {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()}) x.push_back(special);
  const int64_t n = static_cast<int64_t>(x.size());
  ASSERT_EQ(launch(PK_OP_TANHSHRINK, {tensor(x, kF64, {n})}, {tensor(out, kF64, {n})}, nullptr), PK_OK);
  for (size_t i = 0; i < std::size(rows); ++i) {
    const double ulp = std::nextafter(std::fabs(rows[i].want), inf) - std::fabs(rows[i].want);
    EXPECT_LE(std::fabs(out[i] - rows[i].want), ulp) << "tanhshrink(" << rows[i].x << ") = " << out[i];
  }
  const size_t s = std::size(rows);
  EXPECT_EQ(out[s], 0.0);
  EXPECT_FALSE(std::signbit(out[s]));
  EXPECT_EQ(out[s + 1], 0.0);
  EXPECT_FALSE(std::signbit(out[s + 1])) << "-0 - tanh(-0) is +0";
  EXPECT_EQ(out[s + 2], inf);
  EXPECT_EQ(out[s + 3], -inf);
  EXPECT_TRUE(std::isnan(out[s + 4]));

  // f32 (computed in double): mpmath's values rounded to f32.
  std::vector<float> xf = {9.999999974752427e-07f, 0.30000001192092896f, -0.44999998807907104f, 2.5f};
  const float wantf[] = {3.333333399881036e-19f, 0.008687388151884079f, -0.02810099348425865f, 1.5133856534957886f};
  std::vector<float> outf(xf.size());
  ASSERT_EQ(launch(PK_OP_TANHSHRINK, {tensor(xf, kF32, {4})}, {tensor(outf, kF32, {4})}, nullptr), PK_OK);
  for (size_t i = 0; i < xf.size(); ++i) EXPECT_EQ(outf[i], wantf[i]) << "tanhshrink(" << xf[i] << ") in f32";
}

// softmax(scale q k^T [causal]) v against a long double loop, q [1, 2, 3, 4], k [1, 2, 5, 4], v [1, 2, 5, 6] (the
// op table's example), with v given transposed (strided).
TEST_F(CpuNn, AttentionMatchesALongDoubleReference) {
  const int64_t H = 2, L = 3, S = 5, E = 4, Ev = 6;
  std::vector<float> q = wavy(H * L * E, 1.5f), k = wavy(H * S * E, 2.0f), vt = wavy(H * Ev * S), out(H * L * Ev);
  for (int causal = 0; causal < 2; ++causal) {
    pk_attrs_scaled_dot_product_attention a = PK_ATTRS_SCALED_DOT_PRODUCT_ATTENTION_INIT;
    a.scale = 0.5;
    a.is_causal = causal;
    // v[0][h][j][e] = vt[h * Ev * S + e * S + j]
    ASSERT_EQ(launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION,
                     {tensor(q, kF32, {1, H, L, E}), tensor(k, kF32, {1, H, S, E}),
                      tensor(vt, kF32, {1, H, S, Ev}, {H * S * Ev, S * Ev, 1, S})},
                     {tensor(out, kF32, {1, H, L, Ev})}, &a),
              PK_OK)
        << last_error().message;
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < L; ++i) {
        std::vector<ld> sc;
        for (int64_t j = 0; j < S; ++j) {
          ld dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += static_cast<ld>(q[(h * L + i) * E + e]) * k[(h * S + j) * E + e];
          sc.push_back(causal && j > i ? -HUGE_VALL : dot * 0.5L);
        }
        const std::vector<ld> p = softmax_ref(sc, false);
        for (int64_t e = 0; e < Ev; ++e) {
          ld o = 0;
          for (int64_t j = 0; j < S; ++j) o += p[j] * vt[h * Ev * S + e * S + j];
          // the contract without its backward-error term: 16 ulp + 16 u max|out| (|out| <= 4 here, vt's scale)
          expect_close(out[(h * L + i) * Ev + e], o, 16, 2.0L, "attention");
        }
      }
    }
  }
}

// --- the f32 fast paths (AVX-512: double-lane attention, f32-lane gelu) -------------------------------------
// Checked against long double straight from the definitions, never against a kernel's own output. Under
// PRIMKIT_CPU_ISA=avx2 / generic (the cpu.isa_* runs) the same cases check the other paths.

// softmax(scale q k^T [causal]) v in long double for q [B, H, L, E], k [B, H, S, E] (dense), v given as
// v(b, h, j, e); out [B, H, L, Ev] dense.
template <class V>
std::vector<ld> attention_ref(const std::vector<float> &q, const std::vector<float> &k, V v, int64_t B, int64_t H,
                              int64_t L, int64_t S, int64_t E, int64_t Ev, ld scale, bool causal) {
  std::vector<ld> out(static_cast<size_t>(B * H * L * Ev));
  for (int64_t bh = 0; bh < B * H; ++bh) {
    for (int64_t i = 0; i < L; ++i) {
      std::vector<ld> sc;
      for (int64_t j = 0; j < S; ++j) {
        ld dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += static_cast<ld>(q[(bh * L + i) * E + e]) * k[(bh * S + j) * E + e];
        sc.push_back(causal && j > i ? -HUGE_VALL : dot * scale);
      }
      const std::vector<ld> p = softmax_ref(sc, false);
      for (int64_t e = 0; e < Ev; ++e) {
        ld o = 0;
        for (int64_t j = 0; j < S; ++j) o += p[j] * v(bh / H, bh % H, j, e);
        out[(bh * L + i) * Ev + e] = o;
      }
    }
  }
  return out;
}

// The conformance-style check: |out - ref| within `ulps` f32 ulps of max(|ref|, rms of ref) plus `out_ulps` units of
// 2^-24 max|ref| (non-finite refs must be matched). (16, 16) is the op's contract, 16 ulp + 16 u max|out|, without its
// backward-error term (which only widens it): what an f32 computation is held to. Returns the largest ratio of
// error to allowance seen.
double check_attention(const std::vector<float> &out, const std::vector<ld> &ref, double ulps, const std::string &what,
                       double out_ulps = 0) {
  ld ss = 0, big = 0;
  size_t finite = 0;
  for (ld r : ref) {
    if (std::isfinite(r)) {
      ss += r * r;
      big = std::max(big, std::fabs(r));
      ++finite;
    }
  }
  const ld rms = finite ? std::sqrt(ss / finite) : 0;
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(ref[i])) {
      EXPECT_FALSE(std::isfinite(out[i])) << what << " [" << i << "]";
      if (std::isnan(ref[i])) {
        EXPECT_TRUE(std::isnan(out[i])) << what << " [" << i << "]";
      }
      continue;
    }
    int ex = 0;
    std::frexp(static_cast<double>(std::max(std::fabs(ref[i]), rms)), &ex);
    const ld ulp = std::ldexp(1.0L, std::max(ex - 24, -149));
    const ld allowed = ulps * ulp + out_ulps * std::ldexp(1.0L, -24) * big;
    const double ratio = static_cast<double>(std::fabs(static_cast<ld>(out[i]) - ref[i]) / allowed);
    worst = std::max(worst, ratio);
    EXPECT_LE(ratio, 1.0) << what << " [" << i << "]: " << out[i] << " vs " << static_cast<double>(ref[i]);
    if (ratio > 1.0) break;  // one message is enough
  }
  return worst;
}

// Shapes that take the f32 fast path (finite inputs of ordinary size): [2, 3, 67, 40] with v given transposed
// (strided) and Ev = 21 (not a multiple of 16), causal and not; keys fewer and more than queries; a long head
// (several row blocks and chunks, a partial last block). The kernel computes in f32 lanes where its bound admits
// the scores (scale |q| |k| <= 2^14 / E) and in double lanes above (the last shape, scores in the thousands), and
// is held to the op's contract without its backward-error term.
TEST_F(CpuNn, AttentionFastPathMatchesALongDoubleReference) {
  struct Shape {
    int64_t B, H, L, S, E, Ev;
    double scale, qk_scale;
  };
  const Shape shapes[] = {{2, 3, 67, 67, 40, 21, 0.125, 1.0}, {2, 3, 67, 53, 40, 40, 0.3, 1.0},
                          {1, 2, 45, 130, 24, 17, 0.2, 1.5},  {1, 2, 300, 300, 64, 64, 0.125, 1.0},
                          {1, 1, 70, 70, 8, 8, 0.5, 4.0},     {1, 1, 70, 70, 8, 8, 0.5, 40.0}};
  Lcg rng{12345};
  for (const Shape &sh : shapes) {
    const int64_t B = sh.B, H = sh.H, L = sh.L, S = sh.S, E = sh.E, Ev = sh.Ev;
    std::vector<float> q(B * H * L * E), k(B * H * S * E), vt(B * H * Ev * S), out(B * H * L * Ev);
    for (float &x : q) x = rng.normal(sh.qk_scale);
    for (float &x : k) x = rng.normal(sh.qk_scale);
    for (float &x : vt) x = rng.normal(1.0);
    // v[b][h][j][e] = vt[((b * H + h) * Ev + e) * S + j]: the last two axes transposed
    const auto v = [&](int64_t b, int64_t h, int64_t j, int64_t e) -> ld { return vt[((b * H + h) * Ev + e) * S + j]; };
    for (int causal = 0; causal < 2; ++causal) {
      pk_attrs_scaled_dot_product_attention a = PK_ATTRS_SCALED_DOT_PRODUCT_ATTENTION_INIT;
      a.scale = sh.scale;
      a.is_causal = causal;
      ASSERT_EQ(launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION,
                       {tensor(q, kF32, {B, H, L, E}), tensor(k, kF32, {B, H, S, E}),
                        tensor(vt, kF32, {B, H, S, Ev}, {H * Ev * S, Ev * S, 1, S})},
                       {tensor(out, kF32, {B, H, L, Ev})}, &a),
                PK_OK)
          << last_error().message;
      const std::vector<ld> ref = attention_ref(q, k, v, B, H, L, S, E, Ev, static_cast<ld>(sh.scale), causal);
      check_attention(out, ref, 16.0,
                      "attention [" + std::to_string(B) + "," + std::to_string(H) + "," + std::to_string(L) + "," +
                          std::to_string(S) + "," + std::to_string(E) + "," + std::to_string(Ev) +
                          "] causal=" + std::to_string(causal),
                      16.0);
    }
  }
}

// Heads the fast path must hand to the exact kernel: an infinite v at a key that causal masking hides from the
// early rows (p = 0 times inf is NaN in the decomposition, so every row of that column is NaN or inf), a NaN in
// q, and scores of 1e8 whose differences f32 (and plain double sums of the norm bound) could not keep. The other
// heads of the same launch take the fast path; all are checked.
TEST_F(CpuNn, AttentionHeadsOutsideTheFastPathStayExact) {
  const int64_t B = 1, H = 4, L = 40, S = 40, E = 16, Ev = 12;
  Lcg rng{777};
  std::vector<float> q(B * H * L * E), k(B * H * S * E), v(B * H * S * Ev), out(B * H * L * Ev);
  for (float &x : q) x = rng.normal(1.0);
  for (float &x : k) x = rng.normal(1.0);
  for (float &x : v) x = rng.normal(1.0);
  v[(1 * S + 30) * Ev + 5] = kInf;                                  // head 1, key 30, column 5
  q[(2 * L + 7) * E + 3] = kNaN;                                    // head 2, query 7
  for (int64_t i = 0; i < L * E; ++i) q[3 * L * E + i] *= 3000.0f;  // head 3: scores around 1e7..1e8
  for (int64_t i = 0; i < S * E; ++i) k[3 * S * E + i] *= 3000.0f;
  const auto vf = [&](int64_t, int64_t h, int64_t j, int64_t e) -> ld { return v[(h * S + j) * Ev + e]; };
  pk_attrs_scaled_dot_product_attention a = PK_ATTRS_SCALED_DOT_PRODUCT_ATTENTION_INIT;
  a.scale = 0.25;
  a.is_causal = 1;
  ASSERT_EQ(launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION,
                   {tensor(q, kF32, {B, H, L, E}), tensor(k, kF32, {B, H, S, E}), tensor(v, kF32, {B, H, S, Ev})},
                   {tensor(out, kF32, {B, H, L, Ev})}, &a),
            PK_OK)
      << last_error().message;
  const std::vector<ld> ref = attention_ref(q, k, vf, B, H, L, S, E, Ev, 0.25L, true);
  for (int64_t h = 0; h < H; ++h) {
    const size_t n = static_cast<size_t>(L * Ev);
    const std::vector<float> oh(out.begin() + h * n, out.begin() + (h + 1) * n);
    std::vector<ld> rh(ref.begin() + h * n, ref.begin() + (h + 1) * n);
    if (h == 1) {
      for (int64_t i = 0; i < L; ++i) {
        EXPECT_TRUE(std::isnan(rh[i * Ev + 5]) || std::isinf(rh[i * Ev + 5])) << "the reference itself, row " << i;
        if (i < 30) {
          EXPECT_TRUE(std::isnan(oh[i * Ev + 5])) << "row " << i << " masks key 30: 0 * inf";
        }
      }
    }
    // Head 2: only row 7 is NaN (all of it). The check treats non-finite references as such. Head 0 takes the f32
    // fast path (held to the contract), the others the exact rows (held to 2 ulps).
    if (h == 0) {
      check_attention(oh, rh, 16.0, "head 0", 16.0);
    } else {
      check_attention(oh, rh, 2.0, "head " + std::to_string(h));
    }
  }
}

// The f16 and bf16 rows take the same f32-lane path (widened exactly, rounded once to the format).
TEST_F(CpuNn, AttentionFastPathOfF16AndBf16) {
  const int64_t H = 2, L = 37, S = 37, E = 16, Ev = 9;
  Lcg rng{99};
  for (pk_dtype dt : {kF16, kBF16}) {
    std::vector<uint16_t> q(H * L * E), k(H * S * E), v(H * S * Ev), out(H * L * Ev);
    std::vector<float> qf(q.size()), kf(k.size()), vf(v.size());
    // values exactly representable in both formats: multiples of 1/64 in [-2, 2]
    const auto fill = [&](std::vector<uint16_t> &bits, std::vector<float> &vals) {
      for (size_t i = 0; i < bits.size(); ++i) {
        const float x = std::round(rng.normal(0.7) * 64.0f) / 64.0f;
        vals[i] = std::max(-2.0f, std::min(2.0f, x));
        uint32_t u;
        std::memcpy(&u, &vals[i], 4);
        if (dt.code == kBF16.code) {
          bits[i] = static_cast<uint16_t>(u >> 16);  // exact: at most 8 significant bits
        } else {
          // binary16 of a value with at most 8 significant bits in [2^-6, 2]: sign, exponent - 112, top mantissa
          const uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, man = (u >> 13) & 0x3ff;
          bits[i] =
              vals[i] == 0 ? static_cast<uint16_t>(sign) : static_cast<uint16_t>(sign | ((exp - 112) << 10) | man);
          EXPECT_EQ(half_value(bits[i]), vals[i]);
        }
      }
    };
    fill(q, qf);
    fill(k, kf);
    fill(v, vf);
    pk_attrs_scaled_dot_product_attention a = PK_ATTRS_SCALED_DOT_PRODUCT_ATTENTION_INIT;
    a.scale = 0.25;
    a.is_causal = 1;
    ASSERT_EQ(launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION,
                     {tensor(q, dt, {1, H, L, E}), tensor(k, dt, {1, H, S, E}), tensor(v, dt, {1, H, S, Ev})},
                     {tensor(out, dt, {1, H, L, Ev})}, &a),
              PK_OK)
        << last_error().message;
    const auto vv = [&](int64_t, int64_t h, int64_t j, int64_t e) -> ld { return vf[(h * S + j) * Ev + e]; };
    const std::vector<ld> ref = attention_ref(qf, kf, vv, 1, H, L, S, E, Ev, 0.25L, true);
    for (size_t i = 0; i < ref.size(); ++i) {
      double got;
      if (dt.code == kBF16.code) {
        const uint32_t u = static_cast<uint32_t>(out[i]) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        got = f;
      } else {
        got = half_value(out[i]);
      }
      // correctly rounded up to a hair: within one unit of the format's 8 or 11 bits
      const ld unit = std::ldexp(std::fabs(ref[i]) + 1e-30L, dt.code == kBF16.code ? -7 : -10);
      EXPECT_LE(std::fabs(static_cast<ld>(got) - ref[i]), unit) << (dt.code == kBF16.code ? "bf16 " : "f16 ") << i;
    }
  }
}

// gelu over f32 inputs from -16 to 16 (every 97th bit pattern, about 21 million values, plus the neighbourhood
// of 0 and the subnormals), against x/2 erfc(-x c) in long double: within 2 ulps (the op's contract allows 4;
// the AVX-512 path measures 1.77 at worst, the AVX2 and portable paths 0.5). Outputs below f32's normal range are
// judged in units of the smallest subnormal.
TEST_F(CpuNn, GeluF32IsAccurateEverywhere) {
  std::vector<float> x;
  for (uint32_t u = 0; u < 0x41800000u; u += 97) {  // |x| < 16
    float f;
    std::memcpy(&f, &u, 4);
    x.push_back(f);
    x.push_back(-f);
  }
  x.resize(x.size() - 5);  // an odd count: a partial last vector
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> out(x.size());
  ASSERT_EQ(launch(PK_OP_GELU, {tensor(x, kF32, {n})}, {tensor(out, kF32, {n})}, nullptr), PK_OK);
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const ld v = x[i];
    const ld ref = v / 2 * erfcl(-v * static_cast<ld>(0.7071067811865476));
    int ex = 0;
    std::frexp(static_cast<double>(std::fabs(ref)), &ex);
    const ld ulp = std::ldexp(1.0L, std::max(ex - 24, -149));
    const double err = static_cast<double>(std::fabs(static_cast<ld>(out[i]) - ref) / ulp);
    if (err > worst) {
      worst = err;
      worst_x = x[i];
    }
    if (out[i] == 0 && ref != 0) {
      EXPECT_EQ(std::signbit(out[i]), std::signbit(ref)) << "gelu(" << x[i] << ")";
    }
  }
  EXPECT_LE(worst, 2.0) << "worst at x = " << worst_x << " (" << std::hexfloat << worst_x << ")";
  // Beyond the sweep: x/2 for the zeros' signs, x itself, -0 below -15.99, and the specials.
  std::vector<float> s = {0.0f, -0.0f, 16.0f, 1e30f, -16.0f, -1e30f, kInf, -kInf, kNaN};
  std::vector<float> so(s.size());
  const int64_t m = static_cast<int64_t>(s.size());
  ASSERT_EQ(launch(PK_OP_GELU, {tensor(s, kF32, {m})}, {tensor(so, kF32, {m})}, nullptr), PK_OK);
  EXPECT_TRUE(so[0] == 0 && !std::signbit(so[0]));
  EXPECT_TRUE(so[1] == 0 && std::signbit(so[1]));
  EXPECT_EQ(so[2], 16.0f);
  EXPECT_EQ(so[3], 1e30f);
  EXPECT_TRUE(so[4] == 0 && std::signbit(so[4])) << so[4];
  EXPECT_TRUE(so[5] == 0 && std::signbit(so[5])) << so[5];
  EXPECT_EQ(so[6], kInf);
  EXPECT_TRUE(std::isnan(so[7])) << "-inf * 0 in the decomposition";
  EXPECT_TRUE(std::isnan(so[8]));
}

}  // namespace
