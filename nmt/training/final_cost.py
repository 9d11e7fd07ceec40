"""What the end of a run costs after its last update, for trainer.max_minutes:
the final validation, the validations of the averaged checkpoints, and the
test set's scoring of best.pt.

The loop keeps these seconds back from the budget, so that a run with a time
budget ends within it even when no validation came before the end. The
last validation's pause measures them best; until one has run, a probe
times the search on a few validation sentences with the model as it is
then (an untrained model decodes to the length limit, so early probes are
pessimistic), again each time another fifth of the budget has passed.

At most END_SHARE of the budget is kept back. Where the end would cost more
(a short budget, or a model that has not yet learnt to stop), the final
validation and the test set are scored on their first sentences, as many
as fit, and the log and summary.json say how many.
"""

import dataclasses
import logging
import math
import time

from nmt.training.progress import rng_state, set_rng_state

log = logging.getLogger("nmt.train")

END_SHARE = 0.2  # of the budget, at most, kept back for the end of the run
MIN_SENTENCES = 20  # the fewest sentences a trimmed final validation or test set scores
PROBE_SENTENCES = 8
PROBE_EVERY = 0.2  # of the budget, between probes, until a validation has run
MARGIN = 1.15  # a probe's batch is smaller than a validation's: kept on the safe side


class FinalCost:
    def __init__(
        self, valid_sentences: int, test_sentences: int, extra_validations: int = 0, budget_seconds: float = 0.0
    ):
        """`extra_validations`: validations of averaged checkpoints at the end (trainer.average_*);
        `budget_seconds`: trainer.max_minutes in seconds (0: no budget)."""
        self.valid, self.test, self.extra = max(1, valid_sentences), test_sentences, extra_validations
        self.cap = END_SHARE * budget_seconds
        self.validation_seconds = 0.0  # the last validation's pause, measured
        self.probe_per_sentence: float | None = None
        self.probed_at: float | None = None  # the budget's share used at the last probe

    def probe_due(self, spent: float) -> bool:
        """Whether to time the search now: no validation has measured it yet and a
        fifth of the budget has passed since the last probe (or none was made)."""
        if self.validation_seconds:
            return False
        return self.probed_at is None or spent - self.probed_at >= PROBE_EVERY

    def probe(self, translate, sources: list[str], spent: float) -> None:
        """Time `translate(sources)`: the seconds one sentence of the search takes now."""
        started = time.perf_counter()
        translate(sources)
        self.probe_per_sentence = (time.perf_counter() - started) / max(1, len(sources))
        self.probed_at = spent

    def seconds(self) -> float:
        """The estimated seconds from the last update to the end of the run; 0 before any measure."""
        if self.validation_seconds:
            one_validation = self.validation_seconds
            per_sentence = one_validation / self.valid
        elif self.probe_per_sentence is not None:
            per_sentence = self.probe_per_sentence
            one_validation = per_sentence * self.valid
        else:
            return 0.0
        return MARGIN * (one_validation * (1 + self.extra) + per_sentence * self.test)

    def reserve(self) -> float:
        """The seconds kept back from the budget: the estimate, at most END_SHARE of the budget."""
        return min(self.seconds(), self.cap)

    def fit_in_budget(self, validation, test_pairs: list) -> tuple:
        """The validation set and test pairs the end of the run scores: all of them, or,
        where their estimated cost passes the reserve, their first sentences in its
        proportion (the validation loss on as many of its batches)."""
        estimate = self.seconds()
        if not self.cap or estimate <= self.cap:
            return validation, test_pairs
        keep = self.cap / estimate
        n_valid = min(len(validation.pairs), max(MIN_SENTENCES, math.floor(keep * len(validation.pairs))))
        n_test = min(len(test_pairs), max(MIN_SENTENCES, math.floor(keep * len(test_pairs))))
        n_batches = max(1, math.ceil(keep * len(validation.batches)))
        log.info(
            "time budget: the final validation scores %d of %d sentences and the test set %d of %d, "
            "to end within trainer.max_minutes (all of them: about %.0f s)",
            n_valid,
            len(validation.pairs),
            n_test,
            len(test_pairs),
            estimate,
        )
        trimmed = dataclasses.replace(
            validation, pairs=validation.pairs[:n_valid], batches=validation.batches[:n_batches]
        )
        return trimmed, test_pairs[:n_test]


def probe_search(cost: FinalCost, model, translator, validation, spent: float) -> None:
    """Time the validation's search on its first PROBE_SENTENCES sentences; the random
    state is restored, so the run trains exactly as it would without the probe."""
    state, was_training = rng_state(), model.training
    model.eval()
    sources = [src for src, _ in validation.pairs[:PROBE_SENTENCES]]
    cost.probe(
        lambda batch: translator.translate(
            batch, beam_size=validation.beam_size, coverage_penalty=validation.coverage_penalty
        ),
        sources,
        spent,
    )
    model.train(was_training)
    set_rng_state(state)
