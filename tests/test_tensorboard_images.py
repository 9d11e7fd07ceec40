"""TensorBoard's attention images are legible at the size of its cards.

TensorBoard shows an image in a card about 340 px wide, scaled down to fit.
Each card holds one heatmap (a layer's head mean, or one head) drawn about
that wide, with 9-10 pt token labels, a colour bar and a title naming the
sentence, layer and head; a long source is cut into cards of at most
MAX_COLUMNS tokens (checked by eye in headless Chromium).
"""

import struct

import numpy as np
import pytest

from nmt.viz.heatmaps import MAX_COLUMNS, attention_figure, card_figures
from tests.helpers import one_thread, train  # noqa: F401 (fixture)

CARD_PX = 340


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def figure_px(fig) -> tuple[float, float]:
    width, height = fig.get_size_inches() * fig.dpi
    return width, height


def label_sizes(fig) -> list[float]:
    ax = fig.axes[0]
    return [t.get_fontsize() for t in ax.get_xticklabels() + ax.get_yticklabels()]


def pieces(n: int, stem: str) -> list[str]:
    return [f"▁{stem}{i}" for i in range(n)]


def test_one_map_is_one_card_wide_with_readable_labels_a_colour_bar_and_a_title():
    weights = np.random.default_rng(0).dirichlet(np.ones(12), size=10)     # (T=10, S=12)
    fig = attention_figure(weights, pieces(12, "s"), pieces(10, "t"), title="sentence 1, layer 2/3, head 4/4")
    width, _ = figure_px(fig)
    assert width <= CARD_PX + 1                       # shown at its own size in a card
    assert min(label_sizes(fig)) >= 9.5               # 10 pt labels, about 14 px
    assert len(fig.axes) == 2                         # the map and its colour bar
    assert fig.get_suptitle() == "sentence 1, layer 2/3, head 4/4"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == pieces(12, "s")


def test_a_long_source_is_cut_into_cards_on_one_colour_scale():
    S, T = 25, 23
    weights = np.random.default_rng(1).dirichlet(np.ones(S), size=T)        # (23, 25)
    cards = card_figures(weights, pieces(S, "s"), pieces(T, "t"), "sentence 1, layer 1/3, mean of 4 heads")
    # 25 tokens > 16: two cards of 12 and 13 columns
    assert [suffix for suffix, _ in cards] == ["/source_1-12", "/source_13-25"]
    labels = [t.get_text() for _, fig in cards for t in fig.axes[0].get_xticklabels()]
    assert labels == pieces(S, "s")                   # every source token once, in order
    for suffix, fig in cards:
        assert len(fig.axes[0].get_xticklabels()) <= MAX_COLUMNS
        assert figure_px(fig)[0] <= CARD_PX + 1
        assert min(label_sizes(fig)) >= 9.0           # 23 rows: 9 pt (216 / 23 = 9.4, capped at 9)
        assert fig.axes[0].images[0].get_clim() == (0.0, 1.0)      # the default: absolute, 0 to 1
        assert "of 25" in fig.get_suptitle()
    assert np.allclose(cards[1][1].axes[0].images[0].get_array(), weights[:, 12:])
    relative = card_figures(weights, pieces(S, "s"), pieces(T, "t"), "t", scale="relative")
    assert [fig.axes[0].images[0].get_clim() for _, fig in relative] == [(0.0, weights.max())] * 2


def test_local_p_centres_are_drawn_where_they_are_in_each_card():
    """A centre p_t = 14.0 lies in the second card (columns 12..24) at x = 2.0."""
    S, T = 25, 3
    weights = np.full((T, S), 1.0 / S)
    centers = np.array([1.0, 14.0, 20.0])
    cards = card_figures(weights, pieces(S, "s"), pieces(T, "t"), "sentence 1", centers=centers, window=2)
    dots = cards[1][1].axes[0].lines[0]               # the first line drawn: the centres
    assert np.allclose(dots.get_xdata(), centers - 12)
    assert cards[1][1].axes[0].get_xlim() == (-0.5, 12.5)


def test_training_logs_one_card_per_layer_mean_and_per_head(tmp_path, cache_dir, one_thread):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tiny = [f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
            for key, value in (("d_model", 16), ("layers", 2), ("heads", 2), ("ff_size", 32))]
    train(tmp_path, "data=toy", "model/encoder=transformer", "model/decoder=transformer",
          "model/bridge=zero", "model/positional=sinusoidal", *tiny, "trainer.max_steps=2",
          "trainer.val_every=2", "trainer.val_max_sentences=2", "trainer.heatmap_sentences=1",
          "trainer.device=cpu", cache_dir=cache_dir)
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    tags = sorted(events.Tags()["images"])
    assert tags == ["attention/sentence_1/layer_1", "attention/sentence_1/layer_2",
                    "per_head_attention/sentence_1/layer_1/head_1",
                    "per_head_attention/sentence_1/layer_1/head_2",
                    "per_head_attention/sentence_1/layer_2/head_1",
                    "per_head_attention/sentence_1/layer_2/head_2"]
    for tag in tags:                                  # the toy's sources are short: one card each
        image, = events.Images(tag)
        width, height = png_size(image.encoded_image_string)
        assert (image.width, image.height) == (width, height)
        assert width <= CARD_PX + 1, (tag, width)


@pytest.mark.parametrize("S", [1, 16, 17, 40])
def test_every_source_length_gives_cards_of_at_most_sixteen_columns(S):
    weights = np.ones((2, S)) / S
    cards = card_figures(weights, pieces(S, "s"), pieces(2, "t"), "t")
    widths = [len(fig.axes[0].get_xticklabels()) for _, fig in cards]
    assert sum(widths) == S and max(widths) <= MAX_COLUMNS
    assert len(cards) == -(-S // MAX_COLUMNS)


@pytest.mark.parametrize("normaliser, white", [("softmax", False), ("sparsemax", True)])
def test_tensorboard_draws_zeros_white_only_for_a_sparse_normaliser(toy_checkpoint, monkeypatch,
                                                                     normaliser, white):
    import nmt.training.tensorboard as tensorboard
    from nmt.translator import Translator

    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    translator.model.decoder.attention.normaliser = normaliser       # what the config would choose
    asked = []
    monkeypatch.setattr(tensorboard, "card_figures", lambda *args, **kwargs: asked.append(kwargs) or [])
    tensorboard.log_attention_images(None, translator, [("the first of may", "")], step=1)
    assert asked and all(kwargs["exact_zeros"] is white for kwargs in asked)
