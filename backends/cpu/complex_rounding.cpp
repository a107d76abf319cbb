// complex_rounding.cpp — see complex_rounding.hpp.
#include "complex_rounding.hpp"

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace pk::cpu {
namespace {

// An mpfr_t that frees itself.
class Mp {
 public:
  explicit Mp(mpfr_prec_t prec) { mpfr_init2(v_, prec); }
  Mp(mpfr_prec_t prec, double x) : Mp(prec) { mpfr_set_d(v_, x, MPFR_RNDN); }
  ~Mp() { mpfr_clear(v_); }
  Mp(const Mp &) = delete;
  Mp &operator=(const Mp &) = delete;
  operator mpfr_ptr() { return v_; }

 private:
  mpfr_t v_;
};

// Rounding to odd at 66 bits (truncate; if inexact, make the last bit 1) and then once to T's 24 or 53 bits is
// the correct rounding of the exact value, subnormal and overflowing results included (Boldo & Melquiond).
template <class T>
T round_odd_then_to(mpfr_ptr truncated66, int ternary) {
  if (ternary != 0 && mpfr_regular_p(truncated66) && mpfr_min_prec(truncated66) < 66) {
    if (mpfr_sgn(truncated66) > 0)
      mpfr_nextabove(truncated66);
    else
      mpfr_nextbelow(truncated66);
  }
  if constexpr (std::is_same_v<T, float>)
    return mpfr_get_flt(truncated66, MPFR_RNDN);
  else
    return mpfr_get_d(truncated66, MPFR_RNDN);
}

template <class T>
std::complex<T> pow_impl(std::complex<T> a, std::complex<T> b) {
  // The phase b.re arg(a) + b.im ln|a| keeps all its bits (|b| up to 2^1024, |ln|a|| below 2^10), then MPFR's
  // sin and cos reduce it modulo 2 pi exactly; 200 bits beyond the output's cover the remaining roundings.
  const double top =
      std::max({std::fabs(static_cast<double>(b.real())), std::fabs(static_cast<double>(b.imag())), 1.0});
  const mpfr_prec_t p = 256 + std::ilogb(top) + 16;
  Mp ar(p, a.real()), ai(p, a.imag()), br(p, b.real()), bi(p, b.imag());
  Mp log_abs(p), arg(p), w_re(p), w_im(p), t(p);
  mpfr_hypot(log_abs, ar, ai, MPFR_RNDN);
  mpfr_log(log_abs, log_abs, MPFR_RNDN);
  mpfr_atan2(arg, ai, ar, MPFR_RNDN);
  mpfr_mul(w_re, br, log_abs, MPFR_RNDN);
  mpfr_mul(t, bi, arg, MPFR_RNDN);
  mpfr_sub(w_re, w_re, t, MPFR_RNDN);
  mpfr_mul(w_im, br, arg, MPFR_RNDN);
  mpfr_mul(t, bi, log_abs, MPFR_RNDN);
  mpfr_add(w_im, w_im, t, MPFR_RNDN);
  Mp scale(p), cos_w(p), sin_w(p), out(66);
  mpfr_exp(scale, w_re, MPFR_RNDN);
  mpfr_sin_cos(sin_w, cos_w, w_im, MPFR_RNDN);
  mpfr_mul(cos_w, cos_w, scale, MPFR_RNDN);
  mpfr_mul(sin_w, sin_w, scale, MPFR_RNDN);
  const T re = round_odd_then_to<T>(out, mpfr_set(out, cos_w, MPFR_RNDZ));
  const T im = round_odd_then_to<T>(out, mpfr_set(out, sin_w, MPFR_RNDZ));
  return {re, im};
}

}  // namespace

std::complex<float> wide_phase_pow(std::complex<float> a, std::complex<float> b) {
  return pow_impl(a, b);
}
std::complex<double> wide_phase_pow(std::complex<double> a, std::complex<double> b) {
  return pow_impl(a, b);
}

}  // namespace pk::cpu
