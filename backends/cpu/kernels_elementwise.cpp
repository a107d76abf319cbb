// kernels_elementwise.cpp — the elementwise primitives: unary, binary, comparisons, where and fma, conversion,
// clone and fill, creation and counter-based RNG, for every dtype each op admits.
//
// The kernels live in one file per op family on the drivers of elementwise.hpp: elementwise_unary.cpp (unary
// ops, predicates, real-valued results of complex inputs), elementwise_special.cpp (the special functions they
// use), elementwise_binary.cpp (binary and comparison ops, where and fma) and elementwise_creation.cpp
// (conversion, clone and fill, creation, RNG). This file registers them all.
#include "cpu_kernels.hpp"
#include "elementwise.hpp"

namespace pk::cpu {

void register_elementwise_kernels(KernelRegistry &r) {
  elementwise::register_unary_kernels(r);
  elementwise::register_fill_kernel(r);
  elementwise::register_binary_kernels(r);
  elementwise::register_ternary_kernels(r);
  elementwise::register_conversion_creation_kernels(r);
}

}  // namespace pk::cpu
