"""How wide a beam search may be: bounded by the vocabulary and by memory,
checked before any decoding (Translator, HFTranslator, CTranslate2Translator,
and so nmt.translate, nmt.explore, the Python API and the trainer's validation).

A beam keeps at most one hypothesis per target subword at its first step, so
a beam wider than the vocabulary only holds copies (--beam-size 100000 with a
vocabulary of 240 hung). For one batch of R sentences, W hypotheses each, a
vocabulary of V subwords, S source positions and up to T steps, the search
holds about

    R * W * (3 * V + 2 * T * S) * 4 bytes

(the logits, their log-softmax and the candidates' top-k over V each step;
every step's attention kept for the backtrack, then gathered): more than the
memory free on the device is refused with the figure, not an allocation of
7 TB 51 s later.
"""

from nmt.base.errors import NmtError
from nmt.base.memory_sizes import free_memory, human_bytes, shrink_model, shrink_positions

__all__ = ["beam_bytes", "check_beam", "check_beam_memory", "check_beam_width", "check_model_memory",
           "check_nbest", "free_memory", "human_bytes"]

FLOAT = 4                 # bytes of a float32


def beam_bytes(rows: int, beam_size: int, vocab_size: int, src_len: int, steps: int) -> int:
    """The search's memory for one batch, as the module's note counts it."""
    return rows * beam_size * (3 * vocab_size + 2 * steps * src_len) * FLOAT


def check_beam_width(beam_size: int, vocab_size: int, option: str = "beam_size") -> None:
    """NmtError when `beam_size` is more than the target vocabulary."""
    if beam_size > vocab_size:
        raise NmtError(f"{option}={beam_size} is more than the model's {vocab_size:,} target subwords: a beam "
                       f"holds at most one hypothesis per subword at its first step, the rest would be copies; "
                       f"use at most {vocab_size:,}")


def check_beam_memory(beam_size: int, vocab_size: int, batches, device=None, option: str = "beam_size",
                      free: int | None = None) -> None:
    """NmtError when one batch of the search would need more memory than is free.
    `batches`: (sentences, source positions, decoding steps) of each batch;
    `free`: bytes free (default: free_memory(device))."""
    if beam_size < 2:
        return
    batches = list(batches)
    if not batches:
        return
    rows, src_len, steps = max(batches, key=lambda b: beam_bytes(b[0], beam_size, vocab_size, b[1], b[2]))
    need = beam_bytes(rows, beam_size, vocab_size, src_len, steps)
    free = free_memory(device) if free is None else free
    if free is not None and need > free:
        raise NmtError(f"{option}={beam_size} needs about {human_bytes(need)} for a batch of {rows} sentences "
                       f"({beam_size:,} hypotheses x ({vocab_size:,} subword scores x 3 + {steps} steps x "
                       f"{src_len} source positions x 2 of attention) x 4 bytes), more than the "
                       f"{human_bytes(free)} free on {getattr(device, 'type', device) or 'cpu'}; "
                       "lower the beam size or the batch size")


def check_nbest(beam_size: int, nbest: int) -> None:
    """NmtError unless 1 <= nbest <= beam_size: the search keeps beam_size hypotheses
    (greedy search one) and can answer with no fewer than one of them."""
    if not 1 <= nbest <= beam_size:
        raise NmtError(f"need 1 <= nbest <= beam_size (got nbest={nbest}, beam_size={beam_size})")


def check_beam(beam_size: int, nbest: int, vocab_size: int, batches=(), device=None,
               free: int | None = None) -> None:
    """The beam's bounds for translate(): nbest within the beam, the beam within
    the vocabulary and the free memory."""
    check_nbest(beam_size, nbest)
    check_beam_width(beam_size, vocab_size)
    check_beam_memory(beam_size, vocab_size, batches, device, free=free)


def check_model_memory(model, device=None, free: int | None = None) -> None:
    """NmtError when training `model` (built on the meta device) needs more memory than is
    free: its weights, their gradients and Adam's two moments, 4 bytes each."""
    parameters = sum(p.numel() for p in model.parameters())
    need = parameters * 4 * FLOAT
    free = free_memory(device) if free is None else free
    if free is not None and need > free:
        from nmt.core.positional.learned import LearnedEmbedding

        tables = [m for m in model.modules() if isinstance(m, LearnedEmbedding)]
        advice = shrink_model("data.vocab_size")
        if 2 * sum(m.table.weight.numel() for m in tables) > parameters:     # most of it: the position tables
            advice = shrink_positions(max(m.max_len for m in tables))
        raise NmtError(f"the model has {parameters:,} parameters: training it holds about {human_bytes(need)} "
                       "(weights, gradients and Adam's two moments, 4 bytes each) before any batch, more than "
                       f"the {human_bytes(free)} free on {getattr(device, 'type', device) or 'cpu'}; {advice}")
