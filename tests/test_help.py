"""--help of every command: nmt.train's is nmt's own page (presets, examples,
groups and options, every key with its meaning from nmt/config_schema/table.py),
not Hydra's stock text; every other command shows its defaults and has a help
text for every option and argument."""

import importlib

import pytest

import nmt.base.cli_checks
from nmt.config_schema.table import RULES
from tests.helpers import run_cli


def test_train_help_is_nmts_page():
    done = run_cli("nmt.train", "--help", timeout=60)
    page = done.stdout.decode()
    assert done.returncode == 0 and done.stderr == b""
    assert "Powered by Hydra" not in page and "== Config ==" not in page
    assert "presets (experiment=NAME):" in page
    assert "  quickstart           A tiny GRU model with attention on the built-in toy task" in page
    assert "  python -m nmt.train experiment=quickstart\n" in page                    # an example
    assert "  model/attention      bahdanau, cosine, coverage, luong_concat, luong_dot, *luong_general," in page
    # keys with their defaults (the YAML) and their meanings (nmt/config_schema/table.py)
    assert "    trainer.max_steps=20000              the most optimiser updates a run makes (the first of\n" in page
    assert "    data.src_lang=de                     the language translated from\n" in page
    unwrapped = " ".join(page.split())
    for key in ("model.encoder.hidden_size", "trainer.grad_clip", "model.attention.scaled"):
        assert " ".join(RULES[key].meaning.split()) in unwrapped, key


class _Parsed(Exception):
    """Raised instead of parsing: the parser is all the test wants."""


COMMANDS = ["nmt.translate", "nmt.average", "nmt.compare", "nmt.explore", "nmt_study.__main__",
            "nmt_study.eflomal_links", "nmt.data.alignments", "nmt.data.__main__"]


def parser_of(module: str, monkeypatch):
    caught = []

    def stop(self, args=None, namespace=None):
        caught.append(self)
        raise _Parsed

    monkeypatch.setattr(nmt.base.cli_checks.ArgumentParser, "parse_args", stop)
    with pytest.raises(_Parsed):
        importlib.import_module(module).main([])
    return caught[0]


@pytest.mark.parametrize("module", COMMANDS)
def test_every_option_and_argument_has_a_help_text(module, monkeypatch):
    parser = parser_of(module, monkeypatch)
    missing = [action.dest for action in parser._actions if not action.help]
    assert missing == []


@pytest.mark.parametrize("module, shown", [
    ("nmt.translate", ["1 = greedy (default: 5)", "(default: 1.5)", "(default: 10)", "(default: auto)"]),
    ("nmt.explore", ["port on 127.0.0.1 (default: 8000)"]),
    ("nmt_study.__main__", ["(default: multi30k)", "(default: 1)"]),
])
def test_help_shows_the_defaults(module, shown, monkeypatch):
    help_text = " ".join(parser_of(module, monkeypatch).format_help().split())     # unwrapped
    for text in shown:
        assert text in help_text
