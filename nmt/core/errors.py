"""The one project exception: a user-facing problem with a one-line fix.

It lives in the core because the core's constructors check the settings they
are given (heads dividing d_model, a known scope); nmt.base.errors re-exports it for
the rest of nmt, so every caller catches the same class.
"""


class NmtError(Exception):
    """A problem with user input (config, CLI, files, checkpoints).

    Entry points catch it, print its message on one line and exit non-zero.
    Anything else is a bug and keeps its traceback.
    """
