// complex_rounding.hpp — complex results the op table contracts correctly rounded per part (div, reciprocal,
// sqrt, abs), and pow where its phase b log(a) is too large for long double.
//
// Each part is computed in binary128 (GCC's __float128) with an error bound; when that approximation is too
// close to a rounding boundary of the output format to decide, or leaves the format's range, the part is
// recomputed exactly with MPFR (Ziv's strategy). Finite operands only: infinities, NaNs and zero divisors keep
// C99 Annex G's special values through std::complex, as the callers arrange.
#pragma once

#include <complex>

namespace pk::cpu {

std::complex<float> correctly_rounded_div(std::complex<float> a, std::complex<float> b);
std::complex<double> correctly_rounded_div(std::complex<double> a, std::complex<double> b);
std::complex<float> correctly_rounded_sqrt(std::complex<float> z);
std::complex<double> correctly_rounded_sqrt(std::complex<double> z);
float correctly_rounded_abs(std::complex<float> z);
double correctly_rounded_abs(std::complex<double> z);

// a^b = exp(b log a) with b log a in as many bits as its size needs (MPFR): for |b log a| beyond what long
// double's 64 bits reduce modulo 2 pi to the contract's accuracy. a finite and non-zero, b finite.
std::complex<float> wide_phase_pow(std::complex<float> a, std::complex<float> b);
std::complex<double> wide_phase_pow(std::complex<double> a, std::complex<double> b);

}  // namespace pk::cpu
