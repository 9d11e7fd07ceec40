"""The study's pictures: one attention grid per family, one learning-curve figure.

Grid: one row per configuration, one column per validation sentence (the
same five everywhere); each panel is the attention of that model's own
greedy output (rows, down) over the source subwords (across), on one
shared colour scale from 0 to 1.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

PANEL_CMAP = "viridis"


def pick_sentences(pairs: list[tuple[str, str]], n: int = 5, min_words: int = 5,
                   max_words: int = 11) -> list[tuple[str, str]]:
    """The first n validation pairs whose source has min_words..max_words words
    (short enough to read in a panel), else the first n."""
    chosen = [p for p in pairs if min_words <= len(p[0].split()) <= max_words][:n]
    return chosen if len(chosen) == n else pairs[:n]


def _font(n: int) -> float:
    return max(5.0, min(8.0, 150.0 / max(n, 1)))


def family_grid(rows: list[tuple[str, list]], sentences: list[tuple[str, str]], title: str, path) -> None:
    """rows: (row label, [Translation per sentence]) -> one PNG."""
    n_rows, n_cols = len(rows), len(sentences)
    widths = [max(2.2, 0.2 * max(len(r[1][c].src_pieces) for r in rows) + 0.9) for c in range(n_cols)]
    heights = [max(2.0, 0.16 * max(len(t.tgt_pieces) for t in r[1]) + 1.0) for r in rows]
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(sum(widths) + 2.2, sum(heights) + 1.6),
                             gridspec_kw={"width_ratios": widths, "height_ratios": heights},
                             squeeze=False, dpi=90)
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
    plt.close(fig)


FAMILY_STYLE = {"score": "-", "scope": "--", "encoder": "-.", "bridge": ":", "positional": "-"}


def learning_curves(runs: list[dict], path, metric_name: str = "validation BLEU") -> None:
    """runs: dicts with name, family, seed, records (metrics.jsonl) -> one PNG of
    BLEU against steps and against training seconds."""
    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(14, 6.5), dpi=90, sharey=True)
    colours = plt.get_cmap("tab20").colors + plt.get_cmap("tab20b").colors
    names = sorted({r["name"] for r in runs}, key=[r["name"] for r in runs].index)
    for run in runs:
        if not run["records"]:
            continue
        colour = colours[names.index(run["name"]) % len(colours)]
        style = FAMILY_STYLE.get(run["family"], "-")
        width = 2.2 if run["family"] == "positional" else 1.4
        steps = [r["step"] for r in run["records"]]
        seconds = [r["train_seconds"] for r in run["records"]]
        bleu = [r["bleu"] for r in run["records"]]
        label = run["name"] if run["seed"] == run["first_seed"] else None
        by_step.plot(steps, bleu, style, color=colour, linewidth=width, marker="o", markersize=3,
                     label=label)
        by_time.plot(seconds, bleu, style, color=colour, linewidth=width, marker="o", markersize=3)
    by_step.set_xlabel("optimiser steps")
    by_time.set_xlabel("training seconds (wall clock in the update loop, validation excluded)")
    by_step.set_ylabel(metric_name)
    for ax in (by_step, by_time):
        ax.grid(alpha=0.3)
    fig.legend(loc="center right", fontsize=8, title="configuration (line style = family)",
               title_fontsize=8, frameon=False)
    fig.suptitle(f"Learning curves: {metric_name} at each validation, every run", fontsize=11)
    fig.tight_layout(rect=(0, 0, 0.8, 0.96))
    fig.savefig(path, dpi=90)
    plt.close(fig)
