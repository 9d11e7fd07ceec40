"""The top of a part's report: what was run and how (data, budget, runs,
sessions), how its figures are read, and the models' setup."""

import os
import shlex
from pathlib import Path

from nmt_study.configs import StudyConfig, is_confirmation_folder, is_convergence_folder

OLD_MODULE = "nmt.study"      # the study's module in records written before it was the package nmt_study


def budget_of(run: dict, settings: dict) -> int:
    """A run's update budget: the Transformers' own where the study gave one."""
    return (settings.get("transformer_budget_steps") or settings["budget_steps"]) if run.get("transformer") \
        else settings["budget_steps"]


def repository_root(out) -> Path | None:
    """The work tree that holds OUT (a folder with a .git entry above it), or None."""
    folder = Path(out).resolve()
    return next((p for p in (folder, *folder.parents) if (p / ".git").exists()), None)


def as_run_from(root: Path | None, path) -> str:
    """An absolute path inside the repository or beside it (../shared/...) written
    relative to the repository root, where the README's commands run; any
    other path as given."""
    path = str(path)
    if root is None or not os.path.isabs(path) or not Path(path).is_relative_to(root.parent):
        return path
    return os.path.relpath(path, root)


def portable_path(root: Path | None, path) -> str:
    """A recorded path as the repository root reads it: a path inside any checkout of
    the project relative to that checkout, since the same file is in this one; any
    other as as_run_from writes it. A checkout is a folder with .git and nmt/, or,
    where it is gone from this machine (a removed worktree, another machine), the
    folder below which the path names a file of this repository (two parts or more:
    benchmarks/attention_study/...), so the page reads the same wherever it is rebuilt."""
    path = str(path)
    if root is None or not os.path.isabs(path):
        return path
    parents = Path(path).parents
    checkout = next((a for a in parents if (a / ".git").exists() and (a / "nmt").is_dir()), None) or next(
        (a for a in parents if len(Path(path).relative_to(a).parts) >= 2 and (root / Path(path).relative_to(a)).exists()
         and not root.is_relative_to(a)), None)
    return str(Path(path).relative_to(checkout)) if checkout is not None else as_run_from(root, path)


def portable_command(command: str, out) -> str:
    """A recorded command as a reader reruns it from the repository root: every
    absolute path inside the repository or beside it written relative to the
    root (../shared/..., benchmarks/...), whether a word of its own or after
    `=` (data.path=/...); no path of the machine that ran it. A command recorded
    as `python -m nmt.study` (the study's module until it became the package
    nmt_study beside nmt) is shown as `python -m nmt_study`, which runs it now."""
    root = repository_root(out)
    try:
        words = shlex.split(command)
    except ValueError:           # an unbalanced quote: shown as recorded
        return command
    if words[:3] == ["python", "-m", OLD_MODULE]:      # recorded before the study was its own package
        words[2] = "nmt_study"
    words = relative_paths_resolved(words, out)
    out_words = []
    for word in words:
        key, sep, value = word.partition("=")
        if sep and os.path.isabs(value):
            out_words.append(key + sep + portable_path(root, value))
        else:
            out_words.append(portable_path(root, word))
    return shlex.join(out_words)


def relative_paths_resolved(words: list[str], out) -> list[str]:
    """A command recorded with relative path options (by a study older than
    options.absolute_paths) from a folder beside the repository (a worktree): each
    path that leaves that folder made absolute, the folder found from where its
    --out must have been run to name `out`. Paths inside it name the same files in
    the repository, so they stay as typed. Any other command is returned as it is."""
    from nmt_study.options import PATH_OPTIONS

    recorded_out = next((value for option, value in _path_options(words, PATH_OPTIONS) if option == "--out"), None)
    if recorded_out is None or os.path.isabs(recorded_out):
        return words
    parts = Path(os.path.normpath(recorded_out)).parts       # normalised: any '..' lead
    up = parts.count("..")
    below = parts[up:]
    target = Path(out).resolve()
    if up == 0 or not below or target.parts[-len(below):] != below:
        return words                                   # run from the repository, or not resolvable
    ran_in = Path(*target.parts[:len(target.parts) - len(below)]).joinpath(*["?"] * up)   # names unknown

    def resolved(value: str) -> str:
        if os.path.isabs(value):
            return value
        path = Path(os.path.normpath(ran_in / value))
        return value if path.is_relative_to(ran_in) else str(path)
    changed, expects_path = [], False
    for word in words:
        option, sep, value = word.partition("=")
        if expects_path:
            word = resolved(word)
        elif sep and option in PATH_OPTIONS:
            word = f"{option}={resolved(value)}"
        expects_path = word in PATH_OPTIONS
        changed.append(word)
    return changed


def _path_options(words: list[str], options) -> list[tuple[str, str]]:
    """(option, value) of each of `options` in words, as `--opt value` or `--opt=value`."""
    found = []
    for i, word in enumerate(words):
        option, sep, value = word.partition("=")
        if sep and option in options:
            found.append((option, value))
        elif word in options and i + 1 < len(words):
            found.append((word, words[i + 1]))
    return found


def rebuild_command(settings: dict, out) -> str:
    """The command that rewrites this report, run from the repository root:
    Multi30k's needs the data and the links the study was given (the AER
    baselines read the test links)."""
    root = repository_root(out)
    own = ["--convergence"] if is_convergence_folder(out) else ["--confirm"] if is_confirmation_folder(out) else []
    words = ["python", "-m", "nmt_study", "--report-only", *own,
             "--data", settings["data"], "--out", as_run_from(root, Path(out).resolve() if root else out)]
    for option, key in (("--data-path", "data_path"), ("--links", "links"), ("--train-links", "train_links"),
                        ("--confirm-links", "confirm_links")):
        if settings.get(key):
            words += [option, portable_path(root, settings[key])]
    return shlex.join(words)


def base_line(table: dict) -> str:
    """Multi30k: does the base configuration reach the issue's 20 test BLEU (greedy) on this budget?"""
    entry = table.get("luong_general")
    if not entry or "test_bleu" not in entry["stats"]:
        return ("- Budget check: the base configuration (luong_general) has not run, so whether this budget "
                "reaches 20 test BLEU (greedy) is not known")
    mean = entry["stats"]["test_bleu"][0]
    return (f"- Budget check: the base configuration (luong_general) reached {mean:.2f} test BLEU over "
            f"{entry['n']} seed(s), {'at least' if mean >= 20 else 'below'} the 20 (greedy) the study's budget "
            f"is meant to allow" + ("" if mean >= 20 else ": this budget is too small for a ranking that means much"))


def budget_text(settings: dict, runs: list[dict]) -> str:
    budget = (f"{settings['budget_minutes']:g} minutes of wall clock per run (trainer.max_minutes)"
              if settings.get("budget_minutes") else
              f"at most {settings['budget_steps']:,} updates per run (trainer.max_steps)")
    if settings.get("transformer_budget_steps") and not settings.get("budget_minutes"):
        budget += f" ({settings['transformer_budget_steps']:,} for the Transformers, slower per update)"
    if settings.get("cap_minutes") and not settings.get("budget_minutes"):
        capped = sorted({f"{r['name']} seed {r['seed']} ({r['eval']['final_step']:,} updates)" for r in runs
                         if r["status"] == "finished" and not settings.get("patience")
                         and r["eval"].get("final_step", 0) < budget_of(r, settings)})
        budget += (f", and {settings['cap_minutes']:g} minutes of wall clock at most, against a hung run "
                   "(trainer.max_minutes): "
                   + (f"cut there: {', '.join(capped)}" if capped else "no run was cut there"))
    if settings.get("patience"):
        budget += (f", stopped {settings['patience']} validations "
                   f"({settings['patience'] * settings['val_every']} updates) after the last improvement")
    return budget


def title(settings: dict, out) -> str:
    if is_convergence_folder(out):
        return "the convergence check, Multi30k de→en (four of the grid's rows trained longer, with early stopping)"
    if is_confirmation_folder(out):
        return ("the confirmation runs, Multi30k de→en (the headlines' rows trained to early stopping, scored on "
                "test_2016 and test_2017)")
    return "part 1, the toy task" if settings["data"] == "toy" else "part 2, Multi30k de→en"


def header_lines(settings: dict, runs: list[dict], table: dict, out) -> list[str]:
    toy = settings["data"] == "toy"
    finished = [r for r in runs if r["status"] == "finished"]
    cpu = sum(r["eval"]["cpu_minutes"] for r in finished)
    first = finished[0]["eval"] if finished else {}
    return [
        f"# The attention study: {title(settings, out)}", "",
        "Written by `python -m nmt_study` from the run records in `records/` beside this file; do not edit "
        f"by hand. Rebuild it (no training) with `{rebuild_command(settings, out)}`.", "",
        f"- Data: {settings['data_description']}",
        f"- Budget: {budget_text(settings, runs)}; validation on the first {settings['val_sentences']} validation "
        f"sentences (greedy) every {settings['val_every']} updates; the checkpoint with the best validation BLEU "
        "(the first, among equals) is evaluated",
        f"- Runs: {len(finished)} of {len(runs)} finished, one thread each; cost {cpu:.1f} CPU-minutes in all "
        f"({cpu / 60:.2f} CPU-hours: training and evaluation, wall clock of each run on its one thread)",
        f"- Test: {first.get('test_sentences', '?')} sentences of "
        f"{'the toy test set' if toy else 'test_2016_flickr'}, "
        f"{'greedy' if settings['beam_size'] == 1 else 'beam ' + str(settings['beam_size'])}; "
        f"sacreBLEU `{first.get('bleu_signature', '?')}`",
        *([] if toy else [base_line(table)]),
        "- Sessions (each command that trained runs; a finished run is never trained again):",
        *[f"  - {s['date']}, commit `{s['commit']}`, {s['machine']}, {s['jobs']} job{'s' * (s['jobs'] != 1)}: "
          f"`{portable_command(s['command'], out)}` "
          f"({s['runs']} run{'s' * (s['runs'] != 1)} to train)" for s in settings.get("sessions", [])]]


def how_read_lines(settings: dict) -> list[str]:
    toy, target = settings["data"] == "toy", settings.get("target_bleu")
    reference = ("the toy task's true word alignment (`nmt.data.toy.toy_alignment`): gold links" if toy else
                 "silver links from a statistical aligner (eflomal, grow-diag-final-and), not gold"
                 if settings.get("links") else "no reference links given: AER not measured")
    return [
        "", "## How the figures are read", "",
        (f"- **updates to target**: the first validation (every {settings['val_every']} updates) whose BLEU "
         f"reached {target:g}. A run that never reached it has no value (censored), so the cell says how many "
         "of the seeds reached it and where, never a mean" if target else
         "- **updates to target**: not used for this data"),
        "- **test BLEU**, **chrF**: the evaluated checkpoint on the test set.",
        f"- **AER** (Och and Ney 2003): 1 − (|A∩S| + |A∩P|)/(|A| + |S|) with S = P = {reference}. A is read "
        "from the attention while the model reads the test reference (teacher forcing): each target subword "
        "links to its arg-max source subword, and two words are linked when any of their subwords are "
        "(`nmt_study.alignment`); counts are summed over the test set. Lower is better. Transformers: the "
        "attention shown is the last decoder layer's cross-attention, mean of its heads; *AER, head chosen on "
        "valid* is the head with the lowest validation AER, scored on test. Precision, recall, the "
        "one-step-later reading and the baselines are in *Attention read as an alignment*.",
        "- **entropy**: mean entropy of the attention distributions (nats; lower is sharper).",
        "- **train tok/s**, **CPU-min**: speed on a machine shared with other work; compare with care.",
        "- Mean ± standard deviation over seeds. **vs family best** and **vs first**: the gap of the means, its "
        "95% confidence interval and Welch's exact two-sided p (scipy), read after Holm's correction over the "
        "table's comparisons at 5%: \"differs\" survives it, \"no finding\" does not; rows whose seeds all "
        "gave one value are described (\"equal\" / \"unequal, no spread\"), never tested."]


def setup_lines(sizes: dict) -> list[str]:
    return [
        "", "## Setup", "",
        f"Every RNN run is a bidirectional GRU encoder (hidden {sizes['enc_hidden']} per direction, states "
        f"of {2 * sizes['enc_hidden']}) under a Luong-style GRU decoder of hidden {2 * sizes['enc_hidden']} "
        f"with input feeding, embeddings {sizes['embed']}, Adam lr {sizes['lr']}, constant schedule, bridge "
        "`last`, attention `luong_general`, global scope; each family changes one part. The LSTMN encoder "
        f"gets one direction of the same state size. The Transformers are {sizes['layers']}+"
        f"{sizes['layers']} layers, d {sizes['d_model']}, {sizes['heads']} heads, ff {sizes['ff']}, "
        f"inverse-sqrt schedule (warm-up {sizes['warmup']}, peak lr {sizes['transformer_lr']})."]


def decoding_note(configs: list[StudyConfig], runs: list[dict]) -> str:
    """What the decode-only rows are, in one paragraph above their table."""
    rows = [c for c in configs if c.decode_of]
    if not rows:
        return ""
    differ = sorted({f"{r['name']} seed {r['seed']}" for r in runs if r.get("same_checkpoint") is False})
    beta = next((c.coverage_penalty for c in rows if c.coverage_penalty), None)
    return ("No training: each row decodes the test set again from the checkpoint of the run it names "
            f"({', '.join(sorted({c.decode_of for c in rows}))}, same seeds), with beam {rows[0].beam_size} "
            "and the length penalty at its default (α = 1), without and with the coverage penalty of Wu et al. "
            "2016, Sec. 7: cp = β · Σᵢ log(min(Σₜ aₜᵢ, 1))" + (f", β = {beta:g}" if beta else "") + ". It "
            "only re-ranks the beam's finished hypotheses, so the attention read on the reference is the "
            "trained run's: AER and entropy are its figures by construction; test BLEU and chrF are what "
            "the penalty changes. CPU-min counts the decoding only."
            + (f" Not the checkpoint of the trained row (its folder was trained again since, and its figures "
               f"differ): {', '.join(differ)}." if differ else ""))
