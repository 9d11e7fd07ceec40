"""The one project exception: a user-facing problem with a one-line fix.

Defined in nmt.core.errors (the reference core imports nothing else of nmt);
every other module imports it from here, with the refinements the rest of nmt
raises.
"""

from nmt.core.errors import NmtError

__all__ = ["NmtError", "ResumeRefusal", "with_article"]


class ResumeRefusal(NmtError):
    """A resume refused because its checkpoint was trained on other data or with
    another model. `detail` is what differs, checkpoint against config ("it was
    trained on other data ... (checkpoint: ...; this config: ...)"); `forcible`
    says whether trainer.resume_force=true lets it through (other data: yes;
    another model: no, its weights do not fit)."""

    def __init__(self, message: str, detail: str, forcible: bool):
        super().__init__(message)
        self.detail, self.forcible = detail, forcible


SPELLED_OUT = ("nmt",)      # names said letter by letter, "en-em-tee": their sound takes "an"


def with_article(word: str) -> str:
    """'an int', 'a float', 'an albert', 'an nmt.decoding.beam_tree.BeamRecorder': a word
    of a refusal (a type's, a model's or a class's name) with its indefinite article,
    chosen by its first letter, or by the first sound of a name in SPELLED_OUT."""
    vowel = word[:1].lower() in "aeiou" or word.lower().startswith(SPELLED_OUT)
    return f"{'an' if vowel else 'a'} {word}"
