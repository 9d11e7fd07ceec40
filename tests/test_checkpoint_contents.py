"""A checkpoint's contents are modelled completely (issue 58, item 2).

Each case below loads with torch.load(weights_only=True) and once gave a
traceback (NotImplementedError for a sparse weight, RuntimeError for a meta
one, RecursionError for a 400-deep list, MissingMandatoryValue for ???,
TypeError or sentencepiece's RuntimeError for a bad tokenizer) or translated
silently (a weight of integers or booleans). Every route that opens a
checkpoint refuses each in one `nmt: error:` line naming the file, and
writes nothing."""

import pytest
import torch

from nmt.base.errors import NmtError
from tests.helpers import run_cli


def _first_weight(state):
    return next(iter(state["model"]))


def _set_weight(convert):
    def plant(state):
        name = _first_weight(state)
        state["model"][name] = convert(state["model"][name])
    return plant


def _deep(state):
    value = 1
    for _ in range(400):
        value = [value]
    state["config"]["data"]["deep"] = value


CASES = {   # name: (change to a good checkpoint's state, what the line says)
    "sparse-weight": (_set_weight(lambda t: t.to_sparse()), "is a sparse_coo tensor, not a dense one"),
    "meta-weight": (_set_weight(lambda t: t.to("meta")), "is on the meta device"),
    "integer-weight": (_set_weight(lambda t: t.to(torch.int64)), "holds int64 values, not floating-point"),
    "boolean-weight": (_set_weight(lambda t: t > 0), "holds bool values, not floating-point"),
    "complex-moment": (lambda s: s["optimizer"]["state"][0].update(exp_avg=torch.zeros(2, dtype=torch.complex64)),
                       "optimizer.state.0.exp_avg holds complex64 values"),
    "deep-config": (_deep, "nests deeper than 32 levels"),
    "deep-samples": (lambda s: s.update(samples=[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]),
                     "nests deeper than 32 levels"),
    "missing-value": (lambda s: s["config"]["model"]["encoder"].update(hidden_size="???"),
                      "holds ??? (a value that was never set)"),
    "tokenizer-string": (lambda s: s.update(tokenizer="abc"), "tokenizer is a str, not a mapping"),
    "tokenizer-not-spm": (lambda s: s.update(tokenizer={"src": b"junk", "tgt": b"junk"}),
                          "tokenizer.src: the source sentencepiece model is damaged"),
    "samples-not-text": (lambda s: s.update(samples=[1, 2]), "samples is a list, not a list of text"),
    "model-a-list": (lambda s: s.update(model=[1]), "model is a list, not a mapping of weight names"),
    "format-a-string": (lambda s: s.update(format_version="2"), "format_version is a str, not a whole number"),
    "progress-step-text": (lambda s: s["progress"].update(step="60"), "progress is a dict, not a mapping of counters"),
}
ROUTES = ["translate", "ensemble", "ensemble-second", "explore", "explore --compare", "average", "export", "api"]


@pytest.fixture(scope="module")
def hostile(toy_checkpoint, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    found = {}
    for name, (plant, _) in CASES.items():
        state = torch.load(toy_checkpoint, weights_only=True)
        plant(state)
        torch.save(state, folder / f"{name}.pt")
        found[name] = folder / f"{name}.pt"
    return found


def one_line(err: str, path, says: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nmt: error: ") and "Traceback" not in err, err
    assert str(path) in lines[0] and says in lines[0], err


def _route(route, path, good, tmp_path):
    from nmt.commands.average import main as average
    from nmt.commands.explore import main as explore
    from nmt.commands.export import main as export
    from nmt.commands.translate import main as translate
    from nmt.translator import Translator

    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    if route == "api":
        try:
            Translator.from_checkpoint(path, device="cpu")
        except NmtError as error:
            print(f"nmt: error: {error}", file=__import__("sys").stderr)
            return 1
        return 0
    return {
        "translate": lambda: translate(["--checkpoint", str(path), "--input", str(source)]),
        "ensemble": lambda: translate(["--checkpoint", str(path), good, "--input", str(source)]),
        "ensemble-second": lambda: translate(["--checkpoint", good, str(path), "--input", str(source)]),
        "explore": lambda: explore(["--checkpoint", str(path), "--port", "65432"]),
        "explore --compare": lambda: explore(["--checkpoint", good, "--compare", str(path), "--port", "65432"]),
        "average": lambda: average([good, str(path), "--output", str(tmp_path / "avg.pt")]),
        "export": lambda: export(["--checkpoint", str(path), "--output", str(tmp_path / "ct2")]),
    }[route]()


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", CASES)
def test_every_route_refuses_every_hostile_content_in_one_line(hostile, toy_checkpoint, tmp_path, capsys, case, route):
    if route == "export":
        pytest.importorskip("ctranslate2")
    assert _route(route, hostile[case], str(toy_checkpoint), tmp_path) == 1
    one_line(capsys.readouterr().err, hostile[case], CASES[case][1])
    assert not (tmp_path / "avg.pt").exists() and not (tmp_path / "ct2").exists()


def test_a_good_checkpoint_passes_every_check(toy_checkpoint):
    from nmt.store.checkpoints import load_checkpoint

    assert load_checkpoint(toy_checkpoint)["progress"]["step"] == 60
    assert load_checkpoint(toy_checkpoint, parts=("model",))["model"]


@pytest.mark.parametrize("start", ["resume", "weights-only"])
@pytest.mark.parametrize("case", CASES)
def test_training_refuses_to_resume_or_start_from_hostile_content(hostile, tmp_path, cache_dir, case, start):
    weights_only = ["trainer.resume_weights_only=true"] if start == "weights-only" else []
    done = run_cli("nmt.train", "data=toy", "model/encoder=gru", "model/decoder=gru", "model.encoder.hidden_size=32",
                   "model.decoder.hidden_size=32", "model.encoder.embed_dim=16", "model.decoder.embed_dim=16",
                   "data.n_train=200", "data.vocab_size=60", f"cache_dir={cache_dir}", "trainer.max_steps=2",
                   f"trainer.resume={hostile[case]}", *weights_only, f"hydra.run.dir={tmp_path / 'run'}")
    assert done.returncode == 1
    one_line(done.stderr.decode(), hostile[case], CASES[case][1])
    assert not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.parametrize("value, said", [(3, "an int"), (1.5, "a float"), ([], "a list"), (None, "None")])
def test_a_field_of_another_type_is_named_with_its_article(value, said):
    """'config is an int', never 'a int' (issue 58's message nits)."""
    from nmt.store.state_checks import check_state

    with pytest.raises(NmtError) as refused:
        check_state({"config": value}, "x.pt")
    assert f"checkpoint x.pt: config is {said}, not a mapping; " in str(refused.value)
