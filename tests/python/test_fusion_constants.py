"""Fused elementwise chains whose constants are 0-d values broadcast over the whole shape (what the PyTorch bridge
makes of every Python scalar): the CPU backend runs them on its dense kernel with the constants read once per
element as uniform inputs, not on the strided kernel (20x slower on gelu_new's chain). Values are checked against
a float64 reference; a row-broadcast input (not uniform) in the same region keeps the general path."""

import math

import numpy as np
import pytest

import primkit


def _const(g, value, shape):
    c = g.op("full", shape=[], value=float(value), dtype="f32")
    return g.op("broadcast_in_dim", c, shape=list(shape), broadcast_dimensions=[])


def _gelu_new_graph(shape, row_bias):
    g = primkit.Graph()
    x = g.input("f32", shape)
    inputs = [x]
    cube = g.op("mul", g.op("mul", x, x), x)
    inner = g.op("add", x, g.op("mul", _const(g, 0.044715, shape), cube))
    if row_bias:
        b = g.input("f32", [shape[-1]])
        inputs.append(b)
        inner = g.op("add", inner, g.op("broadcast_in_dim", b, shape=list(shape),
                                         broadcast_dimensions=[len(shape) - 1]))
    t = g.op("tanh", g.op("mul", _const(g, math.sqrt(2 / math.pi), shape), inner))
    y = g.op("mul", g.op("mul", _const(g, 0.5, shape), x), g.op("add", _const(g, 1.0, shape), t))
    g.output(y)
    return g


@pytest.mark.parametrize("backend_name", ["cpu", "opencl", "cuda-emu"])
@pytest.mark.parametrize("row_bias", [False, True])
def test_fused_chain_with_broadcast_constants_matches_float64(row_bias, backend_name):
    if backend_name not in [b["name"] for b in primkit.backends()]:
        pytest.skip("no %s backend" % backend_name)
    shape = [37, 515]  # odd sizes: vector bodies and their tails
    exe = _gelu_new_graph(shape, row_bias).compile(backend_name + ":0")
    st = exe.stats()
    # The planner takes the scalar constants (0-d fulls and their broadcasts) into the run as fills: the chain is
    # one kernel on every backend with fusion; the row-broadcast bias stays an input, which the elementwise run
    # does not take, so that graph keeps it and the add apart.
    assert st["fused_kernels"] >= 1
    if not row_bias:
        assert st["fused_kernels"] == 1 and st["single_nodes"] == 0, st
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    x[0, :6] = [0.0, -0.0, 1e-30, -1e-30, 20.0, -20.0]
    args = [x]
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    if row_bias:
        args.append(b)
    (out,) = exe(*args)
    got = out.numpy()
    # The reference rounds each op to f32 as the graph does (products and sums), and tanh in float64.
    f = np.float32
    xd = x.astype(np.float32)
    cube = (xd * xd) * xd
    inner = xd + f(0.044715) * cube
    if row_bias:
        inner = inner + b
    t = np.tanh((f(math.sqrt(2 / math.pi)) * inner).astype(np.float64)).astype(np.float32)
    ref = (f(0.5) * xd) * (f(1.0) + t)
    np.testing.assert_allclose(got, ref, rtol=4e-7, atol=1e-37)
    assert got[0, 1] == 0 and math.copysign(1, got[0, 1]) == -1  # -0 stays -0
