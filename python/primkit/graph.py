"""primkit.Graph: build a graph of ops once, compile it for a device (fusion, decomposition, fallback), run it
many times.

    g = primkit.Graph()
    x = g.input("f32", [8, 64])
    y = g.op("gelu", g.op("add", x, x))
    g.output(y)
    exe = g.compile("cpu:0")
    (out,) = exe(np_array)
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple, Union

from . import _primkit
from .dtypes import DType, dtype as to_dtype
from .tensor import Tensor, from_dlpack


class Value(int):
    """A value id of a graph (an int), with its dtype and shape."""

    dtype: DType
    shape: Tuple[int, ...]


class Graph:
    def __init__(self):
        self._g = _primkit.Graph()
        self.inputs: List[Value] = []
        self.outputs: List[Value] = []

    def _value(self, vid: int) -> Value:
        v = Value(vid)
        code_bits, shape = self._g.value_info(vid)
        v.dtype, v.shape = to_dtype(code_bits), tuple(shape)
        return v

    def input(self, dtype: Any, shape: Sequence[int]) -> Value:
        v = self._value(self._g.add_input(to_dtype(dtype).code_bits, [int(s) for s in shape]))
        self.inputs.append(v)
        return v

    def op(self, name: str, *inputs: int, **attrs: Any) -> Union[Value, Tuple[Value, ...]]:
        """Adds a node of op `name`; returns its output value (or a tuple for several outputs)."""
        from .ops import info
        op = info(name)
        outs = self._g.add_node(op.id, [int(i) for i in inputs], op.pack_attrs(attrs), op.num_outputs)
        vals = tuple(self._value(o) for o in outs)
        return vals[0] if len(vals) == 1 else vals

    def output(self, *values: int) -> None:
        for v in values:
            self._g.mark_output(int(v))
            self.outputs.append(v if isinstance(v, Value) else self._value(int(v)))

    def compile(self, device=None, fusion: bool = True) -> "Executable":
        from . import device as get_device
        d = get_device(device)
        exe = self._g.compile(d, not fusion, [int(v) for v in self.inputs], [int(v) for v in self.outputs])
        return Executable(exe, d, list(self.inputs), list(self.outputs))


class Executable:
    """A compiled graph. Call it with one array per graph input; returns a tuple of primkit.Tensors."""

    def __init__(self, exe, device, inputs: List[Value], outputs: List[Value]):
        self._exe, self.device, self.inputs, self.outputs = exe, device, inputs, outputs

    def stats(self) -> dict:
        """What compilation made: fused kernels, the nodes they cover, nodes run one by one, and the bytes of
        device memory one run takes for intermediates (shared by liveness) against a buffer per intermediate."""
        fk, fn, sn = self._exe.stats()
        arena, unshared = self._exe.memory()
        return {"fused_kernels": fk, "fused_nodes": fn, "single_nodes": sn,
                "intermediate_bytes": arena, "unshared_intermediate_bytes": unshared}

    def __call__(self, *args: Any, out: Sequence[Tensor] = None) -> Tuple[Tensor, ...]:
        from . import stream
        if len(args) != len(self.inputs):
            raise TypeError("Executable: expected %d inputs, got %d" % (len(self.inputs), len(args)))
        ins = [(a if isinstance(a, Tensor) else from_dlpack(a, self.device))._t for a in args]
        if out is None:
            outs = [_primkit.empty(self.device, v.dtype.code_bits, list(v.shape)) for v in self.outputs]
        else:
            outs = [(o if isinstance(o, Tensor) else from_dlpack(o))._t for o in out]
        s = stream(self.device)
        self._exe.run(s, ins, outs)
        s.synchronize()
        return tuple(Tensor(o) for o in outs)
