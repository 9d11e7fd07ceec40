"""The kinds of value a config key may hold, each answering what is wrong
with a value in one line, e.g. Float(low=0) -> "must be >= 0"."""

import math
from dataclasses import dataclass, replace

def show(value) -> str:
    """A value as the user typed it on the command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{...}"
    return str(value)


def _bound(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class Rule:
    null: bool = False      # null is allowed (it means "none" or "off")
    hint: str = ""          # said after the problem, in parentheses
    meaning: str = ""       # what the key does, in one line (the reference and --help show it)

    def means(self, meaning: str) -> "Rule":
        """This rule with the key's one-line meaning, e.g. POSITIVE.means("optimiser updates")."""
        return replace(self, meaning=meaning)

    def problem(self, value) -> str | None:
        """None when `value` is allowed, else what is wrong, e.g. "must be >= 0"."""
        if value is None:
            return None if self.null else f"must be {self.expected()}, not null"
        return self._problem(value)

    def _problem(self, value) -> str | None:
        raise NotImplementedError

    def expected(self) -> str:
        raise NotImplementedError

    def message(self, key: str, value) -> str | None:
        problem = self.problem(value)
        if problem is None:
            return None
        return f"{key}={show(value)}: {problem}" + (f" ({self.hint})" if self.hint else "")


@dataclass(frozen=True)
class _Number(Rule):
    low: float | None = None
    high: float | None = None
    low_open: bool = False   # low itself is not allowed
    high_open: bool = False  # high itself is not allowed

    def range_text(self) -> str:
        """e.g. ">= 0", "in [0, 1)", or "" when any value is allowed."""
        if self.low is not None and self.high is not None:
            return (f"in {'(' if self.low_open else '['}{_bound(self.low)}, "
                    f"{_bound(self.high)}{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {_bound(self.low)}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {_bound(self.high)}"
        return ""

    def range_problem(self, value) -> str | None:
        too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        too_high = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        return f"must be {self.range_text()}" if too_low or too_high else None


@dataclass(frozen=True)
class Int(_Number):
    """A whole number, e.g. Int(low=1) for a count of steps."""

    def expected(self) -> str:
        return f"a whole number {self.range_text()}".strip()

    def _problem(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and math.isfinite(value) and value.is_integer():
                return f"must be a whole number, e.g. {int(value)}"
            return f"must be {self.expected()}"
        return self.range_problem(value)


@dataclass(frozen=True)
class Float(_Number):
    """A finite real number (an integer is accepted), e.g. Float(low=0, high=1, high_open=True)."""

    def expected(self) -> str:
        return f"a number {self.range_text()}".strip()

    def _problem(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be {self.expected()}"
        if not math.isfinite(value):
            return f"must be a finite number {self.range_text()}".strip()
        return self.range_problem(value)


@dataclass(frozen=True)
class Choice(Rule):
    """One of a few words, e.g. Choice(options=("fp32", "bf16", "fp16"))."""
    options: tuple = ()
    prefixes: tuple = ()     # also allowed: a word starting with one of these (e.g. "cuda:")

    def expected(self) -> str:
        return "one of " + ", ".join(self.options)

    def _problem(self, value):
        if isinstance(value, str) and (value in self.options or value.startswith(self.prefixes or ("\0",))):
            return None
        return f"must be {self.expected()}"


@dataclass(frozen=True)
class Bool(Rule):
    def expected(self) -> str:
        return "true or false"

    def _problem(self, value):
        return None if isinstance(value, bool) else f"must be {self.expected()}"


@dataclass(frozen=True)
class Text(Rule):
    """Free text: a path, a name, a hub id. Anything but a list, a mapping or
    blank text (an empty path is the current folder; `key=$UNSET` gives one)."""

    def expected(self) -> str:
        return "a path or name"

    def _problem(self, value):
        if isinstance(value, (list, tuple, dict)):
            return f"must be {self.expected()}, not a list or mapping"
        if isinstance(value, str) and not value.strip():
            return f"must be {self.expected()}, not empty"
        return None


@dataclass(frozen=True)
class Pair(Rule):
    """Two numbers, each following `item`, e.g. Adam's betas [0.9, 0.98]."""
    item: Rule = Float()

    def expected(self) -> str:
        return f"two numbers [a,b], each {self.item.expected().removeprefix('a number ')}"

    def _problem(self, value):
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            return f"must be {self.expected()}"
        if any(self.item.problem(v) for v in value):
            return f"must be {self.expected()}"
        return None

