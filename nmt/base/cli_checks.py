"""What every command line shares: finite numbers, outputs written whole or
refused, and an `--output` that is not one of its inputs.

Standard output is an output like any file: a full disk (`> /dev/full`), a
file-size limit (`ulimit -f`) or any other failed write there is one
`nmt: error:` line and exit 1, never a cut-off result with exit 0. A reader
that stops reading (`| head`) is not an error: the rest is dropped quietly.
"""

import argparse
import errno
import io
import logging
import math
import os
import sys
import types
from pathlib import Path

from nmt.base import signals
from nmt.base.atomic import write_all
from nmt.base.errors import NmtError
from nmt.base.path_names import PATH_DESTS, check_name_length, printable


def finite_float(text: str) -> float:
    """argparse type: a real number; nan, inf and -inf are refused."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not 1 or more")
    return value


MAX_DPI = 1200        # print quality; a picture's memory grows with the square (100000 dpi: MemoryError)


def picture_dpi(text: str) -> int:
    """argparse type: a resolution from 1 to MAX_DPI."""
    value = positive_int(text)
    if value > MAX_DPI:
        raise argparse.ArgumentTypeError(f"{text} is over {MAX_DPI}; the picture's memory grows with its square")
    return value


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """--help shows each option's default, as "(default: 5)"; not where there
    is none to show (None, False, an empty string) or the help already says it."""

    def _get_help_string(self, action):
        text = action.help or ""
        nothing = action.default is None or action.default is False or action.default in ("", argparse.SUPPRESS)
        if nothing or "default" in text:
            return text
        return super()._get_help_string(action)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, its --help written like any output: checked, so a
    full disk or a file-size limit is one line and exit 1, not a help cut off
    with exit 0; the help shows the defaults (DefaultsHelpFormatter)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        """As argparse's; then every option that names a file is checked for a
        name the file system can hold (nmt.base.path_names), one line and exit 2."""
        parsed, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            if action.dest in PATH_DESTS or action.type is Path:
                value = getattr(parsed, action.dest, None)
                for path in value if isinstance(value, (list, tuple)) else [value]:
                    if isinstance(path, (str, Path)) and str(path):
                        try:
                            check_name_length(path, "/".join(action.option_strings) or action.dest)
                        except NmtError as error:
                            self.error(str(error))
        return parsed, extras

    def error(self, message):
        """A usage mistake (a missing or malformed option): one line and exit 2."""
        print_error_line(f"{message} ({self.prog} --help lists the options)")
        sys.exit(2)

    def print_help(self, file=None):
        if file is not None:
            return super().print_help(file)
        try:
            write_stdout(self.format_help())
        except NmtError as error:
            print_error_line(str(error))
            sys.exit(1)



def print_error_line(text: str) -> None:
    """`nmt: error: TEXT` on stderr, a failed command's one line; a stop signal
    after it writes no other (nmt.base.signals)."""
    print(f"nmt: error: {printable(text)}", file=sys.stderr, flush=True)
    signals.error_reported()


def _drop_stdout() -> None:
    """Point file descriptor 1 at /dev/null: what Python still holds for
    stdout then goes nowhere instead of failing again at exit (exit 120)."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


_stdout_failure: str | None = None      # a failed write that did not stop the program


def write_stdout(data: str | bytes, keep_going: bool = False) -> None:
    """Write and flush `data` on standard output; a failed write is NmtError.

    `keep_going`: for progress lines of a long job whose real outputs are
    files: the job goes on, and `close_stdout` makes the exit code 1."""
    global _stdout_failure
    if sys.stdout is None:               # started with `>&-`
        if data:
            raise NmtError("standard output is closed (>&-), so the output cannot be written; "
                           "redirect it to a file")
        return
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):   # a stream in memory (pytest, a notebook)
        sys.stdout.write(data.decode("utf-8") if isinstance(data, bytes) else data)
        sys.stdout.flush()
        return
    try:
        sys.stdout.flush()               # what print() and logging left, first
        write_all(fd, printable(data).encode("utf-8") if isinstance(data, str) else data)
    except BrokenPipeError:              # the reader (e.g. `head`) stopped reading: not our error
        _drop_stdout()
    except OSError as error:
        _drop_stdout()
        message = (f"cannot write standard output: {error.strerror or error}; the output "
                   "is incomplete (is the disk full?)")
        if not keep_going:
            raise NmtError(message) from None
        _stdout_failure = _stdout_failure or message


# Hydra's options that print (help, the config, --info) instead of running the job
HYDRA_PRINTS = ("--help", "-h", "--hydra-help", "--cfg", "-c", "--info", "-i", "--shell-completion",
                "-sc", "--version")


def hydra_prints(argv) -> bool:
    """Whether a Hydra command line (argv without the program) only prints."""
    return any(arg.split("=", 1)[0] in HYDRA_PRINTS for arg in argv)


def exit_code_of(main) -> int:
    """Run `main` and return the exit code it asked for with sys.exit (0 when
    it returned); a sys.exit with a message string still exits with it."""
    try:
        main()
    except SystemExit as stop:
        if isinstance(stop.code, str):
            raise
        return stop.code or 0
    return 0


def run_printing_checked(main) -> int:
    """Run `main` (a Hydra entry that only prints, see `hydra_prints`) with its
    standard output kept in memory, then write it checked: a failed write is
    one line and exit 1 (Hydra's own print raises a traceback on a full disk
    and stops short with exit 0 past a file-size limit). Returns the exit code."""
    real, sys.stdout = sys.stdout, io.StringIO()
    try:
        code = exit_code_of(main)
    finally:
        printed, sys.stdout = sys.stdout.getvalue(), real
    try:
        write_stdout(printed)
    except NmtError as error:
        print_error_line(str(error))
        return code or 1
    return code


def print_checked(text: str) -> int:
    """Write `text` on standard output, checked: 0, or 1 after the error line."""
    try:
        write_stdout(text)
    except NmtError as error:
        print_error_line(str(error))
        return 1
    return 0


def close_stdout(code: int) -> int:
    """The exit code after a last flush of standard output, done here rather
    than by Python at exit: a failure is one line and exit 1."""
    try:
        write_stdout("")
        if _stdout_failure is not None:
            raise NmtError(_stdout_failure)
    except NmtError as error:
        print_error_line(str(error))
        return code or 1
    return code


def guard_stdout_logging() -> None:
    """Log handlers that write to standard output (Hydra's console handler):
    a failed write there is noted and stdout dropped, so the job goes on and
    `close_stdout` ends it with one line and exit 1, instead of logging's
    "--- Logging error ---" traceback for every record."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout:
            handler.handleError = types.MethodType(_log_write_failed, handler)


def _log_write_failed(handler, record) -> None:
    global _stdout_failure
    error = sys.exc_info()[1]
    if not isinstance(error, OSError):
        logging.StreamHandler.handleError(handler, record)     # a bug: logging's own report
        return
    _drop_stdout()
    if not isinstance(error, BrokenPipeError):
        _stdout_failure = _stdout_failure or (
            f"cannot write standard output: {error.strerror or error}; the log there is "
            "incomplete (is the disk full?); train.log in the run folder has all of it")


def refuse_link_loop(path, option: str) -> None:
    """Refuse a path that is (or goes through) a symbolic link loop, in one line,
    before anything resolves it (Path.resolve raises, os.stat says ELOOP)."""
    try:
        Path(path).resolve()
        os.stat(path)
    except FileNotFoundError:
        return                          # a new file: nothing to follow
    except (RuntimeError, OSError) as error:
        if isinstance(error, RuntimeError) or error.errno == errno.ELOOP:
            raise NmtError(f"{option} {path} is a symbolic link loop (it leads back to itself); remove the "
                           "link or choose another path") from None


def check_output(path, option: str = "--output") -> None:
    """Refuse an output file that cannot be written before any work is done:
    a name too long, a link loop, a folder, or a file in a folder that does not exist."""
    check_name_length(path, option)
    refuse_link_loop(path, option)
    target = Path(path)
    if target.is_dir():
        raise NmtError(f"{option} {path} is a directory; give a file name")
    if not target.parent.is_dir():
        raise NmtError(f"{option} {path}: folder {target.parent} does not exist; create it first")


def same_file(a, b) -> bool:
    """Whether two paths name one file (also through links or other spellings)."""
    try:
        return os.path.samefile(a, b)
    except OSError:                      # one does not exist (yet): compare the resolved paths
        return Path(a).resolve() == Path(b).resolve()


def check_not_input(option: str, output, inputs) -> None:
    """Refuse an output that is one of the inputs, before anything is written.
    `inputs`: (option, path) pairs, path None when the option was not given."""
    for name, path in inputs:
        if path is not None and same_file(output, path):
            raise NmtError(f"{option} {output} is the same file as {name} {path}; writing it "
                           "would destroy that input; choose another file")


def _checkpoint_order(name: str):
    """best.pt, last.pt, averaged.pt ... by name, then step_N.pt by N."""
    stem = name.removesuffix(".pt")
    if stem.startswith("step_") and stem[5:].isdigit():
        return (1, int(stem[5:]), name)
    return (0, 0, name)


def _folder_error(folder: Path) -> NmtError:
    inner = folder / "checkpoints" if (folder / "checkpoints").is_dir() else folder
    names = sorted((p.name for p in inner.glob("*.pt")), key=_checkpoint_order)
    if not names:
        return NmtError(f"checkpoint {folder} is a folder and holds no .pt file; give a checkpoint "
                        "file written by nmt.train (RUN/checkpoints/best.pt)")
    shown = names if len(names) <= 12 else names[:11] + [f"... ({len(names) - 11} more)"]
    run = " (a run folder)" if inner != folder else ""
    return NmtError(f"checkpoint {folder} is a folder{run}; give one of its checkpoints: {', '.join(shown)} "
                    f"in {inner}, for example {inner / names[0]}")


def check_checkpoint_exists(path, missing: str | None = None, folder_ok: bool = False) -> None:
    """A checkpoint path that is not there: NmtError `missing` (default
    "checkpoint PATH does not exist") naming the checkpoints its folder does
    hold, so a typo or a wrong step is fixed from the line. A folder (unless
    `folder_ok`): NmtError naming the .pt files in it, or in its checkpoints/
    (a run folder), best.pt first. Needs no torch."""
    target = Path(path)
    if target.is_dir() and not folder_ok:
        raise _folder_error(target)
    if target.exists():
        return
    missing = missing or f"checkpoint {path} does not exist"
    folder = target.parent
    if not folder.is_dir():
        raise NmtError(f"{missing}; nor does its folder {folder}")
    names = sorted((p.name for p in folder.glob("*.pt")), key=_checkpoint_order)
    if not names:
        raise NmtError(f"{missing}; {folder} holds no .pt file")
    shown = names if len(names) <= 12 else names[:11] + [f"... ({len(names) - 11} more)"]
    raise NmtError(f"{missing}; {folder} holds {', '.join(shown)}")
