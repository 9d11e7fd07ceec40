"""The command lines, one module each: `train`, `translate`, `average`,
`compare`, `export` and `explore`. A user runs them as `python -m nmt.NAME`
(the entry files at the package root) or as the console scripts `nmt-NAME`;
both go through `run(NAME)`.

Standard library only: this module loads before torch, so that a stop signal
is one line while the command's heavy imports load (`nmt.base.cli`).
"""

# What the line a stop signal prints ends with, for each command.
STOP_CONTEXT = {
    "train": "before training started; no checkpoint was written",
    "translate": "; an --output file is written whole or not at all",
    "average": "; --output is written whole or not at all",
    "compare": "; --csv is written whole or not at all",
    "export": "; DIR is written whole or not at all",
    "explore": "before the explorer was serving",
}

# The function each command module runs; `main(argv=None) -> int` unless named here.
ENTRY = {"train": "run"}


def run(name: str) -> None:
    """Run the command `name` as this process's command and exit with its code."""
    from nmt.base.cli import run_command

    run_command(f"nmt.commands.{name}", STOP_CONTEXT[name], entry=ENTRY.get(name, "main"))


def names_from(name: str):
    """The module `__getattr__` (PEP 562) of an entry file nmt/NAME.py: every name not
    found there is read from nmt.commands.NAME, imported on first use, so that
    `from nmt.train import fit` works and `import nmt.train` loads no torch."""

    def __getattr__(attribute):
        import importlib

        return getattr(importlib.import_module(f"nmt.commands.{name}"), attribute)

    return __getattr__
