"""Every number bounded by what the machine and the model can hold (issue 58,
item 4): a beam and n-best against the vocabulary and the free memory on every
route, before any decoding; data.pad_to_multiple, data.vocab_size and dropout
before any data is read; each refusal one line with its bound and reason."""

import time

import pytest
import torch

from nmt.base.errors import NmtError
from tests.test_config_schema import compose_config


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nmt: error: ") and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def translator(toy_checkpoint):
    from nmt.translator import Translator

    return Translator.from_checkpoint(toy_checkpoint, device="cpu")


BEAMS = [(10**9, 1), (100_000, 100_000)]


@pytest.mark.parametrize("beam, nbest", BEAMS)
def test_a_beam_wider_than_the_vocabulary_is_refused_at_once_on_every_route(beam, nbest, translator, toy_checkpoint,
                                                                          tmp_path, capsys):
    from nmt.commands.translate import main as translate
    from nmt.viz.search_tree import beam_tree

    vocab = translator.tokenizer.tgt_vocab_size
    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    expected = f"beam_size={beam} is more than the model's {vocab:,} target subwords"
    routes = {
        "nmt.translate": lambda: translate(["--checkpoint", str(toy_checkpoint), "--input", str(source),
                                            "--beam-size", str(beam), "--nbest", str(nbest)]),
        "Translator.translate": lambda: translator.translate(["the first of may"], beam_size=beam, nbest=nbest),
        "beam_tree (explorer, --beam-tree)": lambda: beam_tree(translator, "the first of may", beam),
    }
    for route, call in routes.items():
        started = time.perf_counter()
        try:
            code = call()
        except NmtError as error:
            assert expected in str(error) and f"use at most {vocab:,}" in str(error), route
        else:
            assert code == 1, route
            assert expected in one_line(capsys), route
        assert time.perf_counter() - started < 20, route        # refused, not decoded


def test_the_validation_beam_is_bounded_by_the_vocabulary_before_any_data_is_read():
    from nmt.config_schema import validate

    with pytest.raises(NmtError, match=r"^trainer.val_beam_size=60 is more than the data.vocab_size=50 subwords "
                                       r"a beam can start from; use at most 50$"):
        validate(compose_config("experiment=quickstart", "trainer.val_beam_size=60", "data.vocab_size=50"))
    validate(compose_config("experiment=quickstart", "trainer.val_beam_size=50", "data.vocab_size=50"))


def test_a_beam_over_the_free_memory_is_refused_with_the_figure(translator, monkeypatch):
    from nmt.decoding import search_bounds

    monkeypatch.setattr(search_bounds, "free_memory", lambda device=None: 50_000)
    with pytest.raises(NmtError) as refused:
        translator.translate(["the first of may"] * 3, beam_size=200, nbest=2)
    message = str(refused.value)
    assert message.startswith("beam_size=200 needs about ") and "for a batch of 3 sentences" in message
    assert message.endswith("more than the 50.0 kB free on cpu; lower the beam size or the batch size")
    assert translator.translate(["the first of may"], beam_size=2)[0].text          # a small beam still fits


def test_byte_counts_are_read_as_units_never_as_long_figures():
    from nmt.decoding.search_bounds import beam_bytes, human_bytes

    assert human_bytes(999) == "999 bytes" and human_bytes(1500) == "1.5 kB"
    assert human_bytes(7.2e12) == "7.2 TB" and human_bytes(3e21) == "3,000,000.0 PB"
    # --beam-size 10^9 over 8,000 subwords, 64 sentences of 30 subwords: petabytes, said as such
    assert human_bytes(beam_bytes(64, 10**9, 8000, 30, 56)).endswith(" PB")


def test_the_hugging_face_route_bounds_the_beam_too(tmp_path_factory):
    pytest.importorskip("transformers")
    from nmt.hf.translator import HFTranslator
    from tests.hf_marian import build_tiny_marian

    hf = HFTranslator(str(build_tiny_marian(tmp_path_factory.mktemp("marian"))), device="cpu")
    for call in (lambda: hf.translate(["the first of may"], beam_size=10**9),
                 lambda: hf.record_beam("the first of may", 100_000)):
        with pytest.raises(NmtError, match=rf"^beam_size=\d+ is more than the model's {hf.vocab_size} target"):
            call()
    with pytest.raises(NmtError, match=r"^beam_size='5' must be a whole number >= 1$"):
        hf.translate(["the first of may"], beam_size="5")


@pytest.mark.parametrize("override, expected", [
    ("data.pad_to_multiple=1000000", "data.pad_to_multiple=1000000 is more than the longest sentence "
                                     "(data.max_len=32 subwords, +1 for </s>): every batch would be padded past it; "
                                     "use at most 33"),
    (f"data.pad_to_multiple={2**63}", f"data.pad_to_multiple={2**63} is more than the longest sentence"),
    ("data.vocab_size=4294967296", "data.vocab_size=4294967296: must be in [5, 1048576]"),
])
def test_data_sizes_are_bounded_before_any_data_is_read(override, expected):
    from nmt.config_schema import validate

    with pytest.raises(NmtError) as refused:
        validate(compose_config("experiment=quickstart", override))
    assert str(refused.value).startswith(expected)


@pytest.mark.parametrize("p", [0.9999999999, 1 - 2**-17, 0.5, 0.0])
def test_dropout_survives_every_probability_below_one(p):
    from nmt.speedups.dropout import Dropout, noise_from_words

    words = torch.arange(-(2**40), 2**40, 2**30, dtype=torch.int64)
    noise = noise_from_words(words, (words.numel() * 4,), p)              # was ZeroDivisionError at 0.9999999999
    assert torch.isfinite(noise).all()
    layer = Dropout(p).train()
    out = layer(torch.ones(4096))
    assert torch.isfinite(out).all()


def test_dropout_of_one_is_refused_by_the_config():
    from nmt.config_schema import validate

    with pytest.raises(NmtError, match=r"^model.encoder.dropout=1.0: must be in \[0, 1\)"):
        validate(compose_config("experiment=quickstart", "model.encoder.dropout=1.0"))


@pytest.mark.parametrize("extra", [2**64, 2**31])
def test_a_length_limit_past_any_output_is_refused_without_an_overflowed_figure(extra, toy_checkpoint, tmp_path,
                                                                               capsys):
    from nmt.commands.translate import main as translate
    from nmt.translator import Translator

    said = f"max_len_extra={extra} (--max-length-extra) must be at most 2,147,483,647"
    with pytest.raises(NmtError, match=rf"^{said.replace('(', '[(]').replace(')', '[)]')}"):
        Translator.from_checkpoint(toy_checkpoint, device="cpu", max_len_extra=extra)
    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    assert translate(["--checkpoint", str(toy_checkpoint), "--input", str(source),
                      "--max-length-extra", str(extra)]) == 1
    line = one_line(capsys)
    assert said in line and "18446744073709551617" not in line
    with pytest.raises(NmtError, match=r"^max_len_ratio=1e\+300 \(--max-length-ratio\) must be at most 1000"):
        Translator.from_checkpoint(toy_checkpoint, device="cpu", max_len_ratio=1e300)


def test_a_model_too_big_for_memory_is_said_in_units_not_in_the_allocators_words(toy_checkpoint, tmp_path):
    from nmt.translator import Translator
    from nmt.training.config_checks import check_config

    state = torch.load(toy_checkpoint, weights_only=True)
    state["config"]["model"]["encoder"]["hidden_size"] = 10**7           # 300 TB of GRU weights
    torch.save(state, tmp_path / "huge.pt")
    with pytest.raises(NmtError) as refused:
        Translator.from_checkpoint(tmp_path / "huge.pt", device="cpu")
    message = str(refused.value)
    assert "needs a block of 300.0 TB of memory, more than this machine could give" in message
    assert "alloc_cpu" not in message and "DefaultCPUAllocator" not in message and "300000000000000" not in message
    # training: the model's memory is counted on the meta device before any data is read
    with pytest.raises(NmtError, match=r"^the model has [\d,]+ parameters: training it holds about [\d,.]+ [PT]B "):
        check_config(compose_config("experiment=quickstart", "model.encoder.hidden_size=10000000",
                                    f"cache_dir={tmp_path / 'cache'}", "trainer.device=cpu"))
    assert not (tmp_path / "cache").exists()


def test_a_position_table_too_big_for_memory_names_model_positional_max_len(tmp_path):
    """Where the learned position table is what does not fit, the refusal names
    model.positional.max_len, not the model's widths (it said "make it smaller
    (hidden_size, d_model, ff_size, layers)")."""
    from nmt.models.build import build_model
    from nmt.training.config_checks import check_config

    overrides = ("experiment=transformer_small", "model/positional=learned", "model.positional.max_len=1000000000000",
                 "data.max_len=100", f"cache_dir={tmp_path / 'cache'}", "trainer.device=cpu")
    advice = ("make model.positional.max_len smaller (its table of 1,000,000,000,000 learned positions is what "
              "does not fit; data.max_len + 1 positions are enough)")
    with pytest.raises(NmtError) as refused:              # training: counted on the meta device first
        check_config(compose_config(*overrides))
    assert str(refused.value).endswith(f"free on cpu; {advice}") and "hidden_size" not in str(refused.value)
    cfg = compose_config(*overrides)
    with pytest.raises(NmtError) as refused:              # building it (a checkpoint's config): the failed block
        build_model(cfg.model, 100, 100, speedups=False)
    # 10^12 positions x d_model 256 x 4 bytes: the 1.0 PB block the allocator refused
    assert str(refused.value) == ("cannot build nmt.core.transformer_encoder.TransformerEncoder: it needs a block "
                                  f"of 1.0 PB of memory, more than this machine could give; {advice} or use a "
                                  "machine with more memory")
    assert not (tmp_path / "cache").exists()


def test_a_config_key_of_another_type_is_named_with_its_article(toy_checkpoint, tmp_path):
    from nmt.store.checkpoints import load_checkpoint

    state = torch.load(toy_checkpoint, weights_only=True)
    state["config"]["model"][1.5] = 3
    torch.save(state, tmp_path / "key.pt")
    with pytest.raises(NmtError) as refused:
        load_checkpoint(tmp_path / "key.pt")
    assert "has a key that is a float (not text or a whole number) at model.1.5" in str(refused.value)
    assert "a int" not in str(refused.value)
