"""What an exported folder holds beside CTranslate2's own files.

    DIR/model.bin, config.json, *_vocabulary.json   CTranslate2 (ctranslate2.Translator(DIR))
    DIR/source.spm, DIR/target.spm                   sentencepiece models (the same bytes when joint)
    DIR/nmt_export.json                              what nmt's engine needs to translate as nmt does

nmt_export.json:

    format          1
    checkpoint      the checkpoint it was exported from (as given)
    quantization    the CTranslate2 weight type written (float32, int8, ...)
    max_src_len     longer sources are cut there, as nmt.translate cuts them
    max_tgt_len     a learned position table's size (outputs stop there), else null
    positions       rows of the position table CTranslate2 holds (sinusoidal,
                    learned, none), null where it needs none (relative, rotary)
    attention_layer the cross-attention layer the heatmaps show (0-based)
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

from nmt.deploy.regular_files import read_member
from nmt.base.errors import NmtError

FORMAT = 1
QUANTIZATIONS = ("float32", "int8", "int8_float32", "int16", "int8_float16", "int8_bfloat16",
                 "float16", "bfloat16")     # CTranslate2's weight types (ctranslate2.specs.model_spec)
METADATA = "nmt_export.json"
SOURCE_SPM = "source.spm"
TARGET_SPM = "target.spm"
MODEL_FILE = "model.bin"


# Every file an export holds: CTranslate2's (vocabularies as .json, or .txt from older
# versions) and nmt's. `--force` replaces a folder of these only.
NMT_FILES = frozenset({METADATA, SOURCE_SPM, TARGET_SPM})      # nmt's, beside CTranslate2's
EXPORT_FILES = frozenset({MODEL_FILE, "config.json", METADATA, SOURCE_SPM, TARGET_SPM} | {
    f"{side}_vocabulary.{ext}" for side in ("shared", "source", "target") for ext in ("json", "txt")})


def foreign_entries(folder) -> list[str]:
    """The names in `folder` that an export does not write (folders, links and
    other files), sorted; empty for an export or an empty folder."""
    folder = Path(folder)
    return sorted(entry.name for entry in folder.iterdir()
                  if entry.name not in EXPORT_FILES or entry.is_symlink() or not entry.is_file())


# What each field of nmt_export.json holds: (type, null allowed).
FIELDS = {"checkpoint": (str, False), "quantization": (str, False), "max_src_len": (int, False),
          "max_tgt_len": (int, True), "positions": (int, True), "attention_layer": (int, False)}


def is_export(path) -> bool:
    """True for a folder that holds an nmt export (its metadata file)."""
    return os.path.lexists(Path(path) / METADATA)    # a FIFO there is refused when it is read


def read_metadata(folder) -> dict:
    """The folder's nmt_export.json; NmtError when it is not an nmt export."""
    folder = Path(folder)
    if not folder.is_dir():
        raise NmtError(f"{folder}: no such folder; export a checkpoint with "
                       f"python -m nmt.export --checkpoint best.pt --output {folder}")
    missing = [name for name in (METADATA, MODEL_FILE, SOURCE_SPM, TARGET_SPM) if not os.path.lexists(folder / name)]
    if missing:
        raise NmtError(f"{folder} is not a model exported by nmt.export (no {missing[0]}); export one with "
                       f"python -m nmt.export --checkpoint best.pt --output DIR")
    try:
        metadata = json.loads(read_member(folder / METADATA).decode("utf-8"))   # a FIFO: refused, not opened
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise NmtError(f"{folder / METADATA} cannot be read ({error}); export the checkpoint again") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise NmtError(f"{folder / METADATA} is not format {FORMAT}; export the checkpoint again "
                       "with this version of nmt")
    for key, (kinds, null) in FIELDS.items():
        value = metadata.get(key)
        negative = isinstance(value, int) and value < 0 and key != "attention_layer"
        if (value is None and not null) or (value is not None and (
                isinstance(value, bool) or not isinstance(value, kinds) or negative)):
            raise NmtError(f"{folder / METADATA}: {key} is {json.dumps(value)}, not what nmt.export writes "
                           f"({'a whole number' if kinds is int else 'text'}{' or null' if null else ''}); "
                           "export the checkpoint again")
    return metadata


def write_folder(build, output: Path) -> None:
    """build(folder) fills a hidden folder beside `output`, which then takes
    its place (replacing an existing one): the folder is whole or absent."""
    output = Path(output).resolve()
    try:
        work = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    except OSError as error:
        raise NmtError(f"cannot write in {output.parent}: {error.strerror or error}") from None
    try:
        build(work / "model")
        if output.exists():
            output.rename(work / "old")           # removed with `work` below
        (work / "model").rename(output)
    except OSError as error:
        raise NmtError(f"cannot write {output}: {error.strerror or error}; nothing was written") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
