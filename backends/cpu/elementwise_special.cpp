// elementwise_special.cpp — the special functions of the elementwise kernels that glibc does not round well enough:
// cbrt (refined in long double). erf_inv, ndtri, erfcx, lgamma, digamma, the Bessel functions, the incomplete gamma
// functions and Hurwitz zeta are the device math's (sdk/devmath), shared with the other backends.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "elementwise.hpp"

namespace pk::cpu::elementwise {

// --- special functions (double unless said) -------------------------------------------------------------------------

// glibc's cbrt is within ~3 ulp; one Newton step in long double brings it inside 1.
double cbrt_value(double x) {
  const double y = std::cbrt(x);
  if (y == 0 || !std::isfinite(y)) return y;
  const long double ly = y;
  return static_cast<double>(ly - (ly * ly * ly - x) / (3 * ly * ly));
}

}  // namespace pk::cpu::elementwise
