"""Hugging Face encoder-decoder models (Marian opus-mt-* and others) in nmt's views.

    python -m nmt.translate --hf Helsinki-NLP/opus-mt-de-en --beam-size 5 < test.de
    python -m nmt.explore --hf path/to/saved/model

`HFTranslator` opens any `AutoModelForSeq2SeqLM` with its own tokenizer and
answers as nmt's Translator does: Translations with their pieces, score and
attention, so `--plot-attention`, `--attention-html` and the explorer's
views read it. The search is the model's own `generate()` (greedy or beam,
ranked as the library ranks: log P / |Y|^length_penalty); the maps come
from one teacher-forced forward pass over the output with
`output_attentions=True`: cross-attention (L, H, T, S), encoder (L, H, S, S)
and decoder self-attention (L, H, T, T). A hub name needs the network; a
folder written by `save_pretrained` does not. Needs the `hf` extra.
"""

import logging

import numpy as np
import torch

from nmt.decoding.limits import MAX_LEN_EXTRA, MAX_LEN_RATIO, check_search_limits, longest_output
from nmt.decoding.search_bounds import check_beam, check_beam_width
from nmt.base.device import resolve_device
from nmt.base.errors import NmtError
from nmt.hf.loading import load_seq2seq
from nmt.decoding.interface import Translation, check_search, check_sentences, check_text
from nmt.viz.attention_data import _map

logger = logging.getLogger("nmt.hf")


def refuse_coverage_penalty(coverage_penalty: float) -> None:
    """Wu et al.'s coverage penalty re-ranks nmt's own beam only: one NmtError line otherwise."""
    if coverage_penalty:
        raise NmtError("--coverage-penalty re-ranks nmt's own beam; a Hugging Face model is decoded by its "
                       "generate(): leave it out")


class HFTokens:
    """The part of nmt's Tokenizer the explorer asks of a model."""

    def __init__(self, tokenizer, name: str):
        self.tokenizer, self.name = tokenizer, name

    def encode_src(self, text: str) -> list[int]:
        return self.tokenizer(text)["input_ids"]

    def tgt_pieces(self, ids: list[int]) -> list[str]:
        return self.tokenizer.convert_ids_to_tokens(ids)

    def decode_tgt(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def to_bytes(self) -> dict[str, bytes]:     # told apart from nmt's sentencepiece models
        return {"src": f"hf:{self.name}".encode(), "tgt": f"hf:{self.name}".encode()}


class HFTranslator:
    """Greedy or beam search by a Hugging Face model's generate(), with nmt's Translations."""

    ranking = "generate"        # a beam's score is generate()'s: log P of the generated subwords / |Y|^alpha

    def __init__(self, name: str, device: str = "auto", max_len_ratio: float = MAX_LEN_RATIO,
                 max_len_extra: int = MAX_LEN_EXTRA):
        check_search_limits(1, max_len_ratio, max_len_extra)
        self.device = resolve_device(device)
        self.hf_model, self.hf_tokenizer = load_seq2seq(name, self.device)
        self.name = name
        self.model = None                  # not one of nmt's models: attention_data asks the methods below
        self.attention_label = "cross-attention, last layer, mean over heads (Hugging Face)"
        self.members = [self]
        self.tokenizer = HFTokens(self.hf_tokenizer, name)
        config = self.hf_model.config
        self.positions = int(getattr(config, "max_position_embeddings", 512) or 512)   # each side's
        self.max_src_len = int(min(self.positions, getattr(self.hf_tokenizer, "model_max_length", 512) or 512))
        self.vocab_size = int(self.hf_model.get_input_embeddings().num_embeddings)
        self.max_len_ratio, self.max_len_extra = max_len_ratio, max_len_extra
        self.vocab_size = int(getattr(config, "vocab_size", None) or len(self.hf_tokenizer))

    def describe(self) -> str:
        config = self.hf_model.config
        return (f"Hugging Face {type(self.hf_model).__name__} {self.name} "
                f"({config.encoder_layers if hasattr(config, 'encoder_layers') else '?'} + "
                f"{config.decoder_layers if hasattr(config, 'decoder_layers') else '?'} layers, "
                f"{getattr(config, 'decoder_attention_heads', '?')} heads)")

    def max_new_tokens(self, src_len: int) -> int:
        """nmt's length limit: ratio * S + extra tokens, </s> included."""
        return longest_output(src_len, self.max_len_ratio, self.max_len_extra) + 1

    def output_limit(self, src_len: int) -> int:
        """The most output subwords, </s> and a forced prefix included: nmt's
        limit, capped at the decoder's positions less its start token."""
        return min(self.max_new_tokens(src_len), self.positions - 1)

    def check_ids(self, ids: list[int], what: str) -> None:
        """Every limit of the model on `what`'s subword ids, before generation: one NmtError line."""
        if what == "the sentence" and len(ids) > self.max_src_len:
            raise NmtError(f"the sentence has {len(ids)} subwords but this model takes at most "
                           f"{self.max_src_len}; shorten it")
        if ids and max(ids) >= self.vocab_size:
            raise NmtError(f"{what} has subword id {max(ids)} but {self.name}'s embeddings hold "
                           f"{self.vocab_size} ids; its tokenizer and model do not match")

    def generate_args(self, src_len: int, beam_size: int, nbest: int, length_penalty: float,
                      min_length: int, forced: int = 0) -> dict:
        """The keywords nmt passes to generate(): the same search from any
        caller; max_new_tokens counts what follows the `forced` prefix."""
        args = {"max_new_tokens": self.output_limit(src_len) - forced, "num_beams": beam_size, "do_sample": False,
                "num_return_sequences": nbest}
        if beam_size > 1:
            args["length_penalty"] = length_penalty
        if min_length:                        # no further than the limit: generate() stops there anyway
            args["min_new_tokens"] = min(min_length, args["max_new_tokens"])
        return args

    def _prefix_ids(self, prefix: str | None, src_len: int) -> list[int] | None:
        if prefix is not None:
            check_text(prefix, "the prefix")
        if not prefix or not prefix.strip():
            return None
        ids = self.hf_tokenizer(text_target=prefix.strip(), add_special_tokens=False)["input_ids"]
        longest = self.max_new_tokens(src_len) - 1
        if len(ids) > longest:
            raise NmtError(f"the prefix has {len(ids)} subwords but an output for a source of {src_len} subwords "
                           f"may have at most {longest}; shorten the prefix or raise --max-length-extra")
        if len(ids) > self.positions - 2:
            raise NmtError(f"the prefix has {len(ids)} subwords but {self.name}'s decoder has "
                           f"{self.positions} positions (max_position_embeddings): its start token, the prefix "
                           "and </s> must fit; shorten the prefix")
        self.check_ids(ids, "the prefix")
        return ids

    @torch.no_grad()
    def translate(self, sentences, beam_size: int = 1, nbest: int = 1, batch_size: int = 64,
                  length_penalty: float = 1.0, min_length: int = 0, coverage_penalty: float = 0.0,
                  prefix: str | None = None) -> list[Translation]:
        """One Translation per sentence; an empty line gives an empty one."""
        refuse_coverage_penalty(coverage_penalty)
        check_search(beam_size, nbest, batch_size, min_length, length_penalty)
        if not 1 <= nbest <= beam_size:
            raise NmtError(f"need 1 <= nbest <= beam_size (got nbest={nbest}, beam_size={beam_size})")
        check_beam_width(beam_size, self.vocab_size)
        sentences = check_sentences(sentences)
        for number, sentence in enumerate(sentences, 1):        # every line's limits before any search
            if sentence.strip():
                try:
                    self.check_ids(self.tokenizer.encode_src(sentence), "the sentence")
                except NmtError as problem:
                    raise NmtError(f"line {number}: {problem}" if len(sentences) > 1 else str(problem)) from None
        return [self._one(s, beam_size, nbest, length_penalty, min_length, prefix)[0] if s.strip()
                else Translation("", 0.0, [], [], np.zeros((0, 0), dtype=np.float32))
                for s in sentences]

    @torch.no_grad()
    def record_beam(self, text: str, beam_size: int, pruned: int = 3, length_penalty: float = 1.0,
                    coverage_penalty: float = 0.0, min_length: int = 0, prefix: str | None = None):
        """Translate one sentence with generate()'s beam, recording its search ->
        (Translation, HFBeamTree: nodes and finals as nmt's BeamRecorder has
        them); the translation is translate()'s with nbest = beam_size."""
        refuse_coverage_penalty(coverage_penalty)
        check_search(beam_size, beam_size, 1, min_length, length_penalty)
        if beam_size < 2:
            raise NmtError(f"the beam tree needs a beam of 2 or more (got {beam_size})")
        check_beam_width(beam_size, self.vocab_size)
        return self._one(check_sentences([text])[0], beam_size, beam_size, length_penalty, min_length, prefix,
                         pruned=pruned)

    def _one(self, text, beam_size, nbest, length_penalty, min_length, prefix, pruned=None):
        """(Translation, the search's tree when `pruned` is not None, else None)."""
        enc = self.hf_tokenizer([text], return_tensors="pt")          # no truncation: check_ids refuses
        self.check_ids(enc["input_ids"][0].tolist(), "the sentence")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        S = enc["input_ids"].shape[1]
        forced = self._prefix_ids(prefix, S)
        args = self.generate_args(S, beam_size, nbest, length_penalty, min_length, len(forced or []))
        check_beam(beam_size, nbest, self.vocab_size, [(1, S, args["max_new_tokens"])], self.device)
        if forced:
            start = self.hf_model.config.decoder_start_token_id
            args["decoder_input_ids"] = torch.tensor([[start] + forced], device=self.device)
        log = None
        if pruned is not None:
            from transformers import LogitsProcessorList

            from nmt.hf.beam_tree import StepLog

            log = StepLog()
            args.update(logits_processor=LogitsProcessorList([log]), output_attentions=True)
        out = self.hf_model.generate(**enc, **args, output_scores=True, return_dict_in_generate=True)
        hyps = [self._tokens(seq) for seq in out.sequences.tolist()]
        if self.output_limit(S) < self.max_new_tokens(S) and len(hyps[0]) + 1 >= self.output_limit(S):
            logger.warning("an output reached %s's %d decoder positions (max_position_embeddings) before </s> and "
                           "ends there (nmt's limit for %d source subwords is %d)", self.name, self.positions, S,
                           self.max_new_tokens(S))
        ranked = getattr(out, "sequences_scores", None)
        forward = self.forward(enc, hyps[0])
        logp = forward.logits[0].float().log_softmax(-1)                              # (T, V)
        targets = torch.tensor(hyps[0] + [self.hf_model.config.eos_token_id], device=self.device)
        own = float(logp.gather(1, targets[:, None]).sum())                           # log P(Y | X)
        scores = [own] if ranked is None else [float(s) for s in ranked]
        cross = torch.stack(forward.cross_attentions, 1)[0]                          # (L, H, T, S)
        convert = self.hf_tokenizer.convert_ids_to_tokens
        tree = None if log is None else self._tree(log, out, enc, forced or [], beam_size, length_penalty,
                                                   args["max_new_tokens"], pruned)
        return Translation(
            text=self.hf_tokenizer.decode(hyps[0], skip_special_tokens=True), score=scores[0],
            src_pieces=convert(enc["input_ids"][0].tolist()), tgt_pieces=convert(hyps[0]) + ["</s>"],
            attention=cross[-1].mean(0).float().cpu().numpy(),
            nbest=[(self.hf_tokenizer.decode(h, skip_special_tokens=True), s) for h, s in zip(hyps, scores)],
            tokens=hyps[0], forced=len(forced or [])), tree

    def _tree(self, log, out, enc, forced, beam_size, length_penalty, max_new_tokens, pruned):
        """The replayed search (nmt.hf.beam_tree), the forced prefix's log P and
        attention from one teacher-forced pass."""
        from nmt.hf.beam_tree import build_tree

        S = enc["input_ids"].shape[1]
        forced_logp, forced_attention = [], torch.zeros(0, S)
        if forced:
            teacher = self.forward(enc, forced)
            logp = teacher.logits[0, :len(forced)].float().log_softmax(-1)                 # (F, V)
            forced_logp = logp.gather(1, torch.tensor(forced, device=logp.device)[:, None])[:, 0].tolist()
            forced_attention = teacher.cross_attentions[-1][0, :, :len(forced)].mean(0).float().cpu()  # (F, S)
        eos = self.hf_model.generation_config.eos_token_id
        eos = set(eos) if isinstance(eos, list) else {eos if eos is not None else self.hf_model.config.eos_token_id}
        return build_tree(self.name, log, out, forced, forced_logp, forced_attention, beam_size, length_penalty,
                          eos, max_new_tokens, pruned, S)

    def _tokens(self, sequence: list[int]) -> list[int]:
        """A generated sequence without its start token, cut before eos and padding."""
        config = self.hf_model.config
        tokens = sequence[1:]
        for stop in (config.eos_token_id, config.pad_token_id):
            if stop in tokens:
                tokens = tokens[:tokens.index(stop)]
        return tokens

    def forward(self, enc: dict, tokens: list[int]):
        """The teacher-forced pass over start + tokens, every attention returned."""
        start = self.hf_model.config.decoder_start_token_id
        decoder_input = torch.tensor([[start] + list(tokens)], device=self.device)       # (1, T)
        out = self.hf_model(**enc, decoder_input_ids=decoder_input, output_attentions=True)
        if not getattr(out, "cross_attentions", None):
            raise NmtError(f"{self.name}: its forward returns no cross-attention; nmt shows encoder-decoder "
                           "models whose output_attentions=True gives cross_attentions")
        return out

    @torch.no_grad()
    def cross_layers(self, source: str, tokens: list[int]) -> np.ndarray:
        """Every layer and head of the cross-attention over start + `tokens`, (L, H, T, S)."""
        enc = self.hf_tokenizer([source], return_tensors="pt")
        forward = self.forward({k: v.to(self.device) for k, v in enc.items()}, tokens)
        return torch.stack(forward.cross_attentions, 1)[0].float().cpu().numpy()

    @torch.no_grad()
    def attention_maps(self, source: str, out) -> list[dict]:
        """Every layer and head of cross-, encoder self- and decoder self-attention (attention_data's maps)."""
        enc = self.hf_tokenizer([source], return_tensors="pt")
        forward = self.forward({k: v.to(self.device) for k, v in enc.items()}, out.tokens)
        stack = lambda layers: torch.stack(layers, 1)[0].float().cpu()                 # noqa: E731 (L, H, R, C)
        inputs = ["<s>"] + out.tgt_pieces[:-1]
        maps = [_map("cross", "cross-attention (decoder -> source)", out.tgt_pieces, out.src_pieces, "target",
                     "source", stack(forward.cross_attentions))]
        if forward.encoder_attentions:
            maps.append(_map("encoder-self", "encoder self-attention", out.src_pieces, out.src_pieces,
                             "query (source)", "key (source)", stack(forward.encoder_attentions)))
        if forward.decoder_attentions:
            maps.append(_map("decoder-self", "decoder self-attention (causal)", inputs, inputs,
                             "query (decoder input)", "key (decoder input)", stack(forward.decoder_attentions),
                             mask="causal"))
        return maps

