// launch_builder.hpp — decodes a fuzz input into one launch of an op (the launch, capability-query and
// attribute harnesses share it) and owns the memory behind it.
//
// Input layout: u16 op position; u8 options (bit 0: cuda-emu device when present; bits 1-2: input fill); then
// mutation records until the input ends or a record's command is 0. The starting point is the op's valid example
// launch, so a 3-byte seed is a real launch that runs a kernel. Commands (the first byte of a record, modulo the
// count) change one field of one tensor (input positions first, then outputs) or of the attribute struct:
// dtype, ndim, an extent, strides, byte offset, flags, storage size, where the memory lives (host, pk_buffer,
// NULL), struct_size, device, attribute bytes, attribute struct_size, tensor count, output aliasing an input.
#pragma once

#include <memory>

#include "fuzz_common.hpp"

namespace pkfuzz {

struct FuzzTensor {
  pk_dtype dtype{};
  int32_t ndim = 0;
  int64_t shape[PK_MAX_RANK + 2] = {0};
  bool has_strides = false;
  int64_t strides[PK_MAX_RANK + 2] = {0};
  uint64_t byte_offset = 0;
  uint32_t flags = PK_TENSOR_FLAG_HOST_VISIBLE;
  uint32_t struct_size = sizeof(pk_tensor);
  int32_t device_type = PK_DEVICE_CPU;
  int32_t device_id = 0;
  enum Where { kHost = 0, kBuffer = 1, kNull = 2 } where = kHost;
  int64_t storage_delta = 0;  // storage_bytes = what the view needs + delta (clamped to the memory)
  bool storage_lie = false;   // buffers only: storage_bytes = storage_raw, whatever the buffer holds
  uint64_t storage_raw = 0;
  int alias_of = -1;  // outputs: share input alias_of's memory and descriptor placement

  // Filled by materialize():
  pk_tensor desc{};
  std::unique_ptr<uint8_t[]> host;  // kHost: exactly `host_size` bytes, so ASan sees any byte past it
  size_t host_size = 0;
  pk_buffer_t buffer = nullptr;  // kBuffer
  size_t buffer_size = 0;
  std::vector<uint8_t> before;  // outputs: the memory's bytes before the call
};

class FuzzLaunch {
 public:
  ~FuzzLaunch() { release(); }
  // Decodes the input. false: the op has no launch to start from (the input is uninteresting).
  bool decode(Reader &r);
  // Allocates and fills memory, builds descriptors. false: the device is unavailable.
  bool materialize(Reader &r);
  // After a call: the property checks on output memory (see fuzz_common.hpp). `ok`: the call succeeded.
  void check_outputs(bool ok);
  void release();

  const pk::meta::OpInfo *op = nullptr;
  bool on_emu = false;
  std::vector<FuzzTensor> ins, outs;
  std::vector<pk_tensor> in_desc, out_desc;
  bool attrs_null = false;
  uint32_t attrs_size = 0;           // bytes of the attribute allocation
  std::unique_ptr<uint8_t[]> attrs;  // exactly attrs_size bytes
  pk_device_t device = nullptr;
  pk_stream_t *stream = nullptr;
  int fill = 0;

 private:
  void init_tensor(FuzzTensor &t, const pk::meta::TensorType &tt);
  void mutate(Reader &r, uint8_t cmd);
  std::vector<uint8_t> read_memory(FuzzTensor &t);
  bool place(FuzzTensor &t, bool output, Reader &r);
};

// Destroys a failed stream and makes a new one (an asynchronous error is sticky: later runs would only see it).
void refresh_stream(pk_device_t device, pk_stream_t &stream);

// The LLVMFuzzerInitialize of the harnesses built on FuzzLaunch: makes the world; with PK_FUZZ_WRITE_SEEDS, writes
// the seeds and exits. Seeds: one 3-byte input per op whose example launch the builder can make (the op's real,
// valid launch), and for every eighth op the same launch mutated (cuda-emu, strided, offset, in buffers).
void init_launch_harness();

}  // namespace pkfuzz
