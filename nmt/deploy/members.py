"""An exported folder read member by member, each checked before it is opened.

CTranslate2 opens `config.json`, `model.bin` and the vocabularies itself, by
name: a FIFO there blocks it for ever, a name that is not UTF-8 is a
TypeError, a shortened vocabulary is "Invalid token ID 11" in the middle of
a translation. So `read_export` reads every member nmt or CTranslate2 needs,
and the engine hands CTranslate2 the bytes (`files=`), never a path:

    each member     a regular file (a FIFO, a device, a socket or a link
                    loop is refused before it is opened; opened without
                    blocking and checked again on the open file), at most
                    its size limit
    vocabularies    a JSON list (or lines) of text, one entry per id of the
                    sentencepiece model beside it, equal to its pieces:
                    every id the model can output has its token, and the
                    specials (<pad>, <s>, </s>, <unk>) are where nmt puts them
    config.json     a JSON object whose special tokens are in the vocabulary

Every refusal is one NmtError line naming the file.
"""

import json
import os
from pathlib import Path

from nmt.deploy import layout
from nmt.deploy.regular_files import AGAIN, SMALL, read_member
from nmt.deploy.regular_files import refuse as _refuse
from nmt.base.errors import NmtError

LIMITS = {layout.MODEL_FILE: 64 << 30}      # bytes; every other member: SMALL
CT2_FILES = ("config.json", layout.MODEL_FILE)
VOCABULARIES = {"shared": ("src", "tgt"), "source": ("src",), "target": ("tgt",)}


def read_export(folder: Path) -> dict[str, bytes]:
    """{name: bytes} of every member of an export that is there, each checked (read_member)."""
    found = {}
    for name in sorted(layout.EXPORT_FILES):
        path = folder / name
        if os.path.lexists(path):
            found[name] = read_member(path, LIMITS.get(name, SMALL))
    missing = [name for name in (layout.METADATA, *CT2_FILES, layout.SOURCE_SPM, layout.TARGET_SPM)
               if name not in found]
    if missing:
        raise NmtError(f"{folder} is not a model exported by nmt.export (no {missing[0]}); {AGAIN}")
    return found


def _entries(name: str, data: bytes, path) -> list:
    try:
        text = data.decode("utf-8")
        entries = json.loads(text) if name.endswith(".json") else text.splitlines()
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise _refuse(path, f"is not a vocabulary ({type(error).__name__})") from None
    if not isinstance(entries, list) or not all(isinstance(entry, str) for entry in entries):
        raise _refuse(path, "is not a vocabulary (a list of tokens)")
    return entries


def check_vocabularies(folder: Path, files: dict, pieces: dict[str, list[str]], specials: dict[str, str]) -> None:
    """Each vocabulary CTranslate2 reads equals the pieces of the
    sentencepiece models beside it (`pieces`: {"src": [...], "tgt": [...]});
    `specials`: {what: piece} that must be in it ("<pad>": "<pad>", ...)."""
    held = [(name, sides) for side, sides in VOCABULARIES.items() for ext in ("json", "txt")
            if (name := f"{side}_vocabulary.{ext}") in files]
    if not held:
        raise NmtError(f"{folder} holds no vocabulary (shared_vocabulary.json); {AGAIN}")
    for name, sides in held:
        entries = _entries(name, files[name], folder / name)
        for side in sides:
            expected = pieces[side]
            absent = [shown for shown, piece in specials.items() if piece not in entries]
            if absent:
                raise _refuse(folder / name, f"has no {absent[0]} token")
            if len(entries) != len(expected):
                raise _refuse(folder / name, f"has {len(entries)} tokens where the sentencepiece model "
                                             f"{'source.spm' if side == 'src' else 'target.spm'} has "
                                             f"{len(expected)}: ids {min(len(entries), len(expected))} and "
                                             "up would have no token")
            wrong = next((i for i, (a, b) in enumerate(zip(entries, expected)) if a != b), None)
            if wrong is not None:
                raise _refuse(folder / name, f"has {entries[wrong]!r} at id {wrong} where the sentencepiece model "
                                             f"has {expected[wrong]!r}")


def check_config(folder: Path, files: dict) -> None:
    """CTranslate2's config.json: a JSON object of its settings."""
    try:
        config = json.loads(files["config.json"].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise _refuse(folder / "config.json", f"is not JSON ({type(error).__name__})") from None
    if not isinstance(config, dict) or not all(isinstance(v, (str, int, float, bool, type(None), list))
                                               for v in config.values()):
        raise _refuse(folder / "config.json", "is not CTranslate2's settings (a JSON object of values)")
