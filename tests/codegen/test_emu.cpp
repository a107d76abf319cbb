// Kernel logic proven without a GPU: the cuda backend's kernels (the same LLVM IR body, grid emulated on the
// host) run through the runtime on the cuda-emu backend, for every (op, dtype) it reports supported, and are
// compared to independent reference values (reference.hpp): bit-exact for the exact and correctly rounded ops,
// within the op table's ULP contract for the transcendental ones. Strided layouts, fused regions, reductions and
// the cuda backend's behaviour without a driver are covered too.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen_regions.hpp"
#include "emu_backend_fixture.hpp"
#include "igamma_cases.hpp"
#include "lgamma_cases.hpp"
#include "primkit/op_info.hpp"
#include "primkit/primkit.h"
#include "reference.hpp"

namespace {

using pk::test::Scalar;

pk_error_info last_error() {
  return pk::test::last_runtime_error();
}

// Inputs that reach every interesting case: special values, small and huge magnitudes, integer extremes.
std::vector<Scalar> make_inputs(int32_t d, size_t n, uint32_t seed, bool moderate) {
  std::mt19937_64 rng(seed);
  std::vector<Scalar> v(n);
  if (pk::test::is_fp(d)) {
    const long double inf = HUGE_VALL, nan = std::numeric_limits<long double>::quiet_NaN();
    std::vector<long double> specials = {0.0L, -0.0L, 1,       -1,       0.5,    -0.5,   1.5,     2.5,
                                         -2.5, 3,     100,     -100,     1e-3L,  88.7L,  -103.9L, 709.7L,
                                         -745, 11.1L, 0.3466L, 1e-300L,  1e-40L, inf,    -inf,    nan,
                                         -nan, 65504, 3.4e38L, 1.7e308L, 0.999L, 1.001L, 1e-7L,   -7e-5L};
    std::uniform_real_distribution<double> u(-20, 20), e(-8, 8);
    for (size_t i = 0; i < n; ++i) {
      long double x;
      if (!moderate && i < specials.size())
        x = specials[i];
      else if (moderate || i % 2)
        x = u(rng);
      else
        x = (rng() & 1 ? -1 : 1) * std::pow(10.0L, static_cast<long double>(e(rng)));
      v[i].f = pk::test::round_to(d, x);
    }
  } else if (d == PK_DTYPE_BOOL) {
    for (size_t i = 0; i < n; ++i) v[i].i = static_cast<int64_t>(rng() & 1);
  } else {
    const int w = pk::test::bits_of(d);
    std::vector<int64_t> specials = {0,
                                     1,
                                     -1,
                                     2,
                                     -2,
                                     7,
                                     pk::test::int_min(d),
                                     pk::test::int_max(d),
                                     pk::test::int_min(d) + 1,
                                     pk::test::int_max(d) - 1,
                                     100,
                                     -100,
                                     w - 1,
                                     w,
                                     w + 1};
    std::uniform_int_distribution<int64_t> small(-w - 2, w + 2);
    for (size_t i = 0; i < n; ++i) {
      int64_t x;
      if (!moderate && i < specials.size())
        x = specials[i];
      else if (moderate || i % 2)
        x = small(rng);
      else
        x = static_cast<int64_t>(rng());
      v[i].i = pk::test::wrap(d, x);
    }
  }
  return v;
}

int mant_bits(int32_t d) {
  return d == PK_DTYPE_F16        ? 10
         : d == PK_DTYPE_BF16     ? 7
         : d == PK_DTYPE_F32      ? 23
         : d == PK_DTYPE_F8E4M3FN ? 3
         : d == PK_DTYPE_F8E5M2   ? 2
                                  : 52;
}

// ULP distance of got from want in a float format (0 when both NaN or equal).
double ulps(int32_t d, long double got, long double want) {
  if (std::isnan(got) && std::isnan(want)) return 0;
  if (std::isnan(got) || std::isnan(want)) return HUGE_VAL;
  if (got == want) return 0;
  if (std::isinf(got) || std::isinf(want)) return HUGE_VAL;
  int mant = mant_bits(d);
  int emin = d == PK_DTYPE_F16 || d == PK_DTYPE_F8E5M2 ? -14
             : d == PK_DTYPE_F64                       ? -1022
             : d == PK_DTYPE_F8E4M3FN                  ? -6
                                                       : -126;
  int e = want == 0 ? emin : std::max(emin, static_cast<int>(std::ilogb(want)));
  return static_cast<double>(std::fabs(got - want) / std::ldexp(1.0L, e - mant));
}

class Emu : public pk::test::EmuBackendTest {
 protected:
  struct Buf {
    pk_buffer_t b = nullptr;
    std::vector<int64_t> shape, strides;
    pk_tensor t{};
    ~Buf() { pk_buffer_destroy(b); }
  };
  // A device tensor of `shape` (optionally with element strides over a storage of `storage_elems`).
  static std::unique_ptr<Buf> make(int32_t d, std::vector<int64_t> shape, std::vector<int64_t> strides = {},
                                   size_t storage_elems = 0) {
    auto b = std::make_unique<Buf>();
    b->shape = std::move(shape);
    b->strides = std::move(strides);
    size_t n = 1;
    for (int64_t e : b->shape) n *= static_cast<size_t>(e);
    if (storage_elems == 0) storage_elems = n;
    EXPECT_EQ(pk_buffer_create(dev_, std::max<size_t>(1, storage_elems * pk::test::size_of(d)), &b->b), PK_OK);
    EXPECT_EQ(pk_buffer_tensor(b->b, pk::meta::dtype_desc(d), static_cast<int32_t>(b->shape.size()), b->shape.data(),
                               b->strides.empty() ? nullptr : b->strides.data(), 0, &b->t),
              PK_OK);
    return b;
  }
  static void upload(Buf &b, int32_t d, const std::vector<Scalar> &v) {
    std::vector<uint8_t> bytes(v.size() * pk::test::size_of(d));
    for (size_t i = 0; i < v.size(); ++i) pk::test::write(d, bytes.data(), i, v[i]);
    ASSERT_EQ(pk_copy_host_to_buffer(stream_, b.b, 0, bytes.data(), bytes.size()), PK_OK);
  }
  static std::vector<Scalar> download(Buf &b, int32_t d, size_t n) {
    std::vector<uint8_t> bytes(n * pk::test::size_of(d));
    EXPECT_EQ(pk_copy_buffer_to_host(stream_, bytes.data(), b.b, 0, bytes.size()), PK_OK);
    EXPECT_EQ(pk_stream_synchronize(stream_), PK_OK);
    std::vector<Scalar> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = pk::test::read(d, bytes.data(), i);
    return v;
  }
};

// Compares one output element; returns the ULP error (0 for exact matches), HUGE_VAL for a mismatch of an exact op.
double compare(int32_t d, const Scalar &got, const Scalar &want, bool exact) {
  if (!pk::test::is_fp(d)) return got.i == want.i ? 0 : HUGE_VAL;
  if (std::isnan(got.f) && std::isnan(want.f)) return 0;
  if (exact) return (got.f == want.f && std::signbit(got.f) == std::signbit(want.f)) ? 0 : HUGE_VAL;
  return ulps(d, got.f, want.f);
}

TEST_F(Emu, EverySupportedSingleOpMatchesTheReference) {
  const auto regions = pk::codegen::supported_single_op_regions();
  ASSERT_GT(regions.size(), 300u);
  constexpr size_t kN = 1536;
  std::map<std::string, double> worst;
  int checked = 0, launch_failures = 0;
  // PRIMKIT_TEST_SHARD=k/n checks every n-th region from the k-th: tools/gpu-check.sh runs n processes at once,
  // since compiling ~1500 kernels one after another is most of this test's time.
  unsigned shard = 0, shards = 1;
  if (const char *e = std::getenv("PRIMKIT_TEST_SHARD")) {
    ASSERT_EQ(std::sscanf(e, "%u/%u", &shard, &shards), 2) << "PRIMKIT_TEST_SHARD must be k/n, not " << e;
    ASSERT_LT(shard, shards);
  }
  size_t index = 0;
  for (const auto &r : regions) {
    if (index++ % shards != shard) continue;
    const pk::codegen::Node &n = r.nodes[0];
    const pk::meta::OpInfo *op = pk::meta::find_op(n.op_id);
    const bool reduce = r.reduces();
    // This harness has references for sum/amax and elementwise ops with inputs; the other reductions, iota and
    // creation fills are checked against the oracle by the conformance suite.
    // Gathers are checked by hand below (EmuOps.GatherAndIndexSelect).
    // The Bessel functions, igamma/igammac and zeta have no long double reference here: conformance (the oracle) and
    // EmuOps.SpecialFunctionsAtHandCheckedPoints check them.
    const bool no_reference = n.op_id == PK_OP_BESSEL_I0 || n.op_id == PK_OP_BESSEL_I0E || n.op_id == PK_OP_BESSEL_I1 ||
                              n.op_id == PK_OP_BESSEL_I1E || n.op_id == PK_OP_BESSEL_J0 || n.op_id == PK_OP_BESSEL_J1 ||
                              n.op_id == PK_OP_SPHERICAL_BESSEL_J0 || n.op_id == PK_OP_IGAMMA ||
                              n.op_id == PK_OP_IGAMMAC || n.op_id == PK_OP_ZETA;
    if ((reduce && n.op_id != PK_OP_SUM && n.op_id != PK_OP_AMAX) || r.inputs.empty() || n.op_id == PK_OP_GATHER ||
        no_reference)
      continue;
    // Complex values (and angle, complex, polar) have no reference here: test_emu_complex.cpp checks them against
    // high-precision literals, the conformance suite against the oracle.
    if (std::any_of(r.dtypes.begin(), r.dtypes.end(),
                    [](int32_t d) { return d == PK_DTYPE_C64 || d == PK_DTYPE_C128; }) ||
        n.op_id == PK_OP_ANGLE || n.op_id == PK_OP_COMPLEX || n.op_id == PK_OP_POLAR)
      continue;
    const int32_t out_dt = r.dtypes[n.output];
    std::string label =
        std::string(op->name) + "(" + pk::meta::dtype_name(r.dtypes[0]) + "->" + pk::meta::dtype_name(out_dt) + ")";
    if (n.op_id == PK_OP_ROUND) label += n.round_mode ? "[away]" : "[even]";
    // Elementwise: [kN]; reductions: [kN/32, 32] over the last axis, moderate values (no overflow to argue about).
    const std::vector<int64_t> shape =
        reduce ? std::vector<int64_t>{kN / 32, 32} : std::vector<int64_t>{static_cast<int64_t>(kN)};
    std::vector<std::unique_ptr<Buf>> ins;
    std::vector<std::vector<Scalar>> vals;
    for (size_t k = 0; k < r.inputs.size(); ++k) {
      const int32_t d = r.dtypes[r.inputs[k]];
      vals.push_back(make_inputs(d, kN, static_cast<uint32_t>(17 + 31 * k + n.op_id), reduce));
      if (k == 1) std::reverse(vals[k].begin(), vals[k].end());  // pair specials with other values
      if (k == 2) std::rotate(vals[k].begin(), vals[k].begin() + 7, vals[k].end());
      ins.push_back(make(d, shape));
      upload(*ins.back(), d, vals.back());
    }
    const std::vector<int64_t> oshape = reduce ? std::vector<int64_t>{kN / 32} : shape;
    const size_t on = reduce ? kN / 32 : kN;
    auto out = make(out_dt, oshape);
    std::vector<pk_tensor> tin;
    for (auto &b : ins) tin.push_back(b->t);
    alignas(16) unsigned char attrs[pk::meta::kMaxAttrsSize] = {0};
    pk::meta::default_attrs(*op, attrs);
    if (n.op_id == PK_OP_FILL) reinterpret_cast<pk_attrs_fill *>(attrs)->value = n.fill_value;
    if (n.op_id == PK_OP_ROUND) reinterpret_cast<pk_attrs_round *>(attrs)->mode = n.round_mode;
    if (n.op_id == PK_OP_CONVERT_ELEMENT_TYPE) reinterpret_cast<pk_attrs_convert_element_type *>(attrs)->dtype = out_dt;
    if (reduce) {
      auto *a = reinterpret_cast<pk_attrs_sum *>(attrs);
      a->num_dims = 1;
      a->dims[0] = 1;
    }
    // A kernel that fails to build or launch is reported and the next one tried, so one run names all of them
    // (a device fault makes the stream sticky: then the run stops after a few).
    if (pk_launch(stream_, n.op_id, tin.data(), static_cast<uint32_t>(tin.size()), &out->t, 1,
                  op->num_attrs ? attrs : nullptr) != PK_OK) {
      ADD_FAILURE() << label << ": " << last_error().message;
      if (++launch_failures == 12) break;
      continue;
    }
    std::vector<Scalar> got = download(*out, out_dt, on);
    const bool exact =
        op->contract.kind == pk::meta::Contract::exact || op->contract.kind == pk::meta::Contract::correctly_rounded;
    const bool half = out_dt == PK_DTYPE_F16 || out_dt == PK_DTYPE_BF16 || pk::test::is_fp8(out_dt);
    double tol = exact ? 0 : half ? op->contract.half : op->contract.ulp;
    const bool abs_near_zero = op->doc != nullptr && std::strstr(op->doc, "absolute error near") != nullptr;
    double max_err = 0;
    int failures = 0;
    for (size_t i = 0; i < on; ++i) {
      Scalar want;
      double err;
      if (reduce) {
        const int32_t d = r.dtypes[0];
        long double acc = n.op_id == PK_OP_SUM ? 0 : -HUGE_VALL, abs_sum = 0;
        int64_t iacc = n.op_id == PK_OP_SUM ? 0 : pk::test::int_min(d);
        for (size_t c = 0; c < 32; ++c) {
          const Scalar &x = vals[0][i * 32 + c];
          if (n.op_id == PK_OP_SUM) {
            acc += x.f;
            abs_sum += std::fabs(x.f);
            iacc = pk::test::wrap(d, static_cast<int64_t>(static_cast<uint64_t>(iacc) + static_cast<uint64_t>(x.i)));
          } else {
            acc =
                std::isnan(acc) || std::isnan(x.f) ? std::numeric_limits<long double>::quiet_NaN() : std::max(acc, x.f);
            iacc = std::max(iacc, x.i);
          }
        }
        want.f = acc;
        want.i = iacc;
        if (!pk::test::is_fp(d) || n.op_id == PK_OP_AMAX) {
          err = compare(out_dt, got[i], want, true);
        } else {
          // Accumulated in f32 (f64 for f64): error bound cols * eps * sum|x|, plus rounding to the output.
          const long double eps = d == PK_DTYPE_F64 ? 0x1p-53L : 0x1p-24L;
          const long double bound =
              32 * eps * abs_sum + std::fabs(acc) * (half ? std::ldexp(1.0L, -1 - mant_bits(out_dt)) : eps);
          err = std::fabs(got[i].f - acc) <= bound ? 0 : HUGE_VAL;
        }
      } else {
        std::vector<Scalar> x;
        std::vector<int32_t> dts;
        for (size_t k = 0; k < vals.size(); ++k) {
          x.push_back(vals[k][i]);
          dts.push_back(r.dtypes[r.inputs[k]]);
        }
        bool known = false;
        want = pk::test::reference(n, dts, out_dt, x, known);
        ASSERT_TRUE(known) << label;
        err = compare(out_dt, got[i], want, exact);
        // Rows promising an absolute error near the function's zeros (lgamma): ULPs of max(|want|, 1).
        if (abs_near_zero && std::fabs(want.f) < 1 && std::isfinite(got[i].f))
          err = std::min(err, ulps(out_dt, 1 + (got[i].f - want.f), 1));
      }
      max_err = std::max(max_err, err);
      if (err > tol && ++failures <= 3) {
        ADD_FAILURE() << label << " element " << i << ": inputs "
                      << (pk::test::is_fp(r.dtypes[0]) ? std::to_string(static_cast<double>(vals[0][i].f))
                                                       : std::to_string(vals[0][i].i))
                      << (vals.size() > 1 ? " , " + (pk::test::is_fp(r.dtypes[r.inputs[1]])
                                                         ? std::to_string(static_cast<double>(vals[1][i].f))
                                                         : std::to_string(vals[1][i].i))
                                          : "")
                      << " got " << static_cast<double>(got[i].f) << "/" << got[i].i << " want "
                      << static_cast<double>(want.f) << "/" << want.i << " (err " << err << " ulp, limit " << tol
                      << ")";
      }
    }
    if (!exact) worst[label] = max_err;
    ++checked;
  }
  std::printf("checked %d (op, dtype) kernels; worst ULP error of the transcendental ones:\n", checked);
  for (const auto &w : worst) std::printf("  %-32s %.2f\n", w.first.c_str(), w.second);
}

// Found by fuzz_query: a coverage query (no shape in any tensor, primkit.h) that also lists its outputs made the
// code generator plan a launch from the NULL shapes (a read of address 0). It is answered as a coverage query; a
// query mixing shapes and NULL shapes is declined with a reason.
TEST_F(Emu, CoverageQueriesWithOutputsAndNoShapesAreAnswered) {
  pk_tensor in[2], out[1];
  for (pk_tensor *t : {&in[0], &in[1], &out[0]}) {
    PK_STRUCT_INIT(*t);
    t->dtype = pk::meta::dtype_desc(PK_DTYPE_F32);
    t->ndim = 2;  // a rank, but no shape
  }
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = PK_OP_ADD;
  q.num_inputs = 2;
  q.inputs = in;
  q.num_outputs = 1;
  q.outputs = out;
  pk_op_support sup;
  PK_STRUCT_INIT(sup);
  ASSERT_EQ(pk_device_query_op(dev_, &q, &sup), PK_OK) << last_error().message;
  EXPECT_EQ(sup.supported, 1) << sup.reason;
  const int64_t shape[2] = {2, 3};
  in[0].shape = shape;  // one shape among NULL ones
  PK_STRUCT_INIT(sup);
  ASSERT_EQ(pk_device_query_op(dev_, &q, &sup), PK_OK) << last_error().message;
  EXPECT_EQ(sup.supported, 0);
  EXPECT_NE(std::string(sup.reason).find("neither a coverage nor an exact query"), std::string::npos) << sup.reason;
}

// Found by fuzz_query: an exact query of a reduction over an axis past the input's rank reached cuda-emu's plan,
// which marked that axis in a vector of rank entries (a write out of bounds). The runtime checks a query's
// attributes against its inputs as it checks a launch's, so the backend never sees the axis.
TEST_F(Emu, ExactQueriesWithAnAxisPastTheRankAreRefused) {
  const int64_t in_shape[2] = {2, 3}, out_shape[1] = {2};
  pk_tensor in, out;
  PK_STRUCT_INIT(in);
  PK_STRUCT_INIT(out);
  in.dtype = out.dtype = pk::meta::dtype_desc(PK_DTYPE_F32);
  in.ndim = 2;
  in.shape = in_shape;
  out.ndim = 1;
  out.shape = out_shape;
  pk_attrs_sum a = PK_ATTRS_SUM_INIT;
  a.num_dims = 1;
  a.dims[0] = 5;
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = PK_OP_SUM;
  q.num_inputs = 1;
  q.inputs = &in;
  q.num_outputs = 1;
  q.outputs = &out;
  q.attrs = &a;
  pk_op_support sup;
  PK_STRUCT_INIT(sup);
  EXPECT_EQ(pk_device_query_op(dev_, &q, &sup), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error().message).find("sum"), std::string::npos) << last_error().message;
  a.dims[0] = 1;  // the same query with a valid axis is answered
  EXPECT_EQ(pk_device_query_op(dev_, &q, &sup), PK_OK) << last_error().message;
  EXPECT_EQ(sup.supported, 1) << sup.reason;
  // And without attributes ("any attribute values"): fuzz_query found the plan reading the NULL struct.
  q.attrs = nullptr;
  EXPECT_EQ(pk_device_query_op(dev_, &q, &sup), PK_OK) << last_error().message;
  EXPECT_EQ(sup.supported, 1) << sup.reason;
}

// Found by fuzz_launch (UBSan): an empty input may carry any byte_offset (it reaches no byte), and the backend's
// data + byte_offset on it was pointer arithmetic far past the allocation. The reduction of an empty axis runs.
TEST_F(Emu, EmptyInputsWithAnyByteOffsetRun) {
  const int32_t d = PK_DTYPE_F32;
  auto a = make(d, {3});
  auto out = make(d, {3});
  std::vector<int64_t> shape{0, 3};
  pk_tensor in;
  ASSERT_EQ(pk_buffer_tensor(a->b, pk::meta::dtype_desc(d), 2, shape.data(), nullptr, ~uint64_t{0} - 63, &in), PK_OK);
  pk_attrs_sum s = PK_ATTRS_SUM_INIT;
  s.num_dims = 1;
  s.dims[0] = 0;
  ASSERT_EQ(pk_launch(stream_, PK_OP_SUM, &in, 1, &out->t, 1, &s), PK_OK) << last_error().message;
  auto got = download(*out, d, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(static_cast<float>(got[i].f), 0.0f) << i;
}

TEST_F(Emu, StridedBroadcastAndNegativeStridesUseTheStridedKernel) {
  // out[i][j] = a[j][i] (transposed view) * b[i] (zero stride on axis 1) - c[i][3-j] (negative stride).
  const int32_t d = PK_DTYPE_F32;
  std::vector<Scalar> av(12), bv(3), cv(12);
  for (int i = 0; i < 12; ++i) av[i].f = i + 0.5L, cv[i].f = 100 * i;
  for (int i = 0; i < 3; ++i) bv[i].f = i - 1.0L;
  auto a = make(d, {3, 4}, {1, 3});     // storage [4][3] read transposed
  auto b = make(d, {3, 4}, {1, 0}, 3);  // broadcast along axis 1
  auto c = make(d, {12}, {}, 0);        // upload, then a reversed-column view of it
  upload(*a, d, av);
  upload(*b, d, bv);
  upload(*c, d, cv);
  std::vector<int64_t> cshape{3, 4}, cstrides{4, -1};
  pk_tensor ct;
  ASSERT_EQ(pk_buffer_tensor(c->b, pk::meta::dtype_desc(d), 2, cshape.data(), cstrides.data(), 3 * 4, &ct), PK_OK);
  auto t = make(d, {3, 4});
  auto out = make(d, {3, 4});
  pk_tensor ab[2] = {a->t, b->t};
  ASSERT_EQ(pk_launch(stream_, PK_OP_MUL, ab, 2, &t->t, 1, nullptr), PK_OK) << last_error().message;
  pk_tensor tc[2] = {t->t, ct};
  ASSERT_EQ(pk_launch(stream_, PK_OP_SUB, tc, 2, &out->t, 1, nullptr), PK_OK) << last_error().message;
  auto got = download(*out, d, 12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      const float want =
          static_cast<float>((j * 3 + i + 0.5f) * (i - 1.0f)) - static_cast<float>(100 * (i * 4 + 3 - j));
      EXPECT_EQ(static_cast<float>(got[i * 4 + j].f), want) << i << "," << j;
    }
}

TEST_F(Emu, FusedRegionsThroughTheGraphApi) {
  // relu(x * y + z) on [64, 33], then sum(exp(t - m)) over the last axis with t also an output.
  const int32_t d = PK_DTYPE_F32;
  const int64_t shape[2] = {64, 33};
  pk_graph_t g;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  uint32_t x, y, z, m, xy, s, r, e, t, total;
  pk_dtype f32 = PK_DTYPE_F32_DESC;
  ASSERT_EQ(pk_graph_add_input(g, f32, 2, shape, &x), PK_OK);
  ASSERT_EQ(pk_graph_add_input(g, f32, 2, shape, &y), PK_OK);
  ASSERT_EQ(pk_graph_add_input(g, f32, 2, shape, &z), PK_OK);
  ASSERT_EQ(pk_graph_add_input(g, f32, 2, shape, &m), PK_OK);
  uint32_t in2[2] = {x, y};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in2, 2, nullptr, &xy, 1), PK_OK);
  uint32_t in3[2] = {xy, z};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_ADD, in3, 2, nullptr, &s, 1), PK_OK);
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_RELU, &s, 1, nullptr, &r, 1), PK_OK) << last_error().message;
  uint32_t in4[2] = {r, m};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_SUB, in4, 2, nullptr, &t, 1), PK_OK);
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_EXP, &t, 1, nullptr, &e, 1), PK_OK);
  pk_attrs_sum sa = PK_ATTRS_SUM_INIT;
  sa.num_dims = 1;
  sa.dims[0] = 1;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_SUM, &e, 1, &sa, &total, 1), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, t), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, total), PK_OK);
  pk_executable_t exe;
  ASSERT_EQ(pk_graph_compile(g, dev_, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fused = 0, fused_nodes = 0, singles = 0;
  ASSERT_EQ(pk_executable_stats(exe, &fused, &fused_nodes, &singles), PK_OK);
  EXPECT_EQ(fused, 1u);
  EXPECT_EQ(singles, 0u);
  EXPECT_EQ(fused_nodes, 7u);  // mul, add, fill, maximum (relu's decomposition), sub, exp, sum
  const size_t n = 64 * 33;
  std::vector<std::unique_ptr<Buf>> bufs;
  std::vector<std::vector<Scalar>> v;
  for (int k = 0; k < 4; ++k) {
    v.push_back(make_inputs(d, n, 5 + k, true));
    for (auto &s2 : v.back()) s2.f = static_cast<float>(s2.f / 4);
    bufs.push_back(make(d, {64, 33}));
    upload(*bufs.back(), d, v.back());
  }
  auto tout = make(d, {64, 33});
  auto sout = make(d, {64});
  pk_tensor ins[4] = {bufs[0]->t, bufs[1]->t, bufs[2]->t, bufs[3]->t};
  pk_tensor outs[2] = {tout->t, sout->t};
  ASSERT_EQ(pk_executable_run(exe, stream_, ins, 4, outs, 2), PK_OK) << last_error().message;
  auto tg = download(*tout, d, n);
  auto sg = download(*sout, d, 64);
  for (size_t row = 0; row < 64; ++row) {
    long double sum = 0, abs_sum = 0;
    for (size_t c = 0; c < 33; ++c) {
      const size_t i = row * 33 + c;
      float p = static_cast<float>(v[0][i].f) * static_cast<float>(v[1][i].f);
      float q = p + static_cast<float>(v[2][i].f);
      float rl = q > 0 ? q : 0.0f;
      float tt = rl - static_cast<float>(v[3][i].f);
      ASSERT_EQ(static_cast<float>(tg[i].f), tt) << i;
      float ex = static_cast<float>(std::exp(static_cast<long double>(tt)));
      sum += ex;
      abs_sum += ex;
    }
    EXPECT_NEAR(static_cast<double>(sg[row].f), static_cast<double>(sum), static_cast<double>(abs_sum) * 33 * 0x1p-23)
        << row;
  }
  pk_executable_destroy(exe);
}

// --- reductions over any axes, data movement and iota: hand-computed values -----------------------------------

class EmuOps : public Emu {
 protected:
  struct In {
    int32_t dt;
    std::vector<int64_t> shape;
    std::vector<Scalar> v;
  };
  // Launches `op` on the backend under test and returns its output (out_n elements of out_dt).
  static std::vector<Scalar> run(uint32_t op, const std::vector<In> &ins, int32_t out_dt,
                                 std::vector<int64_t> out_shape, const void *attrs) {
    std::vector<std::unique_ptr<Buf>> bufs;
    std::vector<pk_tensor> t;
    for (const In &in : ins) {
      bufs.push_back(make(in.dt, in.shape));
      if (!in.v.empty()) upload(*bufs.back(), in.dt, in.v);
      t.push_back(bufs.back()->t);
    }
    size_t n = 1;
    for (int64_t e : out_shape) n *= static_cast<size_t>(e);
    auto out = make(out_dt, std::move(out_shape));
    EXPECT_EQ(pk_launch(stream_, op, t.data(), static_cast<uint32_t>(t.size()), &out->t, 1, attrs), PK_OK)
        << pk::meta::op_name(op) << ": " << last_error().message;
    return download(*out, out_dt, n);
  }
  static std::vector<Scalar> ints(std::vector<int64_t> v) {
    std::vector<Scalar> s(v.size());
    for (size_t i = 0; i < v.size(); ++i) s[i].i = v[i];
    return s;
  }
  static std::vector<Scalar> floats(std::vector<double> v) {
    std::vector<Scalar> s(v.size());
    for (size_t i = 0; i < v.size(); ++i) s[i].f = v[i];
    return s;
  }
  static pk_attrs_sum dims(std::vector<int64_t> d) {  // every dims-reduction shares this layout
    pk_attrs_sum a = PK_ATTRS_SUM_INIT;
    a.num_dims = static_cast<int32_t>(d.size());
    std::copy(d.begin(), d.end(), a.dims);
    return a;
  }
  static void expect_ints(const std::vector<Scalar> &got, std::vector<int64_t> want, const char *what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i].i, want[i]) << what << " element " << i;
  }
  // Bit-exact float comparison (signed zeros distinguished, any NaN matches NaN).
  static void expect_floats(const std::vector<Scalar> &got, std::vector<double> want, const char *what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i].f)) << what << " element " << i;
      } else {
        EXPECT_EQ(static_cast<double>(got[i].f), want[i]) << what << " element " << i;
        EXPECT_EQ(std::signbit(got[i].f), std::signbit(want[i])) << what << " element " << i;
      }
    }
  }
};

TEST_F(EmuOps, ReductionsOverAnyAxes) {
  // x[i][j][k] = 12 i + 4 j + k, i32 [2, 3, 4].
  std::vector<int64_t> xv(24);
  for (int64_t i = 0; i < 24; ++i) xv[i] = i;
  const In x{PK_DTYPE_I32, {2, 3, 4}, ints(xv)};
  pk_attrs_sum a = dims({1});
  // sum over j: 36 i + 12 + 3 k.
  expect_ints(run(PK_OP_SUM, {x}, PK_DTYPE_I32, {2, 4}, &a), {12, 15, 18, 21, 48, 51, 54, 57}, "sum dims=[1]");
  a = dims({0, 2});
  // sum over i and k: 4 (0 + 12) + 8 * 4 j + 2 (0 + 1 + 2 + 3) = 60 + 32 j.
  expect_ints(run(PK_OP_SUM, {x}, PK_DTYPE_I32, {3}, &a), {60, 92, 124}, "sum dims=[0,2]");
  a = dims({});
  expect_ints(run(PK_OP_SUM, {x}, PK_DTYPE_I32, {2, 3, 4}, &a), xv, "sum dims=[] (no axis: a copy)");
  a = dims({0});
  // amax over i: the i = 1 slab.
  expect_ints(run(PK_OP_AMAX, {x}, PK_DTYPE_I32, {3, 4}, &a), {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23},
              "amax dims=[0]");
  a = dims({2});
  // prod over k of (12 i + 4 j + k): row 0 is 0 (k = 0 at i = j = 0); 4*5*6*7 = 840; 8*9*10*11 = 7920.
  expect_ints(run(PK_OP_PROD, {x}, PK_DTYPE_I32, {2, 3}, &a),
              {0, 840, 7920, 12 * 13 * 14 * 15, 16 * 17 * 18 * 19, 20 * 21 * 22 * 23}, "prod dims=[2]");

  const double nan = std::numeric_limits<double>::quiet_NaN();
  // f32 [3, 3]: columns {1, 5, 2}, {-0, +0, -3}, {7, NaN, 1}.
  const In f{PK_DTYPE_F32, {3, 3}, floats({1, -0.0, 7, 5, 0.0, nan, 2, -3, 1})};
  a = dims({0});
  expect_floats(run(PK_OP_AMAX, {f}, PK_DTYPE_F32, {3}, &a), {5, 0.0, nan}, "amax f32 dims=[0] (+0 > -0, NaN wins)");
  a = dims({1});
  expect_floats(run(PK_OP_PROD, {f}, PK_DTYPE_F32, {3}, &a), {-0.0, nan, -6}, "prod f32 dims=[1]");
  a = dims({0, 1});
  expect_floats(run(PK_OP_SUM, {In{PK_DTYPE_F32, {2, 2}, floats({0.5, 1.25, -2, 8})}}, PK_DTYPE_F32, {}, &a), {7.75},
                "sum f32 over every axis");

  // Empty reduced axes: sum 0, prod 1, amax the lowest value.
  const In empty{PK_DTYPE_F32, {3, 0}, {}};
  a = dims({1});
  expect_floats(run(PK_OP_SUM, {empty}, PK_DTYPE_F32, {3}, &a), {0, 0, 0}, "sum over an empty axis");
  expect_floats(run(PK_OP_PROD, {empty}, PK_DTYPE_F32, {3}, &a), {1, 1, 1}, "prod over an empty axis");
  expect_floats(run(PK_OP_AMAX, {empty}, PK_DTYPE_F32, {3}, &a), {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL},
                "amax over an empty axis");
  expect_ints(run(PK_OP_AMAX, {In{PK_DTYPE_I32, {2, 0}, {}}}, PK_DTYPE_I32, {2}, &a), {INT32_MIN, INT32_MIN},
              "amax i32 over an empty axis");
  // Empty kept axes: nothing to compute, and nothing may go wrong.
  a = dims({1});
  EXPECT_TRUE(run(PK_OP_SUM, {In{PK_DTYPE_F32, {0, 4}, {}}}, PK_DTYPE_F32, {0}, &a).empty());

  // argmax: the first maximum, the first NaN wins; over dim 0 and dim 1.
  const In g{PK_DTYPE_F32, {2, 4}, floats({1, 3, 3, 2, -1, -5, nan, 4})};
  pk_attrs_argmax am = PK_ATTRS_ARGMAX_INIT;
  am.dim = 1;
  expect_ints(run(PK_OP_ARGMAX, {g}, PK_DTYPE_I64, {2}, &am), {1, 2}, "argmax dim=1");
  am.dim = 0;
  expect_ints(run(PK_OP_ARGMAX, {g}, PK_DTYPE_I64, {4}, &am), {0, 0, 1, 1}, "argmax dim=0");
  const In h{PK_DTYPE_I32, {3, 2}, ints({4, -7, 9, -7, 9, -8})};
  expect_ints(run(PK_OP_ARGMAX, {h}, PK_DTYPE_I64, {2}, &am), {1, 0}, "argmax i32 dim=0 (ties: the first)");
}

TEST_F(EmuOps, DataMovementAndIota) {
  std::vector<double> v20(20);
  for (int i = 0; i < 20; ++i) v20[i] = i;
  const In x{PK_DTYPE_F32, {4, 5}, floats(v20)};  // x[r][c] = 5 r + c

  pk_attrs_transpose t = PK_ATTRS_TRANSPOSE_INIT;
  t.num_permutation = 2;
  t.permutation[0] = 1;
  t.permutation[1] = 0;
  expect_floats(run(PK_OP_TRANSPOSE, {In{PK_DTYPE_F32, {2, 3}, floats({0, 1, 2, 3, 4, 5})}}, PK_DTYPE_F32, {3, 2}, &t),
                {0, 3, 1, 4, 2, 5}, "transpose [2,3] -> [3,2]");
  // A rank-3 permutation on i16: y[a][b][c] = x[c][a][b] for x [2, 2, 3] = 0..11, perm [1, 2, 0] -> [2, 3, 2].
  std::vector<int64_t> v12(12);
  for (int i = 0; i < 12; ++i) v12[i] = i;
  t.num_permutation = 3;
  t.permutation[0] = 1;
  t.permutation[1] = 2;
  t.permutation[2] = 0;
  expect_ints(run(PK_OP_TRANSPOSE, {In{PK_DTYPE_I16, {2, 2, 3}, ints(v12)}}, PK_DTYPE_I16, {2, 3, 2}, &t),
              {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}, "transpose i16 perm [1,2,0]");

  pk_attrs_slice s = PK_ATTRS_SLICE_INIT;
  s.num_start_indices = s.num_limit_indices = s.num_strides = 2;
  s.start_indices[0] = 1;
  s.start_indices[1] = 1;
  s.limit_indices[0] = 4;
  s.limit_indices[1] = 5;
  s.strides[0] = 2;
  s.strides[1] = 3;
  expect_floats(run(PK_OP_SLICE, {x}, PK_DTYPE_F32, {2, 2}, &s), {6, 9, 16, 19}, "slice rows 1,3 cols 1,4");
  s.num_strides = 0;  // unit strides
  s.start_indices[0] = 2;
  s.start_indices[1] = 3;
  expect_floats(run(PK_OP_SLICE, {x}, PK_DTYPE_F32, {2, 2}, &s), {13, 14, 18, 19}, "slice [2:4, 3:5]");

  pk_attrs_cat c = PK_ATTRS_CAT_INIT;
  c.dim = 1;
  expect_ints(run(PK_OP_CAT, {In{PK_DTYPE_I32, {2, 2}, ints({1, 2, 3, 4})}, In{PK_DTYPE_I32, {2, 1}, ints({5, 6})}},
                  PK_DTYPE_I32, {2, 3}, &c),
              {1, 2, 5, 3, 4, 6}, "cat dim=1");
  c.dim = 0;
  expect_ints(run(PK_OP_CAT,
                  {In{PK_DTYPE_I64, {1, 2}, ints({-1, -2})}, In{PK_DTYPE_I64, {0, 2}, {}},
                   In{PK_DTYPE_I64, {2, 2}, ints({7, 8, 9, 10})}},
                  PK_DTYPE_I64, {3, 2}, &c),
              {-1, -2, 7, 8, 9, 10}, "cat dim=0 with an empty part");

  pk_attrs_pad p = PK_ATTRS_PAD_INIT;
  p.value = 9;
  p.num_low = p.num_high = p.num_interior = 2;
  p.low[0] = 1;
  p.high[1] = 1;
  p.interior[1] = 1;
  // [2,2] -> [1 + 2, 2 + 1 (interior) + 1 (high)] = [3, 4].
  expect_floats(run(PK_OP_PAD, {In{PK_DTYPE_F32, {2, 2}, floats({1, 2, 3, 4})}}, PK_DTYPE_F32, {3, 4}, &p),
                {9, 9, 9, 9, 1, 9, 2, 9, 3, 9, 4, 9}, "pad low/high/interior");
  pk_attrs_pad q = PK_ATTRS_PAD_INIT;
  q.value = -7;
  q.num_low = q.num_high = 1;
  q.low[0] = -1;  // crops the first element
  q.high[0] = 2;
  expect_ints(run(PK_OP_PAD, {In{PK_DTYPE_I8, {3}, ints({1, 2, 3})}}, PK_DTYPE_I8, {4}, &q), {2, 3, -7, -7},
              "pad with a negative low");

  pk_attrs_iota io = PK_ATTRS_IOTA_INIT;
  io.length = 5;
  io.start = 7;
  io.step = -3;
  io.dtype = PK_DTYPE_I32;
  expect_ints(run(PK_OP_IOTA, {}, PK_DTYPE_I32, {5}, &io), {7, 4, 1, -2, -5}, "iota i32 start 7 step -3");
  io.length = 4;
  io.start = 0;
  io.step = 2;
  io.dtype = PK_DTYPE_F32;
  expect_floats(run(PK_OP_IOTA, {}, PK_DTYPE_F32, {4}, &io), {0, 2, 4, 6}, "iota f32");
  io.length = 3;
  io.start = 250;
  io.step = 2;
  io.dtype = PK_DTYPE_U8;
  expect_ints(run(PK_OP_IOTA, {}, PK_DTYPE_U8, {3}, &io), {250, 252, 254}, "iota u8");
}

// --- the transcendental, remainder, bit and fp8 ops: hand-checked values ------------------------------------

TEST_F(EmuOps, TrigonometryOfHugeArgumentsAndSpecialCases) {
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  const double pio2 = 0x1.921fb54442d18p+0;  // pi/2 rounded to f64: pi/2 - pio2 = 6.123233995736766e-17
  // sin(1e22) = -0.8522008497671888017727... (a classic test of the argument reduction); sin(2^1023) and
  // cos(2^1023) from an exact reduction; cos(pio2) is the error of pio2.
  auto got = run(PK_OP_SIN, {In{PK_DTYPE_F64, {3}, floats({1e22, 0x1p1023, -0.0})}}, PK_DTYPE_F64, {3}, nullptr);
  EXPECT_EQ(static_cast<double>(got[0].f), -0.8522008497671888);
  EXPECT_NEAR(static_cast<double>(got[1].f), static_cast<double>(sinl(0x1p1023L)), 0x1p-52);
  EXPECT_TRUE(std::signbit(got[2].f) && got[2].f == 0) << "sin(-0) = -0";
  got = run(PK_OP_COS, {In{PK_DTYPE_F64, {3}, floats({pio2, inf, 0x1p1023})}}, PK_DTYPE_F64, {3}, nullptr);
  EXPECT_NEAR(static_cast<double>(got[0].f), 6.123233995736766e-17, 1e-32);
  EXPECT_TRUE(std::isnan(got[1].f));
  EXPECT_NEAR(static_cast<double>(got[2].f), static_cast<double>(cosl(0x1p1023L)), 0x1p-52);
  // atan2's C99 cases: (+-0, -0) = +-pi, (inf, -inf) = 3pi/4, (-1, +0) = -pi/2.
  got =
      run(PK_OP_ATAN2,
          {In{PK_DTYPE_F64, {4}, floats({0.0, -0.0, inf, -1})}, In{PK_DTYPE_F64, {4}, floats({-0.0, -0.0, -inf, 0.0})}},
          PK_DTYPE_F64, {4}, nullptr);
  expect_floats(got, {0x1.921fb54442d18p+1, -0x1.921fb54442d18p+1, 0x1.2d97c7f3321d2p+1, -pio2}, "atan2 specials");
  // pow's C99 cases: pow(-0, -3) = -inf, pow(-1, inf) = 1, pow(NaN, 0) = 1, pow(1, NaN) = 1, pow(-8, 1/3) = NaN.
  got = run(PK_OP_POW,
            {In{PK_DTYPE_F64, {5}, floats({-0.0, -1, nan, 1, -8})},
             In{PK_DTYPE_F64, {5}, floats({-3, inf, 0, nan, 1.0 / 3})}},
            PK_DTYPE_F64, {5}, nullptr);
  expect_floats(got, {-inf, 1, 1, 1, nan}, "pow specials");
  // Near overflow: pow(1.7718548704178432e-103, -3) = 0x7feffffffffffffe (300-bit mpmath; y log x rounds above
  // log(DBL_MAX), which made it inf), pow(DBL_MAX, 1) = DBL_MAX, pow(-DBL_MAX, 1) = -DBL_MAX, pow(1e200, 2) = inf.
  const double dbl_max = std::numeric_limits<double>::max();
  got = run(PK_OP_POW,
            {In{PK_DTYPE_F64, {4}, floats({0x1.965fea53d6e3dp-342, dbl_max, -dbl_max, 1e200})},
             In{PK_DTYPE_F64, {4}, floats({-3, 1, 1, 2})}},
            PK_DTYPE_F64, {4}, nullptr);
  expect_floats(got, {0x1.ffffffffffffep+1023, dbl_max, -dbl_max, inf}, "pow near overflow");
  // erfc: 0 beyond 27.5 (underflow), 2 at -inf; erf(-inf) = -1.
  expect_floats(run(PK_OP_ERFC, {In{PK_DTYPE_F64, {2}, floats({30, -inf})}}, PK_DTYPE_F64, {2}, nullptr), {0, 2},
                "erfc");
  expect_floats(run(PK_OP_ERF, {In{PK_DTYPE_F32, {1}, floats({-inf})}}, PK_DTYPE_F32, {1}, nullptr), {-1}, "erf(-inf)");
}

TEST_F(EmuOps, RemaindersBitsAndNextafter) {
  // fmod takes a's sign, remainder b's: fmod(5.5, -2) = 1.5, fmod(-7, 3) = -1, remainder(-7, 3) = 2,
  // remainder(7, -3) = -2, remainder(6, -3) = -0; 2^1000 = 4^500 = 1 (mod 3) needs the full 1000-step loop.
  const In a{PK_DTYPE_F64, {5}, floats({5.5, -7, -7, 7, 0x1p1000})}, b{PK_DTYPE_F64, {5}, floats({-2, 3, 3, -3, 3})};
  expect_floats(run(PK_OP_FMOD, {a, b}, PK_DTYPE_F64, {5}, nullptr), {1.5, -1, -1, 1, 1}, "fmod f64");
  const In a2{PK_DTYPE_F32, {3}, floats({-7, 7, 6})}, b2{PK_DTYPE_F32, {3}, floats({3, -3, -3})};
  expect_floats(run(PK_OP_REMAINDER, {a2, b2}, PK_DTYPE_F32, {3}, nullptr), {2, -2, -0.0}, "remainder f32");
  expect_ints(
      run(PK_OP_REMAINDER, {In{PK_DTYPE_I32, {3}, ints({-7, INT32_MIN, 7})}, In{PK_DTYPE_I32, {3}, ints({3, -1, 0})}},
          PK_DTYPE_I32, {3}, nullptr),
      {2, 0, 0}, "remainder i32");
  expect_ints(
      run(PK_OP_GCD, {In{PK_DTYPE_I32, {4}, ints({12, 0, INT32_MIN, 7})}, In{PK_DTYPE_I32, {4}, ints({-18, 0, 0, 0})}},
          PK_DTYPE_I32, {4}, nullptr),
      {6, 0, INT32_MIN, 7}, "gcd i32");
  expect_ints(run(PK_OP_POPULATION_COUNT, {In{PK_DTYPE_I8, {3}, ints({-1, 0, 0x55})}}, PK_DTYPE_I8, {3}, nullptr),
              {8, 0, 4}, "popcount i8");
  expect_ints(run(PK_OP_COUNT_LEADING_ZEROS, {In{PK_DTYPE_I16, {3}, ints({1, 0, -1})}}, PK_DTYPE_I16, {3}, nullptr),
              {15, 16, 0}, "clz i16");
  expect_floats(
      run(PK_OP_NEXTAFTER,
          {In{PK_DTYPE_F32, {3}, floats({1, 0, 0x1.fffffep127})}, In{PK_DTYPE_F32, {3}, floats({2, -1, HUGE_VAL})}},
          PK_DTYPE_F32, {3}, nullptr),
      {1 + 0x1p-23, -0x1p-149, HUGE_VAL}, "nextafter f32");
}

TEST_F(EmuOps, Fp8RoundsOnceAndOverflowsAsTheTableSays) {
  // e4m3fn: 448 + 16 ties to even (down to 448), 448 + 32 overflows to NaN (no infinity); converting 1000
  // saturates to 448. e5m2: 57344 + 57344 overflows to inf; 1 + 0.125 is a tie (to 1), 1 + 0.1875 rounds up to 1.25.
  const In a{PK_DTYPE_F8E4M3FN, {3}, floats({448, 448, 0.015625})},
      b{PK_DTYPE_F8E4M3FN, {3}, floats({16, 32, 0.001953125})};
  expect_floats(run(PK_OP_ADD, {a, b}, PK_DTYPE_F8E4M3FN, {3}, nullptr),
                {448, std::numeric_limits<double>::quiet_NaN(), 0.017578125}, "add e4m3fn");
  pk_attrs_convert_element_type c = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  c.dtype = PK_DTYPE_F8E4M3FN;
  expect_floats(
      run(PK_OP_CONVERT_ELEMENT_TYPE, {In{PK_DTYPE_F32, {2}, floats({1000, -0.0})}}, PK_DTYPE_F8E4M3FN, {2}, &c),
      {448, -0.0}, "convert f32 -> e4m3fn");
  const In x{PK_DTYPE_F8E5M2, {3}, floats({57344, 1, 1})}, y{PK_DTYPE_F8E5M2, {3}, floats({57344, 0.125, 0.1875})};
  expect_floats(run(PK_OP_ADD, {x, y}, PK_DTYPE_F8E5M2, {3}, nullptr), {HUGE_VAL, 1, 1.25}, "add e5m2");
  // exp(2) = 7.389 -> 7.5 in e4m3fn (quantum 0.5 in [4, 8)).
  expect_floats(run(PK_OP_EXP, {In{PK_DTYPE_F8E4M3FN, {1}, floats({2})}}, PK_DTYPE_F8E4M3FN, {1}, nullptr), {7.5},
                "exp e4m3fn");
}

// --- var, scans and indexed loads: hand-computed values ------------------------------------------------------

TEST_F(EmuOps, VarTwoPassWithCorrectionAndOverflowRescaling) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Rows {1, 2, 3, 4} (mean 2.5, squared deviations 5) and {5, 5, 5, 5}; columns (1,5) (2,5) (3,5) (4,5).
  const In x{PK_DTYPE_F64, {2, 4}, floats({1, 2, 3, 4, 5, 5, 5, 5})};
  pk_attrs_var v = PK_ATTRS_VAR_INIT;
  v.num_dims = 1;
  v.dims[0] = 1;
  v.correction = 1;
  expect_floats(run(PK_OP_VAR, {x}, PK_DTYPE_F64, {2}, &v), {5.0 / 3, 0}, "var f64 dims=[1] correction=1");
  v.correction = 0;
  expect_floats(run(PK_OP_VAR, {x}, PK_DTYPE_F64, {2}, &v), {1.25, 0}, "var f64 dims=[1] correction=0");
  v.dims[0] = 0;
  v.correction = 1;  // strided: the reduced axis is not the last; (x - mean)^2 sums 8, 4.5, 2, 0.5
  expect_floats(run(PK_OP_VAR, {In{PK_DTYPE_F32, {2, 4}, x.v}}, PK_DTYPE_F32, {4}, &v), {8, 4.5, 2, 0.5},
                "var f32 dims=[0]");
  // Four times 1.5e308 overflows the sum: the rescaled mean still gives exactly 0 (not inf - inf = NaN).
  v.dims[0] = 1;
  expect_floats(
      run(PK_OP_VAR, {In{PK_DTYPE_F64, {1, 4}, floats({1.5e308, 1.5e308, 1.5e308, 1.5e308})}}, PK_DTYPE_F64, {1}, &v),
      {0}, "var of an overflowing constant row");
  // n - correction <= 0: NaN (one element with correction 1; an empty row).
  expect_floats(run(PK_OP_VAR, {In{PK_DTYPE_F32, {2, 1}, floats({3, 4})}}, PK_DTYPE_F32, {2}, &v), {nan, nan},
                "var of one element, correction 1");
  v.correction = 0;
  expect_floats(run(PK_OP_VAR, {In{PK_DTYPE_F32, {2, 0}, {}}}, PK_DTYPE_F32, {2}, &v), {nan, nan},
                "var over an empty axis");
}

TEST_F(EmuOps, ScansAlongAnyAxis) {
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  const In x{PK_DTYPE_I32, {2, 3}, ints({1, 2, 3, 4, 5, 6})};
  pk_attrs_cumsum a = PK_ATTRS_CUMSUM_INIT;
  a.dim = 1;
  expect_ints(run(PK_OP_CUMSUM, {x}, PK_DTYPE_I32, {2, 3}, &a), {1, 3, 6, 4, 9, 15}, "cumsum i32 dim=1");
  a.dim = 0;  // strided kernel: the scanned axis is not the last
  expect_ints(run(PK_OP_CUMSUM, {x}, PK_DTYPE_I32, {2, 3}, &a), {1, 2, 3, 5, 7, 9}, "cumsum i32 dim=0");
  a.dim = 0;
  expect_ints(run(PK_OP_CUMSUM, {In{PK_DTYPE_I8, {3}, ints({100, 100, -128})}}, PK_DTYPE_I8, {3}, &a), {100, -56, 72},
              "cumsum i8 wraps");
  pk_attrs_cumprod p = PK_ATTRS_CUMPROD_INIT;
  p.dim = 1;
  expect_floats(
      run(PK_OP_CUMPROD, {In{PK_DTYPE_F32, {2, 3}, floats({2, -0.5, 3, 1e30, 1e30, 0})}}, PK_DTYPE_F32, {2, 3}, &p),
      {2, -1, -3, 1e30f, inf, 0}, "cumprod f32 (the f64 running product overflows f32 only when stored)");
  // f64 as the reference's exact sum and long double product give them (hand-checked): finite terms whose f64
  // running sum overflows still meet -inf as -inf (not inf - inf = NaN), and come back in range when later terms
  // cancel; a running product that overflows f64 (1e300 * 1e300, finite in long double) times 0 is 0, not NaN,
  // and one that underflows comes back (2^-1000 2^-1000 2^1000 2^1000 = 1).
  const double big = 1.5e308;
  a.dim = 0;
  expect_floats(run(PK_OP_CUMSUM, {In{PK_DTYPE_F64, {4}, floats({big, big, -inf, 1})}}, PK_DTYPE_F64, {4}, &a),
                {big, inf, -inf, -inf}, "cumsum f64: an overflowed running sum meets -inf");
  expect_floats(run(PK_OP_CUMSUM, {In{PK_DTYPE_F64, {3}, floats({big, big, -big})}}, PK_DTYPE_F64, {3}, &a),
                {big, inf, big}, "cumsum f64: back in range after cancelling");
  p.dim = 0;
  expect_floats(run(PK_OP_CUMPROD, {In{PK_DTYPE_F64, {4}, floats({1e300, 1e300, 0, -2})}}, PK_DTYPE_F64, {4}, &p),
                {1e300, inf, 0, -0.0}, "cumprod f64: an overflowed running product times 0");
  const double lo = 0x1p-1000, hi = 0x1p1000;
  expect_floats(run(PK_OP_CUMPROD, {In{PK_DTYPE_F64, {4}, floats({lo, lo, hi, hi})}}, PK_DTYPE_F64, {4}, &p),
                {lo, 0, lo, 1}, "cumprod f64: an underflowed running product comes back");
  expect_floats(run(PK_OP_CUMPROD, {In{PK_DTYPE_F64, {3}, floats({0, inf, 2})}}, PK_DTYPE_F64, {3}, &p), {0, nan, nan},
                "cumprod f64: 0 * inf");
  pk_attrs_sum sa = dims({0});
  expect_floats(run(PK_OP_SUM, {In{PK_DTYPE_F64, {3}, floats({big, big, -inf})}}, PK_DTYPE_F64, {}, &sa), {-inf},
                "sum f64: an overflowed running sum meets -inf");
  pk_attrs_prod pa = PK_ATTRS_PROD_INIT;
  pa.num_dims = 1;
  pa.dims[0] = 0;
  expect_floats(run(PK_OP_PROD, {In{PK_DTYPE_F64, {3}, floats({hi, hi, lo})}}, PK_DTYPE_F64, {}, &pa), {hi},
                "prod f64: back in range");
  // f16: the running sum is kept in f64 and rounded once per element: 2048 + 1 + 1 = 2050 (not 2048 twice).
  expect_floats(run(PK_OP_CUMSUM, {In{PK_DTYPE_F16, {3}, floats({2048, 1, 1})}}, PK_DTYPE_F16, {3}, &a),
                {2048, 2048, 2050}, "cumsum f16 accumulates wide");
  pk_attrs_logcumsumexp l = PK_ATTRS_LOGCUMSUMEXP_INIT;
  l.dim = 0;
  auto got =
      run(PK_OP_LOGCUMSUMEXP, {In{PK_DTYPE_F64, {4}, floats({0, 0, std::log(2.0), 1000})}}, PK_DTYPE_F64, {4}, &l);
  EXPECT_EQ(static_cast<double>(got[0].f), 0);
  EXPECT_NEAR(static_cast<double>(got[1].f), 0.693147180559945309417, 0x1p-52);
  EXPECT_NEAR(static_cast<double>(got[2].f), 1.386294361119890618834, 0x1p-51);
  EXPECT_EQ(static_cast<double>(got[3].f), 1000) << "log(4 + e^1000) = 1000 to f64 precision, no overflow";
  expect_floats(run(PK_OP_LOGCUMSUMEXP, {In{PK_DTYPE_F32, {4}, floats({-inf, -inf, inf, nan})}}, PK_DTYPE_F32, {4}, &l),
                {-inf, -inf, inf, nan}, "logcumsumexp specials");

  // cummax / cummin: values and the index of the last occurrence; a NaN sticks and later NaNs move the index.
  auto scan2 = [&](uint32_t op, const In &in, int64_t dim, std::vector<Scalar> &vals, std::vector<Scalar> &idx) {
    auto src = make(in.dt, in.shape);
    upload(*src, in.dt, in.v);
    auto ov = make(in.dt, in.shape), oi = make(PK_DTYPE_I64, in.shape);
    pk_attrs_cummax m = PK_ATTRS_CUMMAX_INIT;
    m.dim = dim;
    pk_tensor outs[2] = {ov->t, oi->t};
    ASSERT_EQ(pk_launch(stream_, op, &src->t, 1, outs, 2, &m), PK_OK) << last_error().message;
    vals = download(*ov, in.dt, in.v.size());
    idx = download(*oi, PK_DTYPE_I64, in.v.size());
  };
  std::vector<Scalar> vals, idx;
  scan2(PK_OP_CUMMAX, In{PK_DTYPE_F32, {7}, floats({1, 3, 3, 2, nan, 5, nan})}, 0, vals, idx);
  expect_floats(vals, {1, 3, 3, 3, nan, nan, nan}, "cummax values");
  expect_ints(idx, {0, 1, 2, 2, 4, 4, 6}, "cummax indices");
  // i32 [3, 2] along dim 0 (strided): columns {4, 9, 9} and {-7, -7, -8}.
  scan2(PK_OP_CUMMIN, In{PK_DTYPE_I32, {3, 2}, ints({4, -7, 9, -7, 9, -8})}, 0, vals, idx);
  expect_ints(vals, {4, -7, 4, -7, 4, -8}, "cummin values");
  expect_ints(idx, {0, 0, 0, 1, 0, 2}, "cummin indices");
}

TEST_F(EmuOps, GatherAndIndexSelect) {
  // a[r][c] = 10 r + c over [2, 3]; indices outside [0, extent) give 0 (negative ones included).
  const In a{PK_DTYPE_F32, {2, 3}, floats({0, 1, 2, 10, 11, 12})};
  pk_attrs_gather g = PK_ATTRS_GATHER_INIT;
  g.dim = 1;
  expect_floats(run(PK_OP_GATHER, {a, In{PK_DTYPE_I64, {2, 2}, ints({2, -1, 3, 0})}}, PK_DTYPE_F32, {2, 2}, &g),
                {2, 0, 0, 10}, "gather f32 dim=1");
  g.dim = 0;
  expect_floats(run(PK_OP_GATHER, {a, In{PK_DTYPE_I32, {1, 3}, ints({1, 0, 2})}}, PK_DTYPE_F32, {1, 3}, &g), {10, 1, 0},
                "gather f32 dim=0, i32 index");
  pk_attrs_index_select s = PK_ATTRS_INDEX_SELECT_INIT;
  s.dim = 0;
  expect_floats(run(PK_OP_INDEX_SELECT, {a, In{PK_DTYPE_I32, {3}, ints({1, 5, 0})}}, PK_DTYPE_F32, {3, 3}, &s),
                {10, 11, 12, 0, 0, 0, 0, 1, 2}, "index_select dim=0");
  s.dim = 1;
  // Bits move unchanged: -0 and a NaN payload in f64; i64 index along the last axis.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_floats(run(PK_OP_INDEX_SELECT,
                    {In{PK_DTYPE_F64, {1, 3}, floats({-0.0, nan, 7})}, In{PK_DTYPE_I64, {4}, ints({2, 0, 1, -2})}},
                    PK_DTYPE_F64, {1, 4}, &s),
                {7, -0.0, nan, 0}, "index_select f64 dim=1");
}

TEST_F(EmuOps, LgammaAgainstMpmath) {
  // ln |Gamma| (the device math's, linked into the kernel) within an ulp of mpmath's value at every row of
  // lgamma_cases.hpp: the zeros at 1 and 2 to relative accuracy, near the zeros below -2, near the pole at -16 (where
  // the emitter's own former lgamma was 8.26 ulp off), the poles, overflow.
  std::vector<double> x;
  for (const auto &c : pk::test::kLgammaCases) x.push_back(c.x);
  const int64_t n = static_cast<int64_t>(x.size());
  const auto y = run(PK_OP_LGAMMA, {In{PK_DTYPE_F64, {n}, floats(x)}}, PK_DTYPE_F64, {n}, nullptr);
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double got = static_cast<double>(y[i].f);
    EXPECT_LE(pk::test::lgamma_ulps(got, pk::test::kLgammaCases[i].want), 1.0) << "lgamma(" << x[i] << ") = " << got;
  }
}

TEST_F(EmuOps, IncompleteGammaForLargeANearX) {
  // P and Q (the device math's Temme expansion, linked into the kernel) at every row of igamma_cases.hpp against
  // mpmath: a from 2^16 to the f64 maximum with x within 37 sqrt(a) of a.
  std::vector<double> a, x;
  for (const auto &c : pk::test::kIgammaCases) {
    a.push_back(c.a);
    x.push_back(c.x);
  }
  const int64_t n = static_cast<int64_t>(a.size());
  const auto p = run(PK_OP_IGAMMA, {In{PK_DTYPE_F64, {n}, floats(a)}, In{PK_DTYPE_F64, {n}, floats(x)}}, PK_DTYPE_F64,
                     {n}, nullptr);
  const auto q = run(PK_OP_IGAMMAC, {In{PK_DTYPE_F64, {n}, floats(a)}, In{PK_DTYPE_F64, {n}, floats(x)}}, PK_DTYPE_F64,
                     {n}, nullptr);
  ASSERT_EQ(p.size(), a.size());
  ASSERT_EQ(q.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const auto &c = pk::test::kIgammaCases[i];
    const double gp = static_cast<double>(p[i].f), gq = static_cast<double>(q[i].f);
    EXPECT_LE(pk::test::igamma_ulps(gp, c.p), pk::test::kIgammaUlps) << "igamma(" << c.a << ", " << c.x << ") = " << gp;
    EXPECT_LE(pk::test::igamma_ulps(gq, c.q), pk::test::kIgammaUlps)
        << "igammac(" << c.a << ", " << c.x << ") = " << gq;
  }
}

TEST_F(EmuOps, SpecialFunctionsAtHandCheckedPoints) {
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  auto f64 = [&](uint32_t op, std::vector<double> x) {
    const int64_t n = static_cast<int64_t>(x.size());
    return run(op, {In{PK_DTYPE_F64, {n}, floats(x)}}, PK_DTYPE_F64, {n}, nullptr);
  };
  auto near = [](const Scalar &got, double want, double ulps, const char *what) {
    EXPECT_NEAR(static_cast<double>(got.f), want, std::fabs(want) * ulps * 0x1p-52) << what;
  };
  // lgamma(1/2) = log(sqrt(pi)), lgamma(-1/2) = log(2 sqrt(pi)), lgamma(-2.5) = log(8 sqrt(pi) / 15); exactly 0 at
  // 1 and 2, +inf at the poles and at -inf.
  auto g = f64(PK_OP_LGAMMA, {0.5, -0.5, -2.5, 1, 2, 0, -3, -inf});
  near(g[0], 0.5723649429247001, 2, "lgamma(0.5)");
  near(g[1], 1.2655121234846454, 2, "lgamma(-0.5)");
  near(g[2], -0.056243716497674051, 16, "lgamma(-2.5)");
  expect_floats(std::vector<Scalar>(g.begin() + 3, g.end()), {0, 0, inf, inf, inf}, "lgamma exact values");
  // digamma(1) = -Euler's gamma, digamma(1/2) = -gamma - 2 log 2, digamma(-1/2) = digamma(1/2) + 2;
  // digamma(1e-5) = -1e5 - gamma + (pi^2 / 6) 1e-5 ...; -inf at +0, +inf at -0, NaN at the negative integers.
  auto d = f64(PK_OP_DIGAMMA, {1, 0.5, -0.5, 1e-5, 0.0, -0.0, -2, -inf});
  near(d[0], -0.57721566490153286, 2, "digamma(1)");
  near(d[1], -1.9635100260214235, 2, "digamma(0.5)");
  near(d[2], 0.036489973978576521, 2, "digamma(-0.5)");
  near(d[3], -100000.57719921567, 2, "digamma(1e-5)");
  expect_floats(std::vector<Scalar>(d.begin() + 4, d.end()), {-inf, inf, nan, nan}, "digamma poles");
  // erf_inv(1/2); ndtri(0.975) = 1.959963984540054 (the 95 % two-sided normal quantile) and its mirror.
  auto e = f64(PK_OP_ERF_INV, {0.5, -1, 1, 1.5, -0.0});
  near(e[0], 0.47693627620446987, 2, "erf_inv(0.5)");
  expect_floats(std::vector<Scalar>(e.begin() + 1, e.end()), {-inf, inf, nan, -0.0}, "erf_inv specials");
  auto q = f64(PK_OP_NDTRI, {0.975, 0.025, 0.5, 0, 1, -0.5});
  near(q[0], 1.9599639845400539, 2, "ndtri(0.975)");
  near(q[1], -1.9599639845400539, 2, "ndtri(0.025)");
  expect_floats(std::vector<Scalar>(q.begin() + 2, q.end()), {0, -inf, inf, nan}, "ndtri specials");
  // erfcx(1e10) = (1 - 1/(2 10^20)) / (10^10 sqrt(pi)); erfcx(-30) overflows (2 e^900); erfcx(0) = 1.
  auto x = f64(PK_OP_ERFCX, {1e10, 0, -30, inf, -inf});
  near(x[0], 5.6418958354775629e-11, 2, "erfcx(1e10)");
  expect_floats(std::vector<Scalar>(x.begin() + 1, x.end()), {1, inf, 0, inf}, "erfcx specials");
  // Bessel functions (values from mpmath at 40 digits): the series below 20, the asymptotic expansions above,
  // exp applied in two halves near overflow (I0(713) = 6.7e307 although e^713 overflows).
  auto i0 = f64(PK_OP_BESSEL_I0, {1, 713, inf, -inf});
  near(i0[0], 1.2660658777520084, 4, "i0(1)");
  near(i0[1], 6.705128263670996e+307, 4, "i0(713)");
  expect_floats(std::vector<Scalar>(i0.begin() + 2, i0.end()), {inf, inf}, "i0(+-inf)");
  auto i1 = f64(PK_OP_BESSEL_I1, {-1, 30});
  near(i1[0], -0.565159103992485, 4, "i1(-1)");
  near(i1[1], 768532038938.957, 4, "i1(30)");
  auto i0e = f64(PK_OP_BESSEL_I0E, {100, -1, inf});
  near(i0e[0], 0.03994437929909668, 4, "i0e(100)");
  near(i0e[1], 0.46575960759364043, 4, "i0e(-1)");
  expect_floats({i0e[2]}, {0}, "i0e(inf)");
  auto i1e = f64(PK_OP_BESSEL_I1E, {30, -100});
  near(i1e[0], 0.07191633059864755, 4, "i1e(30)");
  near(i1e[1], -0.03974415302513025, 4, "i1e(-100)");
  auto j0 = f64(PK_OP_BESSEL_J0, {1, 30, 100, inf, nan});
  near(j0[0], 0.7651976865579666, 4, "j0(1)");
  near(j0[1], -0.08636798358104021, 4, "j0(30)");
  near(j0[2], 0.019985850304223122, 4, "j0(100)");
  expect_floats(std::vector<Scalar>(j0.begin() + 3, j0.end()), {0, nan}, "j0 specials");
  auto j1 = f64(PK_OP_BESSEL_J1, {-1, 100});
  near(j1[0], -0.4400505857449335, 4, "j1(-1)");
  near(j1[1], -0.07714535201411216, 4, "j1(100)");
  expect_floats(f64(PK_OP_SPHERICAL_BESSEL_J0, {0, inf, -inf}), {1, 0, 0}, "spherical_bessel_j0 specials");
  // Incomplete gamma (mpmath): P(1, 1) = 1 - 1/e, P(1/2, 2) = erf(sqrt 2) (series), Q(100, 120) (fraction),
  // P(100, 90), Q(0.001, 0.001) (Gautschi's small-a form); the edges of the domain.
  auto f64_2 = [&](uint32_t op, std::vector<double> a, std::vector<double> b) {
    const int64_t n = static_cast<int64_t>(a.size());
    return run(op, {In{PK_DTYPE_F64, {n}, floats(a)}, In{PK_DTYPE_F64, {n}, floats(b)}}, PK_DTYPE_F64, {n}, nullptr);
  };
  auto p = f64_2(PK_OP_IGAMMA, {1, 0.5, 100, 1, 0, -1, inf}, {1, 2, 90, 0, 1, 1, 2});
  near(p[0], 0.6321205588285577, 4, "igamma(1, 1)");
  near(p[1], 0.9544997361036416, 4, "igamma(0.5, 2)");
  near(p[2], 0.15822098918643016, 8, "igamma(100, 90)");
  expect_floats(std::vector<Scalar>(p.begin() + 3, p.end()), {0, 1, nan, 0}, "igamma edges");
  auto qc = f64_2(PK_OP_IGAMMAC, {100, 0.001, 2}, {120, 0.001, inf});
  near(qc[0], 0.027863739890520663, 8, "igammac(100, 120)");
  near(qc[1], 0.00631235329113971, 8, "igammac(0.001, 0.001)");
  expect_floats({qc[2]}, {0}, "igammac(2, inf)");
  // Hurwitz zeta: zeta(2, 1) = pi^2 / 6; zeta(3, -3.5) (terms of both signs cancel to 0.03); zeta(1.5, 10).
  auto z = f64_2(PK_OP_ZETA, {2, 3, 1.5, 1, 0.5, 2}, {1, -3.5, 10, 2, 2, -2});
  near(z[0], 1.6449340668482264, 4, "zeta(2, 1)");
  near(z[1], 0.030778410660513848, 8, "zeta(3, -3.5)");
  near(z[2], 0.6486616319415704, 4, "zeta(1.5, 10)");
  expect_floats(std::vector<Scalar>(z.begin() + 3, z.end()), {inf, nan, inf}, "zeta edges");
  // A far negative q: pi^2 - 1 / (m + 1/2), m = 93,500,000,000,001 (the kernel stepped one unit at a time from q to
  // 9 before: weeks); zeta(DBL_MAX, 1.91) = 0 once every term underflows (was NaN from inf * 0 in the tail);
  // zeta(2, DBL_MAX) = 1/q + 1/(2 q^2) + ... = 5.562684646268004e-309 (subnormal; mpmath), though every term
  // (q + k)^-2 underflows (was 0).
  const double dbl_max = std::numeric_limits<double>::max();
  auto far = f64_2(PK_OP_ZETA, {2, dbl_max, 2}, {-93500000000000.5, 1.91, dbl_max});
  near(far[0], 9.869604401089358 - 1 / 93500000000001.5, 8, "zeta(2, -93500000000000.5)");
  expect_floats({far[1]}, {0}, "zeta(DBL_MAX, 1.91)");
  EXPECT_NEAR(static_cast<double>(far[2].f), 5.562684646268004e-309, 2 * std::numeric_limits<double>::denorm_min())
      << "zeta(2, DBL_MAX)";
}

TEST_F(EmuOps, MatmulWrapsIntegersRescuesF64OverflowAndWalksAnyLayout) {
  // Integers wrap in their width: 100*2 + 100*1 = 300 -> 44 (i8); 200*2 + 100*1 = 500 -> 244 (u8).
  expect_ints(run(PK_OP_MATMUL, {In{PK_DTYPE_I8, {1, 2}, ints({100, 100})}, In{PK_DTYPE_I8, {2, 1}, ints({2, 1})}},
                  PK_DTYPE_I8, {1, 1}, nullptr),
              {44}, "matmul i8 wraps");
  expect_ints(run(PK_OP_MATMUL, {In{PK_DTYPE_U8, {1, 2}, ints({200, 100})}, In{PK_DTYPE_U8, {2, 1}, ints({2, 1})}},
                  PK_DTYPE_U8, {1, 1}, nullptr),
              {244}, "matmul u8 wraps");
  // f64 products beyond the range: 2^1200 - 2^1200 + 2^800 = 2^800 exactly (the first pass gives inf - inf);
  // 2^2000 - inf + 2^400 = -inf (not NaN); tiny products stay exact: 2^-1074 * 2^600 twice = 2^-473.
  const double inf = HUGE_VAL;
  const In a{PK_DTYPE_F64, {3, 3}, floats({0x1p600, -0x1p600, 0x1p400, 0x1p1000, -inf, 1, 0x1p-1074, 0x1p-1074, 0})};
  const In b{PK_DTYPE_F64, {3, 1}, floats({0x1p600, 0x1p600, 0x1p400})};
  expect_floats(run(PK_OP_MATMUL, {a, b}, PK_DTYPE_F64, {3, 1}, nullptr), {0x1p800, -inf, 0x1p-473},
                "matmul f64 overflow pass");
  // dot_general with a batch axis and a contraction over a's middle axis: out[p][i] = sum_k a[p][k][i] b[p][k],
  // a = 0..11 over [2, 3, 2], b = [[1, 2, 3], [4, 5, 6]].
  pk_attrs_dot_general g = PK_ATTRS_DOT_GENERAL_INIT;
  g.num_lhs_batch = g.num_rhs_batch = g.num_lhs_contract = g.num_rhs_contract = 1;
  g.lhs_batch[0] = g.rhs_batch[0] = 0;
  g.lhs_contract[0] = g.rhs_contract[0] = 1;
  expect_floats(run(PK_OP_DOT_GENERAL,
                    {In{PK_DTYPE_F32, {2, 3, 2}, floats({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})},
                     In{PK_DTYPE_F32, {2, 3}, floats({1, 2, 3, 4, 5, 6})}},
                    PK_DTYPE_F32, {2, 2}, &g),
                {16, 22, 124, 139}, "dot_general batch + contraction over a's axis 1");
}

TEST_F(EmuOps, SortTopkSearchsortedOrderNanLastAndKeepTies) {
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  const In x{PK_DTYPE_F32, {7}, floats({3, nan, -0.0, 1, 0.0, -inf, nan})};
  // Two outputs (values, i64 indices).
  auto run2 = [&](uint32_t op, int64_t n, const void *attrs, std::vector<Scalar> &idx) {
    std::vector<std::unique_ptr<Buf>> bufs;
    bufs.push_back(make(x.dt, x.shape));
    upload(*bufs.back(), x.dt, x.v);
    bufs.push_back(make(PK_DTYPE_F32, {n}));
    bufs.push_back(make(PK_DTYPE_I64, {n}));
    pk_tensor outs[2] = {bufs[1]->t, bufs[2]->t};
    EXPECT_EQ(pk_launch(stream_, op, &bufs[0]->t, 1, outs, 2, attrs), PK_OK) << last_error().message;
    idx = download(*bufs[2], PK_DTYPE_I64, static_cast<size_t>(n));
    return download(*bufs[1], PK_DTYPE_F32, static_cast<size_t>(n));
  };
  std::vector<Scalar> idx;
  pk_attrs_sort s = PK_ATTRS_SORT_INIT;
  expect_floats(run2(PK_OP_SORT, 7, &s, idx), {-inf, -0.0, 0.0, 1, 3, nan, nan}, "sort ascending");
  expect_ints(idx, {5, 2, 4, 3, 0, 1, 6}, "sort ascending indices (stable)");
  s.descending = 1;
  expect_floats(run2(PK_OP_SORT, 7, &s, idx), {nan, nan, 3, 1, -0.0, 0.0, -inf}, "sort descending");
  expect_ints(idx, {1, 6, 0, 3, 2, 4, 5}, "sort descending indices (stable)");
  pk_attrs_topk t = PK_ATTRS_TOPK_INIT;
  t.k = 3;
  expect_floats(run2(PK_OP_TOPK, 3, &t, idx), {nan, nan, 3}, "topk largest (NaN largest)");
  expect_ints(idx, {1, 6, 0}, "topk largest indices");
  t.largest = 0;
  expect_floats(run2(PK_OP_TOPK, 3, &t, idx), {-inf, -0.0, 0.0}, "topk smallest");
  expect_ints(idx, {5, 2, 4}, "topk smallest indices (lower index first on ties)");
  // Insertion points into [1, 2, 2, 3, NaN]: NaN sorts above everything, -0 equals +0.
  pk_attrs_searchsorted ss = PK_ATTRS_SEARCHSORTED_INIT;
  const In seq{PK_DTYPE_F64, {5}, floats({1, 2, 2, 3, nan})};
  const In v{PK_DTYPE_F64, {2, 3}, floats({2, 0, nan, 5, -0.0, 1})};
  expect_ints(run(PK_OP_SEARCHSORTED, {seq, v}, PK_DTYPE_I64, {2, 3}, &ss), {1, 0, 4, 4, 0, 0}, "searchsorted left");
  ss.right = 1;
  expect_ints(run(PK_OP_SEARCHSORTED, {seq, v}, PK_DTYPE_I64, {2, 3}, &ss), {3, 0, 5, 4, 0, 1}, "searchsorted right");
}

TEST_F(EmuOps, ScattersCombineDuplicatesInIndexOrderAndSkipOutOfRange) {
  // Along dim 1 of [2, 4]: row 0 hits position 1 twice (10 then 30) and 3 once (20); row 1 has 5 and -1 (out of
  // range: skipped) and 0 (60).
  const In idx{PK_DTYPE_I64, {2, 3}, ints({1, 3, 1, 5, -1, 0})};
  const In src{PK_DTYPE_F32, {2, 3}, floats({10, 20, 30, 40, 50, 60})};
  pk_attrs_scatter sc = PK_ATTRS_SCATTER_INIT;
  sc.dim = 1;
  expect_floats(run(PK_OP_SCATTER, {In{PK_DTYPE_F32, {2, 4}, floats({0, 0, 0, 0, 0, 0, 0, 0})}, idx, src}, PK_DTYPE_F32,
                    {2, 4}, &sc),
                {0, 30, 0, 20, 60, 0, 0, 0}, "scatter: the last write wins");
  pk_attrs_scatter_reduce sr = PK_ATTRS_SCATTER_REDUCE_INIT;
  sr.dim = 1;
  sr.reduce = PK_REDUCE_KIND_AMAX;
  sr.include_self = 0;
  expect_floats(
      run(PK_OP_SCATTER_REDUCE, {In{PK_DTYPE_F32, {2, 4}, floats({100, 100, 100, 100, 100, 100, 100, 100})}, idx, src},
          PK_DTYPE_F32, {2, 4}, &sr),
      {100, 30, 100, 20, 60, 100, 100, 100}, "scatter_reduce amax without self");
  sr.reduce = PK_REDUCE_KIND_SUM;
  sr.include_self = 1;
  expect_floats(run(PK_OP_SCATTER_REDUCE, {In{PK_DTYPE_F32, {2, 4}, floats({1, 1, 1, 1, 1, 1, 1, 1})}, idx, src},
                    PK_DTYPE_F32, {2, 4}, &sr),
                {1, 41, 1, 21, 61, 1, 1, 1}, "scatter_reduce sum with self");
  // index_put on [3, 2] with rows 2, 0, 2, 7 (7 is out of range): accumulate adds both rows 2, else the last wins.
  const In a{PK_DTYPE_F64, {3, 2}, floats({1, 1, 1, 1, 1, 1})};
  const In values{PK_DTYPE_F64, {4, 2}, floats({1, 2, 3, 4, 5, 6, 7, 8})};
  const In rows{PK_DTYPE_I32, {4}, ints({2, 0, 2, 7})};
  pk_attrs_index_put ip = PK_ATTRS_INDEX_PUT_INIT;
  expect_floats(run(PK_OP_INDEX_PUT, {a, values, rows}, PK_DTYPE_F64, {3, 2}, &ip), {3, 4, 1, 1, 5, 6}, "index_put");
  ip.accumulate = 1;
  expect_floats(run(PK_OP_INDEX_PUT, {a, values, rows}, PK_DTYPE_F64, {3, 2}, &ip), {4, 5, 1, 1, 7, 9},
                "index_put accumulate");
}

TEST_F(EmuOps, ConvolutionMasksPaddingAndHonoursStrideDilationGroups) {
  const double inf = HUGE_VAL;
  // Padding 1 on both sides: out[0] = (pad) * inf + 1 * 100 + 2 * 10 = 120 (a padded position is no term, so the
  // infinite weight does not make it NaN); out[1] = 1 * inf + ... = inf; out[2] = 2 * inf + 300 + (pad) = inf.
  pk_attrs_convolution c = PK_ATTRS_CONVOLUTION_INIT;
  c.num_padding_low = c.num_padding_high = 1;
  c.padding_low[0] = c.padding_high[0] = 1;
  expect_floats(
      run(PK_OP_CONVOLUTION,
          {In{PK_DTYPE_F32, {1, 1, 3}, floats({1, 2, 3})}, In{PK_DTYPE_F32, {1, 1, 3}, floats({inf, 100, 10})}},
          PK_DTYPE_F32, {1, 1, 3}, &c),
      {120, inf, inf}, "convolution padding");
  // Stride 2, dilation 3 over 0..6 with a [1, 1] kernel: x0 + x3, x2 + x5.
  pk_attrs_convolution s = PK_ATTRS_CONVOLUTION_INIT;
  s.num_stride = s.num_dilation = 1;
  s.stride[0] = 2;
  s.dilation[0] = 3;
  expect_floats(
      run(PK_OP_CONVOLUTION,
          {In{PK_DTYPE_F64, {1, 1, 7}, floats({0, 1, 2, 3, 4, 5, 6})}, In{PK_DTYPE_F64, {1, 1, 2}, floats({1, 1})}},
          PK_DTYPE_F64, {1, 1, 2}, &s),
      {3, 7}, "convolution stride and dilation");
  // Two groups of one channel each, 2-D 1x1: out channel g sees input channel g only.
  pk_attrs_convolution g = PK_ATTRS_CONVOLUTION_INIT;
  g.groups = 2;
  expect_floats(run(PK_OP_CONVOLUTION,
                    {In{PK_DTYPE_F32, {1, 2, 1, 1}, floats({5, 7})}, In{PK_DTYPE_F32, {2, 1, 1, 1}, floats({2, 3})}},
                    PK_DTYPE_F32, {1, 2, 1, 1}, &g),
                {10, 21}, "convolution groups");
}

TEST_F(EmuOps, PhiloxMatchesTheKnownAnswerVector) {
  // Philox4x32-10 with counter 0 and key 0 (Random123's known-answer test): 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
  pk_attrs_philox_randint r = PK_ATTRS_PHILOX_RANDINT_INIT;
  r.num_shape = 1;
  r.shape[0] = 4;
  r.dtype = PK_DTYPE_I64;
  r.high = int64_t{1} << 32;
  expect_ints(run(PK_OP_PHILOX_RANDINT, {}, PK_DTYPE_I64, {4}, &r), {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
              "philox_randint words");
  // Uniform in f64 is word * 2^-32 exactly.
  pk_attrs_philox_uniform u = PK_ATTRS_PHILOX_UNIFORM_INIT;
  u.num_shape = 1;
  u.shape[0] = 2;
  u.dtype = PK_DTYPE_F64;
  u.high = 1;
  expect_floats(run(PK_OP_PHILOX_UNIFORM, {}, PK_DTYPE_F64, {2}, &u), {0x6627e8d5 * 0x1p-32, 0xe169c58d * 0x1p-32},
                "philox_uniform f64");
}

TEST(CudaWithoutDriver, LoadsReportsZeroDevicesAndExplains) {
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  o.flags = PK_RUNTIME_NO_DISCOVERY;
  pk_runtime_t rt;
  ASSERT_EQ(pk_runtime_create(&o, &rt), PK_OK);
  pk_backend_t be;
  ASSERT_EQ(pk_runtime_load_plugin(rt, PK_PLUGIN_DIR "/libprimkit_backend_cuda.so", &be), PK_OK)
      << last_error().message;
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  ASSERT_EQ(pk_backend_get_info(be, &info), PK_OK);
  EXPECT_STREQ(info.name, "cuda");
  uint32_t count = 99;
  ASSERT_EQ(pk_backend_device_count(be, &count), PK_OK);
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    EXPECT_EQ(count, 0u);
    // The reason is the backend's own last-error record right after device_count (the ABI's contract for a
    // zero count): ask the plugin directly, as the runtime would.
    auto entry = reinterpret_cast<pk_backend_entry_fn>(
        dlsym(dlopen(PK_PLUGIN_DIR "/libprimkit_backend_cuda.so", RTLD_NOW | RTLD_LOCAL), PK_BACKEND_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr);
    pk_host_services host;
    PK_STRUCT_INIT(host);
    host.host_abi_version = PK_ABI_VERSION;
    uint32_t v;
    const pk_backend_api *api;
    char msg[128];
    ASSERT_EQ(entry(&host, &v, &api, msg, sizeof msg), PK_OK);
    pk_be_context *ctx;
    ASSERT_EQ(api->open(&host, &ctx), PK_OK);
    uint32_t n = 7;
    ASSERT_EQ(api->device_count(ctx, &n), PK_OK);
    EXPECT_EQ(n, 0u);
    pk_error_info e;
    e.struct_size = sizeof e;
    ASSERT_EQ(api->get_last_error(ctx, &e), PK_OK);
    EXPECT_NE(std::string(e.message).find("libcuda.so.1 not found: no NVIDIA driver"), std::string::npos) << e.message;
    api->close(ctx);
  } else {
    dlclose(driver);
    std::printf("libcuda.so.1 present: %u CUDA device(s)\n", count);
  }
  pk_runtime_destroy(rt);
}

}  // namespace
