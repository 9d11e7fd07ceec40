"""Warnings where the map cannot be trusted: a source that is mostly <unk> is said in one
line by nmt.translate and with a badge in the explorer; a refused input clears the old panel."""

from tests.helpers import run_cli
from tests.test_attention_html import DATE
from tests.test_explore import explorer, transformer_checkpoint  # noqa: F401 (fixtures)

UNKNOWN = "你 好 世 界 和 平"


def test_unknown_share_is_counted_without_the_end_marker():
    from nmt.viz.attention_data import unknown_source

    assert unknown_source(["▁a", "<unk>", "▁b", "</s>"]) == {"count": 1, "of": 3, "over": True}
    assert unknown_source(["▁a", "▁b", "▁c", "<unk>"]) == {"count": 1, "of": 4, "over": False}
    assert unknown_source([]) == {"count": 0, "of": 0, "over": False}


def test_translate_says_when_a_line_is_mostly_unknown(toy_checkpoint):
    result = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--beam-size", "1",
                     input=f"{DATE}\n{UNKNOWN}\n".encode())
    err = result.stderr.decode()
    assert result.returncode == 0 and len(result.stdout.decode().splitlines()) == 2
    assert err.count("\n") == 1 and "1 input line(s) mostly unknown; line 2: " in err
    assert "source subwords are <unk>" in err
    clean = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--beam-size", "1",
                    input=f"{DATE}\n".encode())
    assert "unknown" not in clean.stderr.decode()


def test_the_explorer_badges_unknown_input_and_clears_the_panel_of_a_refused_one(browser_page, explorer):  # noqa: F811
    page, problems = browser_page(explorer, width=1280, height=900)
    page.wait_for_selector(".panel")                          # the first validation sentence
    page.fill("#source", DATE)
    page.click("#go")
    page.wait_for_function("document.getElementById('results').dataset.source === %r" % DATE)
    clean = page.locator(".unknown-badge").count()
    page.fill("#source", UNKNOWN)
    page.click("#go")
    page.wait_for_selector(".unknown-badge")
    badges = page.locator(".unknown-badge").all_inner_texts()
    page.fill("#source", " ".join(["march"] * 400))
    page.click("#go")
    page.wait_for_function("document.getElementById('message').textContent.includes('shorten it')")
    left = page.locator("#results .panel").count()
    assert clean == 0
    assert len(badges) == 2 and all(b.endswith("source subwords are <unk>") for b in badges)
    assert left == 0
    # the browser's own line for the refused request's HTTP 400; nothing from the page's script
    assert problems == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]


def test_labels_are_words_by_default_and_subwords_on_request(browser_page, tmp_path):
    from tests.test_colour_scale import hand_page, one_map

    cols, rows = ["▁Der", "▁Zau", "n", "</s>"], ["▁the", "▁fen", "ce", "</s>"]
    page, problems = browser_page(hand_page(tmp_path, [[one_map("cross", [[[[0.25] * 4] * 4]], rows, cols)]]),
                                  width=1280, height=900)
    texts = lambda: page.locator("svg.heatmap > text").all_text_contents()    # noqa: E731
    words = texts()
    page.hover("svg.heatmap rect.cell[data-row='2'][data-col='2']")
    tip = page.inner_text("#tooltip")
    page.select_option("#label-mode", "pieces")
    pieces = texts()
    assert words[:8] == ["Der", "Zaun", "\u00b7", "</s>", "the", "fence", "\u00b7", "</s>"]
    assert pieces[:8] == cols + rows
    assert tip.startswith("target \u201cce\u201d of \u201cfence\u201d\nsource \u201cn\u201d of \u201cZaun\u201d\n")
    assert problems == []
