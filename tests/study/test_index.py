"""The index: the papers' claims read against each part's records, and its
notes on what the toy and Multi30k settings can and cannot show."""

import json

from nmt_study.index import write_index


def write_records(part, rows: dict[str, list[dict]]) -> None:
    part.mkdir(parents=True)
    (part / "study.json").write_text(json.dumps({"data": part.name, "sessions": []}))
    for name, evals in rows.items():
        for seed, evaluation in enumerate(evals, 1):
            path = part / "records" / name / f"seed{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"status": "finished", "commit": "d459c95f0ae4",
                                        "eval": {"final_step": 600, "wall_s": 60.0, **evaluation}}))


def test_the_index_reads_the_claims_against_each_part(tmp_path):
    write_records(tmp_path / "toy", {
        "luong_general": [{"aer": a, "test_bleu": 100.0, "steps_to_target": 250, "target_bleu": 95.0}
                          for a in (0.60, 0.62, 0.64)],
        "luong_general-guided": [{"aer": a, "test_bleu": 100.0, "steps_to_target": None, "target_bleu": 95.0}
                                 for a in (0.10, 0.12, 0.11)]})
    write_records(tmp_path / "multi30k", {"bahdanau": [{"test_bleu": b, "aer": 0.3} for b in (34.0, 34.2, 34.4)],
                                          "luong_dot": [{"test_bleu": b, "aer": 0.4} for b in (30.0, 30.3, 30.1)]})
    write_index(tmp_path)
    text = (tmp_path / "README.md").read_text()
    toy = text.split("### On the toy task")[1].split("### On Multi30k")[0]
    # guided 0.110 ± 0.010 against 0.620 ± 0.020: se = sqrt(0.01²/3 + 0.02²/3) = 0.0129 at Welch df 2.94,
    # t(0.975, 2.94) = 3.19: interval -0.510 ± 0.042; p = 4.2e-05, the only test of its section
    assert ("luong_general-guided 0.110 ± 0.010 (3 seeds) vs luong_general 0.620 ± 0.020 (3 seeds): gap -0.510 "
            "[-0.552, -0.468], Welch p = 4.2e-05: per claim **agrees: luong_general-guided lower**; per paper "
            "(declared first) **agrees: luong_general-guided lower**") in toy
    assert "luong_general 100.00 ± 0.00 (3 seeds): gap +0.00: per claim **equal, every seed the same (described" in toy
    assert "| luong_general-guided | guided | 3 | 0 of 3 reached |" in text
    assert "| luong_general | score | 3 | 3 of 3 reached (at 250, 250, 250) |" in text
    m30k = text.split("### On Multi30k")[1]
    assert "#### Britz, Goldie, Luong & Le 2017" in m30k
    assert "bahdanau 34.20 ± 0.20 (3 seeds) vs luong_dot 30.13 ± 0.15 (3 seeds)" in m30k
    assert "paired bootstrap" in text and "convergence check" in m30k
    assert "- Convergence check (Multi30k, 8 runs planned): not run yet" in text
    write_records(tmp_path / "convergence", {"bahdanau": [{"test_bleu": 36.0}]})
    write_index(tmp_path)
    assert ("- [Convergence check](convergence/README.md): 1 of 8 planned runs finished (luong_general, bahdanau, "
            "coverage, transformer-rotary, 3× the grid's budget with early stopping); read against the grid in "
            "[Part 2's *Convergence check*](multi30k/README.md#convergence-check)") in (tmp_path / "README.md").read_text()


def test_parts_without_runs_say_so(tmp_path):
    write_index(tmp_path)
    text = (tmp_path / "README.md").read_text()
    assert "- Part 1: the toy task (true alignment known): not run yet" in text
    assert "The Multi30k part has no finished runs yet." in text
