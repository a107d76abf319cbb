// OpenCL backend through the public host API: data movement, indexing, scans, sorting, linalg and rng (expected
// values derived by hand or in double). The fixture is in opencl_fixture.hpp.
#include "igamma_cases.hpp"
#include "lgamma_cases.hpp"
#include "opencl_fixture.hpp"

using namespace pk_opencl_test;  // NOLINT: the fixture and its helpers, in every test file

namespace {

// --- data movement, indexing, scans, sorting, linalg and rng (expected values derived by hand or in double) -----

TEST_F(OpenCL, ViewsAndShapeOpsMoveElements) {
  // x = [[0, 1, 2], [3, 4, 5]]
  std::vector<float> x = {0, 1, 2, 3, 4, 5};
  pk_tensor tx = device(x, kF32, {2, 3});
  pk_attrs_transpose tr = PK_ATTRS_TRANSPOSE_INIT;
  tr.num_permutation = 2;
  tr.permutation[0] = 1;
  tr.permutation[1] = 0;
  pk_tensor tt = empty<float>(6, kF32, {3, 2});
  ASSERT_EQ(launch(PK_OP_TRANSPOSE, {tx}, {tt}, &tr), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(tt, 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // reshape of the transposed (non-contiguous) view keeps its row-major order.
  const int64_t st[2] = {1, 3};
  pk_tensor tv = tx;
  tv.ndim = 2;
  const int64_t sh[2] = {3, 2};
  tv.shape = sh;
  tv.strides = st;
  pk_attrs_reshape rs = PK_ATTRS_RESHAPE_INIT;
  rs.num_shape = 1;
  rs.shape[0] = 6;
  pk_tensor tr1 = empty<float>(6, kF32, {6});
  ASSERT_EQ(launch(PK_OP_RESHAPE, {tv}, {tr1}, &rs), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(tr1, 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  pk_attrs_rev rv = PK_ATTRS_REV_INIT;
  rv.num_dims = 1;
  rv.dims[0] = 1;
  pk_tensor trv = empty<float>(6, kF32, {2, 3});
  ASSERT_EQ(launch(PK_OP_REV, {tx}, {trv}, &rv), PK_OK);
  EXPECT_EQ(download<float>(trv, 6), (std::vector<float>{2, 1, 0, 5, 4, 3}));
  pk_attrs_cat ct = PK_ATTRS_CAT_INIT;
  ct.dim = 1;
  pk_tensor tc = empty<float>(12, kF32, {2, 6});
  ASSERT_EQ(launch(PK_OP_CAT, {tx, trv}, {tc}, &ct), PK_OK);
  EXPECT_EQ(download<float>(tc, 12), (std::vector<float>{0, 1, 2, 2, 1, 0, 3, 4, 5, 5, 4, 3}));
  // pad: low 1 / high 0 on axis 0, interior 1 and low -1 on axis 1, value 9.
  pk_attrs_pad pd = PK_ATTRS_PAD_INIT;
  pd.value = 9;
  pd.num_low = pd.num_high = pd.num_interior = 2;
  pd.low[0] = 1;
  pd.low[1] = -1;
  pd.high[0] = 0;
  pd.high[1] = 1;
  pd.interior[0] = 0;
  pd.interior[1] = 1;
  // axis 1: 3 + 2 interior - 1 + 1 = 5 columns: [x1?] positions: element i at -1 + 2i -> 1, 3 (i = 1, 2).
  pk_tensor tp = empty<float>(15, kF32, {3, 5});
  ASSERT_EQ(launch(PK_OP_PAD, {tx}, {tp}, &pd), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(tp, 15), (std::vector<float>{9, 9, 9, 9, 9, 9, 1, 9, 2, 9, 9, 4, 9, 5, 9}));
  pk_attrs_broadcast_in_dim bd = PK_ATTRS_BROADCAST_IN_DIM_INIT;
  bd.num_shape = 3;
  bd.shape[0] = 2;
  bd.shape[1] = 2;
  bd.shape[2] = 3;
  bd.num_broadcast_dimensions = 2;
  bd.broadcast_dimensions[0] = 0;
  bd.broadcast_dimensions[1] = 2;
  pk_tensor tb = empty<float>(12, kF32, {2, 2, 3});
  ASSERT_EQ(launch(PK_OP_BROADCAST_IN_DIM, {tx}, {tb}, &bd), PK_OK);
  EXPECT_EQ(download<float>(tb, 12), (std::vector<float>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  for (uint32_t op : {PK_OP_TRANSPOSE, PK_OP_RESHAPE, PK_OP_REV, PK_OP_CAT, PK_OP_PAD, PK_OP_BROADCAST_IN_DIM})
    expect_native(op);
}

TEST_F(OpenCL, GatherScatterIndexSelect) {
  std::vector<int32_t> a = {10, 11, 12, 13, 20, 21, 22, 23};  // [2, 4]
  std::vector<int64_t> idx = {3, 0, 3, 1, 1, 9};              // [2, 3]; 9 is out of range
  pk_tensor ta = device(a, kI32, {2, 4}), ti = device(idx, PK_DTYPE_I64_DESC, {2, 3});
  pk_attrs_gather ga = PK_ATTRS_GATHER_INIT;
  ga.dim = 1;
  pk_tensor tg = empty<int32_t>(6, kI32, {2, 3});
  ASSERT_EQ(launch(PK_OP_GATHER, {ta, ti}, {tg}, &ga), PK_OK) << last_error().message;
  EXPECT_EQ(download<int32_t>(tg, 6), (std::vector<int32_t>{13, 10, 13, 21, 21, 0}));
  // scatter: duplicate index 3 in row 0 -> the later source wins; row 1 writes column 1 twice.
  std::vector<int32_t> src = {1, 2, 3, 4, 5, 6};
  pk_tensor ts = device(src, kI32, {2, 3});
  pk_attrs_scatter sc = PK_ATTRS_SCATTER_INIT;
  sc.dim = 1;
  pk_tensor to = empty<int32_t>(8, kI32, {2, 4});
  ASSERT_EQ(launch(PK_OP_SCATTER, {ta, ti, ts}, {to}, &sc), PK_OK) << last_error().message;
  EXPECT_EQ(download<int32_t>(to, 8), (std::vector<int32_t>{2, 11, 12, 3, 20, 5, 22, 23}));
  pk_attrs_scatter_reduce sr = PK_ATTRS_SCATTER_REDUCE_INIT;
  sr.dim = 1;
  sr.reduce = PK_REDUCE_KIND_SUM;
  sr.include_self = 1;
  ASSERT_EQ(launch(PK_OP_SCATTER_REDUCE, {ta, ti, ts}, {to}, &sr), PK_OK) << last_error().message;
  EXPECT_EQ(download<int32_t>(to, 8), (std::vector<int32_t>{12, 11, 12, 17, 20, 30, 22, 23}));
  std::vector<int32_t> sel = {2, 0};
  pk_tensor tsel = device(sel, kI32, {2});
  pk_attrs_index_select is = PK_ATTRS_INDEX_SELECT_INIT;
  is.dim = 1;
  pk_tensor tis = empty<int32_t>(4, kI32, {2, 2});
  ASSERT_EQ(launch(PK_OP_INDEX_SELECT, {ta, tsel}, {tis}, &is), PK_OK) << last_error().message;
  EXPECT_EQ(download<int32_t>(tis, 4), (std::vector<int32_t>{12, 10, 22, 20}));
  for (uint32_t op : {PK_OP_GATHER, PK_OP_SCATTER, PK_OP_SCATTER_REDUCE, PK_OP_INDEX_SELECT}) expect_native(op);
}

TEST_F(OpenCL, ScansSortAndTopk) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {3, 1, nan, 2, 1, -0.5f};
  pk_tensor tx = device(x, kF32, {6});
  pk_attrs_cumsum cs = PK_ATTRS_CUMSUM_INIT;
  std::vector<int32_t> xi = {5, -2, 7, 1};
  pk_tensor txi = device(xi, kI32, {4});
  pk_tensor tci = empty<int32_t>(4, kI32, {4});
  ASSERT_EQ(launch(PK_OP_CUMSUM, {txi}, {tci}, &cs), PK_OK) << last_error().message;
  EXPECT_EQ(download<int32_t>(tci, 4), (std::vector<int32_t>{5, 3, 10, 11}));
  // cummax: the last occurrence of the maximum; NaN sticks once seen.
  pk_attrs_cummax cm = PK_ATTRS_CUMMAX_INIT;
  pk_tensor tv = empty<float>(6, kF32, {6}), tix = empty<int64_t>(6, PK_DTYPE_I64_DESC, {6});
  ASSERT_EQ(launch(PK_OP_CUMMAX, {tx}, {tv, tix}, &cm), PK_OK) << last_error().message;
  std::vector<float> v = download<float>(tv, 6);
  EXPECT_EQ(v[0], 3.f);
  EXPECT_EQ(v[1], 3.f);
  for (int i = 2; i < 6; ++i) EXPECT_TRUE(std::isnan(v[i])) << i;
  EXPECT_EQ(download<int64_t>(tix, 6), (std::vector<int64_t>{0, 0, 2, 2, 2, 2}));
  // sort ascending: NaN last, equal values keep their order (stable).
  pk_attrs_sort so = PK_ATTRS_SORT_INIT;
  so.dim = 0;
  ASSERT_EQ(launch(PK_OP_SORT, {tx}, {tv, tix}, &so), PK_OK) << last_error().message;
  v = download<float>(tv, 6);
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 5), (std::vector<float>{-0.5f, 1, 1, 2, 3}));
  EXPECT_TRUE(std::isnan(v[5]));
  EXPECT_EQ(download<int64_t>(tix, 6), (std::vector<int64_t>{5, 1, 4, 3, 0, 2}));
  pk_attrs_topk tk = PK_ATTRS_TOPK_INIT;
  tk.k = 2;
  tk.dim = 0;
  tk.largest = 1;
  pk_tensor tkv = empty<float>(2, kF32, {2}), tki = empty<int64_t>(2, PK_DTYPE_I64_DESC, {2});
  ASSERT_EQ(launch(PK_OP_TOPK, {tx}, {tkv, tki}, &tk), PK_OK) << last_error().message;
  v = download<float>(tkv, 2);
  EXPECT_TRUE(std::isnan(v[0]));  // NaN is the largest
  EXPECT_EQ(v[1], 3.f);
  EXPECT_EQ(download<int64_t>(tki, 2), (std::vector<int64_t>{2, 0}));
  for (uint32_t op : {PK_OP_CUMSUM, PK_OP_CUMMAX, PK_OP_SORT, PK_OP_TOPK}) expect_native(op);
}

// Lines longer than one sorting run (256) go through the merge passes: 3 lines of 5000 f32 with many ties, NaNs
// and both zeros, sorted along the last axis both ways and along the first axis of the transposed view (strided
// lines); the reference is std::stable_sort with NaN last (first when descending), as the op table orders.
TEST_F(OpenCL, SortLongLinesMergeStably) {
  const int64_t rows = 3, len = 5000;
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> pick(0, 60);
  std::vector<float> x(static_cast<size_t>(rows * len));
  for (float &v : x) {
    const int k = pick(gen);
    v = k == 0 ? std::numeric_limits<float>::quiet_NaN() : k == 1 ? -0.0f : static_cast<float>(k % 23) - 11.0f;
  }
  const auto before = [](float a, float b, bool desc) {
    if (std::isnan(a)) return desc && !std::isnan(b);
    if (std::isnan(b)) return !desc;
    return desc ? b < a : a < b;
  };
  for (int desc = 0; desc < 2; ++desc) {
    for (int transposed = 0; transposed < 2; ++transposed) {
      // transposed: the tensor is [len, rows] with strides [1, len] over the same memory, sorted along dim 0.
      pk_tensor tx = transposed ? device(x, kF32, {len, rows}, {1, len}) : device(x, kF32, {rows, len});
      const std::vector<int64_t> shape = transposed ? std::vector<int64_t>{len, rows} : std::vector<int64_t>{rows, len};
      pk_tensor tv = empty<float>(x.size(), kF32, shape), ti = empty<int64_t>(x.size(), PK_DTYPE_I64_DESC, shape);
      pk_attrs_sort so = PK_ATTRS_SORT_INIT;
      so.dim = transposed ? 0 : 1;
      so.descending = desc;
      ASSERT_EQ(launch(PK_OP_SORT, {tx}, {tv, ti}, &so), PK_OK) << last_error().message;
      const std::vector<float> v = download<float>(tv, x.size());
      const std::vector<int64_t> idx = download<int64_t>(ti, x.size());
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int64_t> want(static_cast<size_t>(len));
        for (int64_t i = 0; i < len; ++i) want[static_cast<size_t>(i)] = i;
        const float *line = x.data() + r * len;
        std::stable_sort(want.begin(), want.end(),
                         [&](int64_t a, int64_t b) { return before(line[a], line[b], desc); });
        int bad = 0;
        for (int64_t i = 0; i < len && bad < 5; ++i) {
          const size_t at = static_cast<size_t>(transposed ? i * rows + r : r * len + i);
          const float w = line[want[static_cast<size_t>(i)]];
          const bool ok = idx[at] == want[static_cast<size_t>(i)] &&
                          std::memcmp(&v[at], &w, sizeof w) == 0;  // the stored bits: -0 and NaN kept
          if (!ok) ++bad;
          EXPECT_TRUE(ok) << "desc " << desc << " transposed " << transposed << " row " << r << " position " << i
                          << ": index " << idx[at] << " (want " << want[static_cast<size_t>(i)] << ")";
        }
      }
      if (!transposed) {  // topk 700 largest / smallest of each line: the sort's first 700
        pk_attrs_topk tk = PK_ATTRS_TOPK_INIT;
        tk.k = 700;
        tk.dim = 1;
        tk.largest = desc;
        pk_tensor kv = empty<float>(rows * 700, kF32, {rows, 700}),
                  ki = empty<int64_t>(rows * 700, PK_DTYPE_I64_DESC, {rows, 700});
        ASSERT_EQ(launch(PK_OP_TOPK, {tx}, {kv, ki}, &tk), PK_OK) << last_error().message;
        const std::vector<int64_t> top = download<int64_t>(ki, rows * 700);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t i = 0; i < 700; ++i)
            ASSERT_EQ(top[static_cast<size_t>(r * 700 + i)], idx[static_cast<size_t>(r * len + i)]) << r << " " << i;
      }
    }
  }
  expect_native(PK_OP_SORT);
}

// Running sums and products as the reference's exact sum and long double product (hand-checked): f64 finite terms
// whose running sum overflows still meet -inf as -inf and come back in range when later terms cancel (also for
// mean); a running product past f64's range times 0 is 0, not NaN; a complex running product that went subnormal
// in f64 keeps its bits (2^-1000 (1 + 2^-40) 2^-60 2^1000 2^60 = 1 + 2^-40).
TEST_F(OpenCL, RunningSumsAndProductsBeyondF64Range) {
  const pk_dtype f64 = PK_DTYPE_F64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_CUMSUM, {f64}, {f64})) GTEST_SKIP() << "the device has no f64";
  const double big = 1.5e308, inf = HUGE_VAL, hi = 0x1p1000;
  auto scan = [&](uint32_t op, const std::vector<double> &x) {
    pk_tensor tx = device(x, f64, {static_cast<int64_t>(x.size())});
    pk_tensor ty = empty<double>(x.size(), f64, {static_cast<int64_t>(x.size())});
    pk_attrs_cumsum a = PK_ATTRS_CUMSUM_INIT;  // cumprod's attributes have the same layout
    EXPECT_EQ(launch(op, {tx}, {ty}, &a), PK_OK) << last_error().message;
    return download<double>(ty, x.size());
  };
  EXPECT_EQ(scan(PK_OP_CUMSUM, {big, big, -inf, 1}), (std::vector<double>{big, inf, -inf, -inf}));
  EXPECT_EQ(scan(PK_OP_CUMSUM, {big, big, -big}), (std::vector<double>{big, inf, big}));
  const std::vector<double> p = scan(PK_OP_CUMPROD, {hi, hi, 0, -2});
  EXPECT_EQ(p[0], hi);
  EXPECT_EQ(p[1], inf);
  EXPECT_EQ(p[2], 0.0);
  EXPECT_EQ(p[3], 0.0);
  EXPECT_TRUE(std::signbit(p[3])) << "0 * -2 is -0";
  pk_attrs_sum sa = PK_ATTRS_SUM_INIT;
  sa.num_dims = 1;
  std::vector<double> three = {big, big, -inf};
  pk_tensor t3 = device(three, f64, {3}), ts = empty<double>(1, f64, {});
  ASSERT_EQ(launch(PK_OP_SUM, {t3}, {ts}, &sa), PK_OK) << last_error().message;
  EXPECT_EQ(download<double>(ts, 1)[0], -inf);
  pk_attrs_mean ma = PK_ATTRS_MEAN_INIT;
  ma.num_dims = 1;
  std::vector<double> bigs = {big, big, big};
  pk_tensor tb = device(bigs, f64, {3}), tm = empty<double>(1, f64, {});
  ASSERT_EQ(launch(PK_OP_MEAN, {tb}, {tm}, &ma), PK_OK) << last_error().message;
  EXPECT_EQ(download<double>(tm, 1)[0], big);
  std::vector<double> z = {0x1p-1000 * (1 + 0x1p-40), 0, 0x1p-60, 0, 0x1p1000, 0, 0x1p60, 0};
  pk_tensor tz = device(z, c128, {4}), tp = empty<double>(8, c128, {4});
  pk_attrs_cumprod cp = PK_ATTRS_CUMPROD_INIT;
  ASSERT_EQ(launch(PK_OP_CUMPROD, {tz}, {tp}, &cp), PK_OK) << last_error().message;
  const std::vector<double> zp = download<double>(tp, 8);
  EXPECT_EQ(zp[6], 1 + 0x1p-40);
  EXPECT_EQ(zp[7], 0.0);
}

// 8/16-bit formats compute in float but round once (hand-checked): bf16 fma(0.1875, 3.71875, 2^-126) is
// 0.697265625 + 2^-126, just above the tie between 0x3f32 and 0x3f33 (an f32 fma loses the 2^-126 and the tie goes
// to even, 0x3f32); lgamma(4.05e36) = 3.3733e38 is finite in f32 and rounds to bf16 0x7f7e (PoCL's f32 lgamma,
// which this backend used before the device math's, overflowed there).
TEST_F(OpenCL, NarrowFormatsRoundOnce) {
  const pk_dtype bf16 = PK_DTYPE_BF16_DESC;
  if (!supported(PK_OP_FMA, {bf16, bf16, bf16}, {bf16})) GTEST_SKIP() << "no bf16 fma";
  std::vector<uint16_t> a = {0x3e40}, b = {0x406e}, c = {0x0080}, x = {0x7c43};
  pk_tensor ta = device(a, bf16, {1}), tb = device(b, bf16, {1}), tc = device(c, bf16, {1}), tx = device(x, bf16, {1});
  pk_tensor tf = empty<uint16_t>(1, bf16, {1}), tl = empty<uint16_t>(1, bf16, {1});
  ASSERT_EQ(launch(PK_OP_FMA, {ta, tb, tc}, {tf}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_LGAMMA, {tx}, {tl}), PK_OK) << last_error().message;
  EXPECT_EQ(download<uint16_t>(tf, 1)[0], 0x3f33);
  EXPECT_EQ(download<uint16_t>(tl, 1)[0], 0x7f7e);
}

TEST_F(OpenCL, VarMeanAllAny) {
  const int64_t R = 7, C = 33;
  std::vector<float> x = random_floats(static_cast<size_t>(R * C), 11);
  pk_tensor tx = device(x, kF32, {R, C});
  pk_attrs_var va = PK_ATTRS_VAR_INIT;
  va.num_dims = 1;
  va.dims[0] = 1;
  va.correction = 1;
  pk_tensor tv = empty<float>(R, kF32, {R});
  ASSERT_EQ(launch(PK_OP_VAR, {tx}, {tv}, &va), PK_OK) << last_error().message;
  std::vector<float> v = download<float>(tv, R);
  for (int64_t i = 0; i < R; ++i) {
    double m = 0, ss = 0;
    for (int64_t j = 0; j < C; ++j) m += x[i * C + j];
    m /= C;
    for (int64_t j = 0; j < C; ++j) ss += (x[i * C + j] - m) * (x[i * C + j] - m);
    EXPECT_NEAR(v[i], ss / (C - 1), 1e-6 * ss / (C - 1)) << i;
  }
  std::vector<int32_t> b = {0, 2, 0, 0, 1, 3};
  pk_tensor tb = device(b, kI32, {2, 3});
  pk_attrs_any an = PK_ATTRS_ANY_INIT;
  an.num_dims = 1;
  an.dims[0] = 1;
  pk_tensor ty = empty<uint8_t>(2, kBool, {2});
  ASSERT_EQ(launch(PK_OP_ANY, {tb}, {ty}, &an), PK_OK) << last_error().message;
  EXPECT_EQ(download<uint8_t>(ty, 2), (std::vector<uint8_t>{1, 1}));
  pk_attrs_all al = PK_ATTRS_ALL_INIT;
  al.num_dims = 1;
  al.dims[0] = 1;
  ASSERT_EQ(launch(PK_OP_ALL, {tb}, {ty}, &al), PK_OK) << last_error().message;
  EXPECT_EQ(download<uint8_t>(ty, 2), (std::vector<uint8_t>{0, 0}));
  // mean of f32 values whose f32 sum overflows: the double accumulator keeps it finite.
  std::vector<float> big = {3e38f, 3e38f, -1e38f, 2e38f};
  pk_tensor tg = device(big, kF32, {4});
  pk_attrs_mean me = PK_ATTRS_MEAN_INIT;
  me.num_dims = 1;
  me.dims[0] = 0;
  pk_tensor tm = empty<float>(1, kF32, {});
  ASSERT_EQ(launch(PK_OP_MEAN, {tg}, {tm}, &me), PK_OK) << last_error().message;
  const double exact = (double(big[0]) + double(big[1]) + double(big[2]) + double(big[3])) / 4;
  EXPECT_EQ(download<float>(tm, 1)[0], static_cast<float>(exact));
  for (uint32_t op : {PK_OP_VAR, PK_OP_ANY, PK_OP_ALL, PK_OP_MEAN}) expect_native(op);
}

TEST_F(OpenCL, ConvolutionTiledMatchesDirectLoops) {
  // N=2, C=4, H=W=9, 6 output channels in 2 groups, 3x3 kernel, stride 2, padding 1 low / 0 high.
  const int64_t N = 2, C = 4, H = 9, Wd = 9, O = 6, G = 2, KH = 3, KW = 3, S = 2, P = 1;
  const int64_t OH = (H + P - KH) / S + 1, OW = (Wd + P - KW) / S + 1;
  std::vector<float> x = random_floats(static_cast<size_t>(N * C * H * Wd), 21),
                     w = random_floats(static_cast<size_t>(O * (C / G) * KH * KW), 22);
  pk_tensor tx = device(x, kF32, {N, C, H, Wd}), tw = device(w, kF32, {O, C / G, KH, KW});
  pk_tensor ty = empty<float>(static_cast<size_t>(N * O * OH * OW), kF32, {N, O, OH, OW});
  pk_attrs_convolution ca = PK_ATTRS_CONVOLUTION_INIT;
  ca.num_stride = ca.num_padding_low = ca.num_padding_high = ca.num_dilation = 2;
  for (int d = 0; d < 2; ++d) {
    ca.stride[d] = S;
    ca.padding_low[d] = P;
    ca.padding_high[d] = 0;
    ca.dilation[d] = 1;
  }
  ca.groups = G;
  ASSERT_EQ(launch(PK_OP_CONVOLUTION, {tx, tw}, {ty}, &ca), PK_OK) << last_error().message;
  std::vector<float> y = download<float>(ty, static_cast<size_t>(N * O * OH * OW));
  const int64_t Cg = C / G, Og = O / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = 0, sa = 0;
          const int64_t g = o / Og;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ki = 0; ki < KH; ++ki)
              for (int64_t kj = 0; kj < KW; ++kj) {
                const int64_t hi = i * S - P + ki, wj = j * S - P + kj;
                if (hi < 0 || hi >= H || wj < 0 || wj >= Wd) continue;
                const double p =
                    double(x[((n * C + g * Cg + c) * H + hi) * Wd + wj]) * w[((o * Cg + c) * KH + ki) * KW + kj];
                s += p;
                sa += std::fabs(p);
              }
          ASSERT_NEAR(y[((n * O + o) * OH + i) * OW + j], s, 40 * 1.2e-7 * sa + 1e-30) << n << o << i << j;
        }
  expect_native(PK_OP_CONVOLUTION);
}

TEST_F(OpenCL, OverflowRulesOfArithmetic) {
  // e4m3fn: 448 + 36 = 484 lies past 448 + half a quantum: NaN (S.1111.111), not the saturated 448.
  std::vector<uint8_t> a = {0x7e, 0xfe, 0x38}, b = {0x61, 0xe1, 0x38};  // 448, -448, 1; 36, -36, 1
  pk_tensor ta = device(a, kE4M3, {3}), tb = device(b, kE4M3, {3});
  pk_tensor tc = empty<uint8_t>(3, kE4M3, {3});
  ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {tc}), PK_OK) << last_error().message;
  EXPECT_EQ(download<uint8_t>(tc, 3), (std::vector<uint8_t>{0x7f, 0xff, 0x40}));  // NaN, -NaN, 2
  // f64 matmul whose exact dot product overflows to +inf, with products of opposite signs beyond the range.
  std::vector<double> x = {1e308, -1e308, 1e308}, y = {10, 5, 1};
  pk_tensor tx = device(x, kF64, {1, 3}), ty = device(y, kF64, {3, 1});
  pk_tensor tz = empty<double>(1, kF64, {1, 1});
  ASSERT_EQ(launch(PK_OP_MATMUL, {tx, ty}, {tz}), PK_OK) << last_error().message;
  EXPECT_EQ(download<double>(tz, 1)[0], std::numeric_limits<double>::infinity());
  // ... and one whose exact value (1e308 * 10 - 1e308 * 9.5) is finite.
  std::vector<double> y2 = {10, 9.5, 0};
  pk_tensor ty2 = device(y2, kF64, {3, 1});
  ASSERT_EQ(launch(PK_OP_MATMUL, {tx, ty2}, {tz}), PK_OK) << last_error().message;
  EXPECT_DOUBLE_EQ(download<double>(tz, 1)[0], 5e307);
}

// Philox4x32-10 as published (Random123), written out here independently of the backend's generated source.
void philox_ref(uint64_t c, uint64_t k, uint32_t out[4]) {
  uint32_t c0 = static_cast<uint32_t>(c), c1 = static_cast<uint32_t>(c >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(k), k1 = static_cast<uint32_t>(k >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0, p1 = uint64_t{0xCD9E8D57u} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0, n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

TEST_F(OpenCL, PhiloxRandintAndUniform) {
  const int64_t n = 10;
  pk_attrs_philox_randint ri = PK_ATTRS_PHILOX_RANDINT_INIT;
  ri.num_shape = 1;
  ri.shape[0] = n;
  ri.dtype = PK_DTYPE_I64;
  ri.seed = 0x123456789ll;
  ri.offset = 5;
  ri.low = -3;
  ri.high = 1000;
  pk_tensor tr = empty<int64_t>(n, PK_DTYPE_I64_DESC, {n});
  ASSERT_EQ(launch(PK_OP_PHILOX_RANDINT, {}, {tr}, &ri), PK_OK) << last_error().message;
  std::vector<int64_t> r = download<int64_t>(tr, n);
  pk_attrs_philox_uniform un = PK_ATTRS_PHILOX_UNIFORM_INIT;
  un.num_shape = 1;
  un.shape[0] = n;
  un.dtype = PK_DTYPE_F64;
  un.seed = 7;
  un.low = -1;
  un.high = 3;
  pk_tensor tu = empty<double>(n, kF64, {n});
  ASSERT_EQ(launch(PK_OP_PHILOX_UNIFORM, {}, {tu}, &un), PK_OK) << last_error().message;
  std::vector<double> u = download<double>(tu, n);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t w[4];
    philox_ref(5 + i / 4, 0x123456789ull, w);
    EXPECT_EQ(r[i], -3 + static_cast<int64_t>(w[i % 4] % 1003u)) << i;
    philox_ref(static_cast<uint64_t>(i / 4), 7, w);
    EXPECT_EQ(u[i], -1.0 + 4.0 * std::ldexp(static_cast<double>(w[i % 4]), -32)) << i;
  }
}

// The special functions generated in OpenCL C (evaluated in double, double-double where needed) against values
// from independent sources: closed forms, and mpmath 1.3 at 30 digits for the rest (each rounded to double).
TEST_F(OpenCL, SpecialFunctionsKnownValues) {
  if (!supported(PK_OP_DIGAMMA, {kF64}, {kF64})) GTEST_SKIP() << "the device has no f64";
  // f64 results within 4 ulps (the contract allows 16; these implementations reach ~2).
  auto near_ulps = [](double got, double want) {
    return std::fabs(got - want) <= 4 * std::ldexp(1.0, std::ilogb(want) - 52);
  };
  struct Case {
    uint32_t op;
    double a, b;  // b: the second operand of binary ops
    double want;
  };
  const double pi = 3.14159265358979323846;
  const Case unary[] = {
      {PK_OP_ERF_INV, 0.5, 0, 0.4769362762044699},                  // mpmath erfinv(0.5)
      {PK_OP_ERF_INV, -0.999, 0, -2.3267537655135246},              // mpmath (the erfc branch near -1)
      {PK_OP_DIGAMMA, 1.0, 0, -0.5772156649015329},                 // -Euler's gamma
      {PK_OP_DIGAMMA, -0.5, 0, 0.03648997397857652},                // 2 - gamma - 2 ln 2 (cancels 2 digits)
      {PK_OP_DIGAMMA, 1.5616321449683621, 0, 0.09258270895625442},  // near the positive root: mpmath
      {PK_OP_DIGAMMA, -1000.25, 0, 0x1.419a667a2a731p+3},           // mpmath (the reflection branch below -128)
      {PK_OP_NDTRI, 0.975, 0, 1.959963984540054},                   // the two-sided 95 % normal quantile
      {PK_OP_NDTRI, 1e-250, 0, -33.79958617269484},                 // mpmath findroot of ncdf (the deep-tail branch)
      {PK_OP_ERFCX, 1.0, 0, 0.427583576155807},                     // e erfc(1): mpmath
      {PK_OP_ERFCX, 30.0, 0, 0.01879588886141675},                  // mpmath (the asymptotic branch)
      {PK_OP_BESSEL_I0, 1.0, 0, 1.2660658777520084},                // A&S table 9.8 / mpmath
      {PK_OP_BESSEL_I1, 1.0, 0, 0.565159103992485},                 // A&S table 9.8 / mpmath
      {PK_OP_BESSEL_I0E, 1.0, 0, 0.46575960759364043},              // I0(1) / e
      {PK_OP_BESSEL_I1E, 30.0, 0, 0.07191633059864755},             // mpmath (the asymptotic branch)
      {PK_OP_BESSEL_J0, 1.0, 0, 0.7651976865579666},                // A&S table 9.1
      {PK_OP_BESSEL_J1, 1.0, 0, 0.4400505857449335},                // A&S table 9.1
      {PK_OP_BESSEL_J0, 30.0, 0, -0.08636798358104021},             // mpmath (Hankel's expansion)
      {PK_OP_BESSEL_J1, -7.5, 0, -0.1352484275797055},              // mpmath (odd)
      {PK_OP_SPHERICAL_BESSEL_J0, 2.0, 0, 0.45464871341284085},     // sin(2) / 2
  };
  const Case binary[] = {
      {PK_OP_ZETA, 2.0, 1.0, pi * pi / 6},              // Basel
      {PK_OP_ZETA, 3.0, -3.5, 0.030778410660513848},    // mpmath: terms +-8 cancel to 0.03
      {PK_OP_ZETA, 3.0, -3.3, -34.38472273874262},      // mpmath
      {PK_OP_IGAMMA, 1.0, 2.0, 0.8646647167633873},     // 1 - e^-2
      {PK_OP_IGAMMAC, 1.0, 2.0, 0.1353352832366127},    // e^-2
      {PK_OP_IGAMMA, 0.5, 1.0, 0.8427007929497149},     // erf(1)
      {PK_OP_IGAMMAC, 0.5, 4.0, 0.004677734981047266},  // erfc(2)
      {PK_OP_IGAMMA, 40.0, 35.0, 0.21980955482531797},  // mpmath gammainc (exponent ~ hundreds cancels)
  };
  for (const Case &c : unary) {
    std::vector<double> a{c.a};
    pk_tensor ta = device(a, kF64, {1}), out = empty<double>(1, kF64, {1});
    ASSERT_EQ(launch(c.op, {ta}, {out}), PK_OK) << last_error().message;
    const double got = download<double>(out, 1)[0];
    EXPECT_TRUE(near_ulps(got, c.want)) << "op " << c.op << "(" << c.a << "): got " << got << ", want " << c.want;
    expect_native(c.op);
  }
  for (const Case &c : binary) {
    std::vector<double> a{c.a}, b{c.b};
    pk_tensor ta = device(a, kF64, {1}), tb = device(b, kF64, {1}), out = empty<double>(1, kF64, {1});
    ASSERT_EQ(launch(c.op, {ta, tb}, {out}), PK_OK) << last_error().message;
    const double got = download<double>(out, 1)[0];
    EXPECT_TRUE(near_ulps(got, c.want)) << "op " << c.op << "(" << c.a << ", " << c.b << "): got " << got << ", want "
                                        << c.want;
    expect_native(c.op);
  }
  // J0 at its first zero (2.404825557695773, A&S 9.5): the contract there is an absolute error.
  std::vector<double> z{2.404825557695773};
  pk_tensor tz = device(z, kF64, {1}), oz = empty<double>(1, kF64, {1});
  ASSERT_EQ(launch(PK_OP_BESSEL_J0, {tz}, {oz}), PK_OK) << last_error().message;
  EXPECT_LT(std::fabs(download<double>(oz, 1)[0]), 1e-15);
  // f32 rounds the double result once: within 1 ulp of the reference rounded to float.
  std::vector<float> h{0.5f};
  pk_tensor th = device(h, kF32, {1}), oh = empty<float>(1, kF32, {1});
  ASSERT_EQ(launch(PK_OP_ERF_INV, {th}, {oh}), PK_OK) << last_error().message;
  EXPECT_LE(ulp_distance(download<float>(oh, 1)[0], 0.4769362762044699f), 1);
  // Special values: digamma(0) = -inf, negative integers NaN, igamma outside its domain NaN.
  std::vector<double> sv{0.0, -3.0};
  pk_tensor ts = device(sv, kF64, {2}), os = empty<double>(2, kF64, {2});
  ASSERT_EQ(launch(PK_OP_DIGAMMA, {ts}, {os}), PK_OK) << last_error().message;
  const std::vector<double> r = download<double>(os, 2);
  EXPECT_TRUE(std::isinf(r[0]) && r[0] < 0);
  EXPECT_TRUE(std::isnan(r[1]));
}

// digamma below -128 (the reflection branch) at the doubles nearest two roots, where psi(1 - x) and pi cot(pi r)
// (about 5) cancel to ~1e-13: both carried in double-double, the result is within 1e-12 relative (the double-double
// log bounds it, ~2^-90 absolute); plain double reflection was ~1e-3 relative off. Expected: mpmath at 300 bits.
TEST_F(OpenCL, DigammaBelowMinus128NearItsRoots) {
  const double x[] = {-0x1.91a8dcf75d291p+7, -0x1.03a2a0f877920p+7};
  const double want[] = {0x1.ee11fe702ff53p-42, 0x1.b72f0838f29cfp-43};
  for (int i = 0; i < 2; ++i) {
    std::vector<double> a{x[i]};
    pk_tensor ta = device(a, kF64, {1}), out = empty<double>(1, kF64, {1});
    ASSERT_EQ(launch(PK_OP_DIGAMMA, {ta}, {out}), PK_OK) << last_error().message;
    EXPECT_NEAR(download<double>(out, 1)[0], want[i], 1e-12 * want[i]) << "digamma(" << x[i] << ")";
  }
}

// ln |Gamma| (the device math's, pasted into the program) within an ulp of mpmath's value at every row of
// lgamma_cases.hpp: the zeros at 1 and 2 to relative accuracy, near the zeros below -2, the poles, overflow.
TEST_F(OpenCL, LgammaAgainstMpmath) {
  if (!supported(PK_OP_LGAMMA, {kF64}, {kF64})) GTEST_SKIP() << "the device has no f64";
  std::vector<double> x;
  for (const auto &c : pk::test::kLgammaCases) x.push_back(c.x);
  const int64_t n = static_cast<int64_t>(x.size());
  pk_tensor tx = device(x, kF64, {n}), ty = empty<double>(x.size(), kF64, {n});
  ASSERT_EQ(launch(PK_OP_LGAMMA, {tx}, {ty}), PK_OK) << last_error().message;
  const std::vector<double> y = download<double>(ty, x.size());
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_LE(pk::test::lgamma_ulps(y[i], pk::test::kLgammaCases[i].want), 1.0) << "lgamma(" << x[i] << ") = " << y[i];
  expect_native(PK_OP_LGAMMA);
}

// P and Q (the device math's Temme expansion, pasted into the program) at every row of igamma_cases.hpp against
// mpmath: a from 2^16 to the f64 maximum with x within 37 sqrt(a) of a.
TEST_F(OpenCL, IncompleteGammaForLargeANearX) {
  if (!supported(PK_OP_IGAMMA, {kF64, kF64}, {kF64})) GTEST_SKIP() << "the device has no f64";
  std::vector<double> a, x;
  for (const auto &c : pk::test::kIgammaCases) {
    a.push_back(c.a);
    x.push_back(c.x);
  }
  const int64_t n = static_cast<int64_t>(a.size());
  pk_tensor ta = device(a, kF64, {n}), tx = device(x, kF64, {n});
  pk_tensor tp = empty<double>(a.size(), kF64, {n}), tq = empty<double>(a.size(), kF64, {n});
  ASSERT_EQ(launch(PK_OP_IGAMMA, {ta, tx}, {tp}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_IGAMMAC, {ta, tx}, {tq}), PK_OK) << last_error().message;
  const std::vector<double> p = download<double>(tp, a.size()), q = download<double>(tq, a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const auto &c = pk::test::kIgammaCases[i];
    EXPECT_LE(pk::test::igamma_ulps(p[i], c.p), pk::test::kIgammaUlps)
        << "igamma(" << c.a << ", " << c.x << ") = " << p[i];
    EXPECT_LE(pk::test::igamma_ulps(q[i], c.q), pk::test::kIgammaUlps)
        << "igammac(" << c.a << ", " << c.x << ") = " << q[i];
  }
  expect_native(PK_OP_IGAMMA);
}

// nextafter of bf16 / fp8 steps the storage bits (hand-derived patterns).
TEST_F(OpenCL, NextafterNarrowFormatsStepStorageBits) {
  const pk_dtype e5m2 = PK_DTYPE_F8E5M2_DESC;
  // bf16: 1.0 = 0x3f80 -> 0x3f81 (1.0078125) toward 2; -0 toward -1 is the smallest negative subnormal 0x8001.
  std::vector<uint16_t> a16{0x3f80, 0x8000, 0x3f80}, b16{0x4000, 0xbf80, 0x3f80};
  pk_tensor ta = device(a16, kBF16, {3}), tb = device(b16, kBF16, {3}), o16 = empty<uint16_t>(3, kBF16, {3});
  ASSERT_EQ(launch(PK_OP_NEXTAFTER, {ta, tb}, {o16}), PK_OK) << last_error().message;
  const std::vector<uint16_t> r16 = download<uint16_t>(o16, 3);
  EXPECT_EQ(r16[0], 0x3f81);
  EXPECT_EQ(r16[1], 0x8001);
  EXPECT_EQ(r16[2], 0x3f80);
  // e4m3fn: 1.0 = 0x38 -> 0x37 (0.9375) toward 0; 448 = 0x7e toward 0 -> 0x7d (416).
  std::vector<uint8_t> a8{0x38, 0x7e}, b8{0x00, 0x00};
  pk_tensor tc = device(a8, kE4M3, {2}), td = device(b8, kE4M3, {2}), o8 = empty<uint8_t>(2, kE4M3, {2});
  ASSERT_EQ(launch(PK_OP_NEXTAFTER, {tc, td}, {o8}), PK_OK) << last_error().message;
  const std::vector<uint8_t> r8 = download<uint8_t>(o8, 2);
  EXPECT_EQ(r8[0], 0x37);
  EXPECT_EQ(r8[1], 0x7d);
  // e5m2: 1.0 = 0x3c -> 0x3d (1.25) toward 2; the largest finite 0x7b toward +inf is +inf 0x7c.
  std::vector<uint8_t> a5{0x3c, 0x7b}, b5{0x40, 0x7c};
  pk_tensor te = device(a5, e5m2, {2}), tf = device(b5, e5m2, {2}), o5 = empty<uint8_t>(2, e5m2, {2});
  ASSERT_EQ(launch(PK_OP_NEXTAFTER, {te, tf}, {o5}), PK_OK) << last_error().message;
  const std::vector<uint8_t> r5 = download<uint8_t>(o5, 2);
  EXPECT_EQ(r5[0], 0x3d);
  EXPECT_EQ(r5[1], 0x7c);
  expect_native(PK_OP_NEXTAFTER);
}

}  // namespace
