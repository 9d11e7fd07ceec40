"""nmt.Translator's translate() over a folder written by nmt.export, on CTranslate2.

    t = CTranslate2Translator("m30k_ct2", threads=1)
    out = t.translate(["Ein Hund läuft."], beam_size=5)   # nmt.decoding.interface.Translation each
    out[0].text, out[0].score, out[0].nbest

Input and output are handled as nmt's own Translator handles them: the same
sentencepiece ids, sources cut at the model's max_src_len, outputs of at
most max_len_ratio * source subwords + max_len_extra (eos included), pad and
bos never output, empty lines in, empty lines out.

Search, as CTranslate2 runs it (`translate_batch`):
- greedy (beam_size=1): token for token nmt's greedy search. CTranslate2
  takes one length limit per batch, the batch's longest; an output past its
  own sentence's limit is cut there, which is what nmt outputs (greedy
  choices do not depend on the limit).
- beam: CTranslate2's beam search, its length penalty off, so that scores
  are sums of log-probabilities; they are then ranked with nmt's own
  s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y) (Wu et al. 2016,
  nmt.decoding.beam) over CTranslate2's beam_size finished hypotheses.
  With alpha = beta = 0 both searches return the best-scoring hypothesis
  they found; they differ in bookkeeping (CTranslate2 replaces a finished
  hypothesis in the beam by the next candidate, nmt keeps it there), so on
  rare sentences they find different ones. A sentence whose output reaches
  its own limit is decoded again alone, with that limit.
- CTranslate2 bars pad and bos before its softmax, nmt after: the same
  tokens win each greedy step, scores differ by log(1 - p(pad) - p(bos)) a
  step, and two beam hypotheses within that of each other can swap places.
Attention (heatmaps, coverage penalty) is the exported layer's
cross-attention, the mean of its heads (or head 0; nmt.deploy.convert).

Nothing here imports torch or nmt's model code: `nmt.translate` on an
exported folder starts in well under a second. The ranking repeats
nmt.decoding.beam's length_penalty and coverage_penalty in numpy, equal
to those within a float32 ulp (tests/test_export.py).
"""

from pathlib import Path

import numpy as np

from nmt.data.tokenizer import Tokenizer
from nmt.decoding.interface import Translation, check_search, check_sentences
from nmt.decoding.search_bounds import check_beam_width
from nmt.deploy import layout, members, require_ctranslate2
from nmt.base.errors import NmtError
from nmt.base.path_names import printable

COVERAGE_FLOOR = np.float32(1e-9)   # as nmt.decoding.beam.COVERAGE_FLOOR


def length_penalty(lengths: np.ndarray, alpha: float) -> np.ndarray:
    """nmt.decoding.beam.length_penalty in numpy: ((5 + |Y|) / 6) ** alpha, |Y| with eos,
    rounded to float32 (torch's float32 power can differ from it by one ulp)."""
    return (((5.0 + lengths.astype(np.float64)) / 6.0) ** alpha).astype(np.float32)


def coverage_penalty(coverage: np.ndarray, beta: float) -> np.ndarray:
    """nmt.decoding.beam.coverage_penalty in float32 numpy, every source token real:
    coverage (N, S) -> beta * sum over i of log(min(coverage_i, 1)), (N,)."""
    capped = np.log(np.clip(coverage.astype(np.float32), COVERAGE_FLOOR, np.float32(1.0)))   # (N, S)
    return np.float32(beta) * capped.sum(-1, dtype=np.float32)


def output_limits(lengths: list[int], ratio: float, extra: int, cap: int | None) -> list[int]:
    """Longest output per sentence, eos included, as nmt.decoding.greedy.max_output_length
    computes it (float32 product, then truncation)."""
    limits = (np.asarray(lengths, dtype=np.float32) * np.float32(ratio)).astype(np.int64) + extra
    return [min(int(x), cap) if cap else int(x) for x in limits]


class CTranslate2Translator:
    """An exported model and its sentencepiece models, ready to translate.

    `device` cpu, cuda or auto; `compute_type` CTranslate2's ("default": the
    type the folder was exported in; "int8" quantizes a float32 export on
    load); `threads` CTranslate2's intra_threads (0: its default).
    """

    def __init__(self, folder, device: str = "cpu", compute_type: str = "default", threads: int = 0,
                 max_len_ratio: float = 1.5, max_len_extra: int = 10):
        ctranslate2 = require_ctranslate2()
        folder = Path(folder)
        metadata = layout.read_metadata(folder)
        files = members.read_export(folder)       # every member checked and read: CTranslate2 opens no path
        self.tokenizer = Tokenizer(files[layout.SOURCE_SPM], files[layout.TARGET_SPM])
        members.check_config(folder, files)
        tok = self.tokenizer
        members.check_vocabularies(
            folder, files, {"src": tok.src_pieces(range(tok.src_vocab_size)),
                            "tgt": tok.tgt_pieces(range(tok.tgt_vocab_size))},
            {shown: tok.tgt_pieces([i])[0] for shown, i in (("<pad>", tok.pad_id), ("<s>", tok.bos_id),
                                                            ("</s>", tok.eos_id), ("<unk>", tok.unk_id))})
        given = {name: data for name, data in files.items() if name not in layout.NMT_FILES}
        try:
            self.engine = ctranslate2.Translator(printable(str(folder)), device=device, compute_type=compute_type,
                                                 intra_threads=threads, files=given)
        except (RuntimeError, ValueError, TypeError) as error:
            raise NmtError(f"CTranslate2 cannot load {folder}: {str(error).splitlines()[0][:200]}") from None
        self.folder, self.metadata = folder, metadata
        self.max_src_len = int(metadata["max_src_len"])
        self.max_tgt_len = metadata["positions"]          # CTranslate2 has no positions past its table
        self.max_len_ratio, self.max_len_extra = max_len_ratio, max_len_extra
        pieces = self.tokenizer.tgt_pieces(range(self.tokenizer.tgt_vocab_size))
        self.target_ids = {piece: i for i, piece in enumerate(pieces)}
        self.eos_piece = pieces[self.tokenizer.eos_id]
        self.never = [[pieces[self.tokenizer.pad_id]], [pieces[self.tokenizer.bos_id]]]   # as nmt's never=(PAD, BOS)
        self.model = None             # no PyTorch model: heatmaps draw what CTranslate2 returned
        self.members = [self]

    def _search(self, sources: list[list[str]], limit: int, beam_size: int, hypotheses: int,
                min_length: int, attention: bool):
        """One translate_batch call; `limit` counts output tokens without eos."""
        limit = max(limit, 1)
        return self.engine.translate_batch(
            sources, beam_size=beam_size, num_hypotheses=hypotheses, length_penalty=0.0,
            max_decoding_length=limit, min_decoding_length=min(min_length, limit), max_input_length=0,
            suppress_sequences=self.never, return_end_token=True, return_scores=True,
            return_attention=attention)

    def _hypotheses(self, result, limit: int, src_len: int):
        """(ids, raw score, attention (T+1, S) or None) per hypothesis, each cut at `limit`."""
        out = []
        attention = result.attention or [None] * len(result.hypotheses)
        for tokens, score, weights in zip(result.hypotheses, result.scores, attention):
            if tokens and tokens[-1] == self.eos_piece:
                tokens = tokens[:-1]
            tokens = tokens[: max(limit - 1, 0)]
            rows = None if weights is None else np.asarray(weights, dtype=np.float32)[: len(tokens) + 1, :src_len]
            out.append(([self.target_ids.get(t, self.tokenizer.unk_id) for t in tokens], float(score), rows))
        return out

    def _rank(self, hyps, alpha: float, beta: float, src_len: int):
        """nmt's beam ranking: log P / lp(|Y| + eos) + cp, best first."""
        if alpha == 0 and beta == 0:
            return hyps
        lengths = np.array([len(ids) + 1 for ids, _, _ in hyps])
        scores = np.array([score for _, score, _ in hyps], dtype=np.float32) / length_penalty(lengths, alpha)
        if beta:
            coverage = np.stack([rows.sum(0) for _, _, rows in hyps])      # (N, S)
            scores = scores + coverage_penalty(coverage, beta)
        order = np.argsort(-scores, kind="stable").tolist()
        return [(hyps[i][0], float(scores[i]), hyps[i][2]) for i in order]

    def translate(self, sentences: list[str], beam_size: int = 1, nbest: int = 1, batch_size: int = 64,
                  length_penalty: float = 1.0, min_length: int = 0, coverage_penalty: float = 0.0,
                  attention: bool = False) -> list[Translation]:
        """One Translation per sentence, in order, as nmt.Translator.translate;
        `attention`: return each output's attention (T+1, S), else (0, S)."""
        sentences = check_sentences(sentences)
        check_search(beam_size, nbest, batch_size, min_length, length_penalty)
        if nbest > beam_size:
            raise NmtError(f"need 1 <= nbest <= beam_size (got nbest={nbest}, beam_size={beam_size})")
        check_beam_width(beam_size, self.tokenizer.tgt_vocab_size)
        if coverage_penalty and beam_size == 1:
            raise NmtError("the coverage penalty re-ranks a beam's hypotheses; use a beam size > 1")
        rerank = beam_size > 1 and (length_penalty != 0 or coverage_penalty != 0)
        hypotheses = beam_size if rerank else nbest
        need_attention = attention or bool(coverage_penalty)
        results: list[Translation | None] = [None] * len(sentences)
        order = sorted((i for i, s in enumerate(sentences) if s.strip()), key=lambda i: len(sentences[i]))
        for i, s in enumerate(sentences):
            if not s.strip():
                results[i] = Translation("", 0.0, [], [], np.zeros((0, 0), dtype=np.float32))
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            ids, truncated = [], []
            for i in chunk:
                seq = self.tokenizer.encode_src(sentences[i])
                truncated.append(len(seq) > self.max_src_len)
                ids.append(seq[: self.max_src_len] or [self.tokenizer.unk_id])
            pieces = [self.tokenizer.src_pieces(seq) for seq in ids]
            limits = output_limits([len(seq) for seq in ids], self.max_len_ratio, self.max_len_extra,
                                   self.max_tgt_len)
            longest = max(limits)
            found = self._search(pieces, longest - 1, beam_size, hypotheses, min_length, need_attention)
            for j, index in enumerate(chunk):
                hyps = self._hypotheses(found[j], limits[j], len(ids[j]))
                if beam_size > 1 and limits[j] < longest and any(len(h[0]) >= limits[j] - 1 for h in hyps):
                    alone = self._search([pieces[j]], limits[j] - 1, beam_size, hypotheses, min_length,
                                         need_attention)[0]     # its own limit, as nmt decodes it
                    hyps = self._hypotheses(alone, limits[j], len(ids[j]))
                hyps = self._rank(hyps, length_penalty if beam_size > 1 else 0.0, coverage_penalty,
                                  len(ids[j]))[:nbest]
                best_ids, best_score, rows = hyps[0]
                results[index] = Translation(
                    text=self.tokenizer.decode_tgt(best_ids),
                    score=best_score,
                    src_pieces=self.tokenizer.src_pieces(ids[j]),
                    tgt_pieces=self.tokenizer.tgt_pieces(best_ids) + ["</s>"],
                    attention=rows if rows is not None else np.zeros((0, len(ids[j])), dtype=np.float32),
                    nbest=[(self.tokenizer.decode_tgt(h[0]), h[1]) for h in hyps],
                    truncated=truncated[j],
                    tokens=list(best_ids),
                )
        return results
