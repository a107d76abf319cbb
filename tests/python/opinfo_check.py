"""PyTorch's own OpInfo samples as a second oracle for the torch.compile backend: every op of
torch.testing._internal.common_methods_invocations.op_db whose ATen op the lowering claims is compiled with
backend="primkit" (dynamic=False, a fresh compile per sample) and compared with eager.

    python tests/python/opinfo_check.py                 # full run: every claimed op, f32 and bf16, all samples
    python tests/python/opinfo_check.py --ops exp,add   # a subset
The pytest test (test_opinfo.py) runs a bounded subset in CI through the same code.

Per op the result is PASS (every sample matches eager and at least one ATen node ran on PrimKit), EAGER (matches,
but every node stayed in eager PyTorch: the partitioner declined it, reason recorded), FAIL (a mismatch or an
error; the first is recorded) or SKIP (no samples for the dtype, or the sample needs what the bridge does not
exchange: non-CPU devices, sparse or complex tensors)."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Dict, List, Optional

import torch

import primkit.torch  # noqa: F401  (registers the backend)
from primkit.torch import Report
from primkit.torch.lowering import LOWERINGS


def claimed_names() -> set:
    return {t._overloadpacket.__name__ for t in LOWERINGS if getattr(t, "_overloadpacket", None) is not None}


def claimed_opinfos():
    from torch.testing._internal.common_methods_invocations import op_db
    claimed = claimed_names()
    seen, out = set(), []
    for o in op_db:
        key = (o.name, o.variant_test_name)
        if (o.aten_name or o.name) in claimed and key not in seen:
            seen.add(key)
            out.append(o)
    return out


def _tol(dtype):
    return {torch.float32: (1.3e-5, 1e-5), torch.bfloat16: (1.6e-2, 1e-2), torch.float64: (1e-7, 1e-7)}.get(
        dtype, (0, 0))


def check_op(opinfo, dtype=torch.float32, max_samples: Optional[int] = None) -> Dict:
    name = opinfo.name + ("." + opinfo.variant_test_name if opinfo.variant_test_name else "")
    res = {"op": name, "dtype": str(dtype).replace("torch.", ""), "samples": 0, "status": "SKIP", "detail": ""}
    if dtype not in opinfo.supported_dtypes("cpu"):
        res["detail"] = "dtype not supported by the op in eager"
        return res
    try:
        samples = list(opinfo.sample_inputs("cpu", dtype, requires_grad=False))
    except Exception as e:  # noqa: BLE001
        res["detail"] = "sample_inputs failed: %s" % e
        return res
    if max_samples is not None:
        samples = samples[:max_samples]
    if not samples:
        res["detail"] = "no samples"
        return res
    on_primkit = 0
    rtol, atol = _tol(dtype)
    for s in samples:
        args = [s.input] + list(s.args)
        kwargs = dict(s.kwargs)

        def fn(*a):
            return opinfo.op(*a, **kwargs)

        try:
            expected = fn(*args)
        except Exception:  # noqa: BLE001  the sample is invalid in eager too
            continue
        torch._dynamo.reset()
        report = Report()
        compiled = torch.compile(fn, backend="primkit", dynamic=False, options={"report": report})
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = compiled(*args)
            torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
        except Exception as e:  # noqa: BLE001
            res["status"] = "FAIL"
            res["detail"] = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300] + " (sample: %s)" % _describe(s)
            return res
        res["samples"] += 1
        if any(r["where"] == "primkit" for r in report.nodes if r["counted"]):
            on_primkit += 1
        elif not res["detail"]:
            eager = report.eager_nodes()
            res["detail"] = "; ".join(sorted({r["reason"] for r in eager}))[:300] if eager else "no ATen nodes"
    if res["samples"] == 0:
        res["detail"] = "every sample is invalid in eager"
        return res
    res["status"] = "PASS" if on_primkit else "EAGER"
    res["on_primkit_samples"] = on_primkit
    return res


def _describe(sample) -> str:
    def d(x):
        if isinstance(x, torch.Tensor):
            return "%s%s" % (str(x.dtype).replace("torch.", ""), list(x.shape))
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(d(y) for y in x) + "]"
        return repr(x)
    return "(%s%s)" % (", ".join(d(a) for a in [sample.input] + list(sample.args)),
                       "".join(", %s=%s" % (k, d(v)) for k, v in sample.kwargs.items()))


def run(ops: Optional[List[str]] = None, dtypes=(torch.float32,), max_samples: Optional[int] = None) -> List[Dict]:
    results = []
    for o in claimed_opinfos():
        if ops and o.name not in ops:
            continue
        for dt in dtypes:
            results.append(check_op(o, dt, max_samples))
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", help="comma-separated OpInfo names (default: every claimed op)")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--max-samples", type=int, default=None)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    res = run(a.ops.split(",") if a.ops else None, [getattr(torch, d) for d in a.dtypes.split(",")], a.max_samples)
    for r in res:
        print("%-5s %-32s %-9s samples=%-3d %s" % (r["status"], r["op"], r["dtype"], r["samples"], r["detail"]))
    counts = {s: sum(r["status"] == s for r in res) for s in ("PASS", "EAGER", "FAIL", "SKIP")}
    print("summary:", counts)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
