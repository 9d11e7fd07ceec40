"""Attention heatmaps: source subwords across, target subwords down."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def _label_size(n: int) -> float:
    return max(6.0, min(11.0, 220.0 / max(n, 1)))


def attention_figure(weights, src_pieces: list[str], tgt_pieces: list[str], title: str = "",
                     centers=None, window: int | None = None) -> Figure:
    """weights (T, S) -> a labelled heatmap with a colour scale.

    centers (T,) local-p's predicted positions p_t are drawn as dots and the
    window [p_t - D, p_t + D] as a bracket on each row.
    """
    weights = np.asarray(weights, dtype=float)
    T, S = weights.shape
    fig, ax = plt.subplots(figsize=(max(4.5, 0.42 * S + 2.5), max(3.5, 0.36 * T + 1.8)), dpi=110)
    image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=max(1e-6, float(weights.max())),
                      aspect="auto", interpolation="nearest")
    ax.set_xticks(range(S), src_pieces[:S], rotation=60, ha="right", rotation_mode="anchor",
                  fontsize=_label_size(S))
    ax.set_yticks(range(T), tgt_pieces[:T], fontsize=_label_size(T))
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    if centers is not None:
        centers = np.asarray(centers, dtype=float)[:T]
        ax.plot(centers, range(len(centers)), "o", color="red", markersize=4, label="centre p_t")
        if window is not None:
            for t, p in enumerate(centers):
                left, right = max(p - window, -0.5), min(p + window, S - 0.5)
                ax.plot([left, right], [t, t], color="red", linewidth=0.8, alpha=0.7)
            ax.plot([], [], color="red", linewidth=0.8, label=f"window p_t ± {window}")
        ax.set_xlim(-0.5, S - 0.5)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, fontsize=7, frameon=False)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    if title:
        ax.set_title(title, fontsize=10, pad=18 if centers is not None else 6)
    fig.tight_layout()
    return fig


def heads_figure(layer_weights, src_pieces: list[str], tgt_pieces: list[str],
                 title: str = "") -> Figure:
    """layer_weights (H, T, S): one panel per head, then their mean, shared scale."""
    layer_weights = np.asarray(layer_weights, dtype=float)
    H, T, S = layer_weights.shape
    panels = list(layer_weights) + [layer_weights.mean(0)]
    names = [f"head {h + 1}" for h in range(H)] + ["mean"]
    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(cols * max(3.2, 0.3 * S + 1.6),
                                                  rows * max(2.8, 0.28 * T + 1.4)),
                             dpi=100, squeeze=False)
    vmax = max(1e-6, float(layer_weights.max()))
    for ax, panel, name in zip(axes.flat, panels, names):
        image = ax.imshow(panel, cmap="viridis", vmin=0, vmax=vmax, aspect="auto",
                          interpolation="nearest")
        ax.set_xticks(range(S), src_pieces[:S], rotation=60, ha="right", rotation_mode="anchor",
                      fontsize=_label_size(S) - 1)
        ax.set_yticks(range(T), tgt_pieces[:T], fontsize=_label_size(T) - 1)
        ax.set_title(name, fontsize=9)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.colorbar(image, ax=axes.ravel().tolist(), fraction=0.03, pad=0.02, label="attention weight")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def save_figure(fig: Figure, path) -> None:
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
