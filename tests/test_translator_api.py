"""The Python API of the README: Translator.from_checkpoint(...).translate([...])."""

import numpy as np
import pytest

from nmt.base.errors import NmtError
from tests.helpers import one_thread  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

SENTENCE = "monday the twenty first of march nineteen eighty four"


@pytest.fixture(scope="module")
def translator(toy_checkpoint):
    from nmt import Translator       # the README's import, through nmt's lazy attribute

    return Translator.from_checkpoint(toy_checkpoint, device="cpu")


def test_readme_call_returns_text_score_pieces_and_attention(translator):
    (out,) = translator.translate([SENTENCE], beam_size=5)
    tok = translator.tokenizer
    assert isinstance(out.text, str) and out.text == tok.decode_tgt(out.tokens)
    assert isinstance(out.score, float) and out.score <= 0.0
    assert out.src_pieces == tok.src_pieces(tok.encode_src(SENTENCE))
    assert out.tgt_pieces == tok.tgt_pieces(out.tokens) + ["</s>"]
    # attention: one row per output subword (and </s>), one column per source subword
    assert out.attention.shape == (len(out.tgt_pieces), len(out.src_pieces))
    assert np.allclose(out.attention.sum(-1), 1.0, atol=1e-4)       # global attention: rows sum to 1
    assert not out.truncated


def test_nbest_is_sorted_and_the_first_is_the_answer(translator):
    (out,) = translator.translate([SENTENCE], beam_size=4, nbest=3)
    assert len(out.nbest) == 3
    scores = [score for _, score in out.nbest]
    assert scores == sorted(scores, reverse=True)
    assert out.nbest[0] == (out.text, out.score)


def test_one_result_per_sentence_in_order_and_empty_stays_empty(translator):
    sentences = [SENTENCE, "", "   ", "friday the third of may two thousand", SENTENCE]
    outs = translator.translate(sentences, beam_size=2, batch_size=2)
    assert len(outs) == 5
    for blank in outs[1:3]:
        assert (blank.text, blank.score, blank.src_pieces, blank.tgt_pieces) == ("", 0.0, [], [])
        assert blank.attention.shape == (0, 0)
    assert outs[0].text == outs[4].text                     # the same sentence, the same answer
    assert outs[3].src_pieces[0] == "▁friday"


def test_a_sentence_longer_than_the_model_takes_is_truncated(translator):
    long = " ".join([SENTENCE] * 10)                        # ~100 subwords; the toy model takes 32
    (out,) = translator.translate([long], beam_size=1)
    assert out.truncated
    assert len(out.src_pieces) == translator.max_src_len == 32
    assert out.attention.shape[1] == 32


@pytest.mark.parametrize("options", [{"beam_size": 0}, {"beam_size": 2, "nbest": 3}])
def test_bad_search_options_are_one_line(translator, options):
    with pytest.raises(NmtError, match="nbest <= beam_size"):
        translator.translate([SENTENCE], **options)


def test_missing_checkpoint_is_an_nmt_error(tmp_path):
    from nmt import Translator

    with pytest.raises(NmtError, match="does not exist"):
        Translator.from_checkpoint(tmp_path / "best.pt", device="cpu")


# -- text it cannot encode, and arguments of the wrong kind: one NmtError ----------

@pytest.mark.parametrize("text, message", [
    ("a\ud800b", "sentence 2 holds a lone surrogate (U+D800 at character 2), which is not text; "
                 "decode the input as UTF-8 with errors='strict' or 'replace'"),
    ("\udcff", "sentence 2 holds a lone surrogate (U+DCFF at character 1), which is not text; "
               "decode the input as UTF-8 with errors='strict' or 'replace'"),
])
def test_text_sentencepiece_cannot_encode_is_one_nmt_error(translator, text, message):
    with pytest.raises(NmtError) as error:
        translator.translate([SENTENCE, text], beam_size=1)
    assert str(error.value) == message


@pytest.mark.parametrize("text", ["x\x00y", "\x01\x02\x1b[31m", "\ufffe\uffff", "\U0010ffff", "a\u2028b",
                                  "\x85", "e\u0301", "\u200b", "\t\t"])
def test_odd_but_valid_text_is_translated(translator, text):
    (out,) = translator.translate([text], beam_size=1)
    assert isinstance(out.text, str)


@pytest.mark.parametrize("sentences, message", [
    ("monday the first", "give a list of sentences, not one string"),
    ([SENTENCE, None], "sentence 2 is NoneType, not text"),
    ([b"bytes"], "sentence 1 is bytes, not text"),
    (None, "give a list of sentences, not NoneType"),
])
def test_sentences_of_the_wrong_kind(translator, sentences, message):
    with pytest.raises(NmtError) as error:
        translator.translate(sentences)
    assert str(error.value) == message


@pytest.mark.parametrize("options, message", [
    ({"beam_size": 2.5}, "beam_size=2.5 must be a whole number >= 1"),
    ({"beam_size": True}, "beam_size=True must be a whole number >= 1"),
    ({"batch_size": 0}, "batch_size=0 must be a whole number >= 1"),
    ({"min_length": -1}, "min_length=-1 must be a whole number >= 0"),
    ({"length_penalty": float("nan")}, "length_penalty=nan must be a finite number"),
    ({"length_penalty": "1"}, "length_penalty='1' must be a finite number"),
])
def test_search_options_of_the_wrong_kind(translator, options, message):
    with pytest.raises(NmtError) as error:
        translator.translate([SENTENCE], **options)
    assert str(error.value) == message
