// cl_complex.hpp — OpenCL C helpers of the complex dtypes (products, quotients, moduli, elementary functions),
// carried by programs that compute with c64 / c128 values (see cl_special.cpp's helper bits).
#pragma once

namespace pk::ocl {

// The helpers' OpenCL C; needs cl_khr_fp64 and the double-double helpers ahead of it.
const char *complex_source();

}  // namespace pk::ocl
