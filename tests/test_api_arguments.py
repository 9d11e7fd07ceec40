"""The Python API checks every argument (issue 58, item 7): a wrong type or
value anywhere in Translator and the notebook views is one NmtError naming it,
never an AttributeError or TypeError from deep inside (prefix=123 and
heatmap(t, 123) were AttributeError)."""

import pytest

from nmt.base.errors import NmtError

SENTENCE = "the first of may"


@pytest.fixture(scope="module")
def translator(toy_checkpoint):
    from nmt.translator import Translator

    return Translator.from_checkpoint(toy_checkpoint, device="cpu")


def translator_cases(t, checkpoint):
    from nmt.translator import Translator

    return {
        "prefix=123": (lambda: t.translate([SENTENCE], prefix=123), "the prefix is int, not text"),
        "prefix=b''": (lambda: t.translate([SENTENCE], prefix=b"x"), "the prefix is bytes, not text"),
        "prefix=[]": (lambda: t.translate([SENTENCE], prefix=["a"]), "the prefix is list, not text"),
        "beam_size='5'": (lambda: t.translate([SENTENCE], beam_size="5"), "beam_size='5' must be a whole number"),
        "nbest=2.0": (lambda: t.translate([SENTENCE], nbest=2.0), "nbest=2.0 must be a whole number"),
        "coverage_penalty='x'": (lambda: t.translate([SENTENCE], beam_size=2, coverage_penalty="x"),
                                 "coverage_penalty=x must be a finite number >= 0"),
        "coverage_penalty=None": (lambda: t.translate([SENTENCE], beam_size=2, coverage_penalty=None),
                                  "coverage_penalty=None must be a finite number >= 0"),
        "recorder=1": (lambda: t.translate([SENTENCE], beam_size=2, recorder=1),
                       "recorder must be an nmt.decoding.beam_tree.BeamRecorder or None, not int"),
        "record_beam pruned='x'": (lambda: t.record_beam(SENTENCE, 3, pruned="x"),
                                   "pruned='x' must be None or a whole number >= 0"),
        "from_checkpoint(123)": (lambda: Translator.from_checkpoint(123),
                                 "the checkpoint must be a path (str or pathlib.Path), not int 123"),
        "from_checkpoint(None)": (lambda: Translator.from_checkpoint(None), "must be a path"),
        "device=5": (lambda: Translator.from_checkpoint(checkpoint, device=5),
                     "device must be 'auto', 'cpu', 'cuda' or 'cuda:N', not int 5"),
        "beam=5 option": (lambda: Translator.from_checkpoint(checkpoint, beam=5),
                          "beam= is not an option of a Translator; it takes max_len_ratio, max_len_extra"),
        "from_checkpoints(5)": (lambda: Translator.from_checkpoints(5), "give a list of checkpoint paths, not int"),
        "from_checkpoints(str)": (lambda: Translator.from_checkpoints(str(checkpoint)),
                                  "give a list of checkpoint paths, not str"),
    }


def view_cases(t):
    from nmt.viz import notebook

    return {
        "heatmap(t, 123)": (lambda: notebook.heatmap(t, 123), "text=123 must be text, not int"),
        "heatmap(t, None)": (lambda: notebook.heatmap(t, None), "text=None must be text, not NoneType"),
        "heatmap beam_size='2'": (lambda: notebook.heatmap(t, SENTENCE, beam_size="2"),
                                  "beam_size='2' must be a whole number from 1 up"),
        "heatmap prefix=5": (lambda: notebook.heatmap(t, SENTENCE, prefix=5), "prefix=5 must be text, not int"),
        "heatmap height='x'": (lambda: notebook.heatmap(t, SENTENCE, height="x"),
                               "height='x' must be a whole number from 1 to 20000 (pixels)"),
        "heatmap(None, ...)": (lambda: notebook.heatmap(None, SENTENCE),
                               "translator must be an nmt Translator (Translator.from_checkpoint), not NoneType"),
        "model_view(t, 123)": (lambda: notebook.model_view(t, 123), "text=123 must be text"),
        "head_view prefix=1.5": (lambda: notebook.head_view(t, SENTENCE, prefix=1.5), "prefix=1.5 must be text"),
        "beam_tree beam_size='5'": (lambda: notebook.beam_tree(t, SENTENCE, beam_size="5"),
                                    "beam_size='5' must be a whole number"),
        "beam_tree(t, 123)": (lambda: notebook.beam_tree(t, 123), "text=123 must be text"),
        "translate_and_explain(t, 123)": (lambda: __import__("nmt.viz.attention_data", fromlist=["x"])
                                          .translate_and_explain(t, 123),
                                          "the source sentence must be text, not int 123"),
    }


@pytest.mark.parametrize("group", ["translator", "views"])
def test_every_argument_of_the_api_is_checked(group, translator, toy_checkpoint):
    cases = translator_cases(translator, toy_checkpoint) if group == "translator" else view_cases(translator)
    for name, (call, said) in cases.items():
        with pytest.raises(NmtError) as refused:       # not AttributeError, TypeError or KeyError
            call()
        assert said in str(refused.value), (name, str(refused.value))
        assert "\n" not in str(refused.value), name


def test_the_good_arguments_still_work(translator):
    from nmt.viz import notebook

    assert translator.translate([SENTENCE], prefix="")[0].text == translator.translate([SENTENCE])[0].text
    assert "<iframe" in notebook.heatmap(translator, SENTENCE, height=400)._repr_html_()


def test_a_refusal_names_a_thing_with_the_article_its_sound_takes():
    """'a nmt.decoding...' read wrong: nmt is said letter by letter, en-em-tee."""
    from nmt.base.errors import with_article

    assert [with_article(w) for w in ("int", "float", "albert", "marian", "NoneType")] == \
        ["an int", "a float", "an albert", "a marian", "a NoneType"]
    assert with_article("nmt.decoding.beam_tree.BeamRecorder") == "an nmt.decoding.beam_tree.BeamRecorder"
