"""Guided alignment (Garg et al. 2019): the loss by hand, the Pharaoh file and
its errors, words mapped to subwords, batches that carry the guide, weight 0
changing nothing, and a supervised head that learns the toy task's alignment."""

import math

import pytest
import torch

from nmt.data.alignments import (main as alignments_main, read_alignments, subword_guide,
                                 word_of_pieces)
from nmt.data.pipeline import prepare_data
from nmt.data.toy import make_toy_corpus, toy_alignment
from nmt.base.errors import NmtError
from nmt.core.loss import guided_alignment_loss
from nmt.training.guided_alignment import GuidedAlignmentLoss
from tests.helpers import make_config, one_thread, run_cli, train  # noqa: F401 - one_thread: a fixture

pytestmark = pytest.mark.usefixtures("one_thread")
N_TRAIN = 300
TINY_TRANSFORMER = ["model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
                    "model/positional=sinusoidal", "optimizer.lr=0.003"] + [
    f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
    for key, value in (("d_model", 32), ("layers", 2), ("heads", 2), ("ff_size", 64), ("dropout", 0.0))]
QUICK = ["data=toy", f"data.n_train={N_TRAIN}", "trainer.val_max_sentences=5", "trainer.heatmap_sentences=0",
         "trainer.keep_last=0"]


def test_guided_loss_on_a_2x3_example_by_hand():
    # attention a (T=2, S=3) and the given alignment: target 0 <- source 0,
    # target 1 <- sources 1 and 2, so G = [[1, 0, 0], [0, 0.5, 0.5]]:
    #   -(log 0.7 + 0.5 log 0.3 + 0.5 log 0.6) = -(-0.3567 - 0.6020 - 0.2554) = 1.2141
    #   divided by |T| = 2 linked target positions: 0.6070
    attention = torch.tensor([[[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]])      # (B, T, S)
    guide = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]])
    total, linked = guided_alignment_loss(attention, guide)
    assert linked == 2
    assert total.item() == pytest.approx(1.2141, abs=1e-4)
    assert total.item() / linked == pytest.approx(0.6070, abs=1e-4)
    # a third target position with no link (e.g. eos) adds nothing and is not counted
    cross_entropy = guided_alignment_loss
    total, linked = cross_entropy(torch.cat([attention, torch.tensor([[[0.0, 0.0, 1.0]]])], 1),
                                  torch.cat([guide, torch.zeros(1, 1, 3)], 1))
    assert (total.item(), linked) == (pytest.approx(1.2141, abs=1e-4), 2)
    # a zero weight where G > 0 (sparsemax) counts as 1e-9: large but finite
    total, _ = cross_entropy(torch.tensor([[[0.0, 1.0, 0.0]]]), torch.tensor([[[1.0, 0.0, 0.0]]]))
    assert total.item() == pytest.approx(-math.log(1e-9), rel=1e-5)


def test_words_map_to_subwords_uniformly():
    # source "the dogs ran" as ▁the ▁dog s ▁ran -> words 0 1 1 2
    # target "die Hunde"    as ▁die ▁Hun de     -> words 0 1 1
    src_words = word_of_pieces(["\u2581the", "\u2581dog", "s", "\u2581ran"])
    tgt_words = word_of_pieces(["\u2581die", "\u2581Hun", "de"])
    assert (src_words, tgt_words) == ([0, 1, 1, 2], [0, 1, 1])
    # links 0-0, 1-1, 2-1: target word 1 comes from source words 1 and 2, that is
    # subwords 1, 2 and 3, so each subword of "Hunde" puts 1/3 on each of them
    guide = subword_guide([(0, 0), (1, 1), (2, 1)], src_words, tgt_words)
    third = pytest.approx(1 / 3)
    assert guide == [(0, 0, 1.0), (1, 1, third), (1, 2, third), (1, 3, third),
                     (2, 1, third), (2, 2, third), (2, 3, third)]
    # a piece that is the meta space alone starts the word the next piece continues
    assert word_of_pieces(["\u2581", "1", "\u25812"]) == [0, 0, 1]


PAIRS = [("a b c", "x y"), ("d e", "z")]


@pytest.mark.parametrize("text, message", [
    ("0-0\n", "has 1 lines but the training data has 2 pairs"),
    ("0-0 1-1\n0-0\n0-0\n", "has 3 lines but the training data has 2 pairs"),
    ("0-0 1x1\n0-0\n", "line 1: '1x1' is not a link 'i-j'"),
    ("0-0\n0--1\n", "line 2: '0--1' is not a link 'i-j'"),
    ("3-0\n0-0\n", "line 1: link 3-0 is out of range; the pair has 3 source and 2 target words"),
    ("0-0\n1-1\n", "line 2: link 1-1 is out of range; the pair has 2 source and 1 target words"),
])
def test_reading_errors_name_the_line(tmp_path, text, message):
    path = tmp_path / "a.align"
    path.write_text(text)
    with pytest.raises(NmtError, match=message):
        read_alignments(path, PAIRS)


def test_empty_lines_and_several_links_per_word_are_read(tmp_path):
    path = tmp_path / "a.align"
    path.write_text("0-0 1-0 2-1\n\n")
    assert read_alignments(path, PAIRS) == [[(0, 0), (1, 0), (2, 1)], []]
    with pytest.raises(NmtError, match="no such file"):
        read_alignments(tmp_path / "missing", PAIRS)


@pytest.fixture(scope="module")
def toy_alignments(tmp_path_factory):
    """The toy task's true alignments of data=toy data.n_train=N_TRAIN, written by the CLI."""
    path = tmp_path_factory.mktemp("align") / "toy.align"
    assert alignments_main(["toy", str(path), "--n-train", str(N_TRAIN)]) == 0
    return path


def test_the_toy_writer_gives_the_true_alignment(toy_alignments):
    pairs = make_toy_corpus(N_TRAIN, 200, 200, 0).train
    lines = toy_alignments.read_text().splitlines()
    assert len(lines) == N_TRAIN
    src, tgt = pairs[0]
    # "i-j": source word i, target word j; toy_alignment gives, for each target word, its source word
    assert lines[0] == " ".join(f"{i}-{j}" for j, i in enumerate(toy_alignment(src, tgt)))


def test_batches_carry_the_guide_of_their_own_pairs(toy_alignments, cache_dir):
    # max_len 10 drops the pairs with a weekday (11 target words): their alignment lines go with them
    cfg = make_config("data=toy", f"data.n_train={N_TRAIN}", "data.max_len=10",
                      f"data.train_alignments={toy_alignments}", cache_dir=cache_dir)
    data = prepare_data(cfg.data, cache_dir, seed=1)
    assert 0 < data.stats["train_dropped_too_long"] and len(data.train.guides) == data.stats["train_pairs"]
    tok = data.tokenizer
    checked = 0
    for batch in data.train.batches(0)[:3]:
        B, T1 = batch.tgt.shape
        assert batch.alignment.shape == (B, T1 - 1, batch.src.size(1))   # (B, T, S), row t = label t
        for row in range(B):
            src_ids = [i for i in batch.src[row].tolist() if i != 0]
            tgt_ids = [i for i in batch.tgt[row, 1:].tolist() if i not in (0, 3)]
            src = " ".join(p.lstrip("\u2581") for p in tok.src_pieces(src_ids))
            tgt = " ".join(p.lstrip("\u2581") for p in tok.tgt_pieces(tgt_ids))
            truth = toy_alignment(src, tgt)                           # toy words are single pieces
            guide = batch.alignment[row, : len(tgt_ids)]
            assert guide.argmax(-1).tolist() == truth and guide.sum(-1).tolist() == [1.0] * len(truth)
            assert float(batch.alignment[row, len(tgt_ids):].abs().sum()) == 0.0   # eos, padding
            checked += 1
    assert checked > 10


def test_streaming_refuses_alignments(toy_alignments, cache_dir):
    cfg = make_config("data=files_streaming", "data.train_src=a", "data.train_tgt=b", "data.valid_src=c",
                      "data.valid_tgt=d", f"data.train_alignments={toy_alignments}", cache_dir=cache_dir)
    with pytest.raises(NmtError, match="not supported with data.streaming"):
        prepare_data(cfg.data, cache_dir, seed=1)


def test_a_weight_needs_a_file_and_a_real_layer_and_head(tmp_path, toy_alignments, cache_dir):
    with pytest.raises(NmtError, match="needs data.train_alignments"):
        train(tmp_path / "a", *QUICK, "trainer.guided_alignment.weight=1", cache_dir=cache_dir)
    aligned = [*QUICK, *TINY_TRANSFORMER, f"data.train_alignments={toy_alignments}",
               "trainer.guided_alignment.weight=1"]
    with pytest.raises(NmtError, match=r"layer=2 but the decoder has 2 layer\(s\)"):
        train(tmp_path / "b", *aligned, "trainer.guided_alignment.layer=2", cache_dir=cache_dir)
    with pytest.raises(NmtError, match=r"head=2 but the decoder has 2 heads; pick one in \[0, 1\]"):
        train(tmp_path / "c", *aligned, "trainer.guided_alignment.head=2", cache_dir=cache_dir)
    with pytest.raises(NmtError, match=r"weight=-0.5: must be >= 0"):
        train(tmp_path / "d", *aligned, "trainer.guided_alignment.weight=-0.5", cache_dir=cache_dir)


def test_a_bad_file_is_one_line_from_the_cli(tmp_path):
    bad = tmp_path / "bad.align"
    bad.write_text("0-0\n")
    result = run_cli("nmt.train", *QUICK, f"data.train_alignments={bad}", f"hydra.run.dir={tmp_path / 'run'}",
                     f"cache_dir={tmp_path / 'cache'}", "trainer.max_steps=1")
    err = result.stderr.decode().strip().splitlines()
    assert result.returncode == 1, result.stderr.decode()[-2000:]
    assert len(err) == 1, result.stderr.decode()[-2000:]
    assert err[-1] == f"nmt: error: {bad} has 1 lines but the training data has {N_TRAIN} pairs; the " \
                      "alignment file must have one line per training pair, in order"


def weights_after(run_dir, *overrides, cache_dir):
    trainer = train(run_dir, *QUICK, *TINY_TRANSFORMER, "trainer.max_steps=4", "trainer.val_every=4",
                    *overrides, cache_dir=cache_dir)
    return {k: v.clone() for k, v in trainer.model.state_dict().items()}


def test_weight_zero_trains_bit_identical_weights(tmp_path, toy_alignments, cache_dir):
    plain = weights_after(tmp_path / "plain", cache_dir=cache_dir)
    zero = weights_after(tmp_path / "zero", f"data.train_alignments={toy_alignments}",
                         "trainer.guided_alignment.weight=0", cache_dir=cache_dir)
    assert plain.keys() == zero.keys()
    assert all(torch.equal(plain[k], zero[k]) for k in plain)
    guided = weights_after(tmp_path / "guided", f"data.train_alignments={toy_alignments}",
                           "trainer.guided_alignment.weight=1", cache_dir=cache_dir)
    assert not all(torch.equal(plain[k], guided[k]) for k in plain)      # the test can fail


def agreement(trainer, layer, head):
    """Share of target words whose supervised attention peaks on the true source word."""
    model, tok = trainer.model.eval(), trainer.tokenizer
    hit = total = 0
    for src, tgt in trainer.valid_pairs:
        with torch.no_grad():
            out, _ = model(torch.tensor([tok.encode_src(src)]), torch.tensor([[2] + tok.encode_tgt(tgt)]),
                           need_weights=True)
        truth = toy_alignment(src, tgt)
        supervised = GuidedAlignmentLoss(layer=layer, head=head).attention(model.decoder, out)   # (1, T, S)
        peaks = supervised[0, : len(truth)].argmax(-1)
        hit += sum(int(p == t) for p, t in zip(peaks.tolist(), truth))
        total += len(truth)
    return hit / total


@pytest.mark.parametrize("decoder", ["transformer", "rnn"])
def test_the_supervised_attention_learns_the_true_alignment(tmp_path, toy_alignments, cache_dir, decoder):
    model = TINY_TRANSFORMER if decoder == "transformer" else [
        "experiment=quickstart", "model.encoder.hidden_size=64", "model.decoder.hidden_size=64"]
    common = [*QUICK, *model, "trainer.max_steps=60", "trainer.val_every=60", "trainer.val_max_sentences=20",
              f"data.train_alignments={toy_alignments}", "trainer.guided_alignment.layer=0",
              "trainer.guided_alignment.head=1"]
    guided = train(tmp_path / "g", *common, "trainer.guided_alignment.weight=1", cache_dir=cache_dir)
    plain = train(tmp_path / "p", *common, cache_dir=cache_dir)
    with_guide, without = agreement(guided, 0, 1), agreement(plain, 0, 1)
    assert with_guide > 0.9 and with_guide > without + 0.2, (with_guide, without)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "g" / "tensorboard"))
    events.Reload()
    logged = [e.value for e in events.Scalars("train/guided_alignment_loss")]
    assert logged[-1] < logged[0]                                         # it learns the alignment
    assert "train/guided_alignment_loss" not in EventAccumulator(str(tmp_path / "p" / "tensorboard")).Reload().Tags()["scalars"]


def test_gzip_bom_and_windows_line_ends_are_read(tmp_path):
    import gzip

    path = tmp_path / "a.align.gz"
    path.write_bytes(gzip.compress("\ufeff0-0 2-1\r\n1-0\r\n".encode()))
    assert read_alignments(path, PAIRS) == [[(0, 0), (2, 1)], [(1, 0)]]
    bad = tmp_path / "b.align"
    bad.write_bytes(b"0-0\n\xff-1\n")
    with pytest.raises(NmtError, match="line 2: invalid UTF-8"):
        read_alignments(bad, PAIRS)


def test_the_readme_commands_through_the_cli(tmp_path):
    # python -m nmt.data.alignments toy toy.align, then nmt.train with it, as the README says
    links = tmp_path / "toy.align"
    written = run_cli("nmt.data.alignments", "toy", str(links), "--n-train", str(N_TRAIN))
    assert written.returncode == 0 and written.stdout.decode().strip() == f"wrote {N_TRAIN} lines to {links}"
    result = run_cli("nmt.train", *QUICK, *TINY_TRANSFORMER, f"data.train_alignments={links}",
                     "trainer.guided_alignment.weight=1.0", "trainer.max_steps=2", "trainer.val_every=2",
                     "trainer.log_every=1", f"hydra.run.dir={tmp_path / 'run'}",
                     f"cache_dir={tmp_path / 'cache'}")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert (tmp_path / "run" / "checkpoints" / "best.pt").is_file()


def test_multi30k_words_map_to_their_own_subwords(tmp_path, cache_dir):
    # Real text, where sentencepiece splits words ("vieler" -> "▁viele" "r") and
    # punctuation stays on its word ("Büsche." -> "▁Büsche" "."), as eflomal's links
    # over whitespace words expect. Links j*n_src//n_tgt - j stand in for an aligner's:
    # every subword of target word j must put 1/n on exactly the n subwords of that
    # source word, whose text (NFKC, as sentencepiece normalises) is the word.
    import gzip
    import unicodedata

    from tests.helpers import MULTI30K

    if not (MULTI30K / "train.de.gz").is_file():
        pytest.skip(f"real-data test: Multi30k not found at {MULTI30K} (../shared/data/multi30k)")
    n = 400
    sides = {}
    for lang in ("de", "en"):
        with gzip.open(MULTI30K / f"train.{lang}.gz", "rt", encoding="utf-8") as f:
            sides[lang] = [next(f).rstrip("\n") for _ in range(n)]
        (tmp_path / f"train.{lang}").write_text("\n".join(sides[lang]) + "\n", encoding="utf-8")
    pairs = list(zip(sides["de"], sides["en"]))
    lines = []
    for src, tgt in pairs:
        n_src, n_tgt = len(src.split()), len(tgt.split())
        lines.append(" ".join(f"{j * n_src // n_tgt}-{j}" for j in range(n_tgt)))
    (tmp_path / "train.links").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = make_config("data=files", f"data.train_src={tmp_path / 'train.de'}",
                      f"data.train_tgt={tmp_path / 'train.en'}", f"data.valid_src={tmp_path / 'train.de'}",
                      f"data.valid_tgt={tmp_path / 'train.en'}", "data.vocab_size=1000",
                      f"data.train_alignments={tmp_path / 'train.links'}", cache_dir=cache_dir)
    data = prepare_data(cfg.data, cache_dir, seed=1)
    tok = data.tokenizer
    by_source = {tuple(tok.encode_src(s)): (s, t) for s, t in pairs}
    split = checked = 0
    for batch in data.train.batches(0):
        for row in range(len(batch.src)):
            src_ids = [i for i in batch.src[row].tolist() if i != 0]
            tgt_ids = [i for i in batch.tgt[row, 1:].tolist() if i not in (0, 3)]
            src, tgt = by_source[tuple(src_ids)]
            src_pieces, tgt_pieces = tok.src_pieces(src_ids), tok.tgt_pieces(tgt_ids)
            src_words, tgt_words = word_of_pieces(src_pieces), word_of_pieces(tgt_pieces)
            words = src.split()
            for t, j in enumerate(tgt_words):
                i = j * len(words) // len(tgt.split())
                columns = [s for s, w in enumerate(batch.alignment[row, t].tolist()) if w > 0]
                text = "".join(src_pieces[s] for s in columns).replace("\u2581", "")
                assert text == unicodedata.normalize("NFKC", words[i]), (src, t)
                assert columns == [s for s, w in enumerate(src_words) if w == i]
                assert batch.alignment[row, t, columns].tolist() == pytest.approx([1 / len(columns)] * len(columns))
                split += len(columns) > 1
            assert float(batch.alignment[row, len(tgt_ids):].abs().sum()) == 0.0   # eos, padding
            checked += 1
    assert checked == n and split > 100
