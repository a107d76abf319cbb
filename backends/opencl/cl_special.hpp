// cl_special.hpp — OpenCL C for the special functions of the primitive tier that OpenCL C has no builtin for
// (erf_inv, erfcx, digamma, ndtri, Bessel I0/I1/J0/J1 and spherical j0, the regularized incomplete gamma, Hurwitz
// zeta) and for nextafter of bf16/fp8. They are evaluated in double (double-double where double alone would miss
// the f64 contract), so they need cl_khr_fp64; each program carries only the helpers its ops use.
#pragma once

#include <cstdint>
#include <string>

#include "cl_codegen.hpp"

namespace pk::ocl {

// Whether `op` is one of the ops generated here.
bool special_op(uint32_t op);

// The expression of a special op over compute-typed scalar operands a[] of dtype t (compute type C); "" when it
// is not generated for t (why says so).
std::string special_expr(uint32_t op, int32_t t, const std::string *a, const std::string &C, const DeviceCaps &caps,
                         std::string *why);

// Which helper functions op needs with type-variable dtype t (0: none), and the OpenCL C of a union of such bits
// (dependencies included), for the program to carry ahead of its kernels.
uint32_t special_helper_bits(uint32_t op, int32_t t);
std::string special_helpers(uint32_t bits);

}  // namespace pk::ocl
