"""The GPU paths: fp16 autocast with its loss scaler, bf16, torch.compile on
CUDA, nccl DDP, pinned batches, search on the device, and checkpoints that
move between GPU and CPU. Marked `cuda`; skipped where no GPU is visible.

    python -m pytest -m cuda -n 0 tests/gpu        # or scripts/benchmarks/gpu_check.py, which runs these
"""

import json
import math

import pytest
import torch

from nmt.data.toy import make_toy_corpus
from nmt.base.device import to_device
from nmt.translator import Translator
from tests.helpers import train

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

TOY = ("experiment=quickstart", "trainer.val_max_sentences=20", "trainer.heatmap_sentences=0",
       "trainer.log_every=1", "trainer.keep_last=1")
TINY_TRANSFORMER = ("data=toy", "model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
                    "model/positional=sinusoidal", "trainer.val_max_sentences=10", "trainer.heatmap_sentences=0",
                    "trainer.keep_last=1", "trainer.log_every=1",
                    *(f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
                      for key, value in (("d_model", 32), ("layers", 1), ("heads", 2), ("ff_size", 64),
                                         ("dropout", 0.0))))
SOURCES = [src for src, _ in make_toy_corpus(3, 3, 3, seed=5).test]   # spelled-out dates


def records(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_mixed_precision_learns_on_the_gpu(tmp_path, cache_dir, precision):
    trainer = train(tmp_path, *TOY, "trainer.device=cuda", f"trainer.precision={precision}",
                    "trainer.max_steps=150", "trainer.val_every=50", cache_dir=cache_dir)
    assert trainer.device.type == "cuda" and trainer.precision == precision
    assert trainer.scaler.is_enabled() == (precision == "fp16")     # the loss scaler is fp16's alone
    if precision == "fp16":
        assert math.isfinite(trainer.scaler.get_scale()) and trainer.scaler.get_scale() > 0
        saved = torch.load(tmp_path / "checkpoints" / "last.pt", weights_only=True)
        assert saved["scaler"]["scale"] > 0                         # the scale travels with the run
    losses = [r["loss"] for r in records(tmp_path)]
    assert losses[-1] < losses[0] * 0.8, losses                     # it learns, not only runs


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compile_on_cuda_trains_as_eager_does(tmp_path, cache_dir, mode):
    """reduce-overhead replays one CUDA graph per batch shape; padded to multiples of 8 the toy
    task has few shapes, and 12 updates replay some of them, with the eager model's losses."""
    common = (*TINY_TRANSFORMER, "trainer.device=cuda", "trainer.max_steps=12", "trainer.val_every=6",
              "data.pad_to_multiple=8")
    eager = train(tmp_path / "eager", *common, cache_dir=cache_dir)
    compiled = train(tmp_path / "compiled", *common, "trainer.compile=true", f"trainer.compile_mode={mode}",
                     cache_dir=cache_dir)
    assert compiled.forward is not compiled.parallel
    shapes = [tuple(b.src.shape) + tuple(b.tgt.shape) for b in compiled.data.train.batches(0)[:12]]
    assert len(set(shapes)) < len(shapes)                          # some graphs are replayed, not recorded
    for a, b in zip(records(tmp_path / "eager"), records(tmp_path / "compiled")):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-3)
    assert eager.progress.step == compiled.progress.step == 12


@pytest.mark.parametrize("extra", [(), ("trainer.compile=true",)], ids=["eager_model", "compiled_model"])
def test_cuda_graphs_train_as_the_eager_update_does(tmp_path, cache_dir, extra):
    """trainer.cuda_graphs records each batch shape's update once and replays it: 12 updates
    (some shapes replayed) give the eager run's validation losses and, uncompiled, its weights."""
    common = (*TINY_TRANSFORMER, "trainer.device=cuda", "trainer.max_steps=12", "trainer.val_every=6",
              "data.pad_to_multiple=8", *extra)
    eager = train(tmp_path / "eager", *common, cache_dir=cache_dir)
    graphed = train(tmp_path / "graphed", *common, "trainer.cuda_graphs=true", cache_dir=cache_dir)
    assert 0 < len(graphed.graphed.graphs) < 12                      # some graphs are replayed, not recorded
    assert eager.progress.step == graphed.progress.step == 12
    pairs = list(zip(records(tmp_path / "eager"), records(tmp_path / "graphed")))
    assert [a["step"] for a, _ in pairs] == [b["step"] for _, b in pairs] == [6, 12]    # the validations
    for a, b in pairs:
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-3)
    if not extra:    # compiled kernels round differently, and Adam turns the rounding noise of a gradient
        # that is 0 in exact arithmetic (a self-attention key bias) into whole steps: losses alone there
        for (name, a), b in zip(eager.model.named_parameters(), graphed.model.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4, msg=name)


def test_cuda_graphs_resume_continues_exactly(tmp_path, cache_dir):
    """With dropout, 12 graphed updates straight give the losses and weights of 6, a resume
    (which records its graphs anew), then 6 more: recording draws no random numbers."""
    common = (*TINY_TRANSFORMER, "trainer.device=cuda", "trainer.cuda_graphs=true", "data.pad_to_multiple=8",
              "model.encoder.dropout=0.3", "model.decoder.dropout=0.3", "trainer.val_every=6")
    straight = train(tmp_path / "straight", *common, "trainer.max_steps=12", cache_dir=cache_dir)
    train(tmp_path / "split", *common, "trainer.max_steps=6", cache_dir=cache_dir)
    resumed = train(tmp_path / "split", *common, "trainer.max_steps=12", "trainer.resume=auto", cache_dir=cache_dir)
    assert resumed.step == straight.step == 12
    for a, b in zip(records(tmp_path / "straight"), records(tmp_path / "split")):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4)
    for (name, a), b in zip(straight.model.named_parameters(), resumed.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4, msg=name)


RECORDED_MODELS = {   # every part a graph records: nothing in them may read the device or copy from the host
    **{f"transformer_{p}": (*TINY_TRANSFORMER, f"model/positional={p}")
       for p in ("learned", "relative", "rotary", "alibi", "none")},
    "transformer_entmax": (*TINY_TRANSFORMER, "model.attention.normaliser=entmax15"),
    **{f"gru_{a}": (*TOY, f"model/attention={a}")
       for a in ("bahdanau", "luong_dot", "luong_concat", "luong_location", "cosine", "multihead", "scaled_dot")},
    **{f"gru_{scope}": (*TOY, f"model.attention.scope={scope}") for scope in ("local_m", "local_p")},
    "gru_sparsemax": (*TOY, "model.attention.normaliser=sparsemax"),
    "gru_coverage_unweighted": (*TOY, "model/attention=coverage", "model.attention.coverage_loss_weight=0"),
    **{f"lstm_bridge_{b}": (*TOY, "model/encoder=lstm", "model/decoder=lstm", f"model/bridge={b}")
       for b in ("mean", "han", "structured", "zhou", "zero")},
    "lstmn_encoder": (*TOY, "model/encoder=lstmn"),
}


@pytest.mark.parametrize("name", list(RECORDED_MODELS))
def test_every_model_part_is_recorded_and_trains_as_eager(tmp_path, cache_dir, name):
    common = (*RECORDED_MODELS[name], "trainer.device=cuda", "trainer.max_steps=6", "trainer.val_every=6",
              "trainer.val_max_sentences=10", "data.pad_to_multiple=8")
    train(tmp_path / "eager", *common, cache_dir=cache_dir)
    graphed = train(tmp_path / "graphed", *common, "trainer.cuda_graphs=true", cache_dir=cache_dir)
    assert graphed.graphed.graphs
    for a, b in zip(records(tmp_path / "eager"), records(tmp_path / "graphed")):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-3), name


def test_cuda_graphs_learn_in_bf16_with_dropout_and_a_gru(tmp_path, cache_dir):
    """The RNN model (its padded loop) and bf16 autocast recorded too; dropout is drawn anew
    at each replay (a replayed graph that repeated its masks would still learn, so the
    masks are compared directly)."""
    trainer = train(tmp_path, *TOY, "trainer.device=cuda", "trainer.precision=bf16", "trainer.cuda_graphs=true",
                    "data.pad_to_multiple=8", "model.encoder.dropout=0.3", "trainer.max_steps=150",
                    "trainer.val_every=50", cache_dir=cache_dir)
    assert trainer.graphed is not None and len(trainer.graphed.graphs) < 150
    losses = [r["loss"] for r in records(tmp_path)]
    assert losses[-1] < losses[0] * 0.8, losses
    graph, src, tgt, stats = next(iter(trainer.graphed.graphs.values()))
    first = (graph.replay(), stats.clone())[1]
    second = (graph.replay(), stats.clone())[1]
    assert first[0] != second[0]                                     # another dropout mask, another loss
    assert first[3] == second[3]                                     # the same batch


def test_ddp_over_nccl_gives_the_gradients_of_the_plain_model(toy_checkpoint):
    """One rank of nccl (two ranks cannot share one GPU): DistributedDataParallel
    around nmt's model, as Distributed.wrap builds it, reduces over nccl and
    leaves the gradients of the unwrapped model."""
    import copy
    import socket

    import torch.distributed as dist

    model = Translator.from_checkpoint(toy_checkpoint, device="cuda").model.train()
    twin = copy.deepcopy(model)
    with socket.socket() as probe:                      # a free port for the rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        assert dist.get_backend() == "nccl"
        wrapped = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
        src = torch.tensor([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]], device="cuda")
        tgt = torch.tensor([[2, 11, 12, 3], [2, 13, 3, 0]], device="cuda")
        for net in (wrapped, twin):
            out, _ = net(src, tgt)
            out.logits.float().log_softmax(-1).sum().backward()
        for (name, a), b in zip(model.named_parameters(), twin.parameters()):
            if a.grad is not None:
                assert torch.allclose(a.grad, b.grad, atol=1e-5), name
        total = torch.tensor([3.0], device="cuda")
        dist.all_reduce(total)
        assert total.item() == 3.0
    finally:
        dist.destroy_process_group()


def test_a_gpu_run_resumes_on_the_cpu_and_back(tmp_path, cache_dir):
    train(tmp_path, *TOY, "trainer.device=cuda", "trainer.max_steps=20", "trainer.val_every=10",
          cache_dir=cache_dir)
    on_cpu = train(tmp_path, *TOY, "trainer.device=cpu", "trainer.max_steps=40", "trainer.val_every=10",
                   "trainer.resume=auto", cache_dir=cache_dir)
    assert on_cpu.progress.step == 40 and next(on_cpu.model.parameters()).device.type == "cpu"
    back = train(tmp_path, *TOY, "trainer.device=cuda", "trainer.max_steps=60", "trainer.val_every=10",
                 "trainer.resume=auto", cache_dir=cache_dir)
    assert back.progress.step == 60 and next(back.model.parameters()).device.type == "cuda"
    assert [r["step"] for r in records(tmp_path)] == [10, 20, 30, 40, 50, 60]
    best = tmp_path / "checkpoints" / "best.pt"
    for device in ("cpu", "cuda"):
        outputs = Translator.from_checkpoint(best, device=device).translate(SOURCES, beam_size=5)
        assert all(o.text.strip() for o in outputs)


@pytest.fixture(scope="module")
def trained_on_gpu(tmp_path_factory, cache_dir):
    """The quick-start model, trained on the GPU to confident predictions."""
    run_dir = tmp_path_factory.mktemp("gpu_quickstart")
    train(run_dir, "experiment=quickstart", "trainer.device=cuda", "trainer.heatmap_sentences=0",
          cache_dir=cache_dir)
    return run_dir / "checkpoints" / "best.pt"


def test_search_on_the_gpu_finds_what_the_cpu_finds(trained_on_gpu):
    cpu = Translator.from_checkpoint(trained_on_gpu, device="cpu")
    gpu = Translator.from_checkpoint(trained_on_gpu, device="cuda")
    assert next(gpu.model.parameters()).device.type == "cuda"
    for beam in (1, 5):
        on_gpu, on_cpu = gpu.translate(SOURCES, beam_size=beam), cpu.translate(SOURCES, beam_size=beam)
        assert [g.tokens for g in on_gpu] == [c.tokens for c in on_cpu]
        assert [g.score for g in on_gpu] == pytest.approx([c.score for c in on_cpu], abs=1e-3)


def test_transformer_kv_cache_on_the_gpu_equals_full_recompute(tmp_path, cache_dir):
    trainer = train(tmp_path, *TINY_TRANSFORMER, "trainer.device=cuda", "trainer.max_steps=30",
                    "trainer.val_every=30", cache_dir=cache_dir)
    model = trainer.model.eval()
    src = torch.tensor([[5, 6, 7, 8, 3]], device="cuda")
    tgt = torch.tensor([[2, 9, 10, 11, 12]], device="cuda")
    with torch.no_grad():
        full, _ = model(src, tgt)                                  # (1, T, V), all positions at once
        memory, state = model.start(src)
        stepped = []
        for t in range(tgt.size(1)):
            logits, state, _ = model.decoder.step(tgt[:, t], state, memory)   # (1, V)
            stepped.append(logits)
    assert torch.allclose(torch.stack(stepped, 1), full.logits, atol=1e-4)   # (1, T, V)


def test_batches_reach_the_gpu_through_pinned_memory():
    batch = torch.arange(12).view(3, 4)
    moved = to_device(batch, torch.device("cuda"))
    assert moved.device.type == "cuda" and torch.equal(moved.cpu(), batch)
    assert to_device(batch, torch.device("cpu")) is batch             # no copy on the CPU
