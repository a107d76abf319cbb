"""torch.compile(backend="primkit") on F.scaled_dot_product_attention with attn_mask and enable_gqa, checked
against eager PyTorch (the reference is PyTorch's own kernel, never PrimKit's output), and the whole graph must run
on PrimKit. Tolerance: f32 within 1e-5 of the output's scale (PrimKit computes the scores and sums in double; the
difference is PyTorch's f32 rounding); bf16 within a few of bf16's units."""

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import primkit  # noqa: E402
import primkit.torch  # noqa: E402,F401  (registers backend="primkit")
from torch_compile_check import run_compiled, scale_err  # noqa: E402


def qkv(B, Hq, Hkv, L, S, E, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, Hq, L, E, generator=g).to(dtype), torch.randn(B, Hkv, S, E, generator=g).to(dtype),
            torch.randn(B, Hkv, S, E, generator=g).to(dtype))


def masks(B, Hq, L, S, dtype):
    g = torch.Generator().manual_seed(1)
    bool_full = torch.rand(B, Hq, L, S, generator=g) < 0.7
    bool_full[0, 1, 2] = False  # a fully hidden row: PyTorch and PrimKit both give 0
    additive = torch.randn(1, 1, L, S, generator=g).to(dtype)
    additive[..., 3, :5] = float("-inf")
    padding = torch.zeros(B, 1, 1, S, dtype=dtype)
    padding[0, ..., S - 7:] = torch.finfo(dtype).min  # the way transformers masks padded keys
    return {"bool [B,H,L,S]": bool_full, "bool [L,S]": bool_full[0, 0], "additive [1,1,L,S]": additive,
            "padding [B,1,1,S]": padding}


@pytest.mark.parametrize("hkv", [8, 2, 1])
def test_masked_gqa_attention_matches_eager(hkv):
    B, Hq, L, S, E = 2, 8, 40, 48, 32
    q, k, v = qkv(B, Hq, hkv, L, S, E)
    for name, m in masks(B, Hq, L, S, torch.float32).items():
        def f(q, k, v, m):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)
        ref = f(q, k, v, m)
        got, rep = run_compiled(f, (q, k, v, m))
        assert rep.share_on_primkit == 1.0, "%s\n%s" % (name, rep)
        assert scale_err(got, ref) < 1e-5, name
        if name.startswith("bool [B"):
            assert torch.all(got[0, 1, 2] == 0) and torch.all(ref[0, 1, 2] == 0)


def test_unmasked_gqa_and_causal_gqa_match_eager():
    q, k, v = qkv(2, 8, 2, 33, 33, 16)
    for causal in (False, True):
        def f(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        got, rep = run_compiled(f, (q, k, v))
        assert rep.share_on_primkit == 1.0, str(rep)
        assert scale_err(got, f(q, k, v)) < 1e-5, "causal=%s" % causal


def test_masked_attention_with_scale_and_bf16():
    q, k, v = qkv(1, 4, 2, 24, 30, 16, dtype=torch.bfloat16)
    m = masks(1, 4, 24, 30, torch.bfloat16)["additive [1,1,L,S]"]

    def f(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3, enable_gqa=True)
    got, rep = run_compiled(f, (q, k, v, m))
    assert rep.share_on_primkit == 1.0, str(rep)
    assert got.dtype == torch.bfloat16
    # PyTorch's bf16 kernel rounds its intermediates to bf16; PrimKit rounds once
    assert scale_err(got, f(q.float(), k.float(), v.float(), m.float())) < 2 ** -7


def test_masked_attention_op_refuses_bad_shapes():
    q = torch.randn(1, 6, 3, 4).numpy()
    k = torch.randn(1, 4, 5, 4).numpy()
    m = torch.zeros(3, 5).numpy()
    with pytest.raises(Exception, match="kv heads"):
        primkit.ops.scaled_dot_product_attention_masked(q, k, k, m, scale=0.5)
    k3 = torch.randn(1, 3, 5, 4).numpy()
    with pytest.raises(Exception, match="mask"):
        primkit.ops.scaled_dot_product_attention_masked(q, k3, k3, torch.zeros(3, 4).numpy(), scale=0.5)
