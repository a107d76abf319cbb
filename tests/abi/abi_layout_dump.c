/* abi_layout_dump.c — prints "struct size N" and "struct.field offset size" for every ABI struct, compiled
 * as C99: the layout a C plugin sees is the one that is frozen. tests/abi/check_layout.py compares it with the
 * released layout files. Also the enum values that are part of the ABI. */
#include <stddef.h>
#include <stdio.h>

#include "primkit/primkit_collectives.h"

#define PK_LAYOUT_STRUCT(T) printf("%s size %zu\n", #T, sizeof(T));
#define PK_LAYOUT_FIELD(T, F) printf("%s.%s offset %zu size %zu\n", #T, #F, offsetof(T, F), sizeof(((T *)0)->F));

int main(void) {
#include "core_layout.inc"
#include "collectives_layout.inc"
#include "generated/attrs_layout.inc"
  printf("PK_ABI_VERSION value %u\n", (unsigned)PK_ABI_VERSION_MAJOR);
  printf("PK_UNIMPLEMENTED value %d\n", PK_UNIMPLEMENTED);
  printf("PK_NOT_READY value %d\n", PK_NOT_READY);
  printf("PK_DTYPE_COUNT value %d\n", PK_DTYPE_COUNT);
  printf("PK_ERROR_TIMEOUT value %d\n", PK_ERROR_TIMEOUT);
  printf("PK_ERROR_COMM_FAILED value %d\n", PK_ERROR_COMM_FAILED);
  printf("PK_REDUCE_AVG value %d\n", PK_REDUCE_AVG);
  printf("PK_COLLECTIVE_RECV value %d\n", PK_COLLECTIVE_RECV);
  printf("PK_COMM_UNIQUE_ID_BYTES value %d\n", PK_COMM_UNIQUE_ID_BYTES);
  return 0;
}
