"""A Hugging Face model folder checked member by member before transformers opens it.

transformers opens whatever a folder holds by name: a FIFO as
`tokenizer_config.json` is read as empty (a different tokenisation, exit 0),
a FIFO as `config.json` blocks for ever, a cut-short `model.safetensors` is
a SafetensorError, and `d_model: 1000000000` allocates before anything
fails. So `check_folder`, before transformers reads a byte:

    every entry     a regular file or a folder: a FIFO, a device, a socket,
                    a link loop or a dangling link is refused by name
    sizes           JSON and tokenizer files at most SMALL bytes
    config.json     a JSON object
    weights         model.safetensors: its header read and every tensor's
                    bytes inside the file (a file cut short is named);
                    pytorch_model.bin alone is left to torch.load(weights_only=True),
                    whose refusal is caught (nmt.hf.loading)
    size            the parameters config.json describes (at least its
                    embedding and feed-forward blocks) fit in the bytes the
                    weights file holds: nothing is allocated for a huge d_model
"""

import errno
import json
import os
import stat
import struct
from pathlib import Path

from nmt.base.errors import NmtError
from nmt.base.file_inputs import KINDS

SMALL = 64 << 20
WEIGHTS = ("model.safetensors", "pytorch_model.bin")
MAX_LAYERS = 1024        # a layer count past this is no translation model's (building it would not end)
LAYER_KEYS = ("encoder_layers", "decoder_layers", "num_layers", "num_decoder_layers", "num_hidden_layers")


def _refuse(name: str, path, problem: str) -> NmtError:
    return NmtError(f"--hf {name}: {path} {problem}; give a folder written by save_pretrained")


def _entry_problem(path: Path) -> str | None:
    """What is wrong with one entry of the folder (os.stat never blocks), else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "is a symbolic link loop (it leads back to itself)"
        if error.errno == errno.ENOENT:
            return "is a link to nothing (a dangling link)"
        return f"cannot be read ({error.strerror or error})"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return f"is {next((n for test, n in KINDS if test(mode)), 'not a regular file')}, not a regular file"


def _safetensors_problem(path: Path) -> str | None:
    """Why a .safetensors file cannot hold what its header says, else None."""
    size = os.stat(path).st_size
    with open(path, "rb") as file:
        head = file.read(8)
        if len(head) < 8:
            return f"is {size} bytes, too short for a safetensors header"
        length = struct.unpack("<Q", head)[0]
        if length > min(size - 8, 100 << 20):
            return f"claims a header of {length} bytes but holds {size} bytes: it is truncated or not safetensors"
        try:
            header = json.loads(file.read(length).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            return "has a header that is not JSON: it is damaged or not safetensors"
    if not isinstance(header, dict):
        return "has a header that is not a JSON object: it is damaged or not safetensors"
    data = size - 8 - length
    for name, info in header.items():
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if name == "__metadata__":
            continue
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            return f"has no byte range for tensor {name[:80]}: it is damaged"
        if not 0 <= offsets[0] <= offsets[1] <= data:
            return (f"is truncated: tensor {name[:80]} ends at byte {offsets[1]} of its data, past the "
                    f"{data} bytes the file holds")
    return None


def _config(name: str, folder: Path) -> dict:
    path = folder / "config.json"
    if os.stat(path).st_size > SMALL:
        raise _refuse(name, path, f"is over {SMALL} bytes")
    try:
        config = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise _refuse(name, path, f"is not JSON ({type(error).__name__})") from None
    if not isinstance(config, dict):
        raise _refuse(name, path, "is not a JSON object")
    for key in LAYER_KEYS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_LAYERS:
            raise _refuse(name, path, f"sets {key}={value}, outside [0, {MAX_LAYERS}]")
    return config


def check_folder(name: str, folder: Path) -> None:
    """NmtError (one line naming the member) for a folder transformers must not open."""
    for entry in sorted(folder.iterdir()):
        problem = _entry_problem(entry)
        if problem is not None:
            raise _refuse(name, entry, problem)
        if entry.suffix in (".json", ".spm", ".model", ".txt") and entry.is_file() and \
                os.stat(entry).st_size > SMALL:
            raise _refuse(name, entry, f"is over {SMALL} bytes, more than any tokenizer or config file")
    check_size(name, folder, _config(name, folder))
    weights = folder / "model.safetensors"
    if weights.is_file():
        problem = _safetensors_problem(weights)
        if problem is not None:
            raise _refuse(name, weights, problem)


def _whole(config: dict, *keys) -> int:
    """The first of `keys` that config.json sets to a whole number (0 when none)."""
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def lower_bound_parameters(config: dict) -> int:
    """Parameters any model of this config.json holds at least: the token
    embedding (vocab_size x d_model) and each layer's feed-forward block
    (2 x d_model x ffn_dim). Worked out from the numbers: building the model
    to count them would allocate what they describe (Marian's sinusoidal
    table is filled on the CPU)."""
    width = _whole(config, "d_model", "hidden_size", "n_embd")
    total = _whole(config, "vocab_size") * width
    for layers, ffn in (("encoder_layers", "encoder_ffn_dim"), ("decoder_layers", "decoder_ffn_dim")):
        total += _whole(config, layers) * 2 * width * _whole(config, ffn, "d_ff", "intermediate_size")
    return total


def check_size(name: str, folder: Path, config: dict | None = None) -> None:
    """The parameters config.json describes fit in the weights file beside it
    (at least 1 byte each, 8-bit, with room for what is not stored)."""
    held = next((folder / w for w in WEIGHTS if (folder / w).is_file()), None)
    if held is None:
        return                           # sharded weights: transformers checks each shard's names
    config = _config(name, folder) if config is None else config
    parameters = lower_bound_parameters(config)
    size = os.stat(held).st_size
    if parameters > 2 * size + (1 << 20):
        raise _refuse(name, folder / "config.json", f"describes a model of at least {parameters} parameters, "
                      f"more than the {size} bytes of {held.name} can hold; it does not belong to these weights")
