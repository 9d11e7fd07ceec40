"""python -m nmt.average: the element-wise mean, by hand; checkpoints of
another vocabulary or model config are refused in one line, nothing written."""

import json

import pytest
import torch

from nmt.commands.average import main
from nmt.store.averaging import config_difference
from nmt.data.tokenizer import Tokenizer
from nmt.data.toy import make_toy_corpus
from tests.helpers import flip_a_bit_of_record, one_thread  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")


def _variant(tmp_path, toy_checkpoint, name, fill=None, **changes):
    """A copy of the toy checkpoint: every float tensor set to `fill`, and
    top-level entries replaced by `changes`."""
    state = torch.load(toy_checkpoint, weights_only=True)
    if fill is not None:
        state["model"] = {k: torch.full_like(v, fill) if v.is_floating_point() else v
                          for k, v in state["model"].items()}
    state.update(changes)
    path = tmp_path / name
    torch.save(state, path)
    return path


def test_mean_by_hand(tmp_path, toy_checkpoint, capsys):
    # weights 1, 2 and 6 everywhere: (1 + 2 + 6) / 3 = 3
    paths = [_variant(tmp_path, toy_checkpoint, f"{v}.pt", fill=float(v)) for v in (1, 2, 6)]
    out = tmp_path / "averaged.pt"
    assert main([*map(str, paths), "--output", str(out)]) == 0
    averaged = torch.load(out, weights_only=True)
    for name, tensor in averaged["model"].items():
        assert tensor.dtype == torch.float32 and torch.equal(tensor, torch.full_like(tensor, 3.0)), name
    assert averaged["averaged_from"] == [str(p) for p in paths]
    assert "optimizer" not in averaged
    assert "averaged 3 checkpoints" in capsys.readouterr().out


def test_the_average_translates(tmp_path, toy_checkpoint):
    from nmt.translator import Translator

    out = tmp_path / "averaged.pt"
    assert main([str(toy_checkpoint), str(toy_checkpoint), "--output", str(out)]) == 0
    # the mean of a model with itself is that model: the same translation
    ours = Translator.from_checkpoint(toy_checkpoint, device="cpu").translate(["one two three"])
    theirs = Translator.from_checkpoint(out, device="cpu").translate(["one two three"])
    assert ours[0].text == theirs[0].text


def _refused(capsys, out, *paths):
    assert main([*map(str, paths), "--output", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("nmt: error:") and "\n" not in err, err
    assert str(paths[0]) in err and str(paths[-1]) in err, err
    assert not out.exists()
    return err


def test_another_vocabulary_is_refused(tmp_path, toy_checkpoint, capsys):
    """Same vocabulary size, so the same shapes: before this check the two were
    averaged into a model whose ids meant different subwords."""
    ours = Tokenizer.from_bytes(torch.load(toy_checkpoint, weights_only=True)["tokenizer"])
    other = Tokenizer.train(make_toy_corpus(300, 1, 0, seed=9).train, ours.src_vocab_size,
                            model_type="bpe")
    assert other.src_vocab_size == ours.src_vocab_size and other.to_bytes() != ours.to_bytes()
    foreign = _variant(tmp_path, toy_checkpoint, "foreign.pt", tokenizer=other.to_bytes())
    err = _refused(capsys, tmp_path / "averaged.pt", toy_checkpoint, foreign)
    assert "different vocabularies" in err and "source and target sentencepiece" in err


def test_another_model_config_is_refused(tmp_path, toy_checkpoint, capsys):
    """Same tensors, another model config: refused whatever key differs, since
    a config that differs can give the same tensors another meaning."""
    state = torch.load(toy_checkpoint, weights_only=True)
    config = dict(state["config"], model=dict(state["config"]["model"]))
    config["model"]["decoder"] = dict(config["model"]["decoder"], dropout=0.5)
    other = _variant(tmp_path, toy_checkpoint, "other.pt", config=config)
    err = _refused(capsys, tmp_path / "averaged.pt", toy_checkpoint, other)
    assert "different model configs (model.decoder.dropout: 0.0 vs 0.5)" in err


def test_another_shape_is_refused(tmp_path, toy_checkpoint, capsys):
    state = torch.load(toy_checkpoint, weights_only=True)
    name = next(iter(state["model"]))
    model = dict(state["model"], **{name: torch.zeros(1)})
    other = _variant(tmp_path, toy_checkpoint, "other.pt", model=model)
    err = _refused(capsys, tmp_path / "averaged.pt", toy_checkpoint, other)
    assert "different model shapes" in err


@pytest.mark.parametrize("copies", [1, 2])
def test_weights_that_do_not_fit_their_config_are_refused_as_translate_refuses_them(tmp_path, toy_checkpoint,
                                                                                    capsys, copies):
    """Both checkpoints say hidden_size=256 over weights of 128: they agree with each other, so
    only the check translate makes (the model built from the config, the weights loaded strictly)
    finds it; they were averaged with exit 0."""
    from nmt.commands.translate import main as translate

    state = torch.load(toy_checkpoint, weights_only=True)
    config = dict(state["config"], model=dict(state["config"]["model"]))
    assert config["model"]["encoder"]["hidden_size"] == 128
    config["model"]["encoder"] = dict(config["model"]["encoder"], hidden_size=256)
    paths = [_variant(tmp_path, toy_checkpoint, f"edited{k}.pt", config=config) for k in range(copies)]
    before = sorted(tmp_path.iterdir())
    assert main([*map(str, paths), "--output", str(tmp_path / "averaged.pt")]) == 1
    err = capsys.readouterr().err
    said = f"nmt: error: checkpoint {paths[0]}: its model weights do not fit its config ("
    assert err.startswith(said) and err.count("\n") == 1 and "Traceback" not in err, err
    assert sorted(tmp_path.iterdir()) == before                  # nothing written
    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    assert translate(["--checkpoint", str(paths[0]), "--input", str(source)]) == 1
    assert capsys.readouterr().err == err                        # the same check, the same line


def test_config_difference_names_the_first_key():
    a = {"encoder": {"layers": 2, "heads": [4, 4]}, "decoder": {"dropout": 0.1}}
    assert config_difference(a, a) is None
    assert config_difference(a, {**a, "decoder": {"dropout": 0.3}}) == "model.decoder.dropout: 0.1 vs 0.3"
    assert config_difference(a, {**a, "encoder": {"layers": 2, "heads": [4, 8]}}) == \
        "model.encoder.heads[1]: 4 vs 8"
    assert config_difference(a, {"encoder": a["encoder"]}) == "model.decoder only in the first"


@pytest.mark.parametrize("where, message", [
    ("folder", "--output {tmp}/folder is a directory; give a file name"),
    ("nowhere/avg.pt", "--output {tmp}/nowhere/avg.pt: folder {tmp}/nowhere does not exist; create it first"),
])
def test_an_output_that_cannot_be_written_is_refused_first(tmp_path, capsys, where, message):
    # as nmt.translate's --output: said before any checkpoint is read (the checkpoints do not
    # exist), no folder made; a folder is named as such, not 'cannot write checkpoint ...: Is a
    # directory; free disk space or ...' after loading them all
    (tmp_path / "folder").mkdir()
    assert main([str(tmp_path / "none.pt"), "--output", str(tmp_path / where)]) == 1
    err = capsys.readouterr().err
    assert err == "nmt: error: " + message.format(tmp=tmp_path) + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]


# -- --run RUN --best N | --last N --------------------------------------------

def _run_folder(tmp_path, toy_checkpoint, records, kept, summary_metric="bleu"):
    """A run folder as nmt.train leaves it: step_N.pt of weights N/100 for the
    steps in `kept`, metrics.jsonl from `records` (step, bleu, loss)."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    progress = torch.load(toy_checkpoint, weights_only=True)["progress"]
    for step in kept:                     # what training writes at step N: its progress says N
        path = _variant(tmp_path, toy_checkpoint, f"tmp_{step}.pt", fill=step / 100, progress=dict(progress, step=step))
        path.rename(run / "checkpoints" / f"step_{step}.pt")
    lines = [json.dumps({"step": s, "bleu": b, "chrf": 0.0, "loss": loss}) for s, b, loss in records]
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    if summary_metric:
        (run / "summary.json").write_text(json.dumps({"metric": summary_metric}))
    return run


def _weights(path):
    state = torch.load(path, weights_only=True)["model"]
    return {round(v.flatten()[0].item(), 5) for v in state.values() if v.is_floating_point()}


RECORDS = [(100, 10.0, 3.0), (200, 30.0, 2.0), (300, 25.0, 1.5), (400, 30.0, 1.8), (500, 20.0, 1.9)]


def test_run_best_and_last_by_hand(tmp_path, toy_checkpoint, capsys):
    run = _run_folder(tmp_path, toy_checkpoint, RECORDS, kept=(100, 200, 300, 400, 500))
    out = tmp_path / "avg.pt"
    # BLEU: 30 (200), 30 (400), 25 (300): the best two are 200 and 400 -> weights (2 + 4) / 2 = 3
    assert main(["--run", str(run), "--best", "2", "--output", str(out)]) == 0
    assert _weights(out) == {3.0}
    assert "averaged 2 checkpoints (steps 200, 400)" in capsys.readouterr().out
    # of equal scores the later step: --best 1 is step 400
    assert main(["--run", str(run), "--best", "1", "--output", str(out)]) == 0
    assert _weights(out) == {4.0}
    # --metric loss: lowest first, 300 (1.5) and 400 (1.8) -> 3.5
    assert main(["--run", str(run), "--best", "2", "--metric", "loss", "--output", str(out)]) == 0
    assert _weights(out) == {3.5}
    # --last 3: 300, 400, 500 -> 4
    assert main(["--run", str(run), "--last", "3", "--output", str(out)]) == 0
    assert _weights(out) == {4.0}


def test_run_metric_from_the_hydra_config_and_pruned_steps(tmp_path, toy_checkpoint, capsys):
    # step 200 was pruned (in metrics.jsonl, no file); the run validated by loss
    run = _run_folder(tmp_path, toy_checkpoint, RECORDS, kept=(100, 300, 400, 500), summary_metric=None)
    (run / ".hydra").mkdir()
    (run / ".hydra" / "config.yaml").write_text("trainer:\n  metric: loss\n")
    out = tmp_path / "avg.pt"
    assert main(["--run", str(run), "--best", "1", "--output", str(out)]) == 0
    assert _weights(out) == {3.0}                    # step 300, loss 1.5
    assert main(["--run", str(run), "--best", "9", "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert "kept 4 step checkpoints for this; averaging those" in captured.err
    assert _weights(out) == {(1 + 3 + 4 + 5) / 4}


@pytest.mark.parametrize("args, message", [
    (["--best", "2"], "--best, --last and --metric pick from a run: give --run RUN"),
    (["--run", "RUN"], "--run takes --best N or --last N"),
    (["--run", "RUN", "--best", "0"], "argument --best: 0 is not 1 or more"),
    (["--run", "RUN", "--best", "2", "--last", "2"], "not allowed with argument"),
    ([], "give the checkpoints to average, or --run RUN"),
])
def test_run_usage_errors(tmp_path, capsys, args, message):
    args = [a.replace("RUN", str(tmp_path)) for a in args]
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--output", str(tmp_path / "avg.pt")])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_run_without_what_it_needs_is_one_line(tmp_path, toy_checkpoint, capsys):
    out = tmp_path / "avg.pt"
    empty = tmp_path / "empty"
    (empty / "checkpoints").mkdir(parents=True)
    assert main(["--run", str(empty), "--best", "2", "--output", str(out)]) == 1
    assert "holds no step_N.pt" in capsys.readouterr().err
    run = _run_folder(tmp_path, toy_checkpoint, RECORDS, kept=(100,), summary_metric=None)
    assert main(["--run", str(run), "--best", "2", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give --metric bleu|chrf|loss" in err
    (run / "summary.json").write_text(json.dumps({"metric": "accuracy"}))   # not one of ours
    assert main(["--run", str(run), "--best", "2", "--output", str(out)]) == 1
    assert "give --metric bleu|chrf|loss" in capsys.readouterr().err
    (run / "metrics.jsonl").write_text("not json\n")
    assert main(["--run", str(run), "--best", "2", "--metric", "bleu", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none of the step_N.pt" in err and "has a validation record" in err
    assert not out.exists()
    # an output that cannot be written is refused before the run is read
    assert main(["--run", str(tmp_path / "nowhere"), "--best", "2", "--output", str(tmp_path / "no" / "a.pt")]) == 1
    assert capsys.readouterr().err == f"nmt: error: --output {tmp_path}/no/a.pt: folder {tmp_path}/no does not exist; create it first\n"


def test_run_skips_a_cut_last_line(tmp_path, toy_checkpoint):
    # a kill can cut metrics.jsonl's last write; the whole records still count
    run = _run_folder(tmp_path, toy_checkpoint, RECORDS[:2], kept=(100, 200))
    with open(run / "metrics.jsonl", "a") as file:
        file.write('{"step": 300, "bl')
    out = tmp_path / "avg.pt"
    assert main(["--run", str(run), "--best", "1", "--output", str(out)]) == 0
    assert _weights(out) == {2.0}


def test_run_takes_only_the_runs_own_step_checkpoints(tmp_path, toy_checkpoint, capsys):
    """A weights-only file (an average) and a step file whose progress is another
    step, placed in checkpoints/ as step_N.pt, are not the run's step checkpoints."""
    run = _run_folder(tmp_path, toy_checkpoint, RECORDS, kept=(300, 400, 500))
    assert main(["--run", str(run), "--last", "2", "--output", str(tmp_path / "avg.pt")]) == 0   # (4 + 5) / 2
    (tmp_path / "avg.pt").rename(run / "checkpoints" / "step_900.pt")
    _variant(tmp_path, toy_checkpoint, "copy.pt", fill=7.0).rename(run / "checkpoints" / "step_700.pt")  # says 60
    capsys.readouterr()
    assert main(["--run", str(run), "--last", "2", "--output", str(tmp_path / "again.pt")]) == 0
    assert _weights(tmp_path / "again.pt") == {4.5}          # 400 and 500, as before: (4 + 5) / 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("is not a step checkpoint written by training" in line for line in err)
    assert "step_700.pt" in err[0] and "step_900.pt" in err[1]


def test_a_flipped_byte_in_a_weight_is_refused_naming_it(tmp_path, toy_checkpoint, capsys):
    import zipfile

    damaged = tmp_path / "damaged.pt"
    damaged.write_bytes(toy_checkpoint.read_bytes())
    with zipfile.ZipFile(damaged) as archive:          # the largest tensor record, and where its bytes start
        record = max((i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    flip_a_bit_of_record(damaged, record)               # one bit of one float
    state = torch.load(toy_checkpoint, weights_only=True)["model"]
    largest = max((n for n, t in state.items()), key=lambda n: state[n].untyped_storage().nbytes())
    assert main([str(toy_checkpoint), str(damaged), "--output", str(tmp_path / "avg.pt")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fail their CRC-32 check" in err and not (tmp_path / "avg.pt").exists()
    names = [n for n, t in state.items() if t.untyped_storage().nbytes() == state[largest].untyped_storage().nbytes()]
    assert any(f"weight {n} is damaged" in err for n in names)
