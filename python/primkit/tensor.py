"""primkit.Tensor: memory on a PrimKit device (or host memory lent by numpy/torch), exchanged through DLPack."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

from . import _primkit
from .dtypes import DType, dtype as to_dtype


class Tensor:
    """A tensor PrimKit can run ops on.

    Host-addressable tensors (the CPU backend, unified memory, host memory imported from numpy/torch) export
    themselves zero-copy through ``__dlpack__``; ``np.from_dlpack(t)`` and ``torch.from_dlpack(t)`` share the
    bytes. Tensors in device memory the host cannot address (e.g. OpenCL buffers) are copied with ``.numpy()``.
    On asynchronous devices (OpenCL) ops return as soon as they are enqueued on the device's default stream; the
    tensor carries a PrimKit event recorded after its producer, and every hand-off to the host (``__dlpack__``,
    ``.numpy()``, ``.wait()``) synchronizes that event. Later ops on the same device are ordered by the stream.
    Imports read the producer's memory after the producer's own ``__dlpack__(stream=None)`` ordering."""

    __slots__ = ("_t", "_ready", "__weakref__")

    def __init__(self, handle: "_primkit.Tensor", ready=None):
        self._t = handle
        self._ready = ready  # a PrimKit event recorded after the work that produces this tensor (async devices)

    def wait(self) -> "Tensor":
        """Blocks until the work producing this tensor is complete (a no-op on synchronous devices)."""
        if self._ready is not None:
            self._ready.synchronize()
            self._ready = None
        return self

    # --- DLPack -----------------------------------------------------------------------------------------
    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None):
        # The consumer reads host memory: the producing work must be complete (the PrimKit event hand-off).
        self.wait()
        return self._t.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self._t.__dlpack_device__()

    # --- properties -------------------------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        return self._t.shape

    @property
    def strides(self) -> Tuple[int, ...]:
        """Strides in elements."""
        return self._t.strides

    @property
    def ndim(self) -> int:
        return self._t.ndim

    @property
    def dtype(self) -> DType:
        return to_dtype(self._t.dtype_code_bits)

    @property
    def device(self):
        """The PrimKit device that owns the memory, or None for host memory lent by another library."""
        return self._t.device

    @property
    def nbytes(self) -> int:
        return self._t.nbytes

    # --- conversion -------------------------------------------------------------------------------------
    def numpy(self):
        """A numpy array: zero-copy for host-addressable memory, otherwise a copy (bf16/fp8 via ml_dtypes)."""
        import numpy as np
        npdt = self.dtype.numpy()
        if self._t.host_addressable and self.dtype.name not in ("bf16", "f8e4m3fn", "f8e5m2"):
            return np.from_dlpack(self)
        # numpy has no DLPack codes for bf16/fp8, and device memory needs a copy: copy the compact bytes.
        if self.strides != _row_major(self.shape):
            raise ValueError("primkit: .numpy() of a strided %s tensor is not supported" % self.dtype.name)
        out = np.empty(self.shape, dtype=npdt)
        from . import stream
        self.wait()
        _primkit.copy_to_host(self._t, stream(self.device), out.ctypes.data)
        return out

    def to(self, device) -> "Tensor":
        """A copy on `device` (a label like "opencl:0" or a Device)."""
        from . import device as get_device, stream
        d = get_device(device)
        host = self if self._t.host_addressable else Tensor(_primkit.from_dlpack(_np_contig(self.numpy())))
        return Tensor(_primkit.to_device(host._t, d, stream(d)))

    def cpu(self) -> "Tensor":
        return self if self._t.host_addressable else Tensor(_primkit.from_dlpack(self.numpy()))

    def __repr__(self) -> str:
        where = self.device.label if self.device is not None else "host"
        return "primkit.Tensor(shape=%s, dtype=%s, device=%s)" % (list(self.shape), self.dtype.name, where)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)


def _row_major(shape):
    out, s = [], 1
    for e in reversed(shape):
        out.append(s)
        s *= max(e, 1)
    return tuple(reversed(out))


def _np_contig(a):
    import numpy as np
    return np.ascontiguousarray(a)


_TORCH_DTYPES = None


def _torch_dtypes():
    global _TORCH_DTYPES
    if _TORCH_DTYPES is None:
        import torch
        from .dtypes import all_dtypes
        _TORCH_DTYPES = {getattr(torch, d.torch_name): d.code_bits for d in all_dtypes()
                         if d.torch_name and hasattr(torch, d.torch_name)}
    return _TORCH_DTYPES


def from_dlpack(x: Any, device=None) -> Tensor:
    """Imports any DLPack producer (numpy, torch, ...). Host memory is shared without copying; with `device`
    naming a device that cannot address host memory, the data is copied there."""
    if isinstance(x, Tensor):
        t = x
    elif type(x).__name__ == "Tensor" and type(x).__module__ == "torch":
        t = Tensor(_primkit.from_torch(x, _torch_dtypes()))
    else:
        t = Tensor(_primkit.from_dlpack(x))
    if device is None:
        return t
    from . import device as get_device
    d = get_device(device)
    if t.device is not None and t.device.label == d.label:
        return t
    props = d.props()
    if props["device_type"] == 1 or props["unified_memory"]:
        return t  # host memory is directly usable there
    return t.to(d)


def asarray(x: Any, dtype=None, device=None) -> Tensor:
    """A primkit.Tensor from a Tensor, a DLPack producer, or a Python/numpy sequence (copied)."""
    if isinstance(x, Tensor) and dtype is None:
        return from_dlpack(x, device)
    if hasattr(x, "__dlpack__") and dtype is None:
        return from_dlpack(x, device)
    import numpy as np
    a = np.ascontiguousarray(np.asarray(x, dtype=to_dtype(dtype).numpy() if dtype is not None else None))
    if a.dtype == np.float64 and dtype is None and not isinstance(x, np.ndarray):
        a = a.astype(np.float32)  # Python floats: f32, as torch does
    return from_dlpack(a, device)


def empty(shape: Sequence[int], dtype: Union[str, DType, Any] = "f32", device=None) -> Tensor:
    """An uninitialised tensor allocated on `device` (default: the default device)."""
    from . import device as get_device
    d = get_device(device)
    return Tensor(_primkit.empty(d, to_dtype(dtype).code_bits, [int(s) for s in shape]))
