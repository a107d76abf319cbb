/* c99_consumer.c — primkit.h and primkit_collectives.h must compile as strict C99 with every warning an error. This file uses the
 * macros and every initializer so that a C-only construct error shows up here, not in a vendor's build. */
#include "primkit/primkit.h"
#include "primkit/primkit_collectives.h"

int pk_c99_consumer_check(void);
int pk_c99_consumer_check(void) {
  pk_tensor t;
  pk_attrs_sum sum = PK_ATTRS_SUM_INIT;
  pk_dtype f32 = PK_DTYPE_F32_DESC;
  pk_backend_entry_fn entry = 0;
  pk_comm_options options;
  pk_comm_unique_id id;
  PK_STRUCT_INIT(t);
  PK_STRUCT_INIT(options);
  PK_STRUCT_INIT(id);
  options.unique_id = &id;
  t.dtype = f32;
  (void)entry;
  return (int)(t.struct_size + options.struct_size + sum.struct_size + PK_VERSION_MAJOR(PK_ABI_VERSION));
}
