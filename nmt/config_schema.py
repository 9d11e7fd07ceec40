"""The allowed values of every config key, checked before any data is read.

One table, RULES, names each leaf of the composed config tree (configs/*.yaml
with every group option) by its dotted path and says what it may hold:

    "trainer.grad_clip": Float(low=0, hint="0 turns clipping off"),
    "trainer.metric":    Choice(options=("bleu", "chrf", "loss")),

`validate(cfg)` walks the config and answers the first value that breaks its
rule with one NmtError line, e.g.

    trainer.grad_clip=-1: must be >= 0 (0 turns clipping off)

Rules are per key, not per option: `model.encoder.layers` means the same for
an LSTM and a Transformer encoder. A key without a rule is refused (a
misspelled `+trainer.max_step=...` would otherwise be ignored), except in a
node with a `_target_`, whose class's settings answer for it;
tests/test_config_schema.py composes every option of every group and fails
for any leaf that has no rule, so a new key needs one (add it below).

Keys that start with "_" (`_target_`, `_partial_`) name classes, not values.
Checks across keys are in `nmt.training.config_checks.check_config`: settings a group option
does not take, combinations that cannot work, and the model built on the
meta device so that its constructors' checks (heads dividing d_model, ...)
answer before any data is read (`nmt/models/build.py`, `check_model_config`).
"""

import difflib
import math
from dataclasses import dataclass

from omegaconf import DictConfig, ListConfig, OmegaConf

from nmt.errors import NmtError

MISSING = "???"


def _show(value) -> str:
    """A value as the user typed it on the command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{...}"
    return str(value)


def _bound(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class Rule:
    null: bool = False      # null is allowed (it means "none" or "off")
    hint: str = ""          # said after the problem, in parentheses

    def problem(self, value) -> str | None:
        """None when `value` is allowed, else what is wrong, e.g. "must be >= 0"."""
        if value is None:
            return None if self.null else f"must be {self.expected()}, not null"
        return self._problem(value)

    def _problem(self, value) -> str | None:
        raise NotImplementedError

    def expected(self) -> str:
        raise NotImplementedError

    def message(self, key: str, value) -> str | None:
        problem = self.problem(value)
        if problem is None:
            return None
        return f"{key}={_show(value)}: {problem}" + (f" ({self.hint})" if self.hint else "")


@dataclass(frozen=True)
class _Number(Rule):
    low: float | None = None
    high: float | None = None
    low_open: bool = False   # low itself is not allowed
    high_open: bool = False  # high itself is not allowed

    def range_text(self) -> str:
        """e.g. ">= 0", "in [0, 1)", or "" when any value is allowed."""
        if self.low is not None and self.high is not None:
            return (f"in {'(' if self.low_open else '['}{_bound(self.low)}, "
                    f"{_bound(self.high)}{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {_bound(self.low)}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {_bound(self.high)}"
        return ""

    def range_problem(self, value) -> str | None:
        too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        too_high = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        return f"must be {self.range_text()}" if too_low or too_high else None


@dataclass(frozen=True)
class Int(_Number):
    """A whole number, e.g. Int(low=1) for a count of steps."""

    def expected(self) -> str:
        return f"a whole number {self.range_text()}".strip()

    def _problem(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and math.isfinite(value) and value.is_integer():
                return f"must be a whole number, e.g. {int(value)}"
            return f"must be {self.expected()}"
        return self.range_problem(value)


@dataclass(frozen=True)
class Float(_Number):
    """A finite real number (an integer is accepted), e.g. Float(low=0, high=1, high_open=True)."""

    def expected(self) -> str:
        return f"a number {self.range_text()}".strip()

    def _problem(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be {self.expected()}"
        if not math.isfinite(value):
            return f"must be a finite number {self.range_text()}".strip()
        return self.range_problem(value)


@dataclass(frozen=True)
class Choice(Rule):
    """One of a few words, e.g. Choice(options=("fp32", "bf16", "fp16"))."""
    options: tuple = ()
    prefixes: tuple = ()     # also allowed: a word starting with one of these (e.g. "cuda:")

    def expected(self) -> str:
        return "one of " + ", ".join(self.options)

    def _problem(self, value):
        if isinstance(value, str) and (value in self.options or value.startswith(self.prefixes or ("\0",))):
            return None
        return f"must be {self.expected()}"


@dataclass(frozen=True)
class Bool(Rule):
    def expected(self) -> str:
        return "true or false"

    def _problem(self, value):
        return None if isinstance(value, bool) else f"must be {self.expected()}"


@dataclass(frozen=True)
class Text(Rule):
    """Free text: a path, a name, a hub id. Anything but a list, a mapping or
    blank text (an empty path is the current folder; `key=$UNSET` gives one)."""

    def expected(self) -> str:
        return "a path or name"

    def _problem(self, value):
        if isinstance(value, (list, tuple, dict)):
            return f"must be {self.expected()}, not a list or mapping"
        if isinstance(value, str) and not value.strip():
            return f"must be {self.expected()}, not empty"
        return None


@dataclass(frozen=True)
class Pair(Rule):
    """Two numbers, each following `item`, e.g. Adam's betas [0.9, 0.98]."""
    item: Rule = Float()

    def expected(self) -> str:
        return f"two numbers [a,b], each {self.item.expected().removeprefix('a number ')}"

    def _problem(self, value):
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            return f"must be {self.expected()}"
        if any(self.item.problem(v) for v in value):
            return f"must be {self.expected()}"
        return None


POSITIVE = Int(low=1)
COUNT = Int(low=0)
DROPOUT = Float(low=0, high=1, high_open=True)
LANGUAGES = ("de", "en", "fr", "cs")
RULES: dict[str, Rule] = {
    # top level
    "cache_dir": Text(),

    # trainer (configs/trainer/default.yaml)
    "trainer.max_steps": POSITIVE,
    "trainer.max_epochs": POSITIVE,
    "trainer.max_minutes": Float(low=0, low_open=True, null=True, hint="null = no time budget"),
    "trainer.val_every": POSITIVE,
    "trainer.log_every": POSITIVE,
    "trainer.device": Choice(options=("auto", "cpu", "cuda"), prefixes=("cuda:",)),
    "trainer.precision": Choice(options=("auto", "fp32", "bf16", "fp16")),
    "trainer.compile": Bool(),
    "trainer.seed": Int(low=0),
    "trainer.resume": Text(null=True, hint="null, auto, or the path of a checkpoint"),
    "trainer.resume_force": Bool(),
    "trainer.resume_weights_only": Bool(),
    "trainer.grad_clip": Float(low=0, hint="0 turns clipping off"),
    "trainer.accumulate": POSITIVE,
    "trainer.label_smoothing": Float(low=0, high=1, high_open=True, hint="0 turns smoothing off"),
    "trainer.metric": Choice(options=("bleu", "chrf", "loss")),
    "trainer.patience": Int(low=0, hint="0 never stops early"),
    "trainer.keep_last": Int(low=0, hint="0 keeps no step checkpoints"),
    "trainer.save_every": Int(low=0, hint="0 saves step checkpoints at validations only"),
    "trainer.average_last": Int(low=0, hint="0 turns averaging off"),
    "trainer.average_best": Int(low=0, hint="0 turns averaging off"),
    "trainer.val_beam_size": POSITIVE,
    "trainer.val_max_sentences": Int(low=1, null=True, hint="null validates on all sentences"),
    "trainer.test_max_sentences": Int(low=0, null=True, hint="null scores all test sentences, 0 none"),
    "trainer.heatmap_sentences": COUNT,
    "trainer.max_bad_steps": POSITIVE,
    "trainer.hard_baseline_decay": Float(low=0, high=1, high_open=True),
    "trainer.coverage_penalty": Float(low=0, hint="0 turns it off"),
    "trainer.guided_alignment.weight": Float(low=0, hint="0 turns it off"),
    "trainer.guided_alignment.layer": Int(),
    "trainer.guided_alignment.head": COUNT,

    # optimizer (configs/optimizer)
    "optimizer.lr": Float(low=0, low_open=True),
    "optimizer.betas": Pair(item=Float(low=0, high=1, high_open=True)),
    "optimizer.eps": Float(low=0),
    "optimizer.weight_decay": Float(low=0),
    "optimizer.fused": Bool(hint="true: one fused kernel per step; false: torch's per-parameter loop"),

    # schedule (configs/schedule)
    "schedule.warmup_steps": POSITIVE,
    "schedule.factor": Float(low=0, high=1, low_open=True, high_open=True),
    "schedule.patience": COUNT,
    "schedule.min_lr": Float(low=0),
    "schedule.final_fraction": Float(low=0, high=1),

    # data (configs/data)
    "data.kind": Choice(options=("multi30k", "files", "toy")),
    "data.path": Text(null=True),
    "data.hub_id": Text(),
    "data.src_lang": Choice(options=LANGUAGES),
    "data.tgt_lang": Choice(options=LANGUAGES),
    "data.train_src": Text(),
    "data.train_tgt": Text(),
    "data.valid_src": Text(),
    "data.valid_tgt": Text(),
    "data.test_src": Text(null=True),
    "data.test_tgt": Text(null=True),
    "data.train_alignments": Text(null=True),
    "data.n_train": POSITIVE,
    "data.n_valid": POSITIVE,
    "data.n_test": COUNT,
    "data.seed": Int(low=0),
    "data.max_len": POSITIVE,
    "data.batch_tokens": POSITIVE,
    "data.vocab_size": Int(low=5, hint="4 special pieces and at least one more"),
    "data.spm_model_type": Choice(options=("unigram", "bpe")),
    "data.joint_vocab": Bool(),
    "data.streaming": Bool(),
    "data.buffer_pairs": POSITIVE,
    "data.spm_sentences": POSITIVE,

    # model/encoder and model/decoder (RNN, LSTMN, Transformer)
    **{f"model.{part}.{key}": rule for part in ("encoder", "decoder") for key, rule in {
        "cell": Choice(options=("gru", "lstm")),
        "embed_dim": POSITIVE,
        "hidden_size": POSITIVE,
        "layers": POSITIVE,
        "dropout": DROPOUT,
        "d_model": POSITIVE,
        "heads": POSITIVE,
        "ff_size": POSITIVE,
        "norm_first": Bool(),
        "normaliser": Choice(options=("softmax", "sparsemax", "entmax15")),
    }.items()},
    "model.encoder.bidirectional": Bool(),
    "model.decoder.style": Choice(options=("luong", "bahdanau")),
    "model.decoder.input_feeding": Bool(),
    "model.decoder.tie_embeddings": Bool(),
    "model.share_embeddings": Bool(),
    "model.decoder.attention_layer": Int(hint="-1 is the last layer"),
    "model.decoder.attention_head": Int(low=0, null=True, hint="null = the mean over heads"),

    # model/attention
    "model.attention.scope": Choice(options=("global", "local_m", "local_p", "hard")),
    "model.attention.window": COUNT,
    "model.attention.normaliser": Choice(options=("softmax", "sparsemax", "entmax15")),
    "model.attention.hidden_dim": POSITIVE,
    "model.attention.sharpness": Float(low=0, low_open=True),
    "model.attention.learn_sharpness": Bool(),
    "model.attention.coverage_loss_weight": Float(low=0, hint="0 turns it off"),
    "model.attention.max_len": POSITIVE,
    "model.attention.heads": POSITIVE,

    # model/bridge
    "model.bridge.hidden_dim": POSITIVE,
    "model.bridge.hops": POSITIVE,
    "model.bridge.penalty_weight": Float(low=0),

    # model/positional
    "model.positional.kind": Choice(options=("none", "learned", "sinusoidal", "relative", "rotary",
                                             "alibi")),
    "model.positional.max_len": POSITIVE,
    "model.positional.max_relative": POSITIVE,
    "model.positional.values": Bool(),
    "model.positional.base": Float(low=0, low_open=True),
}


def leaves(node, prefix: str = ""):
    """(dotted key, value) of every leaf of a plain nested dict; lists are leaves.
    Keys starting with "_" (`_target_`, `_partial_`) are skipped."""
    for key, value in node.items():
        if str(key).startswith("_"):
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from leaves(value, path + ".")
        else:
            yield path, value


def as_plain(cfg) -> dict:
    """The config as plain Python, interpolations resolved, `???` kept as MISSING."""
    if isinstance(cfg, (DictConfig, ListConfig)):
        try:
            return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
        except Exception as error:  # noqa: BLE001 - an interpolation that cannot resolve
            raise NmtError(f"the config cannot be resolved: {str(error).splitlines()[0]}") from None
    return cfg


def _unknown(path: str, value) -> str:
    """A key no rule names, with the closest known key beside it."""
    parent = path.rsplit(".", 1)[0] + "." if "." in path else ""
    siblings = [k for k in RULES if k.startswith(parent) and "." not in k[len(parent):]]
    close = difflib.get_close_matches(path, siblings, n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]}?" if close else ""
    return (f"{path}={_show(value)}: not a setting nmt knows{hint} "
            "(python -m nmt.train --cfg job lists every key)")


def _check(node: dict, prefix: str) -> None:
    for key, value in node.items():
        if str(key).startswith("_"):
            continue
        path = f"{prefix}{key}"
        rule = RULES.get(path)
        if rule is None:
            if isinstance(value, dict):
                _check(value, path + ".")
            elif "_target_" not in node:
                # a node with a class (model parts, optimizer, schedule) answers for its own
                # keys through the class's settings (nmt.models.build.check_group_settings)
                raise NmtError(_unknown(path, value))
            continue
        if isinstance(value, str) and value == MISSING:
            continue                    # ??? (a required path): the data loader names it
        message = rule.message(path, value)
        if message:
            raise NmtError(message)


def validate(cfg) -> None:
    """Raise NmtError naming the first value outside its rule (the `hydra` node is Hydra's)."""
    plain = as_plain(cfg)
    plain = {k: v for k, v in plain.items() if k != "hydra"}
    _check(plain, "")
    data = plain.get("data", {})
    if data.get("src_lang") is not None and data.get("src_lang") == data.get("tgt_lang"):
        raise NmtError(f"data.src_lang and data.tgt_lang are both {data['src_lang']}; "
                       "choose two different languages")
