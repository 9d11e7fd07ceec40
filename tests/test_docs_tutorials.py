"""The tutorials' commands run as written (tests/docs_commands.py: in an empty folder,
through bash, training at tiny sizes), so a tutorial that no longer runs fails the build."""

from pathlib import Path

from tests.docs_commands import page_commands, run_page, tiny
from tests.helpers import MULTI30K

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_page_commands_reads_code_blocks_only():
    page = (
        "Run it:\n\n    python -m nmt.train experiment=quickstart \\\n        trainer.max_steps=5\n"
        "    nmt: finished at step 5\n\nInline `python -m nmt.train x=1` is prose.\n\n"
        "```bash\n$ echo hi | nmt-translate --checkpoint a.pt\n```\n\n```text\npython -m not.this\n```\n"
    )
    assert page_commands(page) == [
        "python -m nmt.train experiment=quickstart trainer.max_steps=5",
        "echo hi | nmt-translate --checkpoint a.pt",
    ]


def test_tiny_shrinks_training_commands_only(tmp_path):
    command = tiny(
        "pip install -e . && python -m nmt.train experiment=first_run data.path=../shared/data/multi30k", tmp_path
    )
    assert command.startswith("pip install -e . && python -m nmt.train experiment=first_run data.path=/")
    assert command.endswith(
        f"trainer.max_steps=6 trainer.val_every=6 trainer.val_max_sentences=2 "
        f"trainer.test_max_sentences=2 trainer.heatmap_sentences=1 trainer.max_minutes=null data.batch_tokens=256 "
        f"cache_dir={tmp_path}"
    )
    assert tiny("python -m nmt.translate --checkpoint a.pt", tmp_path) == "python -m nmt.translate --checkpoint a.pt"
    assert tiny("nmt-data multi30k data/multi30k", tmp_path) == f"nmt-data multi30k data/multi30k --from {MULTI30K}"
    assert tiny("python -m nmt.train data.path=data/multi30k", tmp_path).startswith(
        "python -m nmt.train data.path=data/multi30k trainer."
    )  # the folder nmt-data made


def test_your_first_hour_runs(tmp_path, cache_dir):
    commands = page_commands((DOCS / "tutorials" / "first-hour.md").read_text(encoding="utf-8"))
    programs = [c.split(" | ")[-1].split()[2] if "python -m" in c else c.split()[0] for c in commands]
    assert programs == [
        "echo",
        "nmt.train",
        "printf",
        "nmt.translate",
        "nmt.train",
        "nmt.compare",
        "nmt-data",
        "nmt.train",
        "nmt.translate",
        "nmt.explore",
    ]
    assert "experiment=first_run" in commands[7]
    outputs = run_page(commands, tmp_path, cache_dir)
    assert outputs[0] == "A man in a red hat is sitting on a bench in the park.\n"  # the shipped model, no training
    assert (tmp_path / "pictures_shipped" / "00001.png").is_file()
    assert (tmp_path / "runs" / "quickstart" / "checkpoints" / "best.pt").is_file()
    assert (tmp_path / "pictures" / "00001.png").is_file()
    assert "| model/attention |" in outputs[5] and "bahdanau" in outputs[5]  # the compare table
    assert "best by validation bleu" in outputs[5]
    assert (tmp_path / "runs" / "first_run" / "summary.json").is_file()
    assert (tmp_path / "pictures_m30k" / "00001.png").is_file() and outputs[8].count("\n") == 1
