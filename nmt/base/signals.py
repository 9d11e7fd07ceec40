"""Ctrl-C and SIGTERM at any moment: one line on stderr, exit 128 + N.

A command line entry (`python -m nmt.train`, `python -m nmt.translate`)
calls `install()` as its first statement, before the seconds of importing
torch and Hydra. From then on SIGINT or SIGTERM writes one line on stderr,
`nmt: stopped by SIGINT <context>`, removes the temporary file of any
atomic write in progress (so `--output` and checkpoints stay whole: the old
file or none) and ends the process at once with 128 + N: 130 for SIGINT,
143 for SIGTERM, what a shell shows for a process a signal ended.

Before that first statement Python is starting (the interpreter, `site` and
the `.pth` files of site-packages, the command's module): no Python code of
ours can catch a signal there, and Python ends the process silently, with
"Fatal Python error: init_import_site" or with a KeyboardInterrupt
traceback. scripts/benchmarks/ctrl_c_window.py measures how long that lasts (README,
"When things go wrong": about 0.05 s on a busy 2-core machine).

It ends the process rather than raising an exception on purpose: a signal
lands between any two bytecodes, and an exception raised inside, say, numpy's
import is caught by library code that then leaves the module half built (a
traceback from an unrelated import follows; seen when testing many delays).

The training loop swaps in its own handler, which only notes the signal: the
loop ends after the update in progress, writes `last.pt` and reports with
`report()`; `set_context()` then says what the line says if a signal comes
later.

Python's own shutdown (after the program's last line and its atexit calls)
gives every Python-level handler back to the system's default, which ends the
process with no line and a negative status; a signal in the tenths of a second
that torch's teardown takes would do exactly that. The last atexit call (the
first one registered, by `install()`) therefore ignores the stop signals: the
work is done and its files are whole, so the process ends with its own status.
Only the standard library here: this module loads before anything heavy.
"""

import atexit
import os
import signal
import sys

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

temporary_files: set[str] = set()   # atomic writes in progress (nmt.base.atomic adds and removes)
_context = ""                       # what the line says after "stopped by SIGINT"
_pending_error: str | None = None   # an error on its way to its one line (set_pending_error)
_reported = False                   # the line is written once per process
_shutdown_registered = False        # _ignore_stop_signals is an atexit call


def exit_code(signum: int) -> int:
    """The status a shell shows for a process a signal ended: 130, 143."""
    return 128 + int(signum)


def name(signum: int) -> str:
    return signal.Signals(signum).name


def install(context: str) -> None:
    """Stop signals from now on end the program: one line, exit 128 + N."""
    global _shutdown_registered
    set_context(context)
    set_pending_error(None)             # a command starts with no error on its way out
    for signum in STOP_SIGNALS:
        signal.signal(signum, _exit_now)
    if not _shutdown_registered:        # first registered, so the last atexit call to run
        atexit.register(_ignore_stop_signals)
        _shutdown_registered = True


def _ignore_stop_signals() -> None:
    """From here on the interpreter only tears itself down: a stop signal
    changes nothing, and SIG_IGN is the one setting Python's shutdown keeps."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def set_context(context: str) -> None:
    """What the line says about the program's state, e.g. "before training started"."""
    global _context
    _context = context


def set_pending_error(message: str | None) -> None:
    """An error the program is on its way to report (cleaning up first): a stop
    signal in between ends the process with that error's line, `nmt: error:
    MESSAGE`, and status 1, not with "stopped by ...", which would hide its cause
    (a lost rank's peer, whose launcher stops the survivors, sees exactly this)."""
    global _pending_error
    _pending_error = message


def note_leaving_error(kinds) -> None:
    """In a `finally:` block: an exception of `kinds` on its way out is the pending error."""
    leaving = sys.exc_info()[1]
    if isinstance(leaving, kinds):
        set_pending_error(str(leaving))


def error_reported() -> None:
    """The program wrote its error line: a later signal writes no other."""
    global _reported, _pending_error
    _reported, _pending_error = True, None


def next_job() -> None:
    """A sweep goes on after a failed job's line: the next job's signal gets its own."""
    global _reported, _pending_error
    _reported, _pending_error = False, None


def describe(signum: int, context: str | None = None) -> str:
    """`stopped by SIGINT before training started`: the line without "nmt: "."""
    detail = _context if context is None else context
    if detail and detail[0] not in ";,":
        detail = " " + detail
    return f"stopped by {name(signum)}{detail}"


def report(signum: int, context: str | None = None, raw: bool = False) -> None:
    """Write `nmt: stopped by NAME context` on stderr, once per process.

    `raw` writes straight to file descriptor 2: a signal handler may run while
    the main code is inside sys.stderr's own write."""
    global _reported
    if _reported:
        return
    _reported = True
    text = "nmt: " + describe(signum, context)
    if raw:
        try:
            os.write(2, (text + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
    else:
        print(text, file=sys.stderr, flush=True)


def _exit_now(signum, frame):
    pending = _pending_error
    if pending is not None and not _reported:
        error_reported()
        try:
            os.write(2, f"nmt: error: {pending}\n".encode("utf-8", "replace"))
        except OSError:
            pass
    else:
        report(signum, raw=True)
    for path in list(temporary_files):
        try:
            os.unlink(path)
        except OSError:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:           # closed, full, or inside its own write when the signal came
            pass
    os._exit(1 if pending is not None else exit_code(signum))
