"""PrimKit dtypes and their numpy / torch / DLPack equivalents (the table is generated from ops.yaml)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ._dtypes import DTYPES


class DType:
    """A dtype of the op table: name ("f32"), id (PK_DTYPE_*), DLPack (code, bits)."""

    __slots__ = ("name", "id", "code", "bits", "numpy_name", "torch_name")

    def __init__(self, name: str, id_: int, code: int, bits: int, numpy_name: Optional[str],
                 torch_name: Optional[str]):
        self.name, self.id, self.code, self.bits = name, id_, code, bits
        self.numpy_name, self.torch_name = numpy_name, torch_name

    @property
    def code_bits(self) -> Tuple[int, int]:
        return (self.code, self.bits)

    @property
    def itemsize(self) -> int:
        return (self.bits + 7) // 8

    @property
    def is_float(self) -> bool:
        return self.code in (2, 4, 10, 12)

    def numpy(self):
        """The numpy dtype (bf16 and fp8 through ml_dtypes)."""
        import numpy as np
        if hasattr(np, self.numpy_name):
            return np.dtype(getattr(np, self.numpy_name))
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, self.numpy_name))

    def torch(self):
        import torch
        return getattr(torch, self.torch_name)

    def __repr__(self) -> str:
        return "primkit.%s" % self.name

    def __eq__(self, other: Any) -> bool:
        try:
            return dtype(other) is self
        except (TypeError, KeyError):
            return False

    def __hash__(self) -> int:
        return hash(self.name)


_BY_NAME: Dict[str, DType] = {}
_BY_CODE: Dict[Tuple[int, int], DType] = {}
for _row in DTYPES:
    _d = DType(*_row)
    _BY_NAME[_d.name] = _d
    _BY_CODE[(_d.code, _d.bits)] = _d
    globals()[_d.name] = _d
_ALIASES = {_d.numpy_name: _d for _d in _BY_NAME.values()}
_ALIASES.update({_d.torch_name: _d for _d in _BY_NAME.values()})
_ALIASES.update({"float": _BY_NAME["f32"], "half": _BY_NAME["f16"], "double": _BY_NAME["f64"],
                 "long": _BY_NAME["i64"], "int": _BY_NAME["i32"]})


def dtype(x: Any) -> DType:
    """Converts a name ("f32", "float32", "bfloat16"), a numpy or torch dtype, or (code, bits) to a DType."""
    if isinstance(x, DType):
        return x
    if isinstance(x, tuple):
        return _BY_CODE[(int(x[0]), int(x[1]))]
    if isinstance(x, str):
        d = _BY_NAME.get(x) or _ALIASES.get(x)
        if d is None:
            raise TypeError("primkit: unknown dtype %r (known: %s)" % (x, ", ".join(_BY_NAME)))
        return d
    mod = type(x).__module__
    if mod.startswith("torch"):
        return dtype(str(x).replace("torch.", ""))
    name = getattr(x, "name", None)  # numpy dtype or scalar type
    if name is None and isinstance(x, type):
        import numpy as np
        name = np.dtype(x).name
    if name is None:
        raise TypeError("primkit: cannot interpret %r as a dtype" % (x,))
    return dtype(str(name).replace("bool", "bool_") if name == "bool" else str(name))


def all_dtypes():
    return list(_BY_NAME.values())
