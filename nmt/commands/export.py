"""python -m nmt.export --checkpoint best.pt --output DIR: a CTranslate2 model to serve.

    python -m nmt.export --checkpoint outputs/.../checkpoints/best.pt --output m30k_ct2
    python -m nmt.export --checkpoint best.pt --output m30k_ct2_int8 --quantization int8
    python -m nmt.translate --checkpoint m30k_ct2 --beam-size 5 < test.de

DIR gets CTranslate2's model (model.bin, config.json, vocabularies), the
sentencepiece models beside it (source.spm, target.spm) and nmt_export.json
(nmt.deploy.layout). A configuration CTranslate2 cannot represent is refused
in one line naming the part, before anything is written; DIR appears whole
or not at all (built in a hidden folder beside it, then renamed).
"""


import shlex
import sys
from argparse import ArgumentTypeError
from pathlib import Path

from nmt.base.cli import command, runnable
from nmt.base.cli_checks import ArgumentParser, check_checkpoint_exists, finite_float, refuse_link_loop, write_stdout
from nmt.deploy import require_ctranslate2
from nmt.deploy.layout import QUANTIZATIONS, foreign_entries, is_export
from nmt.base.errors import NmtError
from nmt.base.file_inputs import special_kind
from nmt.base.run_files import holds_a_run


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m nmt.export", description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a .pt file written by nmt.train or nmt.average")
    parser.add_argument("--output", required=True, help="the folder to write (must not exist, unless --force)")
    parser.add_argument("--quantization", default="float32", choices=QUANTIZATIONS,
                        help="CTranslate2's weight type: float32 (default; what nmt computes), int8 "
                             "(about 4x smaller, faster on CPU), int8_float32, int16, ...")
    parser.add_argument("--force", action="store_true", help="replace --output if it exists")
    parser.add_argument("--min-agreement", type=fraction, default=0.5,
                        help="a type other than float32: refuse the export when fewer of the checkpoint's "
                             "validation sentences than this fraction translate as float32 does")
    parser.add_argument("--max-bleu-drop", type=non_negative_float, default=1.0,
                        help="a type other than float32: refuse the export when its BLEU on those "
                             "sentences is more than this many points below float32's")
    return parser.parse_args(argv)


def fraction(text: str) -> float:
    """argparse type: a number from 0 to 1."""
    value = finite_float(text)
    if not 0 <= value <= 1:
        raise ArgumentTypeError(f"{text} is not in [0, 1]")
    return value


def non_negative_float(text: str) -> float:
    """argparse type: a finite number of at least 0."""
    value = finite_float(text)
    if value < 0:
        raise ArgumentTypeError(f"{text} is below 0")
    return value


def check_output_folder(output: Path, force: bool, checkpoint: str | None = None) -> None:
    """An --output that can be written: new, or (with --force) an earlier nmt
    export and nothing else; never a run folder, the checkpoint's folder or a
    folder holding anything an export does not write."""
    refuse_link_loop(output, "--output")
    if output.exists() and not output.is_dir():
        raise NmtError(f"--output {output} is {special_kind(output) or 'a file'}; give a folder name")
    if output.exists() and not force:
        raise NmtError(f"--output {output} exists; choose another folder or add --force to replace it")
    if output.exists():
        check_replaceable(output, checkpoint)
        check_not_working_folder(output)
    if not output.resolve().parent.is_dir():
        raise NmtError(f"--output {output}: its parent folder does not exist")


def check_not_working_folder(output: Path) -> None:
    """--force never replaces the folder the command runs in (or one above it):
    the shell would be left in a folder that no longer exists."""
    try:
        here = Path.cwd().resolve()
    except OSError:                     # the working folder is gone already: nothing to protect
        return
    if output.resolve() == here or output.resolve() in here.parents:
        raise NmtError(f"--output {output} is the folder this command runs in (or holds it); --force would "
                       "replace it under the shell; run the export from another folder")


def check_replaceable(output: Path, checkpoint: str | None) -> None:
    """--force replaces `output` only when it holds an nmt export and nothing foreign."""
    if checkpoint is not None and output.resolve() in Path(checkpoint).resolve().parents:
        raise NmtError(f"--output {output} holds the checkpoint {checkpoint}; --force replaces only a folder "
                       "written by nmt.export; choose another folder")
    if holds_a_run(output):
        raise NmtError(f"--output {output} is a training run's folder; --force replaces only a folder "
                       "written by nmt.export; choose another folder")
    try:
        foreign = foreign_entries(output)
        exported = is_export(output)
    except OSError as error:
        raise NmtError(f"--output {output} cannot be read ({error.strerror or error}); choose another folder") \
            from None
    if foreign or (not exported and any(output.iterdir())):
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise NmtError(f"--output {output} holds {shown or 'files'} that nmt.export did not write; --force "
                       "replaces only a folder written by nmt.export; choose another folder or move them")


def export(checkpoint: str, output: Path, quantization: str, min_agreement: float = 0.5,
           max_bleu_drop: float = 1.0) -> tuple[dict, str]:
    """Check, load, convert, self-check (a lossy type) and write; returns the
    metadata written and what the self-check found (a line, or "")."""
    check_checkpoint_exists(checkpoint)      # before CTranslate2 and torch load: a typo answers at once
    require_ctranslate2()
    from omegaconf import OmegaConf

    from nmt.deploy import self_check
    from nmt.deploy.convert import check_exportable, export_translator
    from nmt.store.checkpoints import load_checkpoint
    from nmt.translator import Translator

    state = load_checkpoint(checkpoint, parts=("model",))     # its config and samples; the weights checked
    check_exportable(OmegaConf.create(state["config"]).model)
    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    sources, references = self_check.stored_samples(state)
    found = []

    def check(folder: Path) -> None:
        agreement = self_check.measure(translator, folder, sources, references)
        warning = self_check.check_agreement(agreement, quantization, min_agreement, max_bleu_drop)
        if warning:
            print(f"nmt: warning: {warning}", file=sys.stderr, flush=True)
        found.append(agreement.describe(quantization))

    lossy = quantization not in self_check.LOSSLESS
    if lossy and not sources:
        print(f"nmt: warning: {checkpoint} stores no validation sentences, so the {quantization} export "
              "was not compared with float32; check it on your own test set", file=sys.stderr, flush=True)
    metadata = export_translator(translator, output, quantization, checkpoint,
                                 check=check if lossy and sources else None)
    return metadata, found[0] if found else ""


@command
def main(argv=None) -> int:
    args = parse_args(argv)
    output = Path(args.output)
    check_output_folder(output, args.force, args.checkpoint)
    _, agreement = export(args.checkpoint, output, args.quantization, args.min_agreement, args.max_bleu_drop)
    size = sum(f.stat().st_size for f in output.iterdir()) / 2**20
    checked = f"self-check: {agreement}\n" if agreement else ""
    write_stdout(f"{checked}exported {args.checkpoint} to {output} ({args.quantization}, {size:.1f} MiB); "
                 f"translate with: {runnable('nmt.translate', 'nmt-translate')} --checkpoint "
                 f"{shlex.quote(str(output.resolve()))}\n")
    return 0


def cli() -> None:
    """The `nmt-export` console command: what `python -m nmt.export` runs."""
    from nmt.commands import run

    run("export")
