"""PRIMKIT_CPU_THREADS bounds every thread the cpu backend runs, oneDNN's OpenMP threads included: a matmul and a
linear large enough for oneDNN start no thread of their own under PRIMKIT_CPU_THREADS=1 (the worker pool has
none then, and the OpenMP region of the calling thread is held to one). Before, oneDNN started one OpenMP thread per
core whatever the variable said. Run in a child process: the pool and OpenMP read their sizes once."""

import os
import subprocess
import sys

import pytest

CHILD = r"""
import os, numpy as np, primkit, primkit.ops as P
def threads():
    return len(os.listdir('/proc/self/task'))
a = (np.arange(512 * 512, dtype=np.float32).reshape(512, 512) % 7 - 3) / 4
P.add(a, a)  # the runtime's own threads start with the first op
before = threads()
y = np.asarray(P.matmul(a, a))
z = np.asarray(P.linear(a, a, np.ones(512, np.float32)))
a64 = a.astype(np.float64)
# Exact in f32: multiples of 1/16 below 2^9, so any summation order gives these values.
assert np.array_equal(y, (a64 @ a64).astype(np.float32)), "matmul differs from the exact product"
assert np.array_equal(z, (a64 @ a64.T + 1).astype(np.float32)), "linear differs from the exact x w^T + b"
print(threads() - before)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: nothing to bound")
def test_cpu_threads_1_bounds_onednn_too():
    if "cpu" not in [b["name"] for b in __import__("primkit").backends()]:
        pytest.skip("no cpu backend")
    env = dict(os.environ, PRIMKIT_CPU_THREADS="1")
    env.pop("OMP_NUM_THREADS", None)  # the bound must come from PrimKit's own variable
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0", "threads started by matmul/linear under PRIMKIT_CPU_THREADS=1: " + out.stdout
