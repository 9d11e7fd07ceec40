"""The attention study's confirmation runs on a lent GPU, in one call of the device tool.

    python -m scripts.benchmarks.gpu_study --commit HASH --out $OUT --minutes 9         # on the GPU machine
    tar xzf OUT/records.tgz -C benchmarks/attention_study/confirmation       # back here, then commit

The device's copy of the checkout has no git history, so --commit names the
commit it is (NMT_COMMIT, nmt.base.provenance). The study writes into the copy's own
confirmation folder, whose finished records it does not train again, and trains
the missing runs `--jobs` side by side with `trainer.device=cuda` (each run's
evaluation stays on the CPU, one thread, as on the CPU machine); run folders
and the vocabulary go to .gpu_study/ (git-ignored). After --minutes the study is
stopped with SIGTERM (the runs in progress are lost; the finished ones are
kept). Every record that the call finished goes into OUT/records.tgz, as
`records/NAME/seedN.json`, with study.json, whose new session line names this
machine and gives its paths relative to the repository, as the pages show
them; OUT/gpu_study.json lists them.

Stop the CPU machine's study before this call: it would train the same runs.
"""

import argparse
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from scripts.out_path import ready_folder

ROOT = Path(__file__).resolve().parents[2]
CONFIRMATION = ROOT / "benchmarks" / "attention_study" / "confirmation"
LINKS = ROOT / "benchmarks" / "attention_study" / "multi30k"


def parse_args(argv=None) -> argparse.Namespace:
    from nmt.base.cli_checks import finite_float

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commit", required=True, help="the commit this copy of the checkout is (git rev-parse HEAD)")
    parser.add_argument("--out", required=True, type=Path, help="where records.tgz and gpu_study.json go")
    parser.add_argument("--data", default=str(ROOT / "data" / "multi30k"), help="the Multi30k folder")
    parser.add_argument("--minutes", type=finite_float, default=9.0, help="wall clock before the study is stopped")
    parser.add_argument("--jobs", type=int, default=12, help="runs side by side")
    parser.add_argument("--device", default="cuda", help="the runs' trainer.device (cpu: the test of this script)")
    parser.add_argument("--machine", default=None, help="how the pages name this machine (default: the GPU's name)")
    parser.add_argument(
        "--folder", type=Path, default=CONFIRMATION, help="the confirmation's folder (--out of nmt_study)"
    )
    parser.add_argument("--work", type=Path, default=ROOT / ".gpu_study", help="run folders and the vocabulary")
    parser.add_argument("--study-args", default="", help="more options for nmt_study, space-separated")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[0-9a-fA-F]{7,40}", args.commit):
        parser.error(f"--commit {args.commit}: not a commit hash (git rev-parse --short=12 HEAD gives one)")
    if args.minutes <= 0 or args.jobs < 1:
        parser.error("--minutes must be above 0 and --jobs at least 1")
    if not (args.folder / "records").is_dir():
        parser.error(f"--folder {args.folder}: no records/ folder in it (the confirmation's folder holds one)")
    return args


def study_command(args, out: Path, work: Path, machine: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "nmt_study",
        "--confirm",
        "--data-path",
        args.data,
        "--links",
        str(LINKS / "test.links"),
        "--valid-links",
        str(LINKS / "valid.links"),
        "--confirm-links",
        str(LINKS / "test_2017.links"),
        "--out",
        str(out),
        "--runs-dir",
        str(work / "runs"),
        "--cache-dir",
        str(work / "cache"),
        "--jobs",
        str(args.jobs),
        "--threads",
        "1",
        "--records-only",
        "--machine",
        machine,
        *args.study_args.split(),
        f"trainer.device={args.device}",
    ]


def finished_records(folder: Path) -> dict[str, bytes]:
    """records/NAME/seedN.json -> its bytes, for every finished record under `folder`."""
    found = {}
    for path in sorted((folder / "records").glob("*/seed*.json")):
        data = path.read_bytes()
        if json.loads(data).get("status") == "finished":
            found[str(path.relative_to(folder))] = data
    return found


def sessions(folder: Path) -> list[dict]:
    path = folder / "study.json"
    return json.loads(path.read_text()).get("sessions", []) if path.exists() else []


def pack(folder: Path, before: dict[str, bytes], known_sessions: int, archive: Path) -> list[str]:
    """The records finished since `before` (new, or changed) into `archive`, with study.json,
    whose sessions after the first `known_sessions` name paths relative to the repository."""
    new = [name for name, data in finished_records(folder).items() if before.get(name) != data]
    with tarfile.open(archive, "w:gz") as tar:
        for name in new:
            tar.add(folder / name, arcname=name)
        if (folder / "study.json").exists():
            study = json.loads((folder / "study.json").read_text())
            for session in study.get("sessions", [])[known_sessions:]:
                session["command"] = session["command"].replace(f"{ROOT}/", "")
            data = (json.dumps(study, indent=1) + "\n").encode()
            info = tarfile.TarInfo("study.json")
            info.size, info.mtime = len(data), int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return new


def machine_name(device: str) -> str:
    if device.startswith("cuda"):
        import torch

        return f"{torch.cuda.get_device_name(0)} (one GPU, {os.cpu_count()} CPU cores), {device} runs side by side"
    return f"{os.cpu_count()}-core CPU, no GPU"


def main(argv=None) -> int:
    args = parse_args(argv)
    folder = args.folder
    before, known = finished_records(folder), len(sessions(folder))
    ready_folder(args.out, "gpu_study")
    command = study_command(args, folder, args.work, args.machine or machine_name(args.device))
    env = dict(os.environ, NMT_COMMIT=args.commit, PYTHONUNBUFFERED="1")
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        code = process.wait(timeout=args.minutes * 60)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)  # the study stops its runs; finished records stay
        code = process.wait()
    new = pack(folder, before, known, args.out / "records.tgz")
    summary = {
        "command": " ".join(command),
        "commit": args.commit,
        "exit": code,
        "seconds": round(time.perf_counter() - started, 1),
        "new_records": new,
    }
    (args.out / "gpu_study.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"gpu_study: {len(new)} new record(s) in {args.out / 'records.tgz'}: {', '.join(new) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
