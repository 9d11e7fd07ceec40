"""trainer.speedups: which speedups a run trains with, chosen once and named in one log line.

Each speedup computes what a plain piece of nmt.core computes (bit for bit,
or to float rounding where its module says so), faster where it was measured
to pay; each has its equivalence test against that piece (tests/speedups).

    speedup            replaces                                  on under trainer.speedups=auto
    fused_loss.py      core.loss.label_smoothed_nll              always
    scratch.py         fresh memory for the loss's softmax       on a CPU
    scratch.py         glibc's heap trimming (keep_freed_heap)   on a CPU with glibc
    openblas_linear.py torch's nn.Linear products in training    as trainer.matmul says (auto: where it pays)
    compile.py         the model's eager forward                 as trainer.compile says
    graphed_update.py  core.step.train_step                      as trainer.cuda_graphs says
    (model building)   the plain dropout mask, packed RNN runs   always (model building's `speedups`)

trainer.speedups=off turns every one off: the run trains through the core's
plain code alone. The per-speedup keys keep their meaning under `auto`; under
`off` a key that asks for a speedup (trainer.matmul=openblas,
trainer.compile=true, trainer.cuda_graphs=true) is refused in one line
(`check_speedups`), and trainer.matmul=auto means torch.
"""

from dataclasses import dataclass, fields
from functools import partial

from nmt.core.loss import label_smoothed_nll
from nmt.base.errors import NmtError
from nmt.speedups.fused_loss import fused_label_smoothed_nll
from nmt.speedups.scratch import UpdateScratch

CHOICES = ("auto", "off")
NAMES = {"fused_loss": "fused loss", "scratch": "kept scratch memory", "kept_heap": "glibc keeps freed heap memory",
         "openblas": "OpenBLAS products", "compile": "torch.compile", "cuda_graphs": "CUDA graphs",
         "model": "model speedups (dropout mask, padded RNN runs)"}


@dataclass(frozen=True)
class Speedups:
    """Which speedups are on (all False: nmt.core's plain code alone)."""
    fused_loss: bool = False
    scratch: bool = False
    kept_heap: bool = False
    openblas: bool = False
    compile: bool = False
    cuda_graphs: bool = False
    model: bool = False

    def token_losses(self):
        """The label-smoothed loss nmt.core.loss.training_loss takes: the fused one, with
        memory kept from batch to batch where scratch is on, or the core's plain one."""
        if not self.fused_loss:
            return label_smoothed_nll
        return partial(fused_label_smoothed_nll, scratch=UpdateScratch() if self.scratch else None)

    def log_line(self, setting: str) -> str:
        """The one line at the start of a run that names what is on."""
        on = [NAMES[f.name] for f in fields(self) if getattr(self, f.name)]
        if not on:
            return f"speedups: none (trainer.speedups={setting}); the update is nmt.core's plain loss and step"
        return f"speedups (trainer.speedups={setting}): " + ", ".join(on)


def check_speedups(tc) -> None:
    """trainer.speedups=off with a key that asks for a speedup: one line naming both."""
    if tc.speedups != "off":
        return
    asked = [(tc.matmul == "openblas", "trainer.matmul=openblas"), (bool(tc.compile), "trainer.compile=true"),
             (bool(tc.cuda_graphs), "trainer.cuda_graphs=true")]
    for refused, key in asked:
        if refused:
            raise NmtError(f"trainer.speedups=off turns every speedup off, but {key} asks for one; "
                           f"drop {key} or use trainer.speedups=auto")


def choose_speedups(setting: str, device, matmul: str, compile: bool, cuda_graphs: bool) -> Speedups:
    """trainer.speedups (auto or off) -> what is on, before the CPU-side ones are started
    (kept_heap and openblas are settled by nmt.training.build, which knows the machine).
    `matmul`: trainer.matmul resolved (torch or openblas)."""
    if setting == "off":
        return Speedups()
    cpu = device.type == "cpu"
    return Speedups(fused_loss=True, scratch=cpu, kept_heap=cpu, openblas=matmul == "openblas",
                    compile=compile, cuda_graphs=cuda_graphs, model=True)
