// devmath.hpp — the device math (port.h, dd.h, bignum.h, erf.h, zeta.h, digamma.h, bessel.h, igamma.h, complex.h,
// cpow.h) as C++: inline functions pk::devmath::pk_dm_*, on the std:: primitives. The same files are the OpenCL
// backend's source text and, compiled to LLVM bitcode (devmath.c), the code generator's; a fix made in them reaches
// every backend.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace pk::devmath {

// The files are fragments written for three languages (port.h says how); they are included here, inside the
// namespace, once each and in dependency order.
#include "port.h"
// clang-format off
#include "dd.h"
#include "bignum.h"
#include "erf.h"
#include "zeta.h"
#include "digamma.h"
#include "bessel.h"
#include "igamma_temme.h"
#include "igamma.h"
#include "complex.h"
#include "cpow.h"
// clang-format on

}  // namespace pk::devmath
