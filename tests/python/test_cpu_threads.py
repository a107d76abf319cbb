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


ONE_SET = r"""
import os, sys, numpy as np, primkit, primkit.ops as P
def threads():
    return len(os.listdir('/proc/self/task'))
small = np.ones(8, np.float32)
P.add(small, small)  # the runtime's own threads start with the first op; 8 elements run on the calling thread
before = threads()
a = (np.arange(2048 * 2048, dtype=np.float32).reshape(2048, 2048) % 7 - 3) / 4
for _ in range(2):  # an elementwise op on the backend's threads, then oneDNN's matmul, then elementwise again
    s = np.asarray(P.add(a, a))
    y = np.asarray(P.matmul(a[:256], a[:, :256]))
a64 = a.astype(np.float64)
assert np.array_equal(s, 2 * a), "add differs"
assert np.array_equal(y, (a64[:256] @ a64[:, :256]).astype(np.float32)), "matmul differs from the exact product"
print(threads() - before)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: nothing to share")
def test_elementwise_ops_and_onednn_share_one_set_of_threads():
    """Where oneDNN runs on OpenMP, parallel_for runs on the same OpenMP team: 2 threads mean one thread started,
    not a pool worker beside an OpenMP worker spinning against each other on the same cores. Without oneDNN (or
    with PRIMKIT_CPU_THREADING=pool) the pool's one worker is the only one too, unless oneDNN starts its own."""
    import primkit

    if "cpu" not in [b["name"] for b in primkit.backends()]:
        pytest.skip("no cpu backend")
    env = dict(os.environ, PRIMKIT_CPU_THREADS="2")
    env.pop("OMP_NUM_THREADS", None)
    env.pop("PRIMKIT_CPU_THREADING", None)
    out = subprocess.run([sys.executable, "-c", ONE_SET], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1", "threads started for 2-thread ops: " + out.stdout
    # The pool beside oneDNN: two sets (the measure the shared team removes), still correct.
    env["PRIMKIT_CPU_THREADING"] = "pool"
    out = subprocess.run([sys.executable, "-c", ONE_SET], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in ("1", "2"), "threads started for 2-thread ops with the pool: " + out.stdout


FORKED = r"""
import os, sys, numpy as np, primkit, primkit.ops as P
a = (np.arange(2048 * 2048, dtype=np.float32).reshape(2048, 2048) % 7 - 3) / 4
a64 = a.astype(np.float64)
want_mm = (a64[:256] @ a64[:, :256]).astype(np.float32)
# The parent runs parallel work first: the threads (OpenMP's team, or the pool's workers) exist before the fork.
assert np.array_equal(np.asarray(P.add(a, a)), 2 * a)
assert np.array_equal(np.asarray(P.matmul(a[:256], a[:, :256])), want_mm)
pid = os.fork()
if pid == 0:
    ok = np.array_equal(np.asarray(P.add(a, a)), 2 * a)
    ok = ok and np.array_equal(np.asarray(P.matmul(a[:256], a[:, :256])), want_mm)
    sys.exit(0 if ok else 3)  # a normal exit: static destructors (the pool's) run in the child
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "forked child: status %d" % status
assert np.array_equal(np.asarray(P.add(a, a)), 2 * a), "the parent after the fork"
print("ok")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: no threads to lose in the fork")
@pytest.mark.parametrize("threading", ["default", "pool"])
def test_a_forked_child_runs_ops_after_the_parent_ran_parallel_work(threading):
    """Neither OpenMP's team nor the pool's workers survive fork; a child of a process that ran parallel ops
    (multiprocessing's default start on Linux, data-loader workers) used to hang in its first parallel op or
    matmul (libgomp waits for threads the child does not have). It now runs on its one thread and exits cleanly."""
    import primkit

    if "cpu" not in [b["name"] for b in primkit.backends()]:
        pytest.skip("no cpu backend")
    env = dict(os.environ, PRIMKIT_CPU_THREADS="2")
    env.pop("OMP_NUM_THREADS", None)
    env.pop("PRIMKIT_CPU_THREADING", None)
    if threading == "pool":
        env["PRIMKIT_CPU_THREADING"] = "pool"
    try:
        out = subprocess.run([sys.executable, "-c", FORKED], env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the forked child (or the parent waiting for it) hung")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
