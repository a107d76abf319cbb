#!/usr/bin/env python3
"""gpu-torch-peer.py — the peer figures for bench_cuda: the same operations through PyTorch eager on the same GPU,
into preallocated outputs (out=), timed with CUDA events (median of 20 after 3 warm-ups). tools/gpu-check.sh runs it
right after primkit_bench_cuda, so the two are measured in one sitting; it prints one line per operation and exits 0
without torch or a GPU (saying so)."""
import sys

try:
    import torch
except ImportError:
    print("gpu-torch-peer: no torch in this python: no peer figures")
    sys.exit(0)
if not torch.cuda.is_available():
    print("gpu-torch-peer: torch sees no GPU: no peer figures")
    sys.exit(0)

torch.backends.cuda.matmul.allow_tf32 = False  # full f32, like the cuda backend's matmul
N = 64 << 20


def median_ms(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    dev = torch.device("cuda")
    print(f"gpu-torch-peer: torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    x = torch.randn(N, device=dev)
    y = torch.randn(N, device=dev)
    z = torch.randn(N, device=dev)
    t = torch.empty(N, device=dev)
    out = torch.empty(N, device=dev)
    rows = [
        ("copy 64M f32 (8 B/elem)", 8 * N, lambda: out.copy_(x)),
        ("add 64M f32 (12 B/elem)", 12 * N, lambda: torch.add(x, y, out=out)),
        ("exp 64M f32 (8 B/elem)", 8 * N, lambda: torch.exp(x, out=out)),
        ("relu(x*y+z) 3 kernels", 16 * N, lambda: (torch.mul(x, y, out=t), torch.add(t, z, out=t), torch.relu_(t))),
    ]
    m = x.view(8192, 8192)
    s = torch.empty(8192, device=dev)
    rows.append(("sum rows [8192,8192] f32", 4 * N, lambda: torch.sum(m, dim=1, out=s)))
    for name, nbytes, fn in rows:
        ms = median_ms(fn)
        print(f"  {name:34s} {ms:8.3f} ms  {nbytes / ms / 1e6:8.1f} GB/s")
    a = torch.randn(2048, 2048, device=dev)
    b = torch.randn(2048, 2048, device=dev)
    c = torch.empty(2048, 2048, device=dev)
    ms = median_ms(lambda: torch.matmul(a, b, out=c))
    print(f"  {'matmul f32 2048^3 (cuBLAS, no TF32)':34s} {ms:8.3f} ms  {2 * 2048**3 / ms / 1e9:8.1f} TFLOP/s")
    one = torch.ones(1, device=dev)
    r = torch.empty(1, device=dev)
    torch.cuda.synchronize()
    import time

    t0 = time.perf_counter()
    for _ in range(2000):
        torch.add(one, one, out=r)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    print(f"  {'launch: 1-element add, host side':34s} {(t1 - t0) / 2000 * 1e6:8.2f} us per launch")


if __name__ == "__main__":
    main()
