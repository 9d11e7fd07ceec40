"""Attention heatmaps of fixed validation sentences, as TensorBoard images."""

import torch

from nmt.viz.attention_data import layers_and_centers
from nmt.viz.heatmaps import attention_figure, heads_figure


def log_attention_images(writer, translator, pairs, step: int) -> None:
    """RNN attention (with local-p centres when present), or for Transformers
    one figure per cross-attention layer with every head and their mean."""
    if not pairs:
        return
    model = translator.model
    was_training = model.training
    model.eval()
    outputs = translator.translate([src for src, _ in pairs])
    with torch.no_grad():
        for i, out in enumerate(outputs):
            if not out.tgt_pieces:
                continue
            layers, centers = layers_and_centers(translator, pairs[i][0], out.tokens)
            if layers is not None:
                for layer in range(layers.shape[0]):
                    fig = heads_figure(layers[layer], out.src_pieces, out.tgt_pieces,
                                       title=f"sentence {i + 1}, cross-attention layer {layer + 1}")
                    writer.add_figure(f"attention/sentence_{i + 1}/layer_{layer + 1}", fig, step)
            else:
                window = getattr(model.decoder.attention, "window", None) if centers is not None else None
                fig = attention_figure(out.attention, out.src_pieces, out.tgt_pieces,
                                       title=f"sentence {i + 1}", centers=centers, window=window)
                writer.add_figure(f"attention/sentence_{i + 1}", fig, step)
    model.train(was_training)

