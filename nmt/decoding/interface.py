"""What both translators' translate() take and return, without torch.

nmt.Translator (torch) and nmt.deploy.engine.CTranslate2Translator share
these checks and the Translation record. Nothing here imports torch, so
`nmt.translate --checkpoint CT2_FOLDER` starts without loading it.
"""

import html
import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from nmt.base.errors import NmtError


def check_coverage_penalty(beta, beam_size, penalty: str = "coverage_penalty=",
                           beam: str = "beam_size") -> None:
    """The coverage penalty's rule, for every way in (Python API, nmt.translate,
    nmt.train's validation beam): beta a finite number >= 0, and with beta > 0
    a beam of 2 or more, since the penalty re-ranks a beam's hypotheses.
    `penalty` and `beam` name the two settings as the user wrote them."""
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not (beta >= 0 and beta != float("inf")):
        raise NmtError(f"{penalty}{beta} must be a finite number >= 0")
    if beta and beam_size < 2:
        raise NmtError(f"{penalty}{beta} re-ranks the beam's hypotheses; set {beam} to 2 or more")


def check_text(text, where: str) -> str:
    """`text` if sentencepiece can encode it, else NmtError naming `where`
    ("sentence 3"). Any Unicode text can be encoded except a lone surrogate
    (U+D800 to U+DFFF alone): what Python makes of undecodable bytes with
    errors='surrogateescape', or JSON's "\ud800"; it is not text."""
    if not isinstance(text, str):
        raise NmtError(f"{where} is {type(text).__name__}, not text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise NmtError(f"{where} holds a lone surrogate (U+{ord(text[error.start]):04X} at character "
                       f"{error.start + 1}), which is not text; decode the input as UTF-8 with "
                       "errors='strict' or 'replace'") from None
    return text


def check_search(beam_size, nbest, batch_size, min_length, length_penalty) -> None:
    """translate()'s search settings: whole numbers where counted, a finite alpha."""
    for name, value, least in (("beam_size", beam_size, 1), ("nbest", nbest, 1),
                               ("batch_size", batch_size, 1), ("min_length", min_length, 0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
                (name in ("batch_size", "min_length") and value < least):
            raise NmtError(f"{name}={value!r} must be a whole number >= {least}")
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, numbers.Real) or \
            not math.isfinite(length_penalty):
        raise NmtError(f"length_penalty={length_penalty!r} must be a finite number")


def check_sentences(sentences) -> list:
    """translate()'s input as a list of text lines, or NmtError saying what it is instead."""
    if isinstance(sentences, str):
        raise NmtError("give a list of sentences, not one string")
    if isinstance(sentences, (bytes, bytearray)) or not hasattr(sentences, "__iter__"):
        raise NmtError(f"give a list of sentences, not {type(sentences).__name__}")
    sentences = list(sentences)
    for number, text in enumerate(sentences, 1):
        check_text(text, f"sentence {number}")
    return sentences


@dataclass
class Translation:
    """One sentence's translation: its text and score, the subwords on both
    sides, and the attention over the source of each output subword. In
    Jupyter it shows itself as its text above its heatmap (`_repr_html_`)."""
    text: str
    score: float
    src_pieces: list[str]
    tgt_pieces: list[str]          # output subwords, then "</s>"
    attention: np.ndarray          # (len(tgt_pieces), len(src_pieces))
    nbest: list[tuple[str, float]] = field(default_factory=list)
    truncated: bool = False
    tokens: list[int] = field(default_factory=list)   # output ids, without bos/eos
    forced: int = 0                # how many of the first output subwords a prefix forced

    def plot(self, title: str | None = None, exact_zeros: bool = False):
        """The attention as a labelled heatmap, a matplotlib Figure: source
        subwords across, output subwords down, with its colour scale.
        exact_zeros: the model's normaliser is sparsemax or entmax15, so a
        weight of exactly 0 is drawn white. `fig.savefig("a.png")` writes it."""
        from nmt.viz.heatmaps import attention_figure   # matplotlib: only when a picture is asked for

        if not self.src_pieces:
            raise NmtError("an empty line has no attention to draw")
        return attention_figure(self.attention, self.src_pieces, self.tgt_pieces,
                                self.text if title is None else title, exact_zeros=exact_zeros)

    def _repr_html_(self) -> str:
        """Jupyter's view: the text, its score, and the heatmap as an inline PNG."""
        from nmt.viz.heatmaps import figure_png_base64   # matplotlib: only when a picture is asked for

        head = f"<p><b>{html.escape(self.text)}</b> <small>(score {self.score:.3f})</small></p>"
        if not self.src_pieces:
            return head
        png = figure_png_base64(self.plot(title=""))
        return f'{head}<img alt="attention heatmap" src="data:image/png;base64,{png}"/>'
