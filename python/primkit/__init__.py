"""PrimKit for Python: the primitive-op runtime and its backends, DLPack exchange, every op of the table as a
function (primkit.ops), graphs, and a torch.compile backend (primkit.torch, backend="primkit").

    import primkit, numpy as np
    x = primkit.from_dlpack(np.arange(6, dtype=np.float32).reshape(2, 3))   # zero-copy
    y = primkit.ops.exp(x)                                                   # runs on cpu:0
    np.from_dlpack(y)                                                        # zero-copy back
"""

from __future__ import annotations

import atexit
import threading
from typing import Dict, List, Optional, Sequence, Union

from . import _primkit
from .dtypes import DType, dtype
from .errors import PrimKitError

__all__ = ["DType", "Device", "Graph", "PrimKitError", "Tensor", "backends", "device", "devices", "dtype",
           "empty", "fallback_report", "from_dlpack", "ops", "runtime_info", "asarray"]

Device = _primkit.Device

_state = threading.local()
_lock = threading.Lock()
_runtime = None
_devices: Dict[str, "Device"] = {}
_backends: List[dict] = []
_streams: Dict[str, object] = {}


def _rt():
    """The process-wide runtime: discovers the installed backends once (PRIMKIT_PLUGIN_PATH is honoured)."""
    global _runtime
    if _runtime is None:
        with _lock:
            if _runtime is None:
                rt = _primkit.runtime_create()
                bs = _primkit.runtime_backends(rt)
                for b in bs:
                    for d in b["devices"]:
                        _devices[d.label] = d
                _backends[:] = bs
                _runtime = rt
    return _runtime


def backends() -> List[dict]:
    """The loaded backends: name, vendor, version, abi_version, path, devices."""
    _rt()
    return [dict(b) for b in _backends]


def devices() -> List[Device]:
    """Every device of every loaded backend, labelled "<backend>:<index>" (e.g. "cpu:0", "opencl:0")."""
    _rt()
    return list(_devices.values())


def device(label: Union[str, Device, None] = None) -> Device:
    """The device named `label` ("cpu", "cpu:0", "opencl:0", "cuda-emu:0"); the default device if None."""
    if isinstance(label, Device):
        return label
    _rt()
    if label is None:
        label = getattr(_state, "default", None) or "cpu:0"
    if ":" not in label:
        label += ":0"
    d = _devices.get(label)
    if d is None:
        errs = _primkit.runtime_load_errors(_runtime).strip()
        raise LookupError("primkit: no device %r; loaded: %s%s" % (
            label, ", ".join(_devices) or "none", ("\nplugins that failed to load:\n" + errs) if errs else ""))
    return d


def set_default_device(label: Union[str, Device]) -> None:
    """Sets the calling thread's default device for primkit.ops calls whose inputs are all host memory."""
    _state.default = device(label).label


def stream(dev: Union[str, Device, None] = None):
    """The default stream of a device (created on first use). primkit.ops calls complete before they return."""
    d = device(dev)
    s = _streams.get(d.label)
    if s is None:
        with _lock:
            s = _streams.get(d.label)
            if s is None:
                s = _primkit.stream_create(d)
                _streams[d.label] = s
    return s


def runtime_info() -> dict:
    """ABI versions of this package's headers and of the loaded libprimkit, and plugin load errors."""
    _rt()
    return {"abi_version": tuple(_primkit.ABI_VERSION), "runtime_abi_version": tuple(_primkit.runtime_abi_version()),
            "load_errors": _primkit.runtime_load_errors(_runtime)}


def fallback_report() -> str:
    """One line per op that ran on the fallback backend: "op backend->fallback launches=N bytes_copied=B"."""
    return _primkit.runtime_fallback_report(_rt())


def reset_fallback_counters() -> None:
    _primkit.runtime_reset_fallback_counters(_rt())


@atexit.register
def _shutdown() -> None:
    # Release the default streams and the runtime before the interpreter tears the extension down.
    global _runtime
    _streams.clear()
    _devices.clear()
    _backends.clear()
    _runtime = None


from .tensor import Tensor, asarray, empty, from_dlpack  # noqa: E402
from .graph import Graph  # noqa: E402
from . import ops  # noqa: E402
