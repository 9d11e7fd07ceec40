"""nmt.explain's explanations and top-k alternatives as the views draw them.

An explanation becomes one more map of a translation (the form of
nmt.viz.attention_data: rows the output subwords then "</s>", columns the
source subwords), named "explain-METHOD", beside the attention maps, so
the explorer's and the HTML export's map selector, the notebook views and
`--plot-attention` show it as they show attention. What is drawn is each
row divided by its sum (nmt.explain.scores): a share of the row's
attribution, 0 to 1 on the same colour rule as attention
(nmt.viz.colour_scale), so an attribution spread evenly looks flat.

Alternatives (nmt.explain.top_k) are attached to every map whose rows are
the output's subwords (`alternatives`: one line of text per row, the k
most probable subwords with their probabilities, and the chosen one's),
which the page shows when a cell is hovered. The explorer computes them
only when the page asks (its "top-k alternatives" button: POST
/api/alternatives, `alternatives_on_demand`), not with every translation.
"""

from pathlib import Path
from types import SimpleNamespace

from nmt.base.errors import NmtError
from nmt.viz.attention_data import DIGITS, _map

VALUE_NAME = "share of the row's attribution"


def explanation_map(translator, source: str, out, method: str) -> dict:
    """The map of `method` explaining Translation `out` of `source`."""
    from nmt.explain import explain

    result = explain(translator, source, out.tokens, method)
    T, S = len(out.tgt_pieces), len(out.src_pieces)
    shown = result.shown[:, :, :T, :S]                                  # (L, H, T, S)
    layers = "; each layer's own map" if shown.shape[0] > 1 else ""
    entry = _map(f"explain-{method}", result.title, out.tgt_pieces, out.src_pieces, "target", "source", shown)
    entry.update(method=method, value_name=VALUE_NAME,
                 legend=(f"{result.title}: cell (t, j) = {result.legend}, divided by its row's sum, so each row "
                         f"is a share of target token t's attribution over the source{layers}"
                         + (f"; {result.note}" if result.note else "")))
    return entry


def alternatives_text(translator, source: str, out, k: int) -> list[dict]:
    """Per output row (its subwords then </s>): the k most probable subwords
    and probabilities, the chosen one's probability and rank (nmt.explain.top_k)."""
    from nmt.explain import alternatives

    pieces = translator.tokenizer.tgt_pieces
    rows = alternatives(translator, source, out.tokens, k)
    return [{"chosen": chosen, "chosen_p": round(row["chosen_p"], DIGITS), "chosen_rank": row["chosen_rank"],
             "pieces": pieces(row["ids"]), "p": [round(p, DIGITS) for p in row["p"]]}
            for chosen, row in zip(out.tgt_pieces, rows)]


def row_tips(rows: list[dict]) -> list[str]:
    """One line of text per row: 'chosen p=0.81 (rank 1); top: ▁a 0.81, ▁the 0.07'."""
    return [f"chosen p={row['chosen_p']:.4g} (rank {row['chosen_rank']}); top: "
            + ", ".join(f"{piece} {p:.4g}" for piece, p in zip(row["pieces"], row["p"])) for row in rows]


def add_explanations(translator, result: dict, out, methods=(), top_k: int | None = None,
                     first: bool = False) -> dict:
    """`result` (nmt.viz.attention_data.explain) with the maps of `methods`
    added (before the attention maps when `first`: the one shown), and with
    `top_k` its "alternatives" and each target-row map's tips."""
    maps = [explanation_map(translator, result["source"], out, method) for method in methods]
    result["maps"] = maps + result["maps"] if first else result["maps"] + maps
    if top_k:
        result["alternatives"] = alternatives_text(translator, result["source"], out, top_k)
        tips = row_tips(result["alternatives"])
        for entry in result["maps"]:
            if entry["row_axis"] == "target":
                entry["alternatives"] = tips
    return result


def explain_result(translator, result: dict, methods=(), top_k: int | None = None) -> dict:
    """add_explanations of a result alone (its "tokens" are the output's ids), the explanations first."""
    out = SimpleNamespace(tokens=result["tokens"], src_pieces=result["src_pieces"], tgt_pieces=result["tgt_pieces"])
    return add_explanations(translator, result, out, methods, top_k, first=True)


def alternatives_on_demand(models, shown, body) -> dict:
    """POST /api/alternatives {"id": a result the explorer keeps, "k": 1..50 (5 if absent)}
    -> {"alternatives": alternatives_text's rows, "tips": row_tips}, of the model that wrote
    it (nmt.viz.on_demand.ShownOnly); NmtError when wrong. Call it holding the models' lock."""
    if not isinstance(body, dict):
        raise NmtError("send a JSON object {id, k}")
    k = body.get("k", 5)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 50:
        raise NmtError("k must be a whole number from 1 to 50")
    result, model = shown.whole(body.get("id"))
    rows = alternatives_text(models[model].translator, result["source"], SimpleNamespace(**{
        key: result[key] for key in ("tokens", "src_pieces", "tgt_pieces")}), k) if result.get("tgt_pieces") else []
    return {"alternatives": rows, "tips": row_tips(rows)}


def explain_request(body: dict) -> tuple[list[str], int]:
    """The explorer's {"explain": METHOD or absent, "top_k": K or absent} -> (methods, k); NmtError if wrong."""
    from nmt.explain import check_method

    method, k = body.get("explain"), body.get("top_k", 0)
    if method is not None and not isinstance(method, str):
        raise NmtError("explain must be the name of a method, or left out")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 50:
        raise NmtError("top_k must be a whole number from 0 to 50")
    return ([check_method(method, "explain=")] if method else []), k


def explain_replies(models, results: list[dict], methods: list[str], k: int) -> None:
    """Each model's result (those without an error) with its explanation first
    and its alternatives; a method the model cannot give is said in
    `explain_error`, the rest of the result kept."""
    for model, result in zip(models, results):
        if "error" in result or not result.get("tgt_pieces"):
            continue
        try:
            explain_result(model.translator, result, methods, k)
        except NmtError as problem:
            result["explain_error"] = str(problem)


def plot_explanations(translator, sources, outputs, folder: str, method: str, dpi: int = 150,
                      scale: str = "absolute", columns: int | None = None) -> None:
    """--plot-attention with --explain: beside each line's NNNNN.png, NNNNN_METHOD.png
    (a per-layer method: the last layer's map), titled with the line and the method."""
    from nmt.viz.heatmaps import card_figures, save_figure

    for number, (source, out) in enumerate(zip(sources, outputs), 1):
        if not out.tgt_pieces:
            continue
        entry = explanation_map(translator, source, out, method)
        layers = len(entry["layers"])
        quoted = source if len(source) <= 60 else source[:59] + "…"
        title = f"line {number}: {quoted}\n{entry['title']}" + (f", layer {layers}/{layers}" if layers > 1 else "")
        for suffix, fig in card_figures(entry["layers"][-1][0], out.src_pieces, out.tgt_pieces, title,
                                        scale=scale, max_columns=columns, value_name=VALUE_NAME):
            path = Path(folder) / f"{number:05d}_{method}{suffix.replace('/', '_')}.png"
            try:
                save_figure(fig, path, dpi=dpi)
            except OSError as error:
                raise NmtError(f"cannot write {path}: {error.strerror or error}") from None


async def explained(models, lock, methods: list[str], top_k: int, *replies: list[dict]) -> None:
    """The explorer's: each result of `replies` (one list of results, one per model)
    given its explanation and alternatives, when asked for; before the reply is
    packed (nmt.viz.on_demand), so an explanation's map is sent as the others are."""
    from starlette.concurrency import run_in_threadpool

    for results in replies if methods or top_k else ():
        await run_in_threadpool(locked, lock, explain_replies, models, results, methods, top_k)


def locked(lock, function, *args):
    """function(*args) while holding `lock` (the models are shared)."""
    with lock:
        return function(*args)
