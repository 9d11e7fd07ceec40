"""Does a lossy export translate as the float32 model does? Measured, not assumed.

CTranslate2 quantizes weights (int8, int16, float16, ...) and picks its
kernels by CPU: with Intel's MKL its int8 products agree with float32 on
nearly every sentence; where it takes oneDNN's u8s8 path instead (AVX2
without MKL, e.g. AMD EPYC Zen 3; `CT2_USE_MKL=0` forces it anywhere) a
small model can agree on 2 sentences of 60. So every export in a type other
than float32 translates the validation sentences stored in the checkpoint
(greedy) twice, with nmt's own float32 model and with the export, and
reports

    agreement   sentences whose subwords are identical, of all checked
    BLEU        sacreBLEU of each against the stored references, and the drop

An export whose agreement falls below `min_agreement` or whose BLEU drops by
more than `max_bleu_drop` is refused in one line naming the remedy (MKL's
kernels with CT2_USE_MKL=1, or float32 weights).
"""

import os
from dataclasses import dataclass

from nmt.deploy.engine import CTranslate2Translator
from nmt.base.errors import NmtError
from nmt.base.scoring import score_translations

LOSSLESS = ("float32",)
WARN_BELOW = 0.9  # agreement under this is said on stderr even when accepted


@dataclass(frozen=True)
class Agreement:
    """How an export translates the checked sentences beside float32."""

    same: int  # sentences with identical subwords
    total: int  # sentences checked
    bleu_float32: float  # nmt's float32 model against the references
    bleu_export: float  # the export against the references

    @property
    def fraction(self) -> float:
        return self.same / self.total if self.total else 1.0

    @property
    def drop(self) -> float:
        """BLEU points lost by the export (negative: it scored higher)."""
        return self.bleu_float32 - self.bleu_export

    def describe(self, quantization: str) -> str:
        return (
            f"{quantization} translates {self.same} of {self.total} of the checkpoint's validation "
            f"sentences as float32 does (BLEU {self.bleu_export:.2f} against {self.bleu_float32:.2f}, "
            f"a drop of {self.drop:.2f})"
        )


def measure(translator, folder, sources: list[str], references: list[str]) -> Agreement:
    """Greedy translations of `sources` by nmt's `translator` (float32) and by the
    export in `folder`, compared with each other and scored against `references`."""
    engine = CTranslate2Translator(
        folder, threads=1, max_len_ratio=translator.max_len_ratio, max_len_extra=translator.max_len_extra
    )
    ours, theirs = translator.translate(sources), engine.translate(sources)
    same = sum(a.tokens == b.tokens for a, b in zip(ours, theirs))
    bleu_float32 = score_translations([o.text for o in ours], references)[0]
    bleu_export = score_translations([o.text for o in theirs], references)[0]
    return Agreement(same, len(sources), bleu_float32, bleu_export)


def remedy(quantization: str) -> str:
    """What to do about a refused export, in the words of a command line."""
    mkl = (
        ""
        if os.environ.get("CT2_USE_MKL") == "1"
        else "run the export (and the translation) with CT2_USE_MKL=1 in the environment (MKL's int8 kernels), or "
    )
    return (
        f"{mkl}export with --quantization float32; to keep this {quantization} export anyway, lower "
        "--min-agreement or raise --max-bleu-drop"
    )


def check_agreement(agreement: Agreement, quantization: str, min_agreement: float, max_bleu_drop: float) -> str | None:
    """NmtError past a threshold; a warning line (or None) otherwise."""
    if agreement.fraction < min_agreement or agreement.drop > max_bleu_drop:
        raise NmtError(
            f"{quantization} export refused: {agreement.describe(quantization)}; the limits are "
            f"--min-agreement {min_agreement:g} and --max-bleu-drop {max_bleu_drop:g}; "
            f"{remedy(quantization)}"
        )
    if agreement.fraction < WARN_BELOW:
        return f"{agreement.describe(quantization)}; check it on your own test set"
    return None


def stored_samples(state: dict) -> tuple[list[str], list[str]]:
    """The checkpoint's validation sentences and their references (nmt.train stores up to 20)."""
    sources, references = state.get("samples"), state.get("sample_references")
    if (
        not isinstance(sources, list)
        or not isinstance(references, list)
        or len(sources) != len(references)
        or not all(isinstance(s, str) for s in sources + references)
    ):
        return [], []
    return sources, references
