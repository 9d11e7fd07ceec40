"""What the study measures on one trained run, from its best checkpoint.

    test BLEU, chrF     sacreBLEU on the test set, greedy (or --beam-size)
    sentences/s         test decoding speed, batch 64, this machine
    updates to target   the first validation step whose BLEU reached the
                        target (toy: 95), from metrics.jsonl; None if never
    entropy             mean over target tokens of -sum_j a_j ln a_j (nats)
                        of the attention while the model reads the reference
                        (teacher forcing)
    AER                 alignment error rate (nmt_study.alignment) of that
                        attention against reference word links: the toy
                        task's true alignment, or an aligner's links for
                        real data (silver links); none without links.
                        Transformers: the shown attention (last layer,
                        mean of heads), every layer and head, each layer's
                        mean of heads, and the mean of all layers and heads.
"""

import json
import time
from pathlib import Path

import numpy as np
import torch

from nmt import Translator, load_checkpoint, read_metrics, score_translations
from nmt_study.alignment import AerCounts, attention_word_links, word_index, words_match

BOS, EOS, PAD = 2, 3, 0


def entropy(weights: np.ndarray) -> np.ndarray:
    """weights (T, S), rows summing to 1 -> entropy of each row in nats (T,)."""
    w = np.clip(np.asarray(weights, dtype=np.float64), 0.0, None)
    logs = np.log(np.where(w > 0, w, 1.0))
    return -(w * logs).sum(axis=1)


def steps_to_target(records: list[dict], target: float, key: str = "bleu") -> int | None:
    """The first validation step whose `key` reached `target`; None if none did."""
    for record in records:
        if record.get(key) is not None and record[key] >= target:
            return int(record["step"])
    return None


@torch.no_grad()
def forced_attention(translator: Translator, pairs: list[tuple[str, str]], batch_size: int = 64):
    """Per pair, while the model reads the reference (teacher forcing):
    (weights (T+1, S), layers (L, H, T+1, S) or None, source pieces, target
    pieces). Row t is the attention that predicts target piece t; row T
    predicts </s>."""
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
        weights = result.weights.float().cpu().numpy()                         # (B, T+1, S)
        layers = None if result.layers is None else result.layers.float().cpu().numpy()  # (B, L, H, T+1, S)
        for i, (s, t) in enumerate(zip(srcs, tgts)):
            heads = None if layers is None else layers[i, :, :, : len(t) + 1, : len(s)]
            out.append((weights[i, : len(t) + 1, : len(s)], heads, tok.src_pieces(s), tok.tgt_pieces(t)))
    return out


class Readings:
    """AerCounts of every way the study reads an alignment from one model's
    attention, summed over a split: the attention shown (RNN: its attention;
    Transformer: last layer, mean of heads), and for Transformers each head,
    each layer's mean of heads and the mean of all; each of them directly
    and one step later (Shift-Att, nmt_study.alignment.shifted_rows)."""

    def __init__(self):
        self.counts: dict[str, AerCounts] = {}
        self.grids: dict[str, list[list[AerCounts]]] = {}
        self.target_words = self.unlinked_target_words = self.skipped = 0

    def add(self, key: str, weights, src_pieces, tgt_pieces, sure) -> None:
        links = attention_word_links(weights, src_pieces, tgt_pieces)
        self.counts.setdefault(key, AerCounts()).__iadd__(AerCounts.of(links, sure))

    def add_sentence(self, weights, layers, src_pieces, tgt_pieces, sure) -> None:
        """weights (T+1, S), layers (L, H, T+1, S) or None, the pair's reference links."""
        n_tgt = len(tgt_pieces) and word_index(tgt_pieces)[-1] + 1
        self.target_words += n_tgt
        self.unlinked_target_words += n_tgt - len({t for _, t in sure})
        for shift, rows in (("", slice(0, -1)), ("shift_", slice(1, None))):
            self.add(shift + "shown", weights[rows], src_pieces, tgt_pieces, sure)
            if layers is None:
                continue
            L, H = layers.shape[:2]
            grid = self.grids.setdefault(shift + "heads", [[AerCounts() for _ in range(H)] for _ in range(L)])
            for layer in range(L):
                for head in range(H):
                    grid[layer][head] += AerCounts.of(
                        attention_word_links(layers[layer, head, rows], src_pieces, tgt_pieces), sure)
                self.add(f"{shift}layer{layer}_mean", layers[layer, :, rows].mean(axis=0), src_pieces,
                         tgt_pieces, sure)
            self.add(shift + "all_mean", layers[:, :, rows].mean(axis=(0, 1)), src_pieces, tgt_pieces, sure)

    def to_dict(self) -> dict:
        return {"counts": {k: c.to_list() for k, c in self.counts.items()},
                "grids": {k: [[c.to_list() for c in row] for row in g] for k, g in self.grids.items()},
                "target_words": self.target_words, "unlinked_target_words": self.unlinked_target_words,
                "skipped": self.skipped, "fields": ["predicted", "sure", "hit_sure", "hit_possible",
                                                    "predicted_linked"]}


def read_alignments(translator: Translator, pairs: list[tuple[str, str]],
                    references: list[set | None]) -> tuple[Readings, list[np.ndarray]]:
    """Every reading of `pairs` against their reference word links, and each
    pair's per-row attention entropy. Pairs whose pieces do not split into
    their whitespace words are skipped (counted)."""
    readings, entropies = Readings(), []
    for k, (weights, layers, src_pieces, tgt_pieces) in enumerate(forced_attention(translator, pairs)):
        if weights.shape[0] <= 1 or weights.shape[1] == 0:
            continue
        entropies.append(entropy(weights[:-1]))
        sure = references[k] if references is not None else None
        if sure is None:
            continue
        src, tgt = pairs[k]
        if not (words_match(src_pieces, src) and words_match(tgt_pieces, tgt)):
            readings.skipped += 1
            continue
        readings.add_sentence(weights, layers, src_pieces, tgt_pieces, sure)
    return readings, entropies


def alignment_figures(translator: Translator, pairs: list[tuple[str, str]],
                      references: list[set | None] | None,
                      valid: tuple[list[tuple[str, str]], list[set]] | None = None) -> dict:
    """Mean attention entropy and, where `references` gives a pair's word
    links (source word, target word), the corpus AER of the attention, and
    the counts of every reading (`alignment.test`; `alignment.valid` for the
    validation pairs and links in `valid`, to choose a layer and head on)."""
    readings, entropies = read_alignments(translator, pairs, references)
    shown = readings.counts.get("shown", AerCounts())
    result = {"entropy": float(np.concatenate(entropies).mean()) if entropies else float("nan"),
              "aer": shown.aer if shown.sure else None, "aer_links": shown.sure,
              "aer_skipped": readings.skipped}
    if references is not None:
        result["alignment"] = {"test": readings.to_dict()}
        if valid is not None:
            result["alignment"]["valid"] = read_alignments(translator, *valid)[0].to_dict()
    heads = readings.grids.get("heads")
    if heads:
        grid = [[h.aer for h in row] for row in heads]
        best = min(((layer, head) for layer in range(len(grid)) for head in range(len(grid[0]))),
                   key=lambda lh: grid[lh[0]][lh[1]])
        layers = len(grid)
        result.update({"aer_heads": grid,
                       "aer_layer_mean": [readings.counts[f"layer{i}_mean"].aer for i in range(layers)],
                       "aer_all_heads_mean": readings.counts["all_mean"].aer,
                       "aer_best_head": grid[best[0]][best[1]], "best_head": list(best)})
    return result


def best_record(records: list[dict], step: int) -> dict:
    """The metrics.jsonl line of the validation at `step` (the checkpoint's)."""
    for record in records:
        if record["step"] == step:
            return record
    return records[-1] if records else {}


def gallery_rows(outputs) -> list[dict]:
    """Translations -> what a gallery panel needs, weights to 3 decimals."""
    return [{"src_pieces": o.src_pieces, "tgt_pieces": o.tgt_pieces, "text": o.text,
             "attention": np.round(np.asarray(o.attention, dtype=float), 3).tolist()} for o in outputs]


def evaluate_run(run_dir: Path, test_pairs: list[tuple[str, str]], references: list[set | None] | None,
                 beam_size: int = 1, target_bleu: float | None = None,
                 gallery: list[str] = (), coverage_penalty: float = 0.0,
                 valid: tuple[list[tuple[str, str]], list[set]] | None = None) -> dict:
    """Everything the report shows for one run (and its test hypotheses, for
    the paired bootstrap, and its gallery panels). The test set is decoded
    with `beam_size` and Wu et al.'s `coverage_penalty` (beam search only);
    the gallery is greedy."""
    run_dir = Path(run_dir)
    checkpoint = run_dir / "checkpoints" / "best.pt"
    step = int(load_checkpoint(checkpoint, parts=("model",))["progress"]["step"])
    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    summary = json.loads((run_dir / "summary.json").read_text())
    records = read_metrics(run_dir)
    record = best_record(records, step)

    sources, references_text = [s for s, _ in test_pairs], [t for _, t in test_pairs]
    started = time.perf_counter()
    outputs = translator.translate(sources, beam_size=beam_size, coverage_penalty=coverage_penalty)
    decode_seconds = time.perf_counter() - started
    hypotheses = [o.text for o in outputs]
    bleu, chrf, bleu_sig, chrf_sig = score_translations(hypotheses, references_text)

    result = {"parameters": summary["parameters"], "test_bleu": bleu, "test_chrf": chrf,
              "bleu_signature": bleu_sig, "chrf_signature": chrf_sig,
              "valid_perplexity": record.get("perplexity", summary["perplexity"]),
              "valid_bleu": record.get("bleu", summary["bleu"]),
              "last_valid_bleu": records[-1]["bleu"] if records else None,
              "tokens_per_s": summary["tokens_per_s"], "sentences_per_s": len(sources) / decode_seconds,
              "best_step": step, "final_step": summary["step"], "stopped_by": summary.get("stopped_by"),
              "wall_s": summary["wall_s"],
              "train_seconds": summary["train_seconds"], "test_sentences": len(sources),
              "beam_size": beam_size, "coverage_penalty": coverage_penalty, "target_bleu": target_bleu,
              "steps_to_target": steps_to_target(records, target_bleu) if target_bleu else None}
    result.update(alignment_figures(translator, test_pairs, references, valid))
    panels = gallery_rows(translator.translate(list(gallery))) if gallery else []
    return {"eval": result, "hypotheses": hypotheses, "gallery": panels,
            "records": [{k: r.get(k) for k in ("step", "bleu", "chrf", "loss", "perplexity",
                                               "train_seconds")} for r in records]}


def evaluate_confirmation(run_dir: Path, pairs: list[tuple[str, str]], references: list[set] | None,
                          beam_size: int = 1, coverage_penalty: float = 0.0,
                          name: str = "test_2017_flickr") -> dict:
    """The best checkpoint of `run_dir` on the confirmation set: {"set", "eval", "hypotheses"},
    "eval" with the same keys as the test set's (test_bleu, test_chrf, aer, entropy, ...)."""
    translator = Translator.from_checkpoint(Path(run_dir) / "checkpoints" / "best.pt", device="cpu")
    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    hypotheses = [o.text for o in translator.translate(sources, beam_size=beam_size,
                                                       coverage_penalty=coverage_penalty)]
    bleu, chrf, bleu_sig, chrf_sig = score_translations(hypotheses, targets)
    result = {"test_bleu": bleu, "test_chrf": chrf, "bleu_signature": bleu_sig, "chrf_signature": chrf_sig,
              "test_sentences": len(sources), "beam_size": beam_size, "coverage_penalty": coverage_penalty}
    result.update(alignment_figures(translator, pairs, references))
    return {"set": name, "eval": result, "hypotheses": hypotheses}
