/* devmath.c — the device math as one C99 translation unit, compiled by clang to LLVM bitcode for each target of
   the code generator (sdk/codegen/CMakeLists.txt). The code generator links the functions a kernel calls into it
   and defines the few primitives port.h leaves external with its own IR math. */
#include "port.h"
/* clang-format off */
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
/* clang-format on */
