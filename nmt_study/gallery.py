"""The study's pictures: one attention grid per family, one learning-curve figure.

Grid: one row per configuration, one column per validation sentence (the
same five everywhere); each panel is the attention of that model's own
greedy output (rows, down) over the source subwords (across), on one
shared colour scale from 0 to 1.
"""

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

PANEL_CMAP = "viridis"


def pick_sentences(pairs: list[tuple[str, str]], n: int = 5, min_words: int = 5,
                   max_words: int = 11) -> list[tuple[str, str]]:
    """The first n validation pairs whose source has min_words..max_words words
    (short enough to read in a panel), else the first n."""
    chosen = [p for p in pairs if min_words <= len(p[0].split()) <= max_words][:n]
    return chosen if len(chosen) == n else pairs[:n]


def _font(n: int) -> float:
    return max(6.0, min(8.0, 170.0 / max(n, 1)))


def family_grid(rows: list[tuple[str, list]], sentences: list[tuple[str, str]], title: str, path) -> None:
    """rows: (row label, [Translation per sentence]) -> one PNG."""
    n_rows, n_cols = len(rows), len(sentences)
    widths = [max(2.2, 0.2 * max(len(r[1][c].src_pieces) for r in rows) + 0.9) for c in range(n_cols)]
    heights = [max(2.0, 0.2 * max(len(t.tgt_pieces) for t in r[1]) + 1.0) for r in rows]
    fig = Figure(figsize=(sum(widths) + 2.2, sum(heights) + 1.6), dpi=90)   # not pyplot's: no backend switch
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, n_cols, gridspec_kw={"width_ratios": widths, "height_ratios": heights},
                        squeeze=False)
    image = None
    for r, (row_label, translations) in enumerate(rows):
        for c, out in enumerate(translations):
            ax = axes[r][c]
            weights = np.asarray(out.attention, dtype=float)
            if weights.size == 0:
                ax.axis("off")
                continue
            T, S = weights.shape
            image = ax.imshow(weights, cmap=PANEL_CMAP, vmin=0.0, vmax=1.0, aspect="auto",
                              interpolation="nearest")
            ax.set_xticks(range(S), out.src_pieces[:S], rotation=90, fontsize=_font(S))
            ax.set_yticks(range(T), out.tgt_pieces[:T], fontsize=_font(T))
            ax.tick_params(length=1.5, pad=1)
            if c == 0:
                ax.set_ylabel(row_label, fontsize=9, fontweight="bold", labelpad=6)
            if r == 0:
                ax.set_title(f"sentence {c + 1}", fontsize=9)
    fig.suptitle(f"{title}\nrows: configurations; columns: the same validation sentences; each panel: "
                 "the model's greedy output (down) attending to the source subwords (across)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.9, 0.98))
    if image is not None:
        bar_ax = fig.add_axes((0.915, 0.3, 0.012, 0.4))
        fig.colorbar(image, cax=bar_ax, label="attention weight")
    fig.savefig(path, dpi=90)


STYLES = ["-", "--", "-.", ":"]


def learning_curves(runs: list[dict], path, title: str, names: list[str],
                    metric_name: str = "validation BLEU") -> None:
    """One family's figure: `metric_name` at each validation against updates
    (left) and training minutes (right); one colour per configuration, one
    line style per seed. runs: dicts with name, seed, records (metrics.jsonl
    lines with step, bleu, train_seconds)."""
    fig = Figure(figsize=(15, 4.2), dpi=90)
    FigureCanvasAgg(fig)
    by_step, by_time, key = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 0.45]})
    colours = matplotlib.colormaps["tab10"].colors
    top = max([r["bleu"] for run in runs for r in run["records"]] + [1.0]) * 1.05
    seeds = sorted({run["seed"] for run in runs})
    for run in runs:
        if run["name"] not in names or not run["records"]:
            continue
        i = names.index(run["name"])
        style = dict(color=colours[i % 10], linestyle=STYLES[(i // 10 + seeds.index(run["seed"])) % 4],
                     linewidth=1.4)
        steps = [r["step"] for r in run["records"]]
        minutes = [r["train_seconds"] / 60 for r in run["records"]]
        bleu = [r["bleu"] for r in run["records"]]
        by_step.plot(steps, bleu, label=f"{run['name']} (seed {run['seed']})", **style)
        by_time.plot(minutes, bleu, **style)
    by_step.set_title(f"{title}: against updates", fontsize=10)
    by_time.set_title("against training minutes (one thread, shared machine)", fontsize=10)
    by_step.set_ylabel(metric_name)
    by_step.set_xlabel("optimiser updates")
    by_time.set_xlabel("training minutes (update loop; validation excluded)")
    handles, labels = by_step.get_legend_handles_labels()
    key.axis("off")
    key.legend(handles, labels, fontsize=7, loc="center left", frameon=False)
    for ax in (by_step, by_time):
        ax.grid(alpha=0.3)
        ax.set_ylim(0, top)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
