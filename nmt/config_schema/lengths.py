"""Settings of two groups that must agree: a learned position table and
location attention cover the longest sentence (data.max_len), and shared
embeddings need one vocabulary; batches are not padded past the longest
sentence, and the validation beam is not wider than the vocabulary."""

from nmt.base.errors import NmtError


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
    check_widths(cfg)
    if cfg.model.share_embeddings and not cfg.data.joint_vocab:
        raise NmtError(
            "model.share_embeddings=true needs one vocabulary for both languages; "
            "set data.joint_vocab=true or model.share_embeddings=false"
        )


def check_widths(cfg) -> None:
    """NmtError for data.pad_to_multiple past the longest sentence (every batch would
    be padded beyond it: 10^6 took 23.9 GB) or trainer.val_beam_size over data.vocab_size
    (a beam holds one hypothesis per subword at its first step; more are copies)."""
    max_len, multiple = int(cfg.data.max_len), cfg.data.get("pad_to_multiple")
    if multiple is not None and int(multiple) > max_len + 1:
        raise NmtError(f"data.pad_to_multiple={multiple} is more than the longest sentence "
                       f"(data.max_len={max_len} subwords, +1 for </s>): every batch would be padded past it; "
                       f"use at most {max_len + 1} (8 gives few batch shapes)")
    beam, vocab = cfg.get("trainer", {}).get("val_beam_size"), cfg.data.get("vocab_size")
    if beam is not None and vocab is not None and int(beam) > int(vocab):
        raise NmtError(f"trainer.val_beam_size={beam} is more than the data.vocab_size={vocab} subwords a beam "
                       f"can start from; use at most {vocab}")
