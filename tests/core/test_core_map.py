"""A reader finds each model mechanism of the reference core in one file named
after it: the map below lists them; a file that moves without its entry, a
listed name that is not defined in its file, a file without its paper, or a
core file the README's reading order leaves out fails here."""

import ast
import re
from pathlib import Path

import pytest

from nmt.config_schema.registry import class_of

CORE = Path(__file__).resolve().parents[2] / "nmt" / "core"

# mechanism -> (file under nmt/core, the names it defines there)
MECHANISMS = {
    "Bahdanau attention": ("attention/bahdanau.py", ["AdditiveAttention", "additive_score"]),
    "Luong dot": ("attention/luong_dot.py", ["DotAttention", "dot_score"]),
    "Luong general": ("attention/luong_general.py", ["GeneralAttention"]),
    "Luong concat": ("attention/luong_concat.py", ["ConcatAttention"]),
    "Luong location": ("attention/location.py", ["LocationAttention"]),
    "scaled dot product": ("attention/scaled_dot.py", ["ScaledDotAttention", "scaled_dot_score"]),
    "cosine": ("attention/cosine.py", ["CosineAttention", "cosine_score"]),
    "coverage": ("attention/coverage.py", ["CoverageAttention"]),
    "global scope": ("scopes/global_.py", ["global_scope"]),
    "local-m scope": ("scopes/local_m.py", ["local_m", "window_mask"]),
    "local-p scope": ("scopes/local_p.py", ["local_p", "CentrePredictor", "gaussian"]),
    "hard scope": ("scopes/hard.py", ["hard_scope"]),
    "softmax": ("normalisers/softmax.py", ["softmax", "masked_softmax"]),
    "sparsemax": ("normalisers/sparsemax.py", ["sparsemax"]),
    "entmax": ("normalisers/entmax.py", ["entmax15"]),
    "multi-head attention": ("multihead.py", ["MultiHeadAttention", "MultiHeadDotAttention", "split_heads",
                                              "head_scores", "merge_heads"]),
    "sinusoidal positions": ("positional/sinusoidal.py", ["SinusoidalPositions", "sinusoidal_table"]),
    "learned positions": ("positional/learned.py", ["LearnedPositions", "LearnedEmbedding"]),
    "rotary positions": ("positional/rotary.py", ["RotaryPositions", "rotate_pairs"]),
    "relative positions": ("positional/relative.py", ["RelativePositions", "RelativeTerms"]),
    "ALiBi": ("positional/alibi.py", ["AlibiPositions", "alibi_slopes", "alibi_bias"]),
    "no positions": ("positional/none.py", ["NoPositions"]),
    "RNN encoder": ("rnn_encoder.py", ["RNNEncoder", "run_packed"]),
    "RNN decoder": ("rnn_decoder.py", ["RNNDecoder"]),
    "LSTMN": ("lstmn.py", ["LSTMNEncoder"]),
    "bridges": ("bridges.py", ["LastBridge", "MeanBridge", "ZeroBridge", "ZhouBridge", "HanBridge",
                               "StructuredBridge"]),
    "Transformer layers": ("transformer_layers.py", ["ResidualLayer", "feed_forward"]),
    "Transformer encoder": ("transformer_encoder.py", ["TransformerEncoder", "TransformerEncoderLayer"]),
    "Transformer decoder": ("transformer_decoder.py", ["TransformerDecoder", "TransformerDecoderLayer"]),
    "masks": ("masks.py", ["padding_mask", "causal_mask", "target_mask"]),
    "encoder-decoder": ("seq2seq.py", ["Seq2Seq"]),
    "training loss": ("loss.py", ["training_loss", "label_smoothed_nll", "coverage_loss", "guided_alignment_loss",
                                  "hard_attention_loss"]),
    "training step": ("step.py", ["train_step", "update_counts"]),
    "output length limit": ("length_limit.py", ["max_output_length"]),
    "greedy search": ("greedy_search.py", ["greedy_search", "Hypothesis"]),
    "length and coverage penalties": ("penalties.py", ["length_penalty", "coverage_penalty"]),
    "beam search": ("beam_search.py", ["beam_search", "backtrack"]),
}

# mechanisms that are nmt's own rule, with no paper to cite: their docstring says so and writes the formula
OWN_RULES = {"output length limit"}

# config option -> the mechanism whose class it builds (nmt/configs/model/<group>/<option>.yaml)
OPTIONS = {
    ("model/attention", "bahdanau"): "Bahdanau attention", ("model/attention", "luong_dot"): "Luong dot",
    ("model/attention", "luong_general"): "Luong general", ("model/attention", "luong_concat"): "Luong concat",
    ("model/attention", "luong_location"): "Luong location", ("model/attention", "scaled_dot"): "scaled dot product",
    ("model/attention", "cosine"): "cosine", ("model/attention", "coverage"): "coverage",
    ("model/attention", "multihead"): "multi-head attention",
    ("model/positional", "sinusoidal"): "sinusoidal positions", ("model/positional", "learned"): "learned positions",
    ("model/positional", "rotary"): "rotary positions", ("model/positional", "relative"): "relative positions",
    ("model/positional", "alibi"): "ALiBi", ("model/positional", "none"): "no positions",
    ("model/encoder", "gru"): "RNN encoder", ("model/encoder", "lstm"): "RNN encoder",
    ("model/encoder", "lstmn"): "LSTMN", ("model/encoder", "transformer"): "Transformer encoder",
    ("model/decoder", "gru"): "RNN decoder", ("model/decoder", "lstm"): "RNN decoder",
    ("model/decoder", "transformer"): "Transformer decoder",
    **{("model/bridge", name): "bridges" for name in ("last", "mean", "zero", "zhou", "han", "structured")},
}

# a year, and a section, appendix or equation: "Luong, Pham & Manning 2015, ... Sec. 3.2"
CITATION = re.compile(r"\b(19|20)\d\d\b.*?\b(Sec|App|eqs?)\.", re.S)


def defined_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_mechanism_is_in_its_file(mechanism):
    file, names = MECHANISMS[mechanism]
    path = CORE / file
    assert path.is_file(), f"{mechanism}: nmt/core/{file} is gone; update MECHANISMS with where it went"
    missing = set(names) - defined_names(path)
    assert not missing, f"{mechanism}: nmt/core/{file} no longer defines {sorted(missing)}"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_mechanism_file_names_its_paper_section_and_formula(mechanism):
    path = CORE / MECHANISMS[mechanism][0]
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    if mechanism in OWN_RULES:
        assert "nmt's own rule" in docstring, f"nmt/core/{path.name}'s docstring does not say whose rule it is"
    else:
        assert CITATION.search(docstring), f"nmt/core/{path.name}'s docstring cites no paper with its section"
    assert "=" in docstring, f"nmt/core/{path.name}'s docstring writes no formula"


@pytest.mark.parametrize("group, option", OPTIONS)
def test_each_config_option_builds_the_class_of_its_mechanism_file(group, option):
    file, names = MECHANISMS[OPTIONS[(group, option)]]
    module = "nmt.core." + file.removesuffix(".py").replace("/", ".")
    target = class_of(group, option)
    assert target.rpartition(".")[0] == module and target.rpartition(".")[2] in names, target


def test_every_config_option_of_a_model_group_is_mapped():
    from nmt.config_schema.registry import options
    for group in ("model/attention", "model/positional", "model/encoder", "model/decoder", "model/bridge"):
        assert {(group, name) for name in options(group)} <= set(OPTIONS), group


def test_the_readme_lists_every_core_file_once_in_reading_order():
    readme = (CORE / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\d+\. `([\w/]+\.py)`: ", readme, re.M)
    files = sorted(p.relative_to(CORE).as_posix() for p in CORE.rglob("*.py") if p.name != "__init__.py")
    assert len(listed) == len(set(listed)), "a file is listed twice"
    assert sorted(listed) == files, (set(files) ^ set(listed))
    numbers = [int(n) for n in re.findall(r"^(\d+)\. `", readme, re.M)]
    assert numbers == list(range(1, len(numbers) + 1))
    assert {MECHANISMS[m][0] for m in MECHANISMS} <= set(listed)
