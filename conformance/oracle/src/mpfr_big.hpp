// mpfr_big.hpp — an RAII mpfr_t for the oracle's kernels that need more than long double.
#pragma once

#include <mpfr.h>

namespace pk::oracle {

// An mpfr_t that frees itself.
class Big {
 public:
  explicit Big(mpfr_prec_t prec) { mpfr_init2(v_, prec); }
  Big(mpfr_prec_t prec, long double x) : Big(prec) { mpfr_set_ld(v_, x, MPFR_RNDN); }
  ~Big() { mpfr_clear(v_); }
  Big(const Big &) = delete;
  Big &operator=(const Big &) = delete;
  mpfr_ptr get() { return v_; }
  operator mpfr_ptr() { return v_; }

 private:
  mpfr_t v_;
};

}  // namespace pk::oracle
