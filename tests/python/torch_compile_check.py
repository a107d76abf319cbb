"""Helpers the torch.compile(backend="primkit") tests share: compiling a function with a fresh Dynamo cache and a
placement report, and the error measure the tolerances are written in."""

import primkit.torch  # registers backend="primkit"
import torch


def scale_err(a, b):
    """max |a - b| relative to the largest |b| (the output's scale), in double."""
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def run_compiled(fn, inputs, device="cpu:0"):
    """fn(*inputs) compiled for `device` from a clean Dynamo cache, without grad: (output, primkit.torch.Report)."""
    torch._dynamo.reset()
    report = primkit.torch.Report()
    c = torch.compile(fn, backend="primkit", options={"device": device, "report": report})
    with torch.no_grad():
        out = c(*inputs)
    return out, report
