// CPU backend, views / shape ops / indexing / sorting, through the public host API. Expected values are worked out
// by hand (comments) or by index arithmetic written here, never taken from a kernel run.
#include <gtest/gtest.h>

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

const pk_dtype kF32 = PK_DTYPE_F32_DESC, kI32 = PK_DTYPE_I32_DESC, kI64 = PK_DTYPE_I64_DESC, kBool = PK_DTYPE_BOOL_DESC,
               kC128 = PK_DTYPE_C128_DESC, kU8 = PK_DTYPE_U8_DESC, kF16 = PK_DTYPE_F16_DESC,
               kE4M3 = PK_DTYPE_F8E4M3FN_DESC;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

class CpuShape : public pk_test::CpuBackendTest {};

void set_ints(int32_t &n, int64_t *v, std::vector<int64_t> values) {
  n = static_cast<int32_t>(values.size());
  for (size_t i = 0; i < values.size(); ++i) v[i] = values[i];
}

TEST_F(CpuShape, TransposeOfAStridedInputIntoAStridedOutput) {
  // Storage 0..23; the input view [3, 4] with strides [1, 6] has a(i, j) = i + 6j.
  std::vector<float> a(24);
  for (int i = 0; i < 24; ++i) a[i] = static_cast<float>(i);
  // The output [4, 3] is column-major: out(j, i) lives at j + 4i.
  std::vector<float> out(12, -1.0f);
  pk_attrs_transpose t = PK_ATTRS_TRANSPOSE_INIT;
  set_ints(t.num_permutation, t.permutation, {1, 0});
  ASSERT_EQ(launch(PK_OP_TRANSPOSE, {tensor(a, kF32, {3, 4}, {1, 6})}, {tensor(out, kF32, {4, 3}, {1, 4})}, &t), PK_OK)
      << last_error().message;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out[j + 4 * i], static_cast<float>(i + 6 * j)) << j << "," << i;
}

TEST_F(CpuShape, TransposeMovesComplexAndBoolElementsWhole) {
  using c = std::complex<double>;
  std::vector<c> a = {c(1, -1), c(2, -2), c(3, -3), c(4, -4), c(5, -5), c(6, -6)}, out(6);
  pk_attrs_transpose t = PK_ATTRS_TRANSPOSE_INIT;
  set_ints(t.num_permutation, t.permutation, {1, 0});
  ASSERT_EQ(launch(PK_OP_TRANSPOSE, {tensor(a, kC128, {2, 3})}, {tensor(out, kC128, {3, 2})}, &t), PK_OK)
      << last_error().message;
  EXPECT_EQ(out, (std::vector<c>{c(1, -1), c(4, -4), c(2, -2), c(5, -5), c(3, -3), c(6, -6)}));
  std::vector<uint8_t> b = {1, 0, 0, 1, 1, 0}, bo(6, 7);
  ASSERT_EQ(launch(PK_OP_TRANSPOSE, {tensor(b, kBool, {2, 3})}, {tensor(bo, kBool, {3, 2})}, &t), PK_OK);
  EXPECT_EQ(bo, (std::vector<uint8_t>{1, 1, 0, 1, 0, 0}));
}

TEST_F(CpuShape, CatAlongAxisOneWithAnEmptyInput) {
  std::vector<int32_t> a = {1, 2, 3, 4}, e(1, 99), b = {5, 6}, out(6, 0);
  pk_attrs_cat c = PK_ATTRS_CAT_INIT;
  c.dim = 1;
  ASSERT_EQ(launch(PK_OP_CAT, {tensor(a, kI32, {2, 2}), tensor(e, kI32, {2, 0}), tensor(b, kI32, {2, 1})},
                   {tensor(out, kI32, {2, 3})}, &c),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(out, (std::vector<int32_t>{1, 2, 5, 3, 4, 6}));
}

TEST_F(CpuShape, PadWithNegativeLowAndInterior) {
  // [1, 2, 3] with interior 1 is [1, v, 2, v, 3]; low -1 crops the 1, high 2 appends v, v.
  std::vector<int32_t> a = {1, 2, 3}, out(6, 0);
  pk_attrs_pad p = PK_ATTRS_PAD_INIT;
  p.value = -9.0;
  set_ints(p.num_low, p.low, {-1});
  set_ints(p.num_high, p.high, {2});
  set_ints(p.num_interior, p.interior, {1});
  ASSERT_EQ(launch(PK_OP_PAD, {tensor(a, kI32, {3})}, {tensor(out, kI32, {6})}, &p), PK_OK) << last_error().message;
  EXPECT_EQ(out, (std::vector<int32_t>{-9, 2, -9, 3, -9, -9}));
  // 2-D: [[1, 2], [3, 4]], axis 0 low 1 high -1 (shift down, crop the last row), axis 1 interior 2 low 0 high -1.
  // Axis 1: [1, v, v, 2] minus the last -> [1, v, v]; rows: [v, v, v], [1, v, v].
  std::vector<float> f = {1, 2, 3, 4}, fo(6, 0.0f);
  pk_attrs_pad q = PK_ATTRS_PAD_INIT;
  q.value = 0.5;
  set_ints(q.num_low, q.low, {1, 0});
  set_ints(q.num_high, q.high, {-1, -1});
  set_ints(q.num_interior, q.interior, {0, 2});
  ASSERT_EQ(launch(PK_OP_PAD, {tensor(f, kF32, {2, 2})}, {tensor(fo, kF32, {2, 3})}, &q), PK_OK)
      << last_error().message;
  EXPECT_EQ(fo, (std::vector<float>{0.5f, 0.5f, 0.5f, 1.0f, 0.5f, 0.5f}));
  // The fill value is converted as convert_element_type does: f8e4m3fn saturates 1000 to 448 (0x7e).
  std::vector<uint8_t> e = {0x38}, eo(3, 0);
  pk_attrs_pad r = PK_ATTRS_PAD_INIT;
  r.value = 1000.0;
  set_ints(r.num_low, r.low, {1});
  set_ints(r.num_high, r.high, {1});
  ASSERT_EQ(launch(PK_OP_PAD, {tensor(e, kE4M3, {1})}, {tensor(eo, kE4M3, {3})}, &r), PK_OK);
  EXPECT_EQ(eo, (std::vector<uint8_t>{0x7e, 0x38, 0x7e}));
}

TEST_F(CpuShape, GatherYieldsZeroForOutOfRangeIndices) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6};  // [[1, 2, 3], [4, 5, 6]]
  std::vector<int64_t> idx = {0, 5, -1, 2};   // [[0, 5], [-1, 2]] along axis 1
  std::vector<float> out(4, -1.0f);
  pk_attrs_gather g = PK_ATTRS_GATHER_INIT;
  g.dim = 1;
  ASSERT_EQ(launch(PK_OP_GATHER, {tensor(a, kF32, {2, 3}), tensor(idx, kI64, {2, 2})}, {tensor(out, kF32, {2, 2})}, &g),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(out, (std::vector<float>{1, 0, 0, 6}));
  // i32 indices along axis 0: out[i][j] = a[index[i][j]][j].
  std::vector<int32_t> i32 = {1, 0, 1, 3};
  std::vector<float> o2(2, -1.0f);
  g.dim = 0;
  ASSERT_EQ(launch(PK_OP_GATHER, {tensor(a, kF32, {2, 3}), tensor(i32, kI32, {1, 2})}, {tensor(o2, kF32, {1, 2})}, &g),
            PK_OK);
  EXPECT_EQ(o2, (std::vector<float>{4, 2}));
}

TEST_F(CpuShape, ScatterSkipsOutOfRangeIndices) {
  std::vector<float> a(6, 0.0f), src = {5, 6, 7, 8}, out(6, -1.0f);
  std::vector<int32_t> idx = {2, 7, -3, 0};  // row 0: col 2 <- 5, col 7 skipped; row 1: -3 skipped, col 0 <- 8
  pk_attrs_scatter s = PK_ATTRS_SCATTER_INIT;
  s.dim = 1;
  ASSERT_EQ(launch(PK_OP_SCATTER, {tensor(a, kF32, {2, 3}), tensor(idx, kI32, {2, 2}), tensor(src, kF32, {2, 2})},
                   {tensor(out, kF32, {2, 3})}, &s),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(out, (std::vector<float>{0, 0, 5, 8, 0, 0}));
}

TEST_F(CpuShape, ScatterReduceWithAndWithoutSelf) {
  std::vector<float> a = {10, 20, 30}, src = {1, 2, 4, 8}, out(3, 0.0f);
  std::vector<int64_t> idx = {0, 2, 0, 5};  // 1 and 4 go to 0, 2 to 2, 8 is out of range
  pk_attrs_scatter_reduce r = PK_ATTRS_SCATTER_REDUCE_INIT;
  r.reduce = PK_REDUCE_KIND_SUM;
  ASSERT_EQ(launch(PK_OP_SCATTER_REDUCE, {tensor(a, kF32, {3}), tensor(idx, kI64, {4}), tensor(src, kF32, {4})},
                   {tensor(out, kF32, {3})}, &r),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(out, (std::vector<float>{15, 20, 32}));
  r.include_self = 0;
  ASSERT_EQ(launch(PK_OP_SCATTER_REDUCE, {tensor(a, kF32, {3}), tensor(idx, kI64, {4}), tensor(src, kF32, {4})},
                   {tensor(out, kF32, {3})}, &r),
            PK_OK);
  EXPECT_EQ(out, (std::vector<float>{5, 20, 2}));
  r.reduce = PK_REDUCE_KIND_AMAX;
  r.include_self = 1;
  ASSERT_EQ(launch(PK_OP_SCATTER_REDUCE, {tensor(a, kF32, {3}), tensor(idx, kI64, {4}), tensor(src, kF32, {4})},
                   {tensor(out, kF32, {3})}, &r),
            PK_OK);
  EXPECT_EQ(out, (std::vector<float>{10, 20, 30}));
  // Integer products wrap: 100 * 3 = 300 -> 44 in u8.
  std::vector<uint8_t> ua = {100, 1}, us = {3, 9}, uo(2, 0);
  std::vector<int32_t> ui = {0, 1};
  r.reduce = PK_REDUCE_KIND_PROD;
  ASSERT_EQ(launch(PK_OP_SCATTER_REDUCE, {tensor(ua, kU8, {2}), tensor(ui, kI32, {2}), tensor(us, kU8, {2})},
                   {tensor(uo, kU8, {2})}, &r),
            PK_OK);
  EXPECT_EQ(uo, (std::vector<uint8_t>{44, 9}));
}

TEST_F(CpuShape, IndexSelectAndIndexPut) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, out(6, -1.0f);  // [[1, 2, 3], [4, 5, 6]]
  std::vector<int64_t> idx = {2, 3, 0};                      // column 3 does not exist -> 0
  pk_attrs_index_select s = PK_ATTRS_INDEX_SELECT_INIT;
  s.dim = 1;
  ASSERT_EQ(
      launch(PK_OP_INDEX_SELECT, {tensor(a, kF32, {2, 3}), tensor(idx, kI64, {3})}, {tensor(out, kF32, {2, 3})}, &s),
      PK_OK)
      << last_error().message;
  EXPECT_EQ(out, (std::vector<float>{3, 0, 1, 6, 0, 4}));

  // Accumulate with a duplicate and out-of-range rows: a[1] += 1 + 2; rows 9 and -1 are skipped.
  std::vector<float> z(4, 0.0f), v = {1, 2, 3, 4}, zo(4, -1.0f);
  std::vector<int32_t> rows = {1, 1, 9, -1};
  pk_attrs_index_put p = PK_ATTRS_INDEX_PUT_INIT;
  p.accumulate = 1;
  ASSERT_EQ(launch(PK_OP_INDEX_PUT, {tensor(z, kF32, {4}), tensor(v, kF32, {4}), tensor(rows, kI32, {4})},
                   {tensor(zo, kF32, {4})}, &p),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(zo, (std::vector<float>{0, 3, 0, 0}));
  // Two index tensors into [2, 3, 2]: rows (1, 2) and (0, 0) get the [2] blocks of values; (2, 0) is skipped.
  std::vector<int32_t> b(12, 0), bv = {7, 8, 9, 10, 11, 12}, bo(12, -1);
  std::vector<int64_t> i0 = {1, 0, 2}, i1 = {2, 0, 0};
  p.accumulate = 0;
  ASSERT_EQ(launch(PK_OP_INDEX_PUT,
                   {tensor(b, kI32, {2, 3, 2}), tensor(bv, kI32, {3, 2}), tensor(i0, kI64, {3}), tensor(i1, kI64, {3})},
                   {tensor(bo, kI32, {2, 3, 2})}, &p),
            PK_OK)
      << last_error().message;
  std::vector<int32_t> want(12, 0);
  want[(1 * 3 + 2) * 2 + 0] = 7;
  want[(1 * 3 + 2) * 2 + 1] = 8;
  want[0] = 9;
  want[1] = 10;
  EXPECT_EQ(bo, want);
}

TEST_F(CpuShape, SortIsStableAndPutsNaNAboveInfinity) {
  std::vector<float> a = {3, kNaN, 1, 3, -kInf, kInf, 1}, v(7, 0.0f);
  std::vector<int64_t> idx(7, -1);
  pk_attrs_sort s = PK_ATTRS_SORT_INIT;
  ASSERT_EQ(launch(PK_OP_SORT, {tensor(a, kF32, {7})}, {tensor(v, kF32, {7}), tensor(idx, kI64, {7})}, &s), PK_OK)
      << last_error().message;
  EXPECT_EQ(idx, (std::vector<int64_t>{4, 2, 6, 0, 3, 5, 1}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], a[idx[i]]);
  EXPECT_TRUE(std::isnan(v[6]));
  s.descending = 1;
  ASSERT_EQ(launch(PK_OP_SORT, {tensor(a, kF32, {7})}, {tensor(v, kF32, {7}), tensor(idx, kI64, {7})}, &s), PK_OK);
  EXPECT_EQ(idx, (std::vector<int64_t>{1, 5, 0, 3, 2, 6, 4}));
  EXPECT_TRUE(std::isnan(v[0]));
  // Along axis 0 of a [3, 2] i64 tensor with a transposed (strided) output.
  std::vector<int64_t> b = {5, -1, 5, -7, 2, -1}, bv(6, 0), bi(6, -1);
  s.descending = 0;
  s.dim = 0;
  ASSERT_EQ(
      launch(PK_OP_SORT, {tensor(b, kI64, {3, 2})}, {tensor(bv, kI64, {3, 2}, {1, 3}), tensor(bi, kI64, {3, 2})}, &s),
      PK_OK);
  // Column 0: 5, 5, 2 -> 2 (2), 5 (0), 5 (1). Column 1: -1, -7, -1 -> -7 (1), -1 (0), -1 (2).
  EXPECT_EQ(bv, (std::vector<int64_t>{2, 5, 5, -7, -1, -1}));
  EXPECT_EQ(bi, (std::vector<int64_t>{2, 1, 0, 0, 1, 2}));
}

TEST_F(CpuShape, TopkLargestAndSmallest) {
  std::vector<float> a = {1, 5, 3, 5, kNaN, 2}, v(3, 0.0f);
  std::vector<int64_t> idx(3, -1);
  pk_attrs_topk t = PK_ATTRS_TOPK_INIT;
  t.k = 3;
  ASSERT_EQ(launch(PK_OP_TOPK, {tensor(a, kF32, {6})}, {tensor(v, kF32, {3}), tensor(idx, kI64, {3})}, &t), PK_OK)
      << last_error().message;
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 5.0f);
  EXPECT_EQ(v[2], 5.0f);
  EXPECT_EQ(idx, (std::vector<int64_t>{4, 1, 3}));
  t.k = 2;
  t.largest = 0;
  std::vector<float> sv(2, 0.0f);
  std::vector<int64_t> si(2, -1);
  ASSERT_EQ(launch(PK_OP_TOPK, {tensor(a, kF32, {6})}, {tensor(sv, kF32, {2}), tensor(si, kI64, {2})}, &t), PK_OK);
  EXPECT_EQ(sv, (std::vector<float>{1, 2}));
  EXPECT_EQ(si, (std::vector<int64_t>{0, 5}));
}

TEST_F(CpuShape, SearchsortedLeftAndRight) {
  std::vector<float> seq = {1, 2, 2, 3}, vals = {2, 0, 4, 2.5f, 1};
  std::vector<int64_t> out(5, -1);
  pk_attrs_searchsorted s = PK_ATTRS_SEARCHSORTED_INIT;
  ASSERT_EQ(launch(PK_OP_SEARCHSORTED, {tensor(seq, kF32, {4}), tensor(vals, kF32, {5})}, {tensor(out, kI64, {5})}, &s),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(out, (std::vector<int64_t>{1, 0, 4, 3, 0}));
  s.right = 1;
  ASSERT_EQ(launch(PK_OP_SEARCHSORTED, {tensor(seq, kF32, {4}), tensor(vals, kF32, {5})}, {tensor(out, kI64, {5})}, &s),
            PK_OK);
  EXPECT_EQ(out, (std::vector<int64_t>{3, 0, 4, 3, 1}));
}

TEST_F(CpuShape, SliceRevBroadcastAndReshapeOfStridedInputs) {
  std::vector<int32_t> a(20);
  for (int i = 0; i < 20; ++i) a[i] = i;  // [4, 5] row-major
  // a[1:4:2, 0:5:3] -> rows 1, 3; cols 0, 3.
  std::vector<int32_t> s(4, -1);
  pk_attrs_slice sl = PK_ATTRS_SLICE_INIT;
  set_ints(sl.num_start_indices, sl.start_indices, {1, 0});
  set_ints(sl.num_limit_indices, sl.limit_indices, {4, 5});
  set_ints(sl.num_strides, sl.strides, {2, 3});
  ASSERT_EQ(launch(PK_OP_SLICE, {tensor(a, kI32, {4, 5})}, {tensor(s, kI32, {2, 2})}, &sl), PK_OK)
      << last_error().message;
  EXPECT_EQ(s, (std::vector<int32_t>{5, 8, 15, 18}));
  // rev along axis 1 of a [2, 3] view.
  std::vector<int32_t> r(6, -1);
  pk_attrs_rev rv = PK_ATTRS_REV_INIT;
  set_ints(rv.num_dims, rv.dims, {1});
  ASSERT_EQ(launch(PK_OP_REV, {tensor(a, kI32, {2, 3})}, {tensor(r, kI32, {2, 3})}, &rv), PK_OK);
  EXPECT_EQ(r, (std::vector<int32_t>{2, 1, 0, 5, 4, 3}));
  // broadcast_in_dim of [3] into [2, 3] along axis 1.
  std::vector<int32_t> bc(6, -1);
  pk_attrs_broadcast_in_dim b = PK_ATTRS_BROADCAST_IN_DIM_INIT;
  set_ints(b.num_shape, b.shape, {2, 3});
  set_ints(b.num_broadcast_dimensions, b.broadcast_dimensions, {1});
  ASSERT_EQ(launch(PK_OP_BROADCAST_IN_DIM, {tensor(a, kI32, {3})}, {tensor(bc, kI32, {2, 3})}, &b), PK_OK);
  EXPECT_EQ(bc, (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  // reshape of the column-major view [2, 3] (strides [1, 2]: v(i, j) = i + 2j) to [3, 2]: row-major order of v is
  // 0, 2, 4, 1, 3, 5.
  std::vector<int32_t> rs(6, -1);
  pk_attrs_reshape re = PK_ATTRS_RESHAPE_INIT;
  set_ints(re.num_shape, re.shape, {3, 2});
  ASSERT_EQ(launch(PK_OP_RESHAPE, {tensor(a, kI32, {2, 3}, {1, 2})}, {tensor(rs, kI32, {3, 2})}, &re), PK_OK);
  EXPECT_EQ(rs, (std::vector<int32_t>{0, 2, 4, 1, 3, 5}));
  // as_strided of the same strided view: flat(v) = 0, 2, 4, 1, 3, 5; positions 1 + i*2 + j for [2, 2].
  std::vector<int32_t> as(4, -1);
  pk_attrs_as_strided st = PK_ATTRS_AS_STRIDED_INIT;
  set_ints(st.num_shape, st.shape, {2, 2});
  set_ints(st.num_strides, st.strides, {2, 1});
  st.storage_offset = 1;
  ASSERT_EQ(launch(PK_OP_AS_STRIDED, {tensor(a, kI32, {2, 3}, {1, 2})}, {tensor(as, kI32, {2, 2})}, &st), PK_OK);
  EXPECT_EQ(as, (std::vector<int32_t>{2, 4, 1, 3}));
}

TEST_F(CpuShape, SliceScatterAndAsStridedScatter) {
  std::vector<uint16_t> a(8, 0x3c00), src = {0x4000, 0x4200};  // f16 1.0 everywhere; 2.0 and 3.0
  std::vector<uint16_t> out(8, 0);
  pk_attrs_slice_scatter s = PK_ATTRS_SLICE_SCATTER_INIT;
  s.dim = 1;
  s.start = 1;
  s.stride = 2;
  ASSERT_EQ(launch(PK_OP_SLICE_SCATTER, {tensor(a, kF16, {2, 4}), tensor(src, kF16, {2, 1})},
                   {tensor(out, kF16, {2, 4})}, &s),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(out, (std::vector<uint16_t>{0x3c00, 0x4000, 0x3c00, 0x3c00, 0x3c00, 0x4200, 0x3c00, 0x3c00}));
  std::vector<int32_t> b(6, 0), bs = {1, 2}, bo(6, -1);
  pk_attrs_as_strided_scatter as = PK_ATTRS_AS_STRIDED_SCATTER_INIT;
  set_ints(as.num_shape, as.shape, {2});
  set_ints(as.num_strides, as.strides, {4});
  as.storage_offset = 1;
  ASSERT_EQ(launch(PK_OP_AS_STRIDED_SCATTER, {tensor(b, kI32, {2, 3}), tensor(bs, kI32, {2})},
                   {tensor(bo, kI32, {2, 3})}, &as),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(bo, (std::vector<int32_t>{0, 1, 0, 0, 0, 2}));
}

}  // namespace
