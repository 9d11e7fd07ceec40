"""Corpora: Multi30k from a folder, from a hub-style dataset on disk, offline
errors; line-aligned files; the kind -> loader mapping; the real Multi30k."""

import gzip
import json
import os
import subprocess
import sys
import time

import pytest

from nmt.data.corpora import DEFAULT_HUB_ID, Corpus, load_corpus, load_files, load_multi30k
from nmt.base.errors import NmtError
from tests.helpers import MULTI30K, ROOT

SPLITS = {"train": ["ein Hund", "zwei Katzen", "drei Vögel"], "val": ["ein Baum"],
          "test_2016_flickr": ["ein Haus", "ein Auto"]}
ENGLISH = {"ein Hund": "a dog", "zwei Katzen": "two cats", "drei Vögel": "three birds",
           "ein Baum": "a tree", "ein Haus": "a house", "ein Auto": "a car"}


def write_multi30k(folder, gz_langs=("de",)):
    """A miniature Multi30k folder: German gzipped, English plain."""
    folder.mkdir(exist_ok=True)
    for base, german in SPLITS.items():
        for lang, lines in (("de", german), ("en", [ENGLISH[g] for g in german])):
            body = "".join(line + "\n" for line in lines).encode()
            if lang in gz_langs:
                with gzip.open(folder / f"{base}.{lang}.gz", "wb") as handle:
                    handle.write(body)
            else:
                (folder / f"{base}.{lang}").write_bytes(body)
    return folder


def test_multi30k_from_a_folder_any_direction(tmp_path):
    folder = write_multi30k(tmp_path / "m30k")
    corpus = load_multi30k("de", "en", path=folder)
    assert corpus.train == [("ein Hund", "a dog"), ("zwei Katzen", "two cats"), ("drei Vögel", "three birds")]
    assert corpus.valid == [("ein Baum", "a tree")] and len(corpus.test) == 2
    assert load_multi30k("en", "de", path=folder).valid == [("a tree", "ein Baum")]


def test_multi30k_folder_missing_a_file(tmp_path):
    folder = write_multi30k(tmp_path / "m30k")
    (folder / "test_2016_flickr.en").unlink()
    with pytest.raises(NmtError, match=r"no test_2016_flickr\.en or test_2016_flickr\.en\.gz"):
        load_multi30k("de", "en", path=folder)
    with pytest.raises(NmtError, match="is not a folder"):
        load_multi30k("de", "en", path=tmp_path / "nowhere")


@pytest.mark.parametrize("src, tgt, message", [("de", "es", "tgt_lang='es' is not a Multi30k language"),
                                               ("en", "en", "both 'en'")])
def test_multi30k_languages_checked(src, tgt, message):
    with pytest.raises(NmtError, match=message):
        load_multi30k(src, tgt, path="/unused")


def write_hub_copy(folder):
    """The layout of bentrevett/multi30k: {train,val,test}.jsonl with "en" and "de" fields."""
    folder.mkdir()
    for split, base in (("train", "train"), ("val", "val"), ("test", "test_2016_flickr")):
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as handle:
            for german in SPLITS[base]:
                handle.write(json.dumps({"en": ENGLISH[german], "de": german}) + "\n")
    return folder


def test_hub_code_path_on_a_local_dataset(tmp_path):
    hub_copy = write_hub_copy(tmp_path / "hub_copy")
    corpus = load_multi30k("de", "en", path=None, hub_id=str(hub_copy), cache_dir=tmp_path / "cache")
    assert corpus.train == [("ein Hund", "a dog"), ("zwei Katzen", "two cats"), ("drei Vögel", "three birds")]
    assert corpus.valid == [("ein Baum", "a tree")]
    assert corpus.test == [("ein Haus", "a house"), ("ein Auto", "a car")]
    assert (tmp_path / "cache" / "hub").is_dir()                 # downloads are cached under cache_dir
    with pytest.raises(NmtError, match=r"has no 'fr' text \(columns"):
        load_multi30k("fr", "en", path=None, hub_id=str(hub_copy), cache_dir=tmp_path / "cache")


def test_hub_code_path_on_a_saved_dataset_dict(tmp_path):
    import datasets

    rows = {split: [{"de": g, "en": ENGLISH[g]} for g in SPLITS[base]]
            for split, base in (("train", "train"), ("validation", "val"), ("test", "test_2016_flickr"))}
    saved = tmp_path / "saved"
    datasets.DatasetDict({split: datasets.Dataset.from_dict({"translation": r}) for split, r in rows.items()}
                         ).save_to_disk(str(saved))
    corpus = load_multi30k("en", "de", path=None, hub_id=str(saved))
    assert corpus.valid == [("a tree", "ein Baum")] and len(corpus.train) == 3


def test_default_hub_copy_has_no_french():
    with pytest.raises(NmtError, match=r"holds only de/en.*data\.path=data/multi30k"):
        load_multi30k("fr", "en", path=None, hub_id=DEFAULT_HUB_ID)


def test_offline_hub_is_one_line_saying_how_to_use_local_files(tmp_path):
    script = ("import sys\n"
              "from nmt.data.corpora import load_corpus\n"
              "from nmt.base.errors import NmtError\n"
              "try:\n"
              f"    load_corpus({{'kind': 'multi30k', 'path': None, 'hub_id': {DEFAULT_HUB_ID!r},\n"
              "                 'src_lang': 'de', 'tgt_lang': 'en'}, cache_dir=sys.argv[1])\n"
              "except NmtError as error:\n"
              "    print(error)\n"
              "    sys.exit(3)\n")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "cache")], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 3, done.stderr
    message = done.stdout.strip()
    assert "\n" not in message
    assert "cannot reach the Hugging Face hub" in message and "data.path=data/multi30k" in message


def test_files_kind(tmp_path):
    for name, body in {"t.de": "a\nb\n", "t.en": "A\nB\n", "v.de": "c\n", "v.en": "C\n"}.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    cfg = {"kind": "files", "train_src": str(tmp_path / "t.de"), "train_tgt": str(tmp_path / "t.en"),
           "valid_src": str(tmp_path / "v.de"), "valid_tgt": str(tmp_path / "v.en"),
           "test_src": None, "test_tgt": None}
    assert load_corpus(cfg) == Corpus(train=[("a", "A"), ("b", "B")], valid=[("c", "C")], test=[],
                                      name="files-t.de")
    with pytest.raises(NmtError, match="both data.test_src and data.test_tgt"):
        load_files(cfg["train_src"], cfg["train_tgt"], cfg["valid_src"], cfg["valid_tgt"], test_src=cfg["train_src"])
    with pytest.raises(NmtError, match=r"data\.valid_tgt is not set"):
        load_corpus({**cfg, "valid_tgt": None})


def test_unknown_kind():
    with pytest.raises(NmtError, match=r"data\.kind='wmt' unknown; choose one of \['files', 'multi30k', 'toy'\]"):
        load_corpus({"kind": "wmt"})


def test_real_multi30k_de_en(multi30k_de_en):
    corpus = multi30k_de_en
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (29000, 1014, 1000)
    assert corpus.train[0] == ("Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
                               "Two young, White males are outside near many bushes.")
    assert all(src and tgt for src, tgt in corpus.train)


def test_real_multi30k_fr_cs():
    if not MULTI30K.is_dir():
        pytest.skip(f"real-data test: Multi30k not found at {MULTI30K}")
    corpus = load_multi30k("fr", "cs", path=MULTI30K)
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (29000, 1014, 1000)


def test_without_a_network_the_hub_is_one_line_and_no_retries(tmp_path):
    """`nmt.train experiment=first_run` without data.path, on a machine whose hub name does
    not resolve (HF_ENDPOINT in the .invalid domain, which never does): nmt's one line,
    none of the hub client's retry warnings, no waiting through its back-off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT="https://hub.nmt-test.invalid", HF_HOME=str(tmp_path / "hf"), PYTHONUNBUFFERED="1")
    def train(*overrides):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "nmt.train", "experiment=first_run",
                               f"hydra.run.dir={tmp_path / 'run'}", f"cache_dir={tmp_path / 'cache'}", *overrides],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        return done, time.perf_counter() - started

    done, took = train()
    assert done.returncode == 1
    assert done.stderr.strip() == ("nmt: error: cannot reach the Hugging Face hub for 'bentrevett/multi30k' "
                                   "(offline?); use local files: fetch Multi30k task 1 with `nmt-data multi30k "
                                   "data/multi30k` (--from DIR_OR_URL offline) and set data.path=data/multi30k")
    assert "Retry" not in done.stdout + done.stderr and "thrown while requesting" not in done.stdout
    # as long as the same start-up failing on a local path, and importing datasets: not 20 s of retries
    (tmp_path / "empty").mkdir()
    local, start_up = train(f"data.path={tmp_path / 'empty'}")
    assert local.returncode == 1 and "has no train.de or train.de.gz" in local.stderr
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import datasets"], env=env, timeout=300)
    assert took < start_up + (time.perf_counter() - started) + 10
