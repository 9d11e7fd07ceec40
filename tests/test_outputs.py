"""Every output whole or the command fails: standard output on a full disk
(/dev/full) or past a file-size limit (ulimit -f), files past the limit, an
output that is one of the inputs, and float options that are not finite.
Real processes, as a user runs them."""

import argparse
import ast
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nmt.base.cli_checks import finite_float
from tests.helpers import ROOT

ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
SENTENCE = "monday the twenty first of march nineteen eighty four"
LIMIT = 64                     # bytes a process may write to one file under our `ulimit -f`


def limit_file_size():
    """In the child: `ulimit -f` of LIMIT bytes; SIGXFSZ ignored, so a write
    past it fails with EFBIG instead of killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def run(module, *args, stdout=subprocess.PIPE, input=None, limited=False):
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=ROOT, env=ENV,
                          input=input, stdout=stdout, stderr=subprocess.PIPE, timeout=300,
                          preexec_fn=limit_file_size if limited else None)


def one_error(done, starts="") -> str:
    stderr = done.stderr.decode()
    assert done.returncode == 1, (done.returncode, stderr)
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("nmt: error: ")]
    assert len(errors) == 1, stderr
    assert errors[0].startswith("nmt: error: " + starts), errors[0]
    return errors[0]


def to_dev_full(module, *args, input=None):
    with open("/dev/full", "wb") as full:
        return run(module, *args, stdout=full, input=input)


def to_limited_file(tmp_path, module, *args, input=None):
    """stdout redirected to a file that may hold LIMIT bytes: (result, bytes written)."""
    path = tmp_path / "stdout.txt"
    with open(path, "wb") as out:
        done = run(module, *args, stdout=out, input=input, limited=True)
    return done, path.read_bytes()


STDOUT_FAILED = "cannot write standard output: "
MANY_LINES = ("\n".join([SENTENCE] * 20) + "\n").encode()


# -- standard output -------------------------------------------------------------

def test_translate_stdout_full_disk(toy_checkpoint):
    done = to_dev_full("nmt.translate", "--checkpoint", toy_checkpoint, "--beam-size", 1, input=MANY_LINES)
    assert one_error(done, STDOUT_FAILED).endswith("No space left on device; the output is "
                                                   "incomplete (is the disk full?)")


def test_translate_stdout_file_size_limit(tmp_path, toy_checkpoint):
    done, written = to_limited_file(tmp_path, "nmt.translate", "--checkpoint", toy_checkpoint,
                                    "--beam-size", 1, input=MANY_LINES)
    one_error(done, STDOUT_FAILED + "File too large")
    assert len(written) <= LIMIT                      # cut off, and the exit code says so


def test_translate_output_file_size_limit_keeps_the_old_file(tmp_path, toy_checkpoint):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_bytes(MANY_LINES)
    output.write_text("old\n")
    done = run("nmt.translate", "--checkpoint", toy_checkpoint, "--beam-size", 1, "--input", source,
               "--output", output, "--overwrite", limited=True)
    one_error(done, f"cannot write {output}: File too large")
    assert output.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] and not list(tmp_path.glob(".*.tmp"))


@pytest.fixture
def sweep(tmp_path):
    """A sweep folder of two finished runs, as nmt.train writes them."""
    folder = tmp_path / "sweep"
    for number, lr in ((0, "0.001"), (1, "0.003")):
        run_dir = folder / str(number)
        (run_dir / ".hydra").mkdir(parents=True)
        (run_dir / ".hydra" / "overrides.yaml").write_text(f"- optimizer.lr={lr}\n")
        (run_dir / "summary.json").write_text(json.dumps(
            {"parameters": 1000, "bleu": 20.0 + number, "chrf": 40.0, "perplexity": 5.0,
             "tokens_per_s": 1000.0, "wall_s": 60.0}))
    return folder


def test_compare_stdout_full_disk(sweep):
    one_error(to_dev_full("nmt.compare", sweep), STDOUT_FAILED + "No space left on device")


def test_compare_stdout_file_size_limit(tmp_path, sweep):
    done, written = to_limited_file(tmp_path, "nmt.compare", sweep)
    one_error(done, STDOUT_FAILED + "File too large")


def test_compare_csv_file_size_limit(tmp_path, sweep):
    table = tmp_path / "table.csv"
    done = run("nmt.compare", sweep, "--csv", table, limited=True)
    one_error(done, f"cannot write {table}: File too large")
    assert not table.exists() and not list(tmp_path.glob(".*.tmp"))
    assert done.stdout == b""                      # nothing printed either: the command failed


def test_average_stdout_full_disk(tmp_path, toy_checkpoint):
    output = tmp_path / "avg.pt"
    done = to_dev_full("nmt.average", toy_checkpoint, toy_checkpoint, "--output", output)
    one_error(done, STDOUT_FAILED + "No space left on device")


def test_average_output_file_size_limit(tmp_path, toy_checkpoint):
    output = tmp_path / "avg.pt"
    done = run("nmt.average", toy_checkpoint, toy_checkpoint, "--output", output, limited=True)
    # was the training run's advice: '...; choose another output folder (hydra.run.dir=...)'
    assert one_error(done, f"cannot write checkpoint {output}: File too large") == (
        f"nmt: error: cannot write checkpoint {output}: File too large; free disk space or choose "
        "another --output; nothing was written")
    assert not output.exists()


# --help of every command, and Hydra's --help, --hydra-help, --cfg and --info of nmt.train: they
# were cut off at the file-size limit with exit 0, or a Hydra traceback on a full disk
HELP = [("nmt.translate", "--help"), ("nmt.average", "--help"), ("nmt.compare", "-h"),
        ("nmt.explore", "--help"), ("nmt.data.alignments", "--help"), ("nmt_study", "--help"),
        ("nmt_study.eflomal_links", "--help"), ("nmt.train", "--help"),
        ("nmt.train", "--hydra-help"), ("nmt.train", "--cfg", "job"), ("nmt.train", "--info")]


@pytest.mark.parametrize("command", HELP, ids=" ".join)
def test_help_and_config_on_a_full_disk(command):
    one_error(to_dev_full(*command), STDOUT_FAILED + "No space left on device")


@pytest.mark.parametrize("command", HELP, ids=" ".join)
def test_help_and_config_past_the_file_size_limit(tmp_path, command):
    done, written = to_limited_file(tmp_path, *command)
    one_error(done, STDOUT_FAILED + "File too large")
    assert len(written) <= LIMIT


@pytest.mark.parametrize("command", HELP, ids=" ".join)
def test_help_and_config_still_print(command):
    done = run(*command)
    assert done.returncode == 0, done.stderr.decode()
    assert len(done.stdout) > 200 and done.stderr == b""


def test_study_list_stdout_full_disk():
    one_error(to_dev_full("nmt_study", "--data", "toy", "--list"), STDOUT_FAILED + "No space left on device")


def test_alignments_file_size_limit(tmp_path):
    output = tmp_path / "toy.align"
    done = run("nmt.data.alignments", "toy", output, limited=True)
    one_error(done, f"cannot write {output}: File too large")
    assert not output.exists()


# -- an output that is one of the inputs ---------------------------------------------

def spellings(tmp_path, target: Path) -> dict:
    """Other names of one file: relative with ./, through a symlink, a hard link."""
    (tmp_path / "link").symlink_to(target)
    os.link(target, tmp_path / "hard")
    return {"same": target, "dotted": Path(os.path.relpath(target.parent, ROOT)) / "." / target.name,
            "symlink": tmp_path / "link", "hardlink": tmp_path / "hard"}


@pytest.mark.parametrize("name", ["same", "dotted", "symlink", "hardlink"])
def test_translate_output_is_the_input(tmp_path, toy_checkpoint, name):
    source = tmp_path / "in.txt"
    source.write_bytes(MANY_LINES)
    output = spellings(tmp_path, source)[name]
    done = run("nmt.translate", "--checkpoint", toy_checkpoint, "--input", source, "--output", output)
    line = one_error(done, f"--output {output} is the same file as --input {source}; ")
    assert line.endswith("writing it would destroy that input; choose another file")
    assert source.read_bytes() == MANY_LINES


@pytest.mark.parametrize("name", ["same", "symlink", "hardlink"])
def test_average_output_is_an_input(tmp_path, toy_checkpoint, name):
    """nmt.average --output over one of its checkpoints, under any of its names."""
    copy = tmp_path / "model.pt"
    copy.write_bytes(toy_checkpoint.read_bytes())
    before = copy.read_bytes()
    output = spellings(tmp_path, copy)[name]
    done = run("nmt.average", copy, toy_checkpoint, "--output", output, "--overwrite")
    line = one_error(done, f"--output {output} is the same file as --checkpoint {copy}; ")
    assert line.endswith("choose another file")
    assert copy.read_bytes() == before


@pytest.mark.parametrize("option", ["--reference", "--checkpoint", "--attention-html"])
def test_translate_output_is_another_input(tmp_path, toy_checkpoint, option):
    """--output over the reference or the checkpoint, --attention-html over the input."""
    copy = tmp_path / "model.pt"
    copy.write_bytes(toy_checkpoint.read_bytes())
    source, reference = tmp_path / "in.txt", tmp_path / "ref.txt"
    source.write_bytes(MANY_LINES)
    reference.write_bytes(MANY_LINES)
    before = {p: p.read_bytes() for p in (copy, source, reference)}
    args = ["--checkpoint", copy, "--input", source, "--reference", reference]
    if option == "--attention-html":
        args += ["--attention-html", tmp_path / "link"]
        (tmp_path / "link").symlink_to(source)
    else:
        args += ["--output", reference if option == "--reference" else copy]
    done = run("nmt.translate", *args)
    one_error(done)
    assert "is the same file as" in done.stderr.decode()
    assert {p: p.read_bytes() for p in before} == before


def test_compare_csv_over_a_run_file(sweep):
    summary = sweep / "0" / "summary.json"
    before = summary.read_bytes()
    one_error(run("nmt.compare", sweep, "--csv", summary), f"--csv {summary} is the same file as run file")
    assert summary.read_bytes() == before


def test_compare_damaged_summary(sweep):
    summary = sweep / "1" / "summary.json"
    summary.write_text('{"bleu": 2')
    one_error(run("nmt.compare", sweep), f"{summary} is damaged (not valid JSON); ")
    summary.write_text('{"bleu": "high"}')
    one_error(run("nmt.compare", sweep), f"{summary} is not what nmt.train writes; ")


# -- float options: finite or refused --------------------------------------------------

def python_files():
    return sorted((ROOT / "nmt").rglob("*.py")) + sorted((ROOT / "scripts").rglob("*.py"))


def test_no_command_line_takes_a_plain_float():
    """`type=float` lets nan and inf through: every float option of every CLI
    (nmt's and scripts/) uses nmt.base.cli_checks.finite_float. A new option is
    covered by this test without anyone remembering to."""
    plain = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "type" and \
                    isinstance(node.value, ast.Name) and node.value.id == "float":
                plain.append(f"{path.relative_to(ROOT)}:{node.value.lineno}")
    assert not plain, plain


def test_every_nmt_command_line_checks_its_help():
    """argparse.ArgumentParser prints --help unchecked (cut off at a file-size
    limit with exit 0): every CLI under nmt/ builds nmt.base.cli_checks.ArgumentParser."""
    plain = []
    for path in sorted((ROOT / "nmt").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "ArgumentParser" and \
                    isinstance(node.value, ast.Name) and node.value.id == "argparse":
                plain.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    plain = [where for where in plain if not where.startswith("nmt/base/cli_checks.py")]
    assert not plain, plain


class _Captured(Exception):
    pass


def parser_of(parse, argv):
    """The ArgumentParser a CLI builds, caught as it parses."""
    original = argparse.ArgumentParser.parse_args

    def capture(self, *args, **kwargs):
        raise _Captured(self)

    argparse.ArgumentParser.parse_args = capture
    try:
        parse(argv)
    except _Captured as captured:
        return captured.args[0]
    finally:
        argparse.ArgumentParser.parse_args = original
    raise AssertionError(f"{parse} built no parser")


def cli_parsers():
    from nmt_study.__main__ import parse_args as study
    from nmt.commands.translate import parse_args as translate

    from scripts.benchmarks import bench_train

    return {"nmt.translate": (translate, ["--checkpoint", "x.pt"]), "nmt_study": (study, []),
            "scripts.benchmarks.bench_train": (bench_train.parse_args, [])}


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999", "NaN"])
def test_float_options_refuse_what_is_not_finite(value, capsys):
    checked = 0
    for cli, (parse, needed) in cli_parsers().items():
        parser = parser_of(parse, needed)
        for action in parser._actions:
            if action.type is finite_float:
                with pytest.raises(SystemExit) as stop:
                    parser.parse_args([*needed, f"{action.option_strings[0]}={value}"])
                assert stop.value.code == 2
                assert "is not a finite number" in capsys.readouterr().err, (cli, action.dest)
                checked += 1
    assert checked >= 7        # translate 3, study 3, bench_train 1 today


@pytest.mark.parametrize("key", ["budget_minutes", "target_bleu"])
def test_study_float_keys_refuse_what_is_not_finite(key, capsys):
    from nmt_study.__main__ import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--data", "toy", f"study.{key}=nan"])
    assert stop.value.code == 2
    assert f"study.{key}='nan': not a finite number" in capsys.readouterr().err


def test_length_penalty_nan_is_one_usage_line(toy_checkpoint):
    done = run("nmt.translate", "--checkpoint", toy_checkpoint, "--length-penalty", "nan", input=b"x\n")
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().strip() == (
        "nmt: error: argument --length-penalty: nan is not a finite number "
        "(python -m nmt.translate --help lists the options)")


# -- the atomic writer under a file-size limit ----------------------------------------

@pytest.mark.parametrize("size", [LIMIT + 1, 100, 10_000, 1_000_000])
def test_atomic_write_past_the_limit_fails_and_leaves_nothing(tmp_path, size):
    """write(2) writes the first LIMIT bytes and says so; the next write
    fails with EFBIG, and no cut-off file is renamed into place. (A guard: the
    buffered file the writer used before passed this too; sys.stdout's did
    not, see test_translate_stdout_file_size_limit.)"""
    target = tmp_path / "out.bin"
    code = ("import errno, sys\nfrom nmt.base.atomic import atomic_write\n"
            f"try:\n    atomic_write({str(target)!r}, b'x' * {size})\n"
            "except OSError as error:\n    sys.exit(error.errno)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True,
                          preexec_fn=limit_file_size, timeout=60)
    assert done.returncode == 27, done.stderr.decode()          # EFBIG
    assert list(tmp_path.iterdir()) == []


# -- closed standard streams, and outputs that are links or devices --------------------

def test_translate_with_stdout_closed(toy_checkpoint):
    done = subprocess.run([sys.executable, "-m", "nmt.translate", "--checkpoint", str(toy_checkpoint),
                           "--beam-size", "1"], cwd=ROOT, env=ENV, input=MANY_LINES, stdout=None,
                          stderr=subprocess.PIPE, timeout=300, preexec_fn=lambda: os.close(1))
    one_error(done, "standard output is closed (>&-), so the output cannot be written; ")


def test_translate_with_stdin_closed(toy_checkpoint):
    done = subprocess.run([sys.executable, "-m", "nmt.translate", "--checkpoint", str(toy_checkpoint)],
                          cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300,
                          preexec_fn=lambda: os.close(0))
    one_error(done, "standard input is closed (<&-); give --input FILE or pipe the sentences in")


def test_atomic_write_through_a_symlink_replaces_the_file_and_keeps_the_link(tmp_path):
    from nmt.base.atomic import atomic_write

    real, link = tmp_path / "real.txt", tmp_path / "link.txt"
    real.write_text("old\n")
    link.symlink_to(real)
    atomic_write(link, b"new\n")
    assert link.is_symlink() and real.read_text() == "new\n"


def test_atomic_write_into_a_device_writes_it(tmp_path):
    """--output /dev/stdout (as root, /dev is writable: a rename would have
    replaced the device node with a regular file). Written through
    /proc/self/fd/1, the link /dev/stdout stands for, so that a machine whose
    /dev/stdout an older build had already replaced still tests the writer."""
    done = subprocess.run([sys.executable, "-c", "from nmt.base.atomic import atomic_write\n"
                           "atomic_write('/proc/self/fd/1', b'through the device\\n')"],
                          cwd=ROOT, env=ENV, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"through the device\n"


def test_atomic_write_into_a_fifo_writes_it(tmp_path):
    from nmt.base.atomic import atomic_write

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    atomic_write(fifo, b"through the pipe\n")
    assert reader.communicate(timeout=30)[0] == b"through the pipe\n"
    assert not fifo.is_file() and list(tmp_path.iterdir()) == [fifo]   # still a FIFO, nothing beside it


# -- nmt.train's log on standard output ----------------------------------------------------

TRAIN = ("experiment=quickstart", "trainer.max_steps=4", "trainer.val_every=2", "trainer.val_max_sentences=4",
         "trainer.heatmap_sentences=0", "trainer.log_every=1")


def test_train_log_on_a_full_stdout_is_one_line_and_the_run_still_finishes(tmp_path, cache_dir):
    """The log on the terminal is a view (train.log has all of it): the run
    goes on, and ends with exit 1 and one line instead of a traceback a record.
    (`ulimit -f` limits train.log and the checkpoints as much as stdout.)"""
    run_dir = tmp_path / "run"
    done = to_dev_full("nmt.train", *TRAIN, f"cache_dir={cache_dir}", f"hydra.run.dir={run_dir}")
    stderr = done.stderr.decode()
    assert "Logging error" not in stderr
    line = one_error(done, STDOUT_FAILED)
    assert line.endswith("the log there is incomplete (is the disk full?); train.log in the run "
                         "folder has all of it")
    assert (run_dir / "checkpoints" / "last.pt").exists() and (run_dir / "summary.json").exists()
