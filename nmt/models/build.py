"""Config in, model out: every part built with hydra.utils.instantiate.

The parts are nmt.core's plain reference code; with speedups=True (the
default) nmt.speedups.model then replaces its plain pieces with faster ones
that give the same results (nmt/speedups/).
"""

import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate as hydra_instantiate
from omegaconf import DictConfig
from torch import nn
from torch.overrides import TorchFunctionMode

from nmt.config_schema.combinations import TRANSFORMER_DECODER, TRANSFORMER_ENCODER, check_combination
from nmt.core.seq2seq import Seq2Seq
from nmt.base.errors import NmtError
from nmt.base.memory_sizes import allocation_bytes, human_bytes, shrink_model, shrink_positions
from nmt.speedups.model import install_model_speedups


def instantiate(config, **kwargs):
    """hydra.utils.instantiate, but a constructor's NmtError stays one clear line."""
    try:
        return hydra_instantiate(config, **kwargs)
    except InstantiationException as error:
        cause = error.__cause__
        if isinstance(cause, NmtError):
            raise cause from None
        size = allocation_bytes(cause) if cause is not None else None
        if size is not None:            # the allocator's own text ("[enforce fail at alloc_cpu.cpp...") never raw
            raise NmtError(f"cannot build {config.get('_target_', 'a model part')}: it needs a block of "
                           f"{human_bytes(size)} of memory, more than this machine could give; "
                           f"{_what_to_shrink(config, kwargs, size)} or use a machine with more memory") from None
        raise NmtError(f"cannot build {config.get('_target_', 'a model part')}: "
                       f"{str(cause or error).splitlines()[-1][:200]}") from None


def _what_to_shrink(config, kwargs: dict, size: float) -> str:
    """model.positional.max_len when the block that failed is a part's learned position
    table (max_len x d_model numbers of 2, 4 or 8 bytes), else the model's sizes."""
    max_len, d_model = getattr(kwargs.get("positional"), "max_len", None), config.get("d_model")
    if isinstance(max_len, int) and isinstance(d_model, int) and size in {max_len * d_model * b for b in (2, 4, 8)}:
        return shrink_positions(max_len)
    return shrink_model()


def check_model_config(model_cfg: DictConfig, vocab_size: int) -> Seq2Seq:
    """The model built on the meta device (shapes only, no memory, no data),
    before any data is read: a constructor's own check (heads dividing
    d_model, an odd bidirectional hidden_size, ...) answers here, not after
    the data. The parts' settings and combinations are nmt.config_schema's.
    Returns that meta-device model, for checks of settings that name its
    layers and heads (trainer.guided_alignment).
    """
    with torch.device("meta"), MetaInitSkipped():
        return build_model(model_cfg, vocab_size, vocab_size, speedups=False)


class MetaInitSkipped(TorchFunctionMode):
    """A meta tensor holds no values, so `normal_` on one (nn.init's or the tensor's)
    returns it as it is: torch's meta kernel for it would import torch._dynamo and
    sympy (about 800 modules, 2 s) on every command that checks a model config."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", None) == "normal_":
            tensor = args[0] if args else kwargs.get("tensor")
            if isinstance(tensor, torch.Tensor) and tensor.is_meta:
                return tensor
        return func(*args, **kwargs)


def build_model(model_cfg: DictConfig, src_vocab_size: int, tgt_vocab_size: int,
                pad_id: int = 0, speedups: bool = True) -> Seq2Seq:
    """The model `model_cfg` describes, from nmt.core's parts; speedups=True
    installs nmt.speedups.model's replacements (same parameters, same results),
    False leaves the core's plain code alone."""
    positional = instantiate(model_cfg.positional)     # a Transformer's; an RNN reads positions from its order
    check_combination(model_cfg, positional.kind)
    positions = {"positional": positional} if model_cfg.encoder._target_ == TRANSFORMER_ENCODER else {}
    encoder = instantiate(model_cfg.encoder, vocab_size=src_vocab_size, pad_id=pad_id, **positions)
    memory_proj = None
    if model_cfg.decoder._target_ == TRANSFORMER_DECODER:
        d_model = model_cfg.decoder.d_model
        if encoder.output_size != d_model:
            memory_proj = nn.Linear(encoder.output_size, d_model)   # (B, S, De) -> (B, S, D)
        decoder = instantiate(model_cfg.decoder, vocab_size=tgt_vocab_size, memory_dim=d_model,
                              positional=positional, pad_id=pad_id)
        bridge_dim = d_model
    else:
        attention = instantiate(model_cfg.attention, query_dim=model_cfg.decoder.hidden_size,
                                key_dim=encoder.output_size)
        decoder = instantiate(model_cfg.decoder, vocab_size=tgt_vocab_size,
                              memory_dim=encoder.output_size, attention=attention, pad_id=pad_id)
        bridge_dim = model_cfg.decoder.hidden_size
    if model_cfg.get("share_embeddings", False):
        share_embeddings(encoder, decoder, src_vocab_size, tgt_vocab_size)
    bridge = instantiate(model_cfg.bridge, enc_dim=encoder.output_size, dec_dim=bridge_dim)
    model = Seq2Seq(encoder, decoder, bridge, memory_proj, pad_id)
    if speedups:
        install_model_speedups(model)
    return model


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
