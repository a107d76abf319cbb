"""primkit (Python): op metadata, ops against numpy, DLPack exchange, graphs, errors."""

import math

import numpy as np
import pytest

import primkit
from primkit import errors


def test_abi_versions_and_backends():
    info = primkit.runtime_info()
    assert info["abi_version"] == (1, 2)
    assert info["runtime_abi_version"] == (1, 2)
    names = {b["name"] for b in primkit.backends()}
    assert "cpu" in names
    assert primkit.device("cpu").label == "cpu:0"
    with pytest.raises(LookupError, match="no device 'nope:0'"):
        primkit.device("nope")


def test_metadata_matches_the_table_by_hand():
    sdpa = primkit.ops.info("scaled_dot_product_attention")
    assert [i["name"] for i in sdpa.inputs] == ["q", "k", "v"]
    assert sdpa.tier == "composite" and sdpa.category == "attention"
    scale = sdpa.attr_index["scale"]
    assert scale["required"] and scale["nan_unset"] and not scale["has_default"]
    sort = primkit.ops.info("sort")
    assert sort.attr_index["stable"]["default"] == 1.0  # stable sort by default, as the table says
    assert sort.num_outputs == 2
    assert len(primkit.ops.names()) == primkit._primkit.op_count() == 256  # 255 in ABI 1.1, + scaled_dot_product_attention_masked
    assert "add" in dir(primkit.ops)
    assert "softmax" in primkit.ops.softmax.__doc__ and "dim" in primkit.ops.softmax.__doc__


@pytest.mark.parametrize("name,ref", [("exp", np.exp), ("tanh", np.tanh), ("sqrt", np.sqrt), ("neg", np.negative)])
def test_unary_ops_match_numpy(name, ref, device):
    x = np.linspace(0.1, 3.0, 24, dtype=np.float32).reshape(4, 6)
    got = getattr(primkit.ops, name)(primkit.asarray(x, device=device)).numpy()
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=4e-7, atol=0)


def test_ops_with_attributes_and_defaults(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    got = primkit.ops.softmax(primkit.asarray(x, device=device), dim=1).numpy()
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)
    vals, idx = primkit.ops.sort(primkit.asarray(np.array([[3, 1, 2, 1]], np.float32), device=device), dim=1)
    assert vals.numpy().tolist() == [[1, 1, 2, 3]]
    assert idx.numpy().tolist() == [[1, 3, 2, 0]]  # stable by default: the first 1 first
    s = primkit.ops.sum(primkit.asarray(x, device=device), dims=[0, 1]).numpy()
    assert abs(float(s) - x.astype(np.float64).sum()) < 1e-5


def test_attention_needs_its_scale_and_matches_a_reference():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 2, 4, 8)).astype(np.float32) for _ in range(3))
    with pytest.raises(TypeError, match="missing required attribute 'scale'"):
        primkit.ops.scaled_dot_product_attention(q, k, v)
    got = primkit.ops.scaled_dot_product_attention(q, k, v, scale=0.25, is_causal=True).numpy()
    s = 0.25 * np.einsum("bhld,bhsd->bhls", q.astype(np.float64), k)
    s = np.where(np.tril(np.ones((4, 4), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(got, np.einsum("bhls,bhsd->bhld", p, v), rtol=1e-5, atol=1e-6)


def test_errors_carry_status_op_and_argument():
    a = np.ones((2, 3), np.float32)
    with pytest.raises(errors.InvalidArgument) as e:
        primkit.ops.add(a, np.ones((3, 2), np.float32))
    assert e.value.status_name == "PK_ERROR_INVALID_ARGUMENT"
    assert e.value.op == "add" and e.value.arg_index == 1
    assert "no implicit broadcasting" in str(e.value)
    with pytest.raises(TypeError, match="unknown attribute 'dims_typo'"):
        primkit.ops.sum(a, dims_typo=[0])
    with pytest.raises(TypeError, match="attribute dim=.*integer"):
        primkit.ops.softmax(a, dim=1.5)
    with pytest.raises(errors.InvalidArgument, match="softmax.*dim = 7"):
        primkit.ops.softmax(a, dim=7)
    with pytest.raises(TypeError, match="takes 1 inputs"):
        primkit.ops.exp(a, a)
    with pytest.raises(TypeError, match="DLPack"):
        primkit.ops.exp([1.0, 2.0])
    with pytest.raises(AttributeError, match="no op 'not_an_op'"):
        primkit.ops.not_an_op


def test_dlpack_zero_copy_with_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = primkit.from_dlpack(a)
    assert t.shape == (3, 4) and t.dtype.name == "f32" and t.__dlpack_device__() == (1, 0)
    back = np.from_dlpack(t)
    a[1, 2] = 99.0
    assert back[1, 2] == 99.0, "numpy -> primkit -> numpy shares the bytes"
    out = primkit.ops.mul(t, t)
    view = np.from_dlpack(out)
    assert view[1, 2] == 99.0 * 99.0
    # strided and negative-stride views are imported as such
    s = a[:, ::-2]
    np.testing.assert_array_equal(primkit.ops.neg(s).numpy(), -s)


def test_dlpack_zero_copy_with_torch():
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = primkit.from_dlpack(x)
    y = primkit.ops.exp(t)
    ty = torch.from_dlpack(y)
    assert torch.allclose(ty, torch.exp(x))
    ty[0, 0] = -1.0
    assert np.from_dlpack(y)[0, 0] == -1.0, "torch sees primkit's memory, not a copy"
    xb = torch.randn(4, 4).to(torch.bfloat16)
    got = primkit.ops.neg(xb).numpy()
    assert got.dtype.name == "bfloat16"
    np.testing.assert_array_equal(got.astype(np.float32), (-xb).float().numpy())


def test_device_memory_is_copied_not_exported(device):
    d = primkit.device(device)
    a = np.arange(8, dtype=np.float32)
    t = primkit.asarray(a, device=device)
    if d.props()["device_type"] == 1 or d.props()["unified_memory"]:
        assert t.__dlpack_device__() == (1, 0)
    else:
        t = t.to(device)
        assert t.device.label == device
        with pytest.raises(BufferError, match="cannot address"):
            t.__dlpack__()
    np.testing.assert_array_equal(primkit.ops.add(t, t).numpy(), 2 * a)


def test_graph_build_compile_run(device):
    g = primkit.Graph()
    x = g.input("f32", [4, 16])
    w = g.input("f32", [16, 8])
    h = g.op("matmul", x, w)
    y = g.op("gelu", g.op("add", h, h))
    g.output(y)
    assert y.shape == (4, 8) and y.dtype.name == "f32"
    exe = g.compile(device)
    rng = np.random.default_rng(3)
    xa, wa = rng.standard_normal((4, 16)).astype(np.float32), rng.standard_normal((16, 8)).astype(np.float32)
    (out,) = exe(xa, wa)
    z = 2 * (xa.astype(np.float64) @ wa)
    ref = z / 2 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-5, atol=2e-5)
    st = exe.stats()
    assert st["fused_nodes"] + st["single_nodes"] >= 3
    # At least matmul's [4, 8] f32 result (128 bytes, in a 256-byte slot) is an intermediate; fusion may keep
    # add's inside the kernel.
    assert 256 <= st["intermediate_bytes"] <= st["unshared_intermediate_bytes"]
    with pytest.raises(errors.InvalidArgument, match="graph declares"):
        exe(xa[:2], wa)
    with pytest.raises(errors.InvalidArgument):
        g.op("add", x, w)  # shapes differ: refused when the node is added


def test_fallback_report_lists_ops_a_backend_lacks():
    primkit.reset_fallback_counters()
    report = primkit.fallback_report()
    assert isinstance(report, str)


def test_async_devices_hand_off_through_events(device):
    d = primkit.device(device)
    a = np.linspace(-2, 2, 4096, dtype=np.float32)
    t = primkit.asarray(a, device=device)
    # a chain of enqueued ops: only the final hand-off to the host waits
    y = t
    for _ in range(5):
        y = primkit.ops.mul(primkit.ops.add(y, t), t)
    if d.props()["async"]:
        assert y._ready is not None, "ops on an asynchronous device return before the work is done"
    ref = a.astype(np.float64)
    r = ref
    for _ in range(5):
        r = (r + ref) * ref
    np.testing.assert_allclose(y.numpy(), r, rtol=1e-5, atol=1e-5)
    assert y._ready is None
