"""The `data` config's rules across keys, which need no file: a required key
set, settings that work together (streaming with files only and without
guided alignment, both halves of a test pair), two Multi30k languages, toy
sizes the task can give. The data loaders (nmt.data.corpora, nmt.data.toy)
check their own arguments with the same functions."""

from collections.abc import Mapping

from omegaconf import DictConfig, OmegaConf

from nmt.config_schema.table import RULES
from nmt.base.errors import NmtError

KINDS = RULES["data.kind"].options          # multi30k, files, toy
MULTI30K_LANGUAGES = ("cs", "de", "en", "fr")
TOY_MAX_SENTENCES = 200_000


def config_dict(cfg) -> dict:
    """The `data` config as a plain dict; a missing mandatory (???) key is an NmtError."""
    if isinstance(cfg, DictConfig):
        # OmegaConf names a key from the root when `cfg` is the composed config's `data` node
        missing = sorted(key if key.startswith("data.") else f"data.{key}"
                         for key in OmegaConf.missing_keys(cfg))
        if missing:
            raise NmtError(f"{missing[0]} is not set; add {missing[0]}=... to the command line")
        return OmegaConf.to_container(cfg, resolve=True)
    return dict(cfg)


def need(cfg: Mapping, key: str):
    """cfg[key], or NmtError when it is not set."""
    if cfg.get(key) is None:
        raise NmtError(f"data.{key} is not set; add data.{key}=... to the command line")
    return cfg[key]


def whole_setting(cfg: Mapping, key: str) -> int:
    """data.KEY checked by its rule in RULES, the same line as on the command
    line (e.g. `data.max_len=0: must be >= 1`); not set is NmtError too."""
    value = need(cfg, key)
    message = RULES[f"data.{key}"].message(f"data.{key}", value)
    if message:
        raise NmtError(message)
    return int(value)


def sort_setting(cfg: Mapping) -> str:
    """data.sort_by checked by its rule; a config from before the key existed sorted by source."""
    value = cfg.get("sort_by") or "source"
    message = RULES["data.sort_by"].message("data.sort_by", value)
    if message:
        raise NmtError(message)
    return str(value)


def check_kind(kind) -> str:
    if kind not in KINDS:
        raise NmtError(f"data.kind={kind!r} unknown; choose one of {sorted(KINDS)}")
    return kind


def check_languages(src_lang: str, tgt_lang: str) -> None:
    """Two different Multi30k languages."""
    for key, lang in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
        if lang not in MULTI30K_LANGUAGES:
            raise NmtError(f"data.{key}={lang!r} is not a Multi30k language; choose one of "
                           f"{list(MULTI30K_LANGUAGES)}")
    if src_lang == tgt_lang:
        raise NmtError(f"data.src_lang and data.tgt_lang are both {src_lang!r}; choose two languages")


def check_test_pair(test_src, test_tgt) -> None:
    """A test set needs both sides, or neither."""
    if (test_src is None) != (test_tgt is None):
        raise NmtError("set both data.test_src and data.test_tgt, or neither")


def check_toy_sizes(n_train: int, n_valid: int, n_test: int) -> tuple[int, int, int]:
    """The three split sizes as ints, or NmtError when the toy task cannot give them."""
    sizes = (int(n_train), int(n_valid), int(n_test))
    if min(sizes) < 0 or sizes[0] < 1 or sizes[1] < 1:
        raise NmtError(f"toy sizes n_train={sizes[0]}, n_valid={sizes[1]}, n_test={sizes[2]}: "
                       "need n_train >= 1, n_valid >= 1, n_test >= 0")
    if sum(sizes) > TOY_MAX_SENTENCES:
        raise NmtError(f"toy task: {sum(sizes)} sentences asked for; keep n_train + n_valid + n_test <= 200000")
    return sizes


def check_data_config(cfg) -> dict:
    """Mistakes the `data` config alone reveals, before any file is read: a
    required key not set, an unknown kind, settings that cannot work together
    (streaming with guided alignment or without files, half a test pair, toy
    sizes the task cannot give). Returns the config as a plain dict."""
    cfg = config_dict(cfg)
    kind = check_kind(cfg.get("kind"))
    if cfg.get("streaming"):
        if kind != "files":
            raise NmtError(f"data.streaming=true reads data=files only, not data.kind={kind!r}; "
                           "use data=files_streaming with data.train_src=... and friends")
        if cfg.get("train_alignments"):
            raise NmtError("data.train_alignments (guided alignment) is not supported with data.streaming; "
                           "use data=files, which holds the training pairs in memory")
    if kind == "files":
        for key in ("train_src", "train_tgt", "valid_src", "valid_tgt"):
            need(cfg, key)
        check_test_pair(cfg.get("test_src"), cfg.get("test_tgt"))
    if kind == "multi30k":
        check_languages(str(need(cfg, "src_lang")), str(need(cfg, "tgt_lang")))
    if kind == "toy":
        check_toy_sizes(*(need(cfg, key) for key in ("n_train", "n_valid", "n_test")))
    return cfg
