"""Are a checkpoint's stored bytes the bytes that were written?

torch.save writes a zip archive with one record per tensor storage
(`archive/data/N`) and the CRC-32 of each; torch.load does not check them,
so a flipped byte inside a weight loads and translates. `damaged_record`
reads every record and checks its CRC (Python's zipfile); `tensor_of_record`
names the weight that a damaged record holds, by the CRC of each loaded
tensor's storage against the record's actual bytes. `check_part_bytes`
checks only the tensors a caller uses (a translator reads the weights, not
the optimiser's state, which is larger).
"""

import zipfile
import zlib

import torch

from nmt.base.errors import NmtError


def damaged_record(path) -> str | None:
    """The name of the first record whose bytes fail their CRC, else None."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return None  # not a zip (a legacy file), or unreadable: torch.load said so first


def _record_crc(path, record: str) -> int | None:
    """CRC-32 of a record's bytes as they are stored now."""
    crc = 0
    try:
        with zipfile.ZipFile(path) as archive, archive.open(archive.getinfo(record)) as data:
            data._expected_crc = None  # read the damaged bytes without zipfile's own check
            while chunk := data.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
    except (zipfile.BadZipFile, OSError, KeyError, EOFError, ValueError):
        return None
    return crc


def _storage_crc(tensor: torch.Tensor) -> int:
    storage = tensor.untyped_storage()
    raw = torch.empty(0, dtype=torch.uint8).set_(storage)  # (bytes,) the whole storage
    return zlib.crc32(raw.numpy())


def tensor_of_record(path, record: str, tensors: dict) -> str | None:
    """The name (in `tensors`, nested dicts allowed) of the tensor stored in `record`."""
    crc = _record_crc(path, record)
    stack = [("", tensors)]
    while stack and crc is not None:
        prefix, node = stack.pop()
        for name, value in node.items() if isinstance(node, dict) else ():
            if isinstance(value, dict):
                stack.append((f"{prefix}{name}.", value))
            elif isinstance(value, torch.Tensor) and value.device.type == "cpu" and _storage_crc(value) == crc:
                return f"{prefix}{name}"
    return None


def check_part_bytes(path, state: dict, parts: tuple, advice: str) -> None:
    """As check_stored_bytes, reading only the tensors under `parts` (e.g.
    ("model",)): each one's storage must have the size and CRC-32 of a record
    of the archive, which its central directory lists without reading the
    records. A damaged storage matches no record (but by a 2^-32 chance)."""
    try:
        with zipfile.ZipFile(path) as archive:
            records = {(info.file_size, info.CRC) for info in archive.infolist() if "/data/" in info.filename}
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return  # not a zip (a legacy file): torch.load read it, and there are no CRCs
    checked = set()
    for part in parts:
        for name, tensor in _tensors(state.get(part) or {}):
            storage = tensor.untyped_storage()
            if tensor.device.type != "cpu" or storage.data_ptr() in checked:
                continue
            checked.add(storage.data_ptr())
            if (storage.nbytes(), _storage_crc(tensor)) not in records:
                what = f"weight {name}" if part == "model" else f"{part}.{name}"
                raise NmtError(
                    f"checkpoint {path}: {what} is damaged: its stored bytes fail their CRC-32 check "
                    f"(the file changed after it was written); {advice}"
                )


def check_stored_bytes(path, state: dict, advice: str) -> None:
    """NmtError naming the damaged weight (or record) when a record fails its CRC."""
    record = damaged_record(path)
    if record is None:
        return
    name = tensor_of_record(path, record, state.get("model") or {})
    what = f"weight {name}" if name else f"its stored record {record}"
    raise NmtError(
        f"checkpoint {path}: {what} is damaged: its stored bytes fail their CRC-32 check "
        f"(the file changed after it was written); {advice}"
    )


def _tensors(node, prefix: str = ""):
    """(dotted name, tensor) of every tensor in nested dicts and lists."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, (list, tuple)) else ()
    for key, value in items:
        if isinstance(value, torch.Tensor):
            yield f"{prefix}{key}", value
        else:
            yield from _tensors(value, f"{prefix}{key}.")


def holds_tensors(node) -> bool:
    """Whether a value (nested dicts and lists allowed) holds a tensor."""
    return isinstance(node, torch.Tensor) or any(True for _ in _tensors(node))


def check_tensor_sizes(state: dict, path, advice: str) -> None:
    """Every tensor holds the values its header claims: a header of 10^12
    values over a few stored bytes (a zero stride) would make the first
    operation on it allocate terabytes."""
    for name, tensor in _tensors(state):
        stored = tensor.untyped_storage().nbytes()
        claimed = tensor.numel() * tensor.element_size()
        expanded = any(step == 0 and size > 1 for step, size in zip(tensor.stride(), tensor.shape))
        if tensor.numel() and (claimed > stored or expanded):
            shown = name.removeprefix("model.")
            raise NmtError(
                f"checkpoint {path}: {'weight ' if name.startswith('model.') else ''}{shown} claims "
                f"{tensor.numel()} values of shape {tuple(tensor.shape)} but stores {stored} bytes; the "
                f"file is damaged or was not written by nmt.train; {advice}"
            )
