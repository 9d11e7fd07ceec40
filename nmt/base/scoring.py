"""Corpus BLEU and chrF of detokenised translations, by sacreBLEU with its
default settings, so that the scores and signatures match `sacrebleu` run
on the same files."""

import sacrebleu

from nmt.base.errors import NmtError


def score_translations(hypotheses: list[str], references: list[str]):
    """sacreBLEU BLEU and chrF with their signatures; no sentences is one NmtError line."""
    if not references:
        raise NmtError(
            "there are no sentences to score (the reference is empty); give a reference with one line per source line"
        )
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    b = bleu.corpus_score(hypotheses, [references])
    c = chrf.corpus_score(hypotheses, [references])
    return b.score, c.score, str(bleu.get_signature()), str(chrf.get_signature())
