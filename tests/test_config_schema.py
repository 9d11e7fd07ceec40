"""Every config value is checked before any data is read (nmt/config_schema/).

The tree test composes the default config, every experiment preset and every
option of every group, and asks of every leaf: does RULES name it? A key
added to a YAML later without a rule fails here. Then every leaf gets a wrong
type and, where its rule has a range, a value outside it: each must be one
`key=value: ...` line. A few real `python -m nmt.train` runs check the route
end to end: exit 1, one line, no traceback, and no data read (the cache and
run folders stay empty).
"""

import math
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import torch

from nmt.config_schema import check_classes, validate
from nmt.config_schema.classes import check_group_settings
from nmt.config_schema.kinds import Bool, Choice, Float, Int, Pair, Text
from nmt.config_schema.table import RULES
from nmt.config_schema.values import as_plain, leaves
from nmt.base.errors import NmtError
from nmt.models.build import check_model_config
from tests.helpers import CONFIGS, ROOT, run_cli

GROUPS = ["data", "model/encoder", "model/decoder", "model/attention", "model/bridge",
          "model/positional", "optimizer", "schedule", "trainer", "experiment"]
# data=files and files_streaming need their paths; any text will do for the schema
FILES = ["data.train_src=a", "data.train_tgt=b", "data.valid_src=c", "data.valid_tgt=d"]


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (Path(CONFIGS) / group).glob("*.yaml"))


def compose_config(*overrides: str):
    with initialize_config_dir(config_dir=CONFIGS, version_base="1.3"):
        return compose("config", overrides=list(overrides))


def every_config() -> dict[str, object]:
    """name -> composed config: the default and each option of each group."""
    configs = {"default": compose_config()}
    for group in GROUPS:
        for option in options(group):
            extra = FILES if group == "data" and option.startswith("files") else []
            configs[f"{group}={option}"] = compose_config(f"{group}={option}", *extra)
    return configs


@pytest.fixture(scope="module")
def configs():
    return every_config()


@pytest.fixture(scope="module")
def tree(configs):
    """dotted key -> (a config that has it, its value there)."""
    found = {}
    for name, cfg in configs.items():
        for key, value in leaves(as_plain(cfg)):
            found.setdefault(key, (cfg, value))
    return found


def test_every_group_has_options():
    for group in GROUPS:
        assert options(group), group


def test_every_leaf_of_every_option_has_a_rule(tree):
    # a key added to any YAML without a rule in nmt/config_schema/table.py fails here
    assert len(tree) > 80
    missing = sorted(key for key in tree if key not in RULES)
    assert not missing, f"add a rule to nmt/config_schema/table.py RULES for: {missing}"


def test_every_key_has_a_meaning(tree):
    # the one-line meaning beside the allowed values (table.py) is what --help and the
    # configuration reference show; "the max_len setting" or a bare name says nothing
    empty = sorted(key for key in tree if len(RULES[key].meaning.split()) < 4)
    assert not empty, f"give these keys a meaning in nmt/config_schema/table.py RULES: {empty}"
    for key, rule in RULES.items():
        name = key.rsplit(".", 1)[-1]
        assert rule.meaning.strip() == rule.meaning and "{" not in rule.meaning, key
        assert rule.meaning.lower().strip(" .") not in (name, f"the {name}", f"the {name} setting"), key


def test_no_rule_without_a_key(tree):
    # a rule for a key no YAML has is a leftover (or a typo that checks nothing)
    stale = sorted(key for key in RULES if key not in tree)
    assert not stale, stale


def test_every_shipped_config_is_valid(configs):
    for name, cfg in configs.items():
        validate(cfg)           # no false refusals of what we ship


def test_every_model_option_builds_before_any_data(configs):
    # the meta-device build of check_model_config works for every shipped part
    transformer = ["model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero"]
    cases = [["experiment=" + o] for o in options("experiment")] + [[]]
    cases += [[f"model/encoder={o}"] for o in options("model/encoder")]
    cases += [[f"model/attention={o}"] for o in options("model/attention")]
    cases += [[f"model/bridge={o}"] for o in options("model/bridge")]
    cases += [[*transformer, f"model/positional={o}"] for o in options("model/positional")]
    for overrides in cases:
        cfg = compose_config(*overrides)
        check_model_config(cfg.model, int(cfg.data.vocab_size))


def test_the_meta_build_fills_no_values_and_loads_no_meta_kernels():
    """check_model_config's model has every parameter's shape and no values; a
    normal_ initialiser (the embeddings') is skipped on meta tensors: its meta kernel
    would import torch._dynamo and sympy (~800 modules, 2 s) before any data is read."""
    import subprocess
    import sys

    probe = ("import sys, torch\n"
             "from nmt.models.build import MetaInitSkipped, check_model_config\n"
             "from tests.test_config_schema import compose_config\n"
             "cfg = compose_config('experiment=transformer_small')\n"
             "model = check_model_config(cfg.model, 8000)\n"
             "assert 'torch._dynamo' not in sys.modules, 'imported'\n"
             "assert all(p.is_meta for p in model.parameters())\n"
             "print(sum(p.numel() for p in model.parameters()))\n"
             "with torch.device('meta'), MetaInitSkipped():\n"
             "    table = torch.nn.Embedding(3, 2)\n"
             "    torch.nn.init.normal_(table.weight, std=0.1)\n"
             "    table.weight.normal_()\n"
             "assert table.weight.is_meta and table.weight.shape == (3, 2)\n"
             "assert 'torch._dynamo' not in sys.modules\n"
             "plain = torch.empty(3, 2).zero_()\n"
             "with MetaInitSkipped():\n"
             "    plain.normal_()\n"
             "assert plain.abs().sum() > 0                 # a real tensor is still filled\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "9626624"             # transformer_small, parameter for parameter


def wrong_values(rule) -> list:
    """A value of the wrong type, and values outside the rule's range."""
    if isinstance(rule, (Int, Float)):
        bad = ["abc", [1, 2]] + ([1.5] if isinstance(rule, Int) else [math.nan, math.inf])
        if rule.low is not None:
            bad.append(rule.low if rule.low_open else rule.low - (1 if isinstance(rule, Int) else 0.5))
        if rule.high is not None:
            bad.append(rule.high if rule.high_open else rule.high + 1)
        if not rule.null:
            bad.append(None)
        return bad
    if isinstance(rule, Choice):
        return ["not_an_option", 7, True] + ([] if rule.null else [None])
    if isinstance(rule, Bool):
        return ["maybe", 2, "true"] + ([] if rule.null else [None])
    if isinstance(rule, Pair):
        return ["abc", [0.9], [0.9, 1.5], [-0.1, 0.9], ["a", "b"]]
    if isinstance(rule, Text):
        return [[1, 2], {"a": 1}, "", "  "] + ([] if rule.null else [None])
    raise AssertionError(f"no wrong values for {rule!r}")


def test_every_leaf_refuses_a_wrong_type_and_an_out_of_range_value(tree):
    checked = 0
    for key, (cfg, good) in sorted(tree.items()):
        rule = RULES[key]
        for bad in wrong_values(rule):
            broken = cfg.copy()
            OmegaConf.update(broken, key, bad, merge=False)
            with pytest.raises(NmtError) as caught:
                validate(broken)
            message = str(caught.value)
            assert message.startswith(f"{key}="), (key, bad, message)
            assert "\n" not in message and ": must be " in message, message
            checked += 1
        if isinstance(rule, (Int, Float)) and rule.low is None and rule.high is None:
            continue
        assert rule.problem(good) is None, (key, good)
    assert checked > 300


@pytest.mark.parametrize("override, message", [
    ("trainer.max_steps=abc", "trainer.max_steps=abc: must be a whole number >= 1"),
    ("trainer.max_steps=0", "trainer.max_steps=0: must be >= 1"),
    ("trainer.max_steps=-5", "trainer.max_steps=-5: must be >= 1"),
    ("trainer.val_every=0", "trainer.val_every=0: must be >= 1"),
    ("optimizer.lr=-1", "optimizer.lr=-1: must be > 0"),
    ("trainer.grad_clip=-1", "trainer.grad_clip=-1: must be >= 0 (0 turns clipping off)"),
    ("trainer.label_smoothing=1.0", "trainer.label_smoothing=1.0: must be in [0, 1) (0 turns smoothing off)"),
    ("trainer.label_smoothing=-0.1", "trainer.label_smoothing=-0.1: must be in [0, 1) (0 turns smoothing off)"),
    ("trainer.accumulate=0", "trainer.accumulate=0: must be >= 1"),
    ("trainer.log_every=0", "trainer.log_every=0: must be >= 1"),
    ("trainer.patience=-1", "trainer.patience=-1: must be >= 0 (0 never stops early)"),
    ("trainer.max_steps=1e3", "trainer.max_steps=1000.0: must be a whole number, e.g. 1000"),
    ("trainer.max_minutes=nan", "trainer.max_minutes=nan: must be a finite number > 0 (null = no time budget)"),
    ("model.encoder.dropout=1", "model.encoder.dropout=1: must be in [0, 1)"),
    ("optimizer.betas=[0.9,1.5]", "optimizer.betas=[0.9,1.5]: must be two numbers [a,b], each in [0, 1)"),
    ("trainer.precision=fp64", "trainer.precision=fp64: must be one of auto, fp32, bf16, fp16"),
    ("trainer.compile=yes", "trainer.compile=yes: must be true or false"),
    # an unset shell variable (trainer.resume=$CKPT) is refused, not a fresh run
    ("trainer.resume=", "trainer.resume=: must be a path or name, not empty (null, auto, or the path "
                        "of a checkpoint)"),
    ("cache_dir=", "cache_dir=: must be a path or name, not empty"),
])
def test_named_cases(override, message):
    with pytest.raises(NmtError) as caught:
        validate(compose_config(override))
    assert str(caught.value) == message


@pytest.mark.parametrize("override, message", [
    # a misspelled key added with + is refused, not ignored (a run with the default, exit 0)
    ("+trainer.max_step=100", "trainer.max_step=100: not a setting nmt knows; did you mean "
                              "trainer.max_steps? (python -m nmt.train --cfg job lists every key)"),
    ("+data.vocab=300", "data.vocab=300: not a setting nmt knows; did you mean data.vocab_size? "
                        "(python -m nmt.train --cfg job lists every key)"),
    ("+trainer.guided_alignment.wieght=1", "trainer.guided_alignment.wieght=1: not a setting nmt knows; "
     "did you mean trainer.guided_alignment.weight? (python -m nmt.train --cfg job lists every key)"),
    ("+model.size=3", "model.size=3: not a setting nmt knows (python -m nmt.train --cfg job lists every key)"),
    ("+seed=3", "seed=3: not a setting nmt knows (python -m nmt.train --cfg job lists every key)"),
])
def test_a_key_nmt_does_not_know_is_refused(override, message):
    with pytest.raises(NmtError) as caught:
        validate(compose_config(override))
    assert str(caught.value) == message


def test_every_node_without_a_class_refuses_an_unknown_key(tree):
    # model parts, optimizer and schedule (nodes with _target_) answer through their class's
    # settings (check_group_settings); every other node through RULES
    parents = {key.rsplit(".", 1)[0] if "." in key else "" for key in tree}
    cfg = compose_config()
    for parent in sorted(parents):
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if node is None or "_target_" in node:
            continue
        broken = cfg.copy()
        key = f"{parent}.zzz_unknown" if parent else "zzz_unknown"
        OmegaConf.update(broken, key, 1, force_add=True)
        with pytest.raises(NmtError, match=f"^{key}=1: not a setting nmt knows"):
            validate(broken)


def test_cuda_device_numbers_are_allowed():
    validate(compose_config("trainer.device=cuda:1"))


def test_same_languages_are_refused():
    with pytest.raises(NmtError, match="data.src_lang and data.tgt_lang are both en"):
        validate(compose_config("data.src_lang=en"))


# -- combinations that cannot work ---------------------------------------------

def test_a_preset_with_another_encoder_says_which_keys_conflict():
    # the preset sets embed_dim and hidden_size for its GRU; a Transformer encoder takes neither
    cfg = compose_config("experiment=quickstart", "model/encoder=transformer")
    with pytest.raises(NmtError) as caught:
        check_classes(cfg, {"experiment": "quickstart", "model/encoder": "transformer"})
    assert str(caught.value) == (
        "experiment=quickstart sets model.encoder.embed_dim, model.encoder.hidden_size for its own "
        "encoder, which model/encoder=transformer does not take (its settings are d_model, dropout, "
        "ff_size, heads, layers, norm_first, normaliser); drop model/encoder=transformer to use the "
        "preset's encoder, or drop experiment=quickstart and set model.encoder.* yourself")


def test_a_preset_with_another_schedule_says_which_keys_conflict():
    # transformer_small sets warmup_steps for inverse_sqrt; constant takes no settings
    cfg = compose_config("experiment=transformer_small", "schedule=constant")
    with pytest.raises(NmtError) as caught:
        check_group_settings(cfg.schedule, "schedule", {"experiment": "transformer_small",
                                                        "schedule": "constant"})
    assert str(caught.value) == (
        "experiment=transformer_small sets schedule.warmup_steps for its own schedule, which "
        "schedule=constant does not take (it has no settings); drop schedule=constant to use the "
        "preset's schedule, or drop experiment=transformer_small and set schedule.* yourself")


def test_every_optimizer_and_schedule_option_takes_its_settings(configs):
    for group in ("optimizer", "schedule"):
        for option in options(group):
            check_group_settings(configs[f"{group}={option}"][group], group)


def test_a_key_of_another_option_is_named():
    cfg = compose_config("model/encoder=lstmn", "+model.encoder.layers=2")
    with pytest.raises(NmtError, match=r"^model.encoder.layers: not a setting of LSTMNEncoder"):
        check_classes(cfg)


# -- end to end: python -m nmt.train -------------------------------------------

def refused(tmp_path, *overrides, multirun=False, data="toy"):
    """Run nmt.train on the toy task; assert one error line, exit 1, nothing read or written."""
    cache, run_dir = tmp_path / "cache", tmp_path / "run"
    cache.mkdir()
    where = [f"hydra.sweep.dir={tmp_path / 'sweep'}"] if multirun else [f"hydra.run.dir={run_dir}"]
    done = run_cli("nmt.train", *(["--multirun"] if multirun else []), f"data={data}", *overrides,
                   f"cache_dir={cache}", *where, env={"OMP_NUM_THREADS": "1"})
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("nmt: error: ")]
    assert errors and len(set(errors)) == 1, stderr
    assert list(cache.iterdir()) == []                  # no data read, no vocabulary trained
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "multirun.yaml"]
    assert written == [], written                       # no .hydra, no train.log, no checkpoint
    return errors[0].removeprefix("nmt: error: "), stderr


def test_cli_grad_clip(tmp_path):
    message, stderr = refused(tmp_path, "trainer.grad_clip=-1")
    assert message == "trainer.grad_clip=-1: must be >= 0 (0 turns clipping off)"
    assert stderr.strip() == f"nmt: error: {message}"     # the one line, nothing else


def test_cli_with_hydras_logging_turned_off(tmp_path):
    # nmt's job logging (train.log opened at its first record) is an option users can swap
    message, _ = refused(tmp_path, "hydra/job_logging=disabled", "trainer.grad_clip=-1")
    assert message == "trainer.grad_clip=-1: must be >= 0 (0 turns clipping off)"


def test_cli_max_steps_not_a_number(tmp_path):
    message, _ = refused(tmp_path, "trainer.max_steps=abc")
    assert message == "trainer.max_steps=abc: must be a whole number >= 1"


def test_cli_multirun_negative_learning_rate(tmp_path):
    message, _ = refused(tmp_path, "optimizer.lr=-1", multirun=True)
    assert message == "optimizer.lr=-1: must be > 0"


def test_cli_preset_with_another_encoder(tmp_path):
    message, _ = refused(tmp_path, "experiment=quickstart", "model/encoder=transformer")
    assert message.startswith("experiment=quickstart sets model.encoder.embed_dim, "
                              "model.encoder.hidden_size for its own encoder")


def test_cli_preset_with_another_schedule(tmp_path):
    message, _ = refused(tmp_path, "experiment=transformer_small", "schedule=constant")
    assert message.startswith("experiment=transformer_small sets schedule.warmup_steps")


def test_cli_location_attention_shorter_than_a_source(tmp_path):
    # today: NmtError in the middle of training, at the first long source
    message, _ = refused(tmp_path, "model/attention=luong_location", "model.attention.max_len=20")
    assert message == ("model.attention.max_len=20 is shorter than the longest source (data.max_len=32 "
                       "subwords); set model.attention.max_len=32 or data.max_len=20")


def test_cli_heads_must_divide_d_model_before_data(tmp_path):
    message, _ = refused(tmp_path, "experiment=transformer_small", "model.encoder.heads=3")
    assert message == ("model.encoder.d_model=256 is not divisible by model.encoder.heads=3; "
                       "pick sizes with d_model % heads == 0")


# Settings that only work together, and data settings that need no file to judge:
# said before any data is read or the run folder is written (no vocabulary trained,
# no .hydra or train.log in the folder).
TINY_TRANSFORMER = ["model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
                    "model/positional=sinusoidal"] + [
    f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
    for key, value in (("d_model", 32), ("layers", 2), ("heads", 2), ("ff_size", 64))]
PATHS = ["data.train_src=nope.de", "data.train_tgt=nope.en", "data.valid_src=nope.de", "data.valid_tgt=nope.en"]
NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")


@pytest.mark.parametrize("data, overrides, message", [
    ("toy", ["experiment=quickstart", "trainer.coverage_penalty=0.2", "trainer.val_beam_size=1"],
     "trainer.coverage_penalty=0.2 re-ranks the beam's hypotheses; set trainer.val_beam_size "
     "to 2 or more"),
    ("toy", ["experiment=quickstart", "trainer.guided_alignment.weight=1"],
     "trainer.guided_alignment.weight > 0 needs data.train_alignments, a file of word links 'i-j' per "
     "training pair (python -m nmt.data.alignments toy FILE writes the toy task's)"),
    ("toy", [*TINY_TRANSFORMER, "trainer.guided_alignment.weight=1", "data.train_alignments=links.txt",
             "trainer.guided_alignment.layer=9"],
     "trainer.guided_alignment.layer=9 but the decoder has 2 layer(s); pick one in [-2, 1]"),
    ("toy", [*TINY_TRANSFORMER, "trainer.guided_alignment.weight=1", "data.train_alignments=links.txt",
             "trainer.guided_alignment.head=2"],
     "trainer.guided_alignment.head=2 but the decoder has 2 heads; pick one in [0, 1]"),
    ("toy", ["data.n_train=300000"],
     "toy task: 300400 sentences asked for; keep n_train + n_valid + n_test <= 200000"),
    ("toy", ["+data.streaming=true"],
     "data.streaming=true reads data=files only, not data.kind='toy'; use data=files_streaming with "
     "data.train_src=... and friends"),
    ("files", [], "data.train_src is not set; add data.train_src=... to the command line"),
    ("files", [*PATHS, "data.test_src=nope.de"], "set both data.test_src and data.test_tgt, or neither"),
    ("files_streaming", [*PATHS, "data.train_alignments=links.txt"],
     "data.train_alignments (guided alignment) is not supported with data.streaming; use data=files, "
     "which holds the training pairs in memory"),
    pytest.param("toy", ["trainer.precision=fp16"],
                 "trainer.precision=fp16 needs a GPU; use fp32 or bf16 on CPU", marks=NO_GPU),
    ("toy", ["trainer.device=cuda:x"], "trainer.device='cuda:x': the GPU must be a number from 0, e.g. "
                                      "trainer.device=cuda:0; or use trainer.device=cuda, cpu or auto"),
    pytest.param("toy", ["trainer.device=cuda"], "trainer.device=cuda but no CUDA GPU is visible; use "
                 "trainer.device=cpu or trainer.device=auto", marks=NO_GPU),
    ("toy", ["trainer.compile_mode=reduce-overhead"],
     "trainer.compile_mode=reduce-overhead is torch.compile's mode; add trainer.compile=true"),
], ids=["coverage_penalty_greedy", "guided_without_links", "guided_layer", "guided_head", "toy_too_big",
        "streaming_toy", "files_unset", "test_src_alone", "streaming_guided", "fp16_cpu", "cuda_not_a_number",
        "cuda_absent", "compile_mode_without_compile"])
def test_cli_settings_that_cannot_work_are_refused_before_data(tmp_path, data, overrides, message):
    assert refused(tmp_path, *overrides, data=data)[0] == message
