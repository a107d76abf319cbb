// compare.cpp — how a backend's output is judged against the oracle, per the (op, dtype)'s numeric contract.
//
// Checks (classify() picks one per op and output dtype):
//   exact              bit-for-bit equal; any NaN matches any NaN (payloads are not compared). Integer and bool
//                      outputs are always exact, whatever the row's contract says (integers wrap, they do not
//                      round).
//   correctly_rounded  equal to the oracle's value rounded once to the output dtype; NaN matches any NaN; the
//                      sign of zero counts.
//   ulp N              |actual - wide| / ulp(wide) <= N, measured against the oracle's UNROUNDED (wide) value
//                      with ulp(x) the spacing of the output dtype's values at |x|. For 16- and 8-bit floats the
//                      row's `half` limit applies and the error is the distance in representable values between
//                      the actual and the oracle's rounded value ("after rounding to the format"). Beyond the
//                      row's `quality` limit (f32/f64 only) the pair gets QUALITY_WARNING.
//   reduction          sums, products, matmul, convolution, scans, FFT. An element passes if
//                          |actual - wide| <= ulp(wide) + 2 * n * eps_acc * M
//                      where n is the reduction length (terms per output element), eps_acc the unit roundoff of
//                      the accumulation the table promises (2^-24 for f32 and narrower: "accumulate in at least
//                      f32"; 2^-53 for f64) and M the sum of the magnitudes of the terms, computed by the oracle
//                      on |inputs| (for sum/matmul/conv this is exactly sum |a_i b_i|). This is the classical
//                      worst-case bound of recursive summation (Higham, Accuracy and Stability, §4.2:
//                      |err| <= (n-1) u sum|x_i| + O(u^2)) with a factor 2 for the products and the O(u^2) term,
//                      plus one ULP for rounding to the output dtype; every summation order (pairwise, blocked,
//                      tree, FMA) meets it. Where |inputs| do not give the terms (var, FFT, logcumsumexp), M is a
//                      coarser but still sound scale: see runner.cpp.
//   composite_bound N  composite ops: |actual - wide| <= N ulp(wide) + P + N u S (docs/numerics.md): wide is the
//                      oracle's value of the decomposition without intermediate rounding, P the change of it under
//                      a backward error of N u on every input (composite_sensitivity), S the magnitude the row's
//                      `scale` names (composite_absolute). Where P cannot be evaluated: N ulps of max(|wide|, rms
//                      of the output).
// Complex outputs: a complex infinity (a value with an infinite part, whatever the other part: C11 Annex G.3)
// matches any complex infinity; ulp checks measure each part in ulps of the larger part's magnitude (norm-wise);
// complex products and FFTs with non-finite terms accept any non-finite result where the reference is
// non-finite (Tolerance::nonfinite_terms_any); a zero part of a complex quotient (div, reciprocal) may have either
// sign (Tolerance::complex_zero_sign_free). Integer outputs of composites may also equal the program with rounded
// intermediates. Subnormals: when the device declares PK_FLOAT_FLUSH_SUBNORMAL_OUTPUTS a zero (of either sign) is
// accepted where the reference is subnormal; PK_FLOAT_FLUSH_SUBNORMAL_INPUTS lets the runner pass a second reference
// computed on flushed inputs. Without those flags, subnormals must be exact to contract like any value.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "conformance_internal.hpp"

namespace pk::conformance {

namespace {

using oracle::BinaryFormat;

bool is_float_dtype(int32_t dtype) {
  return meta::is_float(dtype) || meta::is_complex(dtype);
}

int format_bits(const BinaryFormat &f) {
  return 1 + f.exp_bits + f.man_bits;
}

bool bits_nan(uint64_t bits, const BinaryFormat &f) {
  uint64_t exp_mask = (uint64_t{1} << f.exp_bits) - 1;
  uint64_t man_mask = (uint64_t{1} << f.man_bits) - 1;
  uint64_t e = (bits >> f.man_bits) & exp_mask, m = bits & man_mask;
  if (f.ieee) return e == exp_mask && m != 0;
  return e == exp_mask && m == man_mask;
}

bool bits_inf(uint64_t bits, const BinaryFormat &f) {
  if (!f.ieee) return false;
  uint64_t exp_mask = (uint64_t{1} << f.exp_bits) - 1;
  uint64_t man_mask = (uint64_t{1} << f.man_bits) - 1;
  return ((bits >> f.man_bits) & exp_mask) == exp_mask && (bits & man_mask) == 0;
}

bool bits_subnormal(uint64_t bits, const BinaryFormat &f) {
  uint64_t exp_mask = (uint64_t{1} << f.exp_bits) - 1;
  uint64_t man_mask = (uint64_t{1} << f.man_bits) - 1;
  return ((bits >> f.man_bits) & exp_mask) == 0 && (bits & man_mask) != 0;
}

bool bits_zero(uint64_t bits, const BinaryFormat &f) {
  uint64_t mag_mask = (uint64_t{1} << (format_bits(f) - 1)) - 1;
  return (bits & mag_mask) == 0;
}

uint64_t largest_finite_bits(const BinaryFormat &f) {
  const uint64_t man_mask = (uint64_t{1} << f.man_bits) - 1;
  const uint64_t exp_all = (uint64_t{1} << f.exp_bits) - 1;
  // IEEE: the exponent below all-ones with a full mantissa; finite-only (e4m3fn): all ones but the NaN pattern.
  return f.ieee ? ((exp_all - 1) << f.man_bits) | man_mask : (exp_all << f.man_bits) | (man_mask - 1);
}

// Sign-magnitude bits -> a line of integers where neighbours are adjacent values and -0 == +0 == 0.
int64_t ordered(uint64_t bits, const BinaryFormat &f) {
  int sign_bit = format_bits(f) - 1;
  uint64_t mag = bits & ((uint64_t{1} << sign_bit) - 1);
  return (bits >> sign_bit) & 1 ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
}

uint64_t load_bits(const uint8_t *p, size_t bytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, bytes);  // little-endian hosts only, as the whole SDK
  return v;
}

// Bits of part `part` (0 = real, 1 = imaginary) of element i.
uint64_t part_bits(int32_t dtype, const uint8_t *base, int64_t i, int part) {
  size_t size = meta::dtype_size(dtype);
  if (meta::is_complex(dtype)) {
    size_t half = size / 2;
    return load_bits(base + static_cast<size_t>(i) * size + static_cast<size_t>(part) * half, half);
  }
  return load_bits(base + static_cast<size_t>(i) * size, size);
}

}  // namespace

const char *status_name(Status s) {
  switch (s) {
    case Status::pass:
      return "PASS";
    case Status::quality_warning:
      return "QUALITY_WARNING";
    case Status::fail:
      return "FAIL";
    case Status::not_supported:
      return "NOT_SUPPORTED";
    case Status::crash:
      return "CRASH";
    case Status::timeout:
      return "TIMEOUT";
    case Status::expected_fail:
      return "EXPECTED_FAIL";
    case Status::unexpected_pass:
      return "UNEXPECTED_PASS";
    case Status::no_reference:
      return "NO_REFERENCE";
  }
  return "?";
}

const char *check_name(Check c) {
  switch (c) {
    case Check::exact:
      return "exact";
    case Check::correctly_rounded:
      return "correctly_rounded";
    case Check::ulp:
      return "ulp";
    case Check::reduction:
      return "reduction";
    case Check::composite_bound:
      return "bound";
  }
  return "?";
}

ContractCheck classify(const meta::OpInfo &op, int32_t out_dtype) {
  ContractCheck c;
  if (!is_float_dtype(out_dtype)) return c;  // integers and bool: exact
  const meta::ContractInfo &k = op.contract;
  const bool narrow = meta::dtype_size(meta::real_of(out_dtype)) <= 2;
  switch (k.kind) {
    case meta::Contract::exact:
      c.check = Check::exact;
      break;
    case meta::Contract::correctly_rounded:
      c.check = Check::correctly_rounded;
      break;
    case meta::Contract::ulp:
      c.check = Check::ulp;
      c.fail_limit = narrow ? (k.half > 0 ? k.half : k.ulp) : k.ulp;
      c.quality_limit = narrow ? 0 : k.quality;
      c.absolute_near_zero = op.doc != nullptr && std::strstr(op.doc, "absolute error near") != nullptr;
      break;
    case meta::Contract::reduction:
      c.check = Check::reduction;
      break;
    case meta::Contract::bound:
      c.check = Check::composite_bound;
      c.fail_limit = k.ulp > 0 ? k.ulp : 1;
      break;
  }
  return c;
}

long double ulp_of(int32_t dtype, long double x) {
  BinaryFormat f = oracle::format_of(meta::real_of(dtype));
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int emin = 1 - bias;
  const int emax = f.ieee ? bias : (1 << f.exp_bits) - 1 - bias;
  long double a = std::fabs(x);
  int e = emin;
  if (std::isfinite(a) && a >= std::ldexp(1.0L, emin)) e = std::min(std::ilogb(a), emax);
  if (!std::isfinite(a)) e = emax;
  return std::ldexp(1.0L, e - f.man_bits);
}

double ulp_distance_bits(int32_t dtype, uint64_t a_bits, uint64_t b_bits) {
  if (!meta::is_float(meta::real_of(dtype))) {
    // Integers: the plain difference (sign-extended by the dtype's width).
    int bits = static_cast<int>(meta::dtype_size(dtype) * 8);
    auto sx = [&](uint64_t v) -> long double {
      if (bits == 64) return meta::is_signed(dtype) ? static_cast<long double>(static_cast<int64_t>(v)) : v;
      uint64_t m = (uint64_t{1} << bits) - 1;
      v &= m;
      if (meta::is_signed(dtype) && (v >> (bits - 1))) return static_cast<long double>(v) - std::ldexp(1.0L, bits);
      return static_cast<long double>(v);
    };
    return static_cast<double>(std::fabs(sx(a_bits) - sx(b_bits)));
  }
  BinaryFormat f = oracle::format_of(meta::real_of(dtype));
  bool an = bits_nan(a_bits, f), bn = bits_nan(b_bits, f);
  if (an || bn) return an && bn ? 0 : kMaxUlp;
  bool ai = bits_inf(a_bits, f), bi = bits_inf(b_bits, f);
  if (ai || bi) return a_bits == b_bits ? 0 : kMaxUlp;
  // In long double: two f64 of opposite signs are up to ~2^64 values apart, past int64 (signed overflow); its
  // 64-bit significand holds every ordered value and their difference exactly.
  return static_cast<double>(
      std::fabs(static_cast<long double>(ordered(a_bits, f)) - static_cast<long double>(ordered(b_bits, f))));
}

double ulp_error(int32_t dtype, uint64_t actual_bits, long double wide) {
  BinaryFormat f = oracle::format_of(meta::real_of(dtype));
  bool actual_nan = bits_nan(actual_bits, f);
  if (std::isnan(wide) || actual_nan) return std::isnan(wide) && actual_nan ? 0 : kMaxUlp;
  long double a = oracle::format_value(actual_bits, f);
  if (std::isinf(wide) || std::isinf(a)) return a == wide ? 0 : kMaxUlp;
  long double err = std::fabs(a - wide) / ulp_of(dtype, wide);
  return std::min(static_cast<double>(err), kMaxUlp);
}

void Histogram::add(double ulps) {
  int b = ulps <= 0 ? 0 : ulps <= 1 ? 1 : ulps <= 2 ? 2 : ulps <= 3 ? 3 : 4;
  ++bucket[b];
}

namespace detail {

std::string wide_text(const oracle::Wide &w, int32_t dtype) {
  char buf[96];
  if (meta::is_complex(dtype)) {
    std::snprintf(buf, sizeof buf, "(%.21Lg, %.21Lg)", w.re, w.im);
  } else if (meta::is_float(dtype)) {
    std::snprintf(buf, sizeof buf, "%.21Lg", w.re);
  } else {
    std::snprintf(buf, sizeof buf, "%.0Lf", w.re);
  }
  return buf;
}

std::string element_text(int32_t dtype, const uint8_t *bytes, int64_t i) {
  size_t size = meta::dtype_size(dtype);
  oracle::Wide w = oracle::load_element(bytes + static_cast<size_t>(i) * size, dtype);
  std::string s = wide_text(w, dtype);
  if (is_float_dtype(dtype)) {
    char buf[64];
    if (meta::is_complex(dtype)) {
      std::snprintf(buf, sizeof buf, " [0x%" PRIx64 ", 0x%" PRIx64 "]", part_bits(dtype, bytes, i, 0),
                    part_bits(dtype, bytes, i, 1));
    } else {
      std::snprintf(buf, sizeof buf, " [0x%" PRIx64 "]", part_bits(dtype, bytes, i, 0));
    }
    s += buf;
  }
  return s;
}

int64_t element_byte_offset(const oracle::HostTensor &t, int64_t index) {
  const size_t rank = t.shape.size();
  int64_t off = 0, stride = 1;
  for (size_t k = rank; k-- > 0;) {
    int64_t extent = t.shape[k];
    int64_t idx = extent > 0 ? index % extent : 0;
    if (extent > 0) index /= extent;
    int64_t s = t.strides.empty() ? stride : t.strides[k];
    off += idx * s;
    stride *= extent;
  }
  return static_cast<int64_t>(t.byte_offset) + off * static_cast<int64_t>(meta::dtype_size(t.dtype));
}

OutputComparison compare_output(const oracle::OutputValue &expected, const std::vector<uint8_t> &actual,
                                const Tolerance &tol, const oracle::OutputValue *alternative) {
  OutputComparison out;
  const int32_t dtype = expected.dtype;
  const int64_t n = expected.numel();
  const size_t size = meta::dtype_size(dtype);
  if (static_cast<int64_t>(actual.size()) < n * static_cast<int64_t>(size)) {
    out.failed_elements = static_cast<uint64_t>(n);
    out.max_ulp = kMaxUlp;
    out.worst_ratio = kMaxUlp;
    out.worst_index = 0;
    return out;
  }
  auto note = [&](int64_t i, double ulps, double ratio, bool failed) {
    if (failed) ++out.failed_elements;
    if (out.worst_index < 0 || ratio > out.worst_ratio) {
      out.worst_ratio = ratio;
      out.worst_index = i;
    }
    out.max_ulp = std::max(out.max_ulp, ulps);
  };

  if (!is_float_dtype(dtype)) {
    // Element i equals ref's: bit for bit, or for bool the same truth value with a byte of 0 or 1.
    auto matches = [&](const std::vector<uint8_t> &ref, int64_t i) {
      if (dtype == PK_DTYPE_BOOL) return (actual[i] != 0) == (ref[i] != 0) && actual[i] <= 1;
      return std::memcmp(actual.data() + i * size, ref.data() + i * size, size) == 0;
    };
    for (int64_t i = 0; i < n; ++i) {
      bool same = matches(expected.rounded, i);
      // A composite's integer or bool output may also equal its program with rounded intermediates (linspace: the
      // f64 value start + i * step lands on either side of an integer depending on that rounding, then truncates;
      // isclose: |a - b| and atol + rtol |b| rounded to bf16 can meet where the exact values do not).
      if (!same && alternative != nullptr &&
          static_cast<int64_t>(alternative->rounded.size()) >= n * static_cast<int64_t>(size))
        same = matches(alternative->rounded, i);
      double d = same ? 0
                      : ulp_distance_bits(dtype, part_bits(dtype, actual.data(), i, 0),
                                          part_bits(dtype, expected.rounded.data(), i, 0));
      if (!same && d == 0) d = 1;  // a bool that is neither 0 nor 1
      out.histogram.add(d);
      note(i, d, same ? 0 : kMaxUlp, !same);
    }
    return out;
  }

  const BinaryFormat f = oracle::format_of(meta::real_of(dtype));
  const bool narrow = size / (meta::is_complex(dtype) ? 2 : 1) <= 2;
  const bool ftz = (tol.float_policy & PK_FLOAT_FLUSH_SUBNORMAL_OUTPUTS) != 0;
  const int parts = meta::is_complex(dtype) ? 2 : 1;

  // Output-wide scales: largest |expected| and its rms (finite values only).
  long double max_abs = 0, sum_sq = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const oracle::Wide &w = expected.wide[static_cast<size_t>(i)];
    long double m = std::max(std::fabs(w.re), std::fabs(w.im));
    if (std::isfinite(m)) {
      max_abs = std::max(max_abs, m);
      sum_sq += m * m;
      ++finite;
    }
  }
  const long double rms = finite ? std::sqrt(sum_sq / finite) : 0;
  const long double max_finite = oracle::format_value(largest_finite_bits(f), f);
  const bool wide_acc = meta::dtype_size(meta::real_of(dtype)) >= 8;
  const long double eps_acc = wide_acc ? std::ldexp(1.0L, -53) : std::ldexp(1.0L, -24);
  // Underflow in the accumulator (f32 for f32 and narrower, f64 for f64): below its smallest normal lambda a
  // rounding error is absolute, at most u lambda (half the smallest subnormal) per operation with gradual
  // underflow, and up to lambda itself on a device that declares flush-to-zero. A backend that flushes without
  // declaring it is off by up to 2^23 (2^52) times the first.
  const long double acc_min_normal = wide_acc ? std::ldexp(1.0L, -1022) : std::ldexp(1.0L, -126);
  const long double underflow_per_op = ftz ? acc_min_normal : eps_acc * acc_min_normal;

  // C11 Annex G.3: a complex value with at least one infinite part is an infinity, whatever its other part
  // (even NaN). Which parts of a complex infinity come out infinite or NaN depends on the order of the
  // arithmetic and on where the intermediates overflow (a product of huge c128 values overflows where the exact
  // one does not), so a complex infinity matches any complex infinity.
  auto complex_infinity = [&](const uint8_t *data, int64_t i) {
    return bits_inf(part_bits(dtype, data, i, 0), f) || bits_inf(part_bits(dtype, data, i, 1), f);
  };
  for (int64_t i = 0; i < n; ++i) {
    double worst_ulps = 0, worst_ratio = 0, hist_ulps = 0;
    bool failed = false, quality = false;
    if (parts == 2 && complex_infinity(actual.data(), i) &&
        (complex_infinity(expected.rounded.data(), i) ||
         (alternative != nullptr && complex_infinity(alternative->rounded.data(), i)))) {
      out.histogram.add(0);
      note(i, 0, 0, false);
      continue;
    }
    for (int part = 0; part < parts; ++part) {
      const uint64_t a = part_bits(dtype, actual.data(), i, part);
      const oracle::OutputValue *refs[2] = {&expected, alternative};
      double best_ulps = kMaxUlp, best_ratio = kMaxUlp, best_hist = kMaxUlp;
      bool best_failed = true, best_quality = false;
      for (const oracle::OutputValue *ref : refs) {
        if (ref == nullptr) continue;
        const uint64_t r = part_bits(dtype, ref->rounded.data(), i, part);
        const oracle::Wide &ww = ref->wide[static_cast<size_t>(i)];
        const long double w = part == 0 ? ww.re : ww.im;
        double dist = ulp_distance_bits(dtype, a, r);
        double ulps = dist, ratio = 0;
        bool bad = false, qual = false;
        const bool flushed_ok = ftz && bits_subnormal(r, f) && bits_zero(a, f);
        switch (tol.check.check) {
          case Check::exact:
          case Check::correctly_rounded: {
            bool same = a == r || (bits_nan(a, f) && bits_nan(r, f)) || flushed_ok ||
                        (tol.complex_zero_sign_free && bits_zero(a, f) && bits_zero(r, f));
            bad = !same;
            ratio = same ? 0 : kMaxUlp;
            if (!same && dist == 0) ulps = 1;  // only the sign of zero differs
            break;
          }
          case Check::ulp: {
            if (a == r || (bits_nan(a, f) && bits_nan(r, f)) || flushed_ok) {
              ulps = 0;
            } else {
              ulps = narrow ? dist : ulp_error(dtype, a, w);
              if (tol.check.absolute_near_zero && std::isfinite(w) && !bits_nan(a, f)) {
                // Rows whose doc promises an absolute error near the function's zeros: the ULP of 1 is the floor.
                long double av = oracle::format_value(a, f);
                if (std::isfinite(av))
                  ulps = std::min(ulps, static_cast<double>(std::fabs(av - w) / ulp_of(dtype, 1.0L)));
              }
              if (parts == 2 && std::isfinite(ww.re) && std::isfinite(ww.im) && !bits_nan(a, f)) {
                // Complex functions are held to their bound norm-wise: in ulps of the larger part. A part far
                // smaller than the other comes from cancellation (pow(-0.04 + 0i, -6.5 + 1e-38i) has a real part
                // 1e-19 of its imaginary one) and no method short of exact arithmetic gets it to a few of its own
                // ulps.
                const long double av = oracle::format_value(a, f);
                const long double big = std::max(std::fabs(ww.re), std::fabs(ww.im));
                if (std::isfinite(av) && big > 0)
                  ulps = std::min(ulps, static_cast<double>(std::fabs(av - w) / ulp_of(dtype, big)));
              }
            }
            ratio = tol.check.fail_limit > 0 ? ulps / tol.check.fail_limit : (ulps > 0 ? kMaxUlp : 0);
            bad = ulps > tol.check.fail_limit;
            qual = !bad && tol.check.quality_limit > 0 && ulps > tol.check.quality_limit;
            break;
          }
          case Check::reduction:
          case Check::composite_bound: {
            if (a == r || (bits_nan(a, f) && bits_nan(r, f)) || flushed_ok) {
              ulps = 0;
              break;
            }
            // An infinite magnitude means infinite terms: IEEE then fixes the result (±inf or NaN) exactly.
            const bool per_element = static_cast<size_t>(i) < tol.magnitude.size();
            const long double mag = per_element ? tol.magnitude[static_cast<size_t>(i)] : max_abs;
            long double reach = mag;
            if (static_cast<size_t>(i) < tol.overflow_scale.size())
              reach = std::max(reach, tol.overflow_scale[static_cast<size_t>(i)]);
            if (tol.check.check == Check::reduction && std::isfinite(mag) && reach > max_finite &&
                (!std::isfinite(oracle::format_value(a, f)) || !std::isfinite(oracle::format_value(r, f)) ||
                 std::fabs(oracle::format_value(a, f)) == max_finite)) {
              // The terms' magnitudes exceed the format's range: a partial sum may overflow (to inf, or to the
              // largest finite value / NaN in a finite-only format) in any summation order, so a non-finite or
              // saturated result is not an error of the reduction.
              ulps = 0;
              break;
            }
            if (tol.check.check == Check::reduction && tol.nonfinite_terms_any &&
                !std::isfinite(oracle::format_value(a, f)) && !std::isfinite(oracle::format_value(r, f))) {
              // See Tolerance::nonfinite_terms_any.
              ulps = 0;
              break;
            }
            if (bits_nan(a, f) || bits_nan(r, f) || std::isnan(w)) {
              ulps = ratio = kMaxUlp;
              bad = true;
              break;
            }
            long double av = oracle::format_value(a, f);
            if (std::isinf(av) || std::isinf(w)) {
              // A bound near overflow: the wide value may exceed the largest finite while the backend's
              // rounding stays finite (or the reverse). Judge by the rounded reference's distance.
              ulps = dist;
              bad = av != w && dist > 1;
              ratio = bad ? kMaxUlp : dist;
              break;
            }
            long double err = std::fabs(av - w);
            long double allowed;
            if (tol.check.check == Check::reduction) {
              // Plus the underflow term: up to 8 operations per term (a complex product and sum, an FFT's
              // butterflies along one output's dependency tree) each off by underflow_per_op.
              const long double n_terms = static_cast<long double>(std::max<int64_t>(tol.reduction_length, 1));
              allowed = ulp_of(dtype, w) + 2.0L * n_terms * eps_acc * mag + 8.0L * n_terms * underflow_per_op;
            } else if (static_cast<size_t>(i) < tol.sensitivity.size()) {
              allowed = tol.check.fail_limit * ulp_of(dtype, w) + tol.sensitivity[static_cast<size_t>(i)];
              if (static_cast<size_t>(i) < tol.absolute.size()) allowed += tol.absolute[static_cast<size_t>(i)];
            } else {
              allowed = tol.check.fail_limit * std::max(ulp_of(dtype, w), ulp_of(dtype, rms));
            }
            ulps = static_cast<double>(std::min<long double>(err / ulp_of(dtype, w), kMaxUlp));
            ratio = static_cast<double>(std::min<long double>(err / allowed, kMaxUlp));
            bad = err > allowed;
            break;
          }
        }
        if (ratio < best_ratio || (ratio == best_ratio && ulps < best_ulps)) {
          best_ratio = ratio;
          best_ulps = ulps;
          best_failed = bad;
          best_quality = qual;
          best_hist = flushed_ok ? 0 : dist;
        }
      }
      worst_ulps = std::max(worst_ulps, best_ulps);
      worst_ratio = std::max(worst_ratio, best_ratio);
      hist_ulps = std::max(hist_ulps, best_hist);
      failed = failed || best_failed;
      quality = quality || best_quality;
    }
    out.histogram.add(hist_ulps);
    out.quality_warning = out.quality_warning || quality;
    note(i, worst_ulps, worst_ratio, failed);
  }
  return out;
}

std::vector<long double> composite_sensitivity(const meta::OpInfo &op, const std::vector<oracle::HostTensor> &inputs,
                                               const void *attrs, size_t output, const oracle::OutputValue &expected) {
  bool wide64 = false;
  for (const oracle::HostTensor &t : inputs) {
    if (meta::is_complex(t.dtype)) return {};
    wide64 = wide64 || t.dtype == PK_DTYPE_F64;
  }
  const long double e = (op.contract.ulp > 0 ? op.contract.ulp : 1) * std::ldexp(1.0L, wide64 ? -53 : -24);
  std::vector<long double> worst(expected.wide.size(), 0);
  for (int sign : {1, -1}) {
    std::vector<oracle::HostTensor> moved = inputs;
    for (size_t k = 0; k < moved.size(); ++k) {
      oracle::HostTensor &t = moved[k];
      if (!meta::is_float(t.dtype)) continue;
      const size_t size = meta::dtype_size(t.dtype);
      const size_t count = t.storage.size() / size;
      std::vector<uint8_t> storage(count * 8);
      for (size_t j = 0; j < count; ++j) {
        oracle::Wide w = oracle::load_element(t.storage.data() + j * size, t.dtype);
        const int s = ((j * 0x9e3779b97f4a7c15ull + k * 0xbf58476d1ce4e5b9ull) >> 61) & 1 ? sign : -sign;
        if (std::isfinite(w.re)) w.re *= 1 + s * e;
        oracle::store_rounded(w, PK_DTYPE_F64, storage.data() + j * 8);
      }
      t.byte_offset = t.byte_offset / size * 8;
      t.storage = std::move(storage);
      t.dtype = PK_DTYPE_F64;
    }
    std::vector<oracle::OutputValue> outs;
    if (!oracle::evaluate(op.id, moved, attrs, outs).ok() || output >= outs.size() ||
        outs[output].wide.size() != worst.size())
      return {};
    for (size_t i = 0; i < worst.size(); ++i) {
      const long double d = std::fabs(outs[output].wide[i].re - expected.wide[i].re);
      if (std::isnan(d)) continue;  // non-finite references are judged by their own rules
      worst[i] = std::max(worst[i], d);
    }
  }
  return worst;
}

std::vector<long double> composite_absolute(const meta::OpInfo &op, const std::vector<oracle::HostTensor> &inputs,
                                            const oracle::OutputValue &expected) {
  if (op.contract.kind != meta::Contract::bound || op.contract.scale == meta::BoundScale::none) return {};
  const size_t n = expected.wide.size();
  const long double u = std::ldexp(1.0L, expected.dtype == PK_DTYPE_F64 ? -53 : -24);
  const long double factor = (op.contract.ulp > 0 ? op.contract.ulp : 1) * u;
  std::vector<long double> out(n, 0);
  if (op.contract.scale == meta::BoundScale::output) {
    long double m = 0;
    for (const oracle::Wide &w : expected.wide)
      if (std::isfinite(w.re)) m = std::max(m, std::fabs(w.re));
    std::fill(out.begin(), out.end(), factor * m);
    return out;
  }
  for (const oracle::HostTensor &t : inputs) {
    if (!meta::is_float(t.dtype) || static_cast<size_t>(t.numel()) != n) continue;
    for (size_t i = 0; i < n; ++i) {
      const long double x = std::fabs(t.at(static_cast<int64_t>(i)).re);
      if (std::isfinite(x)) out[i] = std::max(out[i], factor * x);
    }
  }
  return out;
}

std::vector<oracle::HostTensor> magnitude_inputs(const std::vector<oracle::HostTensor> &inputs, bool at_least_one) {
  std::vector<oracle::HostTensor> out = inputs;
  for (oracle::HostTensor &t : out) {
    if (!meta::is_float(t.dtype) && !meta::is_complex(t.dtype)) continue;
    const size_t size = meta::dtype_size(t.dtype);
    for (size_t off = 0; off + size <= t.storage.size(); off += size) {
      oracle::Wide w = oracle::load_element(t.storage.data() + off, t.dtype);
      oracle::Wide m;
      m.re = std::fabs(w.re) + std::fabs(w.im);
      if (std::isnan(m.re)) m.re = 0;  // garbage between elements stays harmless
      if (at_least_one) m.re = std::max<long double>(m.re, 1);
      // |re| + |im| of a finite complex element may exceed the format (DBL_MAX + DBL_MAX): it saturates, since an
      // infinity here would stand for an infinite term that is not there (and meet a zero as NaN in the bound).
      // Infinite elements stay infinite: they are the infinite terms that fix a result exactly.
      const bool finite = std::isfinite(w.re) && std::isfinite(w.im);
      oracle::store_rounded(m, t.dtype, t.storage.data() + off,
                            finite ? oracle::Overflow::saturate : oracle::Overflow::standard);
    }
  }
  return out;
}

}  // namespace detail

}  // namespace pk::conformance
