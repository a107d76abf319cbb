// OpenCL backend through the public host API, with the CPU backend loaded in the same runtime (and process).
// Every expected value is computed here independently: double-precision loops, hand-derived bit patterns for
// the narrow float formats. Tests skip when the machine has no OpenCL platform.
#include <gtest/gtest.h>

#include <dirent.h>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "pow_huge_phase_cases.hpp"
#include "primkit/primkit.h"

namespace {

pk_error_info last_error() {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  return e;
}

const pk_dtype kF32 = PK_DTYPE_F32_DESC, kF64 = PK_DTYPE_F64_DESC, kBool = PK_DTYPE_BOOL_DESC,
               kBF16 = PK_DTYPE_BF16_DESC, kF16 = PK_DTYPE_F16_DESC, kE4M3 = PK_DTYPE_F8E4M3FN_DESC,
               kI32 = PK_DTYPE_I32_DESC;

// Kernels compile on first use; a test-local program cache keeps repeated runs fast (PRIMKIT_CACHE_DIR wins if
// the caller set it).
const std::string &cache_dir() {
  static const std::string dir = [] {
    if (const char *d = std::getenv("PRIMKIT_CACHE_DIR")) return std::string(d);
    std::string d = std::string(PK_TEST_CACHE_DIR);
    setenv("PRIMKIT_CACHE_DIR", d.c_str(), 1);
    return d;
  }();
  return dir;
}
const std::string &g_cache_dir_init = cache_dir();

float bits_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(static_cast<int64_t>(ia) - ib);
}

class OpenCL : public ::testing::Test {
 protected:
  void SetUp() override { open(); }
  void open() {
    (void)cache_dir();
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    ASSERT_EQ(pk_runtime_create(&o, &rt_), PK_OK);
    const std::string dir = PK_PLUGIN_DIR;
    ASSERT_EQ(pk_runtime_load_plugin(rt_, (dir + "/libprimkit_backend_cpu.so").c_str(), &cpu_), PK_OK)
        << last_error().message;
    ASSERT_EQ(pk_runtime_load_plugin(rt_, (dir + "/libprimkit_backend_opencl.so").c_str(), &ocl_), PK_OK)
        << last_error().message;
    uint32_t n = 0;
    ASSERT_EQ(pk_backend_device_count(ocl_, &n), PK_OK);
    if (n == 0) GTEST_SKIP() << "no OpenCL device on this machine";
    ASSERT_EQ(pk_backend_device(ocl_, 0, &dev_), PK_OK);
    ASSERT_EQ(pk_stream_create(dev_, &stream_), PK_OK) << last_error().message;
    ASSERT_EQ(pk_backend_device(cpu_, 0, &cpu_dev_), PK_OK);
    ASSERT_EQ(pk_stream_create(cpu_dev_, &cpu_stream_), PK_OK);
  }
  void close() {
    for (pk_buffer_t b : buffers_) pk_buffer_destroy(b);
    buffers_.clear();
    pk_stream_destroy(stream_);
    pk_stream_destroy(cpu_stream_);
    pk_runtime_destroy(rt_);
    stream_ = cpu_stream_ = nullptr;
    rt_ = nullptr;
  }
  void TearDown() override { close(); }

  // A device tensor holding `host` (uploaded on stream_; the caller keeps `host` alive until stream_ is
  // synchronized), viewed with shape/strides/byte_offset.
  template <class T>
  pk_tensor device(const std::vector<T> &host, pk_dtype dt, std::vector<int64_t> shape,
                   std::vector<int64_t> strides = {}, uint64_t byte_offset = 0, uint64_t min_bytes = 0) {
    pk_buffer_t b = nullptr;
    const uint64_t bytes = std::max<uint64_t>({1, min_bytes, host.size() * sizeof(T)});
    EXPECT_EQ(pk_buffer_create(dev_, bytes, &b), PK_OK) << last_error().message;
    buffers_.push_back(b);
    if (!host.empty()) {
      EXPECT_EQ(pk_copy_host_to_buffer(stream_, b, 0, host.data(), host.size() * sizeof(T)), PK_OK);
    }
    dims_.push_back(std::move(shape));
    const std::vector<int64_t> &sh = dims_.back();
    const int64_t *st = nullptr;
    if (!strides.empty()) {
      dims_.push_back(std::move(strides));
      st = dims_.back().data();
    }
    pk_tensor t;
    EXPECT_EQ(pk_buffer_tensor(b, dt, static_cast<int32_t>(sh.size()), sh.data(), st, byte_offset, &t), PK_OK)
        << last_error().message;
    return t;
  }
  // An output tensor: storage only. (Uploading a temporary here would break the ABI's rule that the host keeps
  // the source of an enqueued copy alive until the stream has passed it.)
  template <class T>
  pk_tensor empty(size_t count, pk_dtype dt, std::vector<int64_t> shape) {
    return device(std::vector<T>(), dt, std::move(shape), {}, 0, count * sizeof(T));
  }
  template <class T>
  std::vector<T> download(const pk_tensor &t, size_t count) {
    std::vector<T> out(count);
    pk_buffer_t b = nullptr;
    for (pk_buffer_t c : buffers_)
      if (pk_buffer_data(c) == t.data) b = c;
    EXPECT_NE(b, nullptr);
    EXPECT_EQ(pk_copy_buffer_to_host(stream_, out.data(), b, 0, count * sizeof(T)), PK_OK) << last_error().message;
    EXPECT_EQ(pk_stream_synchronize(stream_), PK_OK) << last_error().message;
    return out;
  }
  pk_status launch(uint32_t op, std::vector<pk_tensor> in, std::vector<pk_tensor> out, const void *attrs = nullptr) {
    return pk_launch(stream_, op, in.data(), static_cast<uint32_t>(in.size()), out.data(),
                     static_cast<uint32_t>(out.size()), attrs);
  }
  // The op ran on the OpenCL backend itself (no fallback).
  void expect_native(uint32_t op) {
    uint64_t n = 0;
    pk_runtime_fallback_count(rt_, op, &n, nullptr);
    EXPECT_EQ(n, 0u) << "op " << op << " fell back to the CPU backend";
  }
  bool supported(uint32_t op, std::vector<pk_dtype> in, std::vector<pk_dtype> out, std::string *reason = nullptr) {
    std::vector<pk_tensor> ti(in.size()), to(out.size());
    for (size_t i = 0; i < in.size(); ++i) {
      PK_STRUCT_INIT(ti[i]);
      ti[i].dtype = in[i];
    }
    for (size_t i = 0; i < out.size(); ++i) {
      PK_STRUCT_INIT(to[i]);
      to[i].dtype = out[i];
    }
    pk_op_query q;
    PK_STRUCT_INIT(q);
    q.op_id = op;
    q.num_inputs = static_cast<uint32_t>(ti.size());
    q.inputs = ti.data();
    q.num_outputs = static_cast<uint32_t>(to.size());
    q.outputs = to.data();
    pk_op_support s;
    PK_STRUCT_INIT(s);
    EXPECT_EQ(pk_device_query_op(dev_, &q, &s), PK_OK);
    if (reason) *reason = s.reason;
    return s.supported != 0;
  }

  // Runs `op` on the CPU backend over host copies (the same inputs), for cross-checks. Returns false when the CPU
  // backend lacks the kernel (its elementwise kernels land separately).
  bool run_cpu(uint32_t op, std::vector<std::vector<float>> &in, std::vector<float> &out, std::vector<int64_t> shape,
               const void *attrs = nullptr) {
    std::vector<pk_tensor> ti(in.size()), to(1);
    auto host = [&](pk_tensor &t, std::vector<float> &v) {
      PK_STRUCT_INIT(t);
      t.data = v.data();
      t.storage_bytes = v.size() * 4;
      t.device_type = PK_DEVICE_CPU;
      t.dtype = kF32;
      t.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
      t.ndim = static_cast<int32_t>(shape.size());
      t.shape = shape.data();
    };
    for (size_t i = 0; i < in.size(); ++i) host(ti[i], in[i]);
    host(to[0], out);
    pk_status st = pk_launch(cpu_stream_, op, ti.data(), static_cast<uint32_t>(ti.size()), to.data(), 1, attrs);
    if (st == PK_UNIMPLEMENTED) return false;
    EXPECT_EQ(st, PK_OK) << last_error().message;
    EXPECT_EQ(pk_stream_synchronize(cpu_stream_), PK_OK);
    return st == PK_OK;
  }

  pk_runtime_t rt_ = nullptr;
  pk_backend_t cpu_ = nullptr, ocl_ = nullptr;
  pk_device_t dev_ = nullptr, cpu_dev_ = nullptr;
  pk_stream_t stream_ = nullptr, cpu_stream_ = nullptr;
  std::vector<pk_buffer_t> buffers_;
  std::deque<std::vector<int64_t>> dims_;
};

std::vector<float> random_floats(size_t n, unsigned seed, float lo = -4.f, float hi = 4.f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto &x : v) x = d(g);
  return v;
}

TEST_F(OpenCL, DeviceAndCapabilities) {
  pk_device_props p;
  PK_STRUCT_INIT(p);
  ASSERT_EQ(pk_device_get_props(dev_, &p), PK_OK);
  EXPECT_EQ(p.device_type, PK_DEVICE_OPENCL);
  EXPECT_GT(std::strlen(p.name), 0u);
  EXPECT_TRUE(p.features & PK_DEVICE_FEATURE_ASYNC);
  EXPECT_TRUE(supported(PK_OP_ADD, {kF32, kF32}, {kF32}));
  EXPECT_TRUE(supported(PK_OP_MATMUL, {kBF16, kBF16}, {kBF16}));
  std::string why;
  // f16 is only offered with cl_khr_fp16 (PoCL's CPU device has none): the query says so, truthfully.
  if (!(p.dtype_mask & (1u << PK_DTYPE_F16))) {
    EXPECT_FALSE(supported(PK_OP_ADD, {kF16, kF16}, {kF16}, &why));
    EXPECT_NE(why.find("cl_khr_fp16"), std::string::npos) << why;
  }
  // Complex dtypes are generated (in double on the device), pow, the extremes and the FFTs included.
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  EXPECT_TRUE(supported(PK_OP_POLAR, {kF32, kF32}, {c64}));
  EXPECT_TRUE(supported(PK_OP_MUL, {c128, c128}, {c128}));
  EXPECT_TRUE(supported(PK_OP_POW, {c128, c128}, {c128}));
  EXPECT_TRUE(supported(PK_OP_MAXIMUM_VALUE, {}, {c64}));
  EXPECT_TRUE(supported(PK_OP_FFT_C2C, {c64}, {c64}));
  EXPECT_TRUE(supported(PK_OP_FFT_R2C, {kF64}, {c128}));
  EXPECT_TRUE(supported(PK_OP_FFT_C2R, {c128}, {kF64}));
  // An FFT of an integer dtype is no primitive of the table: declined with a reason.
  EXPECT_FALSE(supported(PK_OP_FFT_R2C, {kI32}, {c64}, &why));
  EXPECT_NE(why.find("fft_r2c"), std::string::npos) << why;
}

TEST_F(OpenCL, AddMulAgainstHostAndCpu) {
  const size_t n = 1000;  // not a multiple of the vector width: exercises the tail
  std::vector<float> a = random_floats(n, 1), b = random_floats(n, 2);
  pk_tensor ta = device(a, kF32, {10, 100}), tb = device(b, kF32, {10, 100});
  pk_tensor tsum = empty<float>(n, kF32, {10, 100}), tprod = empty<float>(n, kF32, {10, 100});
  ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {tsum}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_MUL, {ta, tb}, {tprod}), PK_OK) << last_error().message;
  std::vector<float> sum = download<float>(tsum, n), prod = download<float>(tprod, n);
  for (size_t i = 0; i < n; ++i) {
    // Correctly rounded: the double result rounded once to float.
    ASSERT_EQ(sum[i], static_cast<float>(static_cast<double>(a[i]) + b[i])) << i;
    ASSERT_EQ(prod[i], static_cast<float>(static_cast<double>(a[i]) * b[i])) << i;
  }
  expect_native(PK_OP_ADD);
  std::vector<std::vector<float>> in{a, b};
  std::vector<float> cpu(n);
  if (run_cpu(PK_OP_ADD, in, cpu, {10, 100})) {
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(cpu[i], sum[i]) << i;
  }
}

// Hurwitz zeta with a negative non-integer q (s an integer), against hand values: zeta(2, -2.5) = 4/25 + 4/9 + 4 +
// pi^2/2; zeta(3, -1.5) = -(8/27 + 8) + 7 zeta(3); for q = -(93,500,000,000,000 + 1/2), pi^2 - 1/(m + 1/2) with
// m = 93,500,000,000,001. The kernel used to step one unit at a time from q to 9 (weeks for the last one).
TEST_F(OpenCL, HurwitzZetaOfNegativeQIsBoundedAndRight) {
  const pk_dtype f64 = PK_DTYPE_F64_DESC;
  const double pi2 = 9.869604401089358, zeta3 = 1.2020569031595943, m = 93500000000001.0;
  const std::vector<double> s = {2, 3, 2}, q = {-2.5, -1.5, -93500000000000.5};
  const double want[3] = {0.16 + 4.0 / 9 + 4 + pi2 / 2, -(8.0 / 27 + 8) + 7 * zeta3, pi2 - 1 / (m + 0.5)};
  pk_tensor ts = device(s, f64, {3}), tq = device(q, f64, {3}), out = empty<double>(3, f64, {3});
  const pk_status st = launch(PK_OP_ZETA, {ts, tq}, {out});
  if (st == PK_ERROR_FALLBACK_FORBIDDEN || st == PK_UNIMPLEMENTED) GTEST_SKIP() << "no f64 on this OpenCL device";
  ASSERT_EQ(st, PK_OK) << last_error().message;
  const std::vector<double> y = download<double>(out, 3);
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(y[i], want[i], 4e-15 * std::fabs(want[i])) << "zeta(" << s[i] << ", " << q[i] << ")";
}

// Outputs of 16 MiB and more are stored past the cache when 32-byte aligned (pk_ew_vec_nt); one at a 4-byte offset
// takes the plain vector kernel. Both give the correctly rounded result in every element, the partial tail included.
TEST_F(OpenCL, LargeOutputsStoredPastTheCacheAreExact) {
  const size_t n = (size_t{16} << 20) / 4 + 37;
  const int64_t len = static_cast<int64_t>(n);
  std::vector<float> a = random_floats(n, 21), b = random_floats(n, 22);
  pk_tensor ta = device(a, kF32, {len}), tb = device(b, kF32, {len});
  pk_tensor sum = empty<float>(n, kF32, {len});
  pk_tensor prod = device(std::vector<float>(), kF32, {len}, {}, 4, (n + 1) * 4);
  ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {sum}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_MUL, {ta, tb}, {prod}), PK_OK) << last_error().message;
  std::vector<float> rs = download<float>(sum, n), rp = download<float>(prod, n + 1);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(rs[i], static_cast<float>(static_cast<double>(a[i]) + b[i])) << i;
    ASSERT_EQ(rp[i + 1], static_cast<float>(static_cast<double>(a[i]) * b[i])) << i;
  }
  // f64: 8 elements per vector, the same rule.
  const size_t m = (size_t{16} << 20) / 8 + 5;
  std::vector<double> x(m), y(m);
  std::mt19937_64 g(23);
  std::uniform_real_distribution<double> d(-1e3, 1e3);
  for (size_t i = 0; i < m; ++i) x[i] = d(g), y[i] = d(g);
  pk_tensor tx = device(x, kF64, {int64_t(m)}), ty = device(y, kF64, {int64_t(m)});
  pk_tensor diff = empty<double>(m, kF64, {int64_t(m)});
  ASSERT_EQ(launch(PK_OP_SUB, {tx, ty}, {diff}), PK_OK) << last_error().message;
  std::vector<double> rd = download<double>(diff, m);
  for (size_t i = 0; i < m; ++i) ASSERT_EQ(rd[i], x[i] - y[i]) << i;
  expect_native(PK_OP_ADD);
}

TEST_F(OpenCL, IntegerDivisionAndWrap) {
  std::vector<int32_t> a{7, -7, INT32_MIN, 5, INT32_MAX}, b{2, 2, -1, 0, 1};
  pk_tensor ta = device(a, kI32, {5}), tb = device(b, kI32, {5});
  pk_tensor q = empty<int32_t>(5, kI32, {5}), s = empty<int32_t>(5, kI32, {5});
  ASSERT_EQ(launch(PK_OP_DIV, {ta, tb}, {q}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {s}), PK_OK) << last_error().message;
  EXPECT_EQ(download<int32_t>(q, 5), (std::vector<int32_t>{3, -3, INT32_MIN, 0, INT32_MAX}));
  EXPECT_EQ(download<int32_t>(s, 5), (std::vector<int32_t>{9, -5, INT32_MAX, 5, INT32_MIN}));
}

TEST_F(OpenCL, ExpWithinUlpBound) {
  std::vector<float> a = random_floats(4099, 3, -80.f, 80.f);
  a[0] = 0.f;
  a[1] = -INFINITY;
  a[2] = INFINITY;
  a[3] = NAN;
  pk_tensor ta = device(a, kF32, {4099}), out = empty<float>(a.size(), kF32, {4099});
  ASSERT_EQ(launch(PK_OP_EXP, {ta}, {out}), PK_OK) << last_error().message;
  std::vector<float> r = download<float>(out, a.size());
  EXPECT_EQ(r[0], 1.f);
  EXPECT_EQ(r[1], 0.f);
  EXPECT_EQ(r[2], INFINITY);
  EXPECT_TRUE(std::isnan(r[3]));
  int64_t worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, ulp_distance(r[i], static_cast<float>(std::exp(double(a[i])))));
  EXPECT_LE(worst, 3) << "the op table's limit for exp is 3 ulp";
}

TEST_F(OpenCL, WhereSelects) {
  std::vector<uint8_t> p{1, 0, 1, 0, 0, 1, 1};
  std::vector<float> a{1, 2, 3, 4, 5, 6, 7}, b{-1, -2, -3, -4, -5, -6, -7};
  pk_tensor tp = device(p, kBool, {7}), ta = device(a, kF32, {7}), tb = device(b, kF32, {7});
  pk_tensor out = empty<float>(7, kF32, {7});
  ASSERT_EQ(launch(PK_OP_WHERE, {tp, ta, tb}, {out}), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(out, 7), (std::vector<float>{1, -2, 3, -4, -5, 6, 7}));
  expect_native(PK_OP_WHERE);
}

TEST_F(OpenCL, ConvertF32ToBf16RoundsToNearestEven) {
  // Hand-derived: bf16 keeps the top 16 bits of an f32; the dropped half decides, ties go to the even pattern.
  const std::vector<std::pair<uint32_t, uint16_t>> cases = {
      {0x3f800000u, 0x3f80},  // 1.0
      {0x3f808000u, 0x3f80},  // 1 + 2^-8: a tie, 0x3f80 is even -> stays
      {0x3f818000u, 0x3f82},  // 1 + 3 * 2^-8: a tie, rounds up to the even 0x3f82
      {0x3f808001u, 0x3f81},  // just above the tie -> up
      {0x3f807fffu, 0x3f80},  // just below the tie -> down
      {0xbf818000u, 0xbf82},  // negative tie
      {0x7f7fffffu, 0x7f80},  // FLT_MAX rounds past the largest bf16 -> +inf
      {0x7f800000u, 0x7f80},  // +inf
      {0xff800000u, 0xff80},  // -inf
      {0x80000000u, 0x8000},  // -0
      {0x00000001u, 0x0000},  // smallest subnormal -> +0
      {0x00018000u, 0x0002},  // subnormal tie -> even
      {0x7fc00000u, 0x7fc0},  // NaN stays NaN
  };
  std::vector<float> in;
  for (auto &c : cases) in.push_back(bits_f32(c.first));
  const int64_t n = static_cast<int64_t>(in.size());
  pk_tensor ti = device(in, kF32, {n}), out = empty<uint16_t>(in.size(), kBF16, {n});
  pk_attrs_convert_element_type at = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  at.dtype = PK_DTYPE_BF16;
  ASSERT_EQ(launch(PK_OP_CONVERT_ELEMENT_TYPE, {ti}, {out}, &at), PK_OK) << last_error().message;
  std::vector<uint16_t> r = download<uint16_t>(out, in.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    if ((cases[i].second & 0x7f80) == 0x7f80 && (cases[i].second & 0x7f)) {
      EXPECT_TRUE((r[i] & 0x7f80) == 0x7f80 && (r[i] & 0x7f)) << "case " << i << ": NaN expected";
    } else {
      EXPECT_EQ(r[i], cases[i].second) << "case " << i << " input 0x" << std::hex << cases[i].first;
    }
  }
  // And back: bf16 -> f32 is exact.
  pk_tensor back = empty<float>(in.size(), kF32, {n});
  at.dtype = PK_DTYPE_F32;
  ASSERT_EQ(launch(PK_OP_CONVERT_ELEMENT_TYPE, {out}, {back}, &at), PK_OK) << last_error().message;
  std::vector<float> rb = download<float>(back, in.size());
  EXPECT_EQ(f32_bits(rb[2]), 0x3f820000u);
  EXPECT_EQ(f32_bits(rb[9]), 0x80000000u);
}

TEST_F(OpenCL, ConvertToFp8E4m3Saturates) {
  // e4m3fn: bias 7, 3 mantissa bits, no inf, largest finite 448 = 0x7e, NaN = 0x7f.
  std::vector<float> in{1.0f, 448.0f, 464.0f, 1000.0f, INFINITY, -INFINITY, NAN, 0.0625f, 1.0625f, 1.1875f, -2.5f};
  std::vector<uint8_t> want{0x38, 0x7e, 0x7e, 0x7e, 0x7e, 0xfe, 0x7f, 0x18, 0x38, 0x3a, 0xc2};
  // 464 lies halfway between 448 and 480 (which e4m3fn lacks): saturates. 1.0625 = 1 + 2^-4: a tie -> even 1.0.
  // 1.1875 = 1 + 3 * 2^-4: a tie -> 1.25 (0x3a). 0.0625 = 2^-4 -> exponent 3 -> 0x18.
  const int64_t n = static_cast<int64_t>(in.size());
  pk_tensor ti = device(in, kF32, {n}), out = empty<uint8_t>(in.size(), kE4M3, {n});
  pk_attrs_convert_element_type at = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  at.dtype = PK_DTYPE_F8E4M3FN;
  ASSERT_EQ(launch(PK_OP_CONVERT_ELEMENT_TYPE, {ti}, {out}, &at), PK_OK) << last_error().message;
  std::vector<uint8_t> r = download<uint8_t>(out, in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i])) {
      EXPECT_EQ(r[i] & 0x7f, 0x7f) << i;
    } else {
      EXPECT_EQ(r[i], want[i]) << "input " << in[i];
    }
  }
}

TEST_F(OpenCL, SumOverAxesAndAll) {
  const int64_t A = 37, B = 129, C = 5;
  std::vector<float> x = random_floats(static_cast<size_t>(A * B * C), 4, -1.f, 1.f);
  pk_tensor tx = device(x, kF32, {A, B, C});
  // Over axis 1: 185 outputs, 129 elements each (the one-work-item-per-output kernel).
  pk_attrs_sum at = PK_ATTRS_SUM_INIT;
  at.num_dims = 1;
  at.dims[0] = 1;
  pk_tensor o1 = empty<float>(static_cast<size_t>(A * C), kF32, {A, C});
  ASSERT_EQ(launch(PK_OP_SUM, {tx}, {o1}, &at), PK_OK) << last_error().message;
  std::vector<float> r1 = download<float>(o1, static_cast<size_t>(A * C));
  for (int64_t i = 0; i < A; ++i) {
    for (int64_t k = 0; k < C; ++k) {
      double s = 0, sa = 0;
      for (int64_t j = 0; j < B; ++j) {
        s += x[(i * B + j) * C + k];
        sa += std::fabs(x[(i * B + j) * C + k]);
      }
      EXPECT_NEAR(r1[i * C + k], s, B * 1.2e-7 * sa + 1e-30) << i << "," << k;
    }
  }
  // Over everything of a larger tensor: the two-stage kernels.
  const size_t big = 1 << 20;
  std::vector<float> y = random_floats(big, 5, 0.f, 1.f);
  pk_tensor ty = device(y, kF32, {1024, 1024});
  at.num_dims = 2;
  at.dims[0] = 0;
  at.dims[1] = 1;
  pk_tensor o2 = empty<float>(1, kF32, {});
  ASSERT_EQ(launch(PK_OP_SUM, {ty}, {o2}, &at), PK_OK) << last_error().message;
  double s = 0;
  for (float v : y) s += v;
  EXPECT_NEAR(download<float>(o2, 1)[0], s, s * 1e-5);
  // amax with a NaN propagates it.
  y[12345] = NAN;
  pk_tensor tz = device(y, kF32, {1024, 1024});
  pk_attrs_amax am = PK_ATTRS_AMAX_INIT;
  am.num_dims = 1;
  am.dims[0] = 1;
  pk_tensor o3 = empty<float>(1024, kF32, {1024});
  ASSERT_EQ(launch(PK_OP_AMAX, {tz}, {o3}, &am), PK_OK) << last_error().message;
  std::vector<float> r3 = download<float>(o3, 1024);
  for (int64_t i = 0; i < 1024; ++i) {
    float m = -INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < 1024; ++j) {
      nan = nan || std::isnan(y[i * 1024 + j]);
      m = std::max(m, y[i * 1024 + j]);
    }
    if (nan) {
      EXPECT_TRUE(std::isnan(r3[i])) << i;
    } else {
      EXPECT_EQ(r3[i], m) << i;
    }
  }
  expect_native(PK_OP_SUM);
  expect_native(PK_OP_AMAX);
}

TEST_F(OpenCL, ArgmaxArgminFirstWinsAndNaN) {
  const std::vector<float> a{1, 3, 3, 2, 5, NAN, 7, NAN, -1, -4, -4, -2};
  pk_tensor ta = device(a, kF32, {3, 4});
  pk_attrs_argmax am = PK_ATTRS_ARGMAX_INIT;
  am.dim = 1;
  pk_tensor o1 = empty<int64_t>(3, pk_dtype PK_DTYPE_I64_DESC, {3});
  ASSERT_EQ(launch(PK_OP_ARGMAX, {ta}, {o1}, &am), PK_OK) << last_error().message;
  EXPECT_EQ(download<int64_t>(o1, 3), (std::vector<int64_t>{1, 1, 0}));  // tie: the first; NaN wins
  pk_attrs_argmin an = PK_ATTRS_ARGMIN_INIT;
  an.dim = 1;
  pk_tensor o2 = empty<int64_t>(3, pk_dtype PK_DTYPE_I64_DESC, {3});
  ASSERT_EQ(launch(PK_OP_ARGMIN, {ta}, {o2}, &an), PK_OK) << last_error().message;
  EXPECT_EQ(download<int64_t>(o2, 3), (std::vector<int64_t>{0, 1, 1}));
  am.dim = 0;
  pk_tensor o3 = empty<int64_t>(4, pk_dtype PK_DTYPE_I64_DESC, {4});
  ASSERT_EQ(launch(PK_OP_ARGMAX, {ta}, {o3}, &am), PK_OK) << last_error().message;
  EXPECT_EQ(download<int64_t>(o3, 4), (std::vector<int64_t>{1, 1, 1, 1}));
  expect_native(PK_OP_ARGMAX);
}

TEST_F(OpenCL, MatmulTileUnaligned) {
  const int64_t M = 67, K = 45, N = 33;
  std::vector<float> a = random_floats(static_cast<size_t>(M * K), 6), b = random_floats(static_cast<size_t>(K * N), 7);
  pk_tensor ta = device(a, kF32, {M, K}), tb = device(b, kF32, {K, N});
  pk_tensor tc = empty<float>(static_cast<size_t>(M * N), kF32, {M, N});
  ASSERT_EQ(launch(PK_OP_MATMUL, {ta, tb}, {tc}), PK_OK) << last_error().message;
  std::vector<float> c = download<float>(tc, static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double s = 0, sa = 0;
      for (int64_t k = 0; k < K; ++k) {
        s += double(a[i * K + k]) * b[k * N + j];
        sa += std::fabs(double(a[i * K + k]) * b[k * N + j]);
      }
      ASSERT_NEAR(c[i * N + j], s, K * 1.2e-7 * sa) << i << "," << j;
    }
  }
  expect_native(PK_OP_MATMUL);
}

TEST_F(OpenCL, BatchMatmulWithTransposedOperand) {
  // b is stored as [B, N, K] and viewed as [B, K, N] through strides.
  const int64_t Bt = 3, M = 5, K = 40, N = 37;
  std::vector<double> a(static_cast<size_t>(Bt * M * K)), bt(static_cast<size_t>(Bt * N * K));
  std::mt19937 g(8);
  std::uniform_real_distribution<double> d(-1, 1);
  for (auto &x : a) x = d(g);
  for (auto &x : bt) x = d(g);
  pk_tensor ta = device(a, kF64, {Bt, M, K}), tb = device(bt, kF64, {Bt, K, N}, {N * K, 1, K});
  pk_tensor tc = empty<double>(static_cast<size_t>(Bt * M * N), kF64, {Bt, M, N});
  ASSERT_EQ(launch(PK_OP_BATCH_MATMUL, {ta, tb}, {tc}), PK_OK) << last_error().message;
  std::vector<double> c = download<double>(tc, static_cast<size_t>(Bt * M * N));
  for (int64_t p = 0; p < Bt; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        long double s = 0;
        for (int64_t k = 0; k < K; ++k) s += (long double)a[(p * M + i) * K + k] * bt[(p * N + j) * K + k];
        ASSERT_NEAR(c[(p * M + i) * N + j], static_cast<double>(s), 1e-13) << p << "," << i << "," << j;
      }
}

TEST_F(OpenCL, StridedOffsetAndBroadcastInputs) {
  // x: a 4x6 buffer viewed transposed (6x4); y: an offset view; z: a row broadcast by a zero stride.
  std::vector<float> x(24), y(30), z(4);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>(i);
  for (int i = 0; i < 30; ++i) y[i] = 100.f + i;
  for (int i = 0; i < 4; ++i) z[i] = 1000.f * (i + 1);
  pk_tensor tx = device(x, kF32, {6, 4}, {1, 6});
  pk_tensor ty = device(y, kF32, {6, 4}, {}, 6 * sizeof(float));
  pk_tensor tz = device(z, kF32, {6, 4}, {0, 1});
  pk_tensor t1 = empty<float>(24, kF32, {6, 4}), t2 = empty<float>(24, kF32, {6, 4});
  ASSERT_EQ(launch(PK_OP_ADD, {tx, ty}, {t1}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_ADD, {t1, tz}, {t2}), PK_OK) << last_error().message;
  std::vector<float> r = download<float>(t2, 24);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(r[i * 4 + j], x[j * 6 + i] + y[6 + i * 4 + j] + z[j]) << i << "," << j;
  expect_native(PK_OP_ADD);
}

TEST_F(OpenCL, StreamsOrderedByEvents) {
  pk_stream_t s2 = nullptr;
  ASSERT_EQ(pk_stream_create(dev_, &s2), PK_OK);
  pk_event_t ev = nullptr;
  ASSERT_EQ(pk_event_create(dev_, &ev), PK_OK);
  const size_t n = 1 << 20;
  std::vector<float> a(n, 1.5f);
  pk_tensor ta = device(a, kF32, {static_cast<int64_t>(n)});
  pk_tensor tb = empty<float>(n, kF32, {static_cast<int64_t>(n)}),
            tc = empty<float>(n, kF32, {static_cast<int64_t>(n)});
  ASSERT_EQ(pk_stream_synchronize(stream_), PK_OK);
  // Stream 1: b = a + a; stream 2 waits for it, then c = b * b. Only stream 2 is synchronized.
  ASSERT_EQ(launch(PK_OP_ADD, {ta, ta}, {tb}), PK_OK);
  ASSERT_EQ(pk_event_record(ev, stream_), PK_OK) << last_error().message;
  ASSERT_EQ(pk_stream_wait_event(s2, ev), PK_OK) << last_error().message;
  std::vector<pk_tensor> in{tb, tb}, out{tc};
  ASSERT_EQ(pk_launch(s2, PK_OP_MUL, in.data(), 2, out.data(), 1, nullptr), PK_OK) << last_error().message;
  std::vector<float> r(n);
  pk_buffer_t bc = nullptr;
  for (pk_buffer_t c : buffers_)
    if (pk_buffer_data(c) == tc.data) bc = c;
  ASSERT_EQ(pk_copy_buffer_to_host(s2, r.data(), bc, 0, n * 4), PK_OK);
  ASSERT_EQ(pk_stream_synchronize(s2), PK_OK) << last_error().message;
  EXPECT_EQ(pk_event_query(ev), PK_OK);
  EXPECT_EQ(pk_event_synchronize(ev), PK_OK);
  for (size_t i = 0; i < n; i += 4097) ASSERT_EQ(r[i], 9.0f) << i;
  pk_event_destroy(ev);
  pk_stream_destroy(s2);
}

TEST_F(OpenCL, TooLargeAllocationFailsClearly) {
  pk_device_props p;
  PK_STRUCT_INIT(p);
  ASSERT_EQ(pk_device_get_props(dev_, &p), PK_OK);
  ASSERT_GT(p.max_allocation_bytes, 0u);
  pk_buffer_t b = nullptr;
  EXPECT_EQ(pk_buffer_create(dev_, p.max_allocation_bytes + 1, &b), PK_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(b, nullptr);
  const std::string msg = last_error().message;
  EXPECT_NE(msg.find(std::to_string(p.max_allocation_bytes + 1)), std::string::npos) << msg;
  // The stream is still usable.
  std::vector<float> a{1, 2};
  pk_tensor ta = device(a, kF32, {2}), tb = empty<float>(2, kF32, {2});
  ASSERT_EQ(launch(PK_OP_NEG, {ta}, {tb}), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(tb, 2), (std::vector<float>{-1, -2}));
}

TEST_F(OpenCL, UnsupportedOpFallsBackOrSaysSo) {
  pk_device_props p;
  PK_STRUCT_INIT(p);
  ASSERT_EQ(pk_device_get_props(dev_, &p), PK_OK);
  if (p.dtype_mask & (1u << PK_DTYPE_F16)) GTEST_SKIP() << "the device computes in f16";
  // f16 has no OpenCL kernel here: the runtime either runs it on the CPU backend or reports that neither can.
  std::vector<uint16_t> a{0x3c00, 0x4000}, b{0x4000, 0x4000};  // 1 + 2 = 3 (0x4200), 2 + 2 = 4 (0x4400)
  pk_tensor ta = device(a, kF16, {2}), tb = device(b, kF16, {2}), out = empty<uint16_t>(2, kF16, {2});
  pk_status st = launch(PK_OP_ADD, {ta, tb}, {out});
  if (st == PK_OK) {
    uint64_t n = 0;
    pk_runtime_fallback_count(rt_, PK_OP_ADD, &n, nullptr);
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(download<uint16_t>(out, 2), (std::vector<uint16_t>{0x4200, 0x4400}));
  } else {
    EXPECT_EQ(st, PK_UNIMPLEMENTED);
    EXPECT_NE(std::string(last_error().message).find("add"), std::string::npos);
  }
}

// Complex values are (real, imaginary) pairs of f32 (c64) or f64 (c128). Every expected value below is worked
// out by hand.
TEST_F(OpenCL, ComplexArithmeticKnownValues) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  // (1+2i)(3+4i) = 3 + 4i + 6i - 8 = -5+10i; (-5+10i)/(3+4i) = (-5+10i)(3-4i)/25 = (25+50i)/25 = 1+2i;
  // (inf + NaN i)(1+0i) is an infinity (C11 Annex G); 1/(2i) = -0.5i.
  const double inf = INFINITY, nan = NAN;
  std::vector<double> a{1, 2, -5, 10, inf, nan, 1, 0}, b{3, 4, 3, 4, 1, 0, 0, 2};
  std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
  for (int pass = 0; pass < 2; ++pass) {
    const bool wide = pass == 1;
    const pk_dtype dt = wide ? c128 : c64;
    pk_tensor ta = wide ? device(a, dt, {4}) : device(af, dt, {4});
    pk_tensor tb = wide ? device(b, dt, {4}) : device(bf, dt, {4});
    auto out = [&]() { return wide ? empty<double>(8, dt, {4}) : empty<float>(8, dt, {4}); };
    auto get = [&](const pk_tensor &t, size_t n) {
      if (wide) return download<double>(t, n);
      std::vector<float> f = download<float>(t, n);
      return std::vector<double>(f.begin(), f.end());
    };
    pk_tensor prod = out(), quot = out(), sum = out(), conj = out();
    ASSERT_EQ(launch(PK_OP_MUL, {ta, tb}, {prod}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_DIV, {ta, tb}, {quot}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {sum}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_CONJ_PHYSICAL, {ta}, {conj}), PK_OK) << last_error().message;
    std::vector<double> p = get(prod, 8), q = get(quot, 8), s = get(sum, 8), c = get(conj, 8);
    EXPECT_EQ(p[0], -5.0);
    EXPECT_EQ(p[1], 10.0);
    EXPECT_EQ(p[2], -5.0 * 3 - 10.0 * 4);  // (-5+10i)(3+4i) = -55 + 10i
    EXPECT_EQ(p[3], -5.0 * 4 + 10.0 * 3);
    EXPECT_TRUE(std::isinf(p[4]) || std::isinf(p[5])) << p[4] << " " << p[5];
    EXPECT_EQ(q[2], 1.0);
    EXPECT_EQ(q[3], 2.0);
    EXPECT_EQ(q[6], 0.0);  // 1 / (2i) = 0 - 0.5i
    EXPECT_EQ(q[7], -0.5);
    EXPECT_EQ(s[0], 4.0);
    EXPECT_EQ(s[1], 6.0);
    EXPECT_EQ(c[0], 1.0);
    EXPECT_EQ(c[1], -2.0);
    // |3+4i| = 5, |5+12i| = 13 (the modulus is a real tensor); reciprocal(2i) = -0.5i.
    std::vector<double> m{3, 4, -5, 12, 0, 2};
    std::vector<float> mf(m.begin(), m.end());
    pk_tensor tm = wide ? device(m, dt, {3}) : device(mf, dt, {3});
    pk_tensor ab = wide ? empty<double>(3, kF64, {3}) : empty<float>(3, kF32, {3});
    pk_tensor rc = wide ? empty<double>(6, dt, {3}) : empty<float>(6, dt, {3});
    ASSERT_EQ(launch(PK_OP_ABS, {tm}, {ab}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_RECIPROCAL, {tm}, {rc}), PK_OK) << last_error().message;
    std::vector<double> r = get(ab, 3), inv = get(rc, 6);
    EXPECT_EQ(r[0], 5.0);
    EXPECT_EQ(r[1], 13.0);
    EXPECT_EQ(r[2], 2.0);
    EXPECT_EQ(inv[4], 0.0);
    EXPECT_EQ(inv[5], -0.5);
    // eq compares both parts; isnan sees either part.
    pk_tensor eq = empty<uint8_t>(4, kBool, {4}), isn = empty<uint8_t>(4, kBool, {4});
    ASSERT_EQ(launch(PK_OP_EQ, {ta, ta}, {eq}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_ISNAN, {ta}, {isn}), PK_OK) << last_error().message;
    EXPECT_EQ(download<uint8_t>(eq, 4), (std::vector<uint8_t>{1, 1, 0, 1}));  // inf + NaN i != itself
    EXPECT_EQ(download<uint8_t>(isn, 4), (std::vector<uint8_t>{0, 0, 1, 0}));
  }
  expect_native(PK_OP_MUL);
  expect_native(PK_OP_DIV);
  expect_native(PK_OP_ABS);
}

TEST_F(OpenCL, ComplexReductionsScansAndMatmul) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  // sum [1+1i, 2-3i, 0.5+0.25i] = 3.5-1.75i; prod [1+2i, 3+4i] = -5+10i; cumsum [1+1i, 2-3i] = [1+1i, 3-2i].
  std::vector<float> x{1, 1, 2, -3, 0.5f, 0.25f};
  pk_tensor tx = device(x, c64, {3});
  pk_attrs_sum as = PK_ATTRS_SUM_INIT;
  as.num_dims = 1;
  pk_tensor s = empty<float>(2, c64, {});
  ASSERT_EQ(launch(PK_OP_SUM, {tx}, {s}, &as), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(s, 2), (std::vector<float>{3.5f, -1.75f}));
  std::vector<double> y{1, 2, 3, 4};
  pk_tensor ty = device(y, c128, {2});
  pk_attrs_prod ap = PK_ATTRS_PROD_INIT;
  ap.num_dims = 1;
  pk_tensor pr = empty<double>(2, c128, {});
  ASSERT_EQ(launch(PK_OP_PROD, {ty}, {pr}, &ap), PK_OK) << last_error().message;
  EXPECT_EQ(download<double>(pr, 2), (std::vector<double>{-5, 10}));
  pk_attrs_cumsum ac = PK_ATTRS_CUMSUM_INIT;
  pk_tensor cs = empty<float>(6, c64, {3});
  ASSERT_EQ(launch(PK_OP_CUMSUM, {tx}, {cs}, &ac), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(cs, 6), (std::vector<float>{1, 1, 3, -2, 3.5f, -1.75f}));
  // any / all: a complex value is true when either part is nonzero (0+1i is true).
  std::vector<float> z{0, 0, 0, 1};
  pk_tensor tz = device(z, c64, {2});
  pk_attrs_any aa = PK_ATTRS_ANY_INIT;
  aa.num_dims = 1;
  pk_attrs_all al = PK_ATTRS_ALL_INIT;
  al.num_dims = 1;
  pk_tensor an = empty<uint8_t>(1, kBool, {}), ll = empty<uint8_t>(1, kBool, {});
  ASSERT_EQ(launch(PK_OP_ANY, {tz}, {an}, &aa), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_ALL, {tz}, {ll}, &al), PK_OK) << last_error().message;
  EXPECT_EQ(download<uint8_t>(an, 1)[0], 1);
  EXPECT_EQ(download<uint8_t>(ll, 1)[0], 0);
  // [[1+i, 2]] x [[i], [1-i]] = (1+i)i + 2(1-i) = (-1+i) + (2-2i) = 1-i.
  std::vector<double> ma{1, 1, 2, 0}, mb{0, 1, 1, -1};
  pk_tensor tma = device(ma, c128, {1, 2}), tmb = device(mb, c128, {2, 1}), mc = empty<double>(2, c128, {1, 1});
  ASSERT_EQ(launch(PK_OP_MATMUL, {tma, tmb}, {mc}), PK_OK) << last_error().message;
  EXPECT_EQ(download<double>(mc, 2), (std::vector<double>{1, -1}));
  expect_native(PK_OP_SUM);
  expect_native(PK_OP_PROD);
  expect_native(PK_OP_MATMUL);
}

TEST_F(OpenCL, ComplexCreationConversionAndFunctions) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  // fill writes value + 0i; convert c64 -> f32 drops the imaginary part, f32 -> c128 adds +0i.
  pk_tensor like = empty<double>(6, c128, {3}), f = empty<double>(6, c128, {3});
  pk_attrs_fill af = PK_ATTRS_FILL_INIT;
  af.value = 2.5;
  ASSERT_EQ(launch(PK_OP_FILL, {like}, {f}, &af), PK_OK) << last_error().message;
  EXPECT_EQ(download<double>(f, 6), (std::vector<double>{2.5, 0, 2.5, 0, 2.5, 0}));
  std::vector<float> x{1.5f, -2, -3, 4};
  pk_tensor tx = device(x, c64, {2}), re = empty<float>(2, kF32, {2});
  pk_attrs_convert_element_type ac = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  ac.dtype = PK_DTYPE_F32;
  ASSERT_EQ(launch(PK_OP_CONVERT_ELEMENT_TYPE, {tx}, {re}, &ac), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(re, 2), (std::vector<float>{1.5f, -3}));
  std::vector<float> r{2, 7}, im{-1, 0.25f};
  pk_tensor tr = device(r, kF32, {2}), ti = device(im, kF32, {2}), cx = empty<float>(4, c64, {2});
  ASSERT_EQ(launch(PK_OP_COMPLEX, {tr, ti}, {cx}), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(cx, 4), (std::vector<float>{2, -1, 7, 0.25f}));
  // sqrt(3+4i) = 2+i and sqrt(-4+0i) = 2i exactly; log(-1+0i) = pi i; exp(0+0i) = 1.
  std::vector<double> z{3, 4, -4, 0, -1, 0, 0, 0};
  pk_tensor tz = device(z, c128, {4}), sq = empty<double>(8, c128, {4}), lg = empty<double>(8, c128, {4}),
            ex = empty<double>(8, c128, {4});
  ASSERT_EQ(launch(PK_OP_SQRT, {tz}, {sq}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_LOG, {tz}, {lg}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_EXP, {tz}, {ex}), PK_OK) << last_error().message;
  const std::vector<double> s = download<double>(sq, 8), l = download<double>(lg, 8), e = download<double>(ex, 8);
  EXPECT_EQ(s[0], 2.0);
  EXPECT_EQ(s[1], 1.0);
  EXPECT_EQ(s[2], 0.0);
  EXPECT_EQ(s[3], 2.0);
  EXPECT_EQ(l[4], 0.0);
  EXPECT_NEAR(l[5], 3.14159265358979323846, 4e-16);
  EXPECT_EQ(l[6], -INFINITY);  // log 0 = -inf
  EXPECT_EQ(e[6], 1.0);
  EXPECT_EQ(e[7], 0.0);
  // log|3+4i| = log 5.
  EXPECT_NEAR(l[0], std::log(5.0), 2e-16);
  expect_native(PK_OP_SQRT);
  expect_native(PK_OP_COMPLEX);
}

// Builds x -> mul(x, y) -> add(., x) -> exp -> sub(., y) and runs it fused and unfused on the OpenCL device.
TEST_F(OpenCL, FusedChainMatchesUnfused) {
  const int64_t R = 33, C = 129;
  const size_t n = static_cast<size_t>(R * C);
  std::vector<float> x = random_floats(n, 9, -2.f, 2.f), y = random_floats(n, 10, -2.f, 2.f);
  pk_graph_t g = nullptr;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  const int64_t shape[2] = {R, C};
  uint32_t vx, vy, v1, v2, v3, v4;
  ASSERT_EQ(pk_graph_add_input(g, kF32, 2, shape, &vx), PK_OK);
  ASSERT_EQ(pk_graph_add_input(g, kF32, 2, shape, &vy), PK_OK);
  uint32_t in[2] = {vx, vy};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in, 2, nullptr, &v1, 1), PK_OK) << last_error().message;
  in[0] = v1;
  in[1] = vx;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_ADD, in, 2, nullptr, &v2, 1), PK_OK);
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_EXP, &v2, 1, nullptr, &v3, 1), PK_OK);
  in[0] = v3;
  in[1] = vy;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_SUB, in, 2, nullptr, &v4, 1), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, v2), PK_OK);  // an intermediate that leaves the region too
  ASSERT_EQ(pk_graph_mark_output(g, v4), PK_OK);
  pk_compile_options fused_opts, plain_opts;
  PK_STRUCT_INIT(fused_opts);
  PK_STRUCT_INIT(plain_opts);
  plain_opts.disable_fusion = 1;
  pk_executable_t fused = nullptr, plain = nullptr;
  ASSERT_EQ(pk_graph_compile(g, dev_, &fused_opts, &fused), PK_OK) << last_error().message;
  ASSERT_EQ(pk_graph_compile(g, dev_, &plain_opts, &plain), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fk = 0, fn = 0, sn = 0;
  ASSERT_EQ(pk_executable_stats(fused, &fk, &fn, &sn), PK_OK);
  EXPECT_EQ(fk, 1u);
  EXPECT_EQ(fn, 4u);
  EXPECT_EQ(sn, 0u);

  pk_tensor tx = device(x, kF32, {R, C}), ty = device(y, kF32, {R, C});
  pk_tensor f2 = empty<float>(n, kF32, {R, C}), f4 = empty<float>(n, kF32, {R, C});
  pk_tensor p2 = empty<float>(n, kF32, {R, C}), p4 = empty<float>(n, kF32, {R, C});
  pk_tensor ins[2] = {tx, ty}, fo[2] = {f2, f4}, po[2] = {p2, p4};
  ASSERT_EQ(pk_executable_run(fused, stream_, ins, 2, fo, 2), PK_OK) << last_error().message;
  ASSERT_EQ(pk_executable_run(plain, stream_, ins, 2, po, 2), PK_OK) << last_error().message;
  std::vector<float> rf2 = download<float>(f2, n), rf4 = download<float>(f4, n);
  std::vector<float> rp2 = download<float>(p2, n), rp4 = download<float>(p4, n);
  for (size_t i = 0; i < n; ++i) {
    // Same ops in the same precision and kernel flavor (dense, vectorized): fused and unfused agree bit for bit.
    ASSERT_EQ(f32_bits(rf2[i]), f32_bits(rp2[i])) << i;
    ASSERT_EQ(f32_bits(rf4[i]), f32_bits(rp4[i])) << i;
    const float v2h = x[i] * y[i] + x[i];
    ASSERT_EQ(rf2[i], v2h) << i;
    const double ref = std::exp(double(v2h)) - y[i];
    ASSERT_NEAR(rf4[i], ref, 4e-7 * std::fabs(std::exp(double(v2h))) + 1e-6) << i;
  }
  // The fused kernel takes strided arguments too: a transposed view of x^T.
  std::vector<float> xt(n);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) xt[j * R + i] = x[i * C + j];
  pk_tensor txt = device(xt, kF32, {R, C}, {1, R});
  pk_tensor ins2[2] = {txt, ty};
  ASSERT_EQ(pk_executable_run(fused, stream_, ins2, 2, fo, 2), PK_OK) << last_error().message;
  std::vector<float> rs2 = download<float>(f2, n), rs4 = download<float>(f4, n);
  for (size_t i = 0; i < n; ++i) {
    // mul and add round on their own in every kernel flavor (no contraction into fma): bit-exact. exp may come
    // from a vector or a scalar implementation in different flavors: within its ulp bound.
    ASSERT_EQ(f32_bits(rs2[i]), f32_bits(rp2[i])) << i;
    ASSERT_NEAR(rs4[i], rp4[i], 4e-7 * std::fabs(std::exp(double(rp2[i])))) << i;
  }
  pk_executable_destroy(fused);
  pk_executable_destroy(plain);
}

TEST_F(OpenCL, CorruptCacheEntriesAreRebuilt) {
  // Run once so the cache holds entries, damage every entry, then a fresh runtime must still work.
  std::vector<float> a{1, 2, 3}, b{4, 5, 6};
  {
    pk_tensor ta = device(a, kF32, {3}), tb = device(b, kF32, {3}), out = empty<float>(3, kF32, {3});
    ASSERT_EQ(launch(PK_OP_SUB, {ta, tb}, {out}), PK_OK) << last_error().message;
    EXPECT_EQ(download<float>(out, 3), (std::vector<float>{-3, -3, -3}));
  }
  const std::string dir = cache_dir() + "/opencl";
  size_t damaged = 0;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() < 4 || name.substr(name.size() - 4) != ".bin") continue;
      if (FILE *f = std::fopen((dir + "/" + name).c_str(), "r+b")) {
        std::fseek(f, 40, SEEK_SET);
        const char junk[16] = "not a binary!!!";
        std::fwrite(junk, 1, sizeof junk, f);
        std::fclose(f);
        ++damaged;
      }
    }
    closedir(d);
  }
  EXPECT_GT(damaged, 0u) << "no cache entries in " << dir;
  close();
  open();
  pk_tensor ta = device(a, kF32, {3}), tb = device(b, kF32, {3}), out = empty<float>(3, kF32, {3});
  ASSERT_EQ(launch(PK_OP_SUB, {ta, tb}, {out}), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(out, 3), (std::vector<float>{-3, -3, -3}));
}

TEST_F(OpenCL, CreationOps) {
  pk_attrs_iota io = PK_ATTRS_IOTA_INIT;
  io.length = 5;
  io.start = 2;
  io.step = 3;
  io.dtype = PK_DTYPE_I32;
  pk_tensor t = empty<int32_t>(5, kI32, {5});
  ASSERT_EQ(launch(PK_OP_IOTA, {}, {t}, &io), PK_OK) << last_error().message;
  EXPECT_EQ(download<int32_t>(t, 5), (std::vector<int32_t>{2, 5, 8, 11, 14}));
  pk_attrs_full fu = PK_ATTRS_FULL_INIT;
  fu.num_shape = 2;
  fu.shape[0] = 2;
  fu.shape[1] = 3;
  fu.value = 1.00390625;  // 1 + 2^-8: a bf16 tie -> 1.0
  fu.dtype = PK_DTYPE_BF16;
  pk_tensor f = empty<uint16_t>(6, kBF16, {2, 3});
  ASSERT_EQ(launch(PK_OP_FULL, {}, {f}, &fu), PK_OK) << last_error().message;
  EXPECT_EQ(download<uint16_t>(f, 6), std::vector<uint16_t>(6, 0x3f80));
  expect_native(PK_OP_IOTA);
  expect_native(PK_OP_FULL);
}

}  // namespace

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
// to even, 0x3f32); lgamma(4.05e36) = 3.3733e38 is finite in f32 and rounds to bf16 0x7f7e (PoCL's f32 lgamma
// overflowed there).
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

// --- FFT, complex pow and complex extremes (references: a direct DFT in long double here, hand-derived values) ---

namespace {

using cld = std::complex<long double>;

// The DFT along one axis of a row-major [outer, n, inner] complex tensor, in long double with the angle reduced
// exactly (j k mod n) before sin / cos; sign -1 forward, +1 inverse, unnormalized.
std::vector<cld> dft_axis(const std::vector<cld> &x, int64_t outer, int64_t n, int64_t inner, int sign) {
  std::vector<cld> y(x.size());
  const long double two_pi = 6.283185307179586476925286766559005768L;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t k = 0; k < n; ++k) {
        cld acc = 0;
        for (int64_t j = 0; j < n; ++j) {
          const long double ang = two_pi * static_cast<long double>((j * k) % n) / static_cast<long double>(n);
          acc += x[static_cast<size_t>((o * n + j) * inner + i)] * cld(std::cos(ang), sign * std::sin(ang));
        }
        y[static_cast<size_t>((o * n + k) * inner + i)] = acc;
      }
  return y;
}

// Largest |a - b| over the elements, relative to the sum of |x| (the scale of a DFT's rounding errors).
template <class T>
double fft_error(const std::vector<T> &got, const std::vector<cld> &want, const std::vector<cld> &x) {
  long double l1 = 0, worst = 0;
  for (const cld &v : x) l1 += std::abs(v);
  for (size_t k = 0; k < want.size(); ++k) {
    const cld g(got[2 * k], got[2 * k + 1]);
    worst = std::max(worst, std::abs(g - want[k]));
  }
  return static_cast<double>(worst / std::max<long double>(l1, 1e-300L));
}

}  // namespace

TEST_F(OpenCL, FftC2cMatchesDirectDftForEveryLengthAndAxis) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_FFT_C2C, {c128}, {c128})) GTEST_SKIP() << "the device has no f64";
  // Powers of two take the radix-2 stages, other lengths the direct DFT up to 64 and Bluestein above; both axes
  // (inner extent 1 and 3).
  for (int64_t n : {1, 2, 3, 5, 8, 12, 16, 17, 64, 100, 128, 300}) {
    for (int axis = 0; axis < 2; ++axis) {
      for (int forward = 0; forward < 2; ++forward) {
        const std::vector<int64_t> shape = axis == 1 ? std::vector<int64_t>{3, n} : std::vector<int64_t>{n, 3};
        const size_t count = static_cast<size_t>(3 * n);
        const std::vector<float> rf = random_floats(2 * count, static_cast<unsigned>(n * 4 + axis * 2 + forward));
        std::vector<double> rd(rf.begin(), rf.end());
        std::vector<cld> x(count);
        for (size_t k = 0; k < count; ++k) x[k] = cld(rf[2 * k], rf[2 * k + 1]);
        const std::vector<cld> want =
            axis == 1 ? dft_axis(x, 3, n, 1, forward ? -1 : 1) : dft_axis(x, 1, n, 3, forward ? -1 : 1);
        pk_attrs_fft_c2c at = PK_ATTRS_FFT_C2C_INIT;
        at.num_dims = 1;
        at.dims[0] = axis;
        at.forward = forward;
        pk_tensor in64 = device(rf, c64, shape), out64 = empty<float>(2 * count, c64, shape);
        pk_tensor in128 = device(rd, c128, shape), out128 = empty<double>(2 * count, c128, shape);
        ASSERT_EQ(launch(PK_OP_FFT_C2C, {in64}, {out64}, &at), PK_OK) << last_error().message;
        ASSERT_EQ(launch(PK_OP_FFT_C2C, {in128}, {out128}, &at), PK_OK) << last_error().message;
        // c64: computed in double and rounded once (a few float ulps of the largest term); c128: ~log2(n) + 2
        // double roundings of the sum of |x|.
        EXPECT_LT(fft_error(download<float>(out64, 2 * count), want, x), 2e-7) << "c64 n=" << n << " axis " << axis;
        EXPECT_LT(fft_error(download<double>(out128, 2 * count), want, x), 2e-15) << "c128 n=" << n << " axis " << axis;
      }
    }
  }
  expect_native(PK_OP_FFT_C2C);
}

TEST_F(OpenCL, FftKnownValuesStridedInputAndTwoAxes) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_FFT_C2C, {c64}, {c64})) GTEST_SKIP() << "the device has no f64";
  // DFT [1, 2, 3, 4] = [10, -2+2i, -2, -2-2i], exactly; the input read through stride 2 (every other element).
  std::vector<float> x{1, 0, 9, 9, 2, 0, 9, 9, 3, 0, 9, 9, 4, 0};
  pk_tensor tx = device(x, c64, {4}, {2}), ty = empty<float>(8, c64, {4});
  pk_attrs_fft_c2c at = PK_ATTRS_FFT_C2C_INIT;
  at.num_dims = 1;
  ASSERT_EQ(launch(PK_OP_FFT_C2C, {tx}, {ty}, &at), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(ty, 8), (std::vector<float>{10, 0, -2, 2, -2, 0, -2, -2}));
  // Two axes of a [4, 6] c128 tensor (dims [1, 0]): the 2-D DFT, also against the direct one.
  const std::vector<float> rf = random_floats(48, 77);
  std::vector<double> rd(rf.begin(), rf.end());
  std::vector<cld> z(24);
  for (size_t k = 0; k < 24; ++k) z[k] = cld(rd[2 * k], rd[2 * k + 1]);
  const std::vector<cld> want = dft_axis(dft_axis(z, 4, 6, 1, -1), 1, 4, 6, -1);
  pk_tensor tz = device(rd, c128, {4, 6}), tw = empty<double>(48, c128, {4, 6});
  at.num_dims = 2;
  at.dims[0] = 1;
  at.dims[1] = 0;
  ASSERT_EQ(launch(PK_OP_FFT_C2C, {tz}, {tw}, &at), PK_OK) << last_error().message;
  EXPECT_LT(fft_error(download<double>(tw, 48), want, z), 2e-15);
  // A non-finite element makes every output of its line non-finite in both parts (as the reference's products
  // with it do); the other line stays exact.
  std::vector<double> nf{1, 0, INFINITY, 0, 2, 0, 3, 0, 1, 0, 1, 0, 1, 0, 1, 0};
  pk_tensor tn = device(nf, c128, {2, 4}), to = empty<double>(16, c128, {2, 4});
  at.num_dims = 1;
  at.dims[0] = 1;
  ASSERT_EQ(launch(PK_OP_FFT_C2C, {tn}, {to}, &at), PK_OK) << last_error().message;
  const std::vector<double> r = download<double>(to, 16);
  for (int k = 0; k < 8; ++k) EXPECT_FALSE(std::isfinite(r[k])) << k;
  EXPECT_EQ(std::vector<double>(r.begin() + 8, r.end()), (std::vector<double>{4, 0, 0, 0, 0, 0, 0, 0}));
  expect_native(PK_OP_FFT_C2C);
}

TEST_F(OpenCL, FftR2cAndC2rInvertEachOther) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_FFT_R2C, {kF64}, {c128})) GTEST_SKIP() << "the device has no f64";
  // r2c over the last axis (odd and even lengths, onesided n/2 + 1 entries) against the direct DFT, then c2r of
  // it, which is n times the input (unnormalized inverse); also both axes of a 2-D tensor (n0 n1 times).
  for (int64_t n : {5, 6, 16}) {
    const int64_t half = n / 2 + 1;
    const std::vector<float> rf = random_floats(static_cast<size_t>(2 * n), static_cast<unsigned>(n));
    std::vector<double> rd(rf.begin(), rf.end());
    std::vector<cld> x(rd.begin(), rd.end());
    const std::vector<cld> full = dft_axis(x, 2, n, 1, -1);
    std::vector<cld> want;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t k = 0; k < half; ++k) want.push_back(full[static_cast<size_t>(r * n + k)]);
    pk_attrs_fft_r2c ar = PK_ATTRS_FFT_R2C_INIT;
    ar.num_dims = 1;
    ar.dims[0] = 1;
    pk_tensor t64 = device(rd, kF64, {2, n}), s128 = empty<double>(static_cast<size_t>(4 * half), c128, {2, half});
    pk_tensor t32 = device(rf, kF32, {2, n}), s64 = empty<float>(static_cast<size_t>(4 * half), c64, {2, half});
    ASSERT_EQ(launch(PK_OP_FFT_R2C, {t64}, {s128}, &ar), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_FFT_R2C, {t32}, {s64}, &ar), PK_OK) << last_error().message;
    EXPECT_LT(fft_error(download<double>(s128, static_cast<size_t>(4 * half)), want, x), 2e-15) << n;
    EXPECT_LT(fft_error(download<float>(s64, static_cast<size_t>(4 * half)), want, x), 2e-7) << n;
    pk_attrs_fft_c2r ac = PK_ATTRS_FFT_C2R_INIT;
    ac.num_dims = 1;
    ac.dims[0] = 1;
    ac.last_dim_size = n;
    pk_tensor back = empty<double>(static_cast<size_t>(2 * n), kF64, {2, n});
    ASSERT_EQ(launch(PK_OP_FFT_C2R, {s128}, {back}, &ac), PK_OK) << last_error().message;
    const std::vector<double> b = download<double>(back, static_cast<size_t>(2 * n));
    for (size_t k = 0; k < b.size(); ++k) EXPECT_NEAR(b[k], n * rd[k], 1e-13) << n << " " << k;
  }
  // Both axes of [4, 6], not onesided for r2c's full spectrum check, then onesided and back through c2r.
  const std::vector<float> rf = random_floats(24, 5);
  std::vector<double> rd(rf.begin(), rf.end());
  pk_attrs_fft_r2c ar = PK_ATTRS_FFT_R2C_INIT;
  ar.num_dims = 2;
  ar.dims[0] = 0;
  ar.dims[1] = 1;
  pk_tensor t = device(rd, kF64, {4, 6}), spec = empty<double>(32, c128, {4, 4});
  ASSERT_EQ(launch(PK_OP_FFT_R2C, {t}, {spec}, &ar), PK_OK) << last_error().message;
  pk_attrs_fft_c2r ac = PK_ATTRS_FFT_C2R_INIT;
  ac.num_dims = 2;
  ac.dims[0] = 0;
  ac.dims[1] = 1;
  ac.last_dim_size = 6;
  pk_tensor back = empty<double>(24, kF64, {4, 6});
  ASSERT_EQ(launch(PK_OP_FFT_C2R, {spec}, {back}, &ac), PK_OK) << last_error().message;
  const std::vector<double> b = download<double>(back, 24);
  for (size_t k = 0; k < b.size(); ++k) EXPECT_NEAR(b[k], 24 * rd[k], 1e-12) << k;
  expect_native(PK_OP_FFT_R2C);
  expect_native(PK_OP_FFT_C2R);
}

// pow where b log a is huge: the phase Im(b log a) ~ 2^30..2^1000 radians modulo 2 pi and Re(b log a) where its
// two products cancel (b chosen as s (arg a, log|a|) rounded, so Re is only the rounding residual) need log a far
// beyond double-double. Values from mpmath at 4000 bits (tests/common); the contract's 16 ulp of the larger part.
TEST_F(OpenCL, PowWithHugePhaseAgainstMpmath) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_POW, {c128, c128}, {c128})) GTEST_SKIP() << "the device has no f64";
  const auto &wide = pk::test::kPowHugePhaseC128;
  const auto &narrow = pk::test::kPowHugePhaseC64;
  const auto check = [&](const auto &cases, size_t count, pk_dtype dt, auto zero, double eps) {
    using T = decltype(zero);
    std::vector<T> a, b;
    for (size_t i = 0; i < count; ++i) {
      a.insert(a.end(), {static_cast<T>(cases[i][0]), static_cast<T>(cases[i][1])});
      b.insert(b.end(), {static_cast<T>(cases[i][2]), static_cast<T>(cases[i][3])});
    }
    const int64_t n = static_cast<int64_t>(count);
    pk_tensor ta = device(a, dt, {n}), tb = device(b, dt, {n}), tp = empty<T>(2 * count, dt, {n});
    ASSERT_EQ(launch(PK_OP_POW, {ta, tb}, {tp}), PK_OK) << last_error().message;
    const std::vector<T> p = download<T>(tp, 2 * count);
    for (size_t i = 0; i < count; ++i) {
      const double tol = 16 * eps * std::max(std::fabs(cases[i][4]), std::fabs(cases[i][5]));
      EXPECT_NEAR(p[2 * i], cases[i][4], tol) << "case " << i;
      EXPECT_NEAR(p[2 * i + 1], cases[i][5], tol) << "case " << i;
    }
  };
  check(wide, std::size(wide), c128, 0.0, 0x1p-52);
  check(narrow, std::size(narrow), c64, 0.0f, 0x1p-23);
}

TEST_F(OpenCL, ComplexExtremesAndPowKnownValues) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_POW, {c128, c128}, {c128})) GTEST_SKIP() << "the device has no f64";
  // maximum_value / minimum_value of a complex dtype: its parts' extreme as the real part, +0 imaginary (as the
  // CPU backend answers).
  pk_attrs_maximum_value amx = PK_ATTRS_MAXIMUM_VALUE_INIT;
  amx.dtype = PK_DTYPE_C64;
  pk_attrs_minimum_value amn = PK_ATTRS_MINIMUM_VALUE_INIT;
  amn.dtype = PK_DTYPE_C128;
  pk_tensor mx = empty<float>(2, c64, {}), mn = empty<double>(2, c128, {});
  ASSERT_EQ(launch(PK_OP_MAXIMUM_VALUE, {}, {mx}, &amx), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_MINIMUM_VALUE, {}, {mn}, &amn), PK_OK) << last_error().message;
  const std::vector<float> m = download<float>(mx, 2);
  const std::vector<double> l = download<double>(mn, 2);
  EXPECT_EQ(m[0], std::numeric_limits<float>::max());
  EXPECT_EQ(f32_bits(m[1]), 0u);
  EXPECT_EQ(l[0], -std::numeric_limits<double>::max());
  EXPECT_EQ(l[1], 0.0);
  EXPECT_FALSE(std::signbit(l[1]));
  // (1+i)^2 = 2i; (-1)^(1/2) = i (real part cos(pi/2) ~ 6e-17); i^i = e^(-pi/2); 2^10 = 1024; 0^2 = 0; z^0 = 1.
  std::vector<double> a{1, 1, -1, 0, 0, 1, 2, 0, 0, 0, INFINITY, NAN}, b{2, 0, 0.5, 0, 0, 1, 10, 0, 2, 0, 0, 0};
  pk_tensor ta = device(a, c128, {6}), tb = device(b, c128, {6}), tp = empty<double>(12, c128, {6});
  ASSERT_EQ(launch(PK_OP_POW, {ta, tb}, {tp}), PK_OK) << last_error().message;
  const std::vector<double> p = download<double>(tp, 12);
  EXPECT_NEAR(p[0], 0.0, 1e-15);
  EXPECT_NEAR(p[1], 2.0, 4e-16);
  EXPECT_NEAR(p[2], 0.0, 1e-16);
  EXPECT_NEAR(p[3], 1.0, 2e-16);
  EXPECT_NEAR(p[4], 0.20787957635076190855, 3e-17);
  EXPECT_EQ(p[5], 0.0);
  EXPECT_EQ(p[6], 1024.0);
  EXPECT_EQ(p[8], 0.0);
  EXPECT_EQ(p[9], 0.0);
  EXPECT_EQ(p[10], 1.0);
  EXPECT_EQ(p[11], 0.0);
  expect_native(PK_OP_POW);
  expect_native(PK_OP_MAXIMUM_VALUE);
}
