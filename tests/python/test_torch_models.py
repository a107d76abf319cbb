"""torch.compile(backend="primkit") on real models built from code with random weights, checked against eager.

Tolerances: f32 forwards within 1e-4 relative to the output's scale (reassociated sums in matmul and
reductions: PrimKit's contract for reductions is a bound, not bit equality with PyTorch); bf16 forwards within
bf16's resolution, 2^-7 times the scale times a small factor for the layers it passes through."""

import os

import pytest

torch = pytest.importorskip("torch")
import primkit  # noqa: E402
import primkit.torch  # noqa: E402,F401  (registers backend="primkit")
from torch_compile_check import run_compiled, scale_err  # noqa: E402

# Every model runs on every device (cpu, opencl, cuda-emu: about 2.5 min more than cpu alone on 2 cores);
# PRIMKIT_TEST_QUICK=1 runs the big models on cpu only.
ALL_DEVICES = os.environ.get("PRIMKIT_TEST_QUICK") != "1"


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.LayerNorm(256),
                               torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))


def gpt2(width=768, layers=2, heads=12):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=width, n_head=heads, n_positions=256, vocab_size=2048,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2Model(cfg).eval()


def bert(width=256, layers=2, heads=4):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                                  intermediate_size=4 * width, vocab_size=2048)
    return transformers.BertModel(cfg).eval()


def resnet18():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    m = torchvision.models.resnet18()
    # random running statistics, so that batch norm is not the identity
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
    return m.eval()


def big_model_devices(device):
    if device.split(":")[0] != "cpu" and not ALL_DEVICES:
        pytest.skip("PRIMKIT_TEST_QUICK=1: big models run on cpu only")


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 3e-2)])
def test_mlp_forward(device, dtype, tol):
    m = mlp().to(dtype).eval()
    x = torch.randn(32, 64).to(dtype)
    ref = m(x)
    out, rep = run_compiled(m, (x,), device)
    assert out.dtype == dtype
    assert scale_err(out, ref) < tol
    if device.startswith("cpu"):
        assert rep.share_on_primkit == 1.0, str(rep)


def check_encoder_decoder(model, ids, device, tol):
    """A transformers model's last hidden state through the bridge against eager; 100 % on PrimKit on cpu."""
    with torch.no_grad():
        ref = model(ids).last_hidden_state
    torch._dynamo.reset()
    report = primkit.torch.Report()
    c = torch.compile(model, backend="primkit", options={"device": device, "report": report})
    with torch.no_grad():
        out = c(ids).last_hidden_state
    assert scale_err(out, ref) < tol
    if device.startswith("cpu"):
        assert report.share_on_primkit == 1.0, str(report)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.bfloat16, 5e-2)])
def test_gpt2_forward(device, dtype, tol):
    big_model_devices(device)
    check_encoder_decoder(gpt2().to(dtype), torch.randint(0, 2048, (2, 64)), device, tol)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.bfloat16, 5e-2)])
def test_bert_forward(device, dtype, tol):
    big_model_devices(device)
    check_encoder_decoder(bert().to(dtype), torch.randint(0, 2048, (2, 48)), device, tol)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.bfloat16, 6e-2)])
def test_resnet18_forward(device, dtype, tol):
    big_model_devices(device)
    m = resnet18().to(dtype)
    x = torch.randn(2, 3, 64, 64).to(dtype)
    with torch.no_grad():
        ref = m(x)
    out, rep = run_compiled(m, (x,), device)
    assert scale_err(out, ref) < tol
    if device.startswith("cpu"):
        assert rep.share_on_primkit == 1.0, str(rep)


def train_steps(model, batches, compiled, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(compiled(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_mlp_training_step_matches_eager(device):
    torch.manual_seed(1)
    batches = [(torch.randn(16, 64), torch.randn(16, 10)) for _ in range(3)]
    eager, comp = mlp(), mlp()
    ref_losses = train_steps(eager, batches, eager)
    torch._dynamo.reset()
    report = primkit.torch.Report()
    c = torch.compile(comp, backend="primkit", options={"device": device, "report": report})
    losses = train_steps(comp, batches, c)
    assert losses == pytest.approx(ref_losses, rel=1e-4)
    for p, q in zip(eager.parameters(), comp.parameters()):
        assert scale_err(q.detach(), p.detach()) < 1e-4
    assert any(r["graph"] == "backward" and r["where"] == "primkit" for r in report.nodes)


def test_gpt2_training_step_matches_eager(device):
    big_model_devices(device)
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=768, n_head=12, n_positions=128, vocab_size=1024,
                                  bos_token_id=0, eos_token_id=0, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)
    eager = transformers.GPT2LMHeadModel(cfg)
    comp = transformers.GPT2LMHeadModel(cfg)
    comp.load_state_dict(eager.state_dict())
    ids = torch.randint(0, 1024, (2, 32))
    losses = []
    torch._dynamo.reset()
    c = torch.compile(comp, backend="primkit", options={"device": device})
    for model, fn in ((eager, eager), (comp, c)):
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        out = fn(ids, labels=ids)
        out.loss.backward()
        opt.step()
        losses.append(out.loss.item())
    assert losses[1] == pytest.approx(losses[0], rel=1e-4)
    for (n, p), q in zip(eager.named_parameters(), comp.parameters()):
        assert scale_err(q.detach(), p.detach()) < 1e-4, n


def test_strict_mode_names_the_node_it_cannot_run():
    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.det(x) + 1  # no PrimKit lowering

    torch._dynamo.reset()
    c = torch.compile(Odd(), backend="primkit", options={"strict": True})
    with pytest.raises(Exception, match=r"(?s)strict.*_linalg_det"):
        c(torch.randn(3, 3))
    torch._dynamo.reset()
    rep = primkit.torch.explain(Odd(), torch.randn(3, 3), print_report=False)
    eager = rep.eager_nodes()
    assert eager and all("no PrimKit lowering" in r["reason"] or r["reason"] for r in eager)
    assert any(r["where"] == "primkit" for r in rep.nodes)  # the + 1 still runs on PrimKit


def test_new_shapes_recompile_and_compiled_graphs_are_cached():
    m = mlp().eval()
    torch._dynamo.reset()
    calls = []

    def counting(gm, inputs, options=None):
        calls.append([tuple(t.shape) for t in inputs if isinstance(t, torch.Tensor)])
        return primkit.torch.primkit_backend(gm, inputs, options)

    c = torch.compile(m, backend=counting)
    with torch.no_grad():
        for n in (4, 4, 9, 9, 4):
            x = torch.randn(n, 64)
            assert scale_err(c(x), m(x)) < 1e-5
    assert 1 <= len(calls) <= 2, calls  # 4, then 9 (a dynamic-shape graph specialises per shape, cached)


def test_explain_reports_each_node():
    m = mlp().eval()
    with torch.no_grad():
        rep = primkit.torch.explain(m, torch.randn(8, 64), print_report=False)
    assert rep.nodes and rep.share_on_primkit == 1.0
    r = rep.nodes[0]
    assert {"node", "target", "where", "device", "partition", "kernel", "reason"} <= set(r)
    assert "ran on PrimKit (100.0 %)" in str(rep)
    # The MLP's hidden activations are intermediates of its one partition; sharing by liveness never takes more
    # than a buffer each.
    assert 0 < r["intermediate_bytes"] <= r["unshared_intermediate_bytes"]
    assert "KiB unshared" in r["kernel"]
