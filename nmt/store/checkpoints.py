"""Checkpoints: written atomically, read as untrusted input.

A checkpoint is a dict of tensors, numbers, strings and bytes only, so it
loads with `torch.load(weights_only=True)`: a pickle that tries to run code
is refused before anything runs. Its config names each part by nmt's
registry name, never a class (nmt.config_schema.registry), and is data
too: `load_checkpoint`,
the one function every command and the API open a checkpoint with, checks it
against nmt's schema before anything is built (nmt.store.stored_config): no
interpolation, only the classes of nmt's config groups, no unknown key.
"""

import hashlib
import io
import math
import warnings
import zipfile
from pathlib import Path

import torch

from nmt.base import own_files
from nmt.base.atomic import atomic_link, atomic_write
from nmt.config_schema.registry import class_of, registry_targets, stored_names
from nmt.base.errors import NmtError, ResumeRefusal
from nmt.base.file_inputs import refuse_special, special_kind
from nmt.base.cli_checks import refuse_link_loop
from nmt.base.path_names import check_name_length
from nmt.store.load_errors import load_failure, utf8_name
from nmt.store.integrity import check_part_bytes, check_stored_bytes, check_tensor_sizes, holds_tensors
from nmt.store.state_checks import check_state
from nmt.store.stored_config import check_stored_config

FORMAT_VERSION = 3          # 3: the config names each part by its registry name, not its class
READS_VERSIONS = (1, 2, 3)  # 2: a bidirectional RNN encoder's hidden_size is its state size
#                             (version 1 is read by doubling that size, per direction in 1)
REQUIRED_KEYS = ("format_version", "config", "tokenizer", "model")
RESUME_KEYS = ("optimizer", "schedule", "progress", "rng")    # what a run continues from, beside the weights
TRAINING_ADVICE = "free disk space or choose another output folder (hydra.run.dir=...); the previous checkpoint is kept"


def save_checkpoint(state: dict, path: Path, advice: str = TRAINING_ADVICE, also=(),
                    purpose: str | None = None) -> Path:
    """Write `state` to `path` through a temporary file and an atomic rename,
    and the same bytes to each path of `also` (serialised once, written once:
    the others are hard links to it, each put in place by a rename).

    A kill during the write leaves the previous file at each path intact; a full
    disk or unwritable folder raises NmtError and also leaves it intact
    (`advice` ends its message: what the user of this command can do).
    `purpose`: the file gets nmt's mark for it (nmt.base.own_files), as a user's output does.
    """
    path = Path(path)
    state = dict(state, format_version=FORMAT_VERSION)
    if isinstance(state.get("config"), dict):
        state["config"] = stored_names(state["config"])     # parts by registry name: no class path
    written = path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        torch.save(state, buffer)          # serialise first: write errors are then OSErrors
        marked = own_files.mark(purpose, buffer.getbuffer()) if purpose else None
        atomic_write(path, buffer.getbuffer(), durable=True, xattr=marked)
        if marked:
            own_files.keep_mark(path, marked)    # no extended attributes here: the folder's manifest
        for written in map(Path, also):
            atomic_link(path, written, buffer.getbuffer(), durable=True)
    except OSError as error:
        raise NmtError(f"cannot write checkpoint {written}: {error.strerror or error}; {advice}") from None
    return path


def load_checkpoint(path, map_location="cpu", mmap: bool = False, parts: tuple[str, ...] | None = None) -> dict:
    """Load and check a checkpoint; every problem is one NmtError line.
    `mmap` maps the tensors instead of reading them (a quick look at the rest).
    `parts` names the tensor parts the caller uses (e.g. ("model",)): the file
    is mapped, only those parts' bytes are read and CRC-checked, and the other
    parts that hold tensors (the optimiser's state, the RNG) are left out."""
    path = Path(path)
    check_name_length(path, "checkpoint")
    if not path.exists():
        refuse_link_loop(path, "checkpoint")
        raise NmtError(f"checkpoint {path} does not exist")
    if path.is_dir():
        raise NmtError(f"checkpoint {path} is a directory; give the .pt file inside it")
    refuse_special(path, "checkpoint", "give the .pt file written by nmt.train")
    try:
        with warnings.catch_warnings():     # torch's pickle-protocol warnings: the line below says it all
            warnings.simplefilter("ignore")
            mapped = (mmap or parts is not None) and zipfile.is_zipfile(path)   # torch maps only its zip format
            if utf8_name(path):
                state = torch.load(path, map_location=map_location, weights_only=True, mmap=mapped)
            else:                            # torch takes only UTF-8 names: read through an open file
                with open(path, "rb") as file:
                    state = torch.load(file, map_location=map_location, weights_only=True)
    except Exception as error:  # noqa: BLE001 - any failure: the file's bytes say which kind
        raise load_failure(path, error, other_checkpoint_advice(path)) from None
    if not isinstance(state, dict) or any(k not in state for k in REQUIRED_KEYS):
        raise NmtError(f"checkpoint {path} is not an nmt checkpoint (missing model, config or tokenizer)")
    if state["tokenizer"] is None or isinstance(state["tokenizer"], (dict, bytes, str)) and not state["tokenizer"]:
        raise NmtError(f"checkpoint {path} holds no sentencepiece model; it cannot translate")
    check_state(state, path)                 # every field's type, every tensor's layout: before any use
    if state["format_version"] not in READS_VERSIONS:
        raise NmtError(f"checkpoint {path} has format version {state['format_version']}; "
                       f"this nmt reads versions {', '.join(map(str, READS_VERSIONS))}")
    # each part by its registry name (a class path of an older file mapped to its name), and its
    # class from the registry alone: nothing in the file names code
    config = state["config"] = registry_targets(stored_names(state["config"], path), path)
    check_stored_config(config, path)        # data, not code: before anything is built from it
    if parts is None:
        check_stored_bytes(path, state, other_checkpoint_advice(path))    # torch.load does not check the CRCs
    else:
        state = {key: value for key, value in state.items()
                 if key in parts or key in REQUIRED_KEYS or not holds_tensors(value)}
        check_part_bytes(path, state, parts, other_checkpoint_advice(path))
    check_tensor_sizes(state, path, other_checkpoint_advice(path))    # before any operation allocates
    check_finite(state["model"], path)
    if state["format_version"] == 1 and isinstance(config.get("model"), dict):
        state["config"] = dict(config, model=sizes_from_format_1(config["model"]))
    return state


def sizes_from_format_1(model_config: dict) -> dict:
    """A checkpoint of format 1 gave a bidirectional RNN encoder's hidden_size
    per direction; from format 2 it is the state size. Returns the model
    config with that size doubled, so the old weights fit (a plain dict)."""
    encoder = dict(model_config.get("encoder") or {})
    rnn_encoder = class_of("model/encoder", "gru")       # its class: the registry's, as the config's is
    if encoder.get("_target_") == rnn_encoder and encoder.get("bidirectional", True):
        encoder["hidden_size"] = 2 * int(encoder.get("hidden_size", 256))
    return dict(model_config, encoder=encoder)


def other_checkpoints(path) -> list[Path]:
    """The checkpoints beside `path` that could stand in for it: best.pt,
    last.pt, averaged.pt and the step_N.pt (newest first), those that exist."""
    path = Path(path)
    folder = path.parent
    names = [folder / "best.pt", folder / "last.pt", *reversed(step_checkpoints(folder)),
             folder / "averaged.pt", folder / "averaged_best.pt"]
    found = []
    for other in names:
        if other.name != path.name and other.is_file() and special_kind(other) is None \
                and other not in found:
            found.append(other)
    return found


def other_checkpoint_advice(path) -> str:
    """What to use instead of a damaged checkpoint: the others that exist beside it."""
    others = other_checkpoints(path)
    if not others:
        return "no other checkpoint is beside it; use a copy or train again"
    return "use another checkpoint of the run: " + ", ".join(str(p) for p in others[:3])


def check_finite(weights: dict, path) -> None:
    """Every floating-point weight is a finite number: NaN or infinity would
    translate to empty lines or unknown tokens without a word."""
    if not isinstance(weights, dict):
        return                              # not a state dict: building the model says so
    for name, tensor in weights.items():
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and \
                not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            what = "NaN" if bool(tensor.isnan().any()) else "infinity"
            raise NmtError(f"checkpoint {path}: weight {name} holds {what} ({bad} of {tensor.numel()} "
                           f"values are not finite numbers); "
                           f"{other_checkpoint_advice(path)}")


# data keys that change how the sentences are batched, not which sentences or vocabulary
BATCHING_KEYS = ("batch_tokens", "buffer_pairs", "pad_to_multiple")


def data_fingerprint(data_cfg, tokenizer_protos: dict) -> dict:
    """What a model was trained on: the data settings (corpus, languages, files,
    length limit, vocabulary settings; not the batch size) and a SHA-256 of
    its sentencepiece models. Stored in every checkpoint as "fingerprint"."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(data_cfg, DictConfig):
        data_cfg = OmegaConf.to_container(data_cfg, resolve=True, throw_on_missing=False)
    settings = {str(k): v for k, v in sorted(dict(data_cfg or {}).items()) if k not in BATCHING_KEYS}
    digest = hashlib.sha256()
    for side in sorted(tokenizer_protos or {}):
        digest.update(side.encode() + b"\0" + bytes(tokenizer_protos[side]) + b"\0")
    return {"data": settings, "tokenizer": digest.hexdigest()}


def checkpoint_fingerprint(state: dict) -> dict:
    """The checkpoint's fingerprint; for one written before fingerprints, worked
    out from its config and tokenizer (the same thing)."""
    stored = state.get("fingerprint")
    if isinstance(stored, dict) and "data" in stored and "tokenizer" in stored:
        return stored
    return data_fingerprint((state.get("config") or {}).get("data", {}), state.get("tokenizer", {}))


def _settings_text(settings: dict, keys) -> str:
    return ", ".join(f"data.{key}={settings.get(key, 'unset')}" for key in keys)


def check_fingerprint(state: dict, current: dict, path, force: bool = False) -> None:
    """Refuse to resume from a checkpoint trained on other data or another
    vocabulary, in one line naming both; `force` (trainer.resume_force=true)
    lets it through."""
    saved = checkpoint_fingerprint(state)
    keys = sorted(k for k in set(saved["data"]) | set(current["data"])
                  if saved["data"].get(k, "unset") != current["data"].get(k, "unset"))
    same_tokenizer = saved["tokenizer"] == current["tokenizer"]
    if force or (not keys and same_tokenizer):
        return
    ours = f"tokenizer {saved['tokenizer'][:12]}"
    theirs = f"tokenizer {current['tokenizer'][:12]}"
    if keys:                             # four settings say it; the rest are counted, not listed
        more = f", {len(keys) - 4} other data settings" if len(keys) > 4 else ""
        ours = f"{_settings_text(saved['data'], keys[:4])}{more}, {ours}"
        theirs = f"{_settings_text(current['data'], keys[:4])}{more}, {theirs}"
    detail = f"it was trained on other data or another vocabulary (checkpoint: {ours}; this config: {theirs})"
    raise ResumeRefusal(f"cannot resume from {path}: {detail}; resume with the checkpoint's data settings, "
                        "or set trainer.resume_force=true to continue anyway", detail, forcible=True)


def step_of(path: Path) -> int:
    """The update number of a step_N.pt file."""
    return int(Path(path).stem.split("_")[1])


def step_checkpoints(folder: Path) -> list[Path]:
    """The step_N.pt files of a checkpoint folder, oldest first (other files,
    such as a user's step_3000_copy.pt, are left alone)."""
    found = [p for p in Path(folder).glob("step_*.pt") if p.stem[len("step_"):].isdigit()]
    return sorted(found, key=step_of)


def best_steps(step_scores: dict[int, float], n: int) -> list[int]:
    """The `n` validated steps of highest score (NaN counts as worst; of equal
    scores the later step wins), in step order."""
    if n <= 0:
        return []
    rank = lambda step: (-math.inf if math.isnan(step_scores[step]) else step_scores[step], step)  # noqa: E731
    return sorted(sorted(step_scores, key=rank, reverse=True)[:n])


def prune_step_checkpoints(folder: Path, keep: int, also_keep: list[int] = ()) -> None:
    """Keep only the `keep` newest step_*.pt files, and those of the steps in `also_keep`."""
    steps = step_checkpoints(folder)
    for old in steps[:-keep] if keep > 0 else steps:
        if step_of(old) not in set(also_keep):
            old.unlink(missing_ok=True)


def check_same_vocabulary(first, first_protos: dict, other, other_protos: dict, needed_by: str) -> None:
    """One NmtError line when two checkpoints' sentencepiece models differ.

    `first`/`other` name the checkpoints, `*_protos` are their
    `Tokenizer.to_bytes()`; `needed_by` says what needs one vocabulary
    ("an ensemble", "averaging"). Equal protos mean equal subword ids.
    """
    sides = [name for side, name in (("src", "source"), ("tgt", "target"))
             if first_protos.get(side) != other_protos.get(side)]
    if sides:
        raise NmtError(f"checkpoints {first} and {other} use different vocabularies (their "
                       f"{' and '.join(sides)} sentencepiece models differ); {needed_by} needs models "
                       "trained with the same sentencepiece model")
