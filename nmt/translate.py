"""python -m nmt.translate --checkpoint PATH [options]: a thin CLI over Translator.

Reads stdin when no --input and writes stdout when no --output, one line out
per line in; an empty line gives an empty line.
"""

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path

from nmt.errors import NmtError

log = logging.getLogger("nmt.translate")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m nmt.translate", description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a .pt file written by nmt.train")
    parser.add_argument("--input", help="source file, one sentence a line (default: stdin)")
    parser.add_argument("--output", help="write translations here, atomically (default: stdout)")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--nbest", type=int, default=1,
                        help="print the N best as 'line ||| text ||| score' (Moses n-best format)")
    parser.add_argument("--length-penalty", type=float, default=1.0, help="Wu et al. 2016 alpha")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per batch")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--plot-attention", metavar="DIR", help="write one heatmap PNG per sentence")
    parser.add_argument("--attention-layer", type=int, default=None,
                        help="Transformer: cross-attention layer to draw (1-based; default last)")
    parser.add_argument("--attention-head", type=int, default=None,
                        help="Transformer: head to draw (1-based; default mean over heads)")
    parser.add_argument("--reference", help="reference file: also print sacreBLEU and chrF")
    parser.add_argument("--attention-html", metavar="FILE",
                        help="write every line's interactive attention heatmaps to one offline HTML file")
    return parser.parse_args(argv)


def read_input(path: str | None) -> list[str]:
    """Lines of a file or stdin as text; invalid UTF-8 names its line."""
    if path is not None:
        from nmt.data.readers import read_lines
        return read_lines(path)
    raw = sys.stdin.buffer.read()
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    text = []
    for number, line in enumerate(lines, 1):
        try:
            text.append(line.decode("utf-8").removesuffix("\r").lstrip("\ufeff") if number == 1
                        else line.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError as error:
            raise NmtError(f"<stdin> line {number}: invalid UTF-8 (byte {error.start + 1}); "
                           "convert the input to UTF-8") from None
    return text


def write_output(lines: list[str], path: str | None) -> None:
    body = "".join(line + "\n" for line in lines)
    if path is None:
        sys.stdout.write(body)
        sys.stdout.flush()
        return
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body)
        os.replace(tmp, target)
    except OSError as error:
        raise NmtError(f"cannot write {path}: {error.strerror or error}") from None


def plot_attention(translator, sources, outputs, folder: str, layer, head) -> None:
    import torch

    from nmt.viz.heatmaps import attention_figure, save_figure

    Path(folder).mkdir(parents=True, exist_ok=True)
    for number, (source, out) in enumerate(zip(sources, outputs), 1):
        if not out.tgt_pieces:
            continue
        weights, title = out.attention, f"line {number}"
        if layer is not None or head is not None:
            src, _, _ = translator._encode([source])
            tgt_in = torch.tensor([[2] + out.tokens], device=src.device)
            with torch.no_grad():
                result, _ = translator.model(src, tgt_in, need_weights=True)
            if result.layers is None:
                raise NmtError("--attention-layer/--attention-head need a Transformer decoder")
            layers = result.layers[0].float().cpu()            # (L, H, T, S)
            chosen = layers[(layer or layers.size(0)) - 1]       # (H, T, S)
            weights = chosen.mean(0) if head is None else chosen[head - 1]
            title += f", layer {layer or layers.size(0)}, " + ("mean of heads" if head is None else f"head {head}")
        save_figure(attention_figure(weights, out.src_pieces, out.tgt_pieces, title=title),
                    Path(folder) / f"{number:05d}.png")


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="nmt: %(message)s")
    try:
        from nmt.translator import Translator
        from nmt.training.validation import score_translations

        sources = read_input(args.input)
        references = None
        if args.reference:
            from nmt.data.readers import read_lines
            references = read_lines(args.reference)
            if len(references) != len(sources):
                raise NmtError(f"--reference {args.reference} has {len(references)} lines but the "
                               f"input has {len(sources)}")
        translator = Translator.from_checkpoint(args.checkpoint, device=args.device)
        outputs = translator.translate(sources, beam_size=args.beam_size, nbest=args.nbest,
                                       batch_size=args.batch_size, length_penalty=args.length_penalty)
        truncated = [i + 1 for i, o in enumerate(outputs) if o.truncated]
        if truncated:
            log.warning("%d input line(s) longer than the model's %d subwords were truncated "
                        "(first: line %d)", len(truncated), translator.max_src_len, truncated[0])
        if args.nbest > 1:
            lines = [f"{i} ||| {text} ||| {score:.4f}" for i, o in enumerate(outputs)
                     for text, score in (o.nbest or [("", 0.0)])]
        else:
            lines = [o.text for o in outputs]
        write_output(lines, args.output)
        if args.plot_attention:
            plot_attention(translator, sources, outputs, args.plot_attention,
                           args.attention_layer, args.attention_head)
        if args.attention_html:
            from nmt.viz.html_export import write_attention_html
            write_attention_html(translator, sources, outputs, args.attention_html, args.checkpoint)
        if references is not None:
            bleu, chrf, bleu_sig, chrf_sig = score_translations([o.text for o in outputs], references)
            print(f"BLEU {bleu:.2f} ({bleu_sig})\nchrF {chrf:.2f} ({chrf_sig})", file=sys.stderr)
    except NmtError as error:
        print(f"nmt: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
