"""nmt installs like a Python package: a wheel built from the sources, put
into a fresh virtual environment outside the checkout, trains the quick-start
(its Hydra configs travel inside the package) and translates, through the
console commands `nmt-train` and `nmt-translate`, with the model it trained and with
the one shipped inside it (`--model multi30k-de-en`); the attention study,
its own package beside nmt, comes in the same wheel (`nmt-study`).

The fresh environment takes nmt from the wheel alone; its dependencies (torch,
Hydra, ...) come from the environment running the tests through a `.pth`
file, so the test needs no network and no second copy of torch.
"""

import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd, cwd, env=None, timeout=300, input=None):
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout, input=input)
    assert result.returncode == 0, f"{cmd}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the sources (a build in the checkout would leave build/ there)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for package in ("nmt", "nmt_study"):          # the study is its own package beside nmt, in the same wheel
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
          "-w", tmp_path / "dist", src], cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("nmt-*.whl")
    return wheel


def fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                   cwd=tmp_path).stdout.strip()
    # the dependencies, after the venv's own site-packages: nmt itself is found in the wheel's copy
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()}
    Path(purelib, "dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--quiet", wheel],
         cwd=tmp_path)
    return venv


def test_wheel_in_a_fresh_venv_trains_and_translates(tmp_path):
    wheel = build_wheel(tmp_path)
    venv = fresh_venv(tmp_path, wheel)
    work = tmp_path / "work"                    # no configs/ here, no checkout above
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONUNBUFFERED"] = "1"

    where = _run([venv / "bin" / "python", "-c", "import nmt; print(nmt.__file__)"], cwd=work, env=env)
    assert where.stdout.strip().startswith(str(venv)), where.stdout

    run = work / "run"
    _run([venv / "bin" / "nmt-train", "experiment=quickstart", "trainer.max_steps=3", "trainer.val_every=3",
          f"hydra.run.dir={run}", f"cache_dir={work / 'cache'}"], cwd=work, env=env)
    best = run / "checkpoints" / "best.pt"
    assert best.is_file()

    out = _run([venv / "bin" / "nmt-translate", "--checkpoint", best, "--beam-size", "1"], cwd=work, env=env,
               input="thursday the twenty second of march twenty forty seven\n")
    assert len(out.stdout.splitlines()) == 1

    # the shipped model travels in the wheel and translates offline by name
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert {"nmt/pretrained/multi30k-de-en/model.pt", "nmt/pretrained/multi30k-de-en/README.md"} <= set(names)
    shipped = _run([venv / "bin" / "nmt-translate", "--model", "multi30k-de-en", "--beam-size", "1"], cwd=work,
                   env=env, input="Zwei Hunde spielen im Schnee.\n")
    assert shipped.stdout == "Two dogs are playing in the snow.\n"

    # every console command answers --help
    for command in ("nmt-average", "nmt-explore", "nmt-compare", "nmt-study", "nmt-data"):
        assert "usage:" in _run([venv / "bin" / command, "--help"], cwd=work, env=env).stdout

    # the attention study travels beside nmt: its modules, and `python -m nmt_study` from the wheel's copy
    assert {"nmt_study/__init__.py", "nmt_study/__main__.py", "nmt_study/eflomal_links.py"} <= set(names)
    study = _run([venv / "bin" / "python", "-c", "import nmt_study; print(nmt_study.__file__)"], cwd=work, env=env)
    assert study.stdout.strip().startswith(str(venv)), study.stdout
    assert _run([venv / "bin" / "python", "-m", "nmt_study", "--help"], cwd=work,
                env=env).stdout.startswith("usage: python -m nmt_study")
