// oracle.hpp — the PrimKit conformance ORACLE: a small, readable reference interpreter of the whole op table.
//
// The oracle is the executable specification every backend is measured against. It is deliberately
// independent of every backend (it shares no code with backends/*) and uses only the op table's metadata
// (pk::meta: op rows, attribute layouts, shape rules, decompositions).
//
// What it computes
// ----------------
// evaluate() runs one op on host tensors and returns, for every output element, two things:
//   * the WIDE value: the result computed in higher precision than the output dtype, before any rounding
//     to the output format. Real values are `long double` (x87 80-bit, 64-bit significand); complex values
//     are a (re, im) pair of long doubles; integer and bool outputs hold the exact integer (every i64 fits
//     a 64-bit significand exactly).
//   * the ROUNDED value: the wide value rounded ONCE to the output dtype (round to nearest, ties to even,
//     with the table's overflow rules), as the bytes of that dtype.
// Composite ops are evaluated by running their decomposition (pk::meta::decompose) with every
// intermediate kept wide (never rounded to the intermediate's dtype); only the composite's outputs are
// rounded. Integer and bool intermediates are exact integers with the table's wrap-around semantics.
//
// Precision (see docs in conformance/oracle/README.md for the full list of gaps):
//   * + - * / sqrt fma of real values are computed in long double and ROUNDED TO ODD in 64 bits (error-free
//     transformations give the sign of the rounding error). Rounding a round-to-odd value once more to any
//     format of at most 62 significand bits is the correct rounding of the exact result, so these ops are
//     correctly rounded for every float dtype INCLUDING f64 (where plain long double would double-round).
//   * Transcendental functions use glibc's long double functions (<= a few ulp of 2^-64): correctly rounded
//     for f32 and narrower except in astronomically rare near-midpoint cases; for f64 the 11 spare bits mean
//     the rounded f64 can be off by one ulp in ~0.1% of cases. Conformance should measure backends against
//     the WIDE value, which is within ~2^-62 relative of the truth.
//   * Sums, dot products, matmul and convolution accumulate with compensated (two-sum / two-product) long
//     double arithmetic: effectively ~120 bits, far closer to the truth than any backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "primkit/primkit.h"

namespace pk::oracle {

// One element in wide precision. For real and integer dtypes only `re` is used (im == 0).
struct Wide {
  long double re = 0;
  long double im = 0;
};

// A host tensor: owned storage plus a strided view into it, as a pk_tensor describes one.
struct HostTensor {
  int32_t dtype = PK_DTYPE_F32;  // PK_DTYPE_*
  std::vector<int64_t> shape;    // extents, each >= 0; empty = a scalar (one element)
  std::vector<int64_t> strides;  // in ELEMENTS (may be 0 or negative); empty = row-major contiguous
  uint64_t byte_offset = 0;      // bytes from storage.data() to element (0, ..., 0)
  std::vector<uint8_t> storage;  // the bytes the view reads

  int64_t numel() const;
  // Row-major contiguous tensor of `shape` whose bytes are `bytes` (must be numel * element size).
  static HostTensor contiguous(int32_t dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
  // Row-major contiguous tensor from values, each rounded once to dtype (exact for values the dtype holds).
  static HostTensor from_values(int32_t dtype, std::vector<int64_t> shape, const std::vector<long double> &values);
  static HostTensor from_complex(int32_t dtype, std::vector<int64_t> shape, const std::vector<Wide> &values);
  // Copies the elements a host-visible pk_tensor reaches (its `data` must be dereferenceable on the CPU).
  static HostTensor from_pk_tensor(const pk_tensor &t);
  // The element at row-major index `i` of the view, exactly, as a wide value.
  Wide at(int64_t i) const;
};

// One output of an evaluation.
struct OutputValue {
  int32_t dtype = PK_DTYPE_F32;
  std::vector<int64_t> shape;
  std::vector<Wide> wide;        // numel entries, row-major: the unrounded result
  std::vector<uint8_t> rounded;  // numel * element size bytes, row-major: wide rounded once to dtype

  int64_t numel() const;
  // The rounded element i decoded back to a wide value (exact).
  Wide rounded_at(int64_t i) const;
  // The rounded element i as its raw bit pattern (element size <= 8 bytes; for complex the real part's bits
  // in the low half and the imaginary part's in the high half for c64; c128 returns the real part's bits).
  uint64_t rounded_bits(int64_t i) const;
};

// Status of an evaluation: PK_OK; PK_UNIMPLEMENTED (the oracle has no correct implementation of this op or
// dtype — it never guesses); PK_ERROR_INVALID_ARGUMENT (the launch breaks the op table's rules). `message`
// says why.
struct Result {
  pk_status status = PK_OK;
  std::string message;
  bool ok() const { return status == PK_OK; }
};

// Evaluates op `op_id` on `inputs` with `attrs` (the op's pk_attrs_<op> struct with struct_size set, or
// nullptr for ops without attributes or whose attributes all have defaults). On success `outputs` holds one
// OutputValue per op output, with the shapes and dtypes of the op's shape and dtype rules.
Result evaluate(uint32_t op_id, const std::vector<HostTensor> &inputs, const void *attrs,
                std::vector<OutputValue> &outputs);
// Same, by op name ("add", "softmax", ...).
Result evaluate(std::string_view op_name, const std::vector<HostTensor> &inputs, const void *attrs,
                std::vector<OutputValue> &outputs);

// Where a composite changes formula: runs its decomposition (pk::meta::decompose) on `inputs` and returns, for
// every node whose first result has one value per element of the op's first output and is either bool (a
// comparison, the condition of a `where`) or a maximum / minimum (which operand it took), that value per element
// (0 or 1). Empty for primitives, whose formulas are their implementations' own. The conformance suite bisects
// between inputs whose conditions differ, so its threshold cases land on the table's own branch points
// (softplus's threshold, hardswish's +-3, elu's 0).
Result decomposition_conditions(uint32_t op_id, const std::vector<HostTensor> &inputs, const void *attrs,
                                std::vector<std::vector<uint8_t>> &conditions);

// Builds an op's attribute struct (normalized: struct_size set, defaults filled) from `key=value` strings:
// i64/f64 numbers, bool true/false/1/0, dtype names (f32), enum value names (half_to_even) and int lists
// written `1,2,3` or `[1,2,3]` (empty: `[]`). `out` receives the struct bytes (empty if the op has no
// attributes).
Result build_attrs(uint32_t op_id, const std::vector<std::pair<std::string, std::string>> &kv,
                   std::vector<uint8_t> &out);

// Whether the oracle implements an op at all (some dtypes of an implemented op may still be unimplemented).
bool implements(uint32_t op_id);
// Ops of the table the oracle cannot evaluate, with the reason, for reports.
std::vector<std::pair<std::string, std::string>> unimplemented_ops();

// --- numerics, exposed for tests and for the conformance comparator --------------------------------------

// A binary floating-point format: `exp_bits` exponent bits, `man_bits` stored significand bits.
// `ieee`: the largest exponent encodes inf (mantissa 0) and NaN (else). Otherwise the format is finite-only
// (fp8 e4m3fn): only exponent and mantissa all ones is NaN, the rest of the top binade is finite.
struct BinaryFormat {
  int exp_bits;
  int man_bits;
  bool ieee;
};
enum class Overflow {
  standard,  // IEEE formats: overflow rounds to inf; finite-only formats: to NaN (as ml_dtypes does)
  saturate   // finite overflow and inf become the largest finite value of the sign (NaN stays NaN)
};
BinaryFormat format_of(int32_t dtype);  // f16 bf16 f32 f64 f8e4m3fn f8e5m2 (and the parts of c64/c128)
// Rounds x once to the format, round to nearest, ties to even, keeping subnormals; returns the bit pattern.
// NaN becomes the quiet NaN of x's sign (exponent all ones, top mantissa bit; all mantissa bits for a
// finite-only format). Zero keeps its sign.
uint64_t round_to_format(long double x, const BinaryFormat &f, Overflow overflow = Overflow::standard);
// The exact value of a bit pattern of the format.
long double format_value(uint64_t bits, const BinaryFormat &f);

// Rounds a wide value once to dtype and stores it at dst (element size bytes). Integer and bool dtypes take
// the wide value as an exact integer already in range (the ops' semantics produce it).
void store_rounded(const Wide &w, int32_t dtype, void *dst, Overflow overflow = Overflow::standard);
// Reads one element of dtype exactly.
Wide load_element(const void *src, int32_t dtype);

// Philox4x32-10 (Salmon et al., SC'11): 4 x 32-bit counter words, 2 x 32-bit key words, 10 rounds.
void philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

}  // namespace pk::oracle
