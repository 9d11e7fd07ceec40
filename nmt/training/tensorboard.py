"""Attention heatmaps of fixed validation sentences, as TensorBoard images.

One heatmap per card, drawn for the card's width (nmt.viz.heatmaps), so the
token labels read without "Show actual image size":

    attention/sentence_N              an RNN decoder's attention
    attention/sentence_N/layer_L      a Transformer layer's cross-attention,
                                      the mean over its heads
    per_head_attention/sentence_N/layer_L/head_H
                                      each head of that layer, in a section
                                      of its own below the means

A source longer than heatmaps.MAX_COLUMNS tokens is cut into cards that
cover its parts: the tag then ends in /source_A-B.

`attention_cards` reads the maps from the model (the training thread's
work, a few translations); `draw_cards` renders and writes them, which
needs no model: the cards hold numpy copies, so a drawing thread can do it
while training goes on (`nmt.training.heatmap_drawer`).
"""

from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.utils.tensorboard._utils import figure_to_image

from nmt.viz.attention_data import exact_zeros, layers_and_centers
from nmt.viz.heatmaps import card_figures


@dataclass
class Card:
    """One heatmap to draw under `tag`: the arguments of `card_figures`."""
    tag: str
    weights: np.ndarray                        # (T, S)
    src: list[str]
    tgt: list[str]
    title: str
    options: dict = field(default_factory=dict)  # centers, window, exact_zeros


def attention_cards(translator, pairs) -> list[Card]:
    """RNN attention (with local-p centres when present), or for Transformers
    each cross-attention layer's head mean and each of its heads."""
    if not pairs:
        return []
    model = translator.model
    was_training = model.training
    model.eval()
    outputs = translator.translate([src for src, _ in pairs])
    zeros = exact_zeros(translator)              # white only for a sparse normaliser's real zeros
    cards = []
    with torch.no_grad():
        for i, out in enumerate(outputs):
            if not out.tgt_pieces:
                continue
            src, tgt = out.src_pieces, out.tgt_pieces
            layers, centers = layers_and_centers(translator, pairs[i][0], out.tokens)
            if layers is not None:                                # (L, H, T, S)
                cards += _layer_cards(layers, i, src, tgt, zeros)
            else:
                window = getattr(model.decoder.attention, "window", None) if centers is not None else None
                cards.append(Card(f"attention/sentence_{i + 1}", np.array(out.attention), src, tgt,
                                  f"sentence {i + 1}", {"centers": centers, "window": window,
                                                        "exact_zeros": zeros}))
    model.train(was_training)
    return cards


def _layer_cards(layers: np.ndarray, i: int, src, tgt, zeros: bool) -> list[Card]:
    """layers (L, H, T, S) of sentence i: each layer's head mean, then each head."""
    L, H = layers.shape[:2]
    cards = []
    for layer in range(L):
        where = f"sentence {i + 1}, layer {layer + 1}/{L}"
        cards.append(Card(f"attention/sentence_{i + 1}/layer_{layer + 1}", layers[layer].mean(0), src, tgt,
                          f"{where}, mean of {H} heads", {"exact_zeros": zeros}))
        cards += [Card(f"per_head_attention/sentence_{i + 1}/layer_{layer + 1}/head_{head + 1}",
                       layers[layer, head], src, tgt, f"{where}, head {head + 1}/{H}", {"exact_zeros": zeros})
                  for head in range(H)]
    return cards


def draw_cards(writer, cards: list[Card], step: int, lock=None, cancel=None) -> None:
    """Render each card (cut into /source_A-B parts when long) and add it to
    `writer`, as SummaryWriter.add_figure would, holding `lock` (a
    threading.Lock shared with the other writers) only to add it; stops
    before the next card once `cancel` (a threading.Event) is set."""
    for card in cards:
        if cancel is not None and cancel.is_set():
            return
        for suffix, fig in card_figures(card.weights, card.src, card.tgt, card.title, **card.options):
            image = figure_to_image(fig)                         # (3, H, W) uint8; closes the figure
            with lock or nullcontext():
                writer.add_image(card.tag + suffix, image, step, dataformats="CHW")


def log_attention_images(writer, translator, pairs, step: int) -> None:
    """The cards of `pairs`, drawn on this thread."""
    draw_cards(writer, attention_cards(translator, pairs), step)
