"""nmt: neural machine translation for learning, comparing and seeing attention.

The public API is the names in `__all__`, each with its meaning in `PUBLIC`:
`from nmt import Translator`. Code outside the package (the attention study,
`nmt_study`, a script, a user's program) imports these and nothing deeper;
tests/test_study_public.py holds the study to that. Each name is imported on
first use, so `import nmt` loads no torch and no other module of nmt.
"""

import importlib

__version__ = "0.1.0"

# name -> (the module that defines it, its attribute there, what it is)
PUBLIC = {
    # translating and scoring
    "Translator": ("nmt.translator", "Translator", "translate sentences with a trained checkpoint"),
    "score_translations": ("nmt.base.scoring", "score_translations", "corpus BLEU and chrF of hypotheses"),
    # errors and files
    "NmtError": ("nmt.base.errors", "NmtError", "a user's problem with a one-line fix; commands print it"),
    "atomic_write": ("nmt.base.atomic", "atomic_write", "write a file whole or not at all"),
    "refuse_special": ("nmt.base.file_inputs", "refuse_special",
                       "NmtError for a FIFO or device given as a file (reading it would hang)"),
    "make_folder": ("nmt.base.folders", "make_folder", "create an output folder, or one NmtError line"),
    "check_replace": ("nmt.base.own_files", "check_replace",
                      "refuse to replace a file nmt did not write unless --overwrite"),
    "write_own": ("nmt.base.own_files", "write", "write a file whole, marked as written by nmt"),
    "ALIGNMENTS": ("nmt.base.own_files", "ALIGNMENTS", "the purpose a word-links file is marked with"),
    # command lines
    "command": ("nmt.base.cli", "command", "decorate main(argv): NmtError is one line and exit code 1"),
    "run_command": ("nmt.base.cli", "run_command", "run a command module's main with nmt's stop signals"),
    "ArgumentParser": ("nmt.base.cli_checks", "ArgumentParser", "argparse whose usage errors are one line"),
    "finite_float": ("nmt.base.cli_checks", "finite_float", "argparse type: a finite number"),
    "write_stdout": ("nmt.base.cli_checks", "write_stdout", "write to standard output, a closed pipe or full disk "
                     "one line"),
    # which code and which machine
    "CHECKOUT": ("nmt.base.provenance", "CHECKOUT", "the folder holding the nmt package (a checkout or "
                 "site-packages)"),
    "git_commit": ("nmt.base.provenance", "git_commit", "the commit of the running nmt code, noting changes"),
    "git_environment": ("nmt.base.provenance", "git_environment",
                        "the environment without the variables that point git at another repository"),
    "read_cpuinfo": ("nmt.base.device", "read_cpuinfo", "/proc/cpuinfo's text, or empty"),
    "cpuinfo_fields": ("nmt.base.device", "cpuinfo_fields", "the first processor's fields of that text"),
    "cpu_description": ("nmt.base.device", "cpu_description", "that text's model name, family and model"),
    "cpu_flags": ("nmt.base.device", "cpu_flags", "the processor's feature flags of that text"),
    # run folders and what a run writes
    "check_run_members": ("nmt.base.run_members", "check_run_members",
                          "NmtError for a run folder member that nmt.train could not use"),
    "member_problem": ("nmt.base.run_members", "member_problem", "what is wrong with one path of a run folder"),
    "load_checkpoint": ("nmt.store.checkpoints", "load_checkpoint", "read a checkpoint nmt wrote, checked"),
    "read_metrics": ("nmt.store.metrics_log", "read_records", "the validation records of a run's metrics.jsonl"),
    # data
    "CONFIGS": ("nmt.base.config_files", "CONFIGS", "the folder of nmt's Hydra configs"),
    "load_corpus": ("nmt.data.corpora", "load_corpus", "the train, valid and test pairs a data config names"),
    "read_parallel": ("nmt.data.readers", "read_parallel", "the pairs of a source and a target text file"),
    "toy_alignment": ("nmt.data.toy", "toy_alignment", "the toy task's true word alignment of one pair"),
    "PAD_ID": ("nmt.core.special_tokens", "PAD_ID", "the id of <pad>, the token batches are padded with"),
    # word alignment read from attention (Och and Ney 2003's AER)
    "AerCounts": ("nmt.data.word_alignment", "AerCounts", "AER's counts summed over sentences"),
    "aer": ("nmt.data.word_alignment", "aer", "alignment error rate of predicted links against sure and possible"),
    "argmax_links": ("nmt.data.word_alignment", "argmax_links",
                     "subword links: each target piece to the source piece it attends to most"),
    "attention_word_links": ("nmt.data.word_alignment", "attention_word_links",
                             "word links read from subword attention"),
    "read_links": ("nmt.data.word_alignment", "read_links", "the links of one Pharaoh line ('0-0 1-2')"),
    "shifted_rows": ("nmt.data.word_alignment", "shifted_rows", "attention rows one step later (Shift-Att)"),
    "word_index": ("nmt.data.word_alignment", "word_index", "the word each subword piece belongs to"),
    "word_links": ("nmt.data.word_alignment", "word_links", "subword links grouped into word links"),
    "WORD_START": ("nmt.data.word_alignment", "WORD_START", "sentencepiece's mark of a word's first piece"),
}
__all__ = sorted(PUBLIC)


def __getattr__(name):
    # Lazy so that `import nmt` stays light for the data tools, the study and tests.
    if name not in PUBLIC:
        raise AttributeError(f"module 'nmt' has no attribute {name!r}")
    module, attribute, _ = PUBLIC[name]
    return getattr(importlib.import_module(module), attribute)


def __dir__():
    return sorted({*globals(), *PUBLIC})
