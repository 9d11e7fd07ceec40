"""Validation: loss and perplexity by teacher forcing, BLEU and chrF on
detokenised output (sacreBLEU, with its signatures)."""

import math
from dataclasses import dataclass

import sacrebleu
import torch

from nmt.training.loss import token_nll
from nmt.training.device import to_device


@dataclass
class ValidationResult:
    loss: float
    perplexity: float
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    hypotheses: list[str]


def score_translations(hypotheses: list[str], references: list[str]):
    """sacreBLEU BLEU and chrF with their signatures."""
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    b = bleu.corpus_score(hypotheses, [references])
    c = chrf.corpus_score(hypotheses, [references])
    return b.score, c.score, str(bleu.get_signature()), str(chrf.get_signature())


@torch.no_grad()
def validation_loss(model, batches, device, pad_id: int = 0) -> float:
    """Mean NLL per real target token (no label smoothing)."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        src, tgt = to_device(batch.src, device), to_device(batch.tgt, device)
        out, _ = model(src, tgt[:, :-1])
        labels = tgt[:, 1:]
        total += float(token_nll(out.logits, labels, pad_id).sum())
        count += int((labels != pad_id).sum())
    model.train(was_training)
    return total / max(1, count)


def validate(model, translator, batches, pairs, device, beam_size: int = 1,
             coverage_penalty: float = 0.0) -> ValidationResult:
    loss = validation_loss(model, batches, device)
    was_training = model.training
    model.eval()
    outputs = translator.translate([src for src, _ in pairs], beam_size=beam_size,
                                   coverage_penalty=coverage_penalty)
    model.train(was_training)
    hypotheses = [o.text for o in outputs]
    bleu, chrf, bleu_sig, chrf_sig = score_translations(hypotheses, [tgt for _, tgt in pairs])
    return ValidationResult(loss, math.exp(min(loss, 50.0)), bleu, chrf, bleu_sig, chrf_sig,
                            hypotheses)
