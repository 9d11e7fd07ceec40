"""Model parts that cannot work together, said in one line before anything is
built: RNN-only attention scopes and coverage with a Transformer decoder, a
bridge the Transformer decoder would ignore, positions for RNNs."""

from omegaconf import DictConfig

from nmt.base.errors import NmtError

TRANSFORMER_DECODER = "nmt.core.transformer_decoder.TransformerDecoder"
TRANSFORMER_ENCODER = "nmt.core.transformer_encoder.TransformerEncoder"
# A Transformer decoder reads the memory through cross-attention; these
# bridges have nothing to start, so only they may be combined with it.
BRIDGES_WITHOUT_EFFECT = ("nmt.core.bridges.LastBridge", "nmt.core.bridges.ZeroBridge")


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
