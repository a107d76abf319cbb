"""PyTorch's OpInfo samples through torch.compile(backend="primkit"), compared with eager (a bounded subset:
f32, the first two samples of every op the lowering claims; tests/python/opinfo_check.py runs them all)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch.testing._internal needs it
import opinfo_check  # noqa: E402

OPS = opinfo_check.claimed_opinfos()


@pytest.mark.parametrize("opinfo", OPS, ids=[o.name + ("." + o.variant_test_name if o.variant_test_name else "")
                                               for o in OPS])
def test_opinfo_matches_eager(opinfo):
    r = opinfo_check.check_op(opinfo, torch.float32, max_samples=2)
    if r["status"] == "SKIP":
        pytest.skip(r["detail"])
    assert r["status"] != "FAIL", r["detail"]
