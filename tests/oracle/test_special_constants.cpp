// The device math's fixed-point constant tables (complex pow's exact path, sdk/devmath/cpow.h) against MPFR: every
// 32-bit word of ln 2, pi / 4 and 1 / (2 pi), computed here at 1400 bits (independent of the mpmath run that wrote
// the tables).
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cstdint>
#include <functional>

#include "devmath.hpp"

namespace {

// The first 40 words of the binary fraction of a value in (0, 1) that `make` sets.
void expect_words(const std::uint32_t (&table)[40], const std::function<void(mpfr_t)> &make, const char *name) {
  mpfr_t v, w;
  mpfr_inits2(1400, v, w, static_cast<mpfr_ptr>(nullptr));
  make(v);
  for (int j = 0; j < 40; ++j) {
    mpfr_mul_2ui(v, v, 32, MPFR_RNDN);  // exact
    mpfr_floor(w, v);
    const auto word = static_cast<std::uint32_t>(mpfr_get_ui(w, MPFR_RNDZ));
    EXPECT_EQ(table[j], word) << name << " word " << j;
    mpfr_sub(v, v, w, MPFR_RNDN);  // exact: the fraction
  }
  mpfr_clears(v, w, static_cast<mpfr_ptr>(nullptr));
}

TEST(SpecialConstants, FixedPointTablesMatchMpfr) {
  namespace dm = pk::devmath;
  expect_words(
      dm::pk_dm_ln2_words, [](mpfr_t v) { mpfr_const_log2(v, MPFR_RNDN); }, "ln 2");
  expect_words(
      dm::pk_dm_pi4_words,
      [](mpfr_t v) {
        mpfr_const_pi(v, MPFR_RNDN);
        mpfr_div_2ui(v, v, 2, MPFR_RNDN);
      },
      "pi / 4");
  expect_words(
      dm::pk_dm_inv2pi_words,
      [](mpfr_t v) {
        mpfr_const_pi(v, MPFR_RNDN);
        mpfr_mul_2ui(v, v, 1, MPFR_RNDN);
        mpfr_ui_div(v, 1, v, MPFR_RNDN);
      },
      "1 / (2 pi)");
}

}  // namespace
