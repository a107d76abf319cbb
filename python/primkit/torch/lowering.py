"""ATen -> PrimKit lowering. Each lowering turns one ATen node (after aot_autograd's Core ATen decompositions)
into PrimKit graph nodes through a Builder. Elementwise ops whose PrimKit name equals the ATen name are derived
from the op table (every unary/binary/compare/ternary/activation op with no attributes, or whose attributes are
ATen keyword arguments of the same name); the rest are written by hand below.

Shapes are static here: the compiler specializes symbolic graphs on the concrete shapes it sees."""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from .. import ops as pk_ops
from ..dtypes import DType, dtype as pk_dtype
from ..graph import Graph, Value

aten = torch.ops.aten


class Unsupported(Exception):
    """A node this lowering cannot express; the message is the reason shown by explain()."""


class Builder:
    """Adds PrimKit nodes to a Graph and records each (op, operand types) for the capability query."""

    def __init__(self, graph: Graph, env: Optional[dict] = None):
        self.g = graph
        self.env = env if env is not None else {}  # fx node -> lowered value (lets lowerings look through views)
        self.emitted: List[Tuple[str, List[Value], Tuple[Value, ...], dict]] = []

    def op(self, name: str, *ins: Value, **attrs: Any):
        try:
            out = self.g.op(name, *ins, **attrs)
        except Exception as e:  # the runtime's validation message names the op, the argument and the reason
            raise Unsupported(str(e)) from None
        self.emitted.append((name, list(ins), out if isinstance(out, tuple) else (out,), attrs))
        return out

    # --- helpers ------------------------------------------------------------------------------------------
    def cast(self, v: Value, dt: DType) -> Value:
        return v if v.dtype is dt else self.op("convert_element_type", v, dtype=dt)

    def scalar(self, value: Any, dt: DType, shape: Sequence[int]) -> Value:
        """A constant of `shape`: a 0-d full broadcast (a view, no per-element storage)."""
        v = self.op("full", shape=[], value=float(value), dtype=dt)
        return self.broadcast(v, shape)

    def broadcast(self, v: Value, shape: Sequence[int]) -> Value:
        shape = list(shape)
        if list(v.shape) == shape:
            return v
        r, rv = len(shape), len(v.shape)
        if rv > r:
            raise Unsupported("cannot broadcast %s to %s" % (list(v.shape), shape))
        # PyTorch aligns trailing axes; extent-1 axes that must grow are dropped first.
        keep = [i for i in range(rv) if not (v.shape[i] == 1 and shape[r - rv + i] != 1)]
        if len(keep) != rv:
            v = self.reshape(v, [v.shape[i] for i in keep])
        dims = [r - rv + i for i in keep]
        return self.op("broadcast_in_dim", v, shape=shape, broadcast_dimensions=dims)

    def reshape(self, v: Value, shape: Sequence[int]) -> Value:
        shape = [int(s) for s in shape]
        if list(v.shape) == shape:
            return v
        return self.op("reshape", v, shape=shape)

    def tensor(self, x: Any, dt: DType, shape: Sequence[int]) -> Value:
        """x as a Value of dtype dt broadcast to shape (x: a Value or a Python scalar)."""
        if isinstance(x, Value):
            return self.broadcast(self.cast(x, dt), shape)
        return self.scalar(x, dt, shape)


# --- metadata of fx nodes -------------------------------------------------------------------------------------

def meta_val(node) -> Any:
    return node.meta.get("val", node.meta.get("example_value")) if hasattr(node, "meta") else None


def out_dtype(node) -> DType:
    v = meta_val(node)
    if isinstance(v, (tuple, list)):
        v = v[0]
    return pk_dtype(v.dtype)


def out_shape(node, i: Optional[int] = None) -> List[int]:
    v = meta_val(node)
    if i is not None:
        v = v[i]
    elif isinstance(v, (tuple, list)):
        v = v[0]
    return [int(s) for s in v.shape]


def norm_dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def norm_dims(dims, rank: int) -> List[int]:
    if rank == 0:
        return []  # PyTorch lets dim 0 / -1 name the only "axis" of a scalar
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(norm_dim(int(d), rank) for d in dims)


LOWERINGS: Dict[Any, Callable] = {}
# Multi-output ATen ops: which outputs the lowering can produce (others must be unused).
PARTIAL_OUTPUTS: Dict[Any, Tuple[int, ...]] = {}


def lowering(*targets, outputs: Optional[Tuple[int, ...]] = None):
    def deco(fn):
        for t in targets:
            LOWERINGS[t] = fn
            if outputs is not None:
                PARTIAL_OUTPUTS[t] = outputs
        return fn
    return deco


# --- elementwise, derived from the op table -------------------------------------------------------------------

ELEMENTWISE_CATEGORIES = ("unary", "binary", "compare", "ternary", "activation")
COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
LOGICAL = {"logical_and", "logical_or", "logical_xor", "logical_not"}
# PrimKit ops whose result is bool regardless of the inputs' dtype.
PREDICATES = COMPARE | {"isnan", "isinf", "isfinite", "signbit", "logical_not", "logical_and", "logical_or",
                        "logical_xor"}
SPECIAL_NAMES = {"erfinv": "erf_inv"}  # ATen names that differ from the table's


def elementwise(pk_name: str, attr_names: Sequence[str]):
    def lower(b: Builder, node, *args, **kwargs):
        shape, odt = out_shape(node), out_dtype(node)
        tensors = [a for a in args if isinstance(a, Value)]
        if pk_name in PREDICATES and pk_name not in ("logical_not", "logical_and", "logical_or", "logical_xor"):
            # compute in the promoted input type (Python scalars adopt the tensor's type, as in PyTorch)
            ins_dt = _promote([a for a in args if a is not None])
        elif pk_name in LOGICAL:
            ins_dt = pk_dtype("bool")
        else:
            ins_dt = odt
        ins = [b.tensor(a, ins_dt, shape) for a in args if not isinstance(a, (str,)) and a is not None]
        attrs = {k: v for k, v in kwargs.items() if k in attr_names}
        if any(isinstance(v, Value) for v in attrs.values()):
            raise Unsupported("a tensor where PrimKit's %s takes a scalar attribute" % pk_name)
        extra = set(kwargs) - set(attr_names) - {"alpha"}
        if extra:
            raise Unsupported("keyword arguments %s have no PrimKit counterpart" % sorted(extra))
        if "alpha" in kwargs and kwargs["alpha"] not in (None, 1):
            ins[1] = b.op("mul", ins[1], b.scalar(kwargs["alpha"], ins_dt, shape))
        if ins_dt.name in ("f16", "bf16") and pk_ops.info(pk_name).tier == "composite":
            # PyTorch computes 16-bit composites in f32 ("opmath") and rounds once; so does the bridge
            f32 = pk_dtype("f32")
            return b.cast(b.op(pk_name, *[b.cast(v, f32) if v.dtype is ins_dt else v for v in ins], **attrs), odt)
        out = b.op(pk_name, *ins, **attrs)
        return b.cast(out, odt)
    lower.__name__ = "lower_" + pk_name
    return lower


def _promote(args) -> DType:
    tensors = [a for a in args if isinstance(a, Value)]
    if not tensors:
        raise Unsupported("no tensor operand")
    dt = tensors[0].dtype.torch()
    for t in tensors[1:]:
        dt = torch.promote_types(dt, t.dtype.torch())
    # Python scalars: a float scalar makes an integer comparison a float one
    if any(isinstance(a, float) for a in args) and not pk_dtype(dt).is_float:
        dt = torch.get_default_dtype()
    return pk_dtype(dt)


def register_derived() -> None:
    for name in pk_ops.names():
        info = pk_ops.info(name)
        if info.category not in ELEMENTWISE_CATEGORIES or info.num_outputs != 1 or info.variadic:
            continue
        if any(a["type"] in ("ints", "dtype", "enum") for a in info.attrs):
            continue
        aten_name = {v: k for k, v in SPECIAL_NAMES.items()}.get(name, name)
        packet = getattr(aten, aten_name, None)
        if packet is None:
            continue
        for overload in ("default", "Tensor", "Scalar", "Tensor_Tensor", "Tensor_Scalar", "Scalar_Tensor", "self"):
            target = getattr(packet, overload, None)
            if target is None or target in LOWERINGS:
                continue
            # The ATen schema's argument names must cover the table's attributes (or the op has none).
            arg_names = [a.name for a in target._schema.arguments]
            if any(a["name"] not in arg_names for a in info.attrs if a["required"]):
                continue
            LOWERINGS[target] = _positional_attrs(elementwise(name, [a["name"] for a in info.attrs]),
                                                  target, info)


def _positional_attrs(fn, target, info):
    """Moves ATen arguments that are PrimKit attributes (given positionally) into keywords."""
    schema = [a.name for a in target._schema.arguments]
    attr_names = {a["name"] for a in info.attrs}
    n_in = info.num_inputs

    def lower(b, node, *args, **kwargs):
        pos, kw = [], dict(kwargs)
        for i, a in enumerate(args):
            if i < len(schema) and schema[i] in attr_names and i >= n_in:
                kw[schema[i]] = a
            else:
                pos.append(a)
        return fn(b, node, *pos, **kw)
    return lower


# --- identity, views and shape ----------------------------------------------------------------------------------

@lowering(aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default, aten.clone.default,
          aten.contiguous.default)
def _identity(b, node, x, *args, **kwargs):
    return b.op("clone", x) if not isinstance(x, Value) else x


@lowering(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.view.dtype)
def _view(b, node, x, *args, **kwargs):
    if out_dtype(node) is not x.dtype:
        raise Unsupported("view as another dtype (a bitcast) is not lowered")
    return b.reshape(x, out_shape(node))


@lowering(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default,
          aten.flatten.using_ints)
def _reshape_like(b, node, x, *args, **kwargs):
    return b.reshape(x, out_shape(node))


@lowering(aten.permute.default)
def _permute(b, node, x, dims):
    perm = [norm_dim(int(d), len(x.shape)) for d in dims]
    if perm == list(range(len(perm))):
        return x
    return b.op("transpose", x, permutation=perm)


@lowering(aten.t.default, aten.transpose.int)
def _transpose(b, node, x, d0=0, d1=1):
    r = len(x.shape)
    if r < 2:
        return x
    perm = list(range(r))
    a, c = norm_dim(d0, r), norm_dim(d1, r)
    perm[a], perm[c] = perm[c], perm[a]
    return b.op("transpose", x, permutation=perm)


@lowering(aten.expand.default)
def _expand(b, node, x, size, *args, **kwargs):
    return b.broadcast(x, out_shape(node))


@lowering(aten.slice.Tensor)
def _slice(b, node, x, dim=0, start=None, end=None, step=1):
    r = len(x.shape)
    d = norm_dim(dim, r)
    n = x.shape[d]
    s, e, _ = slice(start, end, step).indices(n)
    e = max(e, s)
    if s == 0 and e == n and step == 1:
        return x
    return b.op("slice_in_dim", x, start=s, limit=e, stride=int(step), dim=d)


@lowering(aten.select.int)
def _select(b, node, x, dim, index):
    r = len(x.shape)
    d = norm_dim(dim, r)
    i = index + x.shape[d] if index < 0 else index
    v = b.op("slice_in_dim", x, start=i, limit=i + 1, stride=1, dim=d)
    return b.reshape(v, out_shape(node))


@lowering(aten.cat.default)
def _cat(b, node, tensors, dim=0):
    odt = out_dtype(node)
    ts = [b.cast(t, odt) for t in tensors if isinstance(t, Value) and 0 not in t.shape or len(tensors) == 1]
    if len(ts) == 1:
        return ts[0]
    return b.op("cat", *ts, dim=norm_dim(dim, len(out_shape(node))))


@lowering(aten._to_copy.default, aten.to.dtype, aten.convert_element_type.default if hasattr(
    aten, "convert_element_type") else aten._to_copy.default)
def _to_copy(b, node, x, *args, **kwargs):
    return b.cast(x, out_dtype(node))


@lowering(aten.constant_pad_nd.default)
def _pad(b, node, x, pad, value=0.0):
    r = len(x.shape)
    low, high = [0] * r, [0] * r
    for i in range(len(pad) // 2):
        low[r - 1 - i], high[r - 1 - i] = int(pad[2 * i]), int(pad[2 * i + 1])
    return b.op("pad", x, value=float(value), low=low, high=high)


# --- creation -------------------------------------------------------------------------------------------------

@lowering(aten.full.default, aten.zeros.default, aten.ones.default, aten.scalar_tensor.default,
          aten.new_full.default, aten.full_like.default, aten.zeros_like.default, aten.ones_like.default)
def _full(b, node, *args, **kwargs):
    t = node.target
    if t in (aten.zeros.default, aten.zeros_like.default):
        value = 0.0
    elif t in (aten.ones.default, aten.ones_like.default):
        value = 1.0
    elif t is aten.scalar_tensor.default:
        value = args[0]
    elif t is aten.full.default:
        value = args[1]
    else:  # new_full(self, size, value), full_like(self, value)
        value = args[2] if t is aten.new_full.default else args[1]
    if isinstance(value, Value):
        raise Unsupported("a tensor fill value")
    return b.scalar(value, out_dtype(node), out_shape(node))


@lowering(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(b, node, *args, **kwargs):
    n = out_shape(node)[0]
    start = args[0] if len(args) >= 2 else 0
    step = args[2] if len(args) >= 3 else kwargs.get("step", 1)
    odt = out_dtype(node)
    if all(isinstance(v, int) for v in (start, step)):
        return b.op("iota", length=n, start=int(start), step=int(step), dtype=odt)
    # float ranges: start + step * i in f64, then rounded once to the output type
    i = b.op("iota", length=n, dtype=pk_dtype("f64"))
    v = b.op("add", b.op("mul", i, b.scalar(step, i.dtype, [n])), b.scalar(start, i.dtype, [n]))
    return b.cast(v, odt)


# --- arithmetic the derivation cannot express -------------------------------------------------------------------

@lowering(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(b, node, x, other, alpha=1):
    shape, odt = out_shape(node), out_dtype(node)
    o, a = b.tensor(other, odt, shape), b.tensor(x, odt, shape)
    if alpha != 1:
        a = b.op("mul", a, b.scalar(alpha, odt, shape))
    return b.op("sub", o, a)


@lowering(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(b, node, x, y, rounding_mode=None):
    shape, odt = out_shape(node), out_dtype(node)
    # floor division in f32 ("opmath") and rounded once, as PyTorch does; PyTorch's trunc and true division of
    # 16-bit floats round the quotient first (measured against its OpInfo samples)
    cdt = pk_dtype("f32") if odt.name in ("f16", "bf16") and rounding_mode == "floor" else odt
    a, c = b.tensor(x, cdt, shape), b.tensor(y, cdt, shape)
    if cdt is not odt:
        return b.cast(_div_mode_in(b, a, c, rounding_mode, cdt), odt)
    return _div_mode_in(b, a, c, rounding_mode, odt)


def _div_mode_in(b, a, c, rounding_mode, odt):
    if rounding_mode is None:
        return b.op("div", a, c)
    if rounding_mode == "floor":
        return b.op("floor_divide", a, c)
    if odt.is_float:
        return b.op("trunc", b.op("div", a, c))
    return b.op("div", a, c)  # integer div truncates toward zero


@lowering(aten.addcdiv.default, aten.addcmul.default)
def _addc(b, node, x, t1, t2, value=1):
    # x + value * t1 / t2 and x + value * t1 * t2, left to right, in f32 for 16-bit floats and rounded once, as
    # PyTorch's CPU kernels compute them ("opmath"). Core ATen's decomposition into bf16 div, mul and add rounds
    # three times: addcdiv of -8.5, 4.15625, -0.4375 with value 3.14 gave -38.5 where PyTorch gives -38.25 (exact:
    # -38.33).
    shape, odt = out_shape(node), out_dtype(node)
    cdt = pk_dtype("f32") if odt.name in ("f16", "bf16") else odt
    a, p, q = (b.tensor(v, cdt, shape) for v in (x, t1, t2))
    if value != 1:
        p = b.op("mul", b.scalar(value, cdt, shape), p)
    term = b.op("div" if node.target is aten.addcdiv.default else "mul", p, q)
    out = b.op("add", a, term)
    return b.cast(out, odt) if cdt is not odt else out


@lowering(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(b, node, cond, x, y):
    shape, odt = out_shape(node), out_dtype(node)
    return b.op("where", b.tensor(cond, pk_dtype("bool"), shape), b.tensor(x, odt, shape), b.tensor(y, odt, shape))


@lowering(aten.masked_fill.Scalar)
def _masked_fill(b, node, x, mask, value):
    shape, odt = out_shape(node), out_dtype(node)
    return b.op("where", b.tensor(mask, pk_dtype("bool"), shape), b.scalar(value, odt, shape), x)


@lowering(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default, aten.hardtanh.default,
          aten.clamp.Tensor, aten.clamp_min.Tensor, aten.clamp_max.Tensor)
def _clamp(b, node, x, lo=None, hi=None, **kwargs):
    lo, hi = kwargs.get("min", lo), kwargs.get("max", hi)
    if node.target in (aten.clamp_max.default, aten.clamp_max.Tensor):
        lo, hi = None, lo
    if node.target is aten.hardtanh.default:
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
    shape, odt = out_shape(node), out_dtype(node)
    v = b.broadcast(b.cast(x, odt), shape)
    # PyTorch: max(min(x, hi), lo) order matters only when lo > hi (then the result is hi)
    if lo is not None:
        v = b.op("maximum", v, b.tensor(lo, odt, shape))
    if hi is not None:
        v = b.op("minimum", v, b.tensor(hi, odt, shape))
    return v


@lowering(aten.pow.Tensor_Scalar)
def _pow_scalar(b, node, x, e):
    shape, odt = out_shape(node), out_dtype(node)
    v = b.cast(x, odt)
    if e == 2:
        return b.op("mul", v, v)
    if e == 1:
        return v
    if e == 0.5:
        return b.op("sqrt", v)
    if e == -1:
        return b.op("reciprocal", v)
    if e == 3:
        return b.op("mul", b.op("mul", v, v), v)
    return b.op("pow", v, b.scalar(e, odt, shape))


@lowering(aten.gelu.default)
def _gelu(b, node, x, approximate="none"):
    return b.op("gelu_tanh" if approximate == "tanh" else "gelu", x)


@lowering(aten.leaky_relu.default)
def _leaky_relu(b, node, x, negative_slope=0.01):
    return b.op("leaky_relu", x, negative_slope=float(negative_slope))


# --- reductions -------------------------------------------------------------------------------------------------

def _keepdim(b, node, v):
    return b.reshape(v, out_shape(node))


def _reduce(pk_name, float_only=False):
    def lower(b, node, x, dims=None, keepdim=False, *args, **kwargs):
        odt = out_dtype(node)
        d = norm_dims(dims, len(x.shape))
        src = b.cast(x, odt) if (odt.is_float or pk_name in ("sum", "prod")) else x
        v = b.op(pk_name, src, dims=d) if d else src
        return _keepdim(b, node, b.cast(v, odt))
    return lower


LOWERINGS[aten.sum.dim_IntList] = _reduce("sum")
LOWERINGS[aten.mean.dim] = _reduce("mean")
LOWERINGS[aten.amax.default] = _reduce("amax")
LOWERINGS[aten.amin.default] = _reduce("amin")
LOWERINGS[aten.prod.dim_int] = _reduce("prod")
LOWERINGS[aten.any.dims] = _reduce("any")
LOWERINGS[aten.any.dim] = _reduce("any")
LOWERINGS[aten.any.default] = _reduce("any")
LOWERINGS[aten.prod.default] = _reduce("prod")


@lowering(aten.sum.default, aten.mean.default)
def _reduce_all(b, node, x, *args, **kwargs):
    odt = out_dtype(node)
    name = "sum" if node.target is aten.sum.default else "mean"
    return b.op(name, b.cast(x, odt), dims=list(range(len(x.shape)))) if x.shape else b.cast(x, odt)


@lowering(aten.var.correction)
def _var_only(b, node, x, dims=None, correction=None, keepdim=False, **kwargs):
    return _var(b, node, x, dims, correction, keepdim)


@lowering(aten.var_mean.correction, outputs=(0, 1))
def _var(b, node, x, dims=None, correction=None, keepdim=False, **kwargs):
    d = norm_dims(dims, len(x.shape))
    corr = 1.0 if correction is None else float(correction)
    v = b.op("var", x, dims=d, correction=corr)
    if node.target is aten.var.correction:
        return _keepdim(b, node, v)
    m = b.op("mean", x, dims=d)
    return b.reshape(v, out_shape(node, 0)), b.reshape(m, out_shape(node, 1))


@lowering(aten.argmax.default, aten.argmin.default)
def _argmax(b, node, x, dim=None, keepdim=False):
    if dim is None:
        x, dim = b.reshape(x, [max(1, math.prod(x.shape))]), 0
    v = b.op("argmax" if node.target is aten.argmax.default else "argmin", x, dim=norm_dim(dim, len(x.shape)))
    return _keepdim(b, node, b.cast(v, out_dtype(node)))


@lowering(aten._softmax.default, aten._log_softmax.default)
def _softmax(b, node, x, dim, half_to_float=False):
    odt = out_dtype(node)
    name = "softmax" if node.target is aten._softmax.default else "log_softmax"
    return b.op(name, b.cast(x, odt), dim=norm_dim(dim, len(x.shape)))


# --- normalization ---------------------------------------------------------------------------------------------

@lowering(aten.native_layer_norm.default, outputs=(0, 1, 2))
def _layer_norm(b, node, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    r, k = len(x.shape), len(normalized_shape)
    norm_shape = list(x.shape[r - k:])
    dt = x.dtype
    w = weight if weight is not None else b.scalar(1.0, dt, norm_shape)
    bb = bias if bias is not None else b.scalar(0.0, dt, norm_shape)
    users = {u.args[1] for u in node.users if u.target is operator.getitem}
    out = b.op("layer_norm", x, w, bb, normalized_ndim=k, eps=float(eps))
    if users <= {0}:
        return (out, None, None)
    # mean and rstd (the backward pass needs them): in f32 or wider, shaped [..., 1, ...1]
    sdt = pk_dtype(meta_val(node)[1].dtype)
    xs = b.cast(x, sdt)
    dims = list(range(r - k, r))
    mean = b.op("mean", xs, dims=dims)
    var = b.op("var", xs, dims=dims, correction=0.0)
    rstd = b.op("rsqrt", b.op("add", var, b.scalar(eps, sdt, var.shape)))
    return out, b.reshape(mean, out_shape(node, 1)), b.reshape(rstd, out_shape(node, 2))


@lowering(aten._native_batch_norm_legit_no_training.default, outputs=(0,))
def _batch_norm(b, node, x, weight, bias, running_mean, running_var, momentum, eps):
    c = x.shape[1]
    dt = x.dtype
    w = weight if weight is not None else b.scalar(1.0, dt, [c])
    bb = bias if bias is not None else b.scalar(0.0, dt, [c])
    return (b.op("batch_norm", x, running_mean, running_var, w, bb, eps=float(eps)), None, None)


# --- linear algebra -----------------------------------------------------------------------------------------------

@lowering(aten.mm.default)
def _mm(b, node, x, y):
    return b.op("matmul", x, y)


@lowering(aten.bmm.default)
def _bmm(b, node, x, y):
    return b.op("batch_matmul", x, y)


def _transposed_weight(b, node):
    """The [N, K] weight behind addmm/mm's second operand when it is permute(w, [1, 0]) or t(w) in the same
    partition (nn.Linear's pattern): PrimKit's linear reads it as is, and the transpose is never materialized."""
    src = node.args[2] if node.target is aten.addmm.default else node.args[1]
    if not hasattr(src, "target"):
        return None
    if src.target is aten.t.default or (src.target is aten.permute.default and list(src.args[1]) == [1, 0]):
        w = b.env.get(src.args[0])
        if isinstance(w, Value) and len(w.shape) == 2:
            return w
    return None


@lowering(aten.addmm.default)
def _addmm(b, node, c, x, y, beta=1, alpha=1):
    shape = out_shape(node)
    w = _transposed_weight(b, node)
    bias_like = isinstance(c, Value) and list(c.shape) in ([shape[1]], [1, shape[1]])
    if beta == 1 and alpha == 1 and bias_like and isinstance(y, Value) and len(y.shape) == 2:
        # nn.Linear's t(w) is read as w; any other [K, N] weight (Hugging Face's Conv1D) as a transposed view,
        # which graphs alias rather than copy.
        w = w if w is not None else b.op("transpose", y, permutation=[1, 0])
        return b.op("linear", x, w, b.reshape(c, [shape[1]]))
    mm = b.op("matmul", x, y)
    if alpha != 1:
        mm = b.op("mul", mm, b.scalar(alpha, mm.dtype, shape))
    if beta == 0:
        return mm
    cc = b.broadcast(c, shape)
    if beta != 1:
        cc = b.op("mul", cc, b.scalar(beta, mm.dtype, shape))
    return b.op("add", mm, cc)


@lowering(aten.convolution.default)
def _convolution(b, node, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        raise Unsupported("transposed convolution is not lowered")
    pad = [int(p) for p in padding]
    out = b.op("convolution", x, w, stride=[int(s) for s in stride], padding_low=pad, padding_high=pad,
               dilation=[int(d) for d in dilation], groups=int(groups))
    if bias is not None:
        shape = out_shape(node)
        out = b.op("add", out, b.op("broadcast_in_dim", bias, shape=shape, broadcast_dimensions=[1]))
    return out


# --- pooling, indexing, attention ---------------------------------------------------------------------------------

@lowering(aten.max_pool2d_with_indices.default, outputs=(0,))
def _max_pool(b, node, x, kernel, stride=None, padding=(0, 0), dilation=(1, 1), ceil_mode=False):
    if ceil_mode:
        raise Unsupported("ceil_mode pooling is not lowered")
    k = [int(v) for v in kernel] * (2 // len(kernel))
    s = [int(v) for v in (stride or kernel)] * (2 // len(stride or kernel))
    p = [int(v) for v in padding] * (2 // len(padding))
    dl = [int(v) for v in dilation] * (2 // len(dilation))
    return (b.op("max_pool2d", x, kernel_size=k, stride=s, padding=p, dilation=dl), None)


@lowering(aten.avg_pool2d.default)
def _avg_pool(b, node, x, kernel, stride=None, padding=(0, 0), ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    if ceil_mode or divisor_override is not None:
        raise Unsupported("ceil_mode / divisor_override pooling is not lowered")
    k = [int(v) for v in kernel] * (2 // len(kernel))
    s = [int(v) for v in (stride or kernel)] * (2 // len(stride or kernel))
    p = [int(v) for v in padding] * (2 // len(padding))
    return b.op("avg_pool2d", x, kernel_size=k, stride=s, padding=p, count_include_pad=bool(count_include_pad))


@lowering(aten._adaptive_avg_pool2d.default)
def _adaptive_avg(b, node, x, output_size):
    return b.op("adaptive_avg_pool2d", x, output_size=[int(v) for v in output_size])


@lowering(aten.embedding.default)
def _embedding(b, node, weight, indices, *args, **kwargs):
    return b.op("embedding", weight, indices)


@lowering(aten.index_select.default)
def _index_select(b, node, x, dim, index):
    return b.op("index_select", x, index, dim=norm_dim(dim, len(x.shape)))


@lowering(aten.gather.default)
def _gather(b, node, x, dim, index, sparse_grad=False):
    return b.op("gather", x, index, dim=norm_dim(dim, len(x.shape)))


def _attention(b, q, k, v, attn_mask, is_causal, scale):
    """op 1700 where it suffices (no mask, as many kv heads as query heads), else the masked op with grouped
    heads; an unmasked grouped call gets a 0-d true mask, which the kernel reads as a broadcast."""
    s = float(scale) if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    if attn_mask is None and q.shape[1] == k.shape[1]:
        return b.op("scaled_dot_product_attention", q, k, v, scale=s, is_causal=bool(is_causal))
    if attn_mask is None:
        attn_mask = b.op("full", shape=[], value=1.0, dtype=pk_dtype("bool"))
    elif not isinstance(attn_mask, Value):
        raise Unsupported("an attention mask that is not a tensor")
    elif attn_mask.dtype.name != "bool" and attn_mask.dtype is not q.dtype:
        attn_mask = b.cast(attn_mask, q.dtype)
    return b.op("scaled_dot_product_attention_masked", q, k, v, attn_mask, scale=s, is_causal=bool(is_causal))


# What dynamo + aot_autograd give F.scaled_dot_product_attention on CPU: the flash kernel's op, with k and v
# keeping their kv heads under enable_gqa, and a bool attn_mask already turned additive (where(m, 0, -inf)).
@lowering(aten._scaled_dot_product_flash_attention_for_cpu.default, outputs=(0,))
def _sdpa_cpu(b, node, q, k, v, dropout_p=0.0, is_causal=False, *args, attn_mask=None, scale=None):
    if dropout_p:
        raise Unsupported("attention dropout is not lowered")
    return (_attention(b, q, k, v, attn_mask, is_causal, scale), None)


# The un-decomposed ATen op (graphs captured before its CPU dispatch), bool or additive mask as given.
@lowering(aten.scaled_dot_product_attention.default)
def _sdpa(b, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if dropout_p:
        raise Unsupported("attention dropout is not lowered")
    if q.shape[1] != k.shape[1] and not enable_gqa:
        raise Unsupported("kv heads differ from query heads without enable_gqa")
    return _attention(b, q, k, v, attn_mask, is_causal, scale)


# Python operators on tuples of outputs.
def lower_getitem(values, index):
    v = values[index]
    if v is None:
        raise Unsupported("output %d of a multi-output op is not lowered" % index)
    return v


register_derived()


@lowering(aten.split_with_sizes.default, aten.split.Tensor)
def _split(b, node, x, sizes, dim=0):
    d = norm_dim(dim, len(x.shape))
    n = x.shape[d]
    if isinstance(sizes, int):  # split.Tensor: chunks of `sizes`
        sizes = [min(sizes, n - s) for s in range(0, n, sizes)] or [0]
    outs, start = [], 0
    for s in sizes:
        outs.append(b.op("slice_in_dim", x, start=start, limit=start + int(s), stride=1, dim=d))
        start += int(s)
    return tuple(outs)


@lowering(aten.native_dropout.default, outputs=(0, 1))
def _dropout(b, node, x, p, train=True):
    if train and p > 0:
        # PrimKit's dropout draws from Philox with its own stream; results could not match PyTorch's RNG.
        raise Unsupported("dropout with p > 0 in training: PyTorch's random stream cannot be reproduced")
    return x, b.scalar(1.0, pk_dtype("bool"), x.shape)


def _wrap_index(b, idx, extent):
    """PyTorch counts negative indices from the end; PrimKit skips out-of-range ones."""
    zero = b.scalar(0, idx.dtype, idx.shape)
    return b.op("where", b.op("lt", idx, zero), b.op("add", idx, b.scalar(extent, idx.dtype, idx.shape)), idx)


@lowering(aten.index_put.default)
def _index_put(b, node, x, indices, values, accumulate=False):
    if any(i is None for i in indices) or not indices:
        raise Unsupported("index_put with None (slice) indices")
    if any(i.shape != indices[0].shape for i in indices):
        raise Unsupported("index_put with index tensors of different shapes (broadcast indices)")
    if any(i.dtype.name not in ("i32", "i64") for i in indices):
        raise Unsupported("index_put with boolean (mask) indices")
    ishape = list(indices[0].shape)
    n = math.prod(ishape)
    rest = list(x.shape[len(indices):])
    # index tensors of any one shape: flattened to PrimKit's 1-D form, values to [n] + the rest
    idx = [_wrap_index(b, b.reshape(i, [n]), x.shape[k]) for k, i in enumerate(indices)]
    vals = b.reshape(b.broadcast(b.cast(values, x.dtype), ishape + rest), [n] + rest)
    return b.op("index_put", x, vals, *idx, accumulate=bool(accumulate))


@lowering(aten.scatter.value, aten.scatter.src)
def _scatter(b, node, x, dim, index, src):
    d = norm_dim(dim, len(x.shape))
    s = b.tensor(src, x.dtype, index.shape) if not isinstance(src, Value) else src
    if isinstance(src, Value) and list(src.shape) != list(index.shape):
        s = b.op("slice", src, start_indices=[0] * len(index.shape), limit_indices=list(index.shape))
    return b.op("scatter", x, _wrap_index(b, index, x.shape[d]), s, dim=d)
