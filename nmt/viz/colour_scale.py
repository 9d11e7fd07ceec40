"""The one colour rule of every attention picture: the PNGs of
`--plot-attention`, TensorBoard's images, the notebook views, the
explorer and `--attention-html`.

    absolute (the default)  colour = weight on 0 to 1, the whole range a
                            weight can take: a uniform map over 12 source
                            subwords (1/12 each) is dark, never bright, and
                            maps are comparable across layers, heads,
                            models and sentences. A map whose values can
                            exceed 1 (coverage, a sum of weights) runs to
                            its largest value instead.
    relative                colour = weight on 0 to the map's own largest
                            weight (over the cells it can attend), so the
                            pattern of a spread map is seen; the maximum is
                            printed in the legend, beside the map's mean
                            row entropy and a uniform map's, so a flat map
                            drawn bright still reads as flat. Panels being
                            compared share one maximum: the largest of theirs.

Masked cells, those a row cannot attend (the future of decoder
self-attention, the tape slots after an LSTMN token), are not weights:
they are drawn grey and hatched (MASKED), never as the colour of a small
weight. Every legend states its scale (`legend`).

The explorer's script mirrors `scale_max`, `row_entropy` and `legend`
(scaleMax, rowEntropy, scaleLegend in explorer_page.html) and reads the
constants from `page_rule()`, which the page carries; a test runs both on
the same maps and checks they agree.
"""

import numpy as np

SCALES = ("absolute", "relative")
DEFAULT_SCALE = "absolute"
MASKED = "#d4d4d8"              # masked cells: this grey, hatched
MIN_MAX = 1e-6                  # an all-zero map is drawn on 0 to this, not divided by 0
CAUSAL = "causal"               # a map's `mask`: row r attends columns 0..r only


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ValueError(f"colour scale {scale!r} unknown; choose one of {SCALES}")
    return scale


def masked_cells(mask: str | None, rows: int, cols: int) -> np.ndarray:
    """(rows, cols) booleans, True where the cell is masked (not a weight)."""
    if mask is None:
        return np.zeros((rows, cols), dtype=bool)
    if mask != CAUSAL:
        raise ValueError(f"mask {mask!r} unknown; a map's mask is None or {CAUSAL!r}")
    return np.arange(cols)[None, :] > np.arange(rows)[:, None]


def scale_max(weights, scale: str = DEFAULT_SCALE, masked=None, shared: float | None = None) -> float:
    """The value drawn as the top colour: 1 (absolute; the largest value
    where one is above 1), or the largest unmasked weight (relative), or
    `shared`, the largest of the panels compared, when given."""
    check_scale(scale)
    values = np.asarray(weights, dtype=float)
    if masked is not None and np.asarray(masked).any():
        values = values[~np.asarray(masked, dtype=bool)]
    largest = float(values.max()) if values.size else 0.0
    if scale == "absolute":
        return max(1.0, largest)
    return max(MIN_MAX, largest if shared is None else max(float(shared), largest))


def row_entropy(weights, masked=None) -> tuple[float, float]:
    """(the rows' mean entropy, a uniform map's), in bits, over the cells
    each row can attend: equal numbers say the map is flat."""
    values = np.asarray(weights, dtype=float)
    keep = np.ones(values.shape, dtype=bool) if masked is None else ~np.asarray(masked, dtype=bool)
    if not values.size:
        return 0.0, 0.0
    p = np.where(keep & (values > 0), values, 1.0)
    h = -(np.where(keep & (values > 0), values * np.log2(p), 0.0)).sum(1)             # (R,)
    uniform = np.log2(np.maximum(keep.sum(1), 1))                                       # (R,)
    return float(h.mean()), float(uniform.mean())


def top_text(top: float) -> str:
    return "1" if top == 1 else f"{top:.4f}"


def legend(scale: str, top: float, entropy: tuple[float, float], panels: int = 1) -> str:
    """What the colour bar says of its scale."""
    mean, uniform = entropy
    flat = f"row entropy {mean:.2f} bits (uniform: {uniform:.2f})"
    if check_scale(scale) == "absolute":
        return f"absolute scale 0 to {top_text(top)}; {flat}"
    shared = f", the largest of {panels} panels" if panels > 1 else ", this map's largest"
    return f"relative scale 0 to {top_text(top)}{shared}; {flat}"


def page_rule() -> dict:
    """The rule's constants, carried by the page (`NMT.colour`) for its script."""
    return {"scales": list(SCALES), "default": DEFAULT_SCALE, "masked": MASKED, "min_max": MIN_MAX,
            "causal": CAUSAL}
