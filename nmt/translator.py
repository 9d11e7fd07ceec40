"""The Python API: sentences in, translations with their attention out.

    from nmt import Translator
    t = Translator.from_checkpoint("outputs/.../checkpoints/best.pt", device="cpu")
    t = Translator.pretrained("multi30k-de-en")   # or a model shipped with nmt (nmt.pretrained)
    out = t.translate(["Ein Hund läuft."], beam_size=5)
    out[0].text, out[0].score, out[0].attention   # attention (T, S)
    out[0].plot()      # the heatmap as a matplotlib Figure; in Jupyter, `out[0]` alone shows it

    # several checkpoints of one vocabulary, decoded as an ensemble
    t = Translator.from_checkpoints(["run1/checkpoints/best.pt", "run2/checkpoints/best.pt"])
"""

import numbers
import os

import numpy as np
import torch
from omegaconf import OmegaConf
from torch.overrides import TorchFunctionMode

from nmt.core.special_tokens import BOS_ID as BOS, EOS_ID as EOS, PAD_ID as PAD
from nmt.data.tokenizer import Tokenizer
from nmt.core.beam_search import beam_search
from nmt.decoding.beam_tree import BeamRecorder
from nmt.decoding.ensemble import Ensemble
from nmt.core.greedy_search import greedy_search
from nmt.decoding.interface import (Translation, check_coverage_penalty, check_search as _check_search, check_text,
                                    check_sentences as _check_sentences)
from nmt.decoding.limits import MAX_LEN_EXTRA, MAX_LEN_RATIO, check_search_limits, decode_step_cap, longest_output
from nmt.speedups.decode_cache import use_kept_cache
from nmt.speedups.decode_kernels import check_kernels, use_fast_kernels
from nmt.decoding.search_bounds import check_beam, check_beam_width, check_nbest
from nmt.base.errors import NmtError, with_article
from nmt.base.memory_sizes import allocation_bytes, human_bytes
from nmt.models.build import build_model
from nmt.store.checkpoints import check_same_vocabulary, load_checkpoint
from nmt.base.device import resolve_device


class RandomInitSkipped(TorchFunctionMode):
    """While a model is built to receive a checkpoint's weights, nn.init's random
    draws (and a tensor's own `uniform_` and `normal_`) leave their tensor as it
    is: a strict load_state_dict then writes every parameter and buffer, so the
    draws (a tenth of a second for a Transformer of 12 million parameters)
    would be thrown away. Every other operation runs as usual."""

    DRAWS = frozenset({"uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
                       "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_"})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", None) in self.DRAWS:
            tensor = args[0] if args else kwargs.get("tensor")
            if isinstance(tensor, torch.Tensor):
                return tensor
        return func(*args, **kwargs)


def length_limits(config) -> dict:
    """The longest source and output a model built from `config` can take:
    data.max_len, and a learned position table's size where there is one."""
    max_src_len = int(config.data.max_len)
    table = config.model.positional.get("max_len") if config.model.positional.get("kind") == "learned" else None
    if table:
        max_src_len = min(max_src_len, int(table))
    return {"max_src_len": max_src_len, "max_tgt_len": int(table) if table else None}


OPTIONS = ("max_len_ratio", "max_len_extra", "kernels")      # what from_checkpoint(s) pass on to Translator


def check_load_args(path, device, options: dict) -> None:
    """from_checkpoint's arguments, each checked: NmtError naming the first that is wrong."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise NmtError(f"the checkpoint must be a path (str or pathlib.Path), not {type(path).__name__} "
                       f"{path!r:.40}")
    if not isinstance(device, (str, torch.device)):
        raise NmtError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', not {type(device).__name__} "
                       f"{device!r:.40}")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise NmtError(f"{unknown[0]}= is not an option of a Translator; it takes {', '.join(OPTIONS)}")


def check_recorder(recorder, pruned=None) -> None:
    """A beam recorder (nmt.decoding.beam_tree.BeamRecorder) or None; pruned None or a count."""
    if recorder is not None and not all(callable(getattr(recorder, m, None)) for m in ("start", "step", "finish")):
        raise NmtError(f"recorder must be {with_article('nmt.decoding.beam_tree.BeamRecorder')} or None, not "
                       f"{type(recorder).__name__}")
    if pruned is not None and (isinstance(pruned, bool) or not isinstance(pruned, numbers.Integral) or pruned < 0):
        raise NmtError(f"pruned={pruned!r:.40} must be None or a whole number >= 0 (pruned hypotheses kept a step)")


def checked_model(state: dict, tokenizer: Tokenizer, path, kept_cache: bool = False):
    """(model, its length limits) of a loaded checkpoint `state` (written to `path`): the
    model its stored config describes, with its weights loaded strictly (every parameter
    and buffer written, each of its shape). Weights that do not fit the config, or a model
    too big to build, are one NmtError naming `path`. `kept_cache`: the step's cache written
    in place (decode_cache.py). What every route that opens a checkpoint to use its
    weights checks them with: translation (the API, the commands) and nmt.average's result."""
    try:
        config = OmegaConf.create(state["config"])
        limits = length_limits(config)
        with RandomInitSkipped():
            model = build_model(config.model, tokenizer.src_vocab_size, tokenizer.tgt_vocab_size)
        model.load_state_dict(state["model"])        # strict: every parameter and buffer written
        if kept_cache:
            use_kept_cache(model)   # its step's cache written in place, the same floats (decode_cache.py)
    except (RuntimeError, KeyError, AttributeError, TypeError, ValueError) as error:
        size = allocation_bytes(error)
        if size is not None:           # the allocator's own text, never raw
            raise NmtError(f"checkpoint {path}: its model needs a block of {human_bytes(size)} of memory "
                           "to be built, more than this machine could give; use a machine with more memory "
                           "or a smaller model") from None
        first = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise NmtError(f"checkpoint {path}: its model weights do not fit its config ({first}); "
                       "it was written by another version of nmt or edited; use another "
                       "checkpoint") from None
    return model, limits


class Translator:
    """Greedy or beam search over a trained model; the CLI is a thin layer over it."""

    def __init__(self, model, tokenizer: Tokenizer, device: torch.device, max_src_len: int = 256,
                 max_len_ratio: float = MAX_LEN_RATIO, max_len_extra: int = MAX_LEN_EXTRA,
                 max_tgt_len: int | None = None, kernels: str = "torch"):
        """`kernels`: "torch" (torch's own, the default; a model loaded by
        from_checkpoint also keeps its step's cache in place, the same floats,
        nmt.speedups.decode_cache), "plain" (the core's step alone, nothing
        replaced) or "fast" (on a CPU, oneDNN's products and a decoder step's
        attention written out: faster, the floats differing in the last bits;
        nmt.speedups.decode_kernels)."""
        check_kernels(kernels, torch.device(device))
        if isinstance(max_src_len, numbers.Integral) and not isinstance(max_src_len, bool) and max_src_len > 0:
            max_tgt_len = decode_step_cap(max_src_len, max_tgt_len)      # every decoder has a step cap
        check_search_limits(max_src_len, max_len_ratio, max_len_extra, max_tgt_len)   # before any decoding
        self.model = model.to(device).eval()
        if kernels == "fast":
            use_fast_kernels(self.model)
        self.kernels = kernels
        self.tokenizer, self.device = tokenizer, device
        self.max_src_len, self.max_tgt_len = max_src_len, max_tgt_len
        self.max_len_ratio, self.max_len_extra = max_len_ratio, max_len_extra
        self.members: list[Translator] = [self]   # the single models of an ensemble

    @classmethod
    def from_checkpoint(cls, path, device: str = "auto", **options) -> "Translator":
        check_load_args(path, device, options)
        state = load_checkpoint(path, parts=("model",))
        tokenizer = Tokenizer.from_bytes(state["tokenizer"])
        model, limits = checked_model(state, tokenizer, path, kept_cache=options.get("kernels", "torch") != "plain")
        return cls(model, tokenizer, resolve_device(device, "device"), **limits, **options)

    @classmethod
    def pretrained(cls, name: str, device: str = "auto", **options) -> "Translator":
        """A model shipped with nmt, by name (nmt.pretrained.names(): "multi30k-de-en");
        its file is checked as any checkpoint is. An unknown name: NmtError listing the names."""
        from nmt.pretrained import checkpoint_path

        return cls.from_checkpoint(checkpoint_path(name), device=device, **options)

    @classmethod
    def from_checkpoints(cls, paths, device: str = "auto", **options) -> "Translator":
        """One checkpoint: as from_checkpoint. Several: an ensemble that averages
        their next-token probabilities (nmt.decoding.ensemble); they must share
        one sentencepiece vocabulary."""
        if isinstance(paths, (str, bytes, os.PathLike)) or not hasattr(paths, "__iter__"):
            raise NmtError(f"give a list of checkpoint paths, not {type(paths).__name__} {paths!r:.40} "
                           "(one checkpoint: from_checkpoint)")
        paths = list(paths)
        if not paths:
            raise NmtError("give at least one checkpoint")
        members = [cls.from_checkpoint(path, device=device, **options) for path in paths]
        if len(members) == 1:
            return members[0]
        first = members[0].tokenizer.to_bytes()
        for path, member in zip(paths[1:], members[1:]):
            check_same_vocabulary(paths[0], first, path, member.tokenizer.to_bytes(), "an ensemble")
        tables = [m.max_tgt_len for m in members if m.max_tgt_len]
        ensemble = cls(Ensemble([m.model for m in members]), members[0].tokenizer, members[0].device,
                       max_src_len=min(m.max_src_len for m in members),
                       max_tgt_len=min(tables) if tables else None, **options)
        for member in members:         # each re-reads exactly the source the ensemble saw
            member.max_src_len = ensemble.max_src_len
        ensemble.members = members
        return ensemble

    def _encode(self, texts: list[str]):
        """texts -> src (B, S) tensor, pieces per sentence, truncation flags."""
        ids, truncated = [], []
        for text in texts:
            try:
                seq = self.tokenizer.encode_src(text)
            except (RuntimeError, TypeError, ValueError) as error:   # what check_text did not foresee
                raise NmtError(f"sentencepiece cannot encode {text[:40]!r}: "
                               f"{str(error).splitlines()[0][:120]}") from None
            truncated.append(len(seq) > self.max_src_len)
            ids.append(seq[: self.max_src_len] or [self.tokenizer.unk_id])
        width = max(len(s) for s in ids)
        src = torch.full((len(ids), width), PAD, dtype=torch.long)
        for i, seq in enumerate(ids):
            src[i, : len(seq)] = torch.tensor(seq)
        return src.to(self.device), ids, truncated

    def _prefix_ids(self, prefix: str | None) -> list[int] | None:
        """The forced prefix's target subword ids (None: no prefix)."""
        if prefix is not None:
            check_text(prefix, "the prefix")          # 123 or b"..": one line, not AttributeError
        if prefix is None or not prefix.strip():
            return None
        return self.tokenizer.encode_tgt(prefix.strip())

    def _check_prefix_fits(self, forced: list[int] | None, ids: list[list[int]]) -> None:
        """NmtError when a sentence's length limit is shorter than the prefix."""
        if not forced:
            return
        for seq in ids:
            longest = longest_output(len(seq), self.max_len_ratio, self.max_len_extra, self.max_tgt_len)
            if len(forced) > longest:
                raise NmtError(f"the prefix has {len(forced)} subwords but an output for a source of {len(seq)} "
                               f"subwords may have at most {longest} (max_len_ratio {self.max_len_ratio:g} x "
                               f"{len(seq)} + max_len_extra {self.max_len_extra} - 1); shorten the prefix or "
                               "raise --max-length-extra")

    def _check_batches(self, encoded, forced, beam_size: int, nbest: int) -> None:
        """NmtError when the prefix outgrows a sentence's limit or the beam one batch's memory."""
        for _, ids, _ in encoded:
            self._check_prefix_fits(forced, ids)
        check_beam(beam_size, nbest, self.tokenizer.tgt_vocab_size, [
            (len(ids), src.size(1), longest_output(src.size(1), self.max_len_ratio, self.max_len_extra,
                                                   self.max_tgt_len) + 1) for src, ids, _ in encoded], self.device)

    def record_beam(self, text: str, beam_size: int, pruned: int | None = None, **options):
        """Translate one sentence with a beam, recording its search ->
        (Translation, BeamRecorder: every hypothesis kept, `pruned` of those
        pruned at each step, the finals); the translation is translate()'s."""
        check_recorder(None, pruned)
        recorder = BeamRecorder(pruned=pruned)
        out = self.translate([text], beam_size=beam_size, nbest=beam_size, recorder=recorder, **options)[0]
        return out, recorder

    @torch.inference_mode()   # as no_grad, without version counters: the same floats, less per-op work
    def translate(self, sentences: list[str], beam_size: int = 1, nbest: int = 1,
                  batch_size: int = 64, length_penalty: float = 1.0,
                  min_length: int = 0, coverage_penalty: float = 0.0, prefix: str | None = None,
                  recorder=None) -> list[Translation]:
        """One Translation per sentence, in order; an empty line gives an empty one.
        `min_length`: no output ends before that many subwords (unless its
        length limit, from max_len_ratio and max_len_extra, comes first).
        `coverage_penalty`: Wu et al.'s beta (nmt.core.penalties.coverage_penalty),
        0 = off; it re-ranks a beam's hypotheses, so it needs beam_size > 1.
        `prefix`: every output starts with this text (its subwords forced at
        their own log-probabilities, included in the score), then the search
        goes on: what would the model say after it? `recorder`: a
        nmt.decoding.beam_tree.BeamRecorder told what the beam search
        considered (beam_size > 1); the translations are the same without it."""
        sentences = _check_sentences(sentences)
        _check_search(beam_size, nbest, batch_size, min_length, length_penalty)
        check_search_limits(self.max_src_len, self.max_len_ratio, self.max_len_extra, self.max_tgt_len,
                            min_length)
        check_nbest(beam_size, nbest)
        check_beam_width(beam_size, self.tokenizer.tgt_vocab_size)
        check_coverage_penalty(coverage_penalty, beam_size)
        check_recorder(recorder)
        forced = self._prefix_ids(prefix)
        results: list[Translation | None] = [None] * len(sentences)
        order = sorted((i for i, s in enumerate(sentences) if s.strip()),
                       key=lambda i: len(sentences[i]))
        for i, s in enumerate(sentences):
            if not s.strip():
                results[i] = Translation("", 0.0, [], [], np.zeros((0, 0), dtype=np.float32))
        chunks = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
        encoded = [self._encode([sentences[i] for i in chunk]) for chunk in chunks]
        self._check_batches(encoded, forced, beam_size, nbest)      # every bound before any decoding
        for chunk, (src, ids, truncated) in zip(chunks, encoded):
            if beam_size == 1:
                hyps = [[h] for h in greedy_search(self.model, src, BOS, EOS, self.max_len_ratio,
                                                   self.max_len_extra, self.max_tgt_len, min_length,
                                                   never=(PAD, BOS), prefix=forced)]
            else:
                hyps = beam_search(self.model, src, BOS, EOS, beam_size, nbest, length_penalty,
                                   self.max_len_ratio, self.max_len_extra, self.max_tgt_len, min_length,
                                   never=(PAD, BOS), beta=coverage_penalty, prefix=forced,
                                   recorder=recorder)
            for j, index in enumerate(chunk):
                best = hyps[j][0]
                results[index] = Translation(
                    text=self.tokenizer.decode_tgt(best.tokens),
                    score=best.score,
                    src_pieces=self.tokenizer.src_pieces(ids[j]),
                    tgt_pieces=self.tokenizer.tgt_pieces(best.tokens) + ["</s>"],
                    attention=best.attention.numpy(),
                    nbest=[(self.tokenizer.decode_tgt(h.tokens), h.score) for h in hyps[j]],
                    truncated=truncated[j],
                    tokens=list(best.tokens),
                    forced=len(forced or []),
                )
        return results
