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

if __name__ == "__main__":      # first: stop signals are one line while torch loads
    from nmt.cli import run_command

    run_command("nmt.export", "; DIR is written whole or not at all")

from pathlib import Path

from nmt.cli import command
from nmt.cli_checks import ArgumentParser, check_checkpoint_exists, write_stdout
from nmt.deploy import require_ctranslate2
from nmt.deploy.layout import QUANTIZATIONS
from nmt.errors import NmtError


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m nmt.export", description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a .pt file written by nmt.train or nmt.average")
    parser.add_argument("--output", required=True, help="the folder to write (must not exist, unless --force)")
    parser.add_argument("--quantization", default="float32", choices=QUANTIZATIONS,
                        help="CTranslate2's weight type: float32 (default; what nmt computes), int8 "
                             "(about 4x smaller, faster on CPU), int8_float32, int16, ...")
    parser.add_argument("--force", action="store_true", help="replace --output if it exists")
    return parser.parse_args(argv)


def check_output_folder(output: Path, force: bool) -> None:
    if output.exists() and not output.is_dir():
        raise NmtError(f"--output {output} is a file; give a folder name")
    if output.exists() and not force:
        raise NmtError(f"--output {output} exists; choose another folder or add --force to replace it")
    if not output.resolve().parent.is_dir():
        raise NmtError(f"--output {output}: its parent folder does not exist")


def export(checkpoint: str, output: Path, quantization: str) -> dict:
    """Check, load, convert and write; returns the metadata written."""
    check_checkpoint_exists(checkpoint)      # before CTranslate2 and torch load: a typo answers at once
    require_ctranslate2()
    from omegaconf import OmegaConf

    from nmt.deploy.convert import check_exportable, export_translator
    from nmt.store.checkpoints import load_checkpoint
    from nmt.translator import Translator

    check_exportable(OmegaConf.create(load_checkpoint(checkpoint)["config"]).model)
    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    return export_translator(translator, output, quantization, checkpoint)


@command
def main(argv=None) -> int:
    args = parse_args(argv)
    output = Path(args.output)
    check_output_folder(output, args.force)
    export(args.checkpoint, output, args.quantization)
    size = sum(f.stat().st_size for f in output.iterdir()) / 2**20
    write_stdout(f"exported {args.checkpoint} to {output} ({args.quantization}, {size:.1f} MiB); "
                 f"translate with: python -m nmt.translate --checkpoint {output}\n")
    return 0


def cli() -> None:
    """The `nmt-export` console command: what `python -m nmt.export` runs."""
    from nmt.cli import run_command

    run_command("nmt.export", "; DIR is written whole or not at all")
