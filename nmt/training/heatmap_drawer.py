"""Draws a validation's attention heatmaps on a thread of its own, so that
training goes on while matplotlib renders them.

The training thread reads the maps from the model (`attention_cards`: numpy
copies) and hands them over; the thread renders and writes them to
TensorBoard. One validation's cards are drawn at a time: handing over the
next waits for the last, so drawing never falls more than one validation
behind. `close` waits for the cards in progress before TensorBoard closes;
`drop` gives up the cards not yet started (after a stop signal, or when
the time budget is spent and the final validation's cards replace them).
With a `deadline` (the end of trainer.max_minutes) no card starts that
would end after it, as the last card took: the run ends on time. The
first card of a run is always drawn: a run that validates shows at least
one heatmap.
"""

import logging
import threading
import time

from nmt.training.tensorboard import Card, draw_cards

log = logging.getLogger("nmt.train")


class HeatmapDrawer:
    def __init__(self, writer, lock: threading.Lock):
        """`lock`: held around every write to `writer`, also by the other threads writing to it."""
        self.writer, self.lock = writer, lock
        self.thread: threading.Thread | None = None
        self.cancel = threading.Event()
        self.card_seconds = 0.0               # how long the last card drawn took
        self.cards, self.left = 0, 0          # the last validation's cards, and those not drawn yet
        self.drawn = 0                        # cards drawn in this process
        self.waited = 0.0                     # seconds the last `submit` waited for the cards before
        self.deadline: float | None = None    # perf_counter time by which drawing must end
        self.error: BaseException | None = None

    def submit(self, cards: list[Card], step: int) -> None:
        """Start drawing `cards` at `step`, once the last validation's are written."""
        self.waited = self.wait()
        self.cards = self.left = len(cards)
        if cards:
            self.thread = threading.Thread(target=self._draw, args=(cards, step), name="nmt-heatmaps",
                                           daemon=True)
            self.thread.start()

    def _draw(self, cards: list[Card], step: int) -> None:
        try:
            for drawn, card in enumerate(cards):
                if self.cancel.is_set():
                    break
                late = self.deadline is not None and time.perf_counter() + self.card_seconds > self.deadline
                if late and self.drawn:
                    log.info("heatmaps at step %d: %d of %d cards drawn when the time budget ended",
                             step, drawn, len(cards))
                    break
                started = time.perf_counter()
                draw_cards(self.writer, [card], step, self.lock)
                self.card_seconds, self.left = time.perf_counter() - started, self.left - 1
                self.drawn += 1
        except BaseException as error:        # raised again on the training thread, by wait()
            self.error = error

    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def seconds_needed(self) -> float:
        """Drawing time still to come, as the last card took: the cards left and one more validation's."""
        return self.card_seconds * (self.left + self.cards)

    def wait(self) -> float:
        """Until the cards in progress are written; the seconds waited."""
        started = time.perf_counter()
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        self.cancel.clear()
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return time.perf_counter() - started

    def drop(self) -> None:
        """Give up the cards not started yet; returns once the one in progress is written."""
        self.cancel.set()
        self.wait()
        self.left = 0

    def close(self, drop: bool = False) -> None:
        """Wait for the cards in progress (drop: only the one being drawn)."""
        if drop:
            self.drop()
        self.wait()
