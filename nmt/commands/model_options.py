"""The options that choose a model and a device, alike in `python -m nmt.translate`
and `python -m nmt.explore`: --model (a model shipped with nmt), --hf (a Hugging
Face one) and --device."""

from nmt.pretrained import names as pretrained_names


def add_model_options(parser, hf_use: str) -> None:
    """--model NAME and --hf NAME_OR_FOLDER; `hf_use` says what the command does with --hf."""
    parser.add_argument("--model", metavar="NAME",
                        help="instead of --checkpoint: a trained model shipped with nmt, by name: "
                             f"{', '.join(pretrained_names())} (its model card: nmt/pretrained/NAME/README.md)")
    parser.add_argument("--hf", metavar="NAME_OR_FOLDER",
                        help="a Hugging Face encoder-decoder (AutoModelForSeq2SeqLM, e.g. Helsinki-NLP/opus-mt-de-en, "
                             f"or a save_pretrained folder), {hf_use}; needs pip install 'nmt[hf]'")


def add_device_option(parser) -> None:
    """--device auto|cpu|cuda."""
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                        help="auto: the GPU when there is one")
