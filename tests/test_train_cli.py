"""python -m nmt.train data=files ... as a user runs it, with bad files and bad
configs: one `nmt: error:` line that names the problem and what to do, no
traceback, exit 1. Real files in a temporary folder, real processes."""

import pytest
import torch

from nmt.data.tokenizer import Tokenizer
from nmt.data.toy import make_toy_corpus
from tests.helpers import run_cli

CORPUS = make_toy_corpus(40, 5, 0, seed=1)
TINY = ("experiment=quickstart", "data.vocab_size=60", "trainer.max_steps=2",
        "trainer.val_max_sentences=5", "trainer.heatmap_sentences=0", "trainer.keep_last=0")
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def lines(pairs, side):
    return "".join(pair[side] + "\n" for pair in pairs).encode()


@pytest.fixture
def files(tmp_path):
    """Good parallel files; a test spoils one of them."""
    folder = tmp_path / "data"
    folder.mkdir()
    for name, pairs in (("train", CORPUS.train), ("valid", CORPUS.valid)):
        (folder / f"{name}.src").write_bytes(lines(pairs, 0))
        (folder / f"{name}.tgt").write_bytes(lines(pairs, 1))
    return folder


def train_cli(tmp_path, files, *overrides, train_src=None, train_tgt=None):
    return run_cli("nmt.train", *TINY, "data=files",
                   f"data.train_src={train_src or files / 'train.src'}",
                   f"data.train_tgt={train_tgt or files / 'train.tgt'}",
                   f"data.valid_src={files / 'valid.src'}", f"data.valid_tgt={files / 'valid.tgt'}",
                   f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={tmp_path / 'run'}", *overrides,
                   env=ONE_THREAD)


def one_error_line(done) -> str:
    """exit 1, exactly one `nmt: error:` line on stderr, said once, no traceback."""
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("nmt: error: ")]
    assert len(errors) == 1, stderr
    message = errors[0].removeprefix("nmt: error: ")
    assert stderr.count(message) == 1, stderr          # not echoed again by the log
    return message


def unequal(files):
    (files / "bad.tgt").write_bytes(lines(CORPUS.train[:-3], 1))
    return {"train_tgt": files / "bad.tgt"}


def invalid_utf8(files):
    data = lines(CORPUS.train, 0).split(b"\n")
    data[6] = b"the fifth of m\xe4rz"                    # Latin-1, not UTF-8
    (files / "bad.src").write_bytes(b"\n".join(data))
    return {"train_src": files / "bad.src"}


def empty(files):
    (files / "bad.src").write_bytes(b"")
    return {"train_src": files / "bad.src"}


def blank_lines(files):
    (files / "bad.src").write_bytes(b"\n" * len(CORPUS.train))
    return {"train_src": files / "bad.src"}


def missing(files):
    return {"train_src": files / "no_such.src"}


def directory(files):
    return {"train_src": files}


@pytest.mark.parametrize("spoil, message", [
    (unequal, "train.src has 40 lines but {data}/bad.tgt has 37; parallel files must have one "
              "translation per line"),
    (invalid_utf8, "{data}/bad.src line 7: invalid UTF-8 (byte 15 of the line); convert the file to UTF-8"),
    (empty, "{data}/bad.src is empty; expected one sentence a line"),
    (blank_lines, "no training pair has text on both sides; check the training files"),
    (missing, "{data}/no_such.src: no such file; check the data paths in the config"),
    (directory, "{data} is a directory; expected a text file with one sentence a line"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_bad_training_files_are_one_line(tmp_path, files, spoil, message):
    done = train_cli(tmp_path, files, **spoil(files))
    assert message.format(data=files) in one_error_line(done)
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_bom_windows_line_ends_and_long_lines(tmp_path, files):
    """A BOM and CRLF are removed; two 200-word lines are dropped and counted."""
    src = [s for s, _ in CORPUS.train[:-2]] + ["monday " * 200, "the first of " * 70]
    (files / "win.src").write_bytes(b"\xef\xbb\xbf" + "".join(s + "\r\n" for s in src).encode())
    (files / "win.tgt").write_bytes("".join(t + "\r\n" for _, t in CORPUS.train).encode())
    done = train_cli(tmp_path, files, train_src=files / "win.src", train_tgt=files / "win.tgt")
    assert done.returncode == 0, done.stderr.decode()
    # Hydra logs to stdout (and train.log)
    assert "38 training pairs (dropped 0 empty, 2 longer than 100 subwords)" in done.stdout.decode()
    state = torch.load(tmp_path / "run" / "checkpoints" / "last.pt", weights_only=True)
    tok = Tokenizer.from_bytes(state["tokenizer"])
    pieces = tok.src_pieces(range(tok.src_vocab_size))
    assert not [p for p in pieces if "\r" in p or "\ufeff" in p]    # neither reached the vocabulary


# -- config mistakes -----------------------------------------------------------

def test_misspelled_group_option_is_one_line_with_the_choices(tmp_path, files):
    done = train_cli(tmp_path, files, "model/encoder=lstmm")
    assert one_error_line(done) == ("model/encoder=lstmm: no such option; did you mean lstm? "
                                    "model/encoder is one of gru, lstm, lstmn, transformer")
    assert "search path" not in done.stderr.decode()


@pytest.mark.parametrize("override, message", [
    ("model/atention=bahdanau", "model/atention=bahdanau: no such config group; did you mean "
                                "model/attention=bahdanau? the groups are data, experiment, model/attention, "
                                "model/bridge, model/decoder, model/encoder, model/positional, optimizer, "
                                "schedule, trainer"),
    ("model.attention=bahdanau", "model.attention=bahdanau: a config group is chosen with '/': "
                                 "model/attention=bahdanau (model.attention.KEY=VALUE sets one of its keys; "
                                 "model/attention is one of bahdanau, cosine, coverage, luong_concat, "
                                 "luong_dot, luong_general, luong_location, multihead, scaled_dot)"),
], ids=["misspelt_group", "group_chosen_with_a_dot"])
def test_a_group_misspelt_or_chosen_with_a_dot_is_one_line_with_the_fix(tmp_path, files, override, message):
    done = train_cli(tmp_path, files, override)
    assert one_error_line(done) == message


@pytest.mark.parametrize("override, message", [
    ("trainer.max_step=5", "trainer.max_step=5: not a setting nmt knows; did you mean trainer.max_steps? "
                           "(python -m nmt.train --cfg job lists every key)"),
    ("traner.max_steps=5", "traner.max_steps=5: not a setting nmt knows; did you mean trainer.max_steps? "
                           "(python -m nmt.train --cfg job lists every key)"),
    # a key of the option chosen on the same line: model/encoder=transformer has layers
    ("model.encoder.layer=2", "model.encoder.layer=2: not a setting nmt knows; did you mean "
                              "model.encoder.layers? (python -m nmt.train --cfg job lists every key)"),
    ("optimizer.nesterov=true", "optimizer.nesterov=true: not in the config of optimizer (torch.optim.Adam); "
                                "to pass another argument of torch.optim.Adam, add it with "
                                "+optimizer.nesterov=true"),
], ids=["typo", "typo_in_group", "key_of_chosen_option", "class_argument"])
def test_misspelled_key_is_one_line_with_the_fix(tmp_path, files, override, message):
    extra = ["model/encoder=transformer"] if override.startswith("model.encoder") else []
    done = train_cli(tmp_path, files, *extra, override)
    assert one_error_line(done) == message
    assert "+trainer" not in done.stderr.decode()        # not Hydra's advice to add the typo


def test_a_sweep_with_a_misspelt_option_is_refused_before_any_job(tmp_path, files):
    done = train_cli(tmp_path, files, "--multirun", "model/attention=bahdanau,luong_dott",
                     f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert one_error_line(done).startswith("model/attention=luong_dott: no such option; did you mean luong_dot?")
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize("overrides, message", [
    (["model/decoder=transformer", "model.attention.scope=local_p"],
     "model.attention.scope=local_p works with RNN decoders only; a Transformer decoder uses global "
     "multi-head cross-attention (use model/decoder=lstm or gru)"),
    (["model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
      "model/positional=learned", "model.positional.max_len=50", "data.max_len=100"],
     "model.positional.max_len=50 is shorter than the longest sentence (data.max_len=100 subwords, "
     "+1 for <s>); set model.positional.max_len=101 or data.max_len=49"),
], ids=["transformer_with_local_p", "learned_table_too_short"])
def test_impossible_models_are_refused_before_reading_data(tmp_path, files, overrides, message):
    # the training file is not UTF-8: the config is checked before it is read
    done = train_cli(tmp_path, files, *overrides, **invalid_utf8(files))
    assert one_error_line(done) == message


@pytest.mark.parametrize("size, message", [
    (5000, "data.vocab_size=5000 is more than this training data allows (at most 95); "
           "set a smaller data.vocab_size"),
    (20, "data.vocab_size=20 is too small for the 39 characters and special pieces of the "
         "training data; set data.vocab_size to at least 39"),
])
def test_vocabulary_size_the_data_cannot_give(tmp_path, files, size, message):
    assert one_error_line(train_cli(tmp_path, files, f"data.vocab_size={size}")) == message
