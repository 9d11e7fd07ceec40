"""Every rule a training config must follow, in one package, checked before
any data is read by `nmt.training.config_checks.check_config`, in this order:

    validate(cfg)                 the values and the settings that need no class
        values     every leaf against its rule in RULES (table.py, kinds.py), e.g.
                   trainer.grad_clip=-1: must be >= 0 (0 turns clipping off)
                   A key no rule names is refused, except in a node with a
                   `_target_`, whose class's settings answer for it.
        lengths    a learned position table or location attention that covers
                   data.max_len, shared embeddings over a joint vocabulary
        data       the `data` node across keys: required keys, streaming, the
                   test pair, languages, toy sizes (data.py)
    (the files the config names: config_checks.check_paths)
    check_classes(cfg, choices)   the nodes that name a class
        each key of the optimizer and the schedule is a keyword argument of
        its `_target_` class (classes.py); model parts that cannot work
        together (combinations.py); each model part's keys, as above

The model's constructors' own checks (heads dividing d_model, ...) answer
when it is built on the meta device (`nmt.models.build.check_model_config`).
`choices` is Hydra's runtime.choices (group -> option), to name options in
messages. registry.py names each option's class by the option's name: a
checkpoint stores its parts by those names (nmt.store.checkpoints).
"""

from omegaconf import DictConfig

from nmt.config_schema.classes import check_group_settings, check_model_settings
from nmt.config_schema.combinations import check_combination
from nmt.config_schema.data import check_data_config
from nmt.config_schema.lengths import check_lengths
from nmt.config_schema.values import as_plain, check_values


def validate(cfg: DictConfig) -> None:
    """NmtError with one line for the first value, length or data rule `cfg` breaks."""
    check_values(as_plain(cfg))
    check_lengths(cfg)
    check_data_config(cfg.data)


def check_classes(cfg: DictConfig, choices: dict | None = None) -> None:
    """NmtError with one line for a key a node's class does not take, or model
    parts that cannot work together."""
    for group in ("optimizer", "schedule"):
        check_group_settings(cfg.get(group), group, choices)
    check_combination(cfg.model, str(cfg.model.positional.kind))
    check_model_settings(cfg.model, choices)
