"""What a run shows while it trains: a tqdm bar on a terminal, plain lines elsewhere.

On a terminal (rank 0, standard error a tty) the bar shows the steps, an ETA
toward whichever budget ends the run first (trainer.max_steps, or the steps
trainer.max_minutes leaves room for), the loss, learning rate and speed of
the current log window after every update (redrawn at most once a second),
and what the run is doing when it is not training: "validating" and
"drawing attention". Without a terminal (`> log.txt`, nohup, sweeps, SLURM)
there is no bar, so no `\\r` redraws glue lines together: the plain
line every trainer.log_every updates (train.log and standard output) is
the record.
"""

import sys
from contextlib import contextmanager

from tqdm import tqdm

TRAIN = "train"


class Display:
    def __init__(self, max_steps: int, step: int, main: bool, stream=None):
        """`stream`: where a bar would go (standard error); no bar unless it is a terminal."""
        stream = sys.stderr if stream is None else stream
        self.enabled = main and stream.isatty()
        # without disable= when shown: an explicit value would override TQDM_DISABLE=1
        self.bar = tqdm(total=max_steps, initial=step, desc=TRAIN, unit="step", dynamic_ncols=True,
                        mininterval=1.0, file=stream, **({} if self.enabled else {"disable": True}))
        self.max_steps, self.desc = max_steps, TRAIN

    @contextmanager
    def doing(self, what: str):
        """Name `what` the run does instead of training ("validating") while it lasts."""
        self.bar.set_description_str(what, refresh=True)
        try:
            yield
        finally:
            self.bar.set_description_str(self.desc, refresh=True)

    def update(self, step: int, spent: float, loss: float, lr: float, speed: float, drawing: bool = False) -> None:
        """One update done, at `step`, with `spent` of the time budget used (0: none):
        the total the ETA runs to is the steps the budget leaves room for when fewer.
        `drawing`: heatmaps are being drawn beside training."""
        desc = TRAIN + (" + drawing attention" if drawing else "")
        if self.desc != desc:
            self.desc = desc
            self.bar.set_description_str(desc, refresh=False)
        if spent:
            self.bar.total = min(self.max_steps, max(step, round(step / spent)))
        self.bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{speed:.0f}", refresh=False)
        self.bar.update(step - self.bar.n)

    def close(self) -> None:
        self.bar.close()
