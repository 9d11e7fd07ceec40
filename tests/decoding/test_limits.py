"""Search settings under which no hypothesis can end by itself are refused
before decoding (nmt/decoding/limits.py), by the rule the searches follow."""

import pytest
import torch

from nmt.core.greedy_search import greedy_search
from nmt.decoding.limits import check_search_limits, longest_output
from nmt.base.errors import NmtError
from tests.decoding.fake_model import BOS, EOS, TableModel


def test_longest_output_by_hand():
    # int(1.5 * 9) + 10 = 23 positions, the last one for </s>: 22 subwords
    assert longest_output(9, 1.5, 10) == 22
    assert longest_output(9, 1.5, 10, cap=12) == 11       # a position table of 12
    assert longest_output(1, 0.0, 1) == 0                 # one position: </s> only


@pytest.mark.parametrize("src_len", [1, 3, 7])
@pytest.mark.parametrize("ratio, extra", [(0.0, 2), (0.5, 3), (1.5, 2)])
def test_the_rule_is_the_searchs_own_count(src_len, ratio, extra):
    # with </s> barred as long as it may be, the search runs to its limit
    src = torch.full((1, src_len), 5)
    most = longest_output(src_len, ratio, extra)
    hyp = greedy_search(TableModel(), src, BOS, EOS, ratio, extra, min_len=10**6)[0]
    assert len(hyp.tokens) == most


def test_settings_that_leave_no_output_are_refused():
    check_search_limits(32, 0.0, 5, min_length=4)        # the boundary: 4 subwords can be output
    with pytest.raises(NmtError, match=r"^min_length=5 \(--min-length\) is more than any output may "
                                       r"have: at most 4 subwords for the longest source of 32 "):
        check_search_limits(32, 0.0, 5, min_length=5)
    with pytest.raises(NmtError, match=r"^a one-subword sentence could get no output subword .* raise "
                                       r"max_len_extra \(--max-length-extra\) to 2 or more$"):
        check_search_limits(32, 0.0, 1)
    with pytest.raises(NmtError, match="min_length=40"):
        check_search_limits(100, 1.5, 10, max_tgt_len=40, min_length=40)   # the table caps it at 39
    for ratio in (-1.0, float("nan"), float("inf")):
        with pytest.raises(NmtError, match="must be a finite number >= 0"):
            check_search_limits(32, ratio, 5)


def test_the_python_api_refuses_before_decoding(toy_checkpoint):
    from nmt.translator import Translator

    with pytest.raises(NmtError, match=r"^a one-subword sentence could get no output subword"):
        Translator.from_checkpoint(toy_checkpoint, device="cpu", max_len_ratio=0.0, max_len_extra=1)
    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu", max_len_ratio=0.0, max_len_extra=5)
    with pytest.raises(NmtError, match=r"^min_length=30 \(--min-length\) is more than any output may have"):
        translator.translate(["monday the first of may"], min_length=30)
    assert translator.translate(["monday the first of may"], min_length=4)[0].tokens.__len__() == 4


def test_translate_cli_refuses_instead_of_an_empty_line(toy_checkpoint):
    from tests.helpers import run_cli

    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--max-length-ratio", "0",
                   "--max-length-extra", "1", input=b"monday the first of may\n",
                   env={"OMP_NUM_THREADS": "1"})
    stderr = done.stderr.decode()
    assert done.returncode == 1 and done.stdout == b"", stderr
    assert stderr.startswith("nmt: error: a one-subword sentence could get no output subword") and \
        len(stderr.splitlines()) == 1, stderr
