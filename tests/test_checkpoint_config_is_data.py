"""A checkpoint's config is data, never code (issue 46, item 1).

Each payload below, stored in a checkpoint's config, once created or wrote a
file (or ran a pickle through torch.load) while the model was built. Every
route that opens a checkpoint (translate, an ensemble, explore and its
--compare, export, average, resume and weights-only starts, the API) must
refuse it in one `nmt: error:` line before anything is built: no marker file."""

import pickle

import pytest
import torch

from nmt.base.errors import NmtError
from tests.helpers import run_cli

MARK = "MARKER"          # replaced by the test's own marker path


class Touch:
    """A pickle that creates a file when loaded (as torch.load(weights_only=False) would)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def open_call():
    return f"${{oc.create:{{_target_: builtins.open, _args_: ['{MARK}', 'w']}}}}"


def write_text(marker):
    return {"_target_": "pathlib.Path.write_text", "self": {"_target_": "pathlib.Path", "_args_": [marker]},
            "data": "written by a checkpoint"}


PAYLOADS = {
    # an extra key under model.encoder / model.bridge holding an interpolation that builds open()
    "interpolation-in-encoder": lambda c, m: c["model"]["encoder"].update(extra=open_call().replace(MARK, m)),
    "interpolation-in-bridge": lambda c, m: c["model"]["bridge"].update(extra=open_call().replace(MARK, m)),
    # ${payload}: a reference to a top-level node with its own _target_
    "reference-to-top-level-node": lambda c, m: (
        c.update(payload={"_target_": "builtins.open", "_args_": [m, "w"]}),
        c["model"]["encoder"].update(extra="${payload}")),
    # pathlib.Path.write_text as a nested _target_ in an argument, no interpolation at all
    "nested-write-text": lambda c, m: c["model"]["encoder"].update(extra=write_text(m)),
    # the same through an interpolation
    "interpolated-write-text": lambda c, m: c["model"]["encoder"].update(
        extra=f"${{oc.create:{{_target_: pathlib.Path.write_text, self: {{_target_: pathlib.Path, _args_: ['{m}']}}, "
              "data: x}}"),
    # chained: torch.load(weights_only=False) of a pickle that creates the marker
    "chained-torch-load": lambda c, m: c["model"]["bridge"].update(
        extra={"_target_": "torch.load", "f": m + ".pkl", "weights_only": False}),
    "interpolated-torch-load": lambda c, m: c["model"]["encoder"].update(
        extra=f"${{oc.create:{{_target_: torch.load, f: '{m}.pkl', weights_only: false}}}}"),
    # of our own: a part's class replaced by a callable, Hydra's other keys, a key interpolated,
    # an interpolation outside the model, a class of another group, an unknown plain key
    "callable-as-part": lambda c, m: c["model"].update(
        positional={"_target_": "builtins.open", "_args_": [m, "w"]}),
    "args-key-in-a-part": lambda c, m: c["model"]["bridge"].update(_args_=[m]),
    "interpolated-key": lambda c, m: c["model"]["encoder"].update({"${oc.create:{_target_: builtins.open}}": 1}),
    "interpolation-in-data": lambda c, m: c["data"].update(
        kind=f"${{oc.create:{{_target_: builtins.open, _args_: ['{m}', 'w']}}}}"),
    "another-groups-class": lambda c, m: c["model"]["bridge"].update(
        _target_="nmt.models.encoders.rnn.RNNEncoder"),
    "unknown-plain-key": lambda c, m: c["model"]["encoder"].update(evil_setting=3),
    # names (nmt.config_schema.registry): one that is no option, a class path as a name, a name its
    # settings contradict, and the older form (a class path) naming another group's class
    "unknown-name": lambda c, m: c["model"]["attention"].update(name="evil"),
    "class-path-as-name": lambda c, m: c["model"]["positional"].update(name="builtins.open"),
    "contradicted-name": lambda c, m: c["model"]["encoder"].update(name="lstm"),
    "old-form-another-groups-class": lambda c, m: (
        c["model"]["bridge"].pop("name"), c["model"]["bridge"].update(_target_="nmt.models.encoders.rnn.RNNEncoder")),
}


@pytest.fixture(scope="module")
def payload_checkpoints(toy_checkpoint, tmp_path_factory):
    """{payload name: (checkpoint path, marker path)}; the chained pickle is in place."""
    folder = tmp_path_factory.mktemp("payloads")
    found = {}
    for name, plant in PAYLOADS.items():
        state = torch.load(toy_checkpoint, weights_only=True)
        marker = folder / f"{name}.marker"
        plant(state["config"], str(marker))
        (folder / f"{name}.marker.pkl").write_bytes(pickle.dumps(Touch(str(marker))))
        path = folder / f"{name}.pt"
        torch.save(state, path)
        found[name] = (path, marker)
    return found


def refused(err: str, marker) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nmt: error: checkpoint ") and " was refused: " in lines[0], err
    assert not marker.exists()


@pytest.mark.parametrize("name", PAYLOADS)
def test_the_api_refuses_every_payload(payload_checkpoints, name):
    from nmt.translator import Translator

    path, marker = payload_checkpoints[name]
    with pytest.raises(NmtError) as error:
        Translator.from_checkpoint(path, device="cpu")
    refused(f"nmt: error: {error.value}", marker)


@pytest.mark.parametrize("name", PAYLOADS)
def test_every_command_refuses_every_payload(payload_checkpoints, toy_checkpoint, tmp_path, capsys, name):
    from nmt.commands.average import main as average
    from nmt.commands.explore import main as explore
    from nmt.commands.export import main as export
    from nmt.commands.translate import main as translate

    path, marker = payload_checkpoints[name]
    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    good = str(toy_checkpoint)
    routes = {
        "translate": lambda: translate(["--checkpoint", str(path), "--input", str(source)]),
        "ensemble": lambda: translate(["--checkpoint", good, str(path), "--input", str(source)]),
        "explore": lambda: explore(["--checkpoint", str(path), "--port", "65432"]),
        "explore --compare": lambda: explore(["--checkpoint", good, "--compare", str(path), "--port", "65432"]),
        "average": lambda: average([good, str(path), "--output", str(tmp_path / "avg.pt")]),
        "export": lambda: export(["--checkpoint", str(path), "--output", str(tmp_path / "ct2")]),
    }
    for route, run in routes.items():
        if route == "export":
            pytest.importorskip("ctranslate2")
        assert run() == 1, route
        refused(capsys.readouterr().err, marker)
    assert not (tmp_path / "avg.pt").exists() and not (tmp_path / "ct2").exists()


@pytest.mark.parametrize("name", ["interpolation-in-encoder", "reference-to-top-level-node", "nested-write-text",
                                  "chained-torch-load"])
@pytest.mark.parametrize("start", ["trainer.resume", "trainer.resume_weights_only=true"])
def test_training_refuses_to_resume_or_start_from_a_payload(payload_checkpoints, tmp_path, cache_dir, name, start):
    path, marker = payload_checkpoints[name]
    weights_only = ["trainer.resume_weights_only=true"] if start.endswith("=true") else []
    done = run_cli("nmt.train", "data=toy", "model/encoder=gru", "model/decoder=gru", "model.encoder.hidden_size=32",
                   "model.decoder.hidden_size=32", "model.encoder.embed_dim=16", "model.decoder.embed_dim=16",
                   "data.n_train=200", "data.vocab_size=60", f"cache_dir={cache_dir}", "trainer.max_steps=2",
                   f"trainer.resume={path}", *weights_only, f"hydra.run.dir={tmp_path / 'run'}")
    assert done.returncode == 1
    refused(done.stderr.decode(), marker)
