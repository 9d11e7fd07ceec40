"""Defaults that work.

- Every attention score in configs/model/attention/ runs with the default
  encoder and decoder: a bidirectional encoder splits its hidden size over
  its two directions, so its states have the decoder's size.
- A run ends with a summary (best validation BLEU, best.pt, the next commands
  with the real, shell-quoted paths), and those commands work.
- Log lines never land inside the progress bar.
- A path with a space and a non-ASCII character works in an override when
  quoted the way the README says: key='path'.
"""

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import torch
from hydra.errors import HydraException
from omegaconf import OmegaConf

from nmt.models.build import build_model
from tests.helpers import CONFIGS, ROOT, fresh_shell_env, make_config, one_thread, run_cli  # noqa: F401 (fixture)

SCORES = sorted(p.stem for p in (Path(CONFIGS) / "model" / "attention").glob("*.yaml"))
ODD_DIR = "my runs/Zürich ü"        # a space and a non-ASCII character


def test_the_default_encoder_states_have_the_decoder_size():
    cfg = make_config()
    model = build_model(cfg.model, 30, 31)
    assert cfg.model.encoder.bidirectional
    assert model.encoder.output_size == cfg.model.decoder.hidden_size == 256
    assert model.encoder.rnn.hidden_size == 128          # per direction


@pytest.mark.parametrize("score", SCORES)
def test_every_attention_score_works_with_the_default_encoder_and_decoder(score, one_thread):
    torch.manual_seed(0)
    cfg = make_config(f"model/attention={score}")        # nothing else changed
    model = build_model(cfg.model, 30, 31)
    src = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 11, 12, 13]])
    tgt = torch.tensor([[2, 5, 6, 3, 0], [2, 7, 8, 9, 3]])
    out, penalty = model(src, tgt[:, :-1], need_weights=True)
    assert out.logits.shape == (2, 4, 31) and torch.isfinite(out.logits).all()
    assert torch.all(out.weights[0, :, 4] == 0)          # padding gets no attention
    loss = torch.nn.functional.cross_entropy(out.logits.reshape(-1, 31), tgt[:, 1:].reshape(-1)) + penalty
    if out.log_prob is not None:
        loss = loss + out.log_prob.sum()
    loss.backward()
    attention = model.decoder.attention
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.encoder.parameters())
    if any(True for _ in attention.parameters()):
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in attention.parameters())


# -- quoting a path in an override --------------------------------------------

def test_a_quoted_path_with_a_space_and_a_non_ascii_character_is_taken_as_is():
    path = "/data/my corpus/Zürich ü.de"
    cfg = make_config("data=files", f"data.train_src='{path}'", f'data.valid_src="{path}"')
    assert cfg.data.train_src == path and cfg.data.valid_src == path


def test_an_unquoted_non_ascii_path_is_refused_by_hydra():
    """Why the README says to quote: Hydra's override grammar has no unquoted ü."""
    with pytest.raises(HydraException):
        make_config("data=files", "data.train_src=/data/Zürich.de")


# -- one short run through the command line, default model, dot attention ----

@pytest.fixture(scope="module")
def dot_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("defaults")
    run_dir = base / ODD_DIR
    started = time.perf_counter()
    # stdout and stderr in one pipe, as on a terminal: the bar (stderr) and the log (stdout) meet
    result = subprocess.run(
        [sys.executable, "-m", "nmt.train", "data=toy", "model/attention=luong_dot",
         "trainer.max_steps=3", "trainer.val_every=2", "trainer.log_every=1",
         "trainer.val_max_sentences=4", "trainer.heatmap_sentences=1", "trainer.device=cpu",
         f"cache_dir='{base / 'cache'}'", f"hydra.run.dir='{run_dir}'"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
        env=dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1"))
    output = result.stdout.decode()
    assert result.returncode == 0, output[-2000:]
    return {"dir": run_dir, "output": output, "seconds": time.perf_counter() - started}


def test_dot_attention_trains_through_the_cli_with_the_default_model(dot_run):
    config = OmegaConf.load(dot_run["dir"] / ".hydra" / "config.yaml")
    assert config.model.attention._target_.endswith("DotAttention")
    assert config.model.encoder.hidden_size == config.model.decoder.hidden_size == 256
    steps = [json.loads(line)["step"] for line in (dot_run["dir"] / "metrics.jsonl").read_text().splitlines()]
    assert steps == [2, 3]


def test_a_run_folder_with_a_space_and_a_non_ascii_character_works(dot_run):
    assert " " in str(dot_run["dir"]) and "ü" in str(dot_run["dir"])
    assert (dot_run["dir"] / "checkpoints" / "best.pt").is_file()
    assert (dot_run["dir"] / "train.log").is_file()


def test_log_lines_never_land_inside_the_progress_bar(dot_run):
    segments = re.split(r"[\r\n]", dot_run["output"])
    records = [s for s in segments if "][nmt." in s]
    assert any("validation step 2" in s for s in records)      # logged while the bar was shown
    for segment in records:
        assert segment.startswith("["), segment[:200]            # a line of its own, not after the bar
    log_file = (dot_run["dir"] / "train.log").read_text(encoding="utf-8")
    assert log_file.count("validation step") == 2                 # the file still gets every line


def summary_lines(output: str) -> list[str]:
    lines = output.replace("\r", "\n").splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("nmt: finished"))
    return lines[start:]


def test_the_run_ends_with_a_summary_of_best_bleu_and_best_pt(dot_run):
    lines = summary_lines(dot_run["output"])
    summary = json.loads((dot_run["dir"] / "summary.json").read_text())
    best_bleu = max(json.loads(line)["bleu"]
                    for line in (dot_run["dir"] / "metrics.jsonl").read_text().splitlines())
    assert summary["best"] == best_bleu
    assert lines[0] == f"nmt: finished at step 3, trainer.max_steps=3 reached; best validation BLEU {best_bleu:.2f}"
    assert lines[1] == f"  best checkpoint: {(dot_run['dir'] / 'checkpoints' / 'best.pt').resolve()}"
    # the toy task's 200 test pairs, translated by best.pt as validation does (greedy)
    assert lines[2] == (f"  test set: BLEU {summary['test_bleu']:.2f} chrF {summary['test_chrf']:.2f} "
                        "(best.pt, 200 sentences, greedy)")
    assert len(lines) == 7 and lines[3] == "  next:"


def next_commands(dot_run) -> dict:
    commands = [line.strip() for line in summary_lines(dot_run["output"])[4:]]
    return {"translate": commands[0], "tensorboard": commands[1], "explore": commands[2]}


def test_the_printed_translate_command_runs_as_printed_from_any_shell(dot_run, tmp_path):
    """A new shell in another folder, the environment not activated: the command
    names the installed nmt-translate (or this interpreter) by its full path."""
    command = next_commands(dot_run)["translate"]
    assert command.startswith("echo ") and " --checkpoint '" in command
    program = shlex.split(command.split(" | ")[1])[0]
    assert Path(program).is_absolute() and Path(program).parent == Path(sys.executable).parent
    result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=120,
                            env=fresh_shell_env())
    assert result.returncode == 0, result.stderr.decode()[-1000:]
    assert len(result.stdout.decode().splitlines()) == 1          # one sentence in, one out


def test_the_printed_tensorboard_command_names_the_run_s_event_files(dot_run, tmp_path):
    argv = shlex.split(next_commands(dot_run)["tensorboard"])
    assert Path(argv[0]).is_absolute() and argv[-2] == "--logdir"
    version = subprocess.run([*argv[:-2], "--version_tb"], cwd=tmp_path, capture_output=True, timeout=120,
                             env=fresh_shell_env())         # the program runs from any shell
    assert version.returncode == 0 and version.stdout.decode().strip(), version.stderr.decode()[-500:]
    logdir = Path(argv[2])
    assert logdir == (dot_run["dir"] / "tensorboard").resolve()
    assert list(logdir.glob("events.out.tfevents.*"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_printed_explore_command_serves_the_checkpoint(dot_run, tmp_path):
    port = free_port()
    command = next_commands(dot_run)["explore"] + f" --port {port}"
    server = subprocess.Popen(["bash", "-c", "exec " + command], cwd=tmp_path, env=fresh_shell_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline, page = time.time() + 60, None
        while time.time() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    page = response.status, response.read()
                break
            except OSError:
                time.sleep(0.3)
        assert page is not None, server.stderr.read().decode()[-1000:] if server.poll() is not None else "no answer"
        assert page[0] == 200
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_checkpoint_of_format_1_loads_with_its_per_direction_size(dot_run, tmp_path):
    """Format 1 wrote a bidirectional encoder's hidden_size per direction (128
    here); it loads as the state size 256 and translates as before."""
    from nmt.translator import Translator

    best = dot_run["dir"] / "checkpoints" / "best.pt"
    state = torch.load(best, weights_only=True)
    assert state["format_version"] == 3
    state["config"]["model"]["encoder"]["hidden_size"] = 128
    state["format_version"] = 1
    old = tmp_path / "format1.pt"
    torch.save(state, old)
    sentence = "monday the first of may two thousand"
    expected = Translator.from_checkpoint(best, device="cpu").translate([sentence])[0].text
    assert Translator.from_checkpoint(old, device="cpu").translate([sentence])[0].text == expected
    through_cli = [run_cli("nmt.translate", "--checkpoint", str(path), input=(sentence + "\n").encode(),
                           env={"OMP_NUM_THREADS": "1"}) for path in (best, old)]
    assert [r.returncode for r in through_cli] == [0, 0]
    assert through_cli[0].stdout == through_cli[1].stdout and through_cli[1].stdout.strip()
