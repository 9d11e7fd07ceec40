"""Rules the core writes once for every layer: the special token ids and the
perplexity's cap. Each other module reads them from the core; a module of nmt
that writes one of them again as a number fails here. And no core class takes
an argument only to ignore it."""

import ast
import inspect
import math
from pathlib import Path

import pytest

from nmt.core.loss import PERPLEXITY_CAP, perplexity
from nmt.core.lstmn import LSTMNEncoder
from nmt.core.rnn_decoder import RNNDecoder
from nmt.core.rnn_encoder import RNNEncoder
from nmt.core.special_tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from nmt.core.transformer_decoder import TransformerDecoder

NMT = Path(__file__).resolve().parents[2] / "nmt"
SPECIAL_NAMES = {"PAD", "UNK", "BOS", "EOS", "PAD_ID", "UNK_ID", "BOS_ID", "EOS_ID"}
# the attention study leaves the package (issue 60, item 6); its copy goes with it
NOT_YET = {"study/metrics.py"}


def test_the_special_ids():
    # tests/data/test_tokenizer.py checks a trained sentencepiece model gives these pieces these ids
    assert (PAD_ID, UNK_ID, BOS_ID, EOS_ID) == (0, 1, 2, 3)


def numbered_specials(path: Path) -> list[str]:
    """Names of special ids that the module assigns a number to at its top level."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Constant, ast.Tuple)):
            names = [t.id for target in node.targets
                     for t in (target.elts if isinstance(target, ast.Tuple) else [target]) if isinstance(t, ast.Name)]
            found += [name for name in names if name in SPECIAL_NAMES]
    return found


def test_no_other_module_writes_the_special_ids_again():
    again = {p.relative_to(NMT).as_posix(): numbered_specials(p) for p in NMT.rglob("*.py")}
    again = {file: names for file, names in again.items() if names and file not in NOT_YET}
    assert again == {"core/special_tokens.py": ["PAD_ID", "UNK_ID", "BOS_ID", "EOS_ID"]}


def test_perplexity_by_hand():
    assert perplexity(math.log(4.0)) == pytest.approx(4.0)        # exp(log 4)
    assert perplexity(0.0) == 1.0
    assert perplexity(1000.0) == math.exp(50.0) == math.exp(PERPLEXITY_CAP)   # capped, not an overflow
    assert math.isnan(perplexity(float("nan")))


def test_no_other_module_caps_the_perplexity_again():
    again = [p.relative_to(NMT).as_posix() for p in NMT.rglob("*.py")
             if "exp(min(" in p.read_text(encoding="utf-8").replace(" ", "")]
    assert again == ["core/loss.py"]


@pytest.mark.parametrize("cls, unused", [(RNNEncoder, "positional"), (LSTMNEncoder, "positional"),
                                         (RNNDecoder, "positional"), (TransformerDecoder, "attention")])
def test_no_core_class_takes_an_argument_it_would_ignore(cls, unused):
    """An RNN reads positions from its order, a Transformer decoder has its own
    cross-attention: nmt.models.build passes them neither, and they take neither."""
    assert unused not in inspect.signature(cls).parameters
