"""What the study measures on one trained run, from its best checkpoint.

    test BLEU, chrF     sacreBLEU on the test set, greedy (or --beam-size)
    sentences/s         test decoding speed, batch 64, this machine
    entropy             mean over target tokens of -sum_j a_j ln a_j (nats)
                        of the attention while the model reads the reference
                        (teacher forcing)
    peak agreement      share of reference target tokens whose attention peak
                        (argmax over source subwords) lies on the source position
                        the reference alignment points to:
                          real data: the monotone diagonal, target subword t of T
                                     (from 0) -> source subword round(t * S / T)
                          toy task:  the true word alignment (nmt.data.toy.toy_alignment)
"""

import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from nmt.data.toy import toy_alignment
from nmt.training.checkpoints import load_checkpoint
from nmt.training.validation import score_translations
from nmt.translator import Translator

BOS, EOS, PAD = 2, 3, 0
WORD_START = "\u2581"   # sentencepiece's word boundary mark


def entropy(weights: np.ndarray) -> np.ndarray:
    """weights (T, S), rows summing to 1 -> entropy of each row in nats (T,)."""
    w = np.clip(np.asarray(weights, dtype=np.float64), 0.0, None)
    logs = np.log(np.where(w > 0, w, 1.0))
    return -(w * logs).sum(axis=1)


def diagonal_reference(T: int, S: int) -> list[int]:
    """The monotone diagonal: target t (from 0) of T -> source round(t * S / T), halves up."""
    return [min(S - 1, int(math.floor(t * S / T + 0.5))) for t in range(T)]


def word_index(pieces: list[str]) -> list[int]:
    """Sentencepiece pieces -> the word each belongs to (a piece with the mark starts one)."""
    index, word = [], -1
    for i, piece in enumerate(pieces):
        if piece.startswith(WORD_START) or i == 0:
            word += 1
        index.append(word)
    return index


def toy_reference(src_pieces: list[str], tgt_pieces: list[str], src: str, tgt: str) -> list[int] | None:
    """For each target piece, the source word its target word comes from, as a
    set of source piece positions' word index; None where the pieces don't
    split into the sentence's words."""
    src_words, tgt_words = word_index(src_pieces), word_index(tgt_pieces)
    if not src_words or src_words[-1] != len(src.split()) - 1 or tgt_words[-1] != len(tgt.split()) - 1:
        return None
    align = toy_alignment(src, tgt)
    return [align[w] for w in tgt_words]


def peak_hits(weights: np.ndarray, reference: list[int], src_words: list[int] | None = None) -> int:
    """How many rows of weights (T, S) peak on their reference position; with
    src_words the peak's source word is compared with the reference word."""
    peaks = np.asarray(weights).argmax(axis=1)
    if src_words is not None:
        peaks = np.asarray(src_words)[peaks]
    return int((peaks == np.asarray(reference)).sum())


@torch.no_grad()
def forced_attention(translator: Translator, pairs: list[tuple[str, str]], batch_size: int = 64):
    """Attention (T, S) of each pair while the model reads the reference
    (teacher forcing; the row that predicts </s> left out), with pieces."""
    tok, model, device = translator.tokenizer, translator.model, translator.device
    model.eval()
    out = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        srcs = [tok.encode_src(s)[: translator.max_src_len] or [tok.unk_id] for s, _ in chunk]
        tgts = [tok.encode_tgt(t) for _, t in chunk]
        if translator.max_tgt_len:
            tgts = [t[: translator.max_tgt_len - 1] for t in tgts]
        src = torch.full((len(chunk), max(map(len, srcs))), PAD, dtype=torch.long)
        tgt_in = torch.full((len(chunk), max(map(len, tgts)) + 1), PAD, dtype=torch.long)
        for i, (s, t) in enumerate(zip(srcs, tgts)):
            src[i, : len(s)] = torch.tensor(s)
            tgt_in[i, : len(t) + 1] = torch.tensor([BOS] + t)
        result, _ = model(src.to(device), tgt_in.to(device), need_weights=True)
        weights = result.weights.float().cpu().numpy()                  # (B, T+1, S)
        for i, (s, t) in enumerate(zip(srcs, tgts)):
            out.append((weights[i, : len(t), : len(s)], tok.src_pieces(s), tok.tgt_pieces(t)))
    return out


def alignment_figures(translator: Translator, pairs: list[tuple[str, str]], toy: bool) -> dict:
    """Mean attention entropy and peak agreement over the target tokens of `pairs`."""
    entropies, hits, total, skipped = [], 0, 0, 0
    for (src, tgt), (weights, src_pieces, tgt_pieces) in zip(pairs, forced_attention(translator, pairs)):
        T, S = weights.shape
        if T == 0 or S == 0:
            continue
        entropies.append(entropy(weights))
        if toy:
            reference = toy_reference(src_pieces, tgt_pieces, src, tgt)
            if reference is None:
                skipped += 1
                continue
            hits += peak_hits(weights, reference, word_index(src_pieces))
        else:
            hits += peak_hits(weights, diagonal_reference(T, S))
        total += T
    return {"entropy": float(np.concatenate(entropies).mean()) if entropies else float("nan"),
            "peak_agreement": hits / total if total else float("nan"),
            "alignment_reference": "toy_alignment" if toy else "diagonal",
            "alignment_tokens": total, "alignment_skipped": skipped}


def best_record(run_dir: Path, step: int) -> dict:
    """The metrics.jsonl line of the validation at `step` (the checkpoint's)."""
    records = read_metrics(run_dir)
    for record in records:
        if record["step"] == step:
            return record
    return records[-1] if records else {}


def read_metrics(run_dir: Path) -> list[dict]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def evaluate_run(run_dir: Path, test_pairs: list[tuple[str, str]], toy: bool, beam_size: int = 1) -> dict:
    """Everything the report shows for one run; written to study_eval.json."""
    run_dir = Path(run_dir)
    checkpoint = run_dir / "checkpoints" / "best.pt"
    step = int(load_checkpoint(checkpoint)["progress"]["step"])
    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    summary = json.loads((run_dir / "summary.json").read_text())
    record = best_record(run_dir, step)

    sources, references = [s for s, _ in test_pairs], [t for _, t in test_pairs]
    started = time.perf_counter()
    outputs = translator.translate(sources, beam_size=beam_size)
    decode_seconds = time.perf_counter() - started
    bleu, chrf, bleu_sig, chrf_sig = score_translations([o.text for o in outputs], references)

    result = {"parameters": summary["parameters"], "test_bleu": bleu, "test_chrf": chrf,
              "bleu_signature": bleu_sig, "chrf_signature": chrf_sig,
              "valid_perplexity": record.get("perplexity", summary["perplexity"]),
              "valid_bleu": record.get("bleu", summary["bleu"]),
              "tokens_per_s": summary["tokens_per_s"], "sentences_per_s": len(sources) / decode_seconds,
              "best_step": step, "final_step": summary["step"], "wall_s": summary["wall_s"],
              "train_seconds": summary["train_seconds"], "test_sentences": len(sources),
              "beam_size": beam_size}
    result.update(alignment_figures(translator, test_pairs, toy))
    (run_dir / "study_eval.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
