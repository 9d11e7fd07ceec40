"""The one project exception: a user-facing problem with a one-line fix."""


class NmtError(Exception):
    """A problem with user input (config, CLI, files, checkpoints).

    Entry points catch it, print its message on one line and exit non-zero.
    Anything else is a bug and keeps its traceback.
    """


class ResumeRefusal(NmtError):
    """A resume refused because its checkpoint was trained on other data or with
    another model. `detail` is what differs, checkpoint against config ("it was
    trained on other data ... (checkpoint: ...; this config: ...)"); `forcible`
    says whether trainer.resume_force=true lets it through (other data: yes;
    another model: no, its weights do not fit)."""

    def __init__(self, message: str, detail: str, forcible: bool):
        super().__init__(message)
        self.detail, self.forcible = detail, forcible
