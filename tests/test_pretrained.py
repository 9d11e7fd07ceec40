"""The model shipped in the package (nmt/pretrained/multi30k-de-en): loaded by name from the
CLI and the API, translating to the outputs it gave when it was shipped, an unknown name as
one line, the file opened through the checks every checkpoint gets, and its half-precision
weights scoring within a stated tolerance of the float32 checkpoint they were rounded from
(benchmarks/pretrained_multi30k-de-en.json, scripts.benchmarks.bench_pretrained)."""

import json
import shutil
import zipfile

import pytest

import nmt.pretrained
from nmt.base.errors import NmtError
from nmt.commands.translate import main
from nmt.translator import Translator
from tests.helpers import MULTI30K, ROOT, flip_a_bit_of_record, one_thread, run_cli  # noqa: F401

pytestmark = pytest.mark.usefixtures("one_thread")

RECORD = ROOT / "benchmarks" / "pretrained_multi30k-de-en.json"
# the first three lines of Multi30k's test_2016_flickr, then two sentences of ours, and the
# shipped model's greedy translations of them (measured when it was shipped; a model that
# learned, and still wrong where a 36-BLEU model is: "chumin", "nuner")
SOURCES = ["Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.",
           "Ein Boston Terrier läuft über saftig-grünes Gras vor einem weißen Zaun.",
           "Ein Mädchen in einem Karateanzug bricht ein Brett mit einem Tritt.",
           "Ein Mann mit einem roten Hut sitzt auf einer Bank im Park.",
           "Zwei Hunde spielen im Schnee."]
GREEDY = ["A man with an orange hat is working on a chumin.",
          "A nuner runs across a white fence in front of a white fence.",
          "A girl in a karate outfit is using a board with a tower.",
          "A man in a red hat is sitting on a bench in the park.",
          "Two dogs are playing in the snow."]
TOLERANCE = 0.5         # BLEU points: the shipped model against float32 on the first 200 test lines


@pytest.fixture(scope="module")
def shipped():
    return Translator.pretrained("multi30k-de-en", device="cpu")


def test_translator_pretrained_translates_test_sentences(shipped):
    assert [o.text for o in shipped.translate(SOURCES)] == GREEDY
    out = shipped.translate(["Zwei Hunde spielen im Schnee."], beam_size=5)[0]
    assert out.text == "Two dogs are playing in the snow."
    assert out.attention.shape == (len(out.tgt_pieces), len(out.src_pieces))


def test_the_cli_translates_with_model_by_name():
    done = run_cli("nmt.translate", "--model", "multi30k-de-en", "--beam-size", "1",
                   input="\n".join(SOURCES[3:]).encode() + b"\n")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == GREEDY[3:]


def test_an_unknown_name_is_one_line_listing_the_names(capsys):
    done = run_cli("nmt.translate", "--model", "multi30k-en-fr", input=b"Hallo\n")
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "nmt: error: no pretrained model is named 'multi30k-en-fr'; the models shipped with nmt are: multi30k-de-en"]
    with pytest.raises(NmtError, match=r"^no pretrained model is named 3; the models shipped with nmt are: "
                                       r"multi30k-de-en$"):
        Translator.pretrained(3)


def test_model_with_checkpoint_is_refused(capsys):
    assert main(["--model", "multi30k-de-en", "--checkpoint", "best.pt"]) == 1
    assert "--model NAME (one shipped with nmt, e.g. multi30k-de-en)" in capsys.readouterr().err


def test_the_shipped_file_gets_every_checkpoints_checks(tmp_path, monkeypatch):
    """A damaged copy of the shipped file is refused, as any checkpoint is: the name
    leads to load_checkpoint, nothing is trusted for being in the package."""
    copy = tmp_path / "multi30k-de-en"
    shutil.copytree(nmt.pretrained.FOLDER / "multi30k-de-en", copy)
    path = copy / "model.pt"
    with zipfile.ZipFile(path) as archive:
        largest = max((i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    flip_a_bit_of_record(path, largest)
    monkeypatch.setattr(nmt.pretrained, "FOLDER", tmp_path)
    with pytest.raises(NmtError, match=r"model\.pt: weight \S+ is damaged: its stored bytes fail their CRC-32"):
        Translator.pretrained("multi30k-de-en")
    path.unlink()
    with pytest.raises(NmtError, match="the pretrained model multi30k-de-en is not installed"):
        Translator.pretrained("multi30k-de-en")


def test_the_shipped_weights_are_half_precision_and_small():
    import torch

    path = nmt.pretrained.checkpoint_path("multi30k-de-en")
    state = torch.load(path, weights_only=True)
    assert {t.dtype for t in state["model"].values()} == {torch.float16}
    assert sum(t.numel() for t in state["model"].values()) == 3_005_856
    assert path.stat().st_size < 7_000_000
    assert "optimizer" not in state and state["config"]["data"]["path"] == "data/multi30k"


def test_half_precision_bleu_stays_within_tolerance_of_float32(shipped):
    """The shipped model's BLEU on the first 200 lines of test_2016_flickr (greedy), scored
    now, against the float32 checkpoint's on the same lines in the record."""
    if not MULTI30K.is_dir():
        pytest.skip(f"real-data test: Multi30k not found at {MULTI30K}")
    from nmt.data.readers import read_lines
    from nmt.base.scoring import score_translations

    row = next(r for r in json.loads(RECORD.read_text())["results"]
               if r["test_set"] == "test_2016_flickr" and r["search"] == "greedy")
    sources = read_lines(MULTI30K / "test_2016_flickr.de.gz")[:200]
    references = read_lines(MULTI30K / "test_2016_flickr.en.gz")[:200]
    bleu = score_translations([o.text for o in shipped.translate(sources)], references)[0]
    assert abs(bleu - row["float32"]["bleu_first_200"]) <= TOLERANCE
    assert bleu == pytest.approx(row["shipped"]["bleu_first_200"], abs=0.01)
    assert abs(row["shipped"]["bleu"] - row["float32"]["bleu"]) <= TOLERANCE


def test_the_explorer_serves_the_shipped_model(tmp_path):
    """`python -m nmt.explore --model multi30k-de-en` as a user runs it: its page translates."""
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.test_explore import free_port, post

    port = free_port()
    with open(tmp_path / "stderr.txt", "w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "nmt.explore", "--model", "multi30k-de-en", "--port",
                                    str(port), "--device", "cpu"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    url, deadline = f"http://127.0.0.1:{port}/", time.monotonic() + 120
    try:
        while True:
            assert process.poll() is None, (tmp_path / "stderr.txt").read_text()
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "stderr.txt").read_text()
                time.sleep(0.3)
        status, reply = post(url, json.dumps({"text": SOURCES[4], "beam_size": 1}).encode())
        assert status == 200 and reply["results"][0]["text"] == GREEDY[4]
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_the_explorer_refuses_an_unknown_name_in_one_line():
    from tests.test_explore import free_port

    done = run_cli("nmt.explore", "--model", "nope", "--port", str(free_port()))
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "nmt: error: no pretrained model is named 'nope'; the models shipped with nmt are: multi30k-de-en"]
