"""The torch.compile backend: aot_autograd graphs (Core ATen) -> partitions PrimKit can run -> PrimKit graph
executables; the rest stays in eager PyTorch. One Compiler per torch.compile call carries the options and the
explain() report."""

from __future__ import annotations

import math
import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

import primkit
from .. import _primkit
from ..dtypes import dtype as pk_dtype
from ..graph import Graph, Value
from .lowering import LOWERINGS, PARTIAL_OUTPUTS, Builder, Unsupported, lower_getitem, meta_val


class PrimKitCompileError(RuntimeError):
    """strict mode: a node of the graph cannot run on the PrimKit device (the message names it and why)."""


# --- options -----------------------------------------------------------------------------------------------

class Options:
    """torch.compile(..., backend="primkit", options={...}):
    device  "cpu:0" (default), "opencl:0", "cuda-emu:0", or any loaded backend's device
    strict  False: nodes PrimKit cannot run stay in eager PyTorch; True: raise PrimKitCompileError naming them
    fusion  True: the runtime offers fusable regions to the backend's fusion hook
    report  a primkit.torch.Report to fill (explain() passes one)"""

    KNOWN = ("device", "strict", "fusion", "report")

    def __init__(self, options: Optional[dict]):
        options = dict(options or {})
        unknown = set(options) - set(self.KNOWN)
        if unknown:
            raise ValueError("primkit backend: unknown options %s (known: %s)" % (sorted(unknown), self.KNOWN))
        self.device = primkit.device(options.get("device", "cpu:0"))
        self.strict = bool(options.get("strict", False))
        self.fusion = bool(options.get("fusion", True))
        self.report = options.get("report")
        props = self.device.props()
        self.host_addressable = props["device_type"] == 1 or props["unified_memory"]


# --- the report -------------------------------------------------------------------------------------------

class Report:
    """Where each ATen node ran. `nodes` is a list of dicts: graph ("forward"/"backward"/"inference"), node,
    target, where ("primkit" or "eager"), device, partition, kernel (PrimKit graph and its fused-kernel stats),
    intermediate_bytes / unshared_intermediate_bytes (device memory of the partition's intermediates, shared by
    liveness, against a buffer each),
    reason."""

    def __init__(self):
        self.nodes: List[dict] = []
        self.partitions: List[dict] = []

    @property
    def share_on_primkit(self) -> float:
        n = [r for r in self.nodes if r["counted"]]
        return sum(r["where"] == "primkit" for r in n) / len(n) if n else 1.0

    def eager_nodes(self) -> List[dict]:
        return [r for r in self.nodes if r["where"] == "eager" and r["counted"]]

    def __str__(self) -> str:
        lines = ["%-10s %-34s %-44s %-9s %s" % ("graph", "node", "aten op", "where", "detail")]
        for r in self.nodes:
            if not r["counted"]:
                continue
            detail = r["reason"] if r["where"] == "eager" else "%s, partition %d (%s)" % (
                r["device"], r["partition"], r["kernel"])
            lines.append("%-10s %-34s %-44s %-9s %s" % (r["graph"], r["node"][:34], r["target"][:44], r["where"],
                                                        detail))
        lines.append("%d of %d ATen nodes ran on PrimKit (%.1f %%)" % (
            sum(r["where"] == "primkit" for r in self.nodes if r["counted"]),
            sum(1 for r in self.nodes if r["counted"]), 100.0 * self.share_on_primkit))
        return "\n".join(lines)


# --- support ------------------------------------------------------------------------------------------------

def _tensor_metas(node) -> List[Any]:
    v = meta_val(node)
    vals = v if isinstance(v, (tuple, list)) else [v]
    return [x for x in vals if isinstance(x, torch.Tensor)]


def _static(t: torch.Tensor) -> bool:
    return all(isinstance(s, int) for s in t.shape)


def _arg_value(a: Any, env: Dict[Any, Any]):
    if isinstance(a, torch.fx.Node):
        return env[a]
    if isinstance(a, (list, tuple)):
        return type(a)(_arg_value(x, env) for x in a)
    return a


class Support(OperatorSupportBase):
    """A node is supported when its lowering succeeds on its own (the runtime validates every PrimKit node it
    emits) and the device's capability query accepts each emitted op, or the op is a composite the runtime
    decomposes."""

    def __init__(self, compiler: "Compiler"):
        super().__init__()
        self.c = compiler
        self.reasons: Dict[torch.fx.Node, str] = {}

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node in self.reasons:
            return self.reasons[node] == ""
        reason = self._check(node)
        self.reasons[node] = reason
        return reason == ""

    def _check(self, node) -> str:
        if node.target is operator.getitem:
            src = node.args[0]
            if not isinstance(src, torch.fx.Node) or not self.is_node_supported(None, src):
                return "getitem of a node that runs in eager"
            allowed = PARTIAL_OUTPUTS.get(src.target)
            if allowed is not None and node.args[1] not in allowed:
                return "output %d of %s is not lowered" % (node.args[1], src.target)
            return ""
        fn = LOWERINGS.get(node.target)
        if fn is None:
            return "no PrimKit lowering for %s" % node.target
        allowed = PARTIAL_OUTPUTS.get(node.target)
        if allowed is not None:
            # every output that is used must be one the lowering produces (a partition returns values, not tuples)
            for u in node.users:
                if u.target is not operator.getitem or u.args[1] not in allowed:
                    return "output %s of %s is used and not lowered" % (
                        u.args[1] if u.target is operator.getitem else "tuple", node.target)
        for t in _tensor_metas(node) + [m for a in node.all_input_nodes for m in _tensor_metas(a)]:
            if not _static(t):
                return "symbolic shape"
            if t.dim() > 8:
                return "rank %d > 8" % t.dim()
            try:
                pk_dtype(t.dtype)
            except (TypeError, KeyError):
                return "dtype %s has no PrimKit equivalent" % t.dtype
            if t.device.type != "cpu":
                return "tensor on %s (the bridge exchanges host tensors)" % t.device
        return self.c.trial_lower(node)


# --- one compiled partition ------------------------------------------------------------------------------------

class PrimKitModule(torch.nn.Module):
    """Runs one partition as a PrimKit executable. Host-addressable devices read and write the torch tensors'
    memory directly; others copy through PrimKit buffers."""

    def __init__(self, compiler: "Compiler", sub: torch.fx.GraphModule, index: int):
        super().__init__()
        self.c = compiler
        self.index = index
        g = Graph()
        env: Dict[Any, Any] = {}
        b = Builder(g, env)
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        self.n_args = len(placeholders)
        self.arg_index: List[int] = []  # graph input k <- call argument arg_index[k]
        for i, n in enumerate(placeholders):
            t = meta_val(n)
            if isinstance(t, torch.Tensor):
                env[n] = g.input(pk_dtype(t.dtype), [int(s) for s in t.shape])
                self.arg_index.append(i)
            else:
                env[n] = t  # a Python scalar (static)
        out_node = None
        for n in sub.graph.nodes:
            if n.op == "call_function":
                args = _arg_value(n.args, env)
                kwargs = {k: _arg_value(v, env) for k, v in n.kwargs.items()}
                if n.target is operator.getitem:
                    env[n] = lower_getitem(args[0], args[1])
                else:
                    env[n] = LOWERINGS[n.target](b, n, *args, **kwargs)
            elif n.op == "output":
                out_node = n
        outs = out_node.args[0]
        self.single = not isinstance(outs, (tuple, list))
        outs = [outs] if self.single else list(outs)
        g, remap = _live_subgraph(g, b.emitted, [env[o] for o in outs])
        for k in list(env):
            if isinstance(env[k], Value) and int(env[k]) in remap:
                env[k] = remap[int(env[k])]
        # Outputs: PrimKit values, or graph inputs passed through (returned as the caller's tensor).
        self.out_plan: List[Tuple[str, int]] = []
        marked: Dict[int, int] = {}
        input_ids = {int(v): k for k, v in enumerate(g.inputs)}
        for o in outs:
            v = env[o]
            if int(v) in input_ids:
                self.out_plan.append(("arg", self.arg_index[input_ids[int(v)]]))
            elif int(v) in marked:
                self.out_plan.append(("out", marked[int(v)]))
            else:
                marked[int(v)] = len(g.outputs)
                g.output(v)
                self.out_plan.append(("out", marked[int(v)]))
        self.out_specs = [(o.dtype.torch(), tuple(o.shape)) for o in g.outputs]
        # A partition whose outputs are all its own inputs (views PrimKit folded away) needs no executable.
        self.exe = g.compile(compiler.opts.device, fusion=compiler.opts.fusion) if g.outputs else None
        self.stream = primkit.stream(compiler.opts.device)
        self.stats = self.exe.stats() if self.exe else {}

    def forward(self, *args):
        ins = [args[k] for k in self.arg_index]
        outs = [torch.empty(shape, dtype=dt) for dt, shape in self.out_specs]
        if self.exe is None:
            pass
        elif self.c.opts.host_addressable:
            ptrs = [(t if t.is_contiguous() else t.contiguous()) for t in ins]
            self.exe._exe.run_ptrs(self.stream, [t.data_ptr() for t in ptrs], [t.data_ptr() for t in outs])
        else:
            dev = self.c.opts.device
            dins = [_primkit.to_device(_primkit.from_dlpack(t.detach().contiguous()), dev, self.stream) for t in ins]
            douts = [_primkit.empty(dev, pk_dtype(t.dtype).code_bits, list(t.shape)) for t in outs]
            self.exe._exe.run(self.stream, dins, douts)
            self.stream.synchronize()
            for d, t in zip(douts, outs):
                _primkit.copy_to_host(d, self.stream, t.data_ptr())
        res = [outs[i] if kind == "out" else args[i] for kind, i in self.out_plan]
        return res[0] if self.single else tuple(res)


def _direct_call(fused: torch.fx.GraphModule, modules: Dict[int, "PrimKitModule"]):
    """Where the whole graph is one PrimKit partition called on the graph's inputs in order, a plain function that
    calls it and arranges its outputs as the graph's output node does: the GraphModule and the two nn.Module calls
    around the partition cost about a fifth of a small graph's per-call time. None otherwise."""
    nodes = list(fused.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    calls = [n for n in nodes if n.op == "call_module"]
    outputs = [n for n in nodes if n.op == "output"]
    if len(calls) != 1 or len(outputs) != 1 or len(modules) != 1 or tuple(calls[0].args) != tuple(placeholders):
        return None
    call = calls[0]
    m = getattr(fused, call.target)
    others = [n for n in nodes if n.op not in ("placeholder", "call_module", "output")]
    if any(n.op != "call_function" or n.target is not operator.getitem or n.args[0] is not call or
           not isinstance(n.args[1], int) for n in others):
        return None
    out = outputs[0].args[0]
    if not isinstance(out, (tuple, list)):
        return None
    # each graph output: the partition's result itself, its item i, or the graph's input j
    plan = []
    for o in out:
        if o is call:
            plan.append(("r", 0))
        elif isinstance(o, torch.fx.Node) and o in others:
            plan.append(("i", o.args[1]))
        elif isinstance(o, torch.fx.Node) and o in placeholders:
            plan.append(("a", placeholders.index(o)))
        else:
            return None
    forward, kind_type = m.forward, (list if isinstance(out, list) else tuple)

    def run(*args):
        r = forward(*args)
        return kind_type(r if k == "r" else r[i] if k == "i" else args[i] for k, i in plan)

    return run


def _live_subgraph(g: Graph, emitted, outputs) -> Tuple[Graph, Dict[int, Value]]:
    """A copy of g with only the nodes the outputs need (lowerings may leave values unused, e.g. a weight
    transpose that linear absorbed). Returns the new graph and old value id -> new Value."""
    producer = {}
    for i, (_, _, outs, _) in enumerate(emitted):
        for o in outs:
            producer[int(o)] = i
    live, stack = set(), [int(v) for v in outputs]
    while stack:
        v = stack.pop()
        i = producer.get(v)
        if i is None or i in live:
            continue
        live.add(i)
        stack.extend(int(x) for x in emitted[i][1])
    if len(live) == len(emitted):
        return g, {int(v): v for v in g.inputs}
    g2 = Graph()
    remap: Dict[int, Value] = {}
    for v in g.inputs:
        remap[int(v)] = g2.input(v.dtype, v.shape)
    for i, (name, ins, outs, attrs) in enumerate(emitted):
        if i not in live:
            continue
        new = g2.op(name, *[remap[int(x)] for x in ins], **attrs)
        for o, n in zip(outs, new if isinstance(new, tuple) else (new,)):
            remap[int(o)] = n
    return g2, remap


# --- the compiler ------------------------------------------------------------------------------------------

class Compiler:
    def __init__(self, options: Optional[dict]):
        self.opts = Options(options)
        self._query_cache: Dict[Any, str] = {}
        self.graph_count = 0

    # Lowers one node alone into a scratch graph: any validation error becomes the reason it stays eager; then
    # asks the device whether it runs each emitted op.
    def trial_lower(self, node) -> str:
        g = Graph()
        b = Builder(g)
        env = {}
        try:
            for a in node.all_input_nodes:
                t = meta_val(a)
                if isinstance(t, torch.Tensor):
                    env[a] = g.input(pk_dtype(t.dtype), [int(s) for s in t.shape])
                elif isinstance(t, (tuple, list)):
                    vals = []
                    for x in t:
                        vals.append(g.input(pk_dtype(x.dtype), [int(s) for s in x.shape])
                                    if isinstance(x, torch.Tensor) else None)
                    env[a] = tuple(vals)
                else:
                    env[a] = t
            args = _arg_value(node.args, env)
            kwargs = {k: _arg_value(v, env) for k, v in node.kwargs.items()}
            LOWERINGS[node.target](b, node, *args, **kwargs)
        except Unsupported as e:
            return str(e)
        except Exception as e:  # a lowering bug must not break compilation: the node runs in eager
            return "lowering failed: %s: %s" % (type(e).__name__, e)
        for name, ins, outs, attrs in b.emitted:
            r = self._query(name, ins, outs, attrs)
            if r:
                return r
        return ""

    def _query(self, name, ins, outs, attrs) -> str:
        key = (name, tuple((v.dtype.name, len(v.shape)) for v in ins), tuple(v.dtype.name for v in outs))
        hit = self._query_cache.get(key)
        if hit is not None:
            return hit
        info = primkit.ops.info(name)
        supported, native, reason = self.opts.device.query_op(
            info.id, [(v.dtype.code_bits, list(v.shape)) for v in ins],
            [(v.dtype.code_bits, list(v.shape)) for v in outs], info.pack_attrs(attrs), True)
        r = ""
        if not supported and info.tier != "composite":
            r = "%s on %s: %s" % (name, self.opts.device.label, reason or "not supported")
        self._query_cache[key] = r
        return r

    def compile(self, gm: torch.fx.GraphModule, example_inputs, kind: str):
        self.graph_count += 1
        if any(isinstance(x, torch.Tensor) and not _static(x) for x in example_inputs) or any(
                isinstance(x, torch.SymInt) for x in example_inputs):
            return _Specializing(self, gm, kind)
        return self.compile_static(gm, kind)

    def compile_static(self, gm: torch.fx.GraphModule, kind: str):
        support = Support(self)
        nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
        for n in nodes:
            support.is_node_supported(None, n)
        if self.opts.strict:
            bad = [(n, support.reasons[n]) for n in nodes if support.reasons[n] and n.target is not operator.getitem]
            if bad:
                raise PrimKitCompileError("primkit (strict): %d node(s) cannot run on %s:\n%s" % (
                    len(bad), self.opts.device.label,
                    "\n".join("  %s = %s: %s" % (n.name, n.target, r) for n, r in bad)))
        partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
        partitions = partitioner.propose_partitions()
        where: Dict[str, int] = {}
        for i, p in enumerate(partitions):
            for n in p.nodes:
                where[n.name] = i
        fused = partitioner.fuse_partitions(partitions) if partitions else gm
        modules: Dict[int, PrimKitModule] = {}
        for n in list(fused.graph.nodes):
            if n.op == "call_module" and n.target.startswith("fused_"):
                sub = getattr(fused, n.target)
                idx = int(n.target.split("_")[1])
                m = PrimKitModule(self, sub, idx)
                modules[idx] = m
                delattr(fused, n.target)
                fused.add_submodule(n.target, m)
        fused.recompile()
        self._record(kind, nodes, support, where, modules)
        return _direct_call(fused, modules) or fused

    def _record(self, kind, nodes, support, where, modules):
        rep = self.opts.report
        if rep is None:
            return
        for n in nodes:
            counted = n.target is not operator.getitem
            r = {"graph": kind, "node": n.name, "target": str(n.target), "counted": counted,
                 "device": self.opts.device.label}
            if n.name in where and not support.reasons.get(n):
                idx = where[n.name]
                st = modules[idx].stats if idx in modules else {}
                r.update(where="primkit", partition=idx, reason="",
                         kernel="%d fused kernels over %d nodes, %d single nodes, intermediates %d KiB (%d KiB "
                                "unshared)" % (st.get("fused_kernels", 0), st.get("fused_nodes", 0),
                                               st.get("single_nodes", 0), st.get("intermediate_bytes", 0) // 1024,
                                               st.get("unshared_intermediate_bytes", 0) // 1024),
                         intermediate_bytes=st.get("intermediate_bytes", 0),
                         unshared_intermediate_bytes=st.get("unshared_intermediate_bytes", 0))
            else:
                r.update(where="eager", partition=-1, kernel="", reason=support.reasons.get(n) or "not partitioned")
            rep.nodes.append(r)


class _Specializing:
    """A graph with symbolic shapes: retraced with the concrete shapes of each call (make_fx over fake tensors)
    and compiled once per shape signature."""

    def __init__(self, compiler: Compiler, gm: torch.fx.GraphModule, kind: str):
        self.c, self.gm, self.kind = compiler, gm, kind
        self.cache: Dict[Any, Any] = {}

    def __call__(self, *args):
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)
        fn = self.cache.get(key)
        if fn is None:
            from torch.fx.experimental.proxy_tensor import make_fx
            static = make_fx(self.gm, tracing_mode="fake")(*args)
            fn = self.c.compile_static(static, self.kind)
            self.cache[key] = fn
        return fn(*args)
