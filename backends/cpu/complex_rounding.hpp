// complex_rounding.hpp — complex pow where its phase b log(a) is too large for long double, computed with MPFR.
// (The correctly rounded products, quotients, moduli and square roots are the device math's, sdk/devmath/complex.h.)
#pragma once

#include <complex>

namespace pk::cpu {

// a^b = exp(b log a) with b log a in as many bits as its size needs (MPFR): for |b log a| beyond what long
// double's 64 bits reduce modulo 2 pi to the contract's accuracy. a finite and non-zero, b finite.
std::complex<float> wide_phase_pow(std::complex<float> a, std::complex<float> b);
std::complex<double> wide_phase_pow(std::complex<double> a, std::complex<double> b);

}  // namespace pk::cpu
