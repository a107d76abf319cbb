"""PyTorch on any PrimKit backend: ``torch.compile(model, backend="primkit", options={"device": "opencl:0"})``.

Dynamo's graphs go through aot_autograd with the Core ATen decompositions (forward and backward), the nodes a
PrimKit device can run are partitioned into PrimKit graphs (compiled with fusion by the runtime), and the rest
stays in eager PyTorch (``"strict": True`` makes that an error naming the node). ``explain(model, *inputs)``
reports, per ATen node, where it ran and why.

Importing this module registers the backend; an installed package also registers it through PyTorch's
``torch_dynamo_backends`` entry point, so ``backend="primkit"`` works without the import."""

from __future__ import annotations

import functools
from typing import Any, Optional

import torch
import torch._dynamo
from torch._dynamo.backends.common import aot_autograd

from .compiler import Compiler, Options, PrimKitCompileError, Report

__all__ = ["primkit_backend", "explain", "Report", "PrimKitCompileError", "decompositions"]

# Ops PrimKit runs as one op (often one fused kernel) that the Core ATen table would otherwise break up.
_KEEP = ("_scaled_dot_product_flash_attention_for_cpu", "silu", "hardswish", "hardsigmoid", "mish", "elu",
         "softplus", "leaky_relu", "hardtanh", "clamp_min", "clamp_max", "masked_fill", "logsumexp", "logit",
         "addcdiv", "addcmul")


@functools.lru_cache(maxsize=None)
def _decomposition_table():
    from torch._decomp import core_aten_decompositions
    table = dict(core_aten_decompositions())
    from .lowering import LOWERINGS
    for op in list(table):
        packet = getattr(op, "_overloadpacket", None)
        name = getattr(packet, "__name__", "")
        if name in _KEEP and op in LOWERINGS:
            del table[op]
    return table


def decompositions():
    """The decomposition table the backend hands to aot_autograd (Core ATen, minus ops PrimKit runs whole)."""
    return dict(_decomposition_table())


def primkit_backend(gm: torch.fx.GraphModule, example_inputs, options: Optional[dict] = None):
    """The Dynamo backend. options: device ("cpu:0"), strict (False), fusion (True), report (a Report)."""
    from functorch.compile import make_boxed_func
    compiler = Compiler(options)

    def fw(g, inputs):
        return make_boxed_func(compiler.compile(g, inputs, "forward"))

    def bw(g, inputs):
        return make_boxed_func(compiler.compile(g, inputs, "backward"))

    def inference(g, inputs):
        return make_boxed_func(compiler.compile(g, inputs, "inference"))

    return aot_autograd(fw_compiler=fw, bw_compiler=bw, inference_compiler=inference,
                        decompositions=_decomposition_table())(gm, example_inputs)


def explain(model, *inputs, device: str = "cpu:0", strict: bool = False, print_report: bool = True,
            **kwargs) -> Report:
    """Compiles and runs `model(*inputs)` once on PrimKit and reports, per ATen node, where it ran (PrimKit
    device and partition, with the partition's fused-kernel stats, or eager) and why. Returns the Report
    (``.nodes`` as data, ``.share_on_primkit``); prints it unless print_report=False."""
    torch._dynamo.reset()
    report = Report()
    compiled = torch.compile(model, backend="primkit",
                             options={"device": device, "strict": strict, "report": report}, **kwargs)
    compiled(*inputs)
    if print_report:
        print(report)
    return report


def _register() -> None:
    """Registers backend="primkit" on import, unless PyTorch is loading it through the package's
    torch_dynamo_backends entry point (it registers the loaded function itself and refuses a duplicate)."""
    try:
        from torch._dynamo.backends import registry
        if "primkit" in registry._COMPILER_FNS or registry._BACKENDS.get("primkit") is not None:
            return
    except (ImportError, AttributeError):  # another torch version's layout: fall back to the public call
        pass
    try:
        torch._dynamo.register_backend(name="primkit")(primkit_backend)
    except AssertionError:  # already registered
        pass


_register()
