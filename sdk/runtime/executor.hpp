// executor.hpp — the runtime's one executor. A Program is a graph of ops planned once for one device: composites
// the backend lacks lowered to their primitives, nodes no result needs dropped, fusion windows offered to the
// backend, views described over their source's storage, and every temporary given a place in one arena by
// liveness (two values share bytes only when their lifetimes do not overlap). pk_executable_run runs the
// Program of a compiled graph; a composite launch the backend does not run natively runs the Program of its
// decomposition, built once per (op, input types, attributes) and cached on the device (dispatch.cpp).
//
// Temporaries on an asynchronous device are not waited for: the arena is parked on the stream after the work is
// queued, reused by the stream's next run (the stream runs its work in order), and returned to the device's
// cache, where other streams may take it, only once the stream is known to be idle (a synchronize, or destroy).
// Internal to sdk/runtime.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime_internal.hpp"

namespace pk::rt {

struct ProgramNode {
  uint32_t op_id = PK_OP_NONE;
  std::vector<uint8_t> attrs;  // normalized attribute struct, empty if the op has none
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
};

struct ProgramStep {
  bool fused = false;
  bool alias_view = false;         // a view op whose output aliases its input's storage (see view_of_input)
  ProgramNode node;                // single op (fused == false)
  pk_be_kernel *kernel = nullptr;  // fused kernel
  std::vector<uint32_t> args;      // fused kernel arguments, in pk_fusion_claim order
};

class Program {
 public:
  static constexpr uint64_t kNoSlot = UINT64_MAX;
  // Bytes between the starts of two temporaries in the arena: a cache line and every vector width.
  static constexpr uint64_t kSlotAlignment = 256;

  explicit Program(Device &device) : device(&device) {}
  ~Program();  // destroys the fused kernels
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  Device *device;
  std::vector<pk::meta::TensorType> values;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<ProgramStep> steps;
  // Per value: the temporary's byte offset in the arena, kNoSlot for the caller's tensors, views described over
  // another value, and values no step touches.
  std::vector<uint64_t> slot;
  uint64_t arena_bytes = 0;
  uint64_t temporary_bytes = 0;  // what one buffer per temporary would take (arena_bytes <= temporary_bytes)
  // Graphs check each single-op step as pk_launch would; a composite's decomposition, whose attributes and
  // shapes the op table made, runs its steps unchecked as the launch it replaces was already checked.
  bool check_steps = true;
  uint32_t fused_kernels = 0, fused_nodes = 0, single_nodes = 0;
};

// Builds `prog` (values, inputs and outputs already set, outputs distinct and not inputs) from `nodes` in a
// topological order: lowers composites the backend does not support natively, drops nodes whose results no
// output needs or that are all empty when `prune` (a graph keeps every node: its fusion statistics count them),
// plans fusion when `fusion`, and lays out the temporaries.
pk_status build_program(Program &prog, std::vector<ProgramNode> nodes, bool fusion, bool prune);

// Appends the steps for `nodes` (fusion offers through the backend's hook when `can_fuse`; planner.cpp).
void plan_steps(Program &prog, const std::vector<ProgramNode> &nodes, bool can_fuse);

// Runs `prog` on `stream` with the caller's tensors (already validated against prog's types).
pk_status run_program(const Program &prog, pk_stream_s *stream, const pk_tensor *inputs, const pk_tensor *outputs);

// Returns the temporaries parked on `stream` up to park `through` (parked_through() read before a successful
// synchronize began; UINT64_MAX once the backend destroyed the stream) to its device's cache: no queued work of
// the stream can still use them.
uint64_t parked_through(pk_stream_s &stream);
void release_parked_temporaries(pk_stream_s &stream, uint64_t through);

// The Program of composite `op`'s decomposition for these input types and (normalized) attributes on `device`,
// built on first use and cached.
pk_status composite_program(Device &device, const pk::meta::OpInfo &op, const pk::meta::TensorType *types,
                            uint32_t num_inputs, const void *attrs, std::shared_ptr<const Program> *out);

}  // namespace pk::rt
