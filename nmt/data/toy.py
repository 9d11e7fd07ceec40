"""The built-in toy task: spelled-out English dates to digits, reordered.

    source  "monday the twenty first of march nineteen eighty four"
    target  "1 9 8 4 - 0 3 - 2 1 mon"

The year moves from the end to the front, the day from the front to the
back, and the optional weekday from the first word to the last, so the
true alignment is far from the diagonal. The mapping is a function of
the source (a tiny model can learn it exactly), every word is separated by
spaces, and the vocabulary is small: 72 source words and 18 target
words. Years run from 1900 to 2099 ("nineteen oh five", "twenty twelve",
"two thousand"); days are valid for their month.

`toy_alignment(src, tgt)` gives the true word alignment: for each target
word the index of the source word it comes from. A digit comes from the
word that spells it ("twenty first" -> 2 from "twenty", 1 from "first"; a
single word such as "march" or "thirteenth" gives both digits); a "-"
comes from the first word of the field it opens (the month, then the day).
"""

import calendar
import random

from nmt.config_schema.data import check_toy_sizes
from nmt.data.examples import Corpus
from nmt.base.errors import NmtError

UNITS = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
ORDINALS = ["", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
            "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
            "seventeenth", "eighteenth", "nineteenth", "twentieth"]
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december"]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
FIRST_YEAR, LAST_YEAR = 1900, 2099


def spell_day(day: int) -> tuple[list[str], list[int]]:
    """day 1..31 -> (words, owner of each of its 2 digits as an index into words)."""
    if day <= 20:
        return [ORDINALS[day]], [0, 0]
    if day % 10 == 0:
        return ["thirtieth"], [0, 0]
    return [TENS[day // 10], ORDINALS[day % 10]], [0, 1]


def spell_year(year: int) -> tuple[list[str], list[int]]:
    """year 1900..2099 -> (words, owner of each of its 4 digits)."""
    century, rest = {19: "nineteen", 20: "twenty"}[year // 100], year % 100
    if rest == 0:
        return (["two", "thousand"], [0, 1, 1, 1]) if year == 2000 else ([century, "hundred"], [0, 0, 1, 1])
    if rest < 10:
        return [century, "oh", UNITS[rest]], [0, 0, 1, 2]
    if rest < 20:
        return [century, TEENS[rest - 10]], [0, 0, 1, 1]
    if rest % 10 == 0:
        return [century, TENS[rest // 10]], [0, 0, 1, 1]
    return [century, TENS[rest // 10], UNITS[rest % 10]], [0, 0, 1, 2]


def render(weekday: int | None, day: int, month: int, year: int) -> tuple[str, str, list[int]]:
    """One toy example: (source, target, alignment target word -> source word)."""
    src = [WEEKDAYS[weekday]] if weekday is not None else []
    src.append("the")
    day_words, day_owner = spell_day(day)
    day_at = len(src)
    src += day_words + ["of"]
    month_at = len(src)
    src.append(MONTHS[month - 1])
    year_words, year_owner = spell_year(year)
    year_at = len(src)
    src += year_words

    tgt = list(f"{year:04d}") + ["-"] + list(f"{month:02d}") + ["-"] + list(f"{day:02d}")
    align = ([year_at + o for o in year_owner] + [month_at] + [month_at, month_at]
             + [day_at] + [day_at + o for o in day_owner])
    if weekday is not None:
        tgt.append(WEEKDAYS[weekday][:3])
        align.append(0)
    return " ".join(src), " ".join(tgt), align


def _inverse(spell, values) -> dict[tuple[str, ...], int]:
    return {tuple(spell(v)[0]): v for v in values}


DAY_BY_WORDS = _inverse(spell_day, range(1, 32))
YEAR_BY_WORDS = _inverse(spell_year, range(FIRST_YEAR, LAST_YEAR + 1))


def parse(src: str) -> tuple[int | None, int, int, int]:
    """Source sentence -> (weekday or None, day, month, year); NmtError if it is not one."""
    words = src.split()
    weekday = WEEKDAYS.index(words[0]) if words and words[0] in WEEKDAYS else None
    rest = words[1:] if weekday is not None else words
    try:
        of = rest.index("of")
        if rest[0] != "the":
            raise ValueError
        day = DAY_BY_WORDS[tuple(rest[1:of])]
        month = MONTHS.index(rest[of + 1]) + 1
        year = YEAR_BY_WORDS[tuple(rest[of + 2:])]
    except (ValueError, IndexError, KeyError):
        raise NmtError(f"{src!r} is not a toy-task sentence (e.g. 'the first of may nineteen ten')") from None
    return weekday, day, month, year


def toy_translate(src: str) -> str:
    """The reference translation of a toy source sentence."""
    return render(*parse(src))[1]


def toy_alignment(src: str, tgt: str) -> list[int]:
    """For each word of `tgt`, the index of the source word it translates."""
    _, reference, align = render(*parse(src))
    if tgt.split() != reference.split():
        raise NmtError(f"{tgt!r} is not the toy translation of {src!r} (expected {reference!r})")
    return align


def _sample(rng: random.Random) -> tuple[int | None, int, int, int]:
    year = rng.randint(FIRST_YEAR, LAST_YEAR)
    month = rng.randint(1, 12)
    day = rng.randint(1, calendar.monthrange(year, month)[1])
    weekday = rng.randrange(7) if rng.random() < 0.5 else None
    return weekday, day, month, year


def make_toy_corpus(n_train: int, n_valid: int, n_test: int, seed: int) -> Corpus:
    """A deterministic toy corpus; no sentence appears twice across the splits."""
    sizes = check_toy_sizes(n_train, n_valid, n_test)
    rng, seen, pairs = random.Random(seed), set(), []
    while len(pairs) < sum(sizes):
        fields = _sample(rng)
        if fields not in seen:
            seen.add(fields)
            src, tgt, _ = render(*fields)
            pairs.append((src, tgt))
    a, b = sizes[0], sizes[0] + sizes[1]
    return Corpus(name="toy", train=pairs[:a], valid=pairs[a:b], test=pairs[b:])
