"""What the explorer sends: only what its page shows, the rest on request.

A translation of 100 words by a model of opus-mt's size (6 + 6 layers, 8
heads) has 3 maps x 6 layers x 8 heads of up to 130 x 130 weights, about
2.4 million numbers: 46 MB of JSON that the page would parse and draw. The
page shows one layer of one map at a time (the matrix and head views) and
small pictures of every layer and head (the model view). So a reply
carries, for each map,

    layers      for the first map (the one the page opens with), its last
                layer's heads; every other entry null, fetched by the page
                when it shows it: POST /api/maps {"id", "map", "layer"} with
                Accept: application/octet-stream -> the layer's bytes
                (`layer_bytes`), or, with any other Accept, {"heads": packed}
                where packed is {"bytes": base64 of those bytes}, the form the
                reply itself carries
    n_layers, n_heads
    thumbs      (L, H, r, c) the model view's pictures: each cell the largest
                weight of its block of at most ceil(R / THUMB) x ceil(C / THUMB)
                cells (r, c <= THUMB), null where every cell is masked, so a
                thumbnail keeps each map's peaks and its largest weight

A layer's bytes (H, R, C weights, row-major, every number little-endian):
a header of 5 uint32 [kind, H, R, C, n], then

    kind 1 (CODES)  H*R*C uint16 codes, each weight * 10^4 (the maps are
                    rounded to 4 decimals: code / 10^4 is the JSON number,
                    bit for bit), padded to a multiple of 4 bytes; then n
                    uint32 indices and n float32 values: the weights under
                    0.5e-4 that are not 0 (attention_data keeps them as their
                    float32, unrounded), put back at their indices
    kind 2 (FLOATS) H*R*C float32 values (n = 0), sent when some weight is not
                    such a code (negative, over 6.5535: an explanation map)
                    or when a quarter or more are tiny (the codes would be
                    longer); the page rounds each back to 4 decimals, one under
                    TINY kept as it is (a map's weights are 0, under 0.5e-4
                    or at least 1e-4: both ways give the JSON number)

so an opus-mt layer of 100 words (8 x 257 x 167) is 0.69 MB, not the
1.8 MB of base64 float32 or the 2.5 MB of JSON numbers, and the page reads
it into one Float64Array without parsing.

The result gets an `id` under which the whole is kept, with the index of
the model that wrote it (the last KEPT results; an older id answers with
one line saying to translate again): what the page asks for later (a
layer, the steps' top-k alternatives) is read from or computed on it.
"""

import base64
import itertools
import math
import threading
from collections import OrderedDict

import numpy as np

from nmt.base.errors import NmtError
from nmt.viz.colour_scale import masked_cells

THUMB = 24              # cells on a thumbnail's longer side at most (model_view.js draws 96 px)
KEPT = 16               # results kept for their layers to be fetched


def thumbnails(layers, mask: str | None) -> list:
    """(L, H, R, C) weights -> (L, H, r, c) block maxima, r = ceil(R / fr) with
    fr = ceil(R / THUMB) (so r <= THUMB), masked cells left out (None where a
    block is all masked)."""
    values = np.asarray(layers, dtype=np.float64)                      # (L, H, R, C)
    L, H, R, C = values.shape
    values = np.where(masked_cells(mask, R, C)[None, None], np.nan, values)
    fr, fc = max(1, math.ceil(R / THUMB)), max(1, math.ceil(C / THUMB))
    r, c = math.ceil(R / fr), math.ceil(C / fc)
    padded = np.full((L, H, r * fr, c * fc), np.nan)
    padded[:, :, :R, :C] = values
    blocks = padded.reshape(L, H, r, fr, c, fc)
    with np.errstate(all="ignore"):
        empty = np.isnan(blocks).all(axis=(3, 5))                        # (L, H, r, c)
        pooled = np.nanmax(np.where(np.isnan(blocks), -np.inf, blocks), axis=(3, 5))
    return np.where(empty, None, np.round(pooled, 4)).tolist()


CODES, FLOATS = 1, 2       # the kinds of a layer's bytes (the module docstring)
STEP = 10**4               # a code's unit: 1e-4, the maps' rounding (nmt.viz.attention_data.DIGITS)
TINY = 0.75e-4             # FLOATS: a float32 under this is a tiny weight, kept; the others rounded to 1e-4


def layer_bytes(heads) -> bytes:
    """One layer's heads (H, R, C) as the bytes the module docstring describes."""
    values = np.asarray(heads, dtype=np.float64)
    H, R, C = values.shape
    with np.errstate(invalid="ignore"):
        codes = np.rint(values * STEP)
        fits = np.isfinite(values).all() and codes.min(initial=0) >= 0 and codes.max(initial=0) <= 65535
    if fits:
        tiny = np.flatnonzero((codes == 0) & (values != 0))                    # kept unrounded, as float32
        small = values.reshape(-1)[tiny].astype("<f4")
        exact = (codes / STEP == values) | ((codes == 0) & (values != 0))
        fits = bool(exact.all()) and bool((small.astype(np.float64) == values.reshape(-1)[tiny]).all())
    if not fits or 4 * tiny.size >= values.size:
        header = np.array([FLOATS, H, R, C, 0], dtype="<u4")
        return header.tobytes() + values.astype("<f4").tobytes()
    header = np.array([CODES, H, R, C, tiny.size], dtype="<u4")
    body = codes.astype("<u2").tobytes()
    body += bytes(-len(body) % 4)                                              # the indices 4-byte aligned
    return header.tobytes() + body + tiny.astype("<u4").tobytes() + small.tobytes()


def from_bytes(data: bytes) -> np.ndarray:
    """layer_bytes's inverse, read as the page reads it: (H, R, C) float64."""
    kind, H, R, C, n = np.frombuffer(data, dtype="<u4", count=5).tolist()
    N = H * R * C
    if kind == FLOATS:
        values = np.frombuffer(data, dtype="<f4", count=N, offset=20).astype(np.float64)
        values = np.where(np.abs(values) < TINY, values, np.round(values, 4))
        return values.reshape(H, R, C)
    values = np.frombuffer(data, dtype="<u2", count=N, offset=20) / STEP
    at = 20 + 2 * N + (-2 * N) % 4
    tiny = np.frombuffer(data, dtype="<u4", count=n, offset=at)
    values[tiny] = np.frombuffer(data, dtype="<f4", count=n, offset=at + 4 * n)
    return values.reshape(H, R, C)


def packed(heads) -> dict:
    """One layer's heads (H, R, C) inside JSON: {"bytes": base64 of layer_bytes}."""
    return {"bytes": base64.b64encode(layer_bytes(heads)).decode("ascii")}


def unpacked(layer: dict) -> np.ndarray:
    """packed's inverse, as the page reads it: (H, R, C) float64."""
    return from_bytes(base64.b64decode(layer["bytes"]))


class ShownOnly:
    """The results served, kept whole; what is sent of each is only what is shown."""

    def __init__(self, kept: int = KEPT):
        self.kept, self.results, self.lock = kept, OrderedDict(), threading.Lock()
        self.ids = itertools.count(1)

    def send(self, result: dict, model: int = 0) -> dict:
        """`result` (of models[`model`]) as the page first gets it (the module docstring); an error stays as it is."""
        if "maps" not in result:
            return result
        with self.lock:
            key = str(next(self.ids))
            self.results[key] = result, model
            while len(self.results) > self.kept:
                self.results.popitem(last=False)
        maps = []
        for k, m in enumerate(result["maps"]):
            L, H = len(m["layers"]), len(m["layers"][0])
            last = [packed(m["layers"][-1])] if k == 0 else [None]
            maps.append({**m, "layers": [None] * (L - 1) + last, "n_layers": L, "n_heads": H,
                         "thumbs": thumbnails(m["layers"], m.get("mask"))})
        return {**result, "maps": maps, "id": key}

    def layer(self, body, binary: bool = False) -> bytes | dict:
        """POST /api/maps {id, map, layer} -> that layer's bytes (`binary`: Accept: application/octet-stream)
        or {"heads": packed}; NmtError when unknown."""
        if not isinstance(body, dict):
            raise NmtError("send a JSON object {id, map, layer}")
        result, _ = self.whole(body.get("id"))
        found = next((m for m in result["maps"] if m["name"] == body.get("map")), None)
        if found is None:
            raise NmtError(f"map must be one of {[m['name'] for m in result['maps']]}")
        layer = body.get("layer")
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(found["layers"]):
            raise NmtError(f"layer must be a whole number from 0 to {len(found['layers']) - 1}")
        return layer_bytes(found["layers"][layer]) if binary else {"heads": packed(found["layers"][layer])}

    def whole(self, key) -> tuple[dict, int]:
        """The whole result sent under id `key` and its model's index; NmtError when it is not kept."""
        with self.lock:
            found = self.results.get(str(key))
        if found is None:
            raise NmtError("that translation is no longer kept (the explorer keeps its last "
                           f"{self.kept}); translate the sentence again")
        return found
