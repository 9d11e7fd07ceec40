"""docs/notebooks/first_model.ipynb runs top to bottom on a fresh kernel (nbclient), at
20 updates a model instead of 300, and shows its heatmaps inline: the shipped model's
translations, the translation cell's output is HTML with a PNG in it, and the pyplot cell
still draws (nmt left the backend alone). It is committed with the outputs of a full run."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "notebooks" / "first_model.ipynb"


def test_the_notebook_runs_and_shows_heatmaps_inline(tmp_path, monkeypatch):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.setenv("NMT_NOTEBOOK_STEPS", "20")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's own default, as a user's Jupyter has
    client = NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError with the cell's traceback
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any(page.count("data:image/png;base64,") == 1 for page in html)  # one translation
    assert any(page.count("data:image/png;base64,") == 2 for page in html)  # side by side
    assert any("image/png" in o.get("data", {}) for o in outputs)  # plt.show() drew inline
    assert (tmp_path / "multi30k-de-en.png").stat().st_size > 1000
    plain = [o["data"]["text/plain"] for o in outputs if "text/plain" in o.get("data", {})]
    assert any("A man in a red hat is sitting on a bench in the park." in text for text in plain)
    assert not [o for o in outputs if o.get("name") == "stderr"]  # quiet: no log lines, no warnings
    views = [page for page in html if 'class="nmt-view"' in page]  # model, head, tree, what if
    assert len(views) == 4 and all("srcdoc=" in page for page in views)
    for view in ("model", "head", "tree"):
        assert any(f"nmt {view} view" in page for page in views), view
    assert (tmp_path / "runs" / "notebook" / "bahdanau" / "summary.json").is_file()


def test_the_notebook_is_committed_with_its_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code)
    outputs = [o for cell in code for o in cell.outputs]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 1
    assert sum("data:image/png;base64," in o.get("data", {}).get("text/html", "") for o in outputs) >= 2
