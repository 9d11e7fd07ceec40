"""What the explorer sends: only what its page shows, the rest on request.

A translation of 100 words by a model of opus-mt's size (6 + 6 layers, 8
heads) has 3 maps x 6 layers x 8 heads of up to 130 x 130 weights, about
2.4 million numbers: 46 MB of JSON that the page would parse and draw. The
page shows one layer of one map at a time (the matrix and head views) and
small pictures of every layer and head (the model view). So a reply
carries, for each map,

    layers      for the first map (the one the page opens with), its last
                layer's heads; every other entry null, fetched by the page
                when it shows it: POST /api/maps {"id", "map", "layer"} ->
                {"heads": packed (H, R, C)}. A layer is packed as
                {"f32": base64 of its float32 values (little-endian, row-major),
                "shape": [H, R, C]}: a quarter of the bytes of JSON numbers,
                decoded without parsing; the page rounds each value back to
                the 4 decimals it was rounded to (one under 1e-4 is kept as it is)
    n_layers, n_heads
    thumbs      (L, H, r, c) the model view's pictures: each cell the largest
                weight of its block of at most ceil(R / THUMB) x ceil(C / THUMB)
                cells (r, c <= THUMB), null where every cell is masked, so a
                thumbnail keeps each map's peaks and its largest weight

and the result an `id` under which the whole is kept, with the index of
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


def packed(heads) -> dict:
    """One layer's heads (H, R, C) as {"f32": base64 float32 little-endian, "shape"}."""
    values = np.asarray(heads, dtype="<f4")
    return {"f32": base64.b64encode(values.tobytes()).decode("ascii"), "shape": list(values.shape)}


def unpacked(layer: dict) -> np.ndarray:
    """packed's inverse, rounded as the page rounds: (H, R, C) float64."""
    values = np.frombuffer(base64.b64decode(layer["f32"]), dtype="<f4").astype(np.float64).reshape(layer["shape"])
    return np.where(np.abs(values) < 1e-4, values, np.round(values, 4))


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

    def layer(self, body) -> list:
        """POST /api/maps {id, map, layer} -> that layer's heads (H, R, C); NmtError when unknown."""
        if not isinstance(body, dict):
            raise NmtError("send a JSON object {id, map, layer}")
        result, _ = self.whole(body.get("id"))
        found = next((m for m in result["maps"] if m["name"] == body.get("map")), None)
        if found is None:
            raise NmtError(f"map must be one of {[m['name'] for m in result['maps']]}")
        layer = body.get("layer")
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(found["layers"]):
            raise NmtError(f"layer must be a whole number from 0 to {len(found['layers']) - 1}")
        return packed(found["layers"][layer])

    def whole(self, key) -> tuple[dict, int]:
        """The whole result sent under id `key` and its model's index; NmtError when it is not kept."""
        with self.lock:
            found = self.results.get(str(key))
        if found is None:
            raise NmtError("that translation is no longer kept (the explorer keeps its last "
                           f"{self.kept}); translate the sentence again")
        return found
