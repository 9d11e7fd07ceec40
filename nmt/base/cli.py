"""What every command line runs through: stop signals, errors, standard output.

A command module starts with

    if __name__ == "__main__":
        from nmt.base.cli import run_command
        run_command("nmt.translate", "; an --output file is written whole or not at all")

and defines `main(argv=None) -> int` decorated with `@command`. `run_command`
installs the stop signals (one line and exit 128 + N, `nmt.base.signals`) before
the command's module and its heavy imports load, runs `main`, and flushes
standard output checked (`nmt.base.cli_checks.close_stdout`), so a full disk is
one line and exit 1. `@command` turns an `NmtError` into one
`nmt: error: ...` line and exit code 1, also when a test calls `main([...])`.

Only the standard library and light project modules are imported here: this
module loads before torch.
"""

import functools
import importlib
import resource
import shlex
import signal
import sys
from pathlib import Path

from nmt.base import signals
from nmt.base.cli_checks import close_stdout, exit_code_of, hydra_prints, print_error_line, run_printing_checked
from nmt.base.errors import NmtError


def print_error(error) -> None:
    """The one line a user error prints (a stop signal after it writes no other)."""
    print_error_line(str(error))


def check_file_size_limit() -> None:
    """A file-size limit (`ulimit -f`) of 0 bytes is one line before anything loads:
    Python's tempfile (torch's import) cannot find a directory it may write one
    byte to. Any larger limit lets the command start; each write past it is its
    own one-line error ("File too large") where it happens."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == 0:
        raise NmtError(
            f"the file-size limit (ulimit -f) is {soft} bytes: nmt writes temporary files, logs and "
            "outputs; raise it (ulimit -f unlimited) and run the command again"
        )


def runnable(module: str, script: str) -> str:
    """The command that runs `module` from any shell, no environment activated: the
    console script `script` installed beside this interpreter, by its full path
    (`/venv/bin/nmt-translate`), else this interpreter by its full path with -m."""
    installed = Path(sys.executable).parent / script
    if installed.is_file():
        return shlex.quote(str(installed))
    return f"{shlex.quote(sys.executable)} -m {module}"


def command(main):
    """`main(argv=None) -> int`: an NmtError is one line and exit code 1; Ctrl-C
    without `run_command`'s handlers (e.g. in a test) is one line and 130."""

    @functools.wraps(main)
    def run(argv=None) -> int:
        try:
            return main(argv)
        except NmtError as error:
            print_error(error)
            return 1
        except KeyboardInterrupt:
            signals.report(signal.SIGINT)
            return signals.exit_code(signal.SIGINT)

    return run


def run_command(module: str, context: str, hydra: bool = False, entry: str = "main") -> None:
    """Run `module.<entry>` (default `main`) as the process's command and exit with its code.

    `context` completes the line a stop signal prints (`nmt: stopped by SIGINT
    <context>`). `hydra`: `main` is a Hydra entry; its printing options (--help,
    --cfg) are written checked as well."""
    signals.install(context)
    try:
        check_file_size_limit()
    except NmtError as error:
        print_error(error)
        sys.exit(1)
    main = getattr(importlib.import_module(module), entry)
    if hydra:
        code = run_printing_checked(main) if hydra_prints(sys.argv[1:]) else exit_code_of(main)
    else:
        code = main()
    sys.exit(close_stdout(code))
