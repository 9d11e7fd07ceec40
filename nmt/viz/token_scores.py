"""log P of each output subword, for the difference view of compare and what if.

    token_logp[t] = log softmax(z_t)[y_t]        natural log, t = 0 .. T-1

where z_t are the model's logits at step t of a teacher-forced pass over
bos + y_1 .. y_(t-1) (its own output) and y_T is </s>: the numbers the
search summed, so that for greedy search sum(token_logp) is the score the
explorer prints (a beam's score is that sum divided by its length
penalty). A forced prefix's subwords have theirs too. Two panels aligned
row for row can then say where one translation became less or more likely
than the other (Strobelt et al. 2018, Seq2Seq-Vis, arXiv:1804.09299, show
the same per-step probabilities beside their beam).
"""

import torch

from nmt.core.special_tokens import BOS_ID as BOS, EOS_ID as EOS

DIGITS = 4              # decimals, as attention_data's maps


@torch.no_grad()
def token_log_probs(translator, source: str, out) -> list[float] | None:
    """[log P(y_t | y_<t, x)] for each of out.tgt_pieces (its </s> last);
    None for an engine without the model at hand (CTranslate2)."""
    if not out.tgt_pieces:
        return []
    hf = getattr(translator, "hf_model", None)
    if hf is not None:
        encoded = translator.hf_tokenizer([source], return_tensors="pt")
        logits = translator.forward({k: v.to(translator.device) for k, v in encoded.items()},
                                    out.tokens).logits[0]                    # (T, V)
        targets = list(out.tokens) + [hf.config.eos_token_id]
    elif getattr(translator, "model", None) is not None:
        model = translator.model
        src, _, _ = translator._encode([source])                            # (1, S)
        tgt_in = torch.tensor([[BOS] + list(out.tokens)], device=src.device)  # (1, T)
        enc = model.encode(src)
        logits = model.decoder(tgt_in, model.decoder.init_state(enc.memory, enc.init), enc.memory).logits[0]
        targets = list(out.tokens) + [EOS]
    else:
        return None
    logp = logits.float().log_softmax(-1)                                    # (T, V)
    picked = logp[torch.arange(len(targets)), torch.tensor(targets, device=logp.device)]   # (T,)
    return [round(float(v), DIGITS) for v in picked.cpu()]
