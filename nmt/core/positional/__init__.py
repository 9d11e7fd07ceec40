"""Positional encodings for the Transformer: base.py (what a Transformer asks), then one file per kind."""
