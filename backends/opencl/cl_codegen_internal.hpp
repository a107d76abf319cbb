// cl_codegen_internal.hpp — what the OpenCL C generator's files share (private to backends/opencl): the OpenCL C
// types of each dtype, the loads, stores and conversions between compute types, and the prelude every program
// carries. Defined in cl_codegen.cpp (with the elementwise generator); used by cl_codegen_reduce.cpp (reductions,
// scans, sorting, var), cl_codegen_linalg.cpp (matmul, dot_general, convolution) and cl_codegen_data.cpp
// (creation, data movement, RNG, host-side constants).
#pragma once

#include <cstdint>
#include <string>

#include "cl_codegen.hpp"

namespace pk::ocl {

// The OpenCL C types of a dtype.
struct ClType {
  const char *st;  // storage type
  const char *ct;  // compute type
  const char *ut;  // unsigned type of the same width (integers)
  int bits;
  bool flt;    // a floating-point dtype
  bool small;  // stored narrower than it computes (bf16, fp8)
  bool sgn;    // signed integer
  bool boolean;
};

const ClType &cl_type(int32_t dt);
bool is_int(int32_t dt);
bool is_flt(int32_t dt);
bool is_cx(int32_t dt);
// The real dtype of a complex one's parts (real_of), and the complex dtype of a real one (complex_of).
int32_t part_dt(int32_t dt);
// Decodes a storage lvalue into the compute type.
std::string load_expr(int32_t dt, const std::string &x);
// Encodes a compute value into storage (one rounding for the narrow formats).
std::string store_expr(int32_t dt, const std::string &v);
// The helpers every program carries (bf16 and fp8 storage formats, pk_dims; the f64 ones when the device has it).
std::string prelude(const DeviceCaps &caps);
// A conversion of compute value x (of src) into dst's compute type, rounding once to dst's format.
std::string convert_expr(int32_t src, int32_t dst, const std::string &x, const DeviceCaps &caps);

}  // namespace pk::ocl
