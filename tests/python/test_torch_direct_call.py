"""A graph that is one PrimKit partition is returned as a plain function around the partition (no fx GraphModule
and nn.Module calls per call): its outputs must keep the graph's structure, order and pass-through inputs. Values
against eager PyTorch."""

import torch

import primkit  # noqa: F401
import primkit.torch  # noqa: F401


def test_single_partition_outputs_keep_order_structure_and_pass_through_inputs():
    def f(x, y):
        return x + 1.0, x, y * 2.0, (x * y).sum(1)

    x, y = torch.randn(4, 5), torch.randn(4, 5)
    torch._dynamo.reset()
    c = torch.compile(f, backend="primkit")
    for _ in range(2):  # the first call compiles, the second takes the cached function
        got, want = c(x, y), f(x, y)
        assert isinstance(got, tuple) and len(got) == 4
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            torch.testing.assert_close(g, w, rtol=2e-6, atol=1e-6)
        assert got[1].data_ptr() == x.data_ptr()  # the input itself, as eager returns it


def test_single_output_graph():
    x = torch.randn(3, 7)
    torch._dynamo.reset()
    c = torch.compile(lambda t: torch.exp(t) * 0.5, backend="primkit")
    torch.testing.assert_close(c(x), torch.exp(x) * 0.5, rtol=2e-6, atol=0.0)
