// CPU backend, scaled_dot_product_attention_masked (a bool or additive mask broadcast to [B, Hq, L, S], grouped-
// query heads), through the public host API. Every expected value comes from the long-double loop below, written
// from the op's definition (softmax(scale q k^T + mask) v with query head h reading kv head h / (Hq / Hkv); a row
// whose every score is -inf gives 0), never from a kernel run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cpu_test_fixture.hpp"
#include "primkit/primkit.h"

namespace {

using pk_test::last_error;
using pk_test::Lcg;
using ld = long double;

const pk_dtype kF16 = PK_DTYPE_F16_DESC, kF32 = PK_DTYPE_F32_DESC, kF64 = PK_DTYPE_F64_DESC, kBF16 = PK_DTYPE_BF16_DESC,
               kBool = PK_DTYPE_BOOL_DESC;
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Dims {
  int64_t B, Hq, Hkv, L, S, E, Ev;
};

// What the mask says about (b, h, i, j): hidden (a false bool), or an additive term.
struct MaskAt {
  bool hidden = false;
  ld add = 0;
};
using MaskFn = std::function<MaskAt(int64_t, int64_t, int64_t, int64_t)>;

// softmax(scale q k^T + mask) v in long double; q, k, v dense row-major; out [B, Hq, L, Ev].
std::vector<ld> reference(const std::vector<double> &q, const std::vector<double> &k, const std::vector<double> &v,
                          const Dims &d, ld scale, bool causal, const MaskFn &mask) {
  const int64_t G = d.Hq / d.Hkv;
  std::vector<ld> out(static_cast<size_t>(d.B * d.Hq * d.L * d.Ev), 0);
  std::vector<ld> s(static_cast<size_t>(d.S));
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.Hq; ++h)
      for (int64_t i = 0; i < d.L; ++i) {
        const int64_t kh = h / G;
        ld m = -HUGE_VALL;
        for (int64_t j = 0; j < d.S; ++j) {
          const MaskAt mk = mask(b, h, i, j);
          if (mk.hidden || (causal && j > i)) {
            s[j] = -HUGE_VALL;
          } else {
            ld dot = 0;
            for (int64_t e = 0; e < d.E; ++e)
              dot +=
                  static_cast<ld>(q[((b * d.Hq + h) * d.L + i) * d.E + e]) * k[((b * d.Hkv + kh) * d.S + j) * d.E + e];
            s[j] = dot * scale + mk.add;
          }
          m = std::max(m, s[j]);
        }
        if (m == -HUGE_VALL) continue;  // every key hidden: 0
        ld z = 0;
        for (int64_t j = 0; j < d.S; ++j) z += expl(s[j] - m);
        ld *o = out.data() + ((b * d.Hq + h) * d.L + i) * d.Ev;
        for (int64_t j = 0; j < d.S; ++j) {
          const ld p = expl(s[j] - m) / z;
          for (int64_t e = 0; e < d.Ev; ++e) o[e] += p * v[((b * d.Hkv + kh) * d.S + j) * d.Ev + e];
        }
      }
  return out;
}

// |got - ref| <= ulps units of 2^-bits relative to max(|ref|, floor), floor a small share of the largest |ref|, plus
// out_ulps units of 2^-bits of the largest |ref| (the contract's 16 u max|out| term, for f32 results computed in f32).
void check(const std::vector<double> &got, const std::vector<ld> &ref, double ulps, int bits, const std::string &what,
           double out_ulps = 0) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  ld big = 0;
  for (ld r : ref) big = std::max(big, std::fabs(r));
  int bad = 0;
  for (size_t i = 0; i < ref.size() && bad < 5; ++i) {
    const ld tol = ulps * std::ldexp(1.0L, -bits) * std::max(std::fabs(ref[i]), big * 0x1p-8L) +
                   out_ulps * std::ldexp(1.0L, -bits) * big + 1e-300L;
    if (!(std::fabs(got[i] - ref[i]) <= tol)) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << static_cast<double>(ref[i]);
    }
  }
}

// Exact conversions of test values (at most 8 significant bits, |x| in [2^-6, 2] or 0, or -inf) to f16 / bf16.
uint16_t to_narrow(float x, bool bf16) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (bf16) return static_cast<uint16_t>(u >> 16);
  if (std::isinf(x)) return x < 0 ? 0xfc00 : 0x7c00;
  const uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, man = (u >> 13) & 0x3ff;
  return x == 0 ? static_cast<uint16_t>(sign) : static_cast<uint16_t>(sign | ((exp - 112) << 10) | man);
}
double from_narrow(uint16_t h, bool bf16) {
  if (bf16) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1f) return m ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

class CpuAttentionMasked : public pk_test::CpuBackendTest {
 protected:
  pk_attrs_scaled_dot_product_attention_masked attrs(double scale, bool causal) {
    pk_attrs_scaled_dot_product_attention_masked a = PK_ATTRS_SCALED_DOT_PRODUCT_ATTENTION_MASKED_INIT;
    a.scale = scale;
    a.is_causal = causal ? 1 : 0;
    return a;
  }
  // f32 q, k, v of normal values (plus their double copies for the reference).
  void make_f32(const Dims &d, uint64_t seed, std::vector<float> &q, std::vector<float> &k, std::vector<float> &v,
                std::vector<double> &qd, std::vector<double> &kd, std::vector<double> &vd) {
    Lcg rng{seed};
    q.resize(static_cast<size_t>(d.B * d.Hq * d.L * d.E));
    k.resize(static_cast<size_t>(d.B * d.Hkv * d.S * d.E));
    v.resize(static_cast<size_t>(d.B * d.Hkv * d.S * d.Ev));
    for (float &x : q) x = rng.normal(1.0);
    for (float &x : k) x = rng.normal(1.0);
    for (float &x : v) x = rng.normal(1.0);
    qd.assign(q.begin(), q.end());
    kd.assign(k.begin(), k.end());
    vd.assign(v.begin(), v.end());
  }
  // Runs one f32 launch with `mask` (a tensor over mask data the caller owns) and checks it against the reference
  // within `ulps` of each element plus 16 u of the largest: the op's contract (16 ulp + 16 u max|out|) without its
  // backward-error term, which only widens it. The f32 fast path computes in f32, as the contract allows.
  void run_f32(const Dims &d, pk_tensor mask, bool causal, const MaskFn &ref_mask, double ulps, const std::string &what,
               uint64_t seed = 7) {
    std::vector<float> q, k, v;
    std::vector<double> qd, kd, vd;
    make_f32(d, seed, q, k, v, qd, kd, vd);
    std::vector<float> out(static_cast<size_t>(d.B * d.Hq * d.L * d.Ev), -7.0f);
    const auto a = attrs(0.125, causal);
    ASSERT_EQ(launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION_MASKED,
                     {tensor(q, kF32, {d.B, d.Hq, d.L, d.E}), tensor(k, kF32, {d.B, d.Hkv, d.S, d.E}),
                      tensor(v, kF32, {d.B, d.Hkv, d.S, d.Ev}), mask},
                     {tensor(out, kF32, {d.B, d.Hq, d.L, d.Ev})}, &a),
              PK_OK)
        << what << ": " << last_error().message;
    check(std::vector<double>(out.begin(), out.end()), reference(qd, kd, vd, d, 0.125L, causal, ref_mask), ulps, 24,
          what, 16);
  }
};

// Bool masks of every broadcast form PyTorch accepts, GQA 8:2 and 8:1, with and without causal, sizes that take
// the vectorized path (E = 64, 64 and more rows per head) and ones that do not (odd E, a few rows).
TEST_F(CpuAttentionMasked, BoolMasksWithGroupedHeads) {
  const Dims dims[] = {{2, 8, 2, 70, 90, 64, 64}, {1, 8, 1, 37, 41, 24, 17}, {2, 8, 2, 5, 7, 5, 3}};
  for (const Dims &d : dims) {
    const int64_t B = d.B, H = d.Hq, L = d.L, S = d.S;
    Lcg rng{3};
    std::vector<uint8_t> full(static_cast<size_t>(B * H * L * S)), ls(static_cast<size_t>(L * S));
    for (uint8_t &x : full) x = rng.next() < 0.7;
    for (uint8_t &x : ls) x = rng.next() < 0.6;
    // a fully hidden row in each: it must come out 0
    for (int64_t j = 0; j < S; ++j) full[static_cast<size_t>(((1 * L) + 2) * S + j)] = 0;
    for (int64_t j = 0; j < S; ++j) ls[static_cast<size_t>(3 * S + j)] = 0;
    const auto at_full = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
      return MaskAt{full[static_cast<size_t>(((b * H + h) * L + i) * S + j)] == 0, 0};
    };
    const auto at_ls = [&](int64_t, int64_t, int64_t i, int64_t j) {
      return MaskAt{ls[static_cast<size_t>(i * S + j)] == 0, 0};
    };
    const std::string tag = "[" + std::to_string(B) + "," + std::to_string(H) + "/" + std::to_string(d.Hkv) + "," +
                            std::to_string(L) + "," + std::to_string(S) + "," + std::to_string(d.E) + "]";
    for (int causal = 0; causal < 2; ++causal) {
      const std::string c = causal ? " causal" : "";
      run_f32(d, tensor(full, kBool, {B, H, L, S}), causal, at_full, 16, "bool [B,H,L,S] " + tag + c);
      run_f32(d, tensor(ls, kBool, {L, S}), causal, at_ls, 16, "bool [L,S] " + tag + c);
      run_f32(d, tensor(ls, kBool, {1, 1, L, S}), causal, at_ls, 16, "bool [1,1,L,S] " + tag + c);
      // [B, H, L, S] with stride 0 over batch and heads: a broadcast the kernel must read in place
      run_f32(d, tensor(ls, kBool, {B, H, L, S}, {0, 0, S, 1}), causal, at_ls, 16, "bool stride-0 " + tag + c);
    }
  }
}

// Additive masks: finite biases, -inf entries, a row of -inf, PyTorch-style "finfo.min" masking, a key-padding
// mask [B, 1, 1, S] and a per-head bias [H, L, S].
TEST_F(CpuAttentionMasked, AdditiveMasks) {
  const Dims d{2, 8, 2, 66, 75, 64, 40};
  const int64_t B = d.B, H = d.Hq, L = d.L, S = d.S;
  Lcg rng{11};
  std::vector<float> ls(static_cast<size_t>(L * S)), pad(static_cast<size_t>(B * S)),
      hls(static_cast<size_t>(H * L * S));
  for (float &x : ls) x = rng.next() < 0.2 ? -kInf : rng.normal(2.0);
  for (int64_t j = 0; j < S; ++j) ls[static_cast<size_t>(5 * S + j)] = -kInf;  // row 5 hidden
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < S; ++j) pad[static_cast<size_t>(b * S + j)] = j < S - 9 * (b + 1) ? 0.0f : -3.0e38f;
  for (float &x : hls) x = rng.normal(0.5);
  const auto at_ls = [&](int64_t, int64_t, int64_t i, int64_t j) {
    return MaskAt{false, static_cast<ld>(ls[static_cast<size_t>(i * S + j)])};
  };
  const auto at_pad = [&](int64_t b, int64_t, int64_t, int64_t j) {
    return MaskAt{false, static_cast<ld>(pad[static_cast<size_t>(b * S + j)])};
  };
  const auto at_hls = [&](int64_t, int64_t h, int64_t i, int64_t j) {
    return MaskAt{false, static_cast<ld>(hls[static_cast<size_t>((h * L + i) * S + j)])};
  };
  for (int causal = 0; causal < 2; ++causal) {
    const std::string c = causal ? " causal" : "";
    run_f32(d, tensor(ls, kF32, {1, 1, L, S}), causal, at_ls, 16, "additive [1,1,L,S]" + c);
    run_f32(d, tensor(ls, kF32, {B, H, L, S}, {0, 0, S, 1}), causal, at_ls, 16, "additive stride-0" + c);
    run_f32(d, tensor(pad, kF32, {B, 1, 1, S}), causal, at_pad, 16, "key padding -3e38 [B,1,1,S]" + c);
    run_f32(d, tensor(hls, kF32, {H, L, S}), causal, at_hls, 16, "per-head bias [H,L,S]" + c);
  }
  // A row of scores all pushed to -3e38: the exact result is the softmax of the unmasked scores (the bias cancels;
  // even long double would round it away, so the reference leaves it out).
  std::vector<float> all_min(static_cast<size_t>(S), -3.0e38f);
  const auto at_min = [&](int64_t, int64_t, int64_t, int64_t) { return MaskAt{false, 0}; };
  run_f32(d, tensor(all_min, kF32, {S}), false, at_min, 16, "additive -3e38 everywhere");
}

// f64, f16 and bf16 (the narrow formats compute in f32 or wider and round once), with a bool and an additive mask.
TEST_F(CpuAttentionMasked, EveryFloatDtype) {
  const Dims d{1, 4, 2, 40, 45, 16, 9};
  const int64_t B = d.B, Hq = d.Hq, Hkv = d.Hkv, L = d.L, S = d.S, E = d.E, Ev = d.Ev;
  Lcg rng{99};
  std::vector<double> qd(static_cast<size_t>(B * Hq * L * E)), kd(static_cast<size_t>(B * Hkv * S * E)),
      vd(static_cast<size_t>(B * Hkv * S * Ev)), addd(static_cast<size_t>(L * S));
  std::vector<uint8_t> bm(static_cast<size_t>(L * S));
  // multiples of 1/64 in [-2, 2]: exact in f16 and bf16
  const auto val = [&]() { return std::max(-2.0, std::min(2.0, std::round(rng.normal(0.7) * 64.0) / 64.0)); };
  for (double &x : qd) x = val();
  for (double &x : kd) x = val();
  for (double &x : vd) x = val();
  for (double &x : addd) x = rng.next() < 0.25 ? -HUGE_VAL : std::round(rng.normal(1.0) * 16.0) / 16.0;
  for (uint8_t &x : bm) x = rng.next() < 0.7;
  for (int64_t j = 0; j < S; ++j) bm[static_cast<size_t>(2 * S + j)] = 0;
  const auto at_bool = [&](int64_t, int64_t, int64_t i, int64_t j) {
    return MaskAt{bm[static_cast<size_t>(i * S + j)] == 0, 0};
  };
  const auto at_add = [&](int64_t, int64_t, int64_t i, int64_t j) {
    return MaskAt{false, static_cast<ld>(addd[static_cast<size_t>(i * S + j)])};
  };
  for (int causal = 0; causal < 2; ++causal) {
    for (int additive = 0; additive < 2; ++additive) {
      const std::vector<ld> ref = reference(qd, kd, vd, d, 0.25L, causal, additive ? MaskFn(at_add) : MaskFn(at_bool));
      const std::string what = std::string(additive ? "additive" : "bool") + (causal ? " causal" : "");
      const auto a = attrs(0.25, causal);
      {  // f64
        std::vector<double> q = qd, k = kd, v = vd, m = addd, out(ref.size());
        const pk_tensor mask = additive ? tensor(m, kF64, {L, S}) : tensor(bm, kBool, {L, S});
        ASSERT_EQ(launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION_MASKED,
                         {tensor(q, kF64, {B, Hq, L, E}), tensor(k, kF64, {B, Hkv, S, E}),
                          tensor(v, kF64, {B, Hkv, S, Ev}), mask},
                         {tensor(out, kF64, {B, Hq, L, Ev})}, &a),
                  PK_OK)
            << last_error().message;
        check(out, ref, 4, 53, "f64 " + what);
      }
      for (bool bf16 : {false, true}) {
        const pk_dtype dt = bf16 ? kBF16 : kF16;
        const auto narrow = [&](const std::vector<double> &x) {
          std::vector<uint16_t> r(x.size());
          for (size_t i = 0; i < x.size(); ++i) r[i] = to_narrow(static_cast<float>(x[i]), bf16);
          return r;
        };
        std::vector<uint16_t> q = narrow(qd), k = narrow(kd), v = narrow(vd), m = narrow(addd), out(ref.size());
        const pk_tensor mask = additive ? tensor(m, dt, {1, 1, L, S}) : tensor(bm, kBool, {1, 1, L, S});
        ASSERT_EQ(
            launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION_MASKED,
                   {tensor(q, dt, {B, Hq, L, E}), tensor(k, dt, {B, Hkv, S, E}), tensor(v, dt, {B, Hkv, S, Ev}), mask},
                   {tensor(out, dt, {B, Hq, L, Ev})}, &a),
            PK_OK)
            << last_error().message;
        std::vector<double> got(out.size());
        for (size_t i = 0; i < out.size(); ++i) got[i] = from_narrow(out[i], bf16);
        // correctly rounded up to a hair: one unit of the format's last place
        check(got, ref, 1, bf16 ? 7 : 10, std::string(bf16 ? "bf16 " : "f16 ") + what);
      }
    }
  }
}

// Empty extents: L = 0 writes nothing; S = 0 (no keys) gives zeros, as the decomposition's empty sums do.
TEST_F(CpuAttentionMasked, EmptyExtents) {
  const auto a = attrs(0.5, false);
  {
    std::vector<float> q(0), k(2 * 6 * 8), v(2 * 6 * 4), out(0);
    std::vector<uint8_t> m(6, 1);
    ASSERT_EQ(launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION_MASKED,
                     {tensor(q, kF32, {1, 4, 0, 8}), tensor(k, kF32, {1, 2, 6, 8}), tensor(v, kF32, {1, 2, 6, 4}),
                      tensor(m, kBool, {1, 6})},
                     {tensor(out, kF32, {1, 4, 0, 4})}, &a),
              PK_OK)
        << last_error().message;
  }
  for (int causal = 0; causal < 2; ++causal) {
    const auto ac = attrs(0.5, causal);
    std::vector<float> q(4 * 3 * 8, 1.0f), k(0), v(0), out(4 * 3 * 5, 9.0f), m(1, 0.0f);
    ASSERT_EQ(launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION_MASKED,
                     {tensor(q, kF32, {1, 4, 3, 8}), tensor(k, kF32, {1, 2, 0, 8}), tensor(v, kF32, {1, 2, 0, 5}),
                      tensor(m, kF32, {1, 1, 1, 1})},
                     {tensor(out, kF32, {1, 4, 3, 5})}, &ac),
              PK_OK)
        << last_error().message;
    for (float x : out) EXPECT_EQ(x, 0.0f);
  }
}

// Bad launches are refused before any kernel runs, naming the op, the argument and the reason.
TEST_F(CpuAttentionMasked, BadInputsNameTheArgument) {
  std::vector<float> q(2 * 6 * 3 * 4), k(2 * 4 * 5 * 4), k3(2 * 3 * 5 * 4), v(2 * 4 * 5 * 2), v3(2 * 3 * 5 * 2),
      out(2 * 6 * 3 * 2), m(64);
  std::vector<double> md(15);
  const auto a = attrs(0.5, false);
  struct Bad {
    std::vector<pk_tensor> in;
    const char *needle;
  };
  const Bad bad[] = {
      // 6 query heads over 4 kv heads
      {{tensor(q, kF32, {2, 6, 3, 4}), tensor(k, kF32, {2, 4, 5, 4}), tensor(v, kF32, {2, 4, 5, 2}),
        tensor(m, kF32, {3, 5})},
       "kv heads"},
      // a mask of 4 keys for 5
      {{tensor(q, kF32, {2, 6, 3, 4}), tensor(k3, kF32, {2, 3, 5, 4}), tensor(v3, kF32, {2, 3, 5, 2}),
        tensor(m, kF32, {3, 4})},
       "does not broadcast"},
      // a mask over 2 heads for 6
      {{tensor(q, kF32, {2, 6, 3, 4}), tensor(k3, kF32, {2, 3, 5, 4}), tensor(v3, kF32, {2, 3, 5, 2}),
        tensor(m, kF32, {2, 2, 3, 5})},
       "does not broadcast"},
      // an additive mask of another float type
      {{tensor(q, kF32, {2, 6, 3, 4}), tensor(k3, kF32, {2, 3, 5, 4}), tensor(v3, kF32, {2, 3, 5, 2}),
        tensor(md, kF64, {3, 5})},
       "neither bool"},
  };
  for (const Bad &b : bad) {
    EXPECT_EQ(launch(PK_OP_SCALED_DOT_PRODUCT_ATTENTION_MASKED, b.in, {tensor(out, kF32, {2, 6, 3, 2})}, &a),
              PK_ERROR_INVALID_ARGUMENT)
        << b.needle;
    const std::string msg = last_error().message;
    EXPECT_NE(msg.find("scaled_dot_product_attention_masked"), std::string::npos) << msg;
    EXPECT_NE(msg.find(b.needle), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(b.needle) == "kv heads" ? "(k)" : "(mask)"), std::string::npos) << msg;
  }
}

}  // namespace
