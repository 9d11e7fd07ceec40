"""A study's trainers end with the study: each child asks Linux for a signal
when its parent dies (prctl(PR_SET_PDEATHSIG)), so SIGKILL to `nmt_study`
(which it cannot catch, so it cannot stop its children itself) still stops
them. The child gets SIGTERM, on which nmt.train ends its update and writes
last.pt, as when the study stops it; a later `nmt_study` continues from there.

    subprocess.Popen(command, preexec_fn=die_with_parent())

The function runs between fork and exec in the child; prctl is looked up
beforehand, in the parent, so the child only makes the system call (the
study forks from worker threads). Elsewhere than Linux it is None: nothing
changes.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1        # linux/prctl.h


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


PRCTL = _prctl()


def die_with_parent(sig: int = signal.SIGTERM):
    """A preexec_fn that makes the child get `sig` when this process dies (None: no such call here)."""
    if PRCTL is None:
        return None
    parent, number = os.getpid(), int(sig)

    def arm() -> None:
        PRCTL(PR_SET_PDEATHSIG, number, 0, 0, 0)
        if os.getppid() != parent:       # the parent died before the call: the signal is owed now
            os.kill(os.getpid(), number)

    return arm
