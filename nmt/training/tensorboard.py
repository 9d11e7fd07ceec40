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
"""

import torch

from nmt.viz.attention_data import exact_zeros, layers_and_centers
from nmt.viz.heatmaps import card_figures


def _add(writer, tag: str, step: int, *args, **kwargs) -> None:
    for suffix, fig in card_figures(*args, **kwargs):
        writer.add_figure(tag + suffix, fig, step)              # closes the figure


def log_attention_images(writer, translator, pairs, step: int) -> None:
    """RNN attention (with local-p centres when present), or for Transformers
    each cross-attention layer's head mean and each of its heads."""
    if not pairs:
        return
    model = translator.model
    was_training = model.training
    model.eval()
    outputs = translator.translate([src for src, _ in pairs])
    zeros = exact_zeros(translator)              # white only for a sparse normaliser's real zeros
    with torch.no_grad():
        for i, out in enumerate(outputs):
            if not out.tgt_pieces:
                continue
            src, tgt = out.src_pieces, out.tgt_pieces
            layers, centers = layers_and_centers(translator, pairs[i][0], out.tokens)
            if layers is not None:                                # (L, H, T, S)
                L, H = layers.shape[:2]
                for layer in range(L):
                    where = f"sentence {i + 1}, layer {layer + 1}/{L}"
                    _add(writer, f"attention/sentence_{i + 1}/layer_{layer + 1}", step,
                         layers[layer].mean(0), src, tgt, f"{where}, mean of {H} heads", exact_zeros=zeros)
                    for head in range(H):
                        _add(writer, f"per_head_attention/sentence_{i + 1}/layer_{layer + 1}/head_{head + 1}",
                             step, layers[layer, head], src, tgt, f"{where}, head {head + 1}/{H}",
                             exact_zeros=zeros)
            else:
                window = getattr(model.decoder.attention, "window", None) if centers is not None else None
                _add(writer, f"attention/sentence_{i + 1}", step, out.attention, src, tgt,
                     f"sentence {i + 1}", centers=centers, window=window, exact_zeros=zeros)
    model.train(was_training)
