"""The end of a run: best.pt scored on the data's test set, as JoeyNMT does,
with the validation's search (greedy, or beam search of trainer.val_beam_size)
and sacreBLEU's BLEU and chrF on the detokenised output."""

import copy
import logging
from pathlib import Path

from nmt.base.scoring import score_translations
from nmt.store.checkpoints import load_checkpoint

log = logging.getLogger("nmt.train")


def score_test_set(best: Path, model, make_translator, pairs, beam_size: int = 1,
                coverage_penalty: float = 0.0) -> dict:
    """summary.json's test_* keys: `best` (a checkpoint of `model`'s config)
    translating the sources of `pairs` and scored against their references;
    {} where the data has no test set with references or no best.pt was written."""
    pairs = [(src, tgt) for src, tgt in pairs if tgt.strip()]
    if not pairs or not best.exists():
        return {}
    scored = copy.deepcopy(model)
    scored.load_state_dict(load_checkpoint(best, parts=("model",))["model"])
    scored.eval()
    outputs = make_translator(scored).translate([src for src, _ in pairs], beam_size=beam_size,
                                                coverage_penalty=coverage_penalty)
    bleu, chrf, _, _ = score_translations([o.text for o in outputs], [tgt for _, tgt in pairs])
    search = "greedy" if beam_size == 1 else f"beam {beam_size}"
    log.info("test set: %s on %d sentences, %s | BLEU %.2f chrF %.2f", best.name, len(pairs), search, bleu, chrf)
    return {"test_bleu": bleu, "test_chrf": chrf, "test_sentences": len(pairs),
            "test_checkpoint": best.name, "test_search": search}
