"""nmt.translate's --explain, --top-k and --json: explanations and alternatives
of each translation, written where the attention goes.

    python -m nmt.translate --checkpoint best.pt --explain saliency integrated-gradients \\
        --plot-attention maps/ --attention-html page.html --json lines.json --top-k 5 < test.de

--explain METHOD ... (nmt.explain.METHODS) adds each method's map: to
--plot-attention as NNNNN_METHOD.png beside NNNNN.png, to --attention-html
as one more map in each line's map selector, and to --json. --top-k K adds
each output step's K most probable subwords with their probabilities, read
by a teacher-forced pass over the chosen output (nmt.explain.top_k), to
--json and to --attention-html's tooltips; the search and its output are
the same with or without it.

--json FILE is one JSON object: {"lines": [one per input line: line, source,
text, score, src_pieces, tgt_pieces, "explanations": {METHOD: {title,
legend, note, scores (L, H, T, S) as computed, shown: each row divided by
its sum}}, "alternatives": [one per output row]]}.
"""

import json

from nmt.base import own_files
from nmt.base.errors import NmtError


def check_explain_args(args) -> None:
    """--explain, --top-k and --json together, before any input is read."""
    if args.explain:                 # nmt.explain imports torch: only when asked for
        from nmt.explain import check_method

        for method in args.explain:
            check_method(method)
    if args.explain and not (args.plot_attention or args.attention_html or args.json):
        raise NmtError("--explain writes its maps into --plot-attention DIR, --attention-html FILE or --json FILE; "
                       "add one of them")
    if args.top_k is not None and not (args.json or args.attention_html):
        raise NmtError(f"--top-k {args.top_k} writes each step's alternatives into --json FILE or "
                       "--attention-html FILE; add one of them")
    if (args.explain or args.top_k) and args.engine == "ctranslate2":
        raise NmtError("--explain and --top-k read the model's gradients and probabilities: they need nmt's engine "
                       "and a .pt checkpoint (or --hf), not CTranslate2's")


def check_explainable(translator, methods) -> None:
    """Every --explain method applies to `translator`'s model: one NmtError line
    before any sentence is translated."""
    if not methods:
        return                       # nothing to check: the CTranslate2 route stays torch-free
    from nmt.explain.models import model_of

    adapter = model_of(translator)
    if "rollout" in methods and not adapter.transformer_decoder:
        raise NmtError("--explain rollout follows a Transformer decoder's layers and residuals; this model's "
                       "decoder is an RNN with one attention (choose value-norm or a gradient method)")


def rounded(array) -> list:
    """A numpy array as nested lists of 6 significant digits."""
    return [rounded(a) for a in array] if getattr(array, "ndim", 0) > 1 else [float(f"{v:.6g}") for v in array]


def line_record(translator, number: int, source: str, out, methods, top_k) -> dict:
    """One input line's --json object."""
    from nmt.explain import explain
    from nmt.viz.explanation_maps import alternatives_text

    record = {"line": number, "source": source, "text": out.text, "score": float(out.score),
              "src_pieces": out.src_pieces, "tgt_pieces": out.tgt_pieces, "explanations": {}}
    if not out.tgt_pieces:
        return record
    T, S = len(out.tgt_pieces), len(out.src_pieces)
    for method in methods:
        result = explain(translator, source, out.tokens, method)
        record["explanations"][method] = {"title": result.title, "legend": result.legend, "note": result.note,
                                          "scores": rounded(result.scores[:, :, :T, :S]),
                                          "shown": rounded(result.shown[:, :, :T, :S])}
    if top_k:
        record["alternatives"] = alternatives_text(translator, source, out, top_k)
    return record


def write_json(translator, sources, outputs, args) -> None:
    """--json: every line's record (module docstring), written whole."""
    lines = [line_record(translator, n, s, o, args.explain or [], args.top_k)
             for n, (s, o) in enumerate(zip(sources, outputs), 1)]
    body = json.dumps({"lines": lines}, ensure_ascii=False).encode("utf-8")
    try:
        own_files.write(args.json, body, own_files.EXPLANATIONS)
    except OSError as error:
        raise NmtError(f"cannot write {args.json}: {error.strerror or error}") from None


def html_additions(args):
    """What --attention-html adds to each result: None, or a function
    (member translator, result, Translation) -> result."""
    if not (args.explain or args.top_k):
        return None
    from nmt.viz.explanation_maps import add_explanations

    return lambda member, result, out: add_explanations(member, result, out, args.explain or [], args.top_k)


def write_explain_outputs(translator, sources, outputs, args) -> None:
    """--explain's pictures and --json, after the translations are written."""
    if args.plot_attention:
        from nmt.viz.explanation_maps import plot_explanations

        for method in args.explain or []:
            plot_explanations(translator, sources, outputs, args.plot_attention, method, args.dpi,
                              args.attention_scale, args.plot_columns)
    if args.json:
        write_json(translator, sources, outputs, args)
