"""The options of `python -m nmt.translate` (nmt.translate.main reads them)."""

import argparse

from nmt.base.cli_checks import ArgumentParser, finite_float, picture_dpi, positive_int
from nmt.core.length_limit import MAX_LEN_EXTRA, MAX_LEN_RATIO
from nmt.commands.model_options import add_device_option, add_model_options

DESCRIPTION = ("python -m nmt.translate --checkpoint PATH [options]: a thin CLI over Translator. "
               "No model yet? --model multi30k-de-en translates German to English with a model shipped in nmt.")


def add_explain_options(parser) -> None:
    """--explain, --top-k and --json (nmt.commands.translate_explain)."""
    parser.add_argument("--explain", nargs="+", metavar="METHOD",
                        help="also explain each translation: saliency, input-x-gradient, integrated-gradients "
                             "(Captum, on the source embeddings), rollout (Transformers) or value-norm; its maps go "
                             "to --plot-attention (NNNNN_METHOD.png), --attention-html and --json (docs/explain.md)")
    parser.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                        help="each output step's K most probable subwords and their probabilities, in --json and "
                             "--attention-html's tooltips (a teacher-forced pass; the search is unchanged)")
    parser.add_argument("--json", metavar="FILE",
                        help="write every line's translation, subwords, --explain maps and --top-k alternatives "
                             "as one JSON object")


def parse_args(argv=None) -> argparse.Namespace:
    parser = ArgumentParser(prog="python -m nmt.translate", description=DESCRIPTION)
    parser.add_argument("--checkpoint", nargs="+", metavar="PATH",
                        help="a .pt file written by nmt.train; several (same vocabulary) are decoded "
                             "as an ensemble that averages their next-token probabilities")
    add_model_options(parser, "decoded by its generate() instead of --checkpoint")
    parser.add_argument("--engine", choices=["nmt", "ctranslate2"], default=None,
                        help="nmt (a .pt checkpoint) or ctranslate2 (a folder written by nmt.export); "
                             "default: ctranslate2 when --checkpoint is a folder")
    parser.add_argument("--input", help="source file, one sentence a line (default or -: stdin)")
    parser.add_argument("--output", help="write translations here, atomically (default: stdout)")
    parser.add_argument("--beam-size", type=positive_int, default=5, help="1 = greedy")
    parser.add_argument("--nbest", type=positive_int, default=1,
                        help="print the N best as 'line ||| text ||| score' (Moses n-best format)")
    parser.add_argument("--length-penalty", type=finite_float, default=1.0, help="Wu et al. 2016 alpha")
    parser.add_argument("--coverage-penalty", type=finite_float, default=0.0, metavar="BETA",
                        help="Wu et al. 2016 beta: beam hypotheses ranked by log P / lp + beta * "
                             "sum over source tokens of log(min(attention received, 1)); 0 = off")
    parser.add_argument("--batch-size", type=positive_int, default=64, help="sentences per batch")
    parser.add_argument("--max-length-ratio", type=finite_float, default=MAX_LEN_RATIO, metavar="R",
                        help="the output may have at most R * source subwords + --max-length-extra")
    parser.add_argument("--max-length-extra", type=int, default=MAX_LEN_EXTRA, metavar="N",
                        help="subwords an output may have beyond --max-length-ratio R * source subwords")
    parser.add_argument("--min-length", type=int, default=0, metavar="N",
                        help="no output ends before N subwords (unless the maximum comes first)")
    add_device_option(parser)
    parser.add_argument("--kernels", default="torch", choices=["plain", "torch", "fast"],
                        help="nmt's engine: torch's own kernels with the decoder's cache kept in place (the "
                             "default), plain (the reference core's step alone, the same outputs), or on the CPU "
                             "fast ones (oneDNN's matrix products, the decoder step's attention written out), the "
                             "floats differing in the last bits")
    add_picture_options(parser)
    add_explain_options(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace output files that nmt did not write")
    return parser.parse_args(argv)


def add_picture_options(parser) -> None:
    """The options that draw or export attention: PNGs, the HTML file, links, the beam tree."""
    parser.add_argument("--plot-attention", metavar="DIR",
                        help="write a heatmap PNG of each sentence here, NNNNN.png, one figure however long "
                             "the source (see --plot-columns)")
    parser.add_argument("--plot-columns", type=positive_int, default=None, metavar="N",
                        help="split a source over N subwords into PNGs NNNNN_source_A-B.png (default: never)")
    parser.add_argument("--dpi", type=picture_dpi, default=150,
                        help="--plot-attention's resolution, 1 to 1200: 150 draws 16 source subwords in 510 pixels")
    parser.add_argument("--attention-layer", type=int, default=None,
                        help="Transformer or --hf: cross-attention layer to draw (1-based; default last)")
    parser.add_argument("--attention-head", type=int, default=None,
                        help="Transformer or --hf: head to draw (1-based; default mean over heads)")
    parser.add_argument("--attention-scale", choices=["absolute", "relative"], default="absolute", help="--plot-"
                        "attention's colours: weight 0 to 1, or 0 to the map's largest (printed, with the entropy)")
    parser.add_argument("--reference", help="reference file: also print sacreBLEU and chrF")
    parser.add_argument("--attention-html", metavar="FILE",
                        help="write every line's interactive attention heatmaps to one offline HTML file")
    parser.add_argument("--links", metavar="FILE",
                        help="reference word links, one Pharaoh line ('i-j ...') per input line, of the source "
                             "and its translation: drawn on --attention-html's maps with AER, precision, recall")
    parser.add_argument("--beam-tree", metavar="FILE.json",
                        help="one input line: write its beam search as a tree (every hypothesis kept or "
                             "pruned at each step, the finals and their penalties) as JSON")
