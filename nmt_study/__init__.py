"""The attention study, its own package beside nmt: `nmt-study` or
`python -m nmt_study` (see __main__.py).

It uses nmt as a user's code does: the names nmt exports (`from nmt import
NmtError`, nmt.__all__) and nmt's commands run as processes of their own
(`python -m nmt.train`, `python -m nmt.data.alignments`); no module inside nmt
(tests/test_study_public.py, and import-linter's contracts in pyproject.toml).
"""
