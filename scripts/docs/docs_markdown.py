"""Markdown pieces the generated Reference pages share (scripts/docs/docs_reference.py): text
safe in a table cell, code spans, and the line at the top of each page that says how
it is made."""

import re

# a config key named in prose, with a value after it or not: data.joint_vocab=true
KEY_IN_PROSE = re.compile(
    r"(?<![\w`./])((?:trainer|data|model|optimizer|schedule|hydra)\.[A-Za-z_.]*[A-Za-z_]"
    r"(?:=[^\s,;)]+)?|(?:data|experiment|optimizer|schedule|model/[a-z]+)=[a-z_0-9]+)"
)


def code(text) -> str:
    """`text` as a code span that a Markdown table cell keeps whole."""
    text = str(text).replace("\n", " ").strip().replace("|", "\\|")
    if not text:
        return '`""`'  # an empty string, as Python and the shell write it
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def prose(text) -> str:
    """Plain text as Markdown: no HTML tag (`<s>`), no emphasis, no link syntax; inline
    code spans kept as they are."""
    parts = str(text).split("`")
    for i in range(0, len(parts), 2):  # the parts outside code spans
        parts[i] = parts[i].replace("\\", "\\\\").replace("<", "&lt;").replace("*", "\\*").replace("[", "\\[")
    return "`".join(parts)


def cell(text) -> str:
    """Prose for a table cell, on one line, with the config keys it names as code."""
    pieces = KEY_IN_PROSE.split(str(text).replace("\n", " ").strip())
    out = [code(piece) if i % 2 else prose(piece) for i, piece in enumerate(pieces)]
    return "".join(out).replace("|", "\\|")


def generated_note(sources: str) -> str:
    """The line at the top of a generated page: what it is made from and the one command."""
    return (
        f"*Generated from {sources} by `python -m scripts.docs.docs_reference`; edit those and run it. "
        "`tests/test_docs_reference.py` fails when this page is not what the code gives.*"
    )
