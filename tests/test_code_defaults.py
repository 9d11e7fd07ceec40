"""Defaults live in the YAML (nmt/configs): a constructor's keyword default
for a key that a config option sets must be the value every option of that
class gives it, and a key that options of one class set differently (an RNN's
cell) has no default in code. Reading the config, nmt takes each key as the
YAML gives it (no `cfg.get(key, default)` beside the YAML's value)."""

import ast
import inspect
from collections import defaultdict
from pathlib import Path

from hydra.utils import get_class
from omegaconf import OmegaConf

from nmt.base.config_files import CONFIGS

NMT = Path(__file__).resolve().parents[1] / "nmt"
# The positional option's own name: the class checks it when it is given.
NOT_SETTINGS = {"kind"}


def yaml_values() -> dict[tuple[str, str], set]:
    """(class, key) -> the values the shipped YAML options give that key."""
    found = defaultdict(set)

    def walk(node):
        if not isinstance(node, dict):
            return
        target = node.get("_target_")
        if isinstance(target, str) and target.startswith("nmt."):
            for key, value in node.items():
                if not key.startswith("_") and not (isinstance(value, str) and "${" in value):
                    found[target, key].add(repr(value))
        for value in node.values():
            walk(value)

    for path in sorted(Path(str(CONFIGS)).rglob("*.yaml")):
        if "hydra" not in path.relative_to(Path(str(CONFIGS))).parts:
            walk(OmegaConf.to_container(OmegaConf.load(path), resolve=False))
    return found


def test_constructor_defaults_agree_with_the_yaml():
    values = yaml_values()
    assert len(values) > 50
    wrong = []
    for (target, key), given in sorted(values.items()):
        parameter = inspect.signature(get_class(target).__init__).parameters.get(key)
        if parameter is None or parameter.default is inspect.Parameter.empty or key in NOT_SETTINGS:
            continue
        if {repr(parameter.default)} != given:
            wrong.append(f"{target}({key}={parameter.default!r}), YAML: {', '.join(sorted(given))}")
    assert not wrong, "make the code default the YAML's value, or drop it:\n" + "\n".join(wrong)


def test_the_data_pipeline_reads_no_default_beside_the_yaml():
    data_keys = set(OmegaConf.load(Path(str(CONFIGS)) / "data" / "files.yaml").keys())
    defaults = []
    for path in sorted((NMT / "data").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value in data_keys and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value is not None):
                defaults.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert not defaults, f"the data configs set these keys; read them without a default: {defaults}"
