"""torch.compile(backend="primkit") on the cpu backend against what a PyTorch user runs today, in one process:
eager PyTorch and torch.compile with Inductor. Interleaved runs, the median of per-round paired ratios, the same
thread count for everyone (torch.set_num_threads and PRIMKIT_CPU_THREADS).

    PYTHONPATH=build/python python3 bench/torch_bridge.py [--rounds 15] [--quick]

Cases: a transformer block (batch 8, seq 256, d 512, 8 heads, MLP 2048, f32, causal), a GPT-2-style decoder
forward (2 layers at GPT-2 small's width), masked grouped-query attention alone (batch 8, seq 256, d 512: 8 query
heads over 2 kv heads of 64, an additive [1, 1, L, S] mask; against eager F.scaled_dot_product_attention),
scaled_dot_product_attention alone at the block's shape (the op called directly, against PyTorch's CPU flash
kernel), per-call overhead of a compiled one-op graph, and DLPack exchange (from_dlpack / __dlpack__ per tensor). Ratios > 1 mean
PrimKit is faster."""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F

import primkit
import primkit.torch  # noqa: F401


class Block(torch.nn.Module):
    def __init__(self, d=512, heads=8, mlp=2048):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, mlp), torch.nn.Linear(mlp, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, self.h, d // self.h).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(a)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def timed(fn, *args):
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def paired(fns: dict, args, rounds: int, warmup: int = 2):
    """Median time per variant and the median of per-round ratios against the first variant."""
    for _ in range(warmup):
        for f in fns.values():
            f(*args)
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            times[k].append(timed(f, *args))
    names = list(fns)
    out = {k: statistics.median(v) for k, v in times.items()}
    ratios = {}
    for k in names[1:]:
        ratios[k] = statistics.median(a / b for a, b in zip(times[k], times[names[0]]))
    return out, ratios


def report(title, med, ratios, base):
    # ratios[k] = median over rounds of t_k / t_primkit: PrimKit's speed relative to k (> 1: PrimKit is faster)
    print("\n%s" % title)
    for k, v in med.items():
        extra = "" if k == base else "   primkit speed = %.2fx %s (median of paired ratios)" % (ratios[k], k)
        print("  %-10s %9.3f ms%s" % (k, v * 1e3, extra))


def bench_model(title, model, args, rounds, inductor=True):
    with torch.no_grad():
        torch._dynamo.reset()
        pk = torch.compile(model, backend="primkit")
        pk(*args)
        fns = {"primkit": pk, "eager": model}
        if inductor:
            ind = torch.compile(model, backend="inductor")
            ind(*args)
            fns["inductor"] = ind
        med, ratios = paired(fns, args, rounds)
        ref = model(*args)
        out = pk(*args)
        r, o = (ref.last_hidden_state, out.last_hidden_state) if hasattr(ref, "last_hidden_state") else (ref, out)
        err = ((o - r).abs().max() / r.abs().max()).item()
    report("%s (max error vs eager, relative to scale: %.1e)" % (title, err), med, ratios, "primkit")
    return med, ratios


def gqa_attention(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


def bench_gqa(quick, rounds):
    b, s = (2, 64) if quick else (8, 256)
    q = torch.randn(b, 8, s, 64)
    k, v = torch.randn(b, 2, s, 64), torch.randn(b, 2, s, 64)
    bias = torch.rand(1, 1, s, s) * 2 - 1
    # a bias everywhere (every key seen), and the same bias with -inf above the diagonal (a causal mask given
    # as a tensor: PrimKit skips the hidden key panels, PyTorch's kernel does not know they are hidden)
    for name, mask in (("bias", bias), ("causal -inf", bias.masked_fill(torch.ones(s, s).triu(1).bool(), -math.inf))):
        bench_model("masked GQA attention, batch %d, seq %d, 8 q heads / 2 kv heads of 64, additive [1,1,L,S] "
                    "mask (%s), f32" % (b, s, name), gqa_attention, (q, k, v, mask), rounds, inductor=False)


def bench_sdpa(quick, rounds):
    """scaled_dot_product_attention alone at the transformer block's shape, kernel against kernel: PrimKit's op called
    directly (primkit.ops on the same tensors through DLPack) against PyTorch's CPU flash attention."""
    b, s = (2, 64) if quick else (8, 256)
    q, k, v = (torch.randn(b, 8, s, 64) for _ in range(3))
    pq, pk_, pv = (primkit.from_dlpack(t) for t in (q, k, v))
    scale = 0.125
    for causal in (True, False):
        fns = {"primkit": lambda: primkit.ops.scaled_dot_product_attention(pq, pk_, pv, scale=scale, is_causal=causal),
               "torch": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)}
        med, ratios = paired(fns, (), rounds)
        report("scaled_dot_product_attention alone, [%d, 8, %d, 64] f32, %s" % (b, s, "causal" if causal else "full"),
               med, ratios, "primkit")


def bench_overhead(rounds):
    x = torch.randn(8)
    f = lambda t: t + 1.0  # noqa: E731
    torch._dynamo.reset()
    pk, ind = torch.compile(f, backend="primkit"), torch.compile(f, backend="inductor")
    pk(x), ind(x)
    n = 2000

    def loop(fn):
        def run(t):
            for _ in range(n):
                fn(t)
        return run

    med, ratios = paired({"primkit": loop(pk), "inductor": loop(ind), "eager": loop(f)}, (x,), rounds, warmup=1)
    print("\nper-call overhead, compiled one-op graph (x + 1 on 8 floats)")
    for k, v in med.items():
        print("  %-10s %7.2f us per call" % (k, v / n * 1e6))
    print("  primkit / inductor: %.2f (goal <= 2)" % (med["primkit"] / med["inductor"]))
    return med


def bench_dlpack(rounds):
    import numpy as np
    a = np.ones((64, 64), np.float32)
    t = primkit.from_dlpack(a)
    tt = torch.ones(64, 64)
    n = 20000
    res = {}
    for name, fn in (("primkit.from_dlpack(numpy)", lambda: primkit.from_dlpack(a)),
                     ("primkit.from_dlpack(torch)", lambda: primkit.from_dlpack(tt)),
                     ("primkit.Tensor.__dlpack__()", lambda: t.__dlpack__()),
                     ("numpy.from_dlpack(primkit)", lambda: np.from_dlpack(t)),
                     ("torch.from_dlpack(primkit)", lambda: torch.utils.dlpack.from_dlpack(t)),
                     ("torch.from_dlpack(numpy) [peer]", lambda: torch.from_dlpack(a))):
        best = math.inf
        for _ in range(rounds):
            s = time.perf_counter()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter() - s) / n)
        res[name] = best
    print("\nDLPack exchange, per tensor (best of %d rounds of %d)" % (rounds, n))
    for k, v in res.items():
        print("  %-34s %6.3f us" % (k, v * 1e6))
    return res


def same_threads_for_both():
    """PRIMKIT_CPU_THREADS (else every core) for torch too, and the line that records the machine and the count."""
    threads = int(os.environ.get("PRIMKIT_CPU_THREADS", os.cpu_count()))
    torch.set_num_threads(threads)
    print("cpu: %s, %d threads (torch and PrimKit), torch %s" % (primkit.device("cpu").props()["name"], threads,
                                                                  torch.__version__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="smaller shapes, fewer rounds (a smoke run)")
    ap.add_argument("--only", default="block,gpt2,gqa,sdpa,overhead,dlpack")
    a = ap.parse_args()
    same_threads_for_both()
    only = a.only.split(",")
    torch.manual_seed(0)
    if "block" in only:
        b, s = (2, 64) if a.quick else (8, 256)
        bench_model("transformer block, batch %d, seq %d, d 512, 8 heads, MLP 2048, f32, causal" % (b, s),
                    Block().eval(), (torch.randn(b, s, 512),), a.rounds)
    if "gpt2" in only:
        import transformers
        cfg = transformers.GPT2Config(n_layer=2, n_embd=768, n_head=12, n_positions=512, vocab_size=2048,
                                      bos_token_id=0, eos_token_id=0)
        m = transformers.GPT2Model(cfg).eval()
        b, s = (1, 32) if a.quick else (4, 256)
        bench_model("GPT-2-style decoder forward, 2 layers, d 768, batch %d, seq %d, f32" % (b, s), m,
                    (torch.randint(0, 2048, (b, s)),), a.rounds)
    if "gqa" in only:
        bench_gqa(a.quick, a.rounds)
    if "sdpa" in only:
        bench_sdpa(a.quick, a.rounds)
    if "overhead" in only:
        bench_overhead(max(3, a.rounds // 3))
    if "dlpack" in only:
        bench_dlpack(5)


if __name__ == "__main__":
    main()
