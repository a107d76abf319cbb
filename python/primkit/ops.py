"""Every op of the PrimKit table as a Python function, built at import from libprimkit's op metadata (ABI 1.1):
operands positional, attributes keyword-only with the table's defaults, docstrings from the table.

    primkit.ops.softmax(x, dim=1)
    primkit.ops.scaled_dot_product_attention(q, k, v, scale=0.125, is_causal=True)

Inputs may be primkit.Tensors or any DLPack producer (numpy, torch). An op runs on the device of its first
primkit.Tensor input, else on `device=` or the default device, and completes before returning."""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Optional

from . import _primkit
from .dtypes import dtype as to_dtype
from .tensor import Tensor, from_dlpack


class OpInfo:
    """An op's metadata: id, name, tier, category, operands, attributes (with layout and defaults), contract."""

    def __init__(self, op_id: int):
        d = _primkit.op_describe(op_id)
        self.__dict__.update(d)
        self.operands = [_primkit.op_operand(op_id, i) for i in range(d["num_inputs"] + d["num_outputs"])]
        self.inputs = self.operands[:d["num_inputs"]]
        self.outputs = self.operands[d["num_inputs"]:]
        self.attrs = [_primkit.op_attr(op_id, i) for i in range(d["num_attrs"])]
        self.attr_index = {a["name"]: a for a in self.attrs}
        self._template = _primkit.op_init_attrs(op_id, d["attrs_size"]) if d["num_attrs"] else None

    def pack_attrs(self, values: Dict[str, Any]) -> Optional[bytes]:
        """The op's attribute struct with `values` over the table defaults. Raises TypeError naming the op and
        attribute for a missing required attribute, an unknown name or a value of the wrong kind."""
        if self._template is None:
            if values:
                raise TypeError("primkit.ops.%s: the op has no attributes (got %s)" % (self.name, ", ".join(values)))
            return None
        for k in values:
            if k not in self.attr_index:
                raise TypeError("primkit.ops.%s: unknown attribute %r (attributes: %s)" % (
                    self.name, k, ", ".join(self.attr_index) or "none"))
        buf = bytearray(self._template)
        for a in self.attrs:
            name = a["name"]
            if name not in values:
                if a["required"]:
                    raise TypeError("primkit.ops.%s: missing required attribute %r (%s, no default)" % (
                        self.name, name, a["type"]))
                continue
            v = values[name]
            try:
                _pack_one(buf, a, v)
            except (TypeError, ValueError, struct.error, KeyError) as e:
                raise TypeError("primkit.ops.%s: attribute %s=%r: %s" % (self.name, name, v, e)) from None
        return bytes(buf)


def _pack_one(buf: bytearray, a: dict, v: Any) -> None:
    t, off = a["type"], a["offset"]
    if t == "i64":
        struct.pack_into("<q", buf, off, _int(v))
    elif t == "f64":
        struct.pack_into("<d", buf, off, float(v))
    elif t == "bool":
        struct.pack_into("<i", buf, off, 1 if bool(v) else 0)
    elif t == "dtype":
        struct.pack_into("<i", buf, off, to_dtype(v).id)
    elif t == "enum":
        choices = a["choices"].split("|")
        idx = choices.index(v) if isinstance(v, str) else _int(v)
        if not 0 <= idx < len(choices):
            raise ValueError("not one of %s" % choices)
        struct.pack_into("<i", buf, off, idx)
    elif t == "ints":
        vals = [_int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
        if len(vals) > 8:
            raise ValueError("at most 8 values")
        struct.pack_into("<i", buf, a["count_offset"], len(vals))
        for i, x in enumerate(vals):
            struct.pack_into("<q", buf, off + 8 * i, x)
    else:
        raise TypeError("unknown attribute type %s" % t)


def _int(v: Any) -> int:
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError("expected an integer")
    return v.__index__()


_INFO: Dict[str, OpInfo] = {}


def info(name: str) -> OpInfo:
    """Metadata of the op named `name` (primkit.errors.NotFound if the table has none)."""
    op = _INFO.get(name)
    if op is None:
        op = OpInfo(_primkit.op_find(name))
        _INFO[name] = op
    return op


def names() -> List[str]:
    return [_primkit.op_describe(_primkit.op_id_at(i))["name"] for i in range(_primkit.op_count())]


def _as_input(x: Any, dev) -> "_primkit.Tensor":
    if isinstance(x, Tensor):
        return x._t
    if hasattr(x, "__dlpack__"):
        return from_dlpack(x, dev)._t
    raise TypeError("expected a primkit.Tensor or a DLPack producer, got %s" % type(x).__name__)


def call(name: str, *inputs: Any, device=None, **attrs: Any):
    """Runs op `name` on `inputs` with keyword attributes; returns a Tensor or a tuple of Tensors."""
    from . import device as get_device, stream
    op = info(name)
    if not op.variadic and len(inputs) > op.num_inputs:
        raise TypeError("primkit.ops.%s takes %d inputs (%s), got %d" % (
            name, op.num_inputs, ", ".join(i["name"] for i in op.inputs), len(inputs)))
    dev = device
    if dev is None:
        for x in inputs:
            if isinstance(x, Tensor) and x.device is not None:
                dev = x.device
                break
    dev = get_device(dev)
    packed = op.pack_attrs(attrs)
    handles = [_as_input(x, dev) for x in inputs if x is not None]
    outs = []
    for (code_bits, shape) in _primkit.infer_outputs(op.id, handles, packed, op.num_outputs):
        outs.append(_primkit.empty(dev, code_bits, shape))
    s = stream(dev)
    _primkit.launch(s, op.id, handles, outs, packed)
    ready = None
    if _is_async(dev):
        # enqueue only: the outputs carry an event that host hand-offs (DLPack, .numpy()) wait for, and keep the
        # inputs alive until then
        ready = _Pending(_primkit.event_create(dev), handles)
        ready.event.record(s)
    res = tuple(Tensor(o, ready) for o in outs)
    return res[0] if len(res) == 1 else res


class _Pending:
    """Work in flight on an asynchronous device: its completion event and the inputs it still reads."""

    __slots__ = ("event", "keep")

    def __init__(self, event, keep):
        self.event, self.keep = event, keep

    def synchronize(self):
        self.event.synchronize()
        self.keep = None


_ASYNC: Dict[str, bool] = {}


def _is_async(dev) -> bool:
    v = _ASYNC.get(dev.label)
    if v is None:
        v = _ASYNC[dev.label] = bool(dev.props()["async"])
    return v


def _make(name: str):
    op = info(name)

    def fn(*inputs: Any, device=None, **attrs: Any):
        return call(name, *inputs, device=device, **attrs)

    params = ", ".join([("*" if i["variadic"] else "") + i["name"] for i in op.inputs] +
                       ["%s=%s" % (a["name"], _default_text(a)) for a in op.attrs])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "%s(%s)\n\n%s\n\ntier: %s, category: %s, since ABI %s%s" % (
        name, params, op.doc or "", op.tier, op.category, op.since,
        ("\n\ndecomposition:\n" + op.decomposition) if op.decomposition else "")
    return fn


def _default_text(a: dict) -> str:
    if a["required"]:
        return "<required>"
    if a["type"] == "ints":
        return repr(list(a["default_ints"]))
    if a["type"] == "bool":
        return repr(bool(a["default"]))
    if a["type"] == "enum":
        return repr(a["choices"].split("|")[int(a["default"])])
    if a["type"] in ("i64", "dtype"):
        return repr(int(a["default"]))
    return repr(a["default"])


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        fn = _make(name)
    except Exception:
        raise AttributeError("primkit.ops has no op %r" % name) from None
    globals()[name] = fn
    return fn


def __dir__():
    return sorted(set(globals()) | set(names()))
