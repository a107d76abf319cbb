// streams.cpp — streams and events: stream_create/destroy/synchronize/query, event_create/destroy/record,
// stream_wait_event, event_synchronize/query.
//
// What you implement here: wrap your driver's in-order command queue (a stream) and its fences (an event). The
// ABI's one rule to keep is the sticky error (pk::kit::StickyError in pk_be_stream): once asynchronous work on a
// stream failed, synchronize reports it and every later call on the stream returns PK_ERROR_STREAM_FAILED. The
// simulated device runs work inside the enqueueing call, so a stream has always drained when a call returns.
#include <memory>

#include "backend.hpp"

namespace @BACKEND_NAME@_backend {

using pk::kit::fail;

pk_status backend_stream_create(pk_be_context *context, uint32_t device, pk_be_stream **out) {
  return pk::kit::catch_exceptions(PK_OP_NONE, "@BACKEND_NAME@: stream_create", [&]() -> pk_status {
    // TODO(vendor): create your driver's queue on `device`.
    auto stream = std::make_unique<pk_be_stream>();
    stream->context = context;
    stream->device = device;
    *out = stream.release();  // the host hands it back to stream_destroy()
    return PK_OK;
  });
}

pk_status backend_stream_destroy(pk_be_stream *stream) {
  std::unique_ptr<pk_be_stream> owned(stream);  // TODO(vendor): drain and destroy your queue.
  return PK_OK;
}

// Work already ran inside the enqueueing calls, so waiting means reporting the sticky state.
// TODO(vendor): wait for your queue to drain (query: ask without blocking, PK_NOT_READY while work is pending),
// then report its failure if any: stream->sticky.record(status) keeps it for every later call.
pk_status backend_stream_synchronize(pk_be_stream *stream) {
  return stream->sticky.check(kName);
}
pk_status backend_stream_query(pk_be_stream *stream) {
  return stream->sticky.check(kName);
}

pk_status backend_event_create(pk_be_context *, uint32_t, pk_be_event **out) {
  return pk::kit::catch_exceptions(PK_OP_NONE, "@BACKEND_NAME@: event_create", [&]() -> pk_status {
    // TODO(vendor): create your driver's event/fence.
    auto event = std::make_unique<pk_be_event>();
    *out = event.release();  // the host hands it back to event_destroy()
    return PK_OK;
  });
}

pk_status backend_event_destroy(pk_be_event *event) {
  std::unique_ptr<pk_be_event> owned(event);
  return PK_OK;
}

// TODO(vendor): record a fence of your queue; waiting and querying then ask the driver about that fence.
pk_status backend_event_record(pk_be_event *event, pk_be_stream *stream) {
  event->status = stream->sticky.status;
  return PK_OK;
}

// TODO(vendor): make later work on `stream` wait for the event's fence (it may come from another stream).
pk_status backend_stream_wait_event(pk_be_stream *stream, pk_be_event *) {
  return stream->sticky.check(kName);
}

pk_status backend_event_synchronize(pk_be_event *event) {
  if (event->status != PK_OK) {
    return fail(PK_ERROR_STREAM_FAILED, PK_OP_NONE, -1, "@BACKEND_NAME@: the stream that recorded the event failed");
  }
  return PK_OK;
}

// TODO(vendor): ask your driver without blocking; PK_NOT_READY while the fence is pending.
pk_status backend_event_query(pk_be_event *event) {
  return backend_event_synchronize(event);
}

}  // namespace @BACKEND_NAME@_backend
