"""The attention study: `python -m nmt_study` (see __main__.py)."""
