"""Config in, model out: every part built with hydra.utils.instantiate."""

import inspect

import torch
from hydra.errors import InstantiationException
from hydra.utils import get_class
from hydra.utils import instantiate as hydra_instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn

from nmt.config_files import CONFIGS
from nmt.errors import NmtError
from nmt.models.seq2seq import Seq2Seq

TRANSFORMER_DECODER = "nmt.models.transformer.decoder.TransformerDecoder"
TRANSFORMER_ENCODER = "nmt.models.transformer.encoder.TransformerEncoder"
# A Transformer decoder reads the memory through cross-attention; these
# bridges have nothing to start, so only they may be combined with it.
BRIDGES_WITHOUT_EFFECT = ("nmt.models.bridges.LastBridge", "nmt.models.bridges.ZeroBridge")


def instantiate(config, **kwargs):
    """hydra.utils.instantiate, but a constructor's NmtError stays one clear line."""
    try:
        return hydra_instantiate(config, **kwargs)
    except InstantiationException as error:
        cause = error.__cause__
        if isinstance(cause, NmtError):
            raise cause from None
        raise NmtError(f"cannot build {config.get('_target_', 'a model part')}: "
                       f"{str(cause or error).splitlines()[-1][:200]}") from None


def check_combination(model_cfg: DictConfig, positional_kind: str) -> None:
    """One clear line for a combination that cannot work."""
    transformer_decoder = model_cfg.decoder._target_ == TRANSFORMER_DECODER
    uses_transformer = transformer_decoder or model_cfg.encoder._target_ == TRANSFORMER_ENCODER
    scope = model_cfg.attention.get("scope", "global")
    if transformer_decoder and scope != "global":
        raise NmtError(f"model.attention.scope={scope} works with RNN decoders only; a Transformer "
                       "decoder uses global multi-head cross-attention (use model/decoder=lstm or gru)")
    if transformer_decoder and model_cfg.attention.get("_target_", "").endswith(".CoverageAttention"):
        raise NmtError("model/attention=coverage works with RNN decoders only (the coverage vector is "
                       "part of their state); use model/decoder=lstm or gru, or another attention")
    if transformer_decoder and model_cfg.bridge._target_ not in BRIDGES_WITHOUT_EFFECT:
        raise NmtError("model/bridge starts RNN decoders; a Transformer decoder reads the encoder "
                       "through cross-attention: use model/bridge=zero with model/decoder=transformer")
    if not uses_transformer and positional_kind != "none":
        raise NmtError(f"model/positional={positional_kind} needs a Transformer encoder or decoder; "
                       "RNNs read positions from their order (use model/positional=none)")


# What the builder or trainer passes itself: never a key of the YAML.
BUILDER_ARGUMENTS = {"self", "vocab_size", "memory_dim", "attention", "positional", "pad_id", "query_dim",
                     "key_dim", "enc_dim", "dec_dim", "params", "optimizer"}
PARTS = ("encoder", "decoder", "attention", "bridge", "positional")
INSPECTED = ("nmt.", "torch.optim.")    # classes whose settings are looked up (imported) by name


def _settings(target: str) -> set[str] | None:
    """The keyword arguments the class `target` takes (None: any, or unknown)."""
    if not str(target).startswith(INSPECTED):
        return None
    try:
        parameters = inspect.signature(get_class(str(target)).__init__).parameters.values()
    except Exception:  # noqa: BLE001 - a target that does not import: instantiate says so
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters} - BUILDER_ARGUMENTS


def _preset_keys(preset: str, key: str) -> set[str]:
    """The keys under `key` (e.g. model.encoder) that the experiment preset sets itself."""
    path = CONFIGS / "experiment" / f"{preset}.yaml"
    try:
        node = OmegaConf.select(OmegaConf.load(path), key)
    except Exception:  # noqa: BLE001 - no such file: nothing to name
        return set()
    return set(node.keys()) if isinstance(node, DictConfig) else set()


def check_group_settings(node, group: str, choices: dict | None = None) -> None:
    """Every key of a group's node (group "model/encoder", "optimizer", ...) is one
    its `_target_` class takes.

    A preset that sets keys for one option and a command line that picks
    another (experiment=quickstart model/encoder=transformer) would otherwise
    fail in the constructor with "unexpected keyword argument 'embed_dim'".
    `choices` is Hydra's runtime.choices (group -> option), for the message.
    """
    if not isinstance(node, DictConfig):
        return
    takes = _settings(node.get("_target_", ""))
    if takes is None:
        return
    foreign = [key for key in node.keys() if not str(key).startswith("_") and key not in takes]
    if not foreign:
        return
    choices = dict(choices or {})
    prefix, part = group.replace("/", "."), group.rsplit("/", 1)[-1]
    option = choices.get(group)
    named = f"{group}={option}" if option else str(node._target_).rsplit(".", 1)[-1]
    keys = ", ".join(f"{prefix}.{key}" for key in foreign)
    its = f"its settings are {', '.join(sorted(takes))}" if takes else "it has no settings"
    preset = choices.get("experiment")
    if preset and option and set(foreign) & _preset_keys(str(preset), prefix):
        raise NmtError(f"experiment={preset} sets {keys} for its own {part}, which {named} does "
                       f"not take ({its}); drop {group}={option} to use the preset's {part}, "
                       f"or drop experiment={preset} and set {prefix}.* yourself")
    raise NmtError(f"{keys}: not a setting of {named} ({its}); remove it or choose the "
                   f"{group} option it belongs to")


def check_settings(model_cfg: DictConfig, choices: dict | None = None) -> None:
    """check_group_settings for each part of the model."""
    for part in PARTS:
        check_group_settings(model_cfg.get(part), f"model/{part}", choices)


def check_model_config(model_cfg: DictConfig, vocab_size: int, choices: dict | None = None) -> Seq2Seq:
    """Every mistake building the model would find, before any data is read.

    The combinations that cannot work, the settings each part takes, then
    the model itself built on the meta device (shapes only, no memory, no
    data): a constructor's own check (heads dividing d_model, an odd
    bidirectional hidden_size, ...) answers here, not after the data.
    Returns that meta-device model, for checks of settings that name its
    layers and heads (trainer.guided_alignment).
    """
    check_combination(model_cfg, str(model_cfg.positional.get("kind", "none")))
    check_settings(model_cfg, choices)
    with torch.device("meta"):
        return build_model(model_cfg, vocab_size, vocab_size)


def build_model(model_cfg: DictConfig, src_vocab_size: int, tgt_vocab_size: int,
                pad_id: int = 0) -> Seq2Seq:
    positional = instantiate(model_cfg.positional)
    check_combination(model_cfg, positional.kind)
    encoder = instantiate(model_cfg.encoder, vocab_size=src_vocab_size, positional=positional,
                          pad_id=pad_id)
    memory_proj = None
    if model_cfg.decoder._target_ == TRANSFORMER_DECODER:
        d_model = model_cfg.decoder.d_model
        if encoder.output_size != d_model:
            memory_proj = nn.Linear(encoder.output_size, d_model)   # (B, S, De) -> (B, S, D)
        decoder = instantiate(model_cfg.decoder, vocab_size=tgt_vocab_size, memory_dim=d_model,
                              positional=positional, attention=None, pad_id=pad_id)
        bridge_dim = d_model
    else:
        attention = instantiate(model_cfg.attention, query_dim=model_cfg.decoder.hidden_size,
                                key_dim=encoder.output_size)
        decoder = instantiate(model_cfg.decoder, vocab_size=tgt_vocab_size,
                              memory_dim=encoder.output_size, attention=attention,
                              positional=positional, pad_id=pad_id)
        bridge_dim = model_cfg.decoder.hidden_size
    if model_cfg.get("share_embeddings", False):
        share_embeddings(encoder, decoder, src_vocab_size, tgt_vocab_size)
    bridge = instantiate(model_cfg.bridge, enc_dim=encoder.output_size, dec_dim=bridge_dim)
    return Seq2Seq(encoder, decoder, bridge, memory_proj, pad_id)


def share_embeddings(encoder: nn.Module, decoder: nn.Module, src_vocab_size: int,
                     tgt_vocab_size: int) -> None:
    """One embedding table for source and target subwords (model.share_embeddings).

    Press and Wolf (2017, "Using the Output Embedding to Improve Language
    Models") tie a translation model's encoder and decoder embeddings over a
    joint subword vocabulary ("three-way weight tying", with the output layer);
    Vaswani et al. (2017, Sec. 3.4) share one matrix between both embedding
    layers and the pre-softmax projection. The
    encoder takes the decoder's table, so a decoder whose output layer is tied
    to its embedding (model.decoder.tie_embeddings) ties all three.
    """
    if src_vocab_size != tgt_vocab_size:
        raise NmtError(f"model.share_embeddings=true needs one vocabulary for both sides; the source "
                       f"has {src_vocab_size} subwords and the target {tgt_vocab_size} (data.joint_vocab=true)")
    source, target = getattr(encoder, "embed", None), getattr(decoder, "embed", None)
    if not isinstance(source, nn.Embedding) or not isinstance(target, nn.Embedding):
        raise NmtError("model.share_embeddings=true needs an encoder and a decoder that embed subwords")
    if source.embedding_dim != target.embedding_dim:
        raise NmtError(f"model.share_embeddings=true needs the same embedding size on both sides; the "
                       f"encoder's is {source.embedding_dim} and the decoder's {target.embedding_dim} "
                       "(set model.encoder.embed_dim and model.decoder.embed_dim, or d_model, alike)")
    source.weight = target.weight                                   # (V, E), one Parameter


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
