// dlpack_abi.hpp — the DLPack exchange structs (DLPack 1.0, https://dmlc.github.io/dlpack/latest/c_api.html),
// declared here from the specification because no Debian package ships dlpack.h. The layout is the standard's:
// do not reorder. pk_tensor is a DLTensor plus storage size and flags, so the fields map one to one.
#pragma once

#include <cstdint>

namespace pk::dl {

struct Device {
  int32_t device_type;  // DLDeviceType: 1 CPU, 2 CUDA, 3 CUDA host, 4 OpenCL, ...
  int32_t device_id;
};

struct DataType {
  uint8_t code;  // DLDataTypeCode, the same values as PK_DTYPE_CODE_*
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void *data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t *shape;
  int64_t *strides;  // in elements; NULL = compact row-major
  uint64_t byte_offset;
};

// The legacy (pre-1.0) capsule payload, capsule name "dltensor".
struct ManagedTensor {
  Tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(ManagedTensor *self);
};

struct PackVersion {
  uint32_t major;
  uint32_t minor;
};

constexpr uint64_t kFlagReadOnly = 1ull << 0;
constexpr uint64_t kFlagIsCopied = 1ull << 1;

// The versioned payload (DLPack >= 1.0), capsule name "dltensor_versioned".
struct ManagedTensorVersioned {
  PackVersion version;
  void *manager_ctx;
  void (*deleter)(ManagedTensorVersioned *self);
  uint64_t flags;
  Tensor dl_tensor;
};

constexpr uint32_t kMajorVersion = 1;
constexpr uint32_t kMinorVersion = 0;

}  // namespace pk::dl
