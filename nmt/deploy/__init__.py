"""Serving a trained model outside nmt's own decoder: CTranslate2 export and engine.

    convert.py   which configurations CTranslate2 can represent; the model as a
                 ctranslate2.specs.TransformerSpec through a Converter subclass
    layout.py    what an exported folder holds beside CTranslate2's files
    engine.py    Translator's translate() over an exported folder

CTranslate2 is an optional dependency (`pip install -e ".[export]"`):
`require_ctranslate2()` says so in one line where it is missing.
"""

from nmt.base.errors import NmtError


def require_ctranslate2():
    """The ctranslate2 module, or NmtError saying how to install it."""
    try:
        import ctranslate2
    except ImportError:
        raise NmtError("CTranslate2 is not installed; pip install -e \".[export]\" (or pip install "
                       "\"ctranslate2>=4.5,<5\")") from None
    return ctranslate2
