"""Attention heatmaps: source subwords across, target subwords down.

Figures are matplotlib `Figure`s with an Agg canvas of their own, never
pyplot's, so importing this module leaves matplotlib's backend alone (a
notebook keeps its inline backend) and drawing works off the main thread.
"""

import base64
import io
import math

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from nmt.base import own_files
from nmt.viz.colour_scale import DEFAULT_SCALE, MASKED, legend, masked_cells, row_entropy, scale_max


# TensorBoard shows an image in a card about 340 px wide, scaled down to fit
# (never up) and as tall as it is. A heatmap is drawn for that width at 100 dpi
# with at most MAX_COLUMNS source tokens across, each CELL_IN wide, so token
# labels are shown at about their own size; `card_figures` cuts a longer source
# into several such figures. Rows (output tokens) only make a figure taller.
DPI = 100
CARD_IN = 3.4                # inches: 340 px
CELL_IN = 0.15               # room per token on each axis: 15 px for a 9-10 pt label
MAX_COLUMNS = 16             # source tokens across one card
LABEL_PT = 10.0              # token labels and title
MAX_LABEL_CHARS = 14         # longer subwords are cut with an ellipsis
# viridis, but with exact_zeros (a sparse normaliser: sparsemax, entmax15) a
# weight of exactly 0 is drawn white, apart from a small weight's dark purple
# (`_draw_cells`). A softmax's 0 is float32 underflow, not a zero: it keeps the
# lowest colour.
VIRIDIS = matplotlib.colormaps["viridis"]


def _label(piece: str) -> str:
    return piece if len(piece) <= MAX_LABEL_CHARS else piece[:MAX_LABEL_CHARS - 1] + "…"


def _label_size(n: int) -> float:
    """10 pt up to 16 tokens, 9 pt up to 24, then smaller, never under 7 pt."""
    return LABEL_PT if n <= 16 else max(7.0, min(9.0, 216.0 / n))


def _draw_cells(ax, shown, top: float, exact_zeros: bool, masked):
    """The cells by the colour rule (nmt.viz.colour_scale): viridis on 0 to
    `top`, a sparse normaliser's exact 0 white, masked cells left out over
    the hatched grey of the axes behind them -> the weights' image."""
    image = ax.imshow(np.ma.masked_array(shown, mask=masked), cmap=VIRIDIS.with_extremes(bad=(0, 0, 0, 0)),
                      vmin=0.0, vmax=top, aspect="auto", interpolation="nearest")
    zeros = (shown == 0.0) & ~masked
    if exact_zeros and zeros.any():
        ax.imshow(np.ma.masked_array(np.ones(shown.shape), mask=~zeros), cmap=ListedColormap(["white"]),
                  aspect="auto", interpolation="nearest")
    return image


def attention_figure(weights, src_pieces: list[str], tgt_pieces: list[str], title: str = "",
                     centers=None, window: int | None = None, columns: range | None = None,
                     exact_zeros: bool = False, scale: str = DEFAULT_SCALE, mask: str | None = None,
                     shared: float | None = None, value_name: str = "attention weight") -> Figure:
    """weights (T, S) -> one labelled heatmap with a colour bar below it:
    source subwords across, output subwords down; 340 px wide for up to
    MAX_COLUMNS source tokens, wider beyond.

    columns: draw only these source positions (one card of `card_figures`),
    on the colour scale of the whole map. centers (T,) local-p's predicted
    positions p_t are drawn as dots and the window [p_t - D, p_t + D] as a
    bracket on each row. exact_zeros: the weights come from a sparse
    normaliser, so a 0 is real and drawn white (see VIRIDIS). scale,
    mask, shared: the colour rule's (nmt.viz.colour_scale): absolute 0-1
    by default; masked cells grey and hatched; the legend says which.
    value_name: what a cell is, on the colour bar (an explanation's score).
    """
    weights = np.asarray(weights, dtype=float)
    T, S = weights.shape
    masked = masked_cells(mask, T, S)
    top = scale_max(weights, scale, masked, shared)
    columns = range(S) if columns is None else columns
    first, shown = columns.start, weights[:, columns.start:columns.stop]        # (T, C)
    C = shown.shape[1]
    legend_shown = centers is not None
    size = (max(CARD_IN, 1.3 + CELL_IN * C), 2.0 + (0.3 if legend_shown else 0.0) + CELL_IN * T)
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")   # not pyplot's: safe off the main thread
    FigureCanvasAgg(fig)                                         # fig.canvas: Agg, as pyplot would give
    ax = fig.add_subplot()
    ax.patch.set_facecolor(MASKED)
    ax.patch.set_hatch("///")
    ax.patch.set_edgecolor("#9a9aa2")
    image = _draw_cells(ax, shown, top, exact_zeros, masked[:, first:first + C])
    across, down = [_label(p) for p in src_pieces[first:first + C]], [_label(p) for p in tgt_pieces[:T]]
    ax.set_xticks(range(C), across, rotation=90, fontsize=_label_size(C))
    ax.set_yticks(range(T), down, fontsize=_label_size(T))
    ax.tick_params(length=2, pad=2)
    ax.set_xlabel("source", fontsize=9, labelpad=2)
    ax.set_ylabel("output", fontsize=9, labelpad=2)
    if legend_shown:
        centers = np.asarray(centers, dtype=float)[:T] - first                 # (T,) in this card
        ax.plot(centers, range(len(centers)), "o", color="red", markersize=4, label="centre p_t")
        if window is not None:
            for t, p in enumerate(centers):
                left, right = max(p - window, -0.5), min(p + window, C - 0.5)
                if left < right:
                    ax.plot([left, right], [t, t], color="red", linewidth=0.8, alpha=0.7)
            ax.plot([], [], color="red", linewidth=0.8, label=f"window p_t ± {window}")
        ax.set_xlim(-0.5, C - 0.5)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, fontsize=8, frameon=False,
                  borderaxespad=0.2, handletextpad=0.3, columnspacing=0.8)
    bar = fig.colorbar(image, ax=ax, location="bottom", fraction=0.05, pad=0.02, aspect=30)
    bar.ax.tick_params(labelsize=8)
    said = legend(scale, top, row_entropy(weights, masked))
    bar.set_label(value_name + (" (white: exactly 0)" if exact_zeros else "")
                  + (", grey hatched: masked" if masked.any() else "") + "\n" + said, fontsize=7, labelpad=1)
    if title:                  # over the whole figure: the axes are narrower than the card
        fig.suptitle(title, fontsize=LABEL_PT)
    _thin_labels(fig, ax, across, down)
    return fig


def _every(texts, step: float) -> int:
    """The smallest k such that every k-th of `texts` (extent along the axis: their widths or
    heights in pixels) fits in `step` pixels a tick."""
    return max(1, math.ceil(max(texts, default=0.0) * 1.1 / step)) if step > 0 else 1


def _thin_labels(fig, ax, across: list[str], down: list[str]) -> None:
    """Labels that never overlap: where neighbours would, only every k-th is shown (the
    smallest k that fits), and the axis name says so."""
    fig.canvas.draw()                                   # the laid-out size of the axes and labels
    origin, one = ax.transData.transform((0, 0)), ax.transData.transform((1, 1))
    k_across = _every([t.get_window_extent().width for t in ax.get_xticklabels()], abs(one[0] - origin[0]))
    k_down = _every([t.get_window_extent().height for t in ax.get_yticklabels()], abs(one[1] - origin[1]))
    if k_across > 1:
        ax.set_xticks(range(0, len(across), k_across), across[::k_across])
        ax.set_xlabel(f"source (every {_nth(k_across)} label)", fontsize=9, labelpad=2)
    if k_down > 1:
        ax.set_yticks(range(0, len(down), k_down), down[::k_down])
        ax.set_ylabel(f"output (every {_nth(k_down)} label)", fontsize=9, labelpad=2)


def _nth(k: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def card_figures(weights, src_pieces: list[str], tgt_pieces: list[str], title: str,
                 centers=None, window: int | None = None, exact_zeros: bool = False,
                 max_columns: int | None = MAX_COLUMNS, **rule) -> list[tuple[str, Figure]]:
    """One map as TensorBoard cards: [("", figure)] for up to `max_columns`
    source tokens (None: any number), else [("/source_1-13", ...),
    ("/source_14-25", ...)], even parts on one colour scale, each titled
    with its source range. `rule`: scale, mask, shared, value_name (attention_figure)."""
    S = np.asarray(weights).shape[1]
    parts = 1 if max_columns is None else -(-S // max_columns)      # ceil
    if parts == 1:
        return [("", attention_figure(weights, src_pieces, tgt_pieces, title, centers, window,
                                      exact_zeros=exact_zeros, **rule))]
    bounds = [round(k * S / parts) for k in range(parts + 1)]
    return [(f"/source_{a + 1}-{b}",
             attention_figure(weights, src_pieces, tgt_pieces, f"{title}\nsource {a + 1}-{b} of {S}",
                              centers, window, columns=range(a, b), exact_zeros=exact_zeros, **rule))
            for a, b in zip(bounds, bounds[1:])]


def save_figure(fig: Figure, path, dpi: int | None = None) -> None:
    """Write `fig` as a PNG (at `dpi`, default the figure's DPI), whole, with nmt's
    mark of a heatmap (nmt.base.own_files). Raises OSError."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight", dpi=dpi or DPI)
    own_files.write(path, buffer.getvalue(), own_files.HEATMAP)


def figure_png_base64(fig: Figure, dpi: int | None = None) -> str:
    """`fig` as a PNG, base64-encoded, for an <img src="data:image/png;base64,..."> tag."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight", dpi=dpi or DPI)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
