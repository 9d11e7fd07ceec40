"""trainer.cuda_graphs: the update a CUDA graph records (batch_statistics) is the
eager update, number for number, and what cannot be recorded is refused in one
line. The recording and replay themselves are tested on a GPU (tests/gpu)."""

import re

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.training.build import build_trainer
from nmt.training.config_checks import check_config, check_cuda_graphs
from nmt.speedups.graphed_update import batch_statistics
from tests.gpu.test_cuda import RECORDED_MODELS
from tests.helpers import make_config

TINY_TRANSFORMER = ("data=toy", "data.n_train=64", "model/encoder=transformer", "model/decoder=transformer",
                    "model/bridge=zero", "model/positional=sinusoidal", "trainer.heatmap_sentences=0",
                    *(f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
                      for key, value in (("d_model", 32), ("layers", 1), ("heads", 2), ("ff_size", 64),
                                         ("dropout", 0.0))))
GRU = ("experiment=quickstart", "data.n_train=64", "trainer.heatmap_sentences=0")


def build(tmp_path, cache_dir, *overrides, base=TINY_TRANSFORMER):
    cfg = make_config(*base, *overrides, cache_dir=cache_dir)
    check_config(cfg)
    return build_trainer(cfg, tmp_path)


@pytest.mark.parametrize("base, overrides", [(TINY_TRANSFORMER, ()), (TINY_TRANSFORMER, ("trainer.grad_clip=0.05",)),
                                             (TINY_TRANSFORMER, ("trainer.grad_clip=0",)), (GRU, ())],
                         ids=["transformer", "clipped", "unclipped", "gru_luong"])
def test_the_recorded_update_is_the_eager_update(tmp_path, cache_dir, base, overrides):
    """Three updates each way from the same weights: the same loss, NLL, gradient
    norm and token counts, and the same weights after every optimiser step."""
    eager = build(tmp_path / "eager", cache_dir, *overrides, base=base)
    graphed = build(tmp_path / "graphed", cache_dir, *overrides, base=base)
    graphed.model.load_state_dict(eager.model.state_dict())
    params = [p for p in graphed.model.parameters() if p.requires_grad]
    s = graphed.settings
    for batch in eager.data.train.batches(0)[:3]:
        expected = eager.train_update([batch])
        stats = batch_statistics(graphed.forward, params, batch.src, batch.tgt, s.label_smoothing, s.grad_clip)
        graphed.optimizer.step()
        loss, nll, grad_norm, tokens, src_tokens = stats.tolist()
        assert loss == pytest.approx(expected["loss"], rel=1e-6)
        assert nll / tokens == pytest.approx(expected["nll"], rel=1e-6)
        assert grad_norm == pytest.approx(expected["grad_norm"], rel=1e-5)
        assert (int(tokens), int(src_tokens)) == (expected["tgt_tokens"], expected["src_tokens"])
        for (name, a), b in zip(eager.model.named_parameters(), graphed.model.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7, msg=name)
    assert s.grad_clip == 0 or expected["grad_norm"] > 0


def test_a_parameter_the_loss_does_not_reach_keeps_no_gradient(tmp_path, cache_dir):
    """As in the eager update, a parameter without a gradient is left to the optimiser as None."""
    trainer = build(tmp_path, cache_dir)
    unused = torch.nn.Parameter(torch.ones(3))
    params = [p for p in trainer.model.parameters()] + [unused]
    batch = trainer.data.train.batches(0)[0]
    batch_statistics(trainer.forward, params, batch.src, batch.tgt, 0.1, 1.0)
    assert unused.grad is None
    assert all(p.grad is not None for p in params[:-1])


def test_hard_attention_is_refused_in_one_line(tmp_path, cache_dir):
    trainer = build(tmp_path, cache_dir, "model.attention.scope=hard", base=GRU)
    params = [p for p in trainer.model.parameters()]
    batch = trainer.data.train.batches(0)[0]
    with pytest.raises(NmtError, match="cannot record hard attention"):
        batch_statistics(trainer.forward, params, batch.src, batch.tgt, 0.1, 1.0)


def test_on_a_cpu_the_option_is_refused_in_one_line(cache_dir):
    cfg = make_config(*TINY_TRANSFORMER, "trainer.cuda_graphs=true", "trainer.device=cpu", cache_dir=cache_dir)
    with pytest.raises(NmtError, match=r"trainer.cuda_graphs=true needs a GPU \(trainer.device=cpu is cpu\)"):
        check_config(cfg)


@pytest.mark.parametrize("base, overrides, refusal", [
    (TINY_TRANSFORMER, ("trainer.precision=fp16",), "takes fp32 or bf16"),
    (TINY_TRANSFORMER, ("trainer.accumulate=2",), "set trainer.accumulate=1"),
    (TINY_TRANSFORMER, ("trainer.compile=true", "trainer.compile_mode=reduce-overhead"), "would record them again"),
    (TINY_TRANSFORMER, ("trainer.guided_alignment.weight=0.5",), "set trainer.guided_alignment.weight=0"),
    (GRU, ("model/attention=coverage",), "set model.attention.coverage_loss_weight=0"),
    (GRU, ("model.attention.scope=hard",), "cannot record hard attention"),
])
def test_what_a_graph_cannot_record_is_refused_on_a_gpu_config(cache_dir, base, overrides, refusal):
    from nmt.models.build import check_model_config

    cfg = make_config(*base, "trainer.cuda_graphs=true", *overrides, cache_dir=cache_dir)
    model = check_model_config(cfg.model, int(cfg.data.vocab_size))
    with pytest.raises(NmtError, match=refusal):
        check_cuda_graphs(cfg, torch.device("cuda"), model)


def test_without_padding_to_a_multiple_a_warning_says_why_to_pad(cache_dir, caplog):
    from nmt.models.build import check_model_config

    for pad, warned in ((1, True), (8, False)):
        caplog.clear()
        cfg = make_config(*TINY_TRANSFORMER, "trainer.cuda_graphs=true", f"data.pad_to_multiple={pad}",
                          cache_dir=cache_dir)
        check_cuda_graphs(cfg, torch.device("cuda"), check_model_config(cfg.model, int(cfg.data.vocab_size)))
        assert ("data.pad_to_multiple=8 keeps them few" in caplog.text) == warned


def test_a_gpu_config_that_can_be_recorded_passes(cache_dir):
    from nmt.models.build import check_model_config

    for base, overrides in [(TINY_TRANSFORMER, ()), (TINY_TRANSFORMER, ("trainer.precision=bf16", "trainer.compile=true")),
                            (GRU, ("model/attention=coverage", "model.attention.coverage_loss_weight=0"))]:
        cfg = make_config(*base, "trainer.cuda_graphs=true", *overrides, cache_dir=cache_dir)
        check_cuda_graphs(cfg, torch.device("cuda"), check_model_config(cfg.model, int(cfg.data.vocab_size)))


def test_under_torchrun_the_option_is_refused_in_one_line(tmp_path, cache_dir, monkeypatch):
    """Each rank would replay its own graph around DDP's all-reduce: refused before any data is read."""
    from nmt.training.distributed import Distributed

    class Ranks:
        enabled = True

        def broadcast_object(self, value):
            return value

    monkeypatch.setattr(Distributed, "start", staticmethod(lambda device, timeout: Ranks()))
    cfg = make_config(*TINY_TRANSFORMER, "trainer.cuda_graphs=true", cache_dir=cache_dir)
    with pytest.raises(NmtError, match="records one process's update; under torchrun train without it"):
        build_trainer(cfg, tmp_path)
    assert not (tmp_path / "checkpoints").exists()


class FakeCapture:
    """torch.cuda's capture API on the CPU: the recorded code runs eagerly; ending the
    capture raises as CUDA does after an operation failed inside it."""

    def __init__(self, monkeypatch, fail_on_end: bool):
        import contextlib

        self.fail_on_end = fail_on_end
        stream = type("Stream", (), {"wait_stream": lambda self, other: None})
        for name, value in (("Stream", lambda device=None: stream()), ("current_stream", lambda device=None: stream()),
                            ("stream", lambda s: contextlib.nullcontext()), ("get_rng_state", lambda device=None: 0),
                            ("set_rng_state", lambda state, device=None: None),
                            ("CUDAGraph", lambda: type("Graph", (), {"pool": lambda self: "pool"})()),
                            ("graph", self.graph)):
            monkeypatch.setattr(torch.cuda, name, value)

    def graph(self, graph, pool=None, capture_error_mode=None):
        import contextlib

        @contextlib.contextmanager
        def capture():
            try:
                yield
            finally:
                if self.fail_on_end:
                    raise RuntimeError("CUDA error: operation failed due to a previous error during capture")
        return capture()


@pytest.mark.parametrize("failure, said", [
    (RuntimeError("CUDA error: operation not permitted when stream is capturing"),
     "could not be recorded as a CUDA graph (CUDA error: operation not permitted when stream is capturing)"),
    (NmtError("trainer.compile=true: torch could not compile this model"), "could not compile this model"),
])
def test_a_failed_capture_is_one_line_naming_the_first_failure(tmp_path, cache_dir, monkeypatch, failure, said):
    from nmt.speedups.graphed_update import GraphedUpdate

    trainer = build(tmp_path, cache_dir)
    graphed = GraphedUpdate(trainer.model, trainer.forward, trainer.optimizer, trainer.schedule, trainer.settings,
                            torch.device("cpu"))
    batch = trainer.data.train.batches(0)[0]
    FakeCapture(monkeypatch, fail_on_end=False)
    events = []
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device=None: events.append("saved") or "state")
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device=None: events.append(f"restored {state}"))
    warm_up = graphed.statistics
    monkeypatch.setattr(graphed, "statistics", lambda src, tgt: events.append("ran") or warm_up(src, tgt))
    _, src, tgt, stats = graphed.record(batch.src, batch.tgt)       # recorded: the static copies and the figures
    assert torch.equal(src, batch.src) and stats.shape == (5,) and graphed.pool == "pool"
    assert events == ["saved", "ran", "restored state", "ran"]      # the warm-up's random draws given back
    monkeypatch.setattr(graphed, "statistics", warm_up)
    calls = []

    def statistics(src, tgt):
        calls.append(1)
        if len(calls) == 2:                                            # the warm-up passes, the capture fails
            raise failure
        return torch.zeros(5)

    monkeypatch.setattr(graphed, "statistics", statistics)
    FakeCapture(monkeypatch, fail_on_end=True)
    with pytest.raises(NmtError, match=re.escape(said)) as raised:
        graphed.record(batch.src, batch.tgt)
    assert "previous error" not in str(raised.value) and len(str(raised.value).splitlines()) == 1
    if isinstance(failure, NmtError):                                  # already one line: passed on as it is
        assert raised.value is failure


def test_each_shape_is_recorded_once_and_its_replays_step_as_the_eager_update(tmp_path, cache_dir, monkeypatch):
    """GraphedUpdate.train_update on the CPU, a graph stood in by the recorded function run
    again: new shapes recorded, known ones replayed over their static copies, one read an
    update, then the optimiser step; eight updates give the eager run's figures and weights."""
    from types import SimpleNamespace

    from nmt.speedups.graphed_update import GraphedUpdate

    eager, graphed = build(tmp_path / "eager", cache_dir), build(tmp_path / "graphed", cache_dir)
    graphed.model.load_state_dict(eager.model.state_dict())
    update = GraphedUpdate(graphed.model, graphed.forward, graphed.optimizer, graphed.schedule, graphed.settings,
                           torch.device("cpu"))
    recorded = []

    def record(src, tgt):
        src, tgt = src.clone(), tgt.clone()                          # the static copies
        stats = update.statistics(src, tgt)
        recorded.append((*src.shape, *tgt.shape))
        return SimpleNamespace(replay=lambda: stats.copy_(update.statistics(src, tgt))), src, tgt, stats

    monkeypatch.setattr(update, "record", record)
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: self)   # no pinned memory without a GPU
    epoch = eager.data.train.batches(0)
    for batch in epoch[:6] + epoch[:2]:                                   # the last two shapes come again
        expected, got = eager.train_update([batch]), update.train_update([batch], graphed._budget_fraction)
        assert got["loss"] == pytest.approx(expected["loss"], rel=1e-6)
        assert got["grad_norm"] == pytest.approx(expected["grad_norm"], rel=1e-5)
        assert (got["tgt_tokens"], got["src_tokens"]) == (expected["tgt_tokens"], expected["src_tokens"])
    # each shape recorded once: 8 updates, at most 6 recordings, so at least two updates replayed
    assert recorded == list(dict.fromkeys((*b.src.shape, *b.tgt.shape) for b in epoch[:6]))
    for (name, a), b in zip(eager.model.named_parameters(), graphed.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7, msg=name)


def test_a_non_finite_loss_skips_the_optimiser_step(tmp_path, cache_dir, monkeypatch):
    """As in the eager update: the replay's loss is read, and a NaN leaves the weights and
    the schedule as they were."""
    from types import SimpleNamespace

    from nmt.speedups.graphed_update import GraphedUpdate

    trainer = build(tmp_path, cache_dir)
    update = GraphedUpdate(trainer.model, trainer.forward, trainer.optimizer, trainer.schedule, trainer.settings,
                           torch.device("cpu"))
    bad = torch.tensor([float("nan"), 1.0, 1.0, 5.0, 5.0])
    monkeypatch.setattr(update, "record", lambda src, tgt: (SimpleNamespace(replay=lambda: None), src, tgt, bad))
    monkeypatch.setattr(trainer.optimizer, "step", lambda: pytest.fail("stepped on a NaN loss"))
    monkeypatch.setattr(trainer.schedule, "step_update", lambda fraction: pytest.fail("scheduled on a NaN loss"))
    assert update.train_update([trainer.data.train.batches(0)[0]], trainer._budget_fraction) == {"finite": False}


def refuse_host_reads(monkeypatch) -> None:
    """What a CUDA graph's capture cannot hold, refused on the CPU too: reading a tensor's
    value into Python, and making a tensor from Python data (on a GPU, a host-to-device copy)."""
    def refused(*args, **kwargs):
        raise AssertionError("a host read or copy inside the recorded update")

    for method in ("__bool__", "__int__", "__float__", "__index__", "item", "tolist", "numpy"):
        monkeypatch.setattr(torch.Tensor, method, refused)
    for function in ("tensor", "as_tensor"):
        monkeypatch.setattr(torch, function, refused)


@pytest.mark.parametrize("name", sorted(RECORDED_MODELS))
def test_no_model_part_reads_the_device_inside_the_recorded_update(tmp_path, cache_dir, monkeypatch, name):
    """The class of defect the first GPU lease met (the loss's `bool(tiny.any())`, ALiBi's
    slopes made from a list each call), caught on the CPU for every part the GPU test records.
    The first call may make what every later call reuses; the second, as a replay, may not."""
    from nmt.speedups import fused_loss

    overrides = [o for o in RECORDED_MODELS[name] if not o.startswith("trainer.")]
    trainer = build(tmp_path, cache_dir, "data.n_train=64", base=tuple(overrides))
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    batch = trainer.data.train.batches(0)[0]
    s = trainer.settings
    batch_statistics(trainer.forward, params, batch.src, batch.tgt, s.label_smoothing, s.grad_clip)
    monkeypatch.setattr(fused_loss, "capturing", lambda tensor: True)    # as while a graph records
    refuse_host_reads(monkeypatch)
    batch_statistics(trainer.forward, params, batch.src, batch.tgt, s.label_smoothing, s.grad_clip)
