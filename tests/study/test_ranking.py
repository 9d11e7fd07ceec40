"""The overall ranking (nmt_study.ranking): order, evidence, the seeds planned."""

import sacrebleu

from nmt_study.configs import study_configs
from nmt_study.ranking import ranked_names, ranking_table
from nmt_study.tables import aggregate

REFS = ["the cat sat on the mat", "a dog runs in the park", "two men play chess", "the sun is hot today"]
GOOD = list(REFS)
BAD = ["the cat on mat", "dog runs park", "men play", "sun hot"]


def run(name, seed, bleu, aer, hypotheses=None):
    family = next(c.family for c in study_configs("multi30k") if c.name == name)
    return {"name": name, "family": family, "seed": seed, "first_seed": 1, "hypotheses": hypotheses or [],
            "eval": {"test_bleu": bleu, "test_chrf": bleu + 20, "aer": aer, "final_step": 1600}}


def test_ranks_by_mean_test_bleu_and_leaves_decode_only_rows_out():
    runs = [run("luong_dot", 1, 30.0, 0.40), run("luong_dot", 2, 32.0, 0.42),        # mean 31
            run("bahdanau", 1, 34.0, 0.35), run("bahdanau", 2, 35.0, 0.33),          # mean 34.5
            run("cosine", 1, 33.0, 0.30),                                             # one seed
            run("bahdanau-beam5", 1, 36.0, 0.35)]                                     # beam: not ranked
    configs = study_configs("multi30k")
    table = aggregate(runs)
    assert ranked_names(configs, table, toy=False) == ["bahdanau", "cosine", "luong_dot"]
    # the toy task ranks by AER, lowest first
    assert ranked_names(configs, table, toy=True) == ["cosine", "bahdanau", "luong_dot"]

    lines = ranking_table(configs, table, toy=False, transformers=False)
    rows = [line.split(" | ") for line in lines[2:]]
    assert [r[1] for r in rows] == ["bahdanau", "cosine", "luong_dot"]
    assert rows[0][3] == "2" and rows[0][5] == "34.50 ± 0.71" and rows[0][-1] == "first |"
    assert rows[1][-1] == "-1.50: too few seeds |"           # one seed: Welch cannot say
    # Welch, luong_dot (31 ± 1.414) against bahdanau (34.5 ± 0.707), 2 seeds each:
    # se = sqrt(2/2 + 0.5/2) = 1.118, t = -3.13 at df = 1.25² / (1²/1 + 0.25²/1) = 1.47: p = 0.129
    assert rows[2][-1] == "-3.50 [-10.42, +3.42], p = 0.129: no finding |"
    assert "bahdanau-beam5" not in "\n".join(lines)
    assert ranking_table(configs, table, toy=False, transformers=True) == []   # no Transformer run


def test_a_gap_larger_than_the_seed_spread_is_called():
    runs = [run("bahdanau", s, b, 0.3) for s, b in ((1, 34.0), (2, 34.1), (3, 34.2))] + \
           [run("luong_dot", s, b, 0.4) for s, b in ((1, 30.0), (2, 30.1), (3, 30.2))]
    table = aggregate(runs)
    rows = ranking_table(study_configs("multi30k"), table, toy=False, transformers=False)
    assert rows[-1].endswith("| -4.00 [-4.23, -3.77], p = 1.04e-06: differs |")


def test_the_ranking_does_not_rank_on_first_seeds_paired_bootstrap():
    runs = [run("bahdanau", 1, sacrebleu.corpus_bleu(GOOD, [REFS]).score, 0.3, GOOD),
            run("luong_dot", 1, sacrebleu.corpus_bleu(BAD, [REFS]).score, 0.4, BAD)]
    lines = ranking_table(study_configs("multi30k"), aggregate(runs), toy=False, transformers=False)
    assert "bootstrap" not in lines[0]
    assert lines[3].endswith(": too few seeds |")        # one seed each: no finding, whatever one pair says


def test_the_index_shows_part_2_ranked(tmp_path):
    """benchmarks/attention_study/README.md gets the Multi30k ranking from the
    records alone, with the rows short of their planned seeds."""
    import json

    from nmt_study.index import write_index

    part = tmp_path / "multi30k"
    (part).mkdir()
    (part / "study.json").write_text(json.dumps({"data": "multi30k", "sessions": []}))
    for name, seed, bleu in (("cosine", 1, 33.0), ("bahdanau", 1, 34.0), ("bahdanau", 2, 35.0)):
        path = part / "records" / name / f"seed{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        evaluation = {"test_bleu": bleu, "test_chrf": 50.0, "aer": 0.3, "final_step": 1600, "wall_s": 600.0}
        path.write_text(json.dumps({"status": "finished", "eval": evaluation}))
    write_index(tmp_path)
    text = (tmp_path / "README.md").read_text()
    section = text.split("## Part 2 at a glance")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")]
    assert rows[0].startswith("| 1 | bahdanau | score | 2 | – | 34.50 ± 0.71 |")
    assert rows[1].startswith("| 2 | cosine | score | 1 | – | 33.00 |")
    assert "Still short of their plan: bahdanau (2 of 5), cosine (1 of 5)." in section
