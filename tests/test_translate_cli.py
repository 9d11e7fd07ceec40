"""python -m nmt.translate as a user runs it: stdin/stdout, files, n-best,
heatmaps, sacreBLEU, and one `nmt: error:` line for each bad input.

A few tests start a real process (stdin, exit code, no traceback); the rest
call `main(argv)` in-process, where any exception but NmtError would fail the
test with its traceback.
"""

import io
import re
import os
import stat
import subprocess
import sys

import pytest
import torch
from PIL import Image

from nmt.base import own_files
from nmt.data.toy import make_toy_corpus
from nmt.commands.translate import main
from nmt.translator import Translator
from tests.helpers import one_thread, run_cli  # noqa: F401 - one_thread: a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

PAIRS = make_toy_corpus(1, 4, 0, seed=3).valid
SOURCES = [src for src, _ in PAIRS]
LONG = " ".join(SOURCES * 4)              # ~40 subwords: the toy model takes 32
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def translator(toy_checkpoint):
    return Translator.from_checkpoint(toy_checkpoint, device="cpu")


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def one_error_line(stderr: str) -> str:
    """The stderr of a failed run: exactly one `nmt: error:` line, no traceback."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("nmt: error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def test_stdin_to_stdout_one_line_per_line(toy_checkpoint, translator):
    lines = [SOURCES[0], "", LONG, SOURCES[1], "  "]
    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--beam-size", "2",
                   input="".join(line + "\n" for line in lines).encode(), env=ONE_THREAD)
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode("utf-8").split("\n")
    assert out[-1] == "" and len(out) == len(lines) + 1          # one line per line, each ended
    expected = [o.text for o in translator.translate(lines, beam_size=2)]
    assert out[:-1] == expected
    assert out[1] == out[4] == "" and out[0] and out[3]
    # the long line is translated from its first 32 subwords, with one warning
    stderr = done.stderr.decode()
    assert "1 input line(s) longer than the model's 32 subwords were truncated (first: line 3)" in stderr
    assert "Traceback" not in stderr


def test_files_nbest_heatmaps_and_sacrebleu(tmp_path, toy_checkpoint, translator):
    source = write_lines(tmp_path / "test.src", [SOURCES[0], "", SOURCES[1], SOURCES[2]])
    reference = write_lines(tmp_path / "test.ref", [PAIRS[0][1], "", PAIRS[1][1], PAIRS[2][1]])
    output, pictures = tmp_path / "test.out", tmp_path / "pictures"
    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--input", source,
                   "--output", str(output), "--beam-size", "3", "--batch-size", "2",
                   "--plot-attention", str(pictures), "--reference", reference, "--device", "cpu",
                   env=ONE_THREAD)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""                                    # translations went to the file
    expected = [o.text for o in translator.translate(
        [SOURCES[0], "", SOURCES[1], SOURCES[2]], beam_size=3)]
    assert output.read_text(encoding="utf-8").split("\n") == expected + [""]
    # sacreBLEU BLEU and chrF, each with its signature
    stderr = done.stderr.decode()
    assert "BLEU " in stderr and "nrefs:1|case:mixed|eff:no|tok:13a" in stderr
    assert "chrF " in stderr and "nrefs:1|case:mixed|eff:yes|nc:6|nw:0" in stderr
    # one heatmap per non-empty line, named by line number
    assert sorted(p.name for p in pictures.iterdir()) == ["00001.png", "00003.png", "00004.png"]
    picture = Image.open(pictures / "00001.png")
    assert picture.format == "PNG" and picture.size[0] > 300 and picture.size[1] > 250


def test_nbest_lines(tmp_path, toy_checkpoint, translator):
    source = write_lines(tmp_path / "in.txt", [SOURCES[0], "", SOURCES[1]])
    output = tmp_path / "out.txt"
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source, "--output", str(output),
                 "--beam-size", "3", "--nbest", "2"]) == 0
    rows = [line.split(" ||| ") for line in output.read_text(encoding="utf-8").splitlines()]
    # Moses format, 0-based line numbers, best first; an empty line gives one empty entry
    assert [r[0] for r in rows] == ["0", "0", "1", "2", "2"]
    assert rows[2] == ["1", "", "0.0000"]
    best = translator.translate([SOURCES[0]], beam_size=3, nbest=2)[0]
    assert [(r[1], float(r[2])) for r in rows[:2]] == [(t, pytest.approx(s, abs=1e-4)) for t, s in best.nbest]


def test_invalid_utf8_on_stdin_names_the_line(toy_checkpoint):
    data = SOURCES[0].encode() + b"\n" + b"caf\xe9 au lait\n"
    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), input=data, env=ONE_THREAD)
    assert done.returncode == 1
    assert one_error_line(done.stderr.decode()) == (
        "nmt: error: <stdin> line 2: invalid UTF-8 (byte 4); convert the input to UTF-8")
    assert done.stdout == b""


def test_invalid_utf8_in_a_file_names_file_and_line(tmp_path, toy_checkpoint, capsys):
    source = tmp_path / "in.txt"
    source.write_bytes(b"one\ntwo\n\xff three\n")
    assert main(["--checkpoint", str(toy_checkpoint), "--input", str(source)]) == 1
    assert one_error_line(capsys.readouterr().err) == (
        f"nmt: error: {source} line 3: invalid UTF-8 (byte 1 of the line); convert the file to UTF-8")


def test_stdin_bom_and_windows_line_ends(toy_checkpoint, translator, monkeypatch, capsys):
    data = ("\ufeff" + SOURCES[0] + "\r\n\r\n" + SOURCES[1] + "\r\n").encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["--checkpoint", str(toy_checkpoint), "--beam-size", "1"]) == 0
    expected = [o.text for o in translator.translate([SOURCES[0], "", SOURCES[1]], beam_size=1)]
    assert capsys.readouterr().out == "".join(t + "\n" for t in expected)


def broken_checkpoint(tmp_path, toy_checkpoint):
    path = tmp_path / "broken.pt"
    path.write_bytes(toy_checkpoint.read_bytes()[:50_000])
    return ["--checkpoint", str(path)]


def bad_input(tmp_path, toy_checkpoint):
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xc3\x28\n")
    return ["--checkpoint", str(toy_checkpoint), "--input", str(tmp_path / "bad.txt")]


def bad_reference(tmp_path, toy_checkpoint):
    return ["--checkpoint", str(toy_checkpoint), "--reference", write_lines(tmp_path / "ref", ["a"])]


@pytest.mark.parametrize("failure, message", [
    (broken_checkpoint, "is truncated or not a checkpoint"),
    (bad_input, "bad.txt line 2: invalid UTF-8"),
    (bad_reference, "has 1 lines but the input has 2"),
])
def test_a_failed_run_leaves_an_existing_output_untouched(tmp_path, toy_checkpoint, capsys,
                                                          failure, message):
    output = tmp_path / "out.txt"
    own_files.write(output, b"yesterday's translations\n", own_files.TRANSLATIONS)   # nmt's own: replaceable
    source = write_lines(tmp_path / "in.txt", SOURCES[:2])
    argv = ["--input", source, *failure(tmp_path, toy_checkpoint), "--output", str(output)]
    assert main(argv) == 1
    assert message in one_error_line(capsys.readouterr().err)
    assert output.read_text() == "yesterday's translations\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.txt")]   # no temp file left


def test_output_is_replaced_whole_and_keeps_its_permissions(tmp_path, toy_checkpoint):
    output = tmp_path / "out.txt"
    own_files.write(output, b"old\n" * 10, own_files.TRANSLATIONS)   # an earlier run's: replaceable
    os.chmod(output, 0o640)
    source = write_lines(tmp_path / "in.txt", SOURCES[:2])
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source, "--output", str(output),
                 "--beam-size", "1"]) == 0
    assert len(output.read_text().splitlines()) == 2
    assert stat.S_IMODE(output.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]


@pytest.mark.parametrize("where, message", [
    ("folder", "is a directory; give a file name"),
    ("nowhere/out.txt", "does not exist; create it first"),
])
def test_an_output_that_cannot_be_written_is_refused_first(tmp_path, capsys, where, message):
    (tmp_path / "folder").mkdir()
    # the checkpoint is never read: the output is checked before any work
    assert main(["--checkpoint", str(tmp_path / "none.pt"), "--output", str(tmp_path / where)]) == 1
    assert message in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("option", ["--input", "--reference"])
def test_a_missing_input_names_its_option(tmp_path, capsys, option):
    # the option's own name, not the config's data paths (nmt.translate has no config),
    # before the checkpoint is read (it does not exist either)
    source = write_lines(tmp_path / "in.txt", SOURCES[:1])
    given = {"--input": source, "--reference": source, option: str(tmp_path / "nope.txt")}
    assert main(["--checkpoint", str(tmp_path / "none.pt"), *[x for kv in given.items() for x in kv]]) == 1
    assert one_error_line(capsys.readouterr().err) == f"nmt: error: {option} {tmp_path}/nope.txt: no such file"


def test_attention_layer_needs_a_transformer(tmp_path, toy_checkpoint, capsys):
    # said before translating: no --output written, no picture drawn
    source = write_lines(tmp_path / "in.txt", SOURCES[:1])
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source, "--beam-size", "1",
                 "--output", str(tmp_path / "out.txt"), "--plot-attention", str(tmp_path / "p"),
                 "--attention-layer", "1"]) == 1
    assert one_error_line(capsys.readouterr().err) == (
        "nmt: error: --attention-layer/--attention-head choose a Transformer decoder's layer and head; "
        f"{toy_checkpoint} has an RNN decoder with one attention: leave them out")
    assert not (tmp_path / "out.txt").exists()
    assert not list((tmp_path / "p").glob("*.png"))


@pytest.mark.parametrize("option", ["--attention-layer", "--attention-head"])
def test_attention_layer_without_plot_attention_is_refused(tmp_path, toy_checkpoint, capsys, option):
    # they choose what --plot-attention draws; alone they did nothing, silently (exit 0)
    source = write_lines(tmp_path / "in.txt", SOURCES[:1])
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source, option, "1"]) == 1
    assert one_error_line(capsys.readouterr().err) == (
        f"nmt: error: {option} chooses what --plot-attention draws; add --plot-attention DIR "
        "(--attention-html shows every layer and head)")


@pytest.mark.parametrize("options, message", [
    (["--attention-layer", "0"], "--attention-layer 0: the decoder has 2 layers; pick 1 to 2"),
    (["--attention-layer", "3"], "--attention-layer 3: the decoder has 2 layers; pick 1 to 2"),
    (["--attention-head", "0"], "--attention-head 0: the decoder has 2 heads; pick 1 to 2"),
    (["--attention-head", "3"], "--attention-head 3: the decoder has 2 heads; pick 1 to 2"),
])
def test_attention_layer_and_head_out_of_range_before_translating(tmp_path, tmp_path_factory, cache_dir,
                                                                 capsys, options, message):
    # refused before any line is translated or written
    from tests.test_attention_html import tiny_transformer

    checkpoint = tiny_transformer(tmp_path_factory, cache_dir)
    capsys.readouterr()                                  # the first call's training summary
    source = write_lines(tmp_path / "in.txt", SOURCES[:2])
    assert main(["--checkpoint", str(checkpoint), "--input", source, "--beam-size", "1",
                 "--plot-attention", str(tmp_path / "p"), *options]) == 1
    captured = capsys.readouterr()
    assert one_error_line(captured.err) == "nmt: error: " + message
    assert captured.out == ""
    assert not list((tmp_path / "p").glob("*.png"))


@pytest.mark.parametrize("where, message", [
    ("nope.pt", "checkpoint {tmp}/nope.pt does not exist; {tmp} holds no .pt file"),
    ("", "checkpoint {tmp} is a folder and holds no .pt file; give a checkpoint file written by nmt.train "
         "(RUN/checkpoints/best.pt)"),
])
def test_missing_checkpoint(tmp_path, capsys, where, message):
    source = write_lines(tmp_path / "in.txt", SOURCES[:1])
    assert main(["--checkpoint", str(tmp_path / where), "--input", source]) == 1
    assert one_error_line(capsys.readouterr().err) == "nmt: error: " + message.format(tmp=tmp_path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_device_cuda_without_a_gpu(tmp_path, toy_checkpoint, capsys):
    source = write_lines(tmp_path / "in.txt", SOURCES[:1])
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source, "--device", "cuda"]) == 1
    assert one_error_line(capsys.readouterr().err) == (
        "nmt: error: --device=cuda but no CUDA GPU is visible; use --device=cpu or --device=auto")


@pytest.mark.parametrize("option", ["--batch-size", "--beam-size", "--nbest"])
def test_counts_must_be_positive(option, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--checkpoint", "x.pt", option, "0"])
    assert exit_.value.code == 2
    assert f"argument {option}: 0 is not 1 or more" in capsys.readouterr().err


def test_plot_attention_draws_local_p_centres(tmp_path, cache_dir, monkeypatch):
    from tests.helpers import train

    train(tmp_path / "run", "experiment=quickstart", "model.attention.scope=local_p",
          "model.attention.window=2", "trainer.max_steps=4", "trainer.val_every=4",
          "trainer.val_max_sentences=4", "trainer.heatmap_sentences=0", cache_dir=cache_dir)
    drawn = []
    import nmt.viz.heatmaps as heatmaps
    real = heatmaps.attention_figure

    def spy(weights, src_pieces, tgt_pieces, title="", centers=None, window=None, **kwargs):
        drawn.append((len(tgt_pieces), centers, window))
        return real(weights, src_pieces, tgt_pieces, title=title, centers=centers, window=window, **kwargs)

    monkeypatch.setattr(heatmaps, "attention_figure", spy)
    source = tmp_path / "in.txt"
    source.write_text(SOURCES[0] + "\n", encoding="utf-8")
    assert main(["--checkpoint", str(tmp_path / "run" / "checkpoints" / "last.pt"), "--input",
                 str(source), "--output", str(tmp_path / "out.txt"), "--beam-size", "1",
                 "--plot-attention", str(tmp_path / "maps")]) == 0
    (rows, centers, window), = drawn
    assert window == 2 and centers is not None and len(centers) == rows     # one p_t per output row
    assert (tmp_path / "maps" / "00001.png").stat().st_size > 0


def test_max_length_options_bound_the_output(tmp_path, toy_checkpoint, capsys):
    source = write_lines(tmp_path / "in.txt", SOURCES[:3])
    out = tmp_path / "out.txt"
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source, "--output", str(out),
                 "--max-length-ratio", "0", "--max-length-extra", "3", "--beam-size", "2"]) == 0
    state = torch.load(toy_checkpoint, weights_only=True)
    from nmt.data.tokenizer import Tokenizer
    tokenizer = Tokenizer.from_bytes(state["tokenizer"])
    lengths = [len(tokenizer.encode_tgt(line)) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lengths) == 3 and max(lengths) <= 2       # 3 positions, the last one for eos
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source,
                 "--max-length-ratio", "0", "--max-length-extra", "0"]) == 1
    assert "not both 0" in one_error_line(capsys.readouterr().err)
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source, "--min-length", "-1"]) == 1
    assert "--min-length -1 must be >= 0" in one_error_line(capsys.readouterr().err)
    with pytest.raises(SystemExit) as usage:          # refused as a bad option, as --batch-size 0 is
        main(["--checkpoint", str(toy_checkpoint), "--input", source, "--max-length-ratio", "nan"])
    assert usage.value.code == 2
    assert "argument --max-length-ratio: nan is not a finite number" in capsys.readouterr().err


def test_plot_attention_pictures_say_what_they_show_and_split_long_sources(tmp_path, toy_checkpoint,
                                                                            monkeypatch):
    import nmt.viz.heatmaps as heatmaps

    titles = []
    real = heatmaps.attention_figure

    def spy(weights, src_pieces, tgt_pieces, title="", *args, **kwargs):
        titles.append(title)
        return real(weights, src_pieces, tgt_pieces, title, *args, **kwargs)

    monkeypatch.setattr(heatmaps, "attention_figure", spy)
    long = " ".join(SOURCES[:3])                     # over 16 subwords: two pictures, as TensorBoard's cards
    source = write_lines(tmp_path / "in.txt", [SOURCES[0], long])
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source, "--output", str(tmp_path / "out.txt"),
                 "--beam-size", "1", "--plot-attention", str(tmp_path / "p"), "--plot-columns", "16"]) == 0
    names = sorted(p.name for p in (tmp_path / "p").iterdir())
    assert names[0] == "00001.png" and len(names) >= 3
    assert all(re.fullmatch(r"00002_source_\d+-\d+\.png", n) for n in names[1:])
    # the line, its source and what the map is; a part names its source range
    assert titles[0] == f"line 1: {SOURCES[0]}\nattention"
    shown = long if len(long) <= 60 else long[:59] + "…"
    assert titles[1].startswith(f"line 2: {shown}\nattention\nsource 1-")

    # --dpi: the same picture, larger
    assert main(["--checkpoint", str(toy_checkpoint), "--input", source, "--output", str(tmp_path / "out.txt"),
                 "--beam-size", "1", "--plot-attention", str(tmp_path / "big"), "--dpi", "300"]) == 0
    small, big = Image.open(tmp_path / "p" / "00001.png"), Image.open(tmp_path / "big" / "00001.png")
    assert big.width == pytest.approx(2 * small.width, rel=0.05)      # 300 dpi against the default 150
    assert small.width >= 450                                          # read without zooming


@pytest.mark.parametrize("layout, given, inner", [
    ("run", "run", "run/checkpoints"),                   # a run folder: its checkpoints/ are listed
    ("run", "run/checkpoints", "run/checkpoints"),
], ids=["run_folder", "checkpoints_folder"])
def test_a_checkpoint_folder_lists_its_checkpoints_before_torch_loads(tmp_path, layout, given, inner):
    """`--checkpoint FOLDER` names the .pt files to give, best.pt first, in one line,
    before the seconds of importing torch (the files here are not even checkpoints)."""
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    for name in ("step_900.pt", "last.pt", "best.pt", "step_1200.pt"):
        (tmp_path / "run" / "checkpoints" / name).write_bytes(b"")
    probe = ("import sys; from nmt.commands.translate import main; code = main(['--checkpoint', sys.argv[1]]); "
             "print(code, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / given)], capture_output=True,
                          input=b"x\n", timeout=60, cwd=tmp_path)
    assert done.stdout.decode().split() == ["1", "False"]
    folder, listed = tmp_path / given, tmp_path / inner
    run = " (a run folder)" if folder != listed else ""
    assert done.stderr.decode() == (f"nmt: error: checkpoint {folder} is a folder{run}; give one of its "
                                    f"checkpoints: best.pt, last.pt, step_900.pt, step_1200.pt in {listed}, "
                                    f"for example {listed / 'best.pt'}\n")


def test_translate_without_a_checkpoint_is_one_line():
    done = run_cli("nmt.translate", input=b"x\n")
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.decode() == ("nmt: error: give the model to translate with: --checkpoint PATH (nmt), "
                                    "--model NAME (one shipped with nmt, e.g. multi30k-de-en) or --hf NAME_OR_FOLDER "
                                    "(Hugging Face), one of the three\n")


def test_a_usage_mistake_is_one_line():
    done = run_cli("nmt.translate", "--beam-size", "many", input=b"x\n")
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode() == ("nmt: error: argument --beam-size: 'many' is not a whole number "
                                    "(python -m nmt.translate --help lists the options)\n")
