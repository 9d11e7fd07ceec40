"""Trained models shipped inside the package: a name gives a checkpoint file.

    python -m nmt.translate --model multi30k-de-en
    Translator.pretrained("multi30k-de-en")

Each model is a folder of this package holding `model.pt` (a checkpoint as
nmt.train writes it, its weights stored in half precision, its sentencepiece
models inside it) and `README.md`, its model card. The file is opened by
nmt.store.checkpoints.load_checkpoint like any other checkpoint: the same
untrusted-input checks, nothing trusted for being shipped. Half-precision
weights are copied into the float32 model a checkpoint's config builds, so a
translation runs in float32 (benchmarks/pretrained.md measures what the
rounding changes).
"""

from pathlib import Path

from nmt.base.errors import NmtError

FOLDER = Path(__file__).resolve().parent
# name -> what it is (shown by an unknown name's error and the --model help)
MODELS = {
    "multi30k-de-en": "German to English image captions: a GRU with Luong general attention, "
                      "trained on Multi30k task 1 (test_2016_flickr BLEU 36.0 greedy)",
}
CHECKPOINT = "model.pt"


def names() -> list[str]:
    """The names of the shipped models, sorted."""
    return sorted(MODELS)


def model_card(name: str) -> Path:
    """The model card (README.md) of a shipped model."""
    return model_folder(name) / "README.md"


def model_folder(name: str) -> Path:
    """The folder of a shipped model; NmtError (one line listing the names) for any other name."""
    if not isinstance(name, str) or name not in MODELS:
        shown = f"{name!r:.60}" if not isinstance(name, str) else repr(name[:60])
        raise NmtError(f"no pretrained model is named {shown}; the models shipped with nmt are: {', '.join(names())}")
    return FOLDER / name


def checkpoint_path(name: str) -> Path:
    """The checkpoint file of a shipped model; NmtError when the name is unknown or the
    installation lacks the file (package data left out of the install)."""
    path = model_folder(name) / CHECKPOINT
    if not path.is_file():
        raise NmtError(f"the pretrained model {name} is not installed ({path} is missing); reinstall nmt "
                       "from a wheel or a checkout that holds nmt/pretrained/")
    return path
