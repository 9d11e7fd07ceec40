"""The reference core: every mechanism nmt teaches, in its plain version, one file each.

It imports torch (and entmax for the sparse normalisers) and nothing else of
nmt (import-linter holds this, pyproject.toml). README.md in this folder gives
the reading order; the docs page "Read the core" shows each file's source.
"""
