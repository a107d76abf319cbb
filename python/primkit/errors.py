"""Exceptions raised by primkit. Every failure of a libprimkit call becomes a PrimKitError that carries the
C status, the op (name and id, when the failure is about an op), the argument index (inputs first, then
outputs; -1 when not about one argument) and the runtime's message, which names the op, argument and reason."""

from __future__ import annotations


class PrimKitError(RuntimeError):
    """A libprimkit call failed. Attributes: status (int), status_name, op_id, op (name or None), arg_index."""

    def __init__(self, message: str, status: int = 10, status_name: str = "PK_ERROR_INTERNAL", op_id: int = 0,
                 arg_index: int = -1):
        super().__init__(message)
        self.message = message
        self.status = status
        self.status_name = status_name
        self.op_id = op_id
        self.arg_index = arg_index

    @property
    def op(self):
        if not self.op_id:
            return None
        from . import _primkit
        try:
            return _primkit.op_describe(self.op_id)["name"]
        except Exception:  # an id this library does not know (a newer caller)
            return None

    def __str__(self) -> str:
        return "%s (%s)" % (self.message, self.status_name)


class Unimplemented(PrimKitError, NotImplementedError):
    """PK_UNIMPLEMENTED: the backend does not run this op/dtype (and fallback was not allowed or failed)."""


class InvalidArgument(PrimKitError, ValueError):
    """PK_ERROR_INVALID_ARGUMENT: the call broke a documented precondition; nothing was changed."""


class OutOfMemory(PrimKitError, MemoryError):
    """PK_ERROR_OUT_OF_MEMORY."""


class NotFound(PrimKitError, LookupError):
    """PK_ERROR_NOT_FOUND: no such backend, device, op or file."""


class FallbackForbidden(PrimKitError):
    """PK_ERROR_FALLBACK_FORBIDDEN: strict mode, and the op would have needed the fallback backend."""


class DeviceError(PrimKitError):
    """PK_ERROR_DEVICE / PK_ERROR_STREAM_FAILED: the device or its driver failed."""


class PluginError(PrimKitError):
    """PK_ERROR_PLUGIN / PK_ERROR_ABI_MISMATCH: a backend plugin broke the ABI contract or cannot be loaded."""


_BY_STATUS = {1: Unimplemented, 2: InvalidArgument, 3: OutOfMemory, 4: PluginError, 5: NotFound, 6: DeviceError,
              7: DeviceError, 8: FallbackForbidden, 9: PluginError}


def error_class(status: int) -> type:
    """The exception class for a pk_status (used by the extension's exception translator)."""
    return _BY_STATUS.get(status, PrimKitError)
