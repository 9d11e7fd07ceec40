"""docs/reference/python-api.md (written by `python -m scripts.docs.docs_reference`): the
public API's signatures and docstrings as plain Markdown, which GitHub shows as the
site does (no `::: module.name` directive left for a plugin to fill)."""

import dataclasses
import importlib
import inspect
import re

from scripts.docs.docs_markdown import generated_note, prose

INTRO = """\
Everything a command does is a library call first. The commands print; the
library returns values.

```python
from nmt import Translator
t = Translator.from_checkpoint("outputs/DATE/TIME/checkpoints/best.pt", device="cpu")
out = t.translate(["Ein Hund läuft."], beam_size=5)
out[0].text, out[0].score, out[0].src_pieces, out[0].tgt_pieces, out[0].attention
ensemble = Translator.from_checkpoints(["run1/best.pt", "run2/best.pt"], device="cpu")
```

`Translator.translate` raises `NmtError` with one line for text sentencepiece
cannot encode (a lone surrogate, as `errors='surrogateescape'` produces), for
sentences that are not `str`, and for search options of the wrong kind.
`nmt.train.fit` takes the overrides `python -m nmt.train` takes: every key, its
default, allowed values and meaning are in the [configuration reference](configuration.md),
and in Python in the one table that page is made from:

```python
from nmt.config_schema.table import RULES
RULES["trainer.grad_clip"].meaning      # what the key does
RULES["trainer.grad_clip"].expected()   # what it may hold: 'a number >= 0'
```
"""
# section -> the public objects it documents, by import path
SECTIONS = {
    "Translating": ["nmt.translator.Translator", "nmt.translator.Translation"],
    "Heatmaps": ["nmt.viz.heatmaps.attention_figure", "nmt.viz.heatmaps.card_figures", "nmt.viz.heatmaps.save_figure"],
    "Serving with CTranslate2": ["nmt.deploy.engine.CTranslate2Translator"],
    "Errors": ["nmt.base.errors.NmtError"],
    "Training": ["nmt.train.fit", "nmt.train.TrainResult"],
}
WIDTH = 76  # a signature longer than this: one parameter a line (fits the site's column at 1280 px)


def resolve(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _annotation(text: str) -> str:
    """`nmt.data.tokenizer.Tokenizer` -> `Tokenizer`, `typing.Optional` -> `Optional`;
    torch's and numpy's names kept whole."""
    return re.sub(r"\b(?:nmt|typing|matplotlib\.figure)\.(?:[a-z_][a-z0-9_]*\.)*([A-Za-z_]\w*)", r"\1", text)


def _parameter(p: inspect.Parameter, field) -> str:
    """A parameter as Python writes it; a dataclass field's factory as its call (`list()`)."""
    if field is not None and field.default_factory is not dataclasses.MISSING:
        p = p.replace(default=inspect.Parameter.empty)
        return _annotation(f"{p} = {field.default_factory.__name__}()")
    return _annotation(str(p))


def signature(name: str, obj, kind: str = "def") -> str:
    """`def name(a, b=1) -> T` (one parameter a line when it is long), as Python writes it."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{kind} {name}"
    fields = {f.name: f for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else {}
    params = [_parameter(p, fields.get(p.name)) for p in sig.parameters.values() if p.name not in ("self", "cls")]
    returns = ""
    if kind != "class" and sig.return_annotation is not inspect.Signature.empty:
        returns = _annotation(f" -> {inspect.formatannotation(sig.return_annotation)}")
    one_line = f"{kind} {name}({', '.join(params)}){returns}"
    if len(one_line) <= WIDTH or not params:
        return one_line
    return f"{kind} {name}(\n" + "".join(f"    {p},\n" for p in params) + f"){returns}"


def docstring(obj) -> list[str]:
    """The docstring as Markdown paragraphs; indented lines (formulas, examples) as code."""
    text = inspect.getdoc(obj) or ""
    out, block = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("    "):
            block.append(line[4:])
            continue
        if block:
            out += ["```text"] + block + ["```"]
            block = []
        out.append(prose(line))
    return out


def _members(cls) -> list[tuple[str, object, str]]:
    """(name, object, kind) of the public methods and properties a class defines."""
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    found = []
    for name, value in vars(cls).items():
        if name.startswith("_") or name in fields:
            continue
        if isinstance(value, property):
            found.append((name, value.fget, "property"))
        elif isinstance(value, (classmethod, staticmethod)):
            found.append((name, value.__func__, "classmethod" if isinstance(value, classmethod) else "staticmethod"))
        elif inspect.isfunction(value):
            found.append((name, value, "def"))
    return found


def _object(path: str) -> list[str]:
    obj = resolve(path)
    name = path.rsplit(".", 1)[1]
    kind = "class" if inspect.isclass(obj) else "def"
    shown = (
        f"class {name}({', '.join(b.__name__ for b in obj.__bases__)})"
        if obj is resolve("nmt.base.errors.NmtError")
        else signature(name, obj, kind)
    )
    out = [f"### {name}", "", f"`{path}`", "", "```python", shown, "```", ""] + docstring(obj) + [""]
    for member, value, member_kind in _members(obj) if inspect.isclass(obj) else []:
        out += [f"#### {name}.{member}", ""]
        if member_kind == "property":
            out += ["```python", f"@property\ndef {member}(self)", "```", ""]
        else:
            decorator = "" if member_kind == "def" else f"@{member_kind}\n"
            out += ["```python", decorator + signature(member, value), "```", ""]
        out += docstring(value) + [""]
    return out


def public_names() -> list[str]:
    """The section listing `nmt.__all__`: each name, where it is defined, what it is."""
    import nmt

    out = [
        "## The names `from nmt import` gives",
        "",
        "The package's public API, each name imported on first use (so `import nmt` stays light). "
        "Code outside nmt, such as the attention study (`nmt_study`, its own package beside nmt), "
        "imports these and nothing deeper.",
        "",
        "| name | defined in | what it is |",
        "| --- | --- | --- |",
    ]
    for name in nmt.__all__:
        module, attribute, meaning = nmt.PUBLIC[name]
        where = f"`{module}.{attribute}`"
        out.append(f"| `{name}` | {where} | {meaning} |")
    return out + [""]


def api_reference() -> str:
    out = ["# Python API", "", generated_note("the docstrings and signatures of the code"), "", INTRO]
    out += public_names()
    for section, paths in SECTIONS.items():
        out += [f"## {section}", ""]
        for path in paths:
            out += _object(path)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).rstrip() + "\n"
