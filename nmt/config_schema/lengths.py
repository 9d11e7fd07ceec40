"""Settings of two groups that must agree: a learned position table and
location attention cover the longest sentence (data.max_len), and shared
embeddings need one vocabulary."""

from nmt.errors import NmtError


def check_lengths(cfg) -> None:
    """NmtError when a model table is shorter than data.max_len allows, or
    model.share_embeddings is set without data.joint_vocab."""
    if str(cfg.model.positional.kind) == "learned":
        table, max_len = int(cfg.model.positional.max_len), int(cfg.data.max_len)
        if table < max_len + 1:  # the decoder reads <s> plus up to max_len subwords
            raise NmtError(
                f"model.positional.max_len={table} is shorter than the longest sentence "
                f"(data.max_len={max_len} subwords, +1 for <s>); set "
                f"model.positional.max_len={max_len + 1} or data.max_len={table - 1}"
            )
    window = cfg.model.attention.get("max_len")  # luong_location: one score per source position
    if window is not None and int(window) < int(cfg.data.max_len):
        max_len = int(cfg.data.max_len)
        raise NmtError(
            f"model.attention.max_len={window} is shorter than the longest source "
            f"(data.max_len={max_len} subwords); set model.attention.max_len={max_len} "
            f"or data.max_len={window}"
        )
    if cfg.model.share_embeddings and not cfg.data.joint_vocab:
        raise NmtError(
            "model.share_embeddings=true needs one vocabulary for both languages; "
            "set data.joint_vocab=true or model.share_embeddings=false"
        )
