// cl_codegen_internal.hpp — what the OpenCL C generator's files share (private to backends/opencl): the OpenCL C
// types of each dtype, the loads, stores and conversions between compute types, and the prelude every program
// carries, the expression of each elementwise op, and the accumulators of the reductions. Defined in
// cl_codegen.cpp (with the elementwise generator) and cl_codegen_reduce.cpp (reductions, scans, sorting, var);
// used by cl_codegen_linalg.cpp (matmul, dot_general, convolution), cl_codegen_data.cpp (creation, data movement,
// RNG, host-side constants) and cl_region_printer.cpp (the fusion planner's regions as OpenCL C).
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

// The expression of one elementwise op over compute-typed operands a[] (of dtype t, the op's type variable), in the
// compute type `C` (a scalar or vector type name). `variant` and `const_bits` as in EwNode. Returns "" when the op
// has no kernel for t (why says so). What every generated elementwise kernel, fused or not, prints per node.
std::string op_expr(uint32_t op, int32_t t, int32_t out_dt, uint32_t variant, uint64_t const_bits, const std::string *a,
                    const std::string &C, const DeviceCaps &caps, std::string *why);
// Whether op_expr's expression of an op over dtype vt (f32 or f64) is valid for vectors of vt unchanged (`variant`
// as in EwNode), and the width the generated vector code uses for vt.
bool vector_node(uint32_t op, int32_t vt, uint32_t variant, const DeviceCaps &caps);
uint32_t vector_width(int32_t vt);
// The type variable's dtype of a node: where's is its second input, copy_to's either; otherwise input 0.
int32_t type_var_dtype(uint32_t op, const int32_t *in_dtypes, uint32_t num_inputs);

// How a reduction of dtype `dt` accumulates (cl_codegen_reduce.cpp): what gen_reduction's kernels fold with, and
// what the fused row programs fold with, so a fused softmax sums exactly as the sum kernel does. Real and integer
// dtypes only (complex sums and products fold through cl_complex's helpers, in gen_reduction alone).
struct RedCode {
  std::string acc;         // accumulator type
  std::string init;        // identity: an expression of the accumulator type
  std::string combine;     // body of `acc f(acc a, acc x)`
  bool float_acc = false;  // folds with the helpers of float_accumulators() (f64 sums and float products)
  int32_t dt = 0;
  uint32_t op = 0;
  // The accumulator term of compute value x.
  std::string lift(const std::string &x) const;
  // The compute value of the result (of dtype dt) from accumulator v over n terms (an expression of type ulong;
  // mean divides by it); not yet rounded to a narrow storage format.
  std::string finish(const std::string &v, const std::string &n) const;
};
RedCode red_code(uint32_t op, int32_t dt, const DeviceCaps &caps);
// The program text of the f64-sum and float-product accumulators.
const char *float_accumulators();

}  // namespace pk::ocl
