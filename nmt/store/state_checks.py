"""A loaded checkpoint's shape, before anything reads a tensor or a field.

`torch.load(weights_only=True)` runs no code, but what it returns is still
whoever wrote the file's: a sparse or meta-device weight (no storage to
read: NotImplementedError, RuntimeError), a weight of integers or a complex
type (copied into a float model without a word), a list nested 400 deep
(RecursionError in any recursive walk), a tokenizer stored as a string. So
`check_state` looks at every value once, iteratively, before the CRC, size
and finiteness checks and before any other code sees the state:

    nesting         at most MAX_DEPTH levels of dicts and lists
    tensors         strided (dense), on the CPU, not quantized, of a real or
                    integer dtype; the model's weights of a floating dtype
    fields          each top-level field of the type nmt.train writes

Every refusal is one NmtError line naming the file and the field.
"""

import torch

from nmt.base.errors import NmtError, with_article

MAX_DEPTH = 32      # nmt.train writes at most 6 (optimizer.param_groups.0.betas.0)
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
STORED_DTYPES = FLOATS + (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)
TEXT_LIST = "a list of text"
# top-level field: (what it must be, test); a field that is absent is the caller's to miss
FIELDS = {
    "format_version": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "config": ("a mapping", lambda v: isinstance(v, dict)),
    "tokenizer": ("a mapping of 'src' and 'tgt' to sentencepiece models (bytes)",
                  lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(p, bytes) and p
                                                        for k, p in v.items())),
    "model": ("a mapping of weight names to tensors",
              lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(t, torch.Tensor)
                                                    for k, t in v.items())),
    "fingerprint": ("a mapping of data settings and a tokenizer digest",
                    lambda v: isinstance(v, dict) and isinstance(v.get("data", {}), dict)
                    and isinstance(v.get("tokenizer", ""), str)),
    "samples": (TEXT_LIST, lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v)),
    "sample_references": (TEXT_LIST, lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v)),
    "averaged_from": (TEXT_LIST, lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v)),
    "optimizer": ("a mapping with 'state' and 'param_groups'",
                  lambda v: isinstance(v, dict) and isinstance(v.get("state"), dict)
                  and isinstance(v.get("param_groups"), list) and all(isinstance(g, dict) for g in v["param_groups"])),
    "schedule": ("a mapping", lambda v: isinstance(v, dict)),
    "scaler": ("a mapping", lambda v: v is None or isinstance(v, dict)),
    "progress": ("a mapping of counters with a whole-number step",
                 lambda v: isinstance(v, dict) and isinstance(v.get("step"), int)
                 and not isinstance(v.get("step"), bool) and v["step"] >= 0),
    "rng": ("a mapping of random states", lambda v: isinstance(v, dict)),
}


def _refuse(path, where: str, problem: str) -> None:
    raise NmtError(f"checkpoint {path}: {where} {problem}; the file is damaged or was not written by "
                   "nmt.train; use a checkpoint written by nmt.train")


def _nodes(state: dict):
    """(dotted name, depth, value) of every value in nested dicts, lists and
    tuples, without recursion (a walk of its own: the file's nesting is not a
    Python stack's)."""
    stack = [(str(key), 1, value) for key, value in reversed(list(state.items()))]
    while stack:
        name, depth, value = stack.pop()
        yield name, depth, value
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, (list, tuple)):
            items = enumerate(value)
        else:
            continue
        if depth >= MAX_DEPTH:
            raise _TooDeep(name)
        stack.extend((f"{name}.{key}", depth + 1, child) for key, child in reversed(list(items)))


class _TooDeep(Exception):
    """A value nested past MAX_DEPTH (its dotted name, cut)."""


def _check_tensor(path, name: str, tensor: torch.Tensor) -> None:
    shown = f"weight {name.removeprefix('model.')}" if name.startswith("model.") else name
    if tensor.layout != torch.strided or tensor.is_quantized or getattr(tensor, "is_nested", False):
        layout = "quantized" if tensor.is_quantized else str(tensor.layout).removeprefix("torch.")
        _refuse(path, shown, f"is a {layout} tensor, not a dense one")
    if tensor.device.type != "cpu":
        _refuse(path, shown, f"is on the {tensor.device.type} device, where no values are stored")
    if tensor.dtype not in STORED_DTYPES:
        _refuse(path, shown, f"holds {str(tensor.dtype).removeprefix('torch.')} values, a type nmt never stores")
    if name.startswith("model.") and tensor.dtype not in FLOATS:
        _refuse(path, shown, f"holds {str(tensor.dtype).removeprefix('torch.')} values, not floating-point "
                             "numbers as every weight of a model does")


def check_state(state: dict, path) -> None:
    """NmtError (one line, naming the field) unless every value of `state` is
    of the kind nmt.train writes (see the module's docstring)."""
    try:
        for name, _, value in _nodes(state):
            if isinstance(value, torch.Tensor):
                _check_tensor(path, name, value)
    except _TooDeep as deep:
        _refuse(path, str(deep)[:120], f"nests deeper than {MAX_DEPTH} levels")
    for key, (kind, test) in FIELDS.items():
        if key in state and not test(state[key]):
            _refuse(path, key, f"is {_what(state[key])}, not {kind}")
    _check_tokenizer(state.get("tokenizer"), path)


def _check_tokenizer(protos, path) -> None:
    """Each stored sentencepiece model parses (sentencepiece's own error, named)."""
    import sentencepiece

    for side, shown in (("src", "source"), ("tgt", "target")) if isinstance(protos, dict) else ():
        if side not in protos:
            continue                     # none: the tokenizer's own line says so
        try:
            sentencepiece.SentencePieceProcessor(model_proto=protos[side])
        except (RuntimeError, OSError, TypeError, ValueError) as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0][:120]
            _refuse(path, f"tokenizer.{side}:", f"the {shown} sentencepiece model is damaged ({first})")


def _what(value) -> str:
    """'a str', 'an int', 'None': the type of a value with its article, for a refusal."""
    return "None" if value is None else with_article(type(value).__name__)
