// test_opencl_row_fusion.cpp — row programs on the OpenCL backend: softmax, log_softmax, layer_norm and rms_norm
// decomposed by the graph compiler are planned by the shared planner as one region and printed as ONE OpenCL
// kernel (cl_region_printer.cpp). Values are checked against the ops' definitions computed here in long double,
// for f32 and f64, rows of 1, 7, 1000 and 5000 elements, rows holding -inf, NaN or only -inf, and an input that
// is a transposed (strided) view, which runs the strided kernel and must give the dense kernel's bits.
#include "opencl_fixture.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace pk_opencl_test {
namespace {

enum class RowOp { softmax, log_softmax, layer_norm, rms_norm };

const char *name_of(RowOp op) {
  switch (op) {
    case RowOp::softmax:
      return "softmax";
    case RowOp::log_softmax:
      return "log_softmax";
    case RowOp::layer_norm:
      return "layer_norm";
    default:
      return "rms_norm";
  }
}

constexpr double kEps = 1e-5;  // layer_norm's and rms_norm's eps in these graphs

// The op over each row of x [R, C] in long double, from its definition (not from the decomposition's code).
std::vector<long double> reference(RowOp op, const std::vector<long double> &x, const std::vector<long double> &w,
                                   const std::vector<long double> &b, int64_t R, int64_t C) {
  std::vector<long double> out(x.size());
  for (int64_t r = 0; r < R; ++r) {
    const long double *xr = &x[r * C];
    long double *o = &out[r * C];
    if (op == RowOp::softmax || op == RowOp::log_softmax) {
      long double m = -INFINITY;
      bool nan = false;
      for (int64_t c = 0; c < C; ++c) {
        nan = nan || std::isnan(xr[c]);
        m = std::max(m, xr[c]);
      }
      if (nan) m = NAN;
      long double s = 0;
      for (int64_t c = 0; c < C; ++c) s += std::exp(xr[c] - m);
      for (int64_t c = 0; c < C; ++c) o[c] = op == RowOp::softmax ? std::exp(xr[c] - m) / s : (xr[c] - m) - std::log(s);
    } else {
      long double mean = 0, sq = 0;
      for (int64_t c = 0; c < C; ++c) mean += xr[c];
      mean /= C;
      for (int64_t c = 0; c < C; ++c) sq += op == RowOp::layer_norm ? (xr[c] - mean) * (xr[c] - mean) : xr[c] * xr[c];
      const long double rstd = 1 / std::sqrt(sq / C + kEps);
      for (int64_t c = 0; c < C; ++c)
        o[c] = op == RowOp::layer_norm ? (xr[c] - mean) * rstd * w[c] + b[c] : xr[c] * rstd * w[c];
    }
  }
  return out;
}

// The error each output element may have, in units of the dtype's epsilon times a scale: the op's contract bound
// (4 for softmax, 8 for the norms) times the magnitude the rounding errors of the decomposition scale with. Those
// of softmax and log_softmax grow with |x - max| (x - max rounds, exp amplifies its error by that much), those of
// the norms with the normalized magnitude (x - mean rounds at |x|, scaled by 1/std and the weight). `sum_eps` bounds
// the relative error of a row's sum in epsilons: f32 sums accumulate in double (their error vanishes in the f32
// result), f64 sums in double as the sum kernel adds them, so a sum of C positive terms is within (C - 1) / 2.
std::vector<long double> tolerance(RowOp op, const std::vector<long double> &x, const std::vector<long double> &ref,
                                   const std::vector<long double> &w, const std::vector<long double> &b, int64_t R,
                                   int64_t C, long double eps, long double tiny, long double sum_eps) {
  std::vector<long double> tol(x.size());
  for (int64_t r = 0; r < R; ++r) {
    long double m = -INFINITY, mean = 0, sq = 0;
    for (int64_t c = 0; c < C; ++c) {
      m = std::max(m, x[r * C + c]);
      mean += x[r * C + c] / C;
      sq += x[r * C + c] * x[r * C + c] / C;
    }
    for (int64_t c = 0; c < C; ++c) {
      const size_t i = static_cast<size_t>(r * C + c);
      const long double d = std::fabs(x[i] - m);
      const long double spread = op == RowOp::layer_norm ? sq - mean * mean : sq;  // var, or the mean square
      long double t = 0;
      switch (op) {
        case RowOp::softmax:
          t = std::isinf(d) ? 0 : (4 + d + sum_eps) * std::fabs(ref[i]);  // exp(-inf) is exactly 0
          break;
        case RowOp::log_softmax:
          t = 4 * (d + std::fabs(ref[i] - (x[i] - m)) + std::fabs(ref[i])) + sum_eps;
          break;
        default:
          t = (8 + sum_eps) *
              (std::fabs(ref[i]) + (std::fabs(x[i]) + std::fabs(mean)) / std::sqrt(spread + kEps) * std::fabs(w[c]) +
               std::fabs(b[c]));
          break;
      }
      // Rows with infinities: what is finite there (rms_norm's x * rsqrt(inf) = 0) is exact.
      tol[i] = (std::isfinite(t) ? t * eps : 0) + tiny;
    }
  }
  return tol;
}

class OpenCLRowFusion : public OpenCL {
 protected:
  template <class T>
  void check(RowOp op, int64_t C) {
    const bool f64 = sizeof(T) == 8;
    const pk_dtype dt = f64 ? kF64 : kF32;
    if (f64 && !supported(PK_OP_EXP, {kF64}, {kF64})) GTEST_SKIP() << "no fp64 on this device";
    const int64_t R = 6;
    const size_t n = static_cast<size_t>(R * C);
    const std::string what = std::string(name_of(op)) + (f64 ? " f64" : " f32") + " C=" + std::to_string(C);
    // Rows: 0 and 1 random, 2 with one -inf, 3 all -inf, 4 with a NaN, 5 random with a large offset.
    std::vector<T> x(n), w(static_cast<size_t>(C)), b(static_cast<size_t>(C));
    std::mt19937 gen(static_cast<uint32_t>(C) * 7 + static_cast<uint32_t>(op));
    std::uniform_real_distribution<double> u(-4.0, 4.0);
    for (T &v : x) v = static_cast<T>(u(gen));
    for (int64_t c = 0; c < C; ++c) {
      w[c] = static_cast<T>(u(gen) / 2);
      b[c] = static_cast<T>(u(gen) / 4);
      x[5 * C + c] = static_cast<T>(x[5 * C + c] + 100);
      x[3 * C + c] = -std::numeric_limits<T>::infinity();
    }
    x[2 * C + C / 2] = -std::numeric_limits<T>::infinity();
    x[4 * C + C / 3] = std::numeric_limits<T>::quiet_NaN();
    const bool norm = op == RowOp::layer_norm || op == RowOp::rms_norm;

    pk_graph_t g = nullptr;
    ASSERT_EQ(pk_graph_create(&g), PK_OK);
    const int64_t shape[2] = {R, C}, wshape[1] = {C};
    uint32_t in[3], y = 0;
    ASSERT_EQ(pk_graph_add_input(g, dt, 2, shape, &in[0]), PK_OK);
    uint32_t nin = 1;
    for (uint32_t extra = norm ? (op == RowOp::layer_norm ? 2 : 1) : 0; extra > 0; --extra) {
      ASSERT_EQ(pk_graph_add_input(g, dt, 1, wshape, &in[nin++]), PK_OK);
    }
    pk_attrs_softmax sm = PK_ATTRS_SOFTMAX_INIT;
    sm.dim = 1;
    pk_attrs_log_softmax lsm = PK_ATTRS_LOG_SOFTMAX_INIT;
    lsm.dim = 1;
    pk_attrs_layer_norm ln = PK_ATTRS_LAYER_NORM_INIT;
    ln.eps = kEps;
    pk_attrs_rms_norm rn = PK_ATTRS_RMS_NORM_INIT;
    rn.eps = kEps;
    const uint32_t ids[] = {PK_OP_SOFTMAX, PK_OP_LOG_SOFTMAX, PK_OP_LAYER_NORM, PK_OP_RMS_NORM};
    const void *attrs[] = {&sm, &lsm, &ln, &rn};
    const int k = static_cast<int>(op);
    ASSERT_EQ(pk_graph_add_node(g, ids[k], in, nin, attrs[k], &y, 1), PK_OK) << last_error().message;
    ASSERT_EQ(pk_graph_mark_output(g, y), PK_OK);
    pk_compile_options opts;
    PK_STRUCT_INIT(opts);
    pk_executable_t exe = nullptr;
    ASSERT_EQ(pk_graph_compile(g, dev_, &opts, &exe), PK_OK) << last_error().message;
    pk_graph_destroy(g);
    // The whole decomposition is one kernel.
    uint32_t fk = 0, fn = 0, sn = 0;
    ASSERT_EQ(pk_executable_stats(exe, &fk, &fn, &sn), PK_OK);
    EXPECT_EQ(fk, 1u) << what;
    EXPECT_GE(fn, 5u) << what;
    EXPECT_EQ(sn, 0u) << what;

    std::vector<pk_tensor> args = {device(x, dt, {R, C})};
    if (norm) args.push_back(device(w, dt, {C}));
    if (op == RowOp::layer_norm) args.push_back(device(b, dt, {C}));
    pk_tensor out = empty<T>(n, dt, {R, C});
    ASSERT_EQ(pk_executable_run(exe, stream_, args.data(), nin, &out, 1), PK_OK) << last_error().message;
    const std::vector<T> got = download<T>(out, n);

    std::vector<long double> xl(x.begin(), x.end()), wl(w.begin(), w.end()), bl(b.begin(), b.end());
    const std::vector<long double> ref = reference(op, xl, wl, bl, R, C);
    const long double eps = std::numeric_limits<T>::epsilon();
    const long double tiny = std::numeric_limits<T>::denorm_min() * 4;
    const long double sum_eps = f64 ? (C - 1) / 2.0L : 0;
    const std::vector<long double> tol = tolerance(op, xl, ref, wl, bl, R, C, eps, tiny, sum_eps);
    auto expect_ref = [&](const std::vector<T> &v, const std::string &how) {
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(ref[i]) || std::isinf(ref[i])) {
          ASSERT_EQ(std::isnan(v[i]), std::isnan(ref[i])) << how << " at " << i << ": " << v[i];
          if (std::isinf(ref[i])) {
            ASSERT_EQ(static_cast<long double>(v[i]), ref[i]) << how << " at " << i;
          }
          continue;
        }
        const long double err = std::fabs(static_cast<long double>(v[i]) - ref[i]);
        ASSERT_LE(err, tol[i]) << how << " at row " << i / C << " col " << i % C << ": got " << v[i] << ", want "
                               << static_cast<double>(ref[i]);
      }
    };
    expect_ref(got, what);
    // Rows 1 and 5 are finite: the check above saw real values there, not only NaN.
    EXPECT_FALSE(std::isnan(got[static_cast<size_t>(C)])) << what;

    // x as a transposed view (column-major storage): the strided kernel (scalar, where the dense one computes
    // through vectors, whose exp may differ from the scalar one by an ulp), against the same reference.
    std::vector<T> xt(n);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) xt[c * R + r] = x[r * C + c];
    args[0] = device(xt, dt, {R, C}, {1, R});
    pk_tensor out2 = empty<T>(n, dt, {R, C});
    ASSERT_EQ(pk_executable_run(exe, stream_, args.data(), nin, &out2, 1), PK_OK) << last_error().message;
    expect_ref(download<T>(out2, n), what + " strided");
    pk_executable_destroy(exe);
  }

  template <class T>
  void check_all(RowOp op) {
    for (int64_t C : {1, 7, 1000, 5000}) {
      check<T>(op, C);
      if (HasFatalFailure() || IsSkipped()) return;
    }
  }
};

TEST_F(OpenCLRowFusion, SoftmaxIsOneKernelAndMatchesLongDouble) {
  check_all<float>(RowOp::softmax);
  check_all<double>(RowOp::softmax);
}

TEST_F(OpenCLRowFusion, LogSoftmaxIsOneKernelAndMatchesLongDouble) {
  check_all<float>(RowOp::log_softmax);
  check_all<double>(RowOp::log_softmax);
}

TEST_F(OpenCLRowFusion, LayerNormIsOneKernelAndMatchesLongDouble) {
  check_all<float>(RowOp::layer_norm);
  check_all<double>(RowOp::layer_norm);
}

TEST_F(OpenCLRowFusion, RmsNormIsOneKernelAndMatchesLongDouble) {
  check_all<float>(RowOp::rms_norm);
  check_all<double>(RowOp::rms_norm);
}

// An elementwise chain closed by a reduction over the last axis (the planner's run, not a row program): one kernel,
// whose element output (the products) and row output (their sums) both leave it.
TEST_F(OpenCLRowFusion, ChainClosedBySumIsOneKernel) {
  const int64_t R = 5, C = 300;
  const size_t n = static_cast<size_t>(R * C);
  std::vector<float> x(n);
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (float &v : x) v = u(gen);
  pk_graph_t g = nullptr;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  const int64_t shape[2] = {R, C};
  uint32_t vx = 0, sq = 0, s = 0;
  ASSERT_EQ(pk_graph_add_input(g, kF32, 2, shape, &vx), PK_OK);
  const uint32_t in[2] = {vx, vx};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in, 2, nullptr, &sq, 1), PK_OK);
  pk_attrs_sum sum = PK_ATTRS_SUM_INIT;
  sum.num_dims = 1;
  sum.dims[0] = 1;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_SUM, &sq, 1, &sum, &s, 1), PK_OK) << last_error().message;
  ASSERT_EQ(pk_graph_mark_output(g, sq), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, s), PK_OK);
  pk_compile_options opts;
  PK_STRUCT_INIT(opts);
  pk_executable_t exe = nullptr;
  ASSERT_EQ(pk_graph_compile(g, dev_, &opts, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fk = 0, fn = 0, sn = 0;
  ASSERT_EQ(pk_executable_stats(exe, &fk, &fn, &sn), PK_OK);
  EXPECT_EQ(fk, 1u);
  EXPECT_EQ(fn, 2u);
  EXPECT_EQ(sn, 0u);
  pk_tensor tx = device(x, kF32, {R, C});
  pk_tensor outs[2] = {empty<float>(n, kF32, {R, C}), empty<float>(static_cast<size_t>(R), kF32, {R})};
  ASSERT_EQ(pk_executable_run(exe, stream_, &tx, 1, outs, 2), PK_OK) << last_error().message;
  const std::vector<float> got_sq = download<float>(outs[0], n), got_s = download<float>(outs[1], R);
  for (int64_t r = 0; r < R; ++r) {
    long double want = 0;  // the f32 products (each rounded, as mul stores them), summed exactly
    for (int64_t c = 0; c < C; ++c) {
      const float p = x[r * C + c] * x[r * C + c];
      ASSERT_EQ(got_sq[r * C + c], p) << r << "," << c;
      want += p;
    }
    // f32 sums accumulate in double: one rounding to f32 at the end.
    EXPECT_LE(std::fabs(got_s[r] - want), want * std::numeric_limits<float>::epsilon()) << r;
  }
  pk_executable_destroy(exe);
}

}  // namespace
}  // namespace pk_opencl_test
