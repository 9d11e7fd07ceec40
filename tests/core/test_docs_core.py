"""docs/core.md ("Read the core") is generated from nmt/core by
`python -m scripts.docs.docs_core`: the committed page is what the code gives now,
it shows every core file's source in the README's reading order, and the
check names a stale page."""

from pathlib import Path

from scripts.docs import docs_core


def test_the_committed_page_is_fresh():
    assert docs_core.main(["--check"]) == 0, "run python -m scripts.docs.docs_core"


def test_every_core_file_is_on_the_page_with_its_code():
    page = docs_core.core_page()
    files = [file for _, file, _ in docs_core.reading_order()]
    positions = [page.index(f"`nmt/core/{file}`") for file in files]
    assert positions == sorted(positions)
    body = (docs_core.CORE / "attention" / "bahdanau.py").read_text(encoding="utf-8")
    assert "def additive_score(" in page and body.split('"""\n', 2)[-1].strip()[:200] in page
    assert "e_ij = v_a . tanh(W_a s_{i-1} + U_a h_j)" in page


def test_the_check_names_a_stale_page(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "core.md"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setattr(docs_core, "PAGE", Path(stale))
    assert docs_core.main(["--check"]) == 1
    assert "docs/core.md is stale" in capsys.readouterr().err
