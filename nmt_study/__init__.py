"""The attention study: `python -m nmt.study` (see __main__.py)."""
