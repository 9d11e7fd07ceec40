"""Parallel corpora as lists of (source, target) strings: Multi30k (local
folder or Hugging Face hub), any line-aligned files, or the toy task.

    corpus = load_corpus({"kind": "multi30k", "path": "data/multi30k",
                          "src_lang": "de", "tgt_lang": "en"}, cache_dir="data")
    corpus.train[0]     # ("Zwei junge weiße Männer sind ...", "Two young, White males are ...")
"""

import logging
import os
import socket
import sys
import urllib.parse
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

from nmt.config_schema.data import check_kind, check_languages, check_test_pair, config_dict, need
from nmt.data.examples import Corpus
from nmt.data.readers import read_parallel
from nmt.data.toy import make_toy_corpus
from nmt.base.errors import NmtError

MULTI30K_FILES = {"train": "train", "valid": "val", "test": "test_2016_flickr"}   # task 1, 2016 test
DEFAULT_HUB_ID = "bentrevett/multi30k"
# Languages held by hub copies we know; any other id is checked once it is loaded.
# bentrevett/multi30k: flat "en"/"de" columns, splits train/validation/test (29000/1014/1000).
HUB_LANGUAGES = {"bentrevett/multi30k": ("de", "en")}
HUB_SPLITS = {"train": ("train",), "valid": ("validation", "valid", "val", "dev"), "test": ("test",)}
LOCAL_HINT = ("fetch Multi30k task 1 with `nmt-data multi30k data/multi30k` (--from DIR_OR_URL offline) "
              "and set data.path=data/multi30k")


# -- Multi30k ------------------------------------------------------------------
def _multi30k_file(folder: Path, base: str, lang: str) -> Path:
    for name in (f"{base}.{lang}", f"{base}.{lang}.gz"):
        if (folder / name).is_file():
            return folder / name
    raise NmtError(f"{folder} has no {base}.{lang} or {base}.{lang}.gz; data.path must be a Multi30k "
                   f"task-1 folder with {', '.join(MULTI30K_FILES.values())} files")


def _multi30k_local(folder: Path, src_lang: str, tgt_lang: str) -> Corpus:
    if not folder.is_dir():
        raise NmtError(f"data.path={folder} is not a folder; point it at the Multi30k task-1 files")
    splits = {split: read_parallel(_multi30k_file(folder, base, src_lang), _multi30k_file(folder, base, tgt_lang))
              for split, base in MULTI30K_FILES.items()}
    return Corpus(**splits, name=f"multi30k-{src_lang}-{tgt_lang}")


def _hub_resolves() -> bool:
    """Whether the hub's host name resolves (HF_ENDPOINT, default huggingface.co): a
    machine without a network answers at once, where the hub's client retries for ~20 s."""
    host = urllib.parse.urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname
    try:
        socket.getaddrinfo(host, 443)
    except (OSError, UnicodeError):
        return False
    return True


@contextmanager
def _hub_quiet():
    """The hub client's and datasets' warnings (a retry line a second, each twice) held
    back while a dataset loads: a failure is nmt's one line instead."""
    loggers = [logging.getLogger(name) for name in ("huggingface_hub", "datasets", "fsspec")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _load_hub_dataset(hub_id: str, cache_dir: Path | None):
    """A DatasetDict from the hub, or from a local folder of data files or a
    `save_to_disk` folder (how the tests exercise this path offline). Without a
    network (the hub's name does not resolve) only the local cache is read."""
    if "datasets" not in sys.modules and not _hub_resolves():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")          # read when the libraries load
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import datasets

    if (Path(hub_id) / "dataset_dict.json").is_file():
        return datasets.load_from_disk(hub_id)
    try:
        with _hub_quiet():
            return datasets.load_dataset(hub_id, cache_dir=str(cache_dir / "hub") if cache_dir else None)
    except ConnectionError:
        raise NmtError(f"cannot reach the Hugging Face hub for {hub_id!r} (offline?); use local files: "
                       f"{LOCAL_HINT}") from None
    except (datasets.exceptions.DatasetNotFoundError, FileNotFoundError, ValueError) as error:
        first = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise NmtError(f"cannot load data.hub_id={hub_id!r} ({first}); fix the id or "
                       f"{LOCAL_HINT}") from None


def _column(split, lang: str, hub_id: str) -> list[str]:
    if lang in split.column_names:
        return [str(text or "") for text in split[lang]]
    if "translation" in split.column_names:            # {"translation": {"de": ..., "en": ...}}
        rows = split["translation"]
        if len(rows) and lang in rows[0]:
            return [str(row[lang] or "") for row in rows]
    raise NmtError(f"data.hub_id={hub_id!r} has no {lang!r} text (columns {split.column_names}); "
                   f"choose other languages or {LOCAL_HINT}")


def _multi30k_hub(hub_id: str, src_lang: str, tgt_lang: str, cache_dir: Path | None) -> Corpus:
    known = HUB_LANGUAGES.get(hub_id)
    if known is not None and not {src_lang, tgt_lang} <= set(known):
        raise NmtError(f"data.hub_id={hub_id!r} holds only {'/'.join(known)}, not "
                       f"{src_lang}-{tgt_lang}; {LOCAL_HINT}")
    dataset = _load_hub_dataset(hub_id, cache_dir)
    splits = {}
    for split, names in HUB_SPLITS.items():
        name = next((n for n in names if n in dataset), None)
        if name is None:
            raise NmtError(f"data.hub_id={hub_id!r} has splits {sorted(dataset)}, none of {list(names)}")
        part = dataset[name]
        splits[split] = list(zip(_column(part, src_lang, hub_id), _column(part, tgt_lang, hub_id)))
    return Corpus(**splits, name=f"multi30k-{src_lang}-{tgt_lang}")


def load_multi30k(src_lang: str, tgt_lang: str, path=None, hub_id: str = DEFAULT_HUB_ID,
                  cache_dir=None) -> Corpus:
    """Multi30k task 1 in any direction among de, en, fr, cs.

    From `path`, a folder with train, val and test_2016_flickr files per
    language (`train.de`, `train.de.gz`, ...), or, when `path` is None, from
    the hub dataset `hub_id` (bentrevett/multi30k has de and en only).
    """
    check_languages(src_lang, tgt_lang)
    if path is not None:
        return _multi30k_local(Path(path).expanduser(), src_lang, tgt_lang)
    return _multi30k_hub(str(hub_id), src_lang, tgt_lang, Path(cache_dir) if cache_dir else None)


# -- any line-aligned files -------------------------------------------------------
def load_files(train_src, train_tgt, valid_src, valid_tgt, test_src=None, test_tgt=None) -> Corpus:
    """A corpus from line-aligned text files (plain or .gz); the test pair is optional."""
    check_test_pair(test_src, test_tgt)
    test = read_parallel(test_src, test_tgt) if test_src is not None else []
    return Corpus(train=read_parallel(train_src, train_tgt), valid=read_parallel(valid_src, valid_tgt),
                  test=test, name=f"files-{Path(train_src).name}")


# -- from the `data` config --------------------------------------------------------
def _multi30k_from_cfg(cfg: Mapping, cache_dir) -> Corpus:
    return load_multi30k(str(need(cfg, "src_lang")), str(need(cfg, "tgt_lang")), cfg.get("path"),
                         cfg.get("hub_id") or DEFAULT_HUB_ID, cache_dir)


def _files_from_cfg(cfg: Mapping, cache_dir) -> Corpus:
    return load_files(*(need(cfg, k) for k in ("train_src", "train_tgt", "valid_src", "valid_tgt")),
                      cfg.get("test_src"), cfg.get("test_tgt"))


def _toy_from_cfg(cfg: Mapping, cache_dir) -> Corpus:
    return make_toy_corpus(*(int(need(cfg, key)) for key in ("n_train", "n_valid", "n_test", "seed")))


LOADERS = {"multi30k": _multi30k_from_cfg, "files": _files_from_cfg, "toy": _toy_from_cfg}


def load_corpus(cfg, cache_dir=None) -> Corpus:
    """The corpus the `data` config names by its `kind`."""
    cfg = config_dict(cfg)
    return LOADERS[check_kind(cfg.get("kind"))](cfg, cache_dir)
