/* abi_layout_dump.c — prints "struct size N" and "struct.field offset size" for every ABI struct, compiled
 * as C99: the layout a C plugin sees is the one that is frozen. tests/abi/check_layout.py compares it with the
 * released layout files. Also the enum values that are part of the ABI. */
#include <stddef.h>
#include <stdio.h>

#include "primkit/primkit.h"

#define PK_LAYOUT_STRUCT(T) printf("%s size %zu\n", #T, sizeof(T));
#define PK_LAYOUT_FIELD(T, F) printf("%s.%s offset %zu size %zu\n", #T, #F, offsetof(T, F), sizeof(((T *)0)->F));

int main(void) {
#include "core_layout.inc"
#include "generated/attrs_layout.inc"
  printf("PK_ABI_VERSION value %u\n", (unsigned)PK_ABI_VERSION_MAJOR);
  printf("PK_UNIMPLEMENTED value %d\n", PK_UNIMPLEMENTED);
  printf("PK_NOT_READY value %d\n", PK_NOT_READY);
  printf("PK_DTYPE_COUNT value %d\n", PK_DTYPE_COUNT);
  return 0;
}
