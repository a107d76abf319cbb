// cxx_consumer.cpp — primkit.h must compile as C++17 with -pedantic and every warning an error.
#include "primkit/primkit.h"
#include "primkit/primkit_collectives.h"

int pk_cxx_consumer_check();
int pk_cxx_consumer_check() {
  pk_tensor t;
  PK_STRUCT_INIT(t);
  pk_attrs_softmax s = PK_ATTRS_SOFTMAX_INIT;
  return static_cast<int>(t.struct_size + s.struct_size);
}
