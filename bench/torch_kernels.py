"""Single kernels of the CPU backend against PyPI PyTorch in one process, each writing into a caller's buffer: the
fair kernel-against-kernel comparison. PrimKit's op is launched directly on tensors shared through DLPack
(primkit's native launch, no Python-side allocation); the peers are eager ATen's `.out` overloads and, for the
pointwise and row ops, torch.compile (Inductor) of `out.copy_(f(x))`, which Inductor fuses into one kernel storing
into `out`. Interleaved runs, the median of per-round paired ratios, the same thread count for everyone
(torch.set_num_threads and PRIMKIT_CPU_THREADS).

    PYTHONPATH=build/python python3 bench/torch_kernels.py [--rounds 9] [--only matmul,linear,gelu,table]

Cases (issue goals in brackets): matmul f32 and bf16 at 1024^3 and 2048^3 against torch.matmul(out=) [>= 0.95x];
linear + bias + gelu ([2048, 512] x [2048, 512]^T, f32) through torch.compile(backend="primkit") against eager and
Inductor [>= 1.0x eager]; gelu (erf form) on 16 M f32 against the copy bound (a 16 M f32 copy into a buffer)
[>= 0.9x]; and the table of earlier stops: add, exp (16 M f32), sum of rows, softmax and layer_norm ([4096, 4096]
f32). Ratios > 1 mean PrimKit is faster."""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F

import primkit
import primkit.torch  # noqa: F401
from primkit import _primkit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bridge import paired, report, same_threads_for_both  # noqa: E402


def direct(name, inputs, outputs, **attrs):
    """A closure that launches op `name` on torch tensors `inputs`, writing `outputs` (shared through DLPack)."""
    op = primkit.ops.info(name)
    dev = primkit.device("cpu")
    packed = op.pack_attrs(attrs)
    ins = [primkit.from_dlpack(t)._t for t in inputs]
    outs = [primkit.from_dlpack(t)._t for t in outputs]
    s = primkit.stream(dev)
    keep = (inputs, outputs)  # the buffers outlive the closure's handles

    def run():
        _primkit.launch(s, op.id, ins, outs, packed)
        return keep

    return run


def inductor_into(fn, out, *args):
    """torch.compile (Inductor) of out.copy_(fn(*args)): one fused kernel that stores into `out`."""
    def g(o, *a):
        o.copy_(fn(*a))

    c = torch.compile(g, backend="inductor")
    c(out, *args)
    return lambda: c(out, *args)


def bench_matmul(rounds):
    for dt in (torch.float32, torch.bfloat16):
        for n in (1024, 2048):
            a, b = torch.randn(n, n).to(dt), torch.randn(n, n).to(dt)
            c1, c2 = torch.empty(n, n, dtype=dt), torch.empty(n, n, dtype=dt)
            fns = {"primkit": direct("matmul", (a, b), (c1,)), "torch": lambda: torch.matmul(a, b, out=c2)}
            med, ratios = paired(fns, (), rounds)
            err = ((c1.float() - c2.float()).abs().max() / c2.float().abs().max()).item()
            report("matmul %s %d^3 into a buffer (max difference from torch, relative to scale: %.1e; %.0f GFLOP/s)"
                   % (str(dt).replace("torch.", ""), n, err, 2 * n ** 3 / med["primkit"] / 1e9), med, ratios,
                   "primkit")


def bench_linear_gelu(rounds):
    x, w, bias = torch.randn(2048, 512), torch.randn(2048, 512) / 23, torch.randn(2048)
    f = lambda x: F.gelu(F.linear(x, w, bias))  # noqa: E731
    with torch.no_grad():
        torch._dynamo.reset()
        pk = torch.compile(f, backend="primkit")
        ind = torch.compile(f, backend="inductor")
        pk(x), ind(x)
        med, ratios = paired({"primkit": lambda: pk(x), "eager": lambda: f(x), "inductor": lambda: ind(x)}, (),
                             rounds)
        err = ((pk(x) - f(x)).abs().max() / f(x).abs().max()).item()
    report("linear + bias + gelu, [2048, 512] x [2048, 512]^T, f32 (max error vs eager, relative: %.1e)" % err, med,
           ratios, "primkit")


def bench_gelu(rounds):
    n = 16 << 20
    x = torch.randn(n)
    y1, y2, y3, y4 = (torch.empty(n) for _ in range(4))
    fns = {"primkit": direct("gelu", (x,), (y1,)), "copy": lambda: y2.copy_(x),
           "torch": lambda: torch.ops.aten.gelu.out(x, out=y3),
           "inductor": inductor_into(F.gelu, y4, x)}
    med, ratios = paired(fns, (), rounds)
    report("gelu (erf) 16 M f32 into a buffer; 'copy' is the copy bound (goal: ratio >= 0.9), %.1f GB/s moved"
           % (2 * 4 * n / med["primkit"] / 1e9), med, ratios, "primkit")


def bench_table(rounds):
    n = 16 << 20
    x, y = torch.randn(n), torch.randn(n)
    o = [torch.empty(n) for _ in range(3)]
    report("add 16 M f32 into a buffer", *paired(
        {"primkit": direct("add", (x, y), (o[0],)), "torch": lambda: torch.add(x, y, out=o[1]),
         "inductor": inductor_into(torch.add, o[2], x, y)}, (), rounds), "primkit")
    report("exp 16 M f32 into a buffer", *paired(
        {"primkit": direct("exp", (x,), (o[0],)), "torch": lambda: torch.exp(x, out=o[1]),
         "inductor": inductor_into(torch.exp, o[2], x)}, (), rounds), "primkit")
    m = x.view(4096, 4096)
    r = [torch.empty(4096) for _ in range(3)]
    report("sum of rows [4096, 4096] f32", *paired(
        {"primkit": direct("sum", (m,), (r[0],), dims=[1]), "torch": lambda: torch.sum(m, 1, out=r[1]),
         "inductor": inductor_into(lambda t: t.sum(1), r[2], m)}, (), rounds), "primkit")
    mo = [t.view(4096, 4096) for t in o]
    report("softmax rows [4096, 4096] f32", *paired(
        {"primkit": direct("softmax", (m,), (mo[0],), dim=1),
         "torch": lambda: torch.ops.aten._softmax.out(m, 1, False, out=mo[1]),
         "inductor": inductor_into(lambda t: t.softmax(1), mo[2], m)}, (), rounds), "primkit")
    g, b = torch.randn(4096), torch.randn(4096)
    ln = lambda t: F.layer_norm(t, (4096,), g, b)  # noqa: E731
    report("layer_norm rows [4096, 4096] f32", *paired(
        {"primkit": direct("layer_norm", (m, g, b), (mo[0],), normalized_ndim=1, eps=1e-5),
         "torch": lambda: mo[1].copy_(ln(m)), "inductor": inductor_into(ln, mo[2], m)}, (), rounds), "primkit")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--only", default="matmul,linear,gelu,table")
    a = ap.parse_args()
    same_threads_for_both()
    only = a.only.split(",")
    torch.manual_seed(0)
    with torch.no_grad():
        if "matmul" in only:
            bench_matmul(a.rounds)
        if "linear" in only:
            bench_linear_gelu(a.rounds)
        if "gelu" in only:
            bench_gelu(a.rounds)
        if "table" in only:
            bench_table(a.rounds)


if __name__ == "__main__":
    main()
