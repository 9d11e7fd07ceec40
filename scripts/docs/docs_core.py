"""The docs page "Read the core" (docs/core.md), generated from nmt/core so it cannot
drift from it: the files in the reading order of nmt/core/README.md, each with its
explanation (the module's docstring: the paper, the section, the formulas) above its
source (the rest of the file, as it is).

    python -m scripts.docs.docs_core          writes docs/core.md
    python -m scripts.docs.docs_core --check  exit status 1 when docs/core.md is stale

tests/core/test_docs_core.py runs the check.
"""

import argparse
import ast
import re
import sys
from pathlib import Path

from scripts.docs.docs_markdown import prose

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "nmt" / "core"
PAGE = ROOT / "docs" / "core.md"
ENTRY = re.compile(r"^(\d+)\. `([\w/]+\.py)`: (.*)$")

INTRO = """\
# Read the core

*Generated from nmt/core by `python -m scripts.docs.docs_core`; edit the code and run it.
`tests/core/test_docs_core.py` fails when this page is not what the code gives.*

`nmt/core/` holds every model mechanism nmt teaches, one file each, named after
what it is: the attention scores, scopes and normalisers, multi-head attention,
the positional encodings, the RNN and Transformer encoders and decoders, the
bridges and the masks. It imports torch (and `entmax`) and nothing else of nmt;
the faster replacements of some plain pieces (a cheaper dropout mask, RNN runs
without packing) live outside it, in `nmt/speedups/`, and
`build_model(..., speedups=False)` builds a model from the core alone.

Below, each file in reading order: its explanation (the paper, the section and the
formula, from the file's docstring), then its code.
"""


def reading_order() -> list[tuple[str, str, str]]:
    """(group heading or "", file, its README line) for every README entry, in order."""
    entries, heading = [], ""
    for line in (CORE / "README.md").read_text(encoding="utf-8").splitlines():
        found = ENTRY.match(line)
        if found:
            entries.append((heading, found[2], found[3]))
            heading = ""
        elif line.endswith(":") and not line.startswith("#"):
            heading = line.rstrip(":")
    return entries


def explanation(docstring: str) -> list[str]:
    """A docstring as Markdown: its indented blocks (formulas) as text blocks, the rest as prose."""
    out = []
    for paragraph in docstring.strip().split("\n\n"):
        lines = paragraph.splitlines()
        if all(line.startswith("    ") for line in lines if line.strip()):
            out += ["```text", *(line[4:] for line in lines), "```", ""]
        else:
            out += [prose(" ".join(line.strip() for line in lines)), ""]
    return out


def source_without_docstring(text: str) -> str:
    """The file from the line after its module docstring, leading blank lines dropped."""
    tree = ast.parse(text)
    first = tree.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        text = "\n".join(text.splitlines()[first.end_lineno :])
    return text.strip("\n")


def section(number: int, heading: str, file: str, description: str) -> list[str]:
    text = (CORE / file).read_text(encoding="utf-8")
    lines = [f"## {heading}", ""] if heading else []
    lines += [f"### {number}. `nmt/core/{file}`", ""]
    lines += explanation(ast.get_docstring(ast.parse(text)) or "")
    lines += ["```python", source_without_docstring(text), "```", ""]
    return lines


def core_page() -> str:
    lines = [INTRO]
    for number, (heading, file, description) in enumerate(reading_order(), start=1):
        lines += section(number, heading, file, description)
    total = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in CORE.rglob("*.py"))
    lines += [f"The core is {total} lines of Python in {len(list(CORE.rglob('*.py')))} files.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="write (or --check) docs/core.md from nmt/core")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when docs/core.md is stale")
    args = parser.parse_args(argv)
    page = core_page()
    if args.check:
        fresh = PAGE.is_file() and PAGE.read_text(encoding="utf-8") == page
        if not fresh:
            print("docs/core.md is stale: run python -m scripts.docs.docs_core", file=sys.stderr)
        return 0 if fresh else 1
    PAGE.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
