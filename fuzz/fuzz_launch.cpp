// fuzz_launch — pk_launch through the public ABI on the cpu backend (and cuda-emu when the input asks): an op's
// valid example launch, then descriptor and attribute mutations from the input (launch_builder.hpp). Valid
// launches run real kernels on real memory; invalid ones must be refused with a status, writing nothing.
#include "launch_builder.hpp"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  pkfuzz::init_launch_harness();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pkfuzz::Reader r(data, size);
  pkfuzz::FuzzLaunch l;
  if (!l.decode(r) || !l.materialize(r)) return 0;
  pk_status st = pk_launch(*l.stream, l.op->id, l.in_desc.data(), static_cast<uint32_t>(l.in_desc.size()),
                           l.out_desc.data(), static_cast<uint32_t>(l.out_desc.size()), l.attrs.get());
  if (st != PK_OK) {
    pk_error_info e;
    PK_STRUCT_INIT(e);
    PKFUZZ_CHECK(pk_get_last_error(&e) == PK_OK, "pk_get_last_error after a failed launch");
    PKFUZZ_CHECK(e.status == st, "the last error's status is the launch's");
    PKFUZZ_CHECK(std::memchr(e.message, 0, sizeof(e.message)) != nullptr, "the message is NUL-terminated");
  }
  pk_status sync = pk_stream_synchronize(*l.stream);
  if (st != PK_OK) {
    l.check_outputs(false);  // refused: nothing written
  } else if (sync == PK_OK) {
    l.check_outputs(true);  // ran: nothing written outside the outputs' views
  }                         // an asynchronous failure may leave outputs half-written; the stream reports it
  if (sync != PK_OK) pkfuzz::refresh_stream(l.device, *l.stream);
  return 0;
}
