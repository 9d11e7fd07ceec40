"""Config in, model out: every part built with hydra.utils.instantiate."""

from hydra.errors import InstantiationException
from hydra.utils import instantiate as hydra_instantiate
from omegaconf import DictConfig
from torch import nn

from nmt.errors import NmtError
from nmt.models.seq2seq import Seq2Seq

TRANSFORMER_DECODER = "nmt.models.decoders.transformer.TransformerDecoder"
TRANSFORMER_ENCODER = "nmt.models.encoders.transformer.TransformerEncoder"
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
    bridge = instantiate(model_cfg.bridge, enc_dim=encoder.output_size, dec_dim=bridge_dim)
    return Seq2Seq(encoder, decoder, bridge, memory_proj, pad_id)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
