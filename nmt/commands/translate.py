"""python -m nmt.translate --checkpoint PATH [options]: a thin CLI over Translator.

    echo "Ein Hund läuft." | python -m nmt.translate --model multi30k-de-en    # a model shipped with nmt

Reads stdin when no --input and writes stdout when no --output, one line out
per line in; an empty line gives an empty line. Input and output are UTF-8
whatever the locale; --output is replaced atomically, so a failed run leaves
an existing file as it was.
"""


import logging
import math
import sys
from pathlib import Path

from nmt.base import own_files
from nmt.base.cli import command
from nmt.base.cli_checks import (check_checkpoint_exists, check_not_input, check_output, write_stdout)
from nmt.base.errors import NmtError
from nmt.base.file_inputs import refuse_special
from nmt.base.folders import make_folder
from nmt.base.own_files import check_pictures, check_replace
from nmt.base.run_files import check_not_run_file
from nmt.commands.translate_explain import check_explain_args, check_explainable, html_additions, write_explain_outputs
from nmt.commands.translate_options import parse_args  # noqa: F401  (the command's options)

log = logging.getLogger("nmt.translate")


def read_input(path: str | None) -> list[str]:
    """Lines of a file or stdin (None or "-") as text; invalid UTF-8 names its line."""
    if path is not None and path != "-":
        from nmt.data.readers import read_lines
        return read_lines(path)
    if sys.stdin is None:                # started with `<&-`
        raise NmtError("standard input is closed (<&-); give --input FILE or pipe the sentences in")
    try:
        raw = sys.stdin.buffer.read()
    except OSError as error:
        raise NmtError(f"cannot read standard input: {error.strerror or error}") from None
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    text = []
    for number, line in enumerate(lines, 1):
        try:
            decoded = line.decode("utf-8").removesuffix("\r")
            text.append(decoded.removeprefix("\ufeff") if number == 1 else decoded)
        except UnicodeDecodeError as error:
            raise NmtError(f"<stdin> line {number}: invalid UTF-8 (byte {error.start + 1}); "
                           "convert the input to UTF-8") from None
    return text


def write_output(lines: list[str], path: str | None) -> None:
    """One UTF-8 line per entry to stdout, or to `path` through a temporary
    file and an atomic rename (the file keeps its permissions)."""
    # A line break inside a translation would shift every later line.
    body = "".join(line.replace("\r", " ").replace("\n", " ") + "\n" for line in lines).encode("utf-8")
    if path is None:
        write_stdout(body)       # a failed write (full disk, ulimit -f) is NmtError
        return
    check_output(path)
    try:
        own_files.write(path, body, own_files.TRANSLATIONS)
    except OSError as error:
        raise NmtError(f"cannot write {path}: {error.strerror or error}") from None


OUTPUTS = {"--output": own_files.TRANSLATIONS, "--attention-html": own_files.PAGE, "--beam-tree": own_files.BEAM_TREE,
           "--json": own_files.EXPLANATIONS}


def check_files(args) -> None:
    """Every file this run reads exists; every file it writes is writable and
    none of them a file it reads (through another spelling or a link too);
    before anything is read or written."""
    inputs = [("--input", None if args.input == "-" else args.input), ("--reference", args.reference),
              ("--links", args.links)]
    for option, path in inputs:
        if path is not None and not Path(path).exists():
            raise NmtError(f"{option} {path}: no such file")
        if path is not None:                # a FIFO or a device would hang the read
            stdin = " (for standard input leave out --input, or give --input -)" if option == "--input" else ""
            if Path(path).is_dir():
                raise NmtError(f"{option} {path} is a directory; give a text file{stdin}")
            refuse_special(path, option, f"give a text file{stdin}")
    inputs += [("--checkpoint", path) for path in args.checkpoint] + [("--hf", args.hf)]
    for option, path in (("--output", args.output), ("--attention-html", args.attention_html),
                         ("--beam-tree", args.beam_tree), ("--json", args.json)):
        if path is not None:
            check_output(path, option)
            check_not_input(option, path, inputs)
            check_not_run_file(option, path)
            check_replace(path, option, OUTPUTS[option], args.overwrite)
    if args.plot_attention:
        check_pictures(args.plot_attention, "--plot-attention", args.overwrite)
    written = [(o, p) for o, p in (("--output", args.output), ("--attention-html", args.attention_html),
                                   ("--beam-tree", args.beam_tree), ("--json", args.json)) if p]
    for k, (option, path) in enumerate(written):
        check_not_input(option, path, written[:k])
    from nmt.deploy.layout import is_export

    for path in args.checkpoint:         # last: what is written, and the other inputs, are said first
        check_checkpoint_exists(path, folder_ok=is_export(path) or args.engine == "ctranslate2")


def check_layer_and_head(translator, checkpoint: str, layer, head) -> None:
    """--attention-layer and --attention-head (1-based) against the decoder,
    before any sentence is translated."""
    from torch import nn

    hf = getattr(translator, "hf_model", None)                      # --hf: its config says
    blocks = None if hf is not None else getattr(translator.model.decoder, "layers", None)
    if hf is None and not isinstance(blocks, nn.ModuleList):        # an RNN decoder: one attention
        raise NmtError("--attention-layer/--attention-head choose a Transformer decoder's layer and "
                       f"head; {checkpoint} has an RNN decoder with one attention: leave them out")
    L, H = (hf.config.decoder_layers, hf.config.decoder_attention_heads) if hf is not None else \
        (len(blocks), blocks[0].cross_attn.heads)
    if layer is not None and not 1 <= layer <= L:
        raise NmtError(f"--attention-layer {layer}: the decoder has {L} layers; pick 1 to {L}")
    if head is not None and not 1 <= head <= H:
        raise NmtError(f"--attention-head {head}: the decoder has {H} heads; pick 1 to {H}")


def plot_attention(translator, sources, outputs, folder: str, layer, head, dpi: int = 150,
                   scale: str = "absolute", columns: int | None = None) -> None:
    """Heatmap PNGs of each non-empty line: the search's attention (an
    ensemble's: the mean of its models'), local-p's centres and window, or a
    Transformer layer and head re-read from the model. Each is titled with
    the line, its source and what it shows; one figure per line, unless
    `columns` is given: a source longer than that is split into several
    PNGs on one colour scale, as TensorBoard's cards are
    (00001_source_1-13.png, ...)."""
    from nmt.viz.attention_data import exact_zeros, layers_and_centers
    from nmt.viz.heatmaps import card_figures, save_figure

    make_folder(folder, "--plot-attention")
    single = len(translator.members) == 1
    zeros = exact_zeros(translator)
    decoder = getattr(translator.model, "decoder", None)           # None: CTranslate2's engine
    blocks = getattr(decoder, "layers", None)
    for number, (source, out) in enumerate(zip(sources, outputs), 1):
        if not out.tgt_pieces:
            continue
        weights, shows = out.attention, "attention" if decoder is not None else \
            getattr(translator, "attention_label", "attention (CTranslate2)")
        if hasattr(blocks, "__len__") and len(blocks) and hasattr(blocks[0], "cross_attn"):   # Transformer
            L, H = len(blocks), blocks[0].cross_attn.heads
            shows = f"cross-attention, layer {L}/{L}, mean of {H} heads"
        if not single:
            shows = f"mean of {len(translator.members)} models' " + shows
        centers = window = None
        attention = getattr(decoder, "attention", None)
        if single and (layer is not None or head is not None or getattr(attention, "scope", None) == "local_p"):
            layers, centers = layers_and_centers(translator, source, out.tokens)   # a second forward pass
            if centers is not None:
                window = getattr(attention, "window", None)
            if layer is not None or head is not None:   # in range: check_layer_and_head
                L, H = layers.shape[:2]                              # (L, H, T, S)
                chosen = layers[(layer or L) - 1]                    # (H, T, S)
                weights = chosen.mean(0) if head is None else chosen[head - 1]
                shows = (f"cross-attention, layer {layer or L}/{L}, "
                         + (f"mean of {H} heads" if head is None else f"head {head}/{H}"))
        quoted = source if len(source) <= 60 else source[:59] + "…"
        title = f"line {number}: {quoted}\n{shows}"
        for suffix, fig in card_figures(weights, out.src_pieces, out.tgt_pieces, title, centers=centers,
                                        window=window, exact_zeros=zeros, scale=scale, max_columns=columns):
            path = Path(folder) / f"{number:05d}{suffix.replace('/', '_')}.png"
            try:
                save_figure(fig, path, dpi=dpi)
            except OSError as error:
                raise NmtError(f"cannot write {path}: {error.strerror or error}") from None


def open_engine(args):
    """The translator --engine names (nmt's own, or CTranslate2 over a folder
    from nmt.export) and the extra arguments its translate() takes. Only
    nmt's engine imports torch and the model code (seconds); CTranslate2's
    route imports neither."""
    from nmt.deploy.layout import is_export

    if args.hf:
        from nmt.hf.translator import HFTranslator

        return HFTranslator(args.hf, device=args.device, max_len_ratio=args.max_length_ratio,
                            max_len_extra=args.max_length_extra), {}
    exported = len(args.checkpoint) == 1 and is_export(args.checkpoint[0])
    if (args.engine or ("ctranslate2" if exported else "nmt")) == "nmt":
        if exported:
            raise NmtError(f"--checkpoint {args.checkpoint[0]} is a folder from nmt.export; nmt's engine "
                           "reads a .pt checkpoint (leave out --engine nmt to run it on CTranslate2)")
        from nmt.base.device import resolve_device
        from nmt.translator import Translator

        resolve_device(args.device, "--device")      # its error line names the option
        return Translator.from_checkpoints(args.checkpoint, device=args.device, max_len_ratio=args.max_length_ratio,
                                           max_len_extra=args.max_length_extra, kernels=args.kernels), {}
    from nmt.deploy.engine import CTranslate2Translator

    for option, given in (("several --checkpoint", len(args.checkpoint) > 1),
                          ("--attention-layer/--attention-head", args.attention_layer is not None
                           or args.attention_head is not None),
                          ("--attention-html", args.attention_html), ("--beam-tree", args.beam_tree),
                          (f"--kernels {args.kernels}", args.kernels != "torch")):
        if given:
            raise NmtError(f"{option} needs nmt's engine and a .pt checkpoint; CTranslate2 decodes one "
                           "exported model and returns one layer's attention (--plot-attention draws it)")
    if not Path(args.checkpoint[0]).is_dir():
        raise NmtError(f"--engine ctranslate2 reads a folder from nmt.export, not {args.checkpoint[0]}; "
                       f"python -m nmt.export --checkpoint {args.checkpoint[0]} --output DIR, then --checkpoint DIR")
    translator = CTranslate2Translator(args.checkpoint[0], device=args.device, max_len_ratio=args.max_length_ratio,
                                       max_len_extra=args.max_length_extra)
    return translator, {"attention": bool(args.plot_attention)}


def check_model_options(args) -> None:
    """One model source: --checkpoint (nmt's, or an export), --model (a shipped one, read
    as its checkpoint file from here on) or --hf, and what --hf cannot do."""
    if sum(map(bool, (args.checkpoint, args.model, args.hf))) != 1:
        raise NmtError("give the model to translate with: --checkpoint PATH (nmt), --model NAME (one shipped "
                       "with nmt, e.g. multi30k-de-en) or --hf NAME_OR_FOLDER (Hugging Face), one of the three")
    if args.model:
        from nmt.pretrained import checkpoint_path

        args.checkpoint = [str(checkpoint_path(args.model))]    # an unknown name: one line of the names
    args.checkpoint = args.checkpoint or []
    if args.hf and args.engine:
        raise NmtError("--engine needs nmt's own model and search; a --hf model is decoded by its generate()")
    if args.hf and args.kernels != "torch":
        raise NmtError(f"--kernels {args.kernels} sets nmt's own engine; a --hf model is decoded by its generate()")


def check_search_args(args, check_coverage_penalty) -> None:
    """The search and picture options, checked together before any input is read."""
    if not math.isfinite(args.max_length_ratio) or args.max_length_ratio < 0 or \
            args.max_length_extra < 0 or args.max_length_ratio == 0 and args.max_length_extra == 0:
        raise NmtError("--max-length-ratio and --max-length-extra must be finite, >= 0 and not both 0")
    if args.min_length < 0:
        raise NmtError(f"--min-length {args.min_length} must be >= 0")
    check_coverage_penalty(args.coverage_penalty, args.beam_size, "--coverage-penalty ", "--beam-size")
    for option, value in (("--attention-layer", args.attention_layer),
                          ("--attention-head", args.attention_head)):
        if value is not None and not args.plot_attention:
            raise NmtError(f"{option} chooses what --plot-attention draws; add --plot-attention DIR "
                           "(--attention-html shows every layer and head)")
    if len(args.checkpoint) > 1 and (args.attention_layer is not None or args.attention_head is not None):
        raise NmtError("--attention-layer/--attention-head draw one model's layers; "
                       "give one --checkpoint")
    if args.links and not args.attention_html:
        raise NmtError("--links draws reference links on --attention-html's page; add --attention-html FILE")
    if args.beam_tree and args.beam_size < 2:
        raise NmtError(f"--beam-tree records a beam search; set --beam-size to 2 or more (got {args.beam_size})")
    if args.plot_attention:
        make_folder(args.plot_attention, "--plot-attention")


def one_sentence(sources: list[str]) -> str:
    """The one non-empty line --beam-tree records; NmtError for none or several."""
    lines = [s for s in sources if s.strip()]
    if len(lines) != 1:
        raise NmtError(f"--beam-tree records the search of one sentence; the input has {len(lines)} non-empty "
                       "lines: give one")
    return lines[0]


def write_beam_tree(translator, sources: list[str], args) -> None:
    """--beam-tree: the one non-empty input line's search, as JSON (nmt.viz.search_tree)."""
    import json

    from nmt.viz.search_tree import beam_tree

    _, tree = beam_tree(translator, one_sentence(sources), args.beam_size, args.length_penalty, args.coverage_penalty,
                        args.min_length)
    try:
        own_files.write(args.beam_tree, json.dumps(tree, ensure_ascii=False).encode("utf-8"), own_files.BEAM_TREE)
    except OSError as error:
        raise NmtError(f"cannot write {args.beam_tree}: {error.strerror or error}") from None


def empty_input(args) -> int:
    """An input of no lines: an empty output, and a word why (exit 0); with --reference,
    one line that there is nothing to score (exit 1), before anything is written."""
    if args.reference:
        from nmt.base.scoring import score_translations

        score_translations([], [])                   # its NmtError: no sentences to score
    write_output([], args.output)
    log.warning("the input (%s) has no lines: nothing to translate, so %s is empty too",
                args.input if args.input not in (None, "-") else "standard input", args.output or "the output")
    return 0


def line_per_source(path: str | None, option: str, sources: list[str]) -> list[str] | None:
    """A file of one line per input line (--links, --reference), or None when not given."""
    if not path:
        return None
    from nmt.data.readers import read_lines

    lines = read_lines(path)
    if len(lines) != len(sources):
        raise NmtError(f"{option} {path} has {len(lines)} lines but the input has {len(sources)}")
    return lines


@command
def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="nmt: %(message)s")
    check_model_options(args)
    check_files(args)              # before the seconds of importing torch
    from nmt.decoding.interface import check_coverage_penalty   # torch-free: see open_engine

    check_search_args(args, check_coverage_penalty)
    check_explain_args(args)
    sources = read_input(args.input)
    if args.beam_tree:
        one_sentence(sources)
    links = line_per_source(args.links, "--links", sources)
    references = line_per_source(args.reference, "--reference", sources)
    if not sources:
        return empty_input(args)
    translator, search = open_engine(args)
    if args.attention_layer is not None or args.attention_head is not None:
        check_layer_and_head(translator, (args.checkpoint or [args.hf])[0], args.attention_layer,
                             args.attention_head)
    check_explainable(translator, args.explain)
    outputs = translator.translate(sources, beam_size=args.beam_size, nbest=args.nbest,
                                   batch_size=args.batch_size, length_penalty=args.length_penalty,
                                   min_length=args.min_length,
                                   coverage_penalty=args.coverage_penalty, **search)
    truncated = [i + 1 for i, o in enumerate(outputs) if o.truncated]
    if truncated:
        log.warning("%d input line(s) longer than the model's %d subwords were truncated "
                    "(first: line %d)", len(truncated), translator.max_src_len, truncated[0])
    from nmt.viz.unknown_share import warn_unknown
    warn_unknown(outputs, log)                    # lines mostly <unk>: one line
    if args.nbest > 1:
        lines = [f"{i} ||| {text} ||| {score:.4f}" for i, o in enumerate(outputs)
                 for text, score in (o.nbest or [("", 0.0)])]
    else:
        lines = [o.text for o in outputs]
    write_output(lines, args.output)
    if args.plot_attention:
        plot_attention(translator, sources, outputs, args.plot_attention,
                       args.attention_layer, args.attention_head, args.dpi, args.attention_scale, args.plot_columns)
    write_explain_outputs(translator, sources, outputs, args)
    if args.beam_tree:
        write_beam_tree(translator, sources, args)
    if args.attention_html:
        from nmt.viz.html_export import write_attention_html
        write_attention_html(translator, sources, outputs, args.attention_html, args.checkpoint or [args.hf],
                             beam_size=args.beam_size, links=links, search={"length_penalty": args.length_penalty,
                             "min_length": args.min_length, "coverage_penalty": args.coverage_penalty},
                             add=html_additions(args))
    if references is not None:
        from nmt.base.scoring import score_translations

        bleu, chrf, bleu_sig, chrf_sig = score_translations([o.text for o in outputs], references)
        print(f"BLEU {bleu:.2f} ({bleu_sig})\nchrF {chrf:.2f} ({chrf_sig})", file=sys.stderr)
    return 0


def cli() -> None:
    """The `nmt-translate` console command: what `python -m nmt.translate` runs."""
    from nmt.commands import run

    run("translate")
