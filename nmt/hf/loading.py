"""Open a Hugging Face encoder-decoder model and its tokenizer, or say in one line why not."""

import logging
import warnings
from pathlib import Path

from nmt.errors import NmtError


def _transformers():
    """The transformers package, quiet (no progress bars, retries or advice
    on stderr: a problem is one NmtError line), or NmtError saying how to install it."""
    try:
        import transformers
    except ImportError:
        raise NmtError("--hf needs the transformers package: pip install 'nmt[hf]' "
                       "(or pip install transformers)") from None
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
    return transformers


def load_seq2seq(name: str, device):
    """(model, tokenizer) of the AutoModelForSeq2SeqLM `name`: a folder written
    by save_pretrained, or a hub name (which needs the network); in eval mode
    on `device`. NmtError for a folder that is not a model, a model that is
    not an encoder-decoder, a hub name that cannot be fetched."""
    transformers = _transformers()
    folder = Path(name)
    if folder.exists() and not (folder.is_dir() and (folder / "config.json").is_file()):
        raise NmtError(f"--hf {name} is not a Hugging Face model folder (no config.json in it); give a folder "
                       "written by save_pretrained, or a hub name such as Helsinki-NLP/opus-mt-de-en")
    try:
        config = transformers.AutoConfig.from_pretrained(name)
    except (OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise NmtError(f"--hf {name}: cannot open it as a Hugging Face model ({first}); a hub name needs the "
                       "network, a folder needs config.json") from None
    if not getattr(config, "is_encoder_decoder", False):
        raise NmtError(f"--hf {name} is a {config.model_type} model, not an encoder-decoder: it has no "
                       "cross-attention to show; give a translation model such as Marian (opus-mt-*)")
    try:
        model = transformers.AutoModelForSeq2SeqLM.from_pretrained(name, attn_implementation="eager")
        tokenizer = transformers.AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError, KeyError) as error:
        first = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise NmtError(f"--hf {name}: cannot load its model or tokenizer ({first})") from None
    return model.to(device).eval(), tokenizer
