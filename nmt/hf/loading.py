"""Open a Hugging Face encoder-decoder model and its tokenizer, or say in one line why not."""

import logging
import os
import pickle
import warnings
from pathlib import Path

from nmt.base.errors import NmtError, with_article
from nmt.hf.folder_checks import WEIGHTS, check_folder


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


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:160]}" if text else type(error).__name__


def load_seq2seq(name: str, device):
    """(model, tokenizer) of the AutoModelForSeq2SeqLM `name`: a folder written
    by save_pretrained, or a hub name (which needs the network); in eval mode
    on `device`. NmtError for a folder that is not a model, a model that is
    not an encoder-decoder, a hub name that cannot be fetched."""
    transformers = _transformers()
    folder = Path(name)
    if folder.exists() and not (folder.is_dir() and os.path.lexists(folder / "config.json")):
        raise NmtError(f"--hf {name} is not a Hugging Face model folder (no config.json in it); give a folder "
                       "written by save_pretrained, or a hub name such as Helsinki-NLP/opus-mt-de-en")
    local = folder.is_dir()
    if local:
        check_folder(name, folder)          # every member, before transformers opens one
    try:
        config = transformers.AutoConfig.from_pretrained(name)
    except (OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise NmtError(f"--hf {name}: cannot open it as a Hugging Face model ({first}); a hub name needs the "
                       "network, a folder needs config.json") from None
    if not getattr(config, "is_encoder_decoder", False):
        kind = with_article(str(config.model_type))
        raise NmtError(f"--hf {name} is {kind} model, not an encoder-decoder: it has no "
                       "cross-attention to show; give a translation model such as Marian (opus-mt-*)")
    weights = next((w for w in WEIGHTS if (folder / w).is_file()), "weights") if local else "weights"
    try:
        with warnings.catch_warnings():         # torch's pickle-protocol warning: the line below says it all
            warnings.simplefilter("ignore")
            model = transformers.AutoModelForSeq2SeqLM.from_pretrained(name, attn_implementation="eager")
    except Exception as error:  # noqa: BLE001 - torch's, safetensors' and transformers' errors: one line
        if isinstance(error, pickle.UnpicklingError):
            raise NmtError(f"--hf {name}: {folder / weights} was refused: it is a pickle holding objects that "
                           "could run code, not only tensors (nothing of it ran); give a folder with "
                           "model.safetensors") from None
        raise NmtError(f"--hf {name}: cannot load its model from {folder / weights if local else name} "
                       f"({_first_line(error)}); give a folder written by save_pretrained") from None
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(name)
    except Exception as error:  # noqa: BLE001 - sentencepiece's, json's and transformers' errors: one line
        raise NmtError(f"--hf {name}: cannot load its tokenizer (tokenizer_config.json, vocab.json, "
                       f"source.spm, target.spm) ({_first_line(error)}); give a folder written by "
                       "save_pretrained") from None
    return model.to(device).eval(), tokenizer
