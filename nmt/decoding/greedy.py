"""Greedy search as the decoding layer offers it: the reference core's plain
search (nmt/core/greedy_search.py) and its length limit
(nmt/core/length_limit.py), written there once, under the import path the
translators, the tests and the scripts use."""

from nmt.core.greedy_search import Hypothesis, greedy_search
from nmt.core.length_limit import max_output_length

__all__ = ["Hypothesis", "greedy_search", "max_output_length"]
