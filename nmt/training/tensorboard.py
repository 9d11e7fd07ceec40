"""Attention heatmaps of fixed validation sentences, as TensorBoard images."""

import torch

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
            layers, centers = _teacher_forced_attention(translator, pairs[i][0], out)
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


def _teacher_forced_attention(translator, source: str, out):
    """Re-read the model's own output with need_weights: every layer and head
    for Transformers, local-p centres for RNNs."""
    model = translator.model
    src, _, _ = translator._encode([source])
    tgt_in = torch.tensor([[2] + out.tokens], device=src.device)            # (1, T)
    result, _ = model(src, tgt_in, need_weights=True)
    layers = None if result.layers is None else result.layers[0].float().cpu().numpy()  # (L, H, T, S)
    centers = None if result.center is None else result.center[0].float().cpu().numpy()  # (T,)
    return layers, centers
