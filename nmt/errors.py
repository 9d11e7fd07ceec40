"""The one project exception: a user-facing problem with a one-line fix."""


class NmtError(Exception):
    """A problem with user input (config, CLI, files, checkpoints).

    Entry points catch it, print its message on one line and exit non-zero.
    Anything else is a bug and keeps its traceback.
    """
