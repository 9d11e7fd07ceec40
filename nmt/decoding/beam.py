"""Beam search as the decoding layer offers it: the reference core's search
(nmt/core/beam_search.py) and its length and coverage penalties
(nmt/core/penalties.py), written there once, under the import path the
translators, the beam tree (beam_tree.py), the tests and the scripts use."""

from nmt.core.beam_search import backtrack, beam_search, force_prefix
from nmt.core.penalties import COVERAGE_FLOOR, coverage_penalty, length_penalty

__all__ = ["COVERAGE_FLOOR", "backtrack", "beam_search", "coverage_penalty", "force_prefix", "length_penalty"]
