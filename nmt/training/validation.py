"""Validation: loss and perplexity by teacher forcing, BLEU and chrF on
detokenised output (sacreBLEU, with its signatures)."""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from nmt.base.device import to_device
from nmt.base.scoring import score_translations


def token_nll(logits: Tensor, labels: Tensor, pad_id: int) -> Tensor:
    """logits (B, T, V), labels (B, T) -> -log p of each label (B, T), 0 on padding."""
    B, T, V = logits.shape
    loss = F.cross_entropy(logits.reshape(B * T, V).float(), labels.reshape(B * T),
                           ignore_index=pad_id, reduction="none")
    return loss.view(B, T)


@dataclass
class ValidationResult:
    loss: float
    perplexity: float
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    hypotheses: list[str]


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


@dataclass
class ValidationSet:
    """What every validation of a run scores: the raw pairs (BLEU and chrF on
    their detokenised text), their batches (loss), the first few for the
    TensorBoard heatmaps, and the search that translates them."""
    pairs: list[tuple[str, str]]
    batches: list
    heatmap_pairs: list[tuple[str, str]]
    beam_size: int = 1
    coverage_penalty: float = 0.0

    def score(self, model, translator, device) -> ValidationResult:
        return validate(model, translator, self.batches, self.pairs, device, self.beam_size,
                        self.coverage_penalty)
