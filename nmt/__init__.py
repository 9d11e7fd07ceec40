"""nmt: neural machine translation for learning, comparing and seeing attention."""

__version__ = "0.1.0"


def __getattr__(name):
    # Lazy so that `import nmt` stays light for the data tools and tests.
    if name == "Translator":
        from nmt.translator import Translator

        return Translator
    raise AttributeError(name)
