"""A translator reads what it uses of a checkpoint, fast and checked.

- Its model is built without nn.init's random draws and then loaded: the same
  weights and the same outputs as the model training built, for every option
  of every model part (and the settings that add parameters).
- Translating an RNN checkpoint never imports torch._dynamo (1-2 s); the
  RNN decoder's teacher-forced loop is left eager only when a model is compiled.
- `load_checkpoint(parts=("model",))` leaves the optimiser's state and the RNG
  out, reads the weights the full load reads, and still refuses a flipped
  bit in a weight, naming it; a flipped bit in the optimiser's state does not
  stop a translation, and a resume (the full load) still refuses it.
"""

import os
import subprocess
import sys
import zipfile

import pytest
import torch
from hydra.errors import ConfigCompositionException

from nmt.base.config_files import CONFIGS
from nmt.data.batching import make_batch
from nmt.base.errors import NmtError
from nmt.models.build import build_model
from nmt.store.checkpoints import load_checkpoint
from nmt.store.integrity import _storage_crc
from nmt.translator import RandomInitSkipped, Translator
from tests.helpers import flip_a_bit_of_record, make_config

TRANSFORMER_SIZE = [f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
                    for key, value in (("d_model", 16), ("layers", 1), ("heads", 2), ("ff_size", 32))]
BASES = (
    ["model/encoder=gru", "model/decoder=gru", "model/attention=bahdanau"],
    ["model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero"] + TRANSFORMER_SIZE,
)
SETTINGS = ["model.attention.scope=local_p", "model.attention.scope=local_m", "model.attention.scope=hard",
            "model.attention.normaliser=sparsemax", "model/attention=coverage"]
OPTIONS = [f"model/{group.name}={option.stem}" for group in sorted((CONFIGS / "model").iterdir())
           for option in sorted(group.glob("*.yaml"))] + SETTINGS
EXAMPLES = [([5, 6, 7, 8, 9], [10, 11]), ([12, 13], [14, 15, 16, 17, 18, 19])]


@pytest.mark.parametrize("option", OPTIONS)
def test_a_model_built_without_draws_then_loaded_is_the_trained_model(option):
    built = 0
    batch = make_batch(EXAMPLES)
    for base in BASES:
        try:
            config = make_config(*base, option).model
            torch.manual_seed(0)
            trained = build_model(config, 30, 30).eval()
        except (ConfigCompositionException, NmtError):   # the base's sizes do not fit, or nmt refuses the pair
            continue
        with RandomInitSkipped():
            loaded = build_model(config, 30, 30)
        loaded.load_state_dict(trained.state_dict())
        loaded.eval()
        for name, tensor in trained.state_dict().items():
            assert torch.equal(loaded.state_dict()[name], tensor), name
        with torch.no_grad():
            expected, _ = trained(batch.src, batch.tgt[:, :-1])
            got, _ = loaded(batch.src, batch.tgt[:, :-1])
        assert torch.equal(got.logits, expected.logits)
        built += 1
    assert built, f"{option} built on no base"


def test_the_draws_are_skipped_and_nothing_else():
    with RandomInitSkipped():
        skipped = torch.full((3,), 7.0)
        torch.nn.init.kaiming_uniform_(skipped.view(3, 1))
        torch.nn.init.normal_(skipped)
        skipped.uniform_()
        filled = torch.nn.init.zeros_(torch.ones(2))
    assert skipped.tolist() == [7.0, 7.0, 7.0] and filled.tolist() == [0.0, 0.0]
    drawn = torch.full((3,), 7.0).uniform_()
    assert drawn.tolist() != [7.0, 7.0, 7.0]


def _record_of(path, tensor) -> zipfile.ZipInfo:
    """The archive's record that stores `tensor` (its size and CRC-32)."""
    storage = tensor.untyped_storage()
    with zipfile.ZipFile(path) as archive:
        return next(info for info in archive.infolist() if "/data/" in info.filename
                    and (info.file_size, info.CRC) == (storage.nbytes(), _storage_crc(tensor)))


def test_only_the_model_is_read_and_it_is_the_full_loads(toy_checkpoint):
    full = load_checkpoint(toy_checkpoint)
    model_only = load_checkpoint(toy_checkpoint, parts=("model",))
    assert "optimizer" in full and "rng" in full
    assert "optimizer" not in model_only and "rng" not in model_only
    assert model_only["config"] == full["config"] and model_only["tokenizer"] == full["tokenizer"]
    assert sorted(model_only["model"]) == sorted(full["model"])
    assert all(torch.equal(model_only["model"][n], t) for n, t in full["model"].items())


def test_a_flipped_bit_in_a_weight_is_still_refused_naming_it(tmp_path, toy_checkpoint):
    weights = load_checkpoint(toy_checkpoint)["model"]
    name = max(weights, key=lambda n: weights[n].untyped_storage().nbytes())
    damaged = tmp_path / "damaged.pt"
    damaged.write_bytes(toy_checkpoint.read_bytes())
    flip_a_bit_of_record(damaged, _record_of(toy_checkpoint, weights[name]))
    same_storage = [n for n, t in weights.items() if t.untyped_storage().nbytes() == weights[name].untyped_storage().nbytes()]
    with pytest.raises(NmtError, match="fail their CRC-32 check") as error:
        Translator.from_checkpoint(damaged, device="cpu")
    assert any(f"weight {n} is damaged" in str(error.value) for n in same_storage)


def test_a_flipped_bit_in_the_optimiser_stops_a_resume_not_a_translation(tmp_path, toy_checkpoint):
    state = load_checkpoint(toy_checkpoint)
    moments = [t for s in state["optimizer"]["state"].values() for k, t in s.items() if k == "exp_avg_sq"]
    weights = {(t.untyped_storage().nbytes(), _storage_crc(t)) for t in state["model"].values()}
    moment = next(t for t in moments if (t.untyped_storage().nbytes(), _storage_crc(t)) not in weights)
    damaged = tmp_path / "damaged.pt"
    damaged.write_bytes(toy_checkpoint.read_bytes())
    flip_a_bit_of_record(damaged, _record_of(toy_checkpoint, moment))
    expected = Translator.from_checkpoint(toy_checkpoint, device="cpu").translate(["a b c"])[0].text
    assert Translator.from_checkpoint(damaged, device="cpu").translate(["a b c"])[0].text == expected
    with pytest.raises(NmtError, match="fail their CRC-32 check"):
        load_checkpoint(damaged)


def test_translating_an_rnn_checkpoint_never_imports_dynamo(toy_checkpoint):
    """torch._dynamo takes 1-2 s to import; only torch.compile needs it (keep_loop_eager)."""
    assert "RNNDecoder" in load_checkpoint(toy_checkpoint)["config"]["model"]["decoder"]["_target_"]
    code = ("import sys; from nmt.translator import Translator; "
            f"t = Translator.from_checkpoint({str(toy_checkpoint)!r}, device='cpu'); t.translate(['a b c'], beam_size=2); "
            "print('torch._dynamo' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_teacher_forced_loop_is_kept_eager_once_before_compiling():
    from nmt.core.rnn_decoder import RNNDecoder
    from nmt.speedups.eager_loop import keep_loop_eager

    keep_loop_eager()
    disabled = RNNDecoder.forward
    keep_loop_eager()                                     # a second compile wraps nothing again
    assert RNNDecoder.forward is disabled and disabled.kept_eager
    assert getattr(disabled, "_torchdynamo_disable", False)     # what Dynamo reads to leave it eager
